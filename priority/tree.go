package priority

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/gres"
)

// MaxShares is the largest raw shares value. Slurm stores FairShare=parent
// as 0x7fffffff, so real shares stop one below.
const MaxShares = 0x7ffffffe

// slurmNoVal is Slurm's NO_VAL; the root association's level shares.
const slurmNoVal = 4294967294.0

// Association is one node of the fair-share tree: an account (User == "")
// or a user's association with an account. The caller builds the slice from
// its ledger (package accounting) and the decayed usage it keeps; decay,
// PriorityDecayHalfLife and PriorityUsageResetPeriod live there, not here.
type Association struct {
	// Account is the account name. Account names are unique in the tree;
	// for a user association it names the account the user belongs to.
	Account string
	// User is the user name, empty for an account association.
	User string
	// Partition is set on a user association that applies to one partition
	// only (Slurm's partition associations). (Account, User, Partition)
	// triples are unique; it must be empty for accounts.
	Partition string
	// Parent is the parent account of an account association; it is empty
	// for the root (exactly one) and must be empty or equal to Account for a
	// user association.
	Parent string
	// Shares is the raw shares (sacctmgr Fairshare=N), in [0, MaxShares].
	// Ignored when SharesParent is set; the root's only shows in its
	// sshare NormShares under Fair Tree (shares / NO_VAL, as in Slurm).
	Shares int64
	// SharesParent is sacctmgr Fairshare=parent: the association takes its
	// parent's fair-share standing. An account marked so hands its children
	// to the nearest ancestor that is not.
	SharesParent bool
	// Usage is the association's own decayed raw usage in billing-seconds:
	// for a user everything charged to it, for an account what was charged
	// to it directly and to no current child (e.g. usage of deleted users),
	// usually 0. The tree adds descendants' usage to get sshare's RawUsage,
	// as Slurm does, unless TreeOptions.UsageIncludesDescendants is set.
	// Must be finite and ≥ 0. Ignored in the dominant-share mode.
	Usage float64
	// TRESUsage is the association's own decayed usage per TRES (TRES-
	// seconds, indexed by gres.ID), used only in the dominant-share mode.
	TRESUsage []float64
}

// TreeOptions configure fair-share.
type TreeOptions struct {
	// Flags are PriorityFlags; only NoFairTree and DepthOblivious matter
	// here (see Flags.FairShareAlgorithm).
	Flags Flags
	// DampeningFactor is FairShareDampeningFactor for classic fair-share
	// (0 means Slurm's default, 1).
	DampeningFactor uint16
	// UsageIncludesDescendants says that Association.Usage of an account is
	// already its whole subtree's usage (sshare's RawUsage), so the tree
	// uses it as given instead of adding the descendants' usage.
	UsageIncludesDescendants bool
	// Dominant, when non-nil, selects the dominant-share mode (beyond
	// Slurm; off by default): an association's usage is its dominant TRES
	// share, max over TRES of TRESUsage / Capacity, instead of one billing
	// number. For GPU marketplaces where GPUs and CPUs are priced apart.
	Dominant *DominantShare
}

// DominantShare configures the dominant-resource-share (DRF-style) usage
// measure. An association's usage becomes max_i(u_i / Capacity_i) over the
// TRES with non-zero capacity, where u_i sums its subtree's TRESUsage: the
// number of seconds the whole cluster's dominant resource would have been
// busy. Fair Tree and classic then run on that number unchanged.
type DominantShare struct {
	// Registry names the TRES; TRESUsage vectors may not be longer than
	// it was when the tree was built.
	Registry *gres.Registry
	// Capacity is the cluster total of each TRES. TRES with zero capacity
	// are ignored.
	Capacity gres.Vector
}

// node is one association's state.
type node struct {
	parent, fsParent int32
	dStart, dEnd     int32 // direct children in t.dchild
	gStart, gEnd     int32 // fs children in t.group (sorted by Level FS under Fair Tree)
	uStart, uEnd     int32 // user children in t.uchild, by name
	bfs              int32 // position in BFS order
	depth            int32
	user, useParent  bool
	shares           int64
	levelShares      uint64 // Σ raw shares of the fs children (as a parent)
	own, agg         float64
	sNorm            float64 // NormShares as the algorithm defines it
	uEff             float64 // EffectvUsage
	lf               xfloat  // Level FS (Fair Tree)
	factor           float64 // fair-share factor
	usersIn          uint32  // users in the fs subtree
	// Fair Tree rank cache: the walk's state on entering and leaving this
	// account, to skip unchanged subtrees after an incremental update.
	inRank, inRnt, outRank uint32
	inTied, dirtySub       bool
	mark                   uint32
}

