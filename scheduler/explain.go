package scheduler

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/topology"
)

// ErrInvalidExplain reports ExplainOptions out of range.
var ErrInvalidExplain = errors.New("invalid explain options")

// DefaultDecayHalfLife is the usage half-life the fair-share
// counterfactual assumes when ExplainOptions.DecayHalfLife is zero
// (Slurm's PriorityDecayHalfLife default).
const DefaultDecayHalfLife = 7 * 24 * time.Hour

// ExplainOptions tunes Explain. The zero value explains without
// counterfactuals, range or audit records.
type ExplainOptions struct {
	// Counterfactuals asks for the verified what-ifs: a shorter time
	// limit, fewer GPUs, another partition, another GPU type, and — with
	// fair-share — the rank after the account's usage decays. Each is
	// checked by re-planning on a copy of the plan (a handful of
	// earliest-fit searches per question).
	Counterfactuals bool
	// RuntimeFraction is the fraction of their time limit jobs actually
	// run, from history (the ledger: median run time / time limit), in
	// (0, 1]. When set, the estimate gets a lower end: the start if the
	// running jobs, and the higher-priority jobs planned before this one,
	// end at that fraction of their limits. Zero leaves it out.
	RuntimeFraction float64
	// DecayHalfLife is PriorityDecayHalfLife for the fair-share
	// counterfactual; zero means DefaultDecayHalfLife.
	DecayHalfLife time.Duration
	// Records supplies audit records for running and finished jobs (from
	// the ledger, or kept by the caller). Without it, Explain describes a
	// start from the job's own state, without the jobs it passed.
	Records DecisionSource
	// MaxListed bounds the jobs listed in each list (jobs ahead, running
	// jobs waited for); zero means 5.
	MaxListed int
}

// Bounds on the work of one explanation.
const (
	// maxAheadPlanned bounds the jobs an on-demand plan (no backfill plan
	// to read) places before the explained job.
	maxAheadPlanned = 2000
	// onDemandHorizon is how far ahead a strict on-demand plan blocks
	// advance reservation windows.
	onDemandHorizon = 7 * 24 * time.Hour
	// maxShortened bounds the running jobs the range shortens (the first
	// to reach their deadlines).
	maxShortened = 128
	// maxReplanned bounds the higher-priority reservations the range
	// re-plans (the first in queue order).
	maxReplanned = 16
	// maxPartitionTries and maxTypeTries bound those counterfactuals.
	maxPartitionTries = 4
	maxTypeTries      = 3
)

// BlockerKind classifies what keeps a job pending.
type BlockerKind uint8

// Blocker kinds, in the order Explain lists them (but BlockerHold, which
// comes first).
const (
	// BlockerPartition: the partition's state or limits (MaxTime,
	// MinNodes/MaxNodes).
	BlockerPartition BlockerKind = iota
	// BlockerBeginTime: the job's begin time is in the future.
	BlockerBeginTime
	// BlockerNodes: too few nodes able to hold the job are up.
	BlockerNodes
	// BlockerLimit: an accounting-policy limit (QOS, association).
	BlockerLimit
	// BlockerReservation: an advance reservation.
	BlockerReservation
	// BlockerDependency: a job dependency.
	BlockerDependency
	// BlockerResources: too few nodes have the per-node request free now.
	BlockerResources
	// BlockerTopology: enough nodes fit, but no placement meets the job's
	// topology constraints (--switches, --segment, NVLink domain).
	BlockerTopology
	// BlockerQueue: higher-priority jobs ahead hold the resources in the
	// plan, or the head of the partition's queue is blocked.
	BlockerQueue
	// BlockerHold: the job is held (Scheduler.Hold): it never starts
	// until released. Listed first.
	BlockerHold
)

var blockerKindNames = [...]string{"partition", "begin-time", "nodes", "limit", "reservation", "dependency",
	"resources", "topology", "queue", "hold"}

// String names the kind.
func (k BlockerKind) String() string { return enumName(k, blockerKindNames[:], "BlockerKind") }

// enumName names value k of an enum from names, or writes "typ(k)" when k
// is out of range or unnamed.
func enumName[K ~uint8](k K, names []string, typ string) string {
	if int(k) < len(names) && names[k] != "" {
		return names[k]
	}
	return fmt.Sprintf("%s(%d)", typ, uint8(k))
}

// Blocker is one thing that keeps a pending job from starting now, with
// its evidence.
type Blocker struct {
	Kind BlockerKind
	// Reason is the Slurm reason this blocker alone would show.
	Reason policy.Reason
	// Detail is the evidence in words for hold, partition, begin-time and
	// node blockers.
	Detail string
	// Policy is the policy package's blocker (limit name, level, value,
	// usage, this job's addition; reservation; dependency).
	Policy *policy.Blocker
	// Need is the resource evidence of resources and topology blockers.
	Need *ResourceNeed
	// Ahead lists, for a queue blocker, the higher-priority jobs holding
	// the plan's resources before this job's expected start (at most
	// MaxListed); AheadTotal counts them all. Head is the first job of
	// the partition's queue when it blocks the partition (strict order).
	Ahead      []AheadJob
	AheadTotal int
	Head       *AheadJob
	// Nodes lists the nodes able to hold the job that are not up (nodes
	// blocker).
	Nodes []string

	maxTime time.Duration // the partition's MaxTime, for a time-limit blocker
}

// ResourceNeed is what a job needs now against what the cluster has free.
type ResourceNeed struct {
	// Nodes is the node count needed; PerNode the per-node request
	// (formatted TRES), or whole nodes when Exclusive. For a GRESPerJob
	// (--gpus) job PerNode holds one of each such GRES per node (the
	// least a node takes) and PerJob the job's totals, spread over its
	// nodes as they can hold them; PerJob is empty for other jobs and for
	// Exclusive ones (whole idle nodes are what counts).
	Nodes     int
	PerNode   string
	PerJob    string
	Exclusive bool
	// Constraint is the topology constraint in words ("on one leaf
	// switch"), empty when none.
	Constraint string
	// FitNow counts the up nodes of the job's partition that can take the
	// per-node request now; Placeable is how many of them one placement
	// under the constraint can use (FitNow without a constraint).
	FitNow, Placeable int
	// Deficits lists, per requested resource, how many nodes have that
	// much free now; only resources that fewer than Nodes nodes have are
	// listed.
	Deficits []Deficit
	// Tasks, for a job whose tasks are spread over a variable number of
	// nodes (sbatch -n without -N, -N min-max, --ntasks-per-node as a
	// maximum), is its task count; Nodes is then the fewest nodes it
	// could run on and NodesMax the most. PerNode is one task's share.
	// TaskRoom is how many of its tasks the nodes that fit now hold, at
	// most NodesMax of them (short when below Tasks). Zero for other jobs.
	Tasks, NodesMax, TaskRoom int `json:",omitempty"`
	// UserExcluded counts the allowed nodes --exclusive=user keeps the job
	// off now: they run another user's job and the job has the flag, or
	// another user's --exclusive=user job runs there.
	UserExcluded int `json:",omitempty"`
	// OverSubscribe, for a job that may share CPUs (its partition's
	// OverSubscribe=FORCE[:n], or YES[:n] and the job asked
	// --oversubscribe), is how many jobs may share each CPU: FitNow and
	// the CPU deficit count the CPUs it could share as well as the free
	// ones. Zero when its CPUs are its own.
	OverSubscribe int `json:",omitempty"`
	// CPUUnit, when Config.SelectTypeParameters allocates CPUs in whole
	// cores or sockets, names the unit ("CR_Core_Memory"): a node fits
	// only with whole units free, and the job is charged whole units.
	CPUUnit string `json:",omitempty"`
}

// idleNode is the Deficit.TRES of whole-node requests: how many nodes
// are idle.
const idleNode = "idle node"

// Deficit is one short resource dimension ("idle node" for a whole-node
// request: Nodes counts the idle nodes).
type Deficit struct {
	TRES    string
	PerNode int64
	// Nodes is how many allowed nodes have PerNode of it free now (of a
	// whole-node request: how many idle nodes).
	Nodes int
	// Total and Room, for a GRESPerJob total that the nodes holding the
	// job's per-node request cannot hold (Nodes of them): the job's total
	// and the most that as many nodes as the job needs hold free now.
	// Both are zero for a per-node deficit.
	Total, Room int64
}

// AheadJob is a higher-priority job that holds resources in the plan.
type AheadJob struct {
	Job       JobID
	Priority  uint32
	Partition string
	Reason    policy.Reason
	// Start is its planned start (zero without an estimate) and Nodes
	// its planned node count.
	Start time.Time
	Nodes int
}

// EstimateSource says where an expected start comes from.
type EstimateSource uint8

// Estimate sources.
const (
	// EstimateNone: no estimate (the job never fits, or too much is
	// queued ahead for an on-demand plan).
	EstimateNone EstimateSource = iota
	// EstimateReserved: the backfill plan holds a reservation for the job;
	// no lower-priority job may delay it.
	EstimateReserved
	// EstimateEstimated: the backfill plan's estimate without a
	// reservation (EASY beyond its k, bf_min_prio_reserve …): later
	// backfill may delay it.
	EstimateEstimated
	// EstimateOutsidePlan: the last plan gave the job no start (beyond
	// bf_window, not tested under bf_max_job_test, submitted since, or
	// only tested for a start now because Config.EstimateInterval let an
	// older estimate stand); the start shown is the earliest the plan
	// leaves it, searched without the window.
	EstimateOutsidePlan
	// EstimateOnDemand: no plan to read (no backfill configured, or no
	// cycle yet): a plan was built on demand from the current state, with
	// the jobs ahead in queue order.
	EstimateOnDemand
)

var estimateSourceNames = [...]string{"none", "reserved", "estimated", "outside-plan", "on-demand"}

// String names the source.
func (e EstimateSource) String() string { return enumName(e, estimateSourceNames[:], "EstimateSource") }

