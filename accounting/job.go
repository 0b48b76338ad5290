package accounting

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/telemetry"
)

// JobState is a job's state as sacct reports it.
type JobState uint8

// Job states, with Slurm's names (see String).
const (
	StatePending     JobState = iota // PENDING
	StateRunning                     // RUNNING
	StateSuspended                   // SUSPENDED
	StateCompleted                   // COMPLETED
	StateCancelled                   // CANCELLED
	StateFailed                      // FAILED
	StateTimeout                     // TIMEOUT
	StateNodeFail                    // NODE_FAIL
	StatePreempted                   // PREEMPTED
	StateBootFail                    // BOOT_FAIL
	StateDeadline                    // DEADLINE
	StateOutOfMemory                 // OUT_OF_MEMORY
	StateRequeued                    // REQUEUED
	numJobStates
)

var jobStateNames = [...]string{"PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED",
	"TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REQUEUED"}

// String returns Slurm's name for s ("COMPLETED", "NODE_FAIL", …).
func (s JobState) String() string {
	if s < numJobStates {
		return jobStateNames[s]
	}
	return fmt.Sprintf("JobState(%d)", uint8(s))
}

// Finished reports whether s ends a run of the job (every state from
// COMPLETED on, REQUEUED included: the requeued run ended).
func (s JobState) Finished() bool { return s >= StateCompleted && s < numJobStates }