// Tree is an association tree with fair-share factors computed by Fair Tree
// or classic fair-share. Build it with NewTree; update usage with
// UpdateUsage (incremental) or rebuild it. Methods that only read are safe
// for concurrent use; UpdateUsage is not.
type Tree struct {
	acct       []string // Account of each association
	user       []string // User of each association ("" for accounts)
	part       []string // Partition of each user association
	rootShares int64
	nodes      []node
	dchild     []int32
	group      []int32
	bfsOrder   []int32
	root       int32
	users      uint32
	algo       Algorithm
	damp       float64
	inclDesc   bool

	accounts map[string]int32
	uchild   []int32 // each account's user children, sorted by name

	// dominant-share mode
	dom      *DominantShare
	ntres    int
	ownTRES  []float64
	aggTRES  []float64
	capacity []float64

	epoch   uint32
	scratch []int32

	// work counters, for tests of the incremental path
	sortedGroups, rankedGroups int
}

// NewTree validates the associations and computes every association's
// fair-share factor. Association i of the slice is index i of the tree.
// Errors name the association and field and wrap ErrInvalidTree,
// ErrInvalidShares, ErrInvalidUsage or ErrInvalidConfig.
func NewTree(assocs []Association, opts TreeOptions) (*Tree, error) {
	if len(assocs) > math.MaxInt32-1 {
		return nil, fmt.Errorf("%w: %d associations is too many", ErrInvalidTree, len(assocs))
	}
	t := &Tree{
		algo:     opts.Flags.FairShareAlgorithm(),
		damp:     float64(max(opts.DampeningFactor, 1)),
		inclDesc: opts.UsageIncludesDescendants,
		root:     -1,
	}
	if opts.Flags&^allFlags != 0 {
		return nil, fmt.Errorf("%w: TreeOptions.Flags: unknown bits 0x%x", ErrInvalidConfig, uint32(opts.Flags&^allFlags))
	}
	if err := t.setDominant(opts.Dominant); err != nil {
		return nil, err
	}
	if err := t.build(assocs); err != nil {
		return nil, err
	}
	t.aggregateAll()
	t.computeAll()
	return t, nil
}

func (t *Tree) setDominant(d *DominantShare) error {
	if d == nil {
		return nil
	}
	if d.Registry == nil {
		return fmt.Errorf("%w: TreeOptions.Dominant.Registry is nil", ErrInvalidConfig)
	}
	t.dom = d
	t.ntres = d.Registry.Len()
	if len(d.Capacity) > t.ntres {
		return fmt.Errorf("%w: TreeOptions.Dominant.Capacity has %d entries, registry %d TRES", gres.ErrUnknownTRES, len(d.Capacity), t.ntres)
	}
	t.capacity = make([]float64, t.ntres)
	for i, c := range d.Capacity {
		if c < 0 {
			return fmt.Errorf("%w: TreeOptions.Dominant.Capacity[%s] = %d is negative", ErrInvalidConfig, d.Registry.Name(gres.ID(i)), c)
		}
		t.capacity[i] = float64(c)
	}
	return nil
}

// name returns a readable name of association i for errors.
func (t *Tree) name(i int) string {
	if t.user[i] != "" {
		if t.part[i] != "" {
			return fmt.Sprintf("user %q in account %q partition %q", t.user[i], t.acct[i], t.part[i])
		}
		return fmt.Sprintf("user %q in account %q", t.user[i], t.acct[i])
	}
	return fmt.Sprintf("account %q", t.acct[i])
}

func (t *Tree) checkUsage(i int, usage float64, tres []float64) error {
	if t.dom == nil {
		if math.IsNaN(usage) || math.IsInf(usage, 0) || usage < 0 {
			return fmt.Errorf("%w: %s: Usage %v: want a finite number ≥ 0", ErrInvalidUsage, t.name(i), usage)
		}
		return nil
	}
	if len(tres) > t.ntres {
		return fmt.Errorf("%w: %s: TRESUsage has %d entries, registry %d TRES: %w", ErrInvalidUsage, t.name(i), len(tres), t.ntres, gres.ErrUnknownTRES)
	}
	for k, u := range tres {
		if math.IsNaN(u) || math.IsInf(u, 0) || u < 0 {
			return fmt.Errorf("%w: %s: TRESUsage[%s] %v: want a finite number ≥ 0", ErrInvalidUsage, t.name(i), t.dom.Registry.Name(gres.ID(k)), u)
		}
	}
	return nil
}