// Estimate is when and where a pending job is expected to start.
type Estimate struct {
	Source EstimateSource
	// PlanTime is when the plan was made (the last cycle, or now for an
	// on-demand plan).
	PlanTime time.Time
	Start    time.Time
	Nodes    []string
	// WaitsFor lists the running jobs on its planned nodes that end by
	// Start (at most MaxListed, soonest first); WaitsForTotal counts them.
	WaitsFor      []RunningEnd
	WaitsForTotal int
	// WaitsForIdle lists the running jobs it waits for (of all
	// WaitsForTotal) that are allocated but idle on its planned nodes by
	// their telemetry (Config.Telemetry.Rule; see IdleHolder), at most
	// MaxListed, soonest end first; WaitsForIdleTotal counts them. Empty
	// with the rule off or without readings.
	WaitsForIdle      []IdleHolder `json:",omitempty"`
	WaitsForIdleTotal int          `json:",omitempty"`
	// Earliest is the lower end of the range when ExplainOptions asked
	// for one (RuntimeFraction); zero otherwise. EarliestPartial is set
	// when the work bounds cut the re-plan short, so the true lower end
	// may be earlier still.
	Earliest        time.Time
	Fraction        float64
	EarliestPartial bool
	// Note says why there is no estimate.
	Note string
	// Limit names the concurrent limit that set Start, when the nodes
	// alone would allow an earlier one: "MaxTRESPerUser gres/gpu=8 (user
	// ann)" (the plan carries the limits over time, see limitplan.go).
	Limit string
	// Overtakers lists the higher-priority pending jobs outside the plan
	// that could still take the job's nodes first (see Overtaker), at
	// most MaxListed; OvertakersTotal counts them. While there is one,
	// Bound is false.
	Overtakers      []Overtaker
	OvertakersTotal int
	// NotPromised says why a start the plan holds a reservation for (or
	// makes now) is still an estimate, when that is neither Overtakers
	// nor the backfill mode: the job or a job ahead of it is planned on
	// nodes that share GPUs, which the plan counts approximately between
	// its bookings (the rule is in explain_shares.go). Empty otherwise.
	NotPromised string
	// Bound reports that Start is a promise, not an estimate: the plan
	// holds a reservation for the job (or starts it now), so under exact
	// run times (every running and planned job ends at its time limit,
	// nothing new is submitted) it starts at Start or sooner. False for an
	// estimate: a plan entry without a reservation (EASY beyond its
	// reservations, bf_min_prio_reserve …), a start outside the plan, a
	// strict-order plan without backfill, or any start while a
	// higher-priority job outside the plan may overtake the job
	// (Overtakers), or a start the plan's shared-GPU counts cannot
	// guarantee (NotPromised).
	// Package scheduler/explaintest checks both by replay.
	Bound bool
}

// RunningEnd is a running job and when it ends at the latest.
type RunningEnd struct {
	Job JobID
	End time.Time
}

// CounterfactualKind says what a counterfactual changes.
type CounterfactualKind uint8

// Counterfactual kinds.
const (
	// CounterTimeLimit: the largest time limit with which the job starts now.
	CounterTimeLimit CounterfactualKind = iota
	// CounterGPUs: fewer GPUs per node, or fewer in all for a GRESPerJob
	// (--gpus) job (its Spec keeps the total form).
	CounterGPUs
	// CounterPartition: another partition.
	CounterPartition
	// CounterGPUType: another GPU type.
	CounterGPUType
	// CounterFairShare: the job's rank after its account's usage decays.
	CounterFairShare
)

var counterKindNames = [...]string{"time-limit", "gpus", "partition", "gpu-type", "fair-share"}

// String names the kind.
func (k CounterfactualKind) String() string {
	return enumName(k, counterKindNames[:], "CounterfactualKind")
}

// Counterfactual is one verified what-if: a change to the job (or to its
// account's usage) and its effect, computed by re-planning on a copy of
// the plan, not guessed. Changes to the job assume it is updated in place
// and keeps its place in the queue; starts are those the plan gives with
// running jobs taking their full time limits, so a start "now" is what
// the next backfill pass does, and a later start is an upper bound under
// conservative backfill (an estimate under EASY).
type Counterfactual struct {
	Kind CounterfactualKind
	// Spec is the changed request (not for CounterFairShare).
	Spec JobSpec
	// TimeLimit, GPUs (per node; the job's total for a GRESPerJob
	// (--gpus) job, whose Spec keeps that form), Partition and GPUType
	// hold the changed value of their kind.
	TimeLimit time.Duration
	GPUs      int64
	Partition string
	GPUType   string
	// Start is the verified start, Now whether it is immediate, and
	// Nodes the planned nodes.
	Start time.Time
	Now   bool
	Nodes []string
	// Was is the start it improves on (zero: none before).
	Was time.Time
	// Bound reports that Start is a promise under exact run times (see
	// Estimate.Bound): a start now, or any start under conservative
	// backfill, where the changed job would hold a reservation. False for
	// a later start under EASY or without backfill: an estimate.
	// Also false when the change moves the job in the queue (Moves), and
	// where shared GPUs leave the start unguaranteed (NotPromised).
	Bound bool
	// NotPromised says why a start now, or a later start under
	// conservative backfill, is an estimate: as Estimate.NotPromised.
	// Empty otherwise.
	NotPromised string
	// Moves reports a change that moves the job in the queue (a partition
	// of another priority tier): Start is computed as if it kept its
	// place, so it is an estimate, a start now included.
	Moves bool
	// Fair-share: the account, the time by which its usage has decayed
	// (one half-life), the job's priority and rank in its partition then,
	// and its rank now (RankWas).
	Account  string
	At       time.Time
	Priority uint32
	Rank     int
	RankWas  int
}

// StartInfo says how a running or finished job started.
type StartInfo struct {
	Time time.Time
	Kind DecisionKind
	// Nodes and GPUs of the allocation.
	Nodes []string
	GPUs  []NodeGPUs
	// Priority and Factors at the decision (Factors nil without
	// multifactor priority).
	Priority uint32
	Factors  *Factors
	// QueuePos, Overtook, OvertookMore and Preempted (the running jobs
	// preempted for it) come from the audit record (zero and nil without
	// one).
	QueuePos      int
	Overtook      []Overtaken
	OvertookMore  bool
	Preempted     []JobID
	PolicyVersion string
	// FromRecord reports whether an audit record was found; otherwise the
	// job's own state was read.
	FromRecord bool
}

// Explanation is Explain's answer: typed data, with String for people.
type Explanation struct {
	Job                            JobID
	Name, User, Account, Partition string
	State                          JobState
	Now                            time.Time
	// Reason is the Slurm reason code from the last cycle (pending), or
	// why the job ended.
	Reason policy.Reason
	// Priority is the job's priority and Breakdown its multifactor
	// breakdown (nil under FCFS). Rank is its 1-based position among the
	// pending jobs of its partition, QueuePos among all pending jobs (in
	// queue order: preemptors first, reservation jobs, tier, priority,
	// submit time, ID), of Pending.
	Priority  uint32
	Breakdown *priority.Breakdown
	Rank      int
	QueuePos  int
	Pending   int
	// EligibleTime is when a pending job became eligible (Job.EligibleTime:
	// its age factor counts from then); zero while it is not, e.g. while
	// a dependency is unsatisfied.
	EligibleTime time.Time
	// Blockers lists every blocker that applies to a pending job.
	Blockers []Blocker
	// Estimate is a pending job's expected start.
	Estimate *Estimate
	// Counterfactuals are the verified what-ifs (ExplainOptions).
	Counterfactuals []Counterfactual
	// Start explains a running or finished job's start; EndTime and
	// ExitCode a finished job's end.
	Start    *StartInfo
	EndTime  time.Time
	ExitCode int
	// Het explains a component of a heterogeneous job: its components
	// and the one the job waits for (nil for other jobs).
	Het *HetExplanation `json:",omitempty"`
}

// Explain says why job id is where it is, as of now. For a pending job:
// its Slurm reason and every blocker that applies with its evidence, its
// priority breakdown and rank in its partition, its expected start and
// planned nodes from the same plan backfill uses (with the running jobs
// whose ends it waits for), an optional range under historical run
// times, and optional counterfactuals, each verified by re-planning. For
// a running or finished job: how and when it started, from the audit
// records when given.
//
// The plan read is the last cycle's (its backfill profile, with the
// running jobs and the reservations it booked); events since that cycle
// are not in it. Without backfill, or before the first cycle, a plan is
// built on demand from the current state: with backfill configured, by
// running the planner over the jobs ahead; without, in strict queue order
// (a job does not start before any job ahead in a partition sharing its
// nodes, as the main pass's partition blocking requires), at most
// maxAheadPlanned jobs ahead. Explain changes nothing: what-ifs run on a
// copy of the plan.
func (s *Scheduler) Explain(now time.Time, id JobID, opts ExplainOptions) (Explanation, error) {
	if err := s.tick(now); err != nil {
		return Explanation{}, err
	}
	switch {
	case math.IsNaN(opts.RuntimeFraction) || opts.RuntimeFraction < 0 || opts.RuntimeFraction > 1:
		return Explanation{}, fmt.Errorf("%w: RuntimeFraction %v, want [0, 1]", ErrInvalidExplain, opts.RuntimeFraction)
	case opts.DecayHalfLife < 0:
		return Explanation{}, fmt.Errorf("%w: DecayHalfLife %v is negative", ErrInvalidExplain, opts.DecayHalfLife)
	case opts.MaxListed < 0:
		return Explanation{}, fmt.Errorf("%w: MaxListed %d is negative", ErrInvalidExplain, opts.MaxListed)
	}
	if opts.MaxListed == 0 {
		opts.MaxListed = 5
	}
	if opts.DecayHalfLife == 0 {
		opts.DecayHalfLife = DefaultDecayHalfLife
	}
	j, ok := s.jobs[id]
	if !ok {
		return Explanation{}, s.unknownJob(id)
	}
	ex := Explanation{
		Job: j.ID, Name: j.Spec.Name, User: j.Spec.User, Account: j.Spec.Account, Partition: j.Partition,
		State: j.State, Now: now, Reason: j.Reason, Priority: j.Priority, EligibleTime: j.EligibleTime,
	}
	if b, ok := s.PriorityBreakdown(id); ok {
		ex.Breakdown = &b
	}
	if j.HetJobID != 0 {
		ex.Het = s.explainHet(now, j)
	}
	if j.State != JobPending {
		if err := s.explainStarted(j, &opts, &ex); err != nil {
			return Explanation{}, err
		}
		return ex, nil
	}
	if err := s.explainPending(now, j, &opts, &ex); err != nil {
		return Explanation{}, err
	}
	return ex, nil
}

// explainStarted fills the start (and end) of a job that left the queue.
func (s *Scheduler) explainStarted(j *job, opts *ExplainOptions, ex *Explanation) error {
	if j.State.Finished() {
		ex.EndTime, ex.ExitCode = j.EndTime, j.ExitCode
	}
	if j.StartTime.IsZero() {
		return nil // cancelled while pending
	}
	st := &StartInfo{Time: j.StartTime, Kind: DecisionStart, Priority: j.Priority}
	if j.Backfilled {
		st.Kind = DecisionBackfillStart
	}
	rec := s.recordOf(j, st.Kind, j.StartTime, "")
	st.Nodes, st.GPUs, st.Factors = rec.Nodes, rec.GPUs, rec.Factors
	if opts.Records != nil {
		recs, err := opts.Records.JobDecisions(j.ID)
		if err != nil {
			return fmt.Errorf("scheduler: explain job %d: audit records: %w", j.ID, err)
		}
		// The record of this run: the latest start at or before its start
		// time (records keep whole seconds).
		if best := lastStart(recs, j.StartTime); best != nil {
			st.Time, st.Kind, st.Priority, st.Factors = best.Time, best.Kind, best.Priority, best.Factors
			st.Nodes, st.GPUs = best.Nodes, best.GPUs
			st.QueuePos, st.Overtook, st.OvertookMore, st.Preempted = best.QueuePos, best.Overtook, best.OvertookMore, best.Preempted
			st.PolicyVersion, st.FromRecord = best.PolicyVersion, true
		}
	}
	ex.Start = st
	return nil
}

