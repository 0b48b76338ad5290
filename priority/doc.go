// Package priority is Sluice's job priority engine: Slurm's multifactor
// priority with a per-factor breakdown, the queue order, and fair-share over
// an association tree (Fair Tree and classic), computed exactly as Slurm
// computes them and explained the way sprio and sshare show them.
//
// The package is pure: no I/O, no clock, no goroutines. Callers pass the
// association tree, the decayed usage and the job facts in, and read
// factors, breakdowns and orderings out.
//
// # Fair-share
//
// NewTree takes the associations (root → accounts → sub-accounts → users)
// with raw shares, Fairshare=parent and each association's own decayed usage
// and computes every association's fair-share factor:
//
//   - Fair Tree (the default; Slurm's since 19.05): Level FS = S/U among
//     siblings, a depth-first ranking sorted by Level FS, ties resolved as
//     Slurm's code resolves them (including its x87 long-double precision),
//     factor = rank / number of users.
//   - Classic (Flags NoFairTree): normalised shares down the path,
//     effective usage propagation, F = 2^(-(UE/S)/FairShareDampeningFactor);
//     and its depth-oblivious variant (Flags DepthOblivious).
//
// Tree.Shares is the sshare view (RawShares, NormShares, RawUsage,
// NormUsage, EffectvUsage, FairShare, LevelFS) and FormatShares prints it.
// Tree.UpdateUsage applies changed usage incrementally: Fair Tree re-sorts
// only the sibling groups on the changed paths and re-ranks only subtrees
// whose standing changed.
//
// Association.Usage is each association's own usage and the tree adds
// descendants' usage, as Slurm does; set TreeOptions.UsageIncludesDescendants
// when the numbers are already subtree totals (what a ledger reports per
// account). Equal Level FS values among sibling accounts are visited in input
// order, where Slurm leaves the order to qsort.
//
// Usage decay (PriorityDecayHalfLife, PriorityUsageResetPeriod) and charging
// (TRESBillingWeights, MAX_TRES, QOS UsageFactor) belong to package
// accounting, which keeps the ledger; this package receives the decayed
// numbers.
//
// # Multifactor priority
//
// An Engine holds the weights, PriorityMaxAge, PriorityFavorSmall,
// PriorityFlags and the cluster facts the factors are normalised against.
// Engine.Compute turns one Job's facts into a Breakdown: each factor
// normalised and weighted, the site factor, nice and the priority
//
//	priority = Σ weight × factor + site − nice, clamped to [1, 2^32−1]
//
// truncated as Slurm truncates. FormatSprio prints breakdowns like sprio.
// CompareQueue and SortQueue order jobs as Slurm's scheduler evaluates them:
// partition PriorityTier, priority, submit time, job ID.
//
// # Precision
//
// Priorities use float64 in Slurm's order of operations, so they match
// Slurm's bit for bit given the same inputs (TRES terms are summed in
// registry order, Slurm's in its TRES table order; they only differ when
// several TRES are weighted and the rounding of their sum differs). Fair Tree's effective usage and Level FS are x87
// 80-bit long doubles in Slurm on x86-64, and ties are exact comparisons of
// them; Sluice emulates that format (64-bit significand, nearest-even) for
// those two quotients, so tied and nearly tied users rank as in Slurm.
// Usage sums are float64, exact for integer usages below 2^53. Classic
// fair-share has no ties to break; it uses float64 and math.Pow and agrees
// with Slurm's long-double arithmetic to about 1e-15.
//
// # Beyond Slurm (off by default)
//
//   - TreeOptions.Dominant measures usage as a dominant TRES share (DRF
//     style) instead of one billing number, for clusters that price GPUs and
//     CPUs separately.
//   - Config.Site is a SiteFactor hook: embedders add their own term without
//     forking.
package priority