// build validates the input and lays out the tree.
func (t *Tree) build(in []Association) error {
	n := len(in)
	t.nodes = make([]node, n)
	t.acct = make([]string, n)
	t.user = make([]string, n)
	t.part = make([]string, n)
	nUsers := 0
	for i := range in {
		t.acct[i], t.user[i], t.part[i] = in[i].Account, in[i].User, in[i].Partition
		if in[i].User != "" {
			nUsers++
		}
	}
	t.accounts = make(map[string]int32, n-nUsers)
	for i := range in {
		a := &in[i]
		switch {
		case a.Account == "":
			return fmt.Errorf("%w: association %d: empty Account", ErrInvalidTree, i)
		case a.User != "" && a.Parent != "" && a.Parent != a.Account:
			return fmt.Errorf("%w: %s: Parent %q differs from Account", ErrInvalidTree, t.name(i), a.Parent)
		case a.User == "" && a.Partition != "":
			return fmt.Errorf("%w: %s: Partition %q on an account association", ErrInvalidTree, t.name(i), a.Partition)
		case a.Shares < 0 || a.Shares > MaxShares:
			return fmt.Errorf("%w: %s: Shares %d outside [0, %d]", ErrInvalidShares, t.name(i), a.Shares, MaxShares)
		}
		if err := t.checkUsage(i, a.Usage, a.TRESUsage); err != nil {
			return err
		}
		nd := &t.nodes[i]
		nd.user = a.User != ""
		nd.useParent = a.SharesParent
		nd.shares = a.Shares
		nd.own = a.Usage
		if nd.user {
			t.users++
			continue
		}
		if j, dup := t.accounts[a.Account]; dup {
			return fmt.Errorf("%w: %s: duplicate of association %d", ErrInvalidTree, t.name(i), j)
		}
		t.accounts[a.Account] = int32(i)
		if a.Parent == "" {
			if t.root >= 0 {
				return fmt.Errorf("%w: %s and account %q both have no Parent: only the root may", ErrInvalidTree, t.name(i), t.acct[t.root])
			}
			t.root = int32(i)
			t.rootShares = a.Shares
			nd.useParent = false // the root has no fair-share standing of its own
		}
	}
	if t.root < 0 {
		return fmt.Errorf("%w: no root (an account association with empty Parent)", ErrInvalidTree)
	}
	// Resolve parents and lay out direct children in input order.
	counts := make([]int32, n+1)
	ucounts := make([]int32, n+1)
	lastName, lastIdx := "", int32(-1) // users usually come grouped by account
	for i := range in {
		a := &in[i]
		if int32(i) == t.root {
			t.nodes[i].parent = -1
			continue
		}
		pname := a.Parent
		if a.User != "" {
			pname = a.Account
		}
		p, ok := lastIdx, lastIdx >= 0 && pname == lastName
		if !ok {
			p, ok = t.accounts[pname]
		}
		if !ok {
			return fmt.Errorf("%w: %s: parent account %q does not exist", ErrInvalidTree, t.name(i), pname)
		}
		lastName, lastIdx = pname, p
		t.nodes[i].parent = p
		counts[p+1]++
		if a.User != "" {
			ucounts[p+1]++
		}
	}
	for i := 1; i <= n; i++ {
		counts[i] += counts[i-1]
		ucounts[i] += ucounts[i-1]
	}
	t.dchild = make([]int32, n)
	t.uchild = make([]int32, nUsers)
	fill := slices.Clone(counts[:n])
	ufill := slices.Clone(ucounts[:n])
	for i := range t.nodes {
		nd := &t.nodes[i]
		nd.dStart, nd.dEnd = counts[i], counts[i+1]
		nd.uStart, nd.uEnd = ucounts[i], ucounts[i+1]
		if p := nd.parent; p >= 0 {
			t.dchild[fill[p]] = int32(i)
			fill[p]++
			if nd.user {
				t.uchild[ufill[p]] = int32(i)
				ufill[p]++
			}
		}
	}
	// Each account's users sorted by name: for Lookup, sshare's order and
	// finding duplicates.
	for i := range t.nodes {
		nd := &t.nodes[i]
		us := t.uchild[nd.uStart:nd.uEnd]
		if len(us) < 2 {
			continue
		}
		slices.SortFunc(us, func(a, b int32) int {
			if c := t.cmpUser(a, t.user[b], t.part[b]); c != 0 {
				return c
			}
			return int(a - b)
		})
		for k := 1; k < len(us); k++ {
			if t.cmpUser(us[k], t.user[us[k-1]], t.part[us[k-1]]) == 0 {
				return fmt.Errorf("%w: %s: duplicate of association %d", ErrInvalidTree, t.name(int(us[k])), us[k-1])
			}
		}
	}
	// Breadth-first order from the root; anything unreached is on a cycle.
	t.bfsOrder = make([]int32, 0, n)
	t.bfsOrder = append(t.bfsOrder, t.root)
	t.nodes[t.root].bfs = 0
	for h := 0; h < len(t.bfsOrder); h++ {
		x := t.bfsOrder[h]
		for _, c := range t.dchild[t.nodes[x].dStart:t.nodes[x].dEnd] {
			t.nodes[c].bfs = int32(len(t.bfsOrder))
			t.nodes[c].depth = t.nodes[x].depth + 1
			t.bfsOrder = append(t.bfsOrder, c)
		}
	}
	if len(t.bfsOrder) != n {
		return t.cycleError()
	}
	// Fair-share parents: the nearest ancestor that is not FairShare=parent.
	gcount := make([]int32, n+1)
	for _, x := range t.bfsOrder[1:] {
		nd := &t.nodes[x]
		p := nd.parent
		for p != t.root && t.nodes[p].useParent {
			p = t.nodes[p].parent
		}
		nd.fsParent = p
		gcount[p+1]++
	}
	t.nodes[t.root].fsParent = -1
	for i := 1; i <= n; i++ {
		gcount[i] += gcount[i-1]
	}
	t.group = make([]int32, n)
	gfill := slices.Clone(gcount[:n])
	for i := range t.nodes {
		nd := &t.nodes[i]
		nd.gStart, nd.gEnd = gcount[i], gcount[i+1]
		if int32(i) == t.root {
			continue
		}
		p := nd.fsParent
		t.group[gfill[p]] = int32(i)
		gfill[p]++
		if !nd.useParent {
			t.nodes[p].levelShares += uint64(nd.shares)
		}
	}
	// Users per fair-share subtree (fs parents are ancestors, so reverse
	// BFS order visits children first).
	for k := n - 1; k > 0; k-- {
		x := t.bfsOrder[k]
		nd := &t.nodes[x]
		if nd.user {
			nd.usersIn++
		}
		t.nodes[nd.fsParent].usersIn += nd.usersIn
	}
	t.setSharesNorm()
	if t.dom != nil {
		t.ownTRES = make([]float64, n*t.ntres)
		t.aggTRES = make([]float64, n*t.ntres)
		for i := range in {
			copy(t.ownTRES[i*t.ntres:(i+1)*t.ntres], in[i].TRESUsage)
		}
	}
	return nil
}

