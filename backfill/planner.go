package backfill

import (
	"cmp"
	"encoding/binary"
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
	*r = run{
		planScratch: ps,
		q:           q,
		keyBuf:      keyBuf,
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
			counts: map[countKey]int{}, partRes: map[string]int{}, capSets: map[string]topology.NodeSet{}}
	}
	ps := sc.plan
	ps.pass++
	clear(ps.ids)
	if len(ps.shapes) > maxKeptShapes {
		clear(ps.shapes)
	}
	clear(ps.setIdx)
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
	// current gen answers the same question exactly.
	gen int
	q   query // reused from job to job
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

// jobFit is what find learned of a plain job: the answer res of the
// search for query q (planned for planned, the job's --time-min when it
// has one), why it may hold no reservation (noResv), whether only a start
// now is asked (startOnly), whether the kept reservation is looked
// through (ghost: the caller turns it off when done with q) and whether
// the entry already says the job never fits (settled).
type jobFit struct {
	res       result
	q         *query
	planned   time.Duration
	noResv    Reason
	startOnly bool
	ghost     bool
	settled   bool
}

// find searches the earliest start of plain job j (no components, no
// alternatives) at or before latest on the plan's profile, through the
// shape cache, and where j takes counters the earliest at which they have
// room too; an entry that never fits is settled in e.
func (r *run) find(j *Job, e *Entry, latest int64) (jobFit, error) {
	p := r.p
	f := jobFit{noResv: r.reserveReason(j), planned: j.TimeLimit}
	if j.TimeMin > 0 && j.TimeMin < j.TimeLimit {
		f.planned = j.TimeMin
	}
	req := r.pl.JobRequest(j, f.planned, j.Earliest)
	q, err := p.fillQuery(&r.q, &req)
	if err != nil {
		return f, err
	}
	f.q = q
	q.latest = latest
	// A job that may hold no reservation and wants no estimate needs only
	// the answer for now.
	f.startOnly = j.NoEstimate && f.noResv != ReasonNone
	if f.startOnly {
		q.latest = p.origin
	}
	if r.kept != nil && r.kept.id == j.ID {
		p.ghostOn(q, r.kept)
		f.ghost = true
	}

	sh := r.cachedShape(j, q)
	if r.neverFits(sh, q) {
		e.Status, e.Reason = StatusNeverFits, ReasonCapacity
		f.settled = true
		return f, nil
	}
	e0 := q.t0
	res := result{st: FitBeyondLatest}
	if en := sh.same(q.n, q.d, e0, r.gen); en != nil && q.ghost == nil {
		// The same question on the same profile: the same answer.
		if en.t <= q.latest {
			res = result{st: FitFound, t: en.t, nodes: append(q.nodeList(len(en.nodes)), en.nodes...)}
		}
	} else if hint, fail := sh.lookup(q.n, q.d, e0, q.latest); fail != FitFound {
		res.st = fail
	} else if hint.t <= q.latest {
		// (A hint past the latest start is the answer, beyond it, and
		// the entry that gave it stands for this job too.)
		q.t0, q.cands, q.upTo = hint.t, hint.cands, hint.upTo
		r.plan.Stats.Searches++
		res, err = p.search(q)
		if err != nil {
			return f, err
		}
		gen := r.gen
		if q.ghost != nil {
			gen = -1 // found on the profile without the kept reservation
		}
		sh.insert(q, e0, res, gen)
	}
	if res.st == FitFound && len(j.Uses) > 0 {
		res, err = r.counterFit(j, q, sh, res, e)
		if err != nil {
			return f, err
		}
		if res.st == FitNever && e.Reason == ReasonCounter {
			e.Status = StatusNeverFits
			f.settled = true
			return f, nil
		}
	}
	f.res = res
	return f, nil
}