// explainPending fills everything Explain says about a pending job.
func (s *Scheduler) explainPending(now time.Time, j *job, opts *ExplainOptions, ex *Explanation) error {
	allowed := s.jobAllowed(j)
	ctx, err := s.planContext(now, j)
	if err != nil {
		return err
	}

	est := s.estimate(now, j, ctx, allowed, opts)
	ex.Estimate = est

	// One walk of the queue up to the job: its position and rank, the
	// head of its partition, and the higher-priority jobs holding a
	// reservation on nodes it could use before its expected start. Each
	// job ahead is read once (at the standard scale this walk is most of
	// Explain's cost: the reads are cache misses).
	var cands []*job
	var head *job
	ex.Pending = s.pending.Len()
	// Under EASY only the first Reservations jobs that could not start
	// hold one: once they are found, no later job needs the lookup. Under
	// conservative backfill without the knobs that deny reservations,
	// every job with an expected start holds one.
	resvLeft := -1
	if !ctx.onDemand && s.bf != nil {
		if c := s.bf.planner.Config(); c.Mode == backfill.EASY {
			resvLeft = max(c.Reservations, 1)
		}
	}
	// reserved reports whether job x holds a reservation in the plan:
	// recorded by the last backfill pass, or looked up in an on-demand plan.
	reserved := func(x *job) bool {
		if ctx.onDemand {
			return ctx.prof.Has(backfill.JobID(x.ID))
		}
		return x.reserved
	}
	keys := s.limitKeys(j)
	ovAllowed, ovKeys := s.hetOvertakeScope(j, allowed, keys)
	sc := s.newOvertakeScan(ctx)
	s.pending.Ascend(func(x *job) bool {
		ex.QueuePos++
		if x == j {
			return false
		}
		if est.Source != EstimateNone {
			sc.visit(s, now, x, ctx, reserved(x), ovAllowed, ovKeys, est, opts.MaxListed)
		}
		if x.part == j.part {
			ex.Rank++
			if head == nil && (x.Reason.Blocking() || x.Reason == policy.ReasonPriority) {
				head = x
			}
		}
		if ctx.prof != nil && resvLeft != 0 {
			// Only reservations hold resources in the plan (an estimate
			// without one does not); under EASY only the first k exist.
			if start, nodes := ctx.plannedOf(x); len(nodes) > 0 && reserved(x) {
				if resvLeft > 0 {
					resvLeft--
				}
				if (est.Start.IsZero() || start.Before(est.Start)) && anyIn(nodes, allowed) {
					cands = append(cands, x)
				}
			}
		}
		return true
	})
	ex.Rank++
	if est.Source != EstimateNone {
		s.indirectOvertakers(now, j, sc, ovAllowed, est, opts.MaxListed)
	}
	if est.OvertakersTotal > 0 {
		est.Bound = false
	}

	ex.Blockers = s.staticBlockers(now, j, allowed)
	need, fit, short, topo := s.resourceNeed(now, j, allowed)
	if b, ok := s.reservationBlocker(now, j, fit); ok {
		ex.Blockers = append(ex.Blockers, b)
	}
	if short && allowed.Count() >= j.nodes { // else the nodes blocker says it
		ex.Blockers = append(ex.Blockers, Blocker{Kind: BlockerResources, Reason: policy.ReasonResources, Need: need})
	} else if b, ok := s.whereBusyBlocker(j, fit); ok {
		ex.Blockers = append(ex.Blockers, b)
	} else if topo {
		ex.Blockers = append(ex.Blockers, Blocker{Kind: BlockerTopology, Reason: policy.ReasonResources, Need: need})
	}

	// Jobs ahead holding the plan's resources before the job's start.
	qb := Blocker{Kind: BlockerQueue, Reason: policy.ReasonPriority}
	qb.AheadTotal = len(cands)
	for _, x := range cands[:min(len(cands), opts.MaxListed)] {
		qb.Ahead = append(qb.Ahead, ctx.aheadOf(x))
	}
	if head != nil && head.Reason.Blocking() {
		h := ctx.aheadOf(head)
		qb.Head = &h
	}
	if qb.AheadTotal > 0 || (qb.Head != nil && (ctx.strict || j.Reason == policy.ReasonPriority)) {
		ex.Blockers = append(ex.Blockers, qb)
	}

	if opts.Counterfactuals && ctx.prof != nil {
		gate := cfGate(ex.Blockers)
		if j.Spec.Reservation != "" {
			gate = cfAllowed{} // the plan does not place jobs in reservations
		}
		if err := s.counterfactuals(now, j, ctx, allowed, est, opts, ex, gate); err != nil {
			return err
		}
	}
	return nil
}

// ---- planning context ----

// planCtx is the plan an explanation reads and re-plans on.
type planCtx struct {
	// prof is a private profile (a clone of the last plan's, or built on
	// demand) without the explained job's own reservation; nil when the
	// job cannot be planned at all.
	prof *backfill.Profile
	at   time.Time
	// onDemand marks a plan built by Explain; strict marks one in strict
	// queue order (no backfill configured).
	onDemand, strict bool
	// planned holds the on-demand plan's entries (start, nodes) by job.
	planned map[JobID]plannedAt
	// own is the explained job's entry in an on-demand plan; ownBound
	// whether it starts now or holds a reservation there.
	own              plannedAt
	ownSet, ownBound bool
	// sharesAhead says that a job placed before the explained one in the
	// plan breaks rule (b) or (c) of explain_shares.go, sharesStarted
	// that one breaks (c): a later start, or with sharesStarted any
	// start, is then no promise.
	sharesAhead, sharesStarted bool
	// partStart is, in strict order, per partition, the latest planned
	// start among the jobs ahead of the explained one (none before it may
	// start while one of them waits in a partition sharing its nodes).
	partStart []time.Time
	// note says why an on-demand plan is missing.
	note string
}

type plannedAt struct {
	start time.Time
	nodes []int
}

// plannedOf returns job x's planned start and nodes.
func (c *planCtx) plannedOf(x *job) (time.Time, []int) {
	if c.onDemand {
		p := c.planned[x.ID]
		return p.start, p.nodes
	}
	return x.ExpectedStart, x.planned
}

// aheadOf describes job x ahead in the queue, with its planned start.
func (c *planCtx) aheadOf(x *job) AheadJob {
	start, nodes := c.plannedOf(x)
	return AheadJob{Job: x.ID, Priority: x.Priority, Partition: x.Partition, Reason: x.Reason, Start: start, Nodes: len(nodes)}
}

// planContext returns the plan to read for job j: a clone of the last
// backfill plan, or one built on demand.
func (s *Scheduler) planContext(now time.Time, j *job) (*planCtx, error) {
	if last := s.readableProfile(); last != nil {
		p := last.Clone()
		if p.Has(backfill.JobID(j.ID)) {
			if err := p.Release(backfill.JobID(j.ID)); err != nil {
				return nil, fmt.Errorf("scheduler: explain job %d: %w", j.ID, err)
			}
		}
		ctx := &planCtx{prof: p, at: p.Now()}
		ctx.sharesAhead, ctx.sharesStarted = s.keptSharesAhead(j)
		return ctx, nil
	}
	res := time.Second
	if s.bf != nil {
		res = s.bf.planner.Config().Resolution
	}
	s.refreshClaim() // a cache: the claim dimension as the next cycle sees it
	prof, err := backfill.NewProfile(now, s.profileNodes(), s.profileRunning(), backfill.ProfileOptions{Resolution: res})
	if err != nil {
		return nil, fmt.Errorf("scheduler: explain job %d: profile: %w", j.ID, err)
	}
	horizon := onDemandHorizon
	if s.bf != nil {
		horizon = s.bf.planner.Config().Window // bf_window, defaults filled in
	}
	if err := s.reservationWindows(now, now.Add(horizon), func(id uint64, w policy.Window, nodes []int) error {
		return prof.Block(backfill.JobID(id), w.Start, w.End, nodes)
	}); err != nil {
		return nil, fmt.Errorf("scheduler: explain job %d: reservations: %w", j.ID, err)
	}
	ctx := &planCtx{prof: prof, at: now, onDemand: true, strict: s.bf == nil, planned: map[JobID]plannedAt{}}
	var ahead []*job
	s.pending.Ascend(func(x *job) bool {
		if x == j {
			return false
		}
		if (x.Reason == policy.ReasonNone || plannable(x.Reason)) && x.Spec.Reservation == "" && x.Hold == HoldNone && !s.outsidePlan(x) {
			ahead = append(ahead, x)
		}
		return true
	})
	if len(ahead) > maxAheadPlanned {
		ctx.note = fmt.Sprintf("%d jobs are queued ahead, more than an on-demand plan places (%d)", len(ahead), maxAheadPlanned)
		ctx.prof = nil
		return ctx, nil
	}
	if !ctx.strict {
		// The planner, as the next backfill pass would run it: a
		// heterogeneous job once, at its first component's turn, with
		// all its pending components (hetOnDemandJob).
		jobs := make([]backfill.Job, 0, len(ahead)+1)
		hetAt := map[JobID]int{} // a heterogeneous job's index in jobs
		add := func(x *job) int {
			if x.HetJobID == 0 {
				jobs = append(jobs, s.bfJob(now, x, s.jobAllowed(x), nil))
				return len(jobs) - 1
			}
			if k, ok := hetAt[x.HetJobID]; ok {
				return k
			}
			k := -1
			if bj, ok := s.hetOnDemandJob(now, x); ok {
				jobs = append(jobs, bj)
				k = len(jobs) - 1
			}
			hetAt[x.HetJobID] = k
			return k
		}
		for _, x := range ahead {
			add(x)
		}
		ownAt := -1
		if j.Spec.Reservation == "" {
			ownAt = add(j)
		}
		plan, err := s.bf.planner.Plan(prof, jobs)
		if err != nil {
			return nil, fmt.Errorf("scheduler: explain job %d: plan: %w", j.ID, err)
		}
		// The next pass makes this plan, starts included (sharesStarted
		// stays false: explain_shares.go).
		before := len(plan.Entries) // the entries ahead of the explained job's
		if ownAt >= 0 {
			before = ownAt
		}
		ctx.sharesAhead, _ = s.sharesBookedBefore(plan.Entries, before)
		for k, e := range plan.Entries {
			if e.Status != backfill.StatusStart && e.Status != backfill.StatusReserved && e.Status != backfill.StatusEstimated {
				continue
			}
			es := []backfill.Entry{e}
			if len(e.Components) > 0 {
				es = e.Components
			}
			for _, ce := range es {
				if k == ownAt && JobID(ce.ID) == j.ID {
					ctx.own, ctx.ownSet = plannedAt{ce.Start, ce.Nodes}, true
					ctx.ownBound = e.Status != backfill.StatusEstimated
				} else {
					ctx.planned[JobID(ce.ID)] = plannedAt{ce.Start, ce.Nodes}
				}
			}
		}
		if prof.Has(backfill.JobID(j.ID)) {
			if err := prof.Release(backfill.JobID(j.ID)); err != nil {
				return nil, fmt.Errorf("scheduler: explain job %d: %w", j.ID, err)
			}
		}
		return ctx, nil
	}
	// Strict order: each job after those ahead sharing its nodes.
	ctx.partStart = make([]time.Time, len(s.parts))
	for _, x := range ahead {
		req := s.requestFor(now, x, s.jobAllowed(x), x.TimeLimit, ctx.partStart)
		fit, err := prof.EarliestFit(req)
		if err != nil {
			return nil, fmt.Errorf("scheduler: explain job %d: planning job %d: %w", j.ID, x.ID, err)
		}
		if fit.Status != backfill.FitFound {
			continue
		}
		if err := prof.ReserveFit(backfill.JobID(x.ID), req, fit); err != nil {
			return nil, fmt.Errorf("scheduler: explain job %d: planning job %d: %w", j.ID, x.ID, err)
		}
		ctx.planned[x.ID] = plannedAt{fit.Start, fit.Nodes}
		if fit.Start.After(ctx.partStart[x.part]) {
			ctx.partStart[x.part] = fit.Start
		}
	}
	return ctx, nil
}