// cycleError finds a cycle among the accounts the root does not reach.
func (t *Tree) cycleError() error {
	reached := make([]bool, len(t.nodes))
	for _, x := range t.bfsOrder {
		reached[x] = true
	}
	for i := range t.nodes {
		if reached[i] {
			continue
		}
		seen := map[int32]int{}
		var path []int32
		for x := int32(i); ; x = t.nodes[x].parent {
			if at, ok := seen[x]; ok {
				var names []string
				for _, y := range path[at:] {
					names = append(names, t.acct[y])
				}
				names = append(names, t.acct[x])
				return fmt.Errorf("%w: cycle of parent accounts: %s", ErrInvalidTree, strings.Join(names, " -> "))
			}
			seen[x] = len(path)
			path = append(path, x)
		}
	}
	return fmt.Errorf("%w: unreachable associations", ErrInvalidTree)
}

// setSharesNorm computes the normalised shares, which depend only on the
// shape of the tree.
func (t *Tree) setSharesNorm() {
	r := &t.nodes[t.root]
	if t.algo == FairTree {
		// The root is nobody's child, so its level shares stay NO_VAL.
		r.sNorm = float64(t.rootShares) / slurmNoVal
		for _, x := range t.bfsOrder[1:] {
			nd := &t.nodes[x]
			fa := x
			if nd.useParent {
				fa = nd.fsParent
			}
			if fa == t.root {
				nd.sNorm = r.sNorm
				continue
			}
			if ls := t.nodes[t.nodes[fa].fsParent].levelShares; ls != 0 {
				nd.sNorm = float64(t.nodes[fa].shares) / float64(ls)
			} else {
				nd.sNorm = 0
			}
		}
		return
	}
	// Classic: the product, from the association up to the root, of
	// shares / level shares, skipping FairShare=parent ancestors.
	r.sNorm = 1
	for _, x := range t.bfsOrder[1:] {
		nd := &t.nodes[x]
		if nd.useParent {
			nd.sNorm = t.nodes[nd.fsParent].sNorm
			continue
		}
		s := 1.0
		for y := x; y != t.root; y = t.nodes[y].parent {
			ny := &t.nodes[y]
			if ny.useParent {
				continue
			}
			if ls := t.nodes[ny.fsParent].levelShares; ls == 0 {
				s = 0
			} else {
				s *= float64(ny.shares) / float64(ls)
			}
		}
		nd.sNorm = s
	}
}