// planJob tests one job and fills its entry, booking starts and
// reservations into the profile.
func (r *run) planJob(j *Job, e *Entry) error {
	if len(j.Components) > 0 {
		return r.planHet(j, e)
	}
	if len(j.Alternatives) > 0 {
		return r.planAlternatives(j, e)
	}
	p := r.p
	r.plan.Stats.Tested++
	f, err := r.find(j, e, r.latest)
	if err != nil {
		return err
	}
	if f.ghost {
		defer p.ghostOff(f.q)
	}
	if f.settled {
		return nil
	}
	q, res, planned, noResv, startOnly := f.q, f.res, f.planned, f.noResv, f.startOnly
	t, nodes := res.t, res.nodes
	switch res.st {
	case FitBeyondLatest:
		if startOnly {
			e.Status, e.Reason = StatusWaiting, noResv
			return nil
		}
		e.Status, e.Reason = StatusBeyondWindow, ReasonWindow
		return nil
	case FitNever:
		e.Status, e.Reason = StatusNeverFits, ReasonUnavailable
		return nil
	}

	d, limit := q.d, ceilSecs(j.TimeLimit)
	if t == p.origin && planned < j.TimeLimit {
		// --time-min: run as long as the plan allows, up to the limit.
		full := p.durAt(t, limit)
		if run := p.runLength(q, nodes, t, full); run >= full {
			d = limit
		} else {
			d = max(q.d, run/60*60)
		}
		if len(j.Uses) > 0 && d > q.d && p.ctr.blocking(j.Uses, t, d) >= 0 {
			d = q.d // the counters hold it for --time-min only
		}
	}
	e.Start = p.timeOf(t)
	e.Nodes = nodes
	e.Spread = p.shares(q)
	e.Tasks = p.taskCounts(q, len(nodes))
	e.TimeLimit = time.Duration(d) * time.Second
	if d == limit {
		e.TimeLimit = j.TimeLimit
	}
	e.End = e.Start.Add(e.TimeLimit)

	if t > p.origin && noResv != ReasonNone {
		e.Status, e.Reason = StatusEstimated, noResv
		return nil
	}
	end := p.endAt(t, d)
	if t == p.origin {
		// A start holds its resources until Now + TimeLimit, which is a
		// second later than the origin's count when Now has a fraction
		// of a second: book that, where the profile allows it, so that
		// the booking is exactly the running job (AddStarted then keeps
		// it).
		if e2 := p.endOf(e.End); e2 > end {
			// Its own last reservation must not stand in the way:
			// release it (this start replaces it anyway).
			if err := r.dropKept(); err != nil {
				return err
			}
			if p.fitsAll(q, nodes, end, e2) {
				end = e2
			}
		}
	}
	if err := r.book(j, q, t, end, nodes); err != nil {
		return err
	}
	if len(j.Uses) > 0 {
		p.ctr.book(j.Uses, t, end)
	}
	if t == p.origin {
		e.Status = StatusStart
		return nil
	}
	e.Status = StatusReserved
	r.partRes[j.Partition]++
	return nil
}

// book reserves [t, end) on nodes for job j.
func (r *run) book(j *Job, q *query, t, end int64, nodes []int) error {
	p := r.p
	a := p.a
	if k := r.kept; k != nil && k.start == t && k.end == end && r.bookedAs(k, q, nodes) {
		r.kept = nil
		return nil // booked exactly so already
	}
	ent := &entry{id: j.ID, kind: kindReserved, start: t, end: end, nodes: make([]int32, len(nodes)), use: make([]int64, len(nodes)*a)}
	for x, i := range nodes {
		ent.nodes[x] = int32(i)
		copy(ent.use[x*a:(x+1)*a], p.useOn(q, i))
	}
	if err := r.dropKept(); err != nil {
		return err
	}
	r.gen++
	if err := p.insertReserved(ent); err != nil {
		// The search said these nodes fit; this is a bug, not bad input.
		return fmt.Errorf("internal: booking a found fit failed: %w", err)
	}
	return nil
}

// bookedAs reports whether entry k holds exactly what booking q on nodes
// would (the same nodes in the same order, the same use on each).
func (r *run) bookedAs(k *entry, q *query, nodes []int) bool {
	a := r.p.a
	if len(k.nodes) != len(nodes) {
		return false
	}
	for x, i := range nodes {
		if int(k.nodes[x]) != i || !slices.Equal(k.use[x*a:(x+1)*a], r.p.useOn(q, i)) {
			return false
		}
	}
	return true
}

// dropKept releases the kept reservation, if it is still there.
func (r *run) dropKept() error {
	k := r.kept
	if k == nil {
		return nil
	}
	r.kept = nil
	r.gen++
	if err := r.p.Release(k.id); err != nil {
		return fmt.Errorf("internal: releasing the kept reservation: %w", err)
	}
	return nil
}