// earliest is the earliest start job x may have at or after now: its
// begin time and, in strict order, the latest planned start of the jobs
// ahead in every partition sharing its nodes (partStart, nil otherwise).
func (s *Scheduler) earliest(now time.Time, x *job, allowed topology.NodeSet, partStart []time.Time) time.Time {
	t := now
	if x.Spec.BeginTime.After(t) {
		t = x.Spec.BeginTime
	}
	for p, ps := range partStart {
		if ps.After(t) && s.parts[p].nodes.Intersects(allowed) {
			t = ps
		}
	}
	return t
}

// requestFor is the profile request for job x with duration d, as the
// backfill pass plans it (bfJob): a --gpus total spread exactly where the
// planner can.
func (s *Scheduler) requestFor(now time.Time, x *job, allowed topology.NodeSet, d time.Duration, partStart []time.Time) backfill.Request {
	tasks, perTask, maxPer := x.bfTasks()
	return backfill.Request{
		Nodes: x.nodes, PerNode: s.claimedPerNode(x), Spread: x.bfSpread, Exclusive: x.Spec.Exclusive || x.exclUser(), Allowed: s.userAllowed(x, allowed, nil),
		Duration: d, Earliest: s.earliest(now, x, allowed, partStart), Chooser: s.chooserFor(now, x),
		Tasks: tasks, PerTask: perTask, MaxTasksPerNode: maxPer, PlaneSize: x.bfPlane(),
	}
}

// plannedDuration is the limit the planner plans a pending job with.
func plannedDuration(x *job) time.Duration {
	if x.Spec.TimeMin > 0 && x.Spec.TimeMin < x.TimeLimit {
		return x.Spec.TimeMin
	}
	return x.TimeLimit
}

// chooserFor returns the node chooser the backfill pass uses for x.
func (s *Scheduler) chooserFor(now time.Time, x *job) backfill.NodeChooser {
	if s.graph == nil {
		return nil
	}
	if c := x.constraints(); c != (topology.Constraints{}) {
		ch, _ := s.constrainedChooser(now, x, c)
		return ch
	}
	return graphChooser(s.graph)
}

// graphChooser is the node chooser of jobs without topology constraints:
// graph g's best placement, the default the backfill planner is given.
func graphChooser(g *topology.Graph) backfill.NodeChooser {
	return func(c topology.NodeSet, n int) []int {
		p, err := g.Select(c, n, topology.Constraints{})
		if err != nil {
			return nil
		}
		return p.Nodes.AppendTo(make([]int, 0, n))
	}
}

// jobAllowed returns the nodes job x may use now: capable and up.
func (s *Scheduler) jobAllowed(x *job) topology.NodeSet {
	a := x.shape.capable.Clone()
	a.IntersectWith(s.usable)
	return a
}

func anyIn(nodes []int, set topology.NodeSet) bool {
	for _, i := range nodes {
		if set.Has(i) {
			return true
		}
	}
	return false
}

func (s *Scheduler) nodeNames(idx []int) []string {
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = s.nodes[i].cfg.Name
	}
	return out
}

// ---- blockers ----

// policyBlockers returns every policy blocker that holds job j at now:
// its array's throttle, its dependency, every accounting limit in
// hierarchy order (the policy's CheckStartAll, where a cycle records only
// the first), and its reservation's (a job naming a reservation whose
// window is not open, or that it may not use). Jobs outside reservations
// get a reservation blocker from resourceNeed when reserved nodes are what
// it lacks.
func (s *Scheduler) policyBlockers(now time.Time, j *job) []policy.Blocker {
	var out []policy.Blocker
	if b, held := s.arrayBlocker(j); held {
		out = append(out, b)
	}
	if b, blocked := s.depBlocker(j); blocked {
		out = append(out, b)
	}
	if s.pol == nil {
		return out
	}
	req := s.policyRequest(j)
	out = s.pol.p.CheckStartAll(now, &req, s.pol.usage, out)
	if j.Spec.Reservation != "" {
		forbidden := topology.NewNodeSet(len(s.nodes))
		if _, b := s.pol.resv.Constrain(j.resvJob(), now, insideWall, forbidden); b.Blocked() {
			out = append(out, b)
		}
	}
	return out
}

// partitionBlockers appends to out every refusal of job x by its
// partition: its state (DOWN, INACTIVE), MaxTime, MinNodes/MaxNodes — the
// main pass's partition checks (evaluate), all of them rather than the
// first.
func (s *Scheduler) partitionBlockers(x *job, out []Blocker) []Blocker {
	pc := &s.parts[x.part].cfg
	switch pc.State {
	case PartitionDown:
		out = append(out, Blocker{Kind: BlockerPartition, Reason: policy.ReasonPartitionDown,
			Detail: fmt.Sprintf("partition %s is DOWN: it queues jobs but starts none", pc.Name)})
	case PartitionInactive:
		out = append(out, Blocker{Kind: BlockerPartition, Reason: policy.ReasonPartitionInactive,
			Detail: fmt.Sprintf("partition %s is INACTIVE", pc.Name)})
	}
	overTime, outNodes := s.partitionLimits(x)
	if overTime {
		out = append(out, Blocker{Kind: BlockerPartition, Reason: policy.ReasonPartitionTimeLimit, maxTime: pc.MaxTime,
			Detail: fmt.Sprintf("time limit %s exceeds partition %s MaxTime %s", policy.FormatDuration(x.TimeLimit),
				pc.Name, policy.FormatDuration(pc.MaxTime))})
	}
	if outNodes {
		out = append(out, Blocker{Kind: BlockerPartition, Reason: policy.ReasonPartitionNodeLimit,
			Detail: fmt.Sprintf("%d node(s) is outside partition %s MinNodes=%d MaxNodes=%d", x.nodes, pc.Name,
				pc.MinNodes, pc.MaxNodes)})
	}
	return out
}

// staticBlockers are the blockers that do not depend on what runs:
// partition, begin time, nodes down, policy.
func (s *Scheduler) staticBlockers(now time.Time, j *job, allowed topology.NodeSet) []Blocker {
	var out []Blocker
	if j.Hold != HoldNone {
		by := "its user"
		if j.Hold == HoldAdmin {
			by = "an administrator"
		}
		out = append(out, Blocker{Kind: BlockerHold, Reason: j.Hold.reason(),
			Detail: "held by " + by + " (priority 0): it never starts until released"})
	}
	out = s.partitionBlockers(j, out)
	if j.Spec.BeginTime.After(now) {
		out = append(out, Blocker{Kind: BlockerBeginTime, Reason: policy.ReasonBeginTime,
			Detail: fmt.Sprintf("begin time %s is %s away", fmtTime(j.Spec.BeginTime), fmtDur(j.Spec.BeginTime.Sub(now)))})
	}
	out = s.whereBlockers(j, out)
	if b, ok := s.rebootBlocker(j); ok {
		out = append(out, b)
	}
	if b, ok := s.jobNodesBlocker(j); ok {
		out = append(out, b)
	}
	for _, pb := range s.policyBlockers(now, j) {
		k := BlockerLimit
		switch pb.Level {
		case policy.LevelReservation:
			k = BlockerReservation
		case policy.LevelDependency:
			k = BlockerDependency
		case policy.LevelPartition:
			k = BlockerPartition
			if slices.ContainsFunc(out, func(b Blocker) bool { return b.Kind == k && b.Reason == pb.Reason }) {
				continue // partitionBlockers said it
			}
		}
		out = append(out, Blocker{Kind: k, Reason: pb.Reason, Policy: &pb})
	}
	if j.HetJobID != 0 && j.State == JobPending {
		if b, ok := s.hetBlocker(j); ok {
			out = append(out, b) // its components together (hetlimits.go)
		}
	}
	return out
}

// resourceNeed measures the job's request against the free resources now.
// short reports that fewer nodes fit than needed; topo that enough fit
// but no placement meets the topology constraint.
func (s *Scheduler) resourceNeed(now time.Time, j *job, allowed topology.NodeSet) (need *ResourceNeed, fit topology.NodeSet, short, topo bool) {
	per := j.perNode.Clone() // for a GRESPerJob job the minimum; perJobNeed adds its totals
	per[gres.Node] = 0
	need = &ResourceNeed{Nodes: j.nodes, PerNode: s.reg.FormatTRES(per), Exclusive: j.Spec.Exclusive}
	fit = topology.NewNodeSet(len(s.nodes))
	dims := make([]gres.ID, 0, 8)
	for d, v := range j.perNode {
		if v > 0 && gres.ID(d) != gres.Node {
			dims = append(dims, gres.ID(d))
		}
	}
	counts := make([]int, len(dims))
	idle := 0
	limit := s.shareLimit(j)
	if limit > 1 {
		need.OverSubscribe = limit
	}
	if s.crUnit != CRCPU && !j.Spec.Exclusive {
		need.CPUUnit = s.crUnit.String()
	}
	for i := allowed.Next(0); i >= 0; i = allowed.Next(i + 1) {
		n := &s.nodes[i]
		if len(n.jobs) == 0 {
			idle++
		} else if j.Spec.Exclusive {
			continue // whole nodes: a busy node offers nothing
		}
		for k, d := range dims {
			free := s.freeOf(n, d)
			if d == gres.CPU && limit > 1 {
				free += int64(s.shareableCPUs(j, n, limit)) // the CPUs it may share count too
			}
			if free >= j.perNode[d] {
				counts[k]++
			}
		}
		if s.fitsNow(j, i) {
			fit.Add(i)
		}
	}
	need.FitNow = fit.Count()
	need.Placeable = need.FitNow
	s.layoutNeed(j, allowed, need)
	if j.Spec.Exclusive && idle < j.nodes {
		need.Deficits = append(need.Deficits, Deficit{TRES: idleNode, PerNode: 1, Nodes: idle})
	}
	for k, d := range dims {
		// Whole nodes: the idle nodes are counted, and a resource is short
		// where enough nodes are idle but too few of them hold the request
		// (an unhealthy GPU, say).
		if counts[k] < j.nodes && (!j.Spec.Exclusive || idle >= j.nodes) {
			need.Deficits = append(need.Deficits, Deficit{TRES: s.reg.Name(d), PerNode: j.perNode[d], Nodes: counts[k]})
		}
	}
	short = need.FitNow < j.nodes
	var totalTopo bool // the totals fit the nodes, not the constraint
	if !j.Spec.Exclusive {
		var totalShort bool
		totalShort, totalTopo = s.perJobNeed(j, fit, need)
		short = short || totalShort
	}
	if j.tasks != nil && j.tasks.total > 0 {
		short = s.tasksNeed(j, fit, need) || short
	}
	c := j.constraints()
	if s.graph == nil || c == (topology.Constraints{}) {
		return need, fit, short, false
	}
	if _, relaxed := s.constrainedChooser(now, j, c); relaxed {
		return need, fit, short, false // it waited out its --switches max-wait
	}
	need.Constraint = describeConstraints(c)
	need.Placeable = s.placeable(fit, c)
	if need.FitNow >= j.nodes {
		p, err := s.graph.Select(fit, j.nodes, c)
		topo = err != nil || !p.Met || (!short && totalTopo)
		if err == nil && p.Met {
			need.Placeable = max(need.Placeable, j.nodes)
		}
	}
	return need, fit, short, topo
}