// MarshalText implements encoding.TextMarshaler.
func (s JobState) MarshalText() ([]byte, error) {
	if s >= numJobStates {
		return nil, fmt.Errorf("%w: job state %d", ErrInvalid, uint8(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *JobState) UnmarshalText(b []byte) error {
	v, err := ParseJobState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseJobState parses a state name as sacct prints it, case-insensitive;
// sacct's abbreviations (PD, R, S, CD, CA, F, TO, NF, PR, BF, DL, OOM, RQ)
// and suffixes such as "CANCELLED by 1000" are accepted.
func ParseJobState(s string) (JobState, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if i := strings.IndexByte(u, ' '); i > 0 {
		u = u[:i]
	}
	u = strings.TrimSuffix(u, "+")
	for i, n := range jobStateNames {
		if u == n {
			return JobState(i), nil
		}
	}
	abbrev := map[string]JobState{"PD": StatePending, "R": StateRunning, "S": StateSuspended, "CD": StateCompleted,
		"CA": StateCancelled, "F": StateFailed, "TO": StateTimeout, "NF": StateNodeFail, "PR": StatePreempted,
		"BF": StateBootFail, "DL": StateDeadline, "OOM": StateOutOfMemory, "RQ": StateRequeued}
	if st, ok := abbrev[u]; ok {
		return st, nil
	}
	return 0, fmt.Errorf("%w: job state %q", ErrInvalid, s)
}

// NodeGPUs lists the GPU device indices a job was given on one node.
type NodeGPUs struct {
	Node    string `json:"node"`
	Indices []int  `json:"indices"` // 0–63, ascending
}

// JobRecord is what the ledger keeps about a job: the fields sacct shows.
// Times are stored in whole seconds; a zero time means "not yet" (a
// pending job has no Start, a running one no End).
type JobRecord struct {
	ID          JobID  `json:"job_id"`
	ArrayJobID  JobID  `json:"array_job_id,omitempty"`  // 0 when not an array task
	ArrayTaskID uint32 `json:"array_task_id,omitempty"` // meaningful when ArrayJobID != 0
	Name        string `json:"name,omitempty"`
	Cluster     string `json:"cluster"`
	User        string `json:"user"`
	Account     string `json:"account"`
	// Assoc is the association the job ran under. PutJob fills it from
	// (Cluster, Account, User, Partition) when 0, and fills Account and
	// User from it when empty. Later moves of the association do not
	// change the record.
	Assoc       AssocID       `json:"assoc"`
	Partition   string        `json:"partition,omitempty"`
	QOS         string        `json:"qos,omitempty"`
	Reservation string        `json:"reservation,omitempty"`
	Submit      time.Time     `json:"submit"`
	Eligible    time.Time     `json:"eligible,omitzero"`
	Start       time.Time     `json:"start,omitzero"`
	End         time.Time     `json:"end,omitzero"`
	TimeLimit   time.Duration `json:"time_limit,omitempty"` // 0 = unlimited
	State       JobState      `json:"state"`
	ExitCode    int           `json:"exit_code"`             // 0–255
	ExitSignal  int           `json:"exit_signal,omitempty"` // 0–127
	// ReqTRES is what the job asked for; AllocTRES what it was given
	// (whole-node jobs: the whole nodes), which is what usage and rollups
	// charge. AllocTRES["billing"] is the billable TRES count.
	ReqTRES   TRES       `json:"req_tres,omitempty"`
	AllocTRES TRES       `json:"alloc_tres,omitempty"`
	NodeList  string     `json:"nodelist,omitempty"` // Slurm hostlist, e.g. "gpu[001-004]"
	GPUs      []NodeGPUs `json:"gpus,omitempty"`
	// Reason is the pending reason the job waited under longest.
	Reason   string `json:"reason,omitempty"`
	Priority int64  `json:"priority"` // priority at start
	// Flags are sacct's scheduling flags (SchedSubmit, SchedMain,
	// SchedBackfill) or others the caller records.
	Flags    []string `json:"flags,omitempty"`
	Restarts uint32   `json:"restarts,omitempty"` // requeue count
	// HetJobID and HetJobOffset identify a component of a heterogeneous
	// job, as Slurm's HetJobId and HetJobOffset: each component has a
	// record of its own (ID), HetJobID is the leader's ID and sacct shows
	// the component as HetJobID+HetJobOffset ("123+1"). Zero HetJobID:
	// not a heterogeneous job.
	HetJobID     JobID  `json:"het_job_id,omitempty"`
	HetJobOffset uint32 `json:"het_job_offset,omitempty"`
	// Usage is what the job did with its allocation over all its runs:
	// its GPU and host readings folded into one aggregate (package
	// telemetry), which sacct shows as TRESUsageInAve/TRESUsageInMax
	// (gres/gpuutil, gres/gpumem) and ConsumedEnergy. The zero Usage: no
	// readings arrived (the job is "unmeasured"). Its times are stored in
	// whole seconds like the record's.
	Usage telemetry.Usage `json:"usage,omitzero"`
	// LaunchAttempts counts the job's runs the scheduler launched (each
	// start, requeued ones included); LaunchFailures those whose launch
	// failed (the prolog or the node's daemon refused, Slurm's
	// "launch failed requeued held"). LaunchFailures ≤ LaunchAttempts.
	LaunchAttempts int `json:"launch_attempts,omitempty"`
	LaunchFailures int `json:"launch_failures,omitempty"`
	// LostGPUSeconds is the GPU-seconds of work not kept: each run ended
	// by a requeue, a preemption without checkpoint, a node failure, a
	// launch failure, its time limit or a non-zero exit loses the
	// GPU-seconds allocated since its last checkpoint (or its start).
	LostGPUSeconds float64 `json:"lost_gpu_seconds,omitempty"`
	// PriorGPUSeconds is the GPU-seconds allocated to the job's earlier
	// runs (those ended by a requeue), which Start–End no longer covers
	// because the ledger keeps one record per job: the job's allocated
	// GPU-seconds are AllocTRES["gres/gpu"] × Elapsed + PriorGPUSeconds.
	PriorGPUSeconds float64 `json:"prior_gpu_seconds,omitempty"`
	// Quality is the allocation quality score of the job's latest run,
	// the scheduler's Allocation.Quality in (0, 1] (1: the best placement
	// the topology allows); 0: not scored.
	Quality float64 `json:"alloc_quality,omitempty"`
}

// Elapsed returns End-Start, now-Start for a running job, or 0.
func (j JobRecord) Elapsed(now time.Time) time.Duration {
	switch {
	case j.Start.IsZero():
		return 0
	case !j.End.IsZero():
		return max(0, j.End.Sub(j.Start))
	}
	return max(0, now.Sub(j.Start))
}

// Validate checks the record: an ID, a cluster, names, times ordered
// (Submit ≤ Eligible ≤ Start ≤ End when set), a finished state only with an
// End, TRES sets, GPU indices.
func (j JobRecord) Validate() error {
	if j.ID == 0 {
		return fmt.Errorf("%w: job ID is 0", ErrInvalid)
	}
	f := func(err error) error { return fmt.Errorf("job %d: %w", j.ID, err) }
	for _, c := range []struct {
		field, v string
		opt      bool
	}{{"cluster", j.Cluster, false}, {"user", j.User, true}, {"account", j.Account, true},
		{"partition", j.Partition, true}, {"qos", j.QOS, true}, {"reservation", j.Reservation, true}} {
		if err := validName(c.field, c.v, c.opt); err != nil {
			return f(err)
		}
	}
	for _, c := range []struct{ field, v string }{{"name", j.Name}, {"nodelist", j.NodeList}, {"reason", j.Reason}} {
		if err := validText(c.field, c.v); err != nil {
			return f(err)
		}
	}
	for _, fl := range j.Flags {
		if err := validName("flag", fl, false); err != nil {
			return f(err)
		}
	}
	if err := validTime("submit", j.Submit, false); err != nil {
		return f(err)
	}
	prev, prevName := j.Submit, "submit"
	for _, c := range []struct {
		field string
		t     time.Time
	}{{"eligible", j.Eligible}, {"start", j.Start}, {"end", j.End}} {
		if err := validTime(c.field, c.t, true); err != nil {
			return f(err)
		}
		if c.t.IsZero() {
			continue
		}
		if c.t.Before(prev) {
			return f(fmt.Errorf("%w: %s %v is before %s %v", ErrInvalid, c.field, c.t, prevName, prev))
		}
		prev, prevName = c.t, c.field
	}
	if j.State >= numJobStates {
		return f(fmt.Errorf("%w: state %d", ErrInvalid, uint8(j.State)))
	}
	if j.State.Finished() != !j.End.IsZero() {
		return f(fmt.Errorf("%w: state %v with end %v (a finished state needs an end time, and only it)", ErrInvalid, j.State, j.End))
	}
	if (j.State == StateRunning || j.State == StateSuspended) && j.Start.IsZero() {
		return f(fmt.Errorf("%w: state %v without a start time", ErrInvalid, j.State))
	}
	if j.TimeLimit < 0 {
		return f(fmt.Errorf("%w: time limit %v is negative", ErrInvalid, j.TimeLimit))
	}
	if j.ExitCode < 0 || j.ExitCode > 255 || j.ExitSignal < 0 || j.ExitSignal > 127 {
		return f(fmt.Errorf("%w: exit code %d:%d", ErrInvalid, j.ExitCode, j.ExitSignal))
	}
	if err := j.ReqTRES.Validate(); err != nil {
		return f(fmt.Errorf("req_tres: %w", err))
	}
	if err := j.AllocTRES.Validate(); err != nil {
		return f(fmt.Errorf("alloc_tres: %w", err))
	}
	if err := validGPUs(j.GPUs); err != nil {
		return f(err)
	}
	if err := j.validGoodput(); err != nil {
		return f(err)
	}
	return nil
}

func validGPUs(gs []NodeGPUs) error {
	for _, g := range gs {
		if err := validName("gpu node", g.Node, false); err != nil {
			return err
		}
		for i, x := range g.Indices {
			if x < 0 || x > 63 {
				return fmt.Errorf("%w: GPU index %d on %s is outside 0–63", ErrInvalid, x, g.Node)
			}
			if i > 0 && g.Indices[i-1] >= x {
				return fmt.Errorf("%w: GPU indices on %s are not strictly ascending: %v", ErrInvalid, g.Node, g.Indices)
			}
		}
	}
	return nil
}

// waitStart is when j began waiting as an eligible job: Eligible, or
// Submit when it has none. Rollups and ClusterUtilization count eligible
// wait from here.
func (j *JobRecord) waitStart() time.Time {
	if j.Eligible.IsZero() {
		return j.Submit
	}
	return j.Eligible
}

// waitTRES is what j waited for: ReqTRES, or AllocTRES when it has none.
func (j *JobRecord) waitTRES() TRES {
	if len(j.ReqTRES) == 0 {
		return j.AllocTRES
	}
	return j.ReqTRES
}

func cloneGPUs(gs []NodeGPUs) []NodeGPUs {
	if gs == nil {
		return nil
	}
	out := make([]NodeGPUs, len(gs))
	for i, g := range gs {
		out[i] = NodeGPUs{Node: g.Node, Indices: slices.Clone(g.Indices)}
	}
	return out
}

// StepRecord is a job step as sacct lists it under its job.
type StepRecord struct {
	Job       JobID         `json:"job_id"`
	Step      string        `json:"step"` // "batch", "extern", "0", "1", …
	Name      string        `json:"name,omitempty"`
	Start     time.Time     `json:"start"`
	End       time.Time     `json:"end,omitzero"`
	State     JobState      `json:"state"`
	ExitCode  int           `json:"exit_code"`
	NodeList  string        `json:"nodelist,omitempty"`
	AllocTRES TRES          `json:"alloc_tres,omitempty"`
	CPUTime   time.Duration `json:"cpu_time,omitempty"` // user+system CPU time consumed
	MaxRSS    int64         `json:"max_rss,omitempty"`  // bytes
	// Usage is the step's GPU and host readings folded (as JobRecord's
	// Usage, for this step alone; sacct's TRESUsageIn* of the step).
	Usage telemetry.Usage `json:"usage,omitzero"`
}

// Validate checks the step record.
func (s StepRecord) Validate() error {
	if s.Job == 0 {
		return fmt.Errorf("%w: step job ID is 0", ErrInvalid)
	}
	f := func(err error) error { return fmt.Errorf("step %d.%s: %w", s.Job, s.Step, err) }
	if err := validName("step", s.Step, false); err != nil {
		return f(err)
	}
	for _, c := range []struct{ field, v string }{{"name", s.Name}, {"nodelist", s.NodeList}} {
		if err := validText(c.field, c.v); err != nil {
			return f(err)
		}
	}
	if err := validTime("start", s.Start, false); err != nil {
		return f(err)
	}
	if err := validTime("end", s.End, true); err != nil {
		return f(err)
	}
	if !s.End.IsZero() && s.End.Before(s.Start) {
		return f(fmt.Errorf("%w: end %v before start %v", ErrInvalid, s.End, s.Start))
	}
	if s.State >= numJobStates || s.ExitCode < 0 || s.ExitCode > 255 || s.CPUTime < 0 || s.MaxRSS < 0 {
		return f(fmt.Errorf("%w: state %d, exit code %d, cpu time %v or max rss %d out of range", ErrInvalid, s.State, s.ExitCode, s.CPUTime, s.MaxRSS))
	}
	if err := s.AllocTRES.Validate(); err != nil {
		return f(err)
	}
	if err := validUsage(s.Usage); err != nil {
		return f(err)
	}
	return nil
}

// JobQuery selects job records. Zero fields match everything.
type JobQuery struct {
	// From and To select jobs active in [From, To): eligible, running or
	// ending in the window, as sacct -S/-E does (a job whose Submit is
	// before To and whose End is zero or after From). Zero From/To leave
	// that side open.
	From, To time.Time
	Cluster  string
	User     string
	Account  string
	States   []JobState // any of these
	// OpenOnly selects jobs without an End (pending, running, suspended).
	OpenOnly bool
}

func (q JobQuery) match(j *JobRecord) bool {
	if !q.To.IsZero() && !j.Submit.Before(q.To) {
		return false
	}
	if !q.From.IsZero() && !j.End.IsZero() && !j.End.After(q.From) {
		return false
	}
	if q.Cluster != "" && j.Cluster != q.Cluster || q.User != "" && j.User != q.User ||
		q.Account != "" && j.Account != q.Account || q.OpenOnly && !j.End.IsZero() {
		return false
	}
	return len(q.States) == 0 || slices.Contains(q.States, j.State)
}