// fitsAll reports whether every node can hold the request over [s, e).
func (p *Profile) fitsAll(q *query, nodes []int, s, e int64) bool {
	for _, i := range nodes {
		if !p.fitsInterval(i, p.useOn(q, i), s, e) {
			return false
		}
	}
	return true
}

// ---- shape cache ----
//
// Within one pass the profile only loses free resources (the planner only
// books), so "job A cannot start before T" carries over to any later job
// B that needs at least as much: the same per-node vector, exclusivity and
// allowed set, at least as many nodes, at least as long, and an earliest
// start no earlier. The cache keeps, per shape, a few such facts (the
// start found, or "none within the window"), and the lowest node chosen
// then, below which no node was feasible at that time.

// setFP buckets the pass's sets by content (NodeSet.Hash).
type setFP uint64

type shapeEntry struct {
	n    int
	d, e int64
	t    int64 // start found; posInf: none at or before lim
	st   FitStatus
	// lim is the latest start the search allowed: the window's end, or
	// the origin for a job tested only for a start now. A failure tells
	// nothing of later starts.
	lim int64
	// gen is the pass's profile generation the entry was found at (-1:
	// on a profile with the kept reservation looked through), and nodes
	// the nodes chosen then: a job asking the same at the same gen gets
	// the same answer without a search.
	gen   int
	nodes []int
	// Every node feasible at t (for this entry's job) below upTo is in
	// cands.
	cands []int32
	upTo  int
}

type shape struct {
	capable int
	// allCapable: every allowed node's capacity holds the request.
	allCapable bool
	pass       uint64 // the pass it was last used in
	ents       []shapeEntry
}

const maxShapeEntries = 32
const maxSets = 512

func (r *run) shapeFor(j *Job, q *query) *shape {
	set := -1
	if j.Allowed.Len() != 0 {
		set = r.setIndex(j.Allowed)
		if set < 0 {
			return &shape{capable: -1} // uncached: too many distinct sets
		}
	}
	r.keyBuf = r.keyBuf[:0]
	for _, v := range q.req {
		r.keyBuf = binary.LittleEndian.AppendUint64(r.keyBuf, uint64(v))
	}
	excl := byte(0)
	if q.excl {
		excl = 1
	}
	r.keyBuf = append(r.keyBuf, excl)
	r.keyBuf = binary.LittleEndian.AppendUint64(r.keyBuf, uint64(int64(set)))
	r.keyBuf = append(r.keyBuf, j.ChooserKey...)
	if len(j.Required) > 0 {
		// The required nodes change the answer of the default chooser.
		r.keyBuf = append(r.keyBuf, 0)
		for _, i := range j.Required {
			r.keyBuf = binary.LittleEndian.AppendUint64(r.keyBuf, uint64(int64(i)))
		}
	}
	sh := r.shapes[string(r.keyBuf)] // no allocation when found
	if sh == nil {
		sh = &shape{}
		r.shapes[string(r.keyBuf)] = sh
	}
	if sh.pass != r.planScratch.pass {
		// An earlier pass's (set indices, in the key, are per pass too).
		*sh = shape{capable: -1, pass: r.planScratch.pass, ents: sh.ents[:0]}
	}
	return sh
}

// setIndex returns the index of a set equal to s, registering it; -1 when
// too many distinct sets were seen.
func (r *run) setIndex(s topology.NodeSet) int {
	fp := setFP(s.Hash())
	for _, x := range r.setIdx[fp] {
		if r.sets[x].Equal(s) {
			return x
		}
	}
	if len(r.sets) >= maxSets {
		return -1
	}
	r.sets = append(r.sets, s.Clone())
	r.setIdx[fp] = append(r.setIdx[fp], len(r.sets)-1)
	return len(r.sets) - 1
}

// hint is what the cache knows for a new job: no feasible start before t,
// and at t every feasible node below upTo is in cands.
type hint struct {
	t     int64
	cands []int32
	upTo  int
}