// reservationBlocker reports the advance reservations that hold nodes the
// job (not itself in a reservation) could use now: a job must keep off
// reserved nodes for its whole time limit, as the main pass enforces.
func (s *Scheduler) reservationBlocker(now time.Time, j *job, fit topology.NodeSet) (Blocker, bool) {
	if s.pol == nil || s.pol.resv.Len() == 0 || j.Spec.Reservation != "" {
		return Blocker{}, false
	}
	forbidden := topology.NewNodeSet(len(s.nodes))
	rj := j.resvJob()
	s.pol.resv.Constrain(rj, now, j.TimeLimit, forbidden)
	held := fit.And(forbidden)
	if held.IsEmpty() {
		return Blocker{}, false
	}
	// A MAGNETIC reservation that admits the job is tried first by the
	// main pass (constrainByReservations): the job runs inside it, until
	// the window's end, when enough of its nodes fit — then they hold
	// nothing back. Otherwise it is listed with why the job cannot use it.
	magnetic := map[string]string{}
	notInside := topology.NewNodeSet(len(s.nodes))
	for _, name := range s.pol.resv.Usable(rj) {
		switch _, b, n := s.tryMagnetic(now, rj, name, fit, notInside); {
		case b.Blocked():
			magnetic[name] = "MAGNETIC, admits it, but " + b.Detail
		case n >= j.nodes:
			// The fitting nodes it may use inside hold nothing back
			// (held lies within fit).
			held.IntersectWith(notInside)
		default:
			magnetic[name] = fmt.Sprintf("MAGNETIC, admits it, but only %d of the %d node(s) it needs fit inside now", n, j.nodes)
		}
	}
	if held.IsEmpty() {
		return Blocker{}, false
	}
	var names []string
	for _, r := range s.pol.resv.All() {
		if !r.Nodes.Intersects(held) {
			continue
		}
		ws, err := s.pol.resv.Windows(r.Name, now, now.Add(j.TimeLimit), nil)
		if err != nil || len(ws) == 0 {
			continue
		}
		who := strings.Join(append(slices.Clone(r.Users), r.Accounts...), ",")
		name := fmt.Sprintf("%s [%s – %s] for %s", r.Name, fmtTime(ws[0].Start), fmtTime(ws[0].End), who)
		if m, ok := magnetic[r.Name]; ok {
			name += " (" + m + ")"
		}
		names = append(names, name)
	}
	reason := policy.ReasonReqNodeNotAvail
	if s.maintHeld(now, j, held, topology.NodeSet{}) {
		reason = policy.ReasonReqNodeNotAvailMaint // as the main pass says
	}
	b := Blocker{Kind: BlockerReservation, Reason: reason,
		Detail: fmt.Sprintf("%d of the %d node(s) that fit now are reserved within its time limit (%s): %s",
			held.Count(), fit.Count(), policy.FormatDuration(j.TimeLimit), strings.Join(names, "; ")),
		Nodes: s.nodeNames(held.AppendTo(nil))}
	return b, true
}

// describeConstraints says a topology constraint in words: "on one leaf
// switch", "within 2 leaf switches, in segments of 4 under one leaf
// switch", "in one NVLink domain".
func describeConstraints(c topology.Constraints) string {
	var parts []string
	switch {
	case c.MaxLeafSwitches == 1:
		parts = append(parts, "on one leaf switch")
	case c.MaxLeafSwitches > 1:
		parts = append(parts, fmt.Sprintf("within %d leaf switches", c.MaxLeafSwitches))
	}
	if c.Segment > 1 {
		parts = append(parts, fmt.Sprintf("in segments of %d under one leaf switch", c.Segment))
	}
	switch c.Domains {
	case topology.DomainOne:
		parts = append(parts, "in one NVLink domain")
	case topology.DomainBalanced:
		parts = append(parts, "in balanced NVLink domain slices")
	}
	return strings.Join(parts, ", ")
}

// placeable returns how many of the fitting nodes one placement under
// constraint c can use: the best leaf switches' counts for --switches,
// whole segments for --segment, the best domain for one NVLink domain.
func (s *Scheduler) placeable(fit topology.NodeSet, c topology.Constraints) int {
	g := s.graph
	best := fit.Count()
	if c.MaxLeafSwitches > 0 || c.Segment > 1 {
		per := map[int]int{}
		for i := fit.Next(0); i >= 0; i = fit.Next(i + 1) {
			if l := g.LeafSwitchOf(i); l >= 0 {
				per[l]++
			} else if b := g.BlockOf(i); b >= 0 {
				per[b]++
			}
		}
		counts := make([]int, 0, len(per))
		for _, v := range per {
			if c.Segment > 1 {
				v -= v % c.Segment
			}
			counts = append(counts, v)
		}
		slices.SortFunc(counts, func(a, b int) int { return b - a })
		if c.MaxLeafSwitches > 0 && len(counts) > c.MaxLeafSwitches {
			counts = counts[:c.MaxLeafSwitches]
		}
		sum := 0
		for _, v := range counts {
			sum += v
		}
		best = min(best, sum)
	}
	if c.Domains == topology.DomainOne {
		per := map[int]int{}
		top := 0
		for i := fit.Next(0); i >= 0; i = fit.Next(i + 1) {
			if d := g.DomainOf(i); d >= 0 {
				per[d]++
				top = max(top, per[d])
			}
		}
		best = min(best, top)
	}
	return best
}

// ---- estimate ----

// estimate returns the job's expected start from the plan context.
func (s *Scheduler) estimate(now time.Time, j *job, ctx *planCtx, allowed topology.NodeSet, opts *ExplainOptions) *Estimate {
	est := &Estimate{PlanTime: ctx.at, Note: ctx.note}
	var nodes []int
	never := ""
	if j.Hold == HoldNone {
		never = s.neverStarts(j)
	}
	switch {
	case j.Hold != HoldNone:
		est.Note = "it is held (" + j.Hold.reason().String() + "): the plan does not consider it until it is released"
	case never != "":
		est.Note = never
	case !ctx.strict && j.Reason == policy.ReasonBeginTime && s.outsidePlan(j):
		est.Note = "it waits on its dependency as well as its begin time: the plan does not consider it until the dependency is satisfied"
	case j.Spec.Reservation != "":
		est.Note = "it runs in reservation " + j.Spec.Reservation + ", which the plan does not place"
		if s.pol != nil {
			if ws, err := s.pol.resv.Windows(j.Spec.Reservation, now, now.Add(MaxTimeLimit), nil); err == nil && len(ws) > 0 {
				est.Note += "; its window opens " + at(ws[0].Start, now)
			}
		}
	case ctx.onDemand && ctx.ownSet:
		est.Source, est.Start, nodes = EstimateOnDemand, ctx.own.start, ctx.own.nodes
		est.Bound = ctx.ownBound
	case !ctx.onDemand && !j.ExpectedStart.IsZero() && !j.EstimatedAt.Before(ctx.at):
		// The last plan's own estimate (an older one that
		// EstimateInterval let stand is searched again below).
		est.Source, est.Start, nodes = EstimateEstimated, j.ExpectedStart, j.planned
		if j.reserved {
			est.Source, est.Bound = EstimateReserved, true
		}
	case ctx.prof != nil && (ctx.strict || plannable(j.Reason) || j.Reason == policy.ReasonNone):
		// Searched in the plan: in strict order whatever the reason (the
		// plan is its queue's order), else only where backfill would.
		if fit, err := s.ownFit(now, j, ctx, allowed); err == nil && fit.Status == backfill.FitFound {
			est.Source, est.Start, nodes = EstimateOutsidePlan, fit.Start, fit.Nodes
			if ctx.onDemand {
				est.Source = EstimateOnDemand
			}
		} else if err == nil {
			est.Note = "it fits no node set the cluster can offer now"
		}
	default:
		if est.Note == "" {
			est.Note = s.limitNote(now, j)
		}
	}
	if est.Source == EstimateNone {
		return est
	}
	if est.Bound && (ctx.sharesStarted || est.Start.After(now) && (ctx.sharesAhead || s.anySharing(nodes))) {
		est.Bound, est.NotPromised = false, sharesPlannedNote
	}
	s.noteLimitWait(j, est)
	est.Nodes = s.nodeNames(nodes)
	// Running jobs on the planned nodes that end by the start.
	seen := map[JobID]bool{}
	var ends []RunningEnd
	for _, i := range nodes {
		for _, id := range s.nodes[i].jobs {
			r := s.jobs[id]
			if seen[id] || r == nil || r.State != JobRunning || r.deadline.After(est.Start) {
				continue
			}
			seen[id] = true
			ends = append(ends, RunningEnd{Job: id, End: r.deadline})
		}
	}
	slices.SortFunc(ends, func(a, b RunningEnd) int {
		if c := a.End.Compare(b.End); c != 0 {
			return c
		}
		return int(a.Job) - int(b.Job)
	})
	est.WaitsForTotal = len(ends)
	est.WaitsForIdle, est.WaitsForIdleTotal = s.idleHolders(ends, nodes, opts.MaxListed)
	est.WaitsFor = ends[:min(len(ends), opts.MaxListed)]
	if opts.RuntimeFraction > 0 && ctx.prof != nil {
		est.Fraction = opts.RuntimeFraction
		est.Earliest, est.EarliestPartial = s.earliestRange(now, j, ctx, allowed, est.Start, opts.RuntimeFraction)
	}
	return est
}