// aggregateAll computes every association's subtree usage.
func (t *Tree) aggregateAll() {
	for k := len(t.bfsOrder) - 1; k >= 0; k-- {
		t.aggregate(t.bfsOrder[k])
	}
}

// aggregate recomputes x's subtree usage from its own usage and its
// children's (already final) subtree usage, always in the same order, so
// incremental and full computations agree bit for bit.
func (t *Tree) aggregate(x int32) {
	nd := &t.nodes[x]
	if t.dom == nil {
		s := nd.own
		if !t.inclDesc {
			for _, c := range t.dchild[nd.dStart:nd.dEnd] {
				s += t.nodes[c].agg
			}
		}
		nd.agg = s
		return
	}
	k := t.ntres
	dst := t.aggTRES[int(x)*k : int(x+1)*k]
	copy(dst, t.ownTRES[int(x)*k:int(x+1)*k])
	if !t.inclDesc {
		for _, c := range t.dchild[nd.dStart:nd.dEnd] {
			for i, v := range t.aggTRES[int(c)*k : int(c+1)*k] {
				dst[i] += v
			}
		}
	}
	var d float64
	for i, v := range dst {
		if c := t.capacity[i]; c > 0 {
			d = max(d, v/c)
		}
	}
	nd.agg = d
}

// computeAll computes all fair-share values from the aggregated usage.
func (t *Tree) computeAll() {
	if t.algo != FairTree {
		t.computeClassic()
		return
	}
	for i := range t.nodes {
		nd := &t.nodes[i]
		if !nd.user {
			t.sortGroup(int32(i))
			nd.dirtySub = true
		}
	}
	t.rankFromRoot()
}

// Len returns the number of associations.
func (t *Tree) Len() int { return len(t.nodes) }

// Users returns the number of user associations (Fair Tree's denominator).
func (t *Tree) Users() int { return int(t.users) }

// Root returns the index of the root association.
func (t *Tree) Root() int { return int(t.root) }

// Algorithm returns the fair-share algorithm in use.
func (t *Tree) Algorithm() Algorithm { return t.algo }

// Association returns association i as the tree holds it: its names,
// parent account (empty for the root and for users), shares, Fairshare=
// parent flag and current own usage (TRESUsage omitted).
func (t *Tree) Association(i int) (Association, bool) {
	if i < 0 || i >= len(t.nodes) {
		return Association{}, false
	}
	nd := &t.nodes[i]
	a := Association{Account: t.acct[i], User: t.user[i], Partition: t.part[i], Shares: nd.shares, SharesParent: nd.useParent, Usage: nd.own}
	if int32(i) == t.root {
		a.Shares = t.rootShares
	} else if !nd.user {
		a.Parent = t.acct[nd.parent]
	}
	return a, true
}

// cmpUser orders user associations by user name, then partition.
func (t *Tree) cmpUser(x int32, user, partition string) int {
	if c := strings.Compare(t.user[x], user); c != 0 {
		return c
	}
	return strings.Compare(t.part[x], partition)
}

// Lookup returns the index of an account association (user == "") or of
// user's association with account (the one without a partition).
func (t *Tree) Lookup(account, user string) (int, bool) {
	return t.LookupPartition(account, user, "")
}

