package backfill

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
)

// Mode selects how many pending jobs get reservations.
type Mode uint8

const (
	// Conservative gives every tested job that cannot start now a
	// reservation, in priority order, so no job is ever delayed by a
	// lower-priority one. This is what Slurm's backfill does for the jobs
	// it tests, and the zero value.
	Conservative Mode = iota
	// EASY gives reservations only to the first Config.Reservations jobs
	// (in priority order) that cannot start now — one for classic EASY —
	// and starts any other job that fits now without delaying them.
	EASY
)

// String returns the mode name.
func (m Mode) String() string {
	switch m {
	case Conservative:
		return "conservative"
	case EASY:
		return "easy"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Config holds the planner's knobs: Slurm's SchedulerParameters for
// backfill with Slurm's meaning. The zero value means Slurm's defaults,
// except MaxJobTest, whose zero means "plan every job" (Slurm's default
// is 500).
type Config struct {
	// Mode is Conservative (zero) or EASY.
	Mode Mode
	// Reservations is EASY's k, the number of jobs that get reservations;
	// 0 means 1. Ignored in Conservative mode.
	Reservations int
	// Window is bf_window: jobs that cannot start within it get no
	// reservation and no estimate. 0 means 24 h; at most 30 days.
	Window time.Duration
	// Resolution is bf_resolution, the profile's time grid: the end of
	// a reservation for a future start is rounded up to it, which only
	// makes the plan more cautious; every decision and expected start is
	// otherwise taken with exact seconds (running jobs' ends, starts now,
	// begin times), so a backfilled job never delays a reservation by
	// even a second. 0 means 60 s; [1 s, 1 h], whole seconds; 1 s makes
	// the whole plan exact. Build profiles with Planner.NewProfile so
	// they share it.
	Resolution time.Duration
	// MaxJobTest is bf_max_job_test: stop after testing this many jobs
	// (the rest are StatusNotTested). 0 means unlimited.
	MaxJobTest int
	// MaxJobStart is bf_max_job_start: stop after starting this many
	// jobs. 0 means unlimited.
	MaxJobStart int
	// MaxJobUser, MaxJobPart, MaxJobAssoc and MaxJobUserPart are
	// bf_max_job_user, bf_max_job_part, bf_max_job_assoc and
	// bf_max_job_user_part: the most jobs per user, partition,
	// association, or user and partition that are tested in one plan;
	// further jobs of that group are skipped (StatusNotTested). Every
	// tested job counts, whatever its outcome. 0 means unlimited.
	MaxJobUser, MaxJobPart, MaxJobAssoc, MaxJobUserPart int
	// MinPrioReserve is bf_min_prio_reserve: jobs with a priority below it
	// are only tested for an immediate start (no reservation). 0 disables.
	MinPrioReserve float64
	// MinAgeReserve is bf_min_age_reserve: jobs eligible for less than
	// this long are only tested for an immediate start. 0 disables.
	MinAgeReserve time.Duration
	// JobPartCountReserve is bf_job_part_count_reserve: at most this many
	// reservations per partition; later jobs of the partition are only
	// tested for an immediate start. 0 means no limit.
	JobPartCountReserve int
	// Chooser picks nodes among feasible ones (topology-aware placement);
	// nil picks the lowest indices. See NodeChooser for its contract.
	Chooser NodeChooser
	// BusyNodes is Slurm's bf_busy_nodes: reservations for future starts
	// take nodes that are busy now before idle ones (with the default
	// chooser), leaving idle nodes to backfill. Textbook EASY reserves
	// this way. Off by default, as in Slurm.
	BusyNodes bool
}

const maxWindow = 30 * 24 * time.Hour

// Validate reports the first out-of-range field.
func (c Config) Validate() error {
	switch {
	case c.Mode > EASY:
		return fmt.Errorf("%w: Mode %d", ErrInvalidConfig, c.Mode)
	case c.Reservations < 0:
		return fmt.Errorf("%w: Reservations %d, want ≥ 0", ErrInvalidConfig, c.Reservations)
	case c.Window < 0 || c.Window > maxWindow:
		return fmt.Errorf("%w: Window %v, want (0, %v]", ErrInvalidConfig, c.Window, maxWindow)
	case c.Resolution != 0 && (c.Resolution < time.Second || c.Resolution > time.Hour || c.Resolution%time.Second != 0):
		return fmt.Errorf("%w: Resolution %v, want whole seconds in [1s, 1h]", ErrInvalidConfig, c.Resolution)
	case c.MaxJobTest < 0:
		return fmt.Errorf("%w: MaxJobTest %d, want ≥ 0", ErrInvalidConfig, c.MaxJobTest)
	case c.MaxJobStart < 0:
		return fmt.Errorf("%w: MaxJobStart %d, want ≥ 0", ErrInvalidConfig, c.MaxJobStart)
	case c.MaxJobUser < 0 || c.MaxJobPart < 0 || c.MaxJobAssoc < 0 || c.MaxJobUserPart < 0:
		return fmt.Errorf("%w: MaxJobUser/Part/Assoc/UserPart must be ≥ 0", ErrInvalidConfig)
	case c.MinPrioReserve < 0 || c.MinPrioReserve != c.MinPrioReserve:
		return fmt.Errorf("%w: MinPrioReserve %v, want ≥ 0", ErrInvalidConfig, c.MinPrioReserve)
	case c.MinAgeReserve < 0:
		return fmt.Errorf("%w: MinAgeReserve %v, want ≥ 0", ErrInvalidConfig, c.MinAgeReserve)
	case c.JobPartCountReserve < 0:
		return fmt.Errorf("%w: JobPartCountReserve %d, want ≥ 0", ErrInvalidConfig, c.JobPartCountReserve)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Reservations == 0 {
		c.Reservations = 1
	}
	if c.Window == 0 {
		c.Window = 24 * time.Hour
	}
	if c.Resolution == 0 {
		c.Resolution = DefaultResolution
	}
	return c
}

// Job is one pending job as the planner sees it. The caller (the
// scheduler) has already applied partitions, QOS, limits, node states and
// advance reservations: they arrive as Allowed, Earliest and NoReserve.
type Job struct {
	// ID names the job; its reservation in the profile uses it.
	ID JobID
	// Nodes is the node count (≥ 1).
	Nodes int
	// PerNode is the resources needed on each node (cpu, mem, gres …).
	PerNode gres.Vector
	// Spread is what the job's nodes must hold beyond PerNode × Nodes in
	// total, as the nodes can hold it (Slurm's --gpus beyond one GPU per
	// node; see Request.Spread); nil for none. The entry's Spread gives
	// each planned node's share.
	Spread gres.Vector
	// Exclusive asks for whole nodes (--exclusive, OverSubscribe=EXCLUSIVE).
	Exclusive bool
	// Allowed is the set of usable nodes; length 0 means every node.
	Allowed topology.NodeSet
	// TimeLimit is the job's time limit (≥ 1 s): the planned run time.
	TimeLimit time.Duration
	// TimeMin is --time-min (0: none). The job is planned with it; when it
	// can start now its limit is raised as far as the plan allows, up to
	// TimeLimit. Must not exceed TimeLimit.
	TimeMin time.Duration
	// Earliest is the earliest start (begin time, advance reservation
	// start); zero means now.
	Earliest time.Time
	// Eligible is when the job became eligible (its begin time), for
	// bf_min_age_reserve; zero means "long ago".
	Eligible time.Time
	// Priority is compared with bf_min_prio_reserve.
	Priority float64
	// NoReserve asks for an immediate start only (QOS NoReserve).
	NoReserve bool
	// NoEstimate spares the search for the job's expected start when it
	// gets no reservation: it is then only tested for a start now, and
	// ends StatusWaiting when it cannot start. A caller that keeps each
	// job's last estimate and refreshes it on its own schedule (as
	// Slurm's squeue --start shows the last backfill pass's) sets it for
	// the jobs whose estimate is recent. Decisions — starts and
	// reservations — are the same with or without it.
	NoEstimate bool
	// User, Partition and Assoc group jobs for bf_max_job_user, _part,
	// _assoc, _user_part and bf_job_part_count_reserve.
	User, Partition, Assoc string
	// Chooser, when set, replaces Config.Chooser for this job (a job with
	// its own topology constraints, such as --switches). ChooserKey must
	// then name the constraint: jobs with equal keys must have choosers
	// that behave the same, since the planner shares what it learns
	// between jobs of the same shape and key.
	Chooser    NodeChooser
	ChooserKey string
	// Required are nodes the job's nodes must include (Slurm's
	// --nodelist, -w); see Request.Required. Nil: none.
	Required []int
	// Alternatives are the sets of a matching OR (Slurm's
	// --constraint="[a|b]"): the job runs within Allowed ∩ one of them,
	// the one where it starts earliest (the first listed on equal
	// starts); see Request.Alternatives. Not for a heterogeneous job or
	// its components. Nil: none.
	Alternatives []topology.NodeSet
	// Tasks, PerTask and MaxTasksPerNode give the job a variable number of
	// tasks per node (Slurm's -n over the job's nodes, --ntasks-per-node
	// as a maximum): PerNode is then a node's share with one task; see
	// Request.Tasks. The entry's Tasks gives each planned node's count.
	// Tasks zero: none. PlaneSize deals them in blocks (Request.PlaneSize).
	Tasks           int
	PerTask         gres.Vector
	MaxTasksPerNode int
	PlaneSize       int
	// Uses are the counters of the profile's Counters the job takes while
	// it runs (licenses, limit counts): it is planned at the earliest time
	// its nodes fit and each has room (see Counters). Nil for none.
	Uses []Use
	// Components, when set, makes this a heterogeneous job (Slurm's
	// sbatch with ':'-separated components): every component starts at
	// the same instant or none does, each on its own nodes (see
	// EarliestCoFit). Components[0] is the leader and has the job's ID;
	// the job's own request fields (Nodes, PerNode, Spread, Exclusive,
	// Allowed, TimeLimit, TimeMin, Chooser, Required, Alternatives) are then unused,
	// while its Earliest, Eligible, Priority, NoReserve, NoEstimate,
	// User, Partition and Assoc speak for the whole job. Each component's Uses
	// are its own, taken from the common start for its TimeLimit, and
	// must fit their bounds with those of the components before it
	// counted (see EarliestCoFitUses); the job's own Uses must be empty.
	Components []Job
}

// Status is the outcome of planning one job.
type Status uint8

const (
	// StatusNotTested: the job was not tested (a depth or per-group limit
	// stopped it, see Reason); it has no estimate.
	StatusNotTested Status = iota
	// StatusStart: start the job now on Nodes.
	StatusStart
	// StatusReserved: the job is expected to start at Start on Nodes and
	// holds a reservation there, so no lower-priority job delays it.
	StatusReserved
	// StatusEstimated: expected start and nodes from the same plan, but no
	// reservation (see Reason), so later backfill may delay it.
	StatusEstimated
	// StatusBeyondWindow: the job cannot start within the window; no
	// estimate.
	StatusBeyondWindow
	// StatusNeverFits: the job cannot fit at any time (see Reason).
	StatusNeverFits
	// StatusWaiting: the job cannot start now and gets no reservation
	// (see Reason); it asked for no estimate (Job.NoEstimate).
	StatusWaiting
)

// String returns the status name.
func (s Status) String() string {
	switch s {
	case StatusNotTested:
		return "not-tested"
	case StatusStart:
		return "start"
	case StatusReserved:
		return "reserved"
	case StatusEstimated:
		return "estimated"
	case StatusBeyondWindow:
		return "beyond-window"
	case StatusNeverFits:
		return "never-fits"
	case StatusWaiting:
		return "waiting"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Reason qualifies a Status: why a job got no reservation, no estimate, or
// was not tested.
type Reason uint8

const (
	// ReasonNone: nothing to add.
	ReasonNone Reason = iota
	// ReasonNoReserve: the job asked for no reservation (Job.NoReserve).
	ReasonNoReserve
	// ReasonMinPrioReserve: priority below bf_min_prio_reserve.
	ReasonMinPrioReserve
	// ReasonMinAgeReserve: eligible for less than bf_min_age_reserve.
	ReasonMinAgeReserve
	// ReasonPartCountReserve: the partition already has
	// bf_job_part_count_reserve reservations.
	ReasonPartCountReserve
	// ReasonReservationLimit: EASY's k reservations are taken.
	ReasonReservationLimit
	// ReasonWindow: no start within bf_window (or Earliest beyond it).
	ReasonWindow
	// ReasonCapacity: fewer allowed nodes than requested can hold the
	// per-node request even when empty.
	ReasonCapacity
	// ReasonUnavailable: enough nodes could hold it, but the resources
	// never become free (down or blocked nodes, jobs without an end).
	ReasonUnavailable
	// ReasonMaxJobTest: bf_max_job_test reached.
	ReasonMaxJobTest
	// ReasonMaxJobStart: bf_max_job_start reached.
	ReasonMaxJobStart
	// ReasonMaxJobUser: bf_max_job_user reached for the job's user.
	ReasonMaxJobUser
	// ReasonMaxJobPart: bf_max_job_part reached for the job's partition.
	ReasonMaxJobPart
	// ReasonMaxJobAssoc: bf_max_job_assoc reached for the job's association.
	ReasonMaxJobAssoc
	// ReasonMaxJobUserPart: bf_max_job_user_part reached.
	ReasonMaxJobUserPart
	// ReasonCounter: a counter the job uses can never hold its amount
	// (above the counter's bound, or in use for ever); Entry.Counter
	// names it.
	ReasonCounter
)

var reasonNames = [...]string{
	ReasonNone:             "none",
	ReasonNoReserve:        "no-reserve",
	ReasonMinPrioReserve:   "bf_min_prio_reserve",
	ReasonMinAgeReserve:    "bf_min_age_reserve",
	ReasonPartCountReserve: "bf_job_part_count_reserve",
	ReasonReservationLimit: "reservation-limit",
	ReasonWindow:           "bf_window",
	ReasonCapacity:         "capacity",
	ReasonUnavailable:      "unavailable",
	ReasonMaxJobTest:       "bf_max_job_test",
	ReasonMaxJobStart:      "bf_max_job_start",
	ReasonMaxJobUser:       "bf_max_job_user",
	ReasonMaxJobPart:       "bf_max_job_part",
	ReasonMaxJobAssoc:      "bf_max_job_assoc",
	ReasonMaxJobUserPart:   "bf_max_job_user_part",
	ReasonCounter:          "counter",
}

// String returns the reason name (Slurm's knob name where there is one).
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Entry is the plan for one pending job.
type Entry struct {
	ID     JobID
	Status Status
	Reason Reason
	// Start is the (expected) start: the profile's Now for StatusStart;
	// zero when there is no estimate.
	Start time.Time
	// End is Start + TimeLimit.
	End time.Time
	// TimeLimit is the limit planned with: TimeLimit, or TimeMin for a
	// --time-min job that cannot start now, or for one that starts now
	// the largest limit in [TimeMin, TimeLimit] (whole minutes) the plan
	// allows. Zero without an estimate.
	TimeLimit time.Duration
	// Nodes are the planned nodes (empty without an estimate).
	Nodes []int
	// Spread is, for a job with a Spread and an estimate, each planned
	// node's share of it (parallel to Nodes): what a start must place
	// there beyond PerNode for the plan to hold. Nil otherwise.
	Spread []gres.Vector
	// Tasks is, for a job with Tasks and an estimate, each planned node's
	// task count (parallel to Nodes): what a start must place there for
	// the plan to hold. Nil otherwise.
	Tasks []int
	// ByCounter says that a counter, not the nodes, set the outcome: the
	// start is later than the nodes alone allow (or none is given, for
	// StatusBeyondWindow and StatusNeverFits with ReasonCounter) because
	// Counter, one of the job's Uses, has no room earlier.
	ByCounter bool
	Counter   CounterID
	// Components is, for a heterogeneous job (Job.Components), one entry
	// per component, all with the job's Status, Reason and (common)
	// Start; the job's own Nodes are then empty and its End is the
	// latest component end.
	Components []Entry
}

// Stats counts a plan's outcomes.
type Stats struct {
	Tested, Started, Reserved, Estimated, BeyondWindow, NeverFits, NotTested, Waiting int
	// Searches is the number of profile searches run; Tested − Searches
	// jobs were answered from earlier searches of the same shape.
	Searches int
}

// Plan is the result of one backfill pass.
type Plan struct {
	// Entries has one entry per input job, in input order.
	Entries []Entry
	// Starts indexes Entries of the jobs to start now, in priority order.
	Starts []int
	Stats  Stats

	pass *passState // for Extend
	slab []int      // the chunk the node lists were last cut from (PlanInto reuses it)
}

// Planner runs backfill passes with one configuration. It holds no state
// between passes and is safe for concurrent use on different profiles.
type Planner struct {
	cfg Config
}

// NewPlanner validates cfg and returns a planner.
func NewPlanner(cfg Config) (*Planner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Planner{cfg: cfg.withDefaults()}, nil
}

// Config returns the planner's configuration with defaults filled in.
func (pl *Planner) Config() Config { return pl.cfg }

// NewProfile builds a profile with the planner's resolution; see the
// package-level NewProfile.
func (pl *Planner) NewProfile(now time.Time, nodes []NodeState, running []Running) (*Profile, error) {
	return NewProfile(now, nodes, running, ProfileOptions{Resolution: pl.cfg.Resolution})
}

// Plan runs one backfill pass at prof.Now() over jobs, which must be in
// scheduling order (highest priority first). Every job that starts now or
// gets a reservation is booked into prof under its ID (pass prof.Clone()
// to keep the original). The returned plan has one Entry per job.
//
// The profile may still hold the first job's reservation from the last
// plan (see Profile.ReleaseReservationsExcept): that job's search then
// treats it as absent, and it stays in place when the job is booked exactly
// so again — in EASY the head job's reservation, which rarely moves —
// instead of being released and booked anew; otherwise it is released.
// The plan and the profile are the same as with it released first (tested
// over random profiles). Any other job already in prof is an error.
//
// Plan validates every job before touching prof; on error prof is
// unchanged.
func (pl *Planner) Plan(prof *Profile, jobs []Job) (*Plan, error) {
	return pl.plan(nil, prof, nil, jobs)
}

// PlanInto is Plan writing into dst, whose entries and node lists are
// reused (their earlier contents are overwritten): a caller planning cycle
// after cycle alternates two plans and allocates almost nothing. It
// returns dst. A nil dst is a new plan.
func (pl *Planner) PlanInto(dst *Plan, prof *Profile, jobs []Job) (*Plan, error) {
	return pl.plan(dst, prof, nil, jobs)
}

// Extend continues the pass that produced prev with more jobs, which come
// after prev's in scheduling order, on prof: the profile prev was planned
// on, still holding its bookings, possibly advanced since. It returns a new
// plan with prev's entries followed by those of more (Starts indexes the
// combined entries, Stats counts them all); the reservations taken (EASY's
// k, bf_job_part_count_reserve) and the bf_max_job_* counts carry over from
// prev, and the new jobs' window ends bf_window after prof's Now.
//
// Extend is the planner's half of incremental planning. When nothing the
// earlier jobs' plan depends on has changed since — no job ended or
// started, no node changed, no change point of prof was passed (see
// NextChange), no earlier job's start was reached — it gives what Plan of
// the whole list would give, for the cost of the new jobs alone. Knowing
// that is the caller's part.
func (pl *Planner) Extend(prof *Profile, prev *Plan, more []Job) (*Plan, error) {
	return pl.ExtendInto(nil, prof, prev, more)
}

// ExtendInto is Extend writing into dst, as PlanInto does (prev's entries
// and node lists are copied into it); dst must not be prev.
func (pl *Planner) ExtendInto(dst *Plan, prof *Profile, prev *Plan, more []Job) (*Plan, error) {
	switch {
	case prev == nil || prev.pass == nil:
		return nil, fmt.Errorf("%w: Extend needs a plan made by Plan or Extend", ErrInvalidConfig)
	case dst == prev:
		return nil, fmt.Errorf("%w: ExtendInto cannot write into the plan it extends", ErrInvalidConfig)
	}
	return pl.plan(dst, prof, prev, more)
}

func (pl *Planner) plan(dst *Plan, prof *Profile, prev *Plan, jobs []Job) (*Plan, error) {
	cfg := &pl.cfg
	if prof.Resolution() != cfg.Resolution {
		return nil, fmt.Errorf("%w: profile resolution %v differs from the planner's %v", ErrInvalidConfig, prof.Resolution(), cfg.Resolution)
	}
	ps := prof.planScratch()
	off := 0
	var (
		stop Reason
		done Stats // prev's, which counts its entries: they carry over
	)
	if prev != nil {
		off = len(prev.Entries)
		for x := range prev.Entries {
			ps.ids[prev.Entries[x].ID] = struct{}{}
		}
		stop, done = prev.pass.stop, prev.Stats
		for _, c := range prev.pass.counts {
			ps.counts[c.k] = c.n
		}
		for _, c := range prev.pass.partRes {
			ps.partRes[c.part] = c.n
		}
	}
	var kept *entry
	if prev == nil && len(jobs) > 0 {
		if e, ok := prof.entryOf(jobs[0].ID); ok && e.kind == kindReserved {
			kept = e
		}
	}
	if err := pl.validateJobs(prof, jobs, ps.ids, kept != nil); err != nil {
		return nil, err
	}
	r := &ps.run
	q, keyBuf := r.q, r.keyBuf // buffers kept from pass to pass
	booked := r.booked
	if len(booked) != prof.n {
		booked = make([]int, prof.n)
	} else {
		clear(booked)
	}
	*r = run{
		planScratch: ps,
		q:           q,
		keyBuf:      keyBuf,
		booked:      booked,
		pl:          pl,
		p:           prof,
		latest:      prof.origin + int64(cfg.Window/time.Second),
		kept:        kept,
	}
	if dst == nil {
		dst = &Plan{}
	}
	n := off + len(jobs)
	entries := slices.Grow(dst.Entries[:0], n)[:n]
	clear(entries)
	pass := dst.pass // reused below (dst is not prev)
	// Node lists are cut from the largest chunk of dst's last use.
	*dst = Plan{Entries: entries, Starts: dst.Starts[:0], slab: dst.slab[:0]}
	r.plan = dst
	r.plan.Stats = done
	r.q.slab = &dst.slab
	if prev != nil {
		copy(r.plan.Entries, prev.Entries)
		for x := range prev.Entries { // dst owns its node lists
			if nodes := prev.Entries[x].Nodes; nodes != nil {
				r.plan.Entries[x].Nodes = append(r.q.nodeList(len(nodes)), nodes...)
			}
		}
		r.plan.Starts = append(r.plan.Starts, prev.Starts...)
	}
	r.q.cslab = &ps.cands
	for x := range jobs {
		j := &jobs[x]
		e := &r.plan.Entries[off+x]
		e.ID = j.ID
		why := stop
		if why == ReasonNone {
			why = r.exceedsGroupLimit(j)
		}
		if why != ReasonNone {
			e.Status, e.Reason = StatusNotTested, why
			r.plan.Stats.count(StatusNotTested)
			continue
		}
		if err := r.planJob(j, e); err != nil {
			return nil, fmt.Errorf("job %d: %w", j.ID, err)
		}
		// The first job's kept reservation, if not booked again, goes.
		if err := r.dropKept(); err != nil {
			return nil, fmt.Errorf("job %d: %w", j.ID, err)
		}
		r.plan.Stats.count(e.Status)
		if e.Status == StatusStart {
			r.plan.Starts = append(r.plan.Starts, off+x)
			if cfg.MaxJobStart > 0 && len(r.plan.Starts) >= cfg.MaxJobStart {
				stop = ReasonMaxJobStart
			}
		}
		if cfg.MaxJobTest > 0 && r.plan.Stats.Tested >= cfg.MaxJobTest {
			stop = ReasonMaxJobTest
		}
	}
	if pass == nil {
		pass = &passState{}
	}
	*pass = passState{stop: stop, counts: pass.counts[:0], partRes: pass.partRes[:0]}
	r.plan.pass = pass
	for k, n := range r.counts {
		r.plan.pass.counts = append(r.plan.pass.counts, groupCount{k, n})
	}
	for part, n := range r.partRes {
		r.plan.pass.partRes = append(r.plan.pass.partRes, partCount{part, n})
	}
	// Deterministic, like everything a plan holds.
	slices.SortFunc(r.plan.pass.partRes, func(x, y partCount) int { return strings.Compare(x.part, y.part) })
	slices.SortFunc(r.plan.pass.counts, func(x, y groupCount) int {
		return cmp.Or(cmp.Compare(x.k.kind, y.k.kind), strings.Compare(x.k.a, y.k.a), strings.Compare(x.k.b, y.k.b))
	})
	return r.plan, nil
}

// count adds one entry of status st to its outcome's count (Tested and
// Searches are counted where they happen).
func (s *Stats) count(st Status) {
	switch st {
	case StatusStart:
		s.Started++
	case StatusReserved:
		s.Reserved++
	case StatusEstimated:
		s.Estimated++
	case StatusBeyondWindow:
		s.BeyondWindow++
	case StatusNeverFits:
		s.NeverFits++
	case StatusNotTested:
		s.NotTested++
	case StatusWaiting:
		s.Waiting++
	}
}

// passState is what a pass leaves for Extend to continue it, besides its
// plan's Stats (the reservations taken, the jobs tested).
type passState struct {
	partRes []partCount
	counts  []groupCount
	stop    Reason
}

type partCount struct {
	part string
	n    int
}

type groupCount struct {
	k countKey
	n int
}

func (pl *Planner) validateJobs(p *Profile, jobs []Job, ids map[JobID]struct{}, firstKept bool) error {
	for x := range jobs {
		j := &jobs[x]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: jobs[%d] (ID %d): %s", ErrInvalidJob, x, j.ID, fmt.Sprintf(format, args...))
		}
		if _, dup := ids[j.ID]; dup {
			return fmt.Errorf("%w: jobs[%d]: ID %d appears twice", ErrDuplicateID, x, j.ID)
		}
		ids[j.ID] = struct{}{}
		if len(j.Components) > 0 {
			if err := pl.validateHet(p, x, j, ids, firstKept); err != nil {
				return err
			}
			continue
		}
		if p.hasID(j.ID) && (x > 0 || !firstKept) {
			return fmt.Errorf("%w: jobs[%d]: ID %d is already in the profile", ErrDuplicateID, x, j.ID)
		}
		switch {
		case j.Nodes < 1:
			return bad("Nodes %d, want ≥ 1", j.Nodes)
		case j.TimeLimit < time.Second || j.TimeLimit > MaxDuration:
			return bad("TimeLimit %v, want [1s, %v]", j.TimeLimit, MaxDuration)
		case j.TimeMin != 0 && (j.TimeMin < time.Second || j.TimeMin > j.TimeLimit):
			return bad("TimeMin %v, want 0 or [1s, TimeLimit %v]", j.TimeMin, j.TimeLimit)
		case j.Allowed.Len() != 0 && j.Allowed.Len() != p.n:
			return bad("Allowed has length %d, want 0 or %d", j.Allowed.Len(), p.n)
		case j.Priority != j.Priority:
			return bad("Priority is NaN")
		}
		for k, v := range j.PerNode {
			if v < 0 || v > gres.MaxCount {
				return bad("PerNode TRES %d count %d out of [0, %d]", k, v, gres.MaxCount)
			}
		}
		for k, v := range j.Spread {
			if v < 0 || v > gres.MaxCount {
				return bad("Spread TRES %d count %d out of [0, %d]", k, v, gres.MaxCount)
			}
		}
		if err := taskVectorOK(j.PerTask); err != nil {
			return bad("%v", err)
		}
		if j.Tasks != 0 && (j.Tasks < j.Nodes || j.MaxTasksPerNode < 0) {
			return bad("Tasks %d with Nodes %d and MaxTasksPerNode %d", j.Tasks, j.Nodes, j.MaxTasksPerNode)
		}
		if len(j.Uses) > 0 {
			if p.ctr == nil {
				return bad("Uses counters, but the profile has none (SetCounters)")
			}
			if err := p.ctr.validUses(j.Uses); err != nil {
				return bad("%v", err)
			}
		}
	}
	return nil
}

// planScratch holds a profile's maps for Plan, emptied and reused from
// plan to plan.
type planScratch struct {
	ids     map[JobID]struct{}
	shapes  map[string]*shape
	setIdx  map[setFP][]int
	setRefs map[topology.SetRef]int // setIndex's sets by storage
	counts  map[countKey]int
	partRes map[string]int
	sets    []topology.NodeSet
	cands   []int32 // the shape cache's candidate lists
	// capSets holds, for one pass, the nodes whose capacity holds each
	// request (capableCount), keyed by the request.
	capSets map[string]topology.NodeSet
	run     run
	// pass numbers the passes; shapes keeps its keys from pass to pass
	// (up to maxKeptShapes) and a shape last used by an earlier pass is
	// emptied before use: the cache itself lives for one pass.
	pass uint64
}

// maxKeptShapes bounds the shape keys kept between passes.
const maxKeptShapes = 4096

func (p *Profile) planScratch() *planScratch {
	sc := p.scratch()
	if sc.plan == nil {
		sc.plan = &planScratch{ids: map[JobID]struct{}{}, shapes: map[string]*shape{}, setIdx: map[setFP][]int{},
			setRefs: map[topology.SetRef]int{},
			counts:  map[countKey]int{}, partRes: map[string]int{}, capSets: map[string]topology.NodeSet{}}
	}
	ps := sc.plan
	ps.pass++
	clear(ps.ids)
	if len(ps.shapes) > maxKeptShapes {
		clear(ps.shapes)
	}
	clear(ps.setIdx)
	clear(ps.setRefs)
	clear(ps.counts)
	clear(ps.partRes)
	clear(ps.capSets)
	ps.sets = ps.sets[:0]
	ps.cands = ps.cands[:0] // the last pass's shape cache is gone
	return ps
}

// run is the state of one Plan call; its maps and sets are the profile's
// planScratch's.
type run struct {
	*planScratch
	pl     *Planner
	p      *Profile
	latest int64
	// plan is the plan being filled; its Stats count the entries so far
	// (Reserved: EASY's reservations taken).
	plan   *Plan
	keyBuf []byte
	// kept is the first job's reservation from the last plan, still in
	// the profile: its search looks through it, and it stays when the
	// job is booked exactly so again. The first job is always planned
	// (no limit stops it), and kept is nil once it has been.
	kept *entry
	// gen counts the changes this pass made to the profile (bookings,
	// the kept reservation's release): a shape cache entry found at the
	// current gen answers the same question exactly. barrier is the gen
	// of the last change that may have added room, and booked[i] the
	// gen of node i's last booking (see stillHolds).
	gen, barrier int
	booked       []int
	q            query // reused from job to job
	// altTmp is the scratch set of an alternative within a job's allowed
	// nodes (altSet).
	altTmp topology.NodeSet
}

type countKey struct {
	kind uint8
	a, b string
}

// exceedsGroupLimit applies bf_max_job_user_part, _part, _assoc and _user
// (Slurm's order) and counts the job when it passes.
func (r *run) exceedsGroupLimit(j *Job) Reason {
	cfg := &r.pl.cfg
	if cfg.MaxJobUserPart == 0 && cfg.MaxJobPart == 0 && cfg.MaxJobAssoc == 0 && cfg.MaxJobUser == 0 {
		return ReasonNone
	}
	type lim struct {
		n   int
		key countKey
		why Reason
	}
	lims := [...]lim{
		{cfg.MaxJobUserPart, countKey{0, j.User, j.Partition}, ReasonMaxJobUserPart},
		{cfg.MaxJobPart, countKey{1, j.Partition, ""}, ReasonMaxJobPart},
		{cfg.MaxJobAssoc, countKey{2, j.Assoc, ""}, ReasonMaxJobAssoc},
		{cfg.MaxJobUser, countKey{3, j.User, ""}, ReasonMaxJobUser},
	}
	for _, l := range lims {
		if l.n > 0 && r.counts[l.key] >= l.n {
			return l.why
		}
	}
	for _, l := range lims {
		if l.n > 0 {
			r.counts[l.key]++
		}
	}
	return ReasonNone
}

// reserveReason decides whether a job may hold a reservation (Slurm's
// TEST_NOW_ONLY cases) and why not.
func (r *run) reserveReason(j *Job) Reason {
	cfg := &r.pl.cfg
	switch {
	case j.NoReserve:
		return ReasonNoReserve
	case cfg.MinPrioReserve > 0 && j.Priority < cfg.MinPrioReserve:
		return ReasonMinPrioReserve
	case cfg.MinAgeReserve > 0 && !j.Eligible.IsZero() && r.p.nowT.Sub(j.Eligible) < cfg.MinAgeReserve:
		return ReasonMinAgeReserve
	case cfg.JobPartCountReserve > 0 && r.partRes[j.Partition] >= cfg.JobPartCountReserve:
		return ReasonPartCountReserve
	case cfg.Mode == EASY && r.plan.Stats.Reserved >= cfg.Reservations:
		return ReasonReservationLimit
	}
	return ReasonNone
}