// ownFit is job j's earliest fit in the context's plan, planned as
// backfill plans it.
func (s *Scheduler) ownFit(now time.Time, j *job, ctx *planCtx, allowed topology.NodeSet) (backfill.Fit, error) {
	req := s.requestFor(now, j, allowed, plannedDuration(j), ctx.partStart)
	fit, err := ctx.prof.EarliestFit(req)
	if err != nil {
		return fit, err
	}
	return s.countedFit(ctx.prof, j, req, fit)
}

// earliestRange re-plans on a copy of the context's profile with the
// higher-priority reservations that come before the estimate (on the
// job's nodes; in strict order, every one that holds its queue back; at
// most maxReplanned, first in queue order) released, the running jobs on
// the nodes they and the job could use ending at fraction f of their
// limits (at most maxShortened, first by deadline), and those
// reservations re-planned in queue order at f of their limits; then it
// searches the job's earliest start. It returns that start (never after
// the estimate) and whether a bound cut the work short, in which case the
// true lower end may be earlier still.
func (s *Scheduler) earliestRange(now time.Time, j *job, ctx *planCtx, allowed topology.NodeSet, est time.Time, f float64) (time.Time, bool) {
	if !est.After(now) {
		return est, false
	}
	p := ctx.prof.Clone()
	origin := p.Now()
	partial := false

	// Higher-priority reservations before the estimate, in queue order:
	// those on the job's nodes and, in strict order, every one that holds
	// its queue back (the others stay as planned).
	var holders []*job
	var local []time.Time
	if ctx.strict {
		local = make([]time.Time, len(s.parts))
	}
	nodes := allowed.Clone() // where shortened running jobs matter
	s.pending.Ascend(func(x *job) bool {
		if x == j {
			return false
		}
		start, planned := ctx.plannedOf(x)
		if len(planned) == 0 {
			return true
		}
		hold := !start.After(est)
		if !ctx.strict {
			hold = start.Before(est) && anyIn(planned, allowed)
		}
		if (hold || ctx.strict) && !p.Has(backfill.JobID(x.ID)) {
			return true // an estimate without a reservation holds nothing
		}
		if hold && len(holders) < maxReplanned {
			holders = append(holders, x)
			nodes.UnionWith(s.jobAllowed(x))
			return true
		}
		partial = partial || hold
		if !ctx.strict {
			return !partial // past the bound nothing more is learnt
		}
		if start.After(local[x.part]) {
			local[x.part] = start
		}
		return true
	})

	// Running jobs on those nodes that would end before the estimate: the
	// first maxShortened by deadline (the running index's order).
	type short struct {
		id  JobID
		end time.Time
	}
	var shorts []short
	s.running.Ascend(func(r *job) bool {
		if len(shorts) == maxShortened {
			partial = true
			return false
		}
		lim := r.deadline.Sub(r.StartTime)
		end := r.StartTime.Add(time.Duration(float64(lim) * f))
		if !end.Before(r.deadline) || !end.Before(est) {
			return true
		}
		for _, na := range r.Alloc.Nodes {
			if nodes.Has(na.Node) {
				shorts = append(shorts, short{r.ID, end})
				break
			}
		}
		return true
	})
	for _, sh := range shorts {
		id := backfill.JobID(sh.id)
		r, ok := p.Reservation(id)
		if !ok || p.Release(id) != nil {
			continue
		}
		if sh.end.After(origin) {
			r.Start, r.End = origin, sh.end
			if err := p.Reserve(r); err != nil {
				partial = true
			}
		}
	}

	for _, x := range holders {
		_ = p.Release(backfill.JobID(x.ID)) // each holds a reservation (checked above)
	}
	for _, x := range holders {
		d := max(time.Duration(float64(plannedDuration(x))*f), time.Second)
		req := s.requestFor(now, x, s.jobAllowed(x), d, local)
		fit, err := p.EarliestFit(req)
		if err != nil || fit.Status != backfill.FitFound {
			continue
		}
		if p.ReserveFit(backfill.JobID(x.ID), req, fit) != nil {
			partial = true
			continue
		}
		if local != nil && fit.Start.After(local[x.part]) {
			local[x.part] = fit.Start
		}
	}
	fit, err := p.EarliestFit(s.requestFor(now, j, allowed, plannedDuration(j), local))
	if err != nil || fit.Status != backfill.FitFound || fit.Start.After(est) {
		return est, partial
	}
	return fit.Start, partial
}

// ---- counterfactuals ----

// cfAllowed says which counterfactuals can be verified on the plan
// given the job's other blockers: the plan only knows resources, so a
// change is only offered when nothing it cannot see stands in the way.
type cfAllowed struct {
	timeLimit bool          // a shorter time limit
	resources bool          // fewer GPUs, another GPU type
	partition bool          // another partition
	maxLimit  time.Duration // the time-limit search stays at or below it (0: no cap)
}

// cfGate derives what may be offered from the blockers: a policy limit,
// reservation or dependency blocks every change of request (their rules
// are not in the plan); a partition that is down or a node count outside
// its bounds leaves only another partition; a time limit over the
// partition's MaxTime leaves a shorter limit (capped at MaxTime) and
// another partition.
func cfGate(bs []Blocker) cfAllowed {
	g := cfAllowed{timeLimit: true, resources: true, partition: true}
	for _, b := range bs {
		switch b.Kind {
		case BlockerLimit, BlockerDependency, BlockerHold:
			return cfAllowed{}
		case BlockerReservation:
			if b.Policy != nil {
				return cfAllowed{} // its own reservation: not in the plan
			}
			// Reserved nodes are blocks in the plan: verifiable.
		case BlockerPartition:
			g.resources = false
			if b.Reason == policy.ReasonPartitionTimeLimit && b.maxTime > 0 {
				g.maxLimit = b.maxTime
			} else {
				g.timeLimit = false
			}
		}
	}
	return g
}

// counterfactuals computes the verified what-ifs.
func (s *Scheduler) counterfactuals(now time.Time, j *job, ctx *planCtx, allowed topology.NodeSet, est *Estimate,
	opts *ExplainOptions, ex *Explanation, gate cfAllowed) error {
	p := ctx.prof
	ref := est.Start // the start to improve on (zero: none)
	if ref.IsZero() && gate.resources {
		// Only resources hold it: its own earliest fit is the start to beat.
		if fit, err := s.ownFit(now, j, ctx, allowed); err == nil && fit.Status == backfill.FitFound {
			ref = fit.Start
		}
	}
	// immediate: a start at or before now. The plan keeps exact times
	// (backfill rounds only a future reservation's end, later), so a start
	// even a second after now is not now.
	immediate := func(t time.Time) bool { return !t.After(now) }
	better := func(t time.Time) bool { return ref.IsZero() || t.Before(ref) }
	if !ref.IsZero() && immediate(ref) {
		return nil // it starts now as it is
	}
	// try plans a changed job: its earliest fit on the plan. A GRESPerJob
	// job that the plan (ceil(total/nodes) per node) does not start now is
	// placed by the main pass's rule, on its total, where the main pass
	// would give it the turn (no earlier in the queue than j: the jobs
	// ahead of j are all the jobs ahead of it).
	try := func(x *job, d time.Duration) (backfill.Fit, error) {
		allowedX := s.jobAllowed(x)
		req := s.requestFor(now, x, allowedX, d, ctx.partStart)
		fit, err := p.EarliestFit(req)
		if err != nil {
			return fit, fmt.Errorf("scheduler: explain job %d: %w", j.ID, err)
		}
		if len(x.extra) > 0 && !x.Spec.Exclusive && (fit.Status != backfill.FitFound || !immediate(fit.Start)) &&
			immediate(req.Earliest) && x.tier >= j.tier && s.mainPassTurn(j, allowedX) {
			if nodes := s.perJobFitAt(p, x, allowedX, now, d); nodes != nil {
				fit = backfill.Fit{Status: backfill.FitFound, Start: now, End: now.Add(d), Nodes: nodes}
			}
		}
		return s.countedFit(p, x, req, fit)
	}
	// tryVariant plans j changed to spec; ok is false, and nothing is
	// planned, for a spec the scheduler or the partition would refuse
	// (variant refuses a DRAIN or INACTIVE partition, the partition's
	// blockers the rest).
	tryVariant := func(spec JobSpec) (fit backfill.Fit, ok bool, err error) {
		x, ok := s.variant(j, spec)
		if !ok || len(s.partitionBlockers(x, nil)) > 0 {
			return backfill.Fit{}, false, nil
		}
		fit, err = try(x, plannedDuration(x))
		return fit, true, err
	}
	// offer is the counterfactual of spec planned at fit.
	conservative := !ctx.strict && s.bf != nil && s.bf.planner.Config().Mode == backfill.Conservative && est.OvertakersTotal == 0
	offer := func(kind CounterfactualKind, spec JobSpec, fit backfill.Fit) Counterfactual {
		now := immediate(fit.Start)
		cf := Counterfactual{Kind: kind, Spec: spec, Start: fit.Start, Now: now, Nodes: s.nodeNames(fit.Nodes),
			Was: ref, Bound: now || conservative}
		if cf.Bound && (ctx.sharesStarted || !now && (ctx.sharesAhead || s.anySharing(fit.Nodes))) {
			// The changed job keeps j's place (explain_shares.go).
			cf.Bound, cf.NotPromised = false, sharesPlannedNote
		}
		return cf
	}

	// 1. The largest time limit with which it starts now.
	unit := max(time.Minute, p.Resolution())
	top := j.TimeLimit - 1
	if gate.maxLimit > 0 {
		top = min(top, gate.maxLimit)
	}
	if gate.timeLimit && top >= unit {
		fit, err := try(j, unit)
		if err != nil {
			return err
		}
		if fit.Status == backfill.FitFound && immediate(fit.Start) {
			lo, hi := int64(1), int64(top/unit) // lo starts now; the answer is in [lo, hi]
			best := fit
			for steps := 0; lo < hi && steps < 24; steps++ {
				mid := lo + (hi-lo+1)/2
				f, err := try(j, time.Duration(mid)*unit)
				if err != nil {
					return err
				}
				if f.Status == backfill.FitFound && immediate(f.Start) {
					lo, best = mid, f
				} else {
					hi = mid - 1
				}
			}
			limit := time.Duration(lo) * unit
			spec := j.Spec
			spec.TimeLimit = limit
			if spec.TimeMin > limit {
				spec.TimeMin = 0
			}
			cf := offer(CounterTimeLimit, spec, best)
			cf.TimeLimit = limit
			ex.Counterfactuals = append(ex.Counterfactuals, cf)
		}
	}

	// 2. Fewer GPUs per node, or in all for a GRESPerJob (--gpus) job
	// (halved down to one per node).
	gi, g := gpuRequest(j)
	typ := ""
	if gi >= 0 {
		typ = j.devReq[gi].Type
	}
	least := int64(1)
	ptyp, total, perJob := perJobGPUs(j)
	if perJob {
		typ, g, least = ptyp, total, int64(j.nodes)
	}
	if gate.resources && gi >= 0 && g > least {
		var found []Counterfactual
		for c, last := max(g/2, least), false; !last; c = max(c/2, least) {
			last = c == least
			spec := withGPUs(j.Spec, typ, c, perJob)
			fit, ok, err := tryVariant(spec)
			if err != nil {
				return err
			}
			if !ok || fit.Status != backfill.FitFound || !better(fit.Start) {
				continue
			}
			cf := offer(CounterGPUs, spec, fit)
			cf.GPUs = c
			if len(found) == 0 || (cf.Now && !found[0].Now) {
				found = append(found, cf)
			}
			if cf.Now {
				break
			}
		}
		ex.Counterfactuals = append(ex.Counterfactuals, found...)
	}

	// 3. Another partition.
	tries := 0
	for pi := range s.parts {
		pc := &s.parts[pi].cfg
		if !gate.partition || pi == j.part || pc.State != PartitionUp || tries == maxPartitionTries {
			continue
		}
		if ctx.strict && pc.PriorityTier != s.parts[j.part].cfg.PriorityTier {
			continue // its queue position would change: the strict plan cannot tell
		}
		spec := j.Spec
		spec.Partition = pc.Name
		fit, ok, err := tryVariant(spec)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		tries++
		if fit.Status == backfill.FitFound && better(fit.Start) {
			cf := offer(CounterPartition, spec, fit)
			cf.Partition = pc.Name
			// Another priority tier moves the job in the queue, which
			// the plan (planned in the old order) cannot tell.
			cf.Moves = pc.PriorityTier != s.parts[j.part].cfg.PriorityTier
			cf.Bound = cf.Bound && !cf.Moves
			ex.Counterfactuals = append(ex.Counterfactuals, cf)
		}
	}

	// 4. Another GPU type (as many GPUs, per node or in all).
	if gate.resources && gi >= 0 && typ != "" {
		tries := 0
		for _, name := range s.reg.Names() {
			other, ok := strings.CutPrefix(name, "gres/gpu:")
			if !ok || strings.EqualFold(other, typ) || tries == maxTypeTries {
				continue
			}
			spec := withGPUs(j.Spec, other, g, perJob)
			fit, ok, err := tryVariant(spec)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			tries++
			if fit.Status == backfill.FitFound && better(fit.Start) {
				cf := offer(CounterGPUType, spec, fit)
				cf.GPUType = other
				ex.Counterfactuals = append(ex.Counterfactuals, cf)
			}
		}
	}

	// 5. Fair-share: the rank after the account's usage decays.
	if cf, ok := s.fairShareCounterfactual(now, j, opts, ex.Rank); ok {
		ex.Counterfactuals = append(ex.Counterfactuals, cf)
	}
	return nil
}