// LookupPartition returns the index of user's association with account
// for partition ("" for the association without a partition).
func (t *Tree) LookupPartition(account, user, partition string) (int, bool) {
	a, ok := t.accounts[account]
	if !ok {
		return 0, false
	}
	if user == "" {
		return int(a), true
	}
	nd := &t.nodes[a]
	us := t.uchild[nd.uStart:nd.uEnd]
	k, found := slices.BinarySearchFunc(us, user, func(x int32, u string) int { return t.cmpUser(x, u, partition) })
	if !found {
		return 0, false
	}
	return int(us[k]), true
}

// Factor returns the fair-share factor of association i, in [0,1]: what a
// job of that association gets (PriorityWeightFairshare multiplies it).
// Under Fair Tree only user associations have one (accounts report 0);
// classic computes it for accounts too. Out of range indices give 0.
func (t *Tree) Factor(i int) float64 {
	if i < 0 || i >= len(t.nodes) {
		return 0
	}
	return t.nodes[i].factor
}

// UsageUpdate is one association's new own usage for UpdateUsage.
type UsageUpdate struct {
	// Index is the association's index.
	Index int
	// Usage is the new own decayed usage (billing mode).
	Usage float64
	// TRESUsage is the new own per-TRES usage (dominant-share mode); nil
	// means all zero.
	TRESUsage []float64
}

// SetUsage sets association i's own usage; see UpdateUsage.
func (t *Tree) SetUsage(i int, usage float64) error {
	return t.UpdateUsage(UsageUpdate{Index: i, Usage: usage})
}

// SetTRESUsage sets association i's own per-TRES usage (dominant-share
// mode); see UpdateUsage.
func (t *Tree) SetTRESUsage(i int, usage []float64) error {
	return t.UpdateUsage(UsageUpdate{Index: i, TRESUsage: usage})
}

// UpdateUsage applies new own usage to some associations and updates every
// factor. It does not recompute the whole tree: Fair Tree recomputes Level
// FS and re-sorts only the sibling groups whose members' or parent's usage
// changed (the changed associations' paths to the root) and re-ranks only
// the subtrees whose order or entering rank changed, reusing the cached
// state elsewhere. Classic fair-share normalises every usage by the root's,
// so any change moves every factor; it recomputes all of them in one linear
// pass (no sorting). The result is bit-for-bit what NewTree computes from
// the same input. All updates are validated first; on error nothing
// changes.
func (t *Tree) UpdateUsage(updates ...UsageUpdate) error {
	for _, u := range updates {
		if u.Index < 0 || u.Index >= len(t.nodes) {
			return fmt.Errorf("%w: index %d (tree has %d)", ErrUnknownAssociation, u.Index, len(t.nodes))
		}
		if err := t.checkUsage(u.Index, u.Usage, u.TRESUsage); err != nil {
			return err
		}
	}
	t.epoch++
	if t.epoch == 0 { // wrapped: clear the marks
		for i := range t.nodes {
			t.nodes[i].mark = 0
		}
		t.epoch = 1
	}
	affected := t.scratch[:0]
	for _, u := range updates {
		x := int32(u.Index)
		if t.dom == nil {
			t.nodes[x].own = u.Usage
		} else {
			k := t.ntres
			own := t.ownTRES[int(x)*k : int(x+1)*k]
			clear(own)
			copy(own, u.TRESUsage)
		}
		for y := x; y >= 0; y = t.nodes[y].parent {
			if t.nodes[y].mark == t.epoch {
				break
			}
			t.nodes[y].mark = t.epoch
			affected = append(affected, y)
			if t.inclDesc {
				break
			}
		}
	}
	// Children before parents.
	slices.SortFunc(affected, func(a, b int32) int { return int(t.nodes[b].bfs - t.nodes[a].bfs) })
	for _, y := range affected {
		t.aggregate(y)
	}
	if t.algo != FairTree {
		t.scratch = affected[:0]
		t.computeClassic()
		return nil
	}
	// Groups to re-sort: those of the changed associations (their
	// children's usage ratios moved) and those containing them (their own
	// ratios moved).
	owners := affected
	for _, y := range affected {
		if p := t.nodes[y].fsParent; p >= 0 && t.nodes[p].mark != t.epoch {
			t.nodes[p].mark = t.epoch
			owners = append(owners, p)
		}
	}
	for _, o := range owners {
		if t.nodes[o].user {
			continue
		}
		t.sortGroup(o)
		for y := o; y >= 0 && !t.nodes[y].dirtySub; y = t.nodes[y].fsParent {
			t.nodes[y].dirtySub = true
		}
	}
	t.scratch = owners[:0]
	t.rankFromRoot()
	return nil
}