// lookup returns what the cache knows for a job of this shape with n
// nodes, raw duration d, earliest start e and latest start latest; st is
// FitFound when a search is needed, or the failure (beyond latest, never)
// already known.
func (sh *shape) lookup(n int, d, e, latest int64) (h hint, st FitStatus) {
	h.t = e
	for x := range sh.ents {
		en := &sh.ents[x]
		if en.n > n || en.d > d || en.e > e {
			continue
		}
		if en.t >= posInf {
			if en.lim < latest && en.st == FitBeyondLatest {
				continue // it searched less far
			}
			return hint{}, en.st
		}
		switch {
		case en.t > h.t:
			h = hint{t: en.t, cands: en.cands, upTo: en.upTo}
		case en.t == h.t && en.upTo > h.upTo:
			h.cands, h.upTo = en.cands, en.upTo
		}
	}
	return h, FitFound
}

// same returns the entry found for exactly this question (n nodes, raw
// duration d, earliest start e) at profile generation gen, or nil.
func (sh *shape) same(n int, d, e int64, gen int) *shapeEntry {
	for x := range sh.ents {
		en := &sh.ents[x]
		if en.n == n && en.d == d && en.e == e && en.gen == gen && en.st == FitFound {
			return en
		}
	}
	return nil
}

// insert records the outcome of a search for q whose job's own earliest
// start was e0 (the search itself may have started later, at a bound from
// this cache).
func (sh *shape) insert(q *query, e0 int64, res result, gen int) {
	ne := shapeEntry{n: q.n, d: q.d, e: e0, t: posInf, st: res.st, gen: gen, lim: q.latest}
	if res.st == FitFound {
		ne.t, ne.cands, ne.upTo, ne.nodes = res.t, res.cands, res.upTo, res.nodes
	}
	// Drop entries the new one makes useless: those it answers for at
	// least as far. "Beyond the latest" says nothing of later starts, so
	// it only replaces entries that searched no further (as lookup skips
	// it for a job that may start later; every limit is at most the
	// window's end, so one searched to it replaces all).
	out := sh.ents[:0]
	for _, x := range sh.ents {
		if x.n >= ne.n && x.d >= ne.d && x.e >= ne.e && (x.t < ne.t || (x.t == ne.t && x.upTo <= ne.upTo)) &&
			(ne.st != FitBeyondLatest || x.lim <= ne.lim) {
			continue
		}
		out = append(out, x)
	}
	sh.ents = out
	if len(sh.ents) >= maxShapeEntries {
		sh.ents = append(sh.ents[:0], sh.ents[1:]...)
	}
	sh.ents = append(sh.ents, ne)
}

// cachedShape returns the shape cache's entry for job j's query q (a
// fresh one that knows nothing for a query with a Spread: the cache is
// about per-node requests alone), with its count of capable nodes filled
// in, and sets q.allCapable from it.
func (r *run) cachedShape(j *Job, q *query) *shape {
	sh := &shape{capable: -1}
	if !q.hasSpread() {
		sh = r.shapeFor(j, q)
	}
	if sh.capable < 0 {
		sh.capable = r.capableCount(q)
		sh.allCapable = sh.capable == q.allowed.Count()
	}
	q.allCapable = sh.allCapable
	return sh
}

// capableCount is p.capable(q): how many allowed nodes' capacities hold
// q's request, counted as the allowed nodes among those whose capacity
// holds the request — a set computed once per pass for each request
// (q.fits reads the request alone), so that the many shapes of one
// request with different allowed sets each cost a word-wise count, not
// a scan of the allowed nodes.
func (r *run) capableCount(q *query) int {
	if q.never {
		return 0
	}
	p := r.p
	r.keyBuf = r.keyBuf[:0]
	for _, v := range q.req {
		r.keyBuf = binary.LittleEndian.AppendUint64(r.keyBuf, uint64(v))
	}
	set, ok := r.capSets[string(r.keyBuf)] // no allocation when found
	if !ok || set.Len() != p.n {
		set = topology.NewNodeSet(p.n)
		a := p.a
		for i := range p.n {
			if q.fits(p.caps[i*a : (i+1)*a]) {
				set.Add(i)
			}
		}
		r.capSets[string(r.keyBuf)] = set
	}
	return q.allowed.IntersectionCount(set)
}

// neverFits reports whether query q can never be met: too few allowed
// nodes can ever hold its request, or its spread.
func (r *run) neverFits(sh *shape, q *query) bool {
	return q.never || sh.capable < q.n || !r.p.spreadCapable(q)
}