// gpuRequest returns the index in j.devReq of the job's only GPU request
// and its per-node count, or -1 when it has none or several.
func gpuRequest(j *job) (int, int64) {
	idx := -1
	for k, r := range j.devReq {
		if strings.EqualFold(r.Name, "gpu") {
			if idx >= 0 {
				return -1, 0
			}
			idx = k
		}
	}
	if idx < 0 {
		return -1, 0
	}
	return idx, j.devReq[idx].Count
}

// withGPUs returns spec asking for count GPUs of type typ on every node
// (as --gres=gpu:typ:count), or with perJob count in all (as
// --gpus=typ:count), every other GPU request dropped.
func withGPUs(spec JobSpec, typ string, count int64, perJob bool) JobSpec {
	drop := func(rs []gres.Request) []gres.Request {
		out := make([]gres.Request, 0, len(rs))
		for _, r := range rs {
			if !strings.EqualFold(r.Name, "gpu") {
				out = append(out, r)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	spec.GRESPerTask = drop(spec.GRESPerTask)
	spec.GRESPerJob = drop(spec.GRESPerJob)
	spec.GRESPerNode = drop(spec.GRESPerNode)
	r := gres.Request{Name: "gpu", Type: typ, Count: count}
	if perJob {
		spec.GRESPerJob = append(spec.GRESPerJob, r)
	} else {
		spec.GRESPerNode = append(spec.GRESPerNode, r)
	}
	return spec
}

// variant derives the job a changed spec would make, keeping j's queue
// place (priority, submit time, eligibility). It leaves the scheduler as
// it was (a shape it had to create is dropped again) and reports false
// for a spec the scheduler would reject.
func (s *Scheduler) variant(j *job, spec JobSpec) (*job, bool) {
	n := len(s.shapes)
	x, err := s.newJob(spec)
	if len(s.shapes) > n && x != nil {
		delete(s.shapes, shapeKey(x.part, x.perNode, x.Spec.Exclusive, x.excluded, x.cons))
	}
	if err != nil {
		return nil, false
	}
	x.ID, x.SubmitTime, x.EligibleTime, x.Priority, x.State = j.ID, j.SubmitTime, j.EligibleTime, j.Priority, JobPending
	return x, true
}

// fairShareCounterfactual computes the job's priority and rank if its
// account's usage decayed for one half-life. Model: the account's
// subtree (and so its ancestors' totals) decays by half and accrues
// nothing new, while every other association's usage holds steady (its
// new usage offsets its decay); the fair-share factor is recomputed by the
// same algorithm on the changed tree, the job's priority by the engine at
// now (age and every other factor as now), and the rank counts the jobs
// pending now that would still be ahead of it in its partition, their
// fair-share terms recomputed on the changed tree too.
func (s *Scheduler) fairShareCounterfactual(now time.Time, j *job, opts *ExplainOptions, rank int) (Counterfactual, bool) {
	p := s.prio
	if p == nil || p.tree == nil || p.engine.Config().Weights.FairShare == 0 || j.Spec.Account == "" {
		return Counterfactual{}, false
	}
	t := p.tree
	acct, ok := t.Lookup(j.Spec.Account, "")
	if !ok {
		return Counterfactual{}, false
	}
	assocs := make([]priority.Association, t.Len())
	for i := range assocs {
		assocs[i], _ = t.Association(i)
	}
	before := assocs[acct].Usage
	if before <= 0 {
		return Counterfactual{}, false
	}
	const decay = 0.5 // one half-life
	cut := before * (1 - decay)
	// Each account's parent (account names are unique in the tree, which
	// has no cycles); an association is in the account's subtree when its
	// account (a user's: the one it belongs to) has the account among its
	// ancestors or is it.
	parents := map[string]string{}
	for _, a := range assocs {
		if a.User == "" {
			parents[a.Account] = a.Parent
		}
	}
	for i := range assocs {
		for x := assocs[i].Account; x != ""; x = parents[x] {
			if x == j.Spec.Account {
				assocs[i].Usage *= decay
				break
			}
		}
	}
	for anc := parents[j.Spec.Account]; anc != ""; anc = parents[anc] {
		if k, ok := t.Lookup(anc, ""); ok {
			assocs[k].Usage = max(0, assocs[k].Usage-cut)
		}
	}
	tree, err := p.newTree(assocs)
	if err != nil {
		return Counterfactual{}, false
	}
	in, err := s.priorityInput(j)
	if err != nil {
		return Counterfactual{}, false
	}
	if i, ok := tree.Lookup(j.Spec.Account, j.Spec.User); ok {
		in.FairShare = tree.Factor(i)
	}
	b, err := p.engine.Compute(now, &in)
	if err != nil {
		return Counterfactual{}, false
	}
	// Only the jobs ahead of it now can stay ahead: a lower usage for
	// its account never raises another association's factor (classic:
	// the others' share of a smaller total grows; Fair Tree: its rank
	// among siblings can only improve). Their fair-share term is
	// recomputed on the changed tree, their other factors kept.
	w := float64(p.engine.Config().Weights.FairShare)
	x := *j
	x.Priority = b.Priority
	newRank := 1
	s.pending.Ascend(func(y *job) bool {
		if y == j {
			return false
		}
		if y.part != j.part {
			return true
		}
		py := y.Priority
		if !y.breakdown.Admin {
			nf := 0.0
			if i, ok := tree.Lookup(y.Spec.Account, y.Spec.User); ok {
				nf = tree.Factor(i)
			}
			if nf != y.breakdown.Factors.FairShare {
				py = priority.ClampPriority(y.breakdown.Sum - y.breakdown.Weighted.FairShare + w*nf)
			}
		}
		// Compare with the queue's own order: the changed priority is
		// set for the comparison only and restored at once.
		old := y.Priority
		y.Priority = py
		if queueLess(y, &x) {
			newRank++
		}
		y.Priority = old
		return true
	})
	if newRank >= rank {
		return Counterfactual{}, false
	}
	return Counterfactual{Kind: CounterFairShare, Account: j.Spec.Account, At: now.Add(opts.DecayHalfLife), Priority: b.Priority,
		Rank: newRank, RankWas: rank}, true
}

// ---- text ----

func fmtTime(t time.Time) string { return t.Format("2006-01-02 15:04:05") }

// fmtDur writes a duration compactly: 1h30m, 45m, 2h, 30s, 3d4h.
func fmtDur(d time.Duration) string {
	if d < 0 {
		return "-" + fmtDur(-d)
	}
	d = d.Round(time.Second)
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	if days := d / (24 * time.Hour); days > 0 {
		fmt.Fprintf(&b, "%dd", days)
		d -= days * 24 * time.Hour
	}
	if h := d / time.Hour; h > 0 {
		fmt.Fprintf(&b, "%dh", h)
		d -= h * time.Hour
	}
	if m := d / time.Minute; m > 0 {
		fmt.Fprintf(&b, "%dm", m)
		d -= m * time.Minute
	}
	if d > 0 {
		fmt.Fprintf(&b, "%ds", d/time.Second)
	}
	return b.String()
}

// at formats a start relative to now (absolute when now is zero).
func at(t, now time.Time) string {
	if now.IsZero() {
		return "at " + fmtTime(t)
	}
	if !t.After(now) {
		return "now"
	}
	return fmt.Sprintf("at %s (in %s)", fmtTime(t), fmtDur(t.Sub(now)))
}

func ordinal(n int) string {
	suf := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suf = "st"
	case n%10 == 2:
		suf = "nd"
	case n%10 == 3:
		suf = "rd"
	}
	return fmt.Sprintf("%d%s", n, suf)
}

// String explains the need in one line: "needs 4 node(s) with … free on
// switches=1; 2 exist now (short: …)".
func (n *ResourceNeed) String() string {
	var b strings.Builder
	if n.Exclusive {
		fmt.Fprintf(&b, "needs %d whole idle node(s) (each with %s)", n.Nodes, n.PerNode)
	} else {
		fmt.Fprintf(&b, "needs %d node(s) with %s free", n.Nodes, n.PerNode)
	}
	if n.PerJob != "" {
		fmt.Fprintf(&b, " and %s in all", n.PerJob)
	}
	if n.Tasks > 0 {
		fmt.Fprintf(&b, " for %d task(s) on %s node(s), %d of them fit now", n.Tasks, FormatNodeCount(n.Nodes, n.NodesMax), n.TaskRoom)
	}
	if n.CPUUnit != "" {
		fmt.Fprintf(&b, " (SelectTypeParameters=%s: CPUs in whole units)", n.CPUUnit)
	}
	if n.OverSubscribe > 0 {
		fmt.Fprintf(&b, ", sharing CPUs with up to %d job(s) per CPU (OverSubscribe) considered", n.OverSubscribe)
	}
	if n.Constraint != "" {
		fmt.Fprintf(&b, " %s", n.Constraint)
		fmt.Fprintf(&b, "; %d fit now, a placement can use %d", n.FitNow, min(n.Placeable, n.FitNow))
	} else {
		fmt.Fprintf(&b, "; %d fit now", n.FitNow)
	}
	if len(n.Deficits) > 0 {
		b.WriteString(" (short:")
		for k, d := range n.Deficits {
			if k > 0 {
				b.WriteByte(',')
			}
			if d.TRES == idleNode {
				fmt.Fprintf(&b, " %d node(s) idle", d.Nodes)
				continue
			}
			if d.Total > 0 {
				fmt.Fprintf(&b, " %s — %d in all, %d node(s) hold at most %d free", d.TRES, d.Total, n.Nodes, d.Room)
				continue
			}
			fmt.Fprintf(&b, " %s — %d node(s) have %d free", d.TRES, d.Nodes, d.PerNode)
		}
		b.WriteString(")")
	}
	return b.String()
}

func (a AheadJob) describe(now time.Time) string {
	s := fmt.Sprintf("job %d (priority %d, %s, %s)", a.Job, a.Priority, a.Partition, a.Reason)
	if !a.Start.IsZero() {
		s += fmt.Sprintf(" planned %s on %d node(s)", at(a.Start, now), a.Nodes)
	}
	return s
}

// String explains the blocker in one line.
func (b Blocker) String() string { return b.describe(time.Time{}) }

func (b Blocker) describe(now time.Time) string {
	switch b.Kind {
	case BlockerResources, BlockerTopology:
		if b.Need == nil {
			// Where, reboot and task blockers say it in words.
			return fmt.Sprintf("%s: %s", b.Kind, b.Detail)
		}
		return fmt.Sprintf("%s: %s", b.Kind, b.Need)
	case BlockerQueue:
		var s strings.Builder
		s.WriteString("queue: ")
		if b.AheadTotal > 0 {
			fmt.Fprintf(&s, "%d higher-priority job(s) hold the plan's resources first:", b.AheadTotal)
			for _, a := range b.Ahead {
				s.WriteString("\n      - " + a.describe(now))
			}
			if b.AheadTotal > len(b.Ahead) {
				fmt.Fprintf(&s, "\n      - … %d more", b.AheadTotal-len(b.Ahead))
			}
		}
		if b.Head != nil && !slices.ContainsFunc(b.Ahead, func(a AheadJob) bool { return a.Job == b.Head.Job }) {
			if b.AheadTotal > 0 {
				s.WriteString("\n    ")
			}
			fmt.Fprintf(&s, "the head of its partition's queue waits: %s", b.Head.describe(now))
		}
		return s.String()
	}
	if b.Policy != nil {
		return b.Policy.String()
	}
	return fmt.Sprintf("%s: %s (%s)", b.Kind, b.Detail, b.Reason)
}

// describe explains the counterfactual in one line.
func (c Counterfactual) describe(now time.Time) string {
	where := ""
	if len(c.Nodes) > 0 {
		where = " on " + compactNames(c.Nodes)
	}
	when := "now"
	if !c.Now {
		when = at(c.Start, now)
	}
	switch c.Kind {
	case CounterTimeLimit:
		return fmt.Sprintf("with a time limit ≤ %s it starts now (backfill)%s", policy.FormatDuration(c.TimeLimit), where)
	case CounterGPUs:
		per := "per node"
		if len(c.Spec.GRESPerJob) > 0 && c.Spec.GRESPerJob[len(c.Spec.GRESPerJob)-1].Name == "gpu" {
			per = "in all (--gpus)"
		}
		return fmt.Sprintf("with %d GPU(s) %s it starts %s%s", c.GPUs, per, when, where)
	case CounterPartition:
		return fmt.Sprintf("in partition %s it starts %s%s", c.Partition, when, where)
	case CounterGPUType:
		return fmt.Sprintf("with gpu type %s it starts %s%s", c.GPUType, when, where)
	case CounterFairShare:
		return fmt.Sprintf("after account %s's usage decays for one half-life (by %s), it ranks %s in its partition (now %s) with priority %d",
			c.Account, fmtTime(c.At), ordinal(c.Rank), ordinal(c.RankWas), c.Priority)
	}
	return c.Kind.String()
}

// String explains the counterfactual in one line, with absolute times.
func (c Counterfactual) String() string { return c.describe(time.Time{}) }

func compactNames(names []string) string {
	if s, err := topology.CompressHostlist(names); err == nil {
		return s
	}
	return strings.Join(names, ",")
}

// write writes the factors as an explanation's line.
func (f *Factors) write(b *strings.Builder) {
	fmt.Fprintf(b, "    age %.0f, fairshare %.0f, jobsize %.0f, partition %.0f, qos %.0f, assoc %.0f, tres %.0f, site %d, nice %d\n",
		f.Age, f.FairShare, f.JobSize, f.Partition, f.QOS, f.Assoc, f.TRES, f.Site, f.Nice)
}

// String is the explanation for a person, several lines.
func (e Explanation) String() string {
	var b strings.Builder
	who := strings.Trim(e.User+"/"+e.Account, "/")
	if who != "" {
		who = ", " + who
	}
	fmt.Fprintf(&b, "Job %d (%s%s) is %s", e.Job, e.Partition, who, e.State)
	switch {
	case e.State == JobPending:
		fmt.Fprintf(&b, ": %s\n", e.Reason)
	case e.State.Finished():
		fmt.Fprintf(&b, " since %s", fmtTime(e.EndTime))
		if e.Reason != policy.ReasonNone {
			fmt.Fprintf(&b, " (%s)", e.Reason)
		}
		b.WriteString("\n")
	default:
		b.WriteString("\n")
	}
	if e.Het != nil {
		e.Het.write(&b, e.Now)
	}
	if e.State == JobPending {
		fmt.Fprintf(&b, "  Priority %d, %s in partition %s (queue position %d of %d)\n", e.Priority, ordinal(e.Rank), e.Partition, e.QueuePos, e.Pending)
		if e.Breakdown != nil {
			factorsOf(e.Breakdown).write(&b)
		}
		if len(e.Blockers) > 0 {
			b.WriteString("  Blockers:\n")
			for _, bl := range e.Blockers {
				fmt.Fprintf(&b, "    - %s\n", bl.describe(e.Now))
			}
		}
		if est := e.Estimate; est != nil {
			switch est.Source {
			case EstimateNone:
				fmt.Fprintf(&b, "  Expected start: unknown (%s)\n", est.Note)
			default:
				fmt.Fprintf(&b, "  Expected start: %s on %s (%s", at(est.Start, e.Now), compactNames(est.Nodes), est.Source)
				if !est.PlanTime.Equal(e.Now) {
					fmt.Fprintf(&b, ", plan of %s", fmtTime(est.PlanTime))
				}
				if !est.Bound && est.Start.After(e.Now) {
					b.WriteString("; an estimate, not a promise")
				}
				b.WriteString(")\n")
				if est.NotPromised != "" {
					fmt.Fprintf(&b, "    %s\n", est.NotPromised)
				}
				est.writeOvertakers(&b)
				if est.WaitsForTotal > 0 {
					b.WriteString("    waits for running job(s):")
					for _, r := range est.WaitsFor {
						fmt.Fprintf(&b, " %d (ends %s)", r.Job, fmtTime(r.End))
					}
					if est.WaitsForTotal > len(est.WaitsFor) {
						fmt.Fprintf(&b, " … %d more", est.WaitsForTotal-len(est.WaitsFor))
					}
					b.WriteString("\n")
				}
				est.writeIdle(&b)
				if est.Limit != "" {
					fmt.Fprintf(&b, "    waits on limit %s, which running and planned jobs hold until then\n", est.Limit)
				}
				if est.Fraction > 0 {
					early := "now"
					if est.Earliest.After(e.Now) {
						early = fmt.Sprintf("%s (in %s)", fmtTime(est.Earliest), fmtDur(est.Earliest.Sub(e.Now)))
					}
					fmt.Fprintf(&b, "    range: as early as %s if jobs run %.0f%% of their time limits, as history suggests", early, est.Fraction*100)
					if est.EarliestPartial {
						b.WriteString(" (bounded re-plan: could be earlier)")
					}
					b.WriteString("\n")
				}
			}
		}
		if len(e.Counterfactuals) > 0 {
			b.WriteString("  What would let it start sooner (verified by re-planning):\n")
			for _, c := range e.Counterfactuals {
				fmt.Fprintf(&b, "    - %s", c.describe(e.Now))
				if c.NotPromised != "" {
					b.WriteString(" (an estimate: shared GPUs are planned approximately)")
				}
				b.WriteString("\n")
			}
		}
		return b.String()
	}
	if st := e.Start; st != nil {
		how := "in priority order (main pass)"
		if st.Kind == DecisionBackfillStart {
			how = "by backfill"
		}
		fmt.Fprintf(&b, "  Started %s %s with priority %d", fmtTime(st.Time), how, st.Priority)
		if st.QueuePos > 0 {
			fmt.Fprintf(&b, " from queue position %d", st.QueuePos)
		}
		fmt.Fprintf(&b, " on %s\n", compactNames(st.Nodes))
		if len(st.GPUs) > 0 {
			b.WriteString("    GPUs:")
			for _, g := range st.GPUs {
				fmt.Fprintf(&b, " %s[%s]", g.Node, gres.FormatIDList(g.Indices))
			}
			b.WriteString("\n")
		}
		if st.Factors != nil {
			st.Factors.write(&b)
		}
		if len(st.Overtook) > 0 {
			b.WriteString("    passed, without delaying them:\n")
			for _, o := range st.Overtook {
				fmt.Fprintf(&b, "      - job %d (priority %d, %s", o.Job, o.Priority, o.Reason)
				if !o.PlannedStart.IsZero() {
					fmt.Fprintf(&b, ", planned %s", fmtTime(o.PlannedStart))
				}
				b.WriteString(")\n")
			}
			if st.OvertookMore {
				b.WriteString("      - … and more\n")
			}
		}
		if len(st.Preempted) > 0 {
			fmt.Fprintf(&b, "    preempted for it: %v\n", st.Preempted)
		}
		if !st.FromRecord {
			b.WriteString("    (no audit record: read from the job's state)\n")
		} else if st.PolicyVersion != "" {
			fmt.Fprintf(&b, "    policy version %s\n", st.PolicyVersion)
		}
	}
	return b.String()
}
