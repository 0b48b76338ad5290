package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// Job is one workload entry: what was asked for, when, and how long it
// really runs.
type Job struct {
	// Spec is the request submitted to the scheduler. Its TimeLimit is the
	// user's estimate, which the scheduler plans with and enforces.
	Spec scheduler.JobSpec
	// Submit is the arrival time.
	Submit time.Time
	// Runtime is how long the job runs once started. A run time up to the
	// time limit completes normally (COMPLETED, or FAILED with a non-zero
	// ExitCode); a longer one is ended by the scheduler at the limit
	// (TIMEOUT).
	Runtime time.Duration
	// ExitCode is reported when the job finishes before its limit.
	ExitCode int
	// ExitUnknown says that the workload does not know how the job ended
	// (an SWF status of -1): it replays with ExitCode 0, as a job that did
	// its work, and when it runs to its end the scheduler's COMPLETED is
	// counted in Summary.Unknown, not in Completed (nor in Failed).
	ExitUnknown bool
	// Profile is the job's GPU utilisation over its work (zero: unknown,
	// unmeasured), from which its busy and useful GPU-hours and its
	// energy are computed (JobResult.BusyGPUHours, Summary.Goodput). The
	// synthetic generator draws one per job; WithProfiles joins a GPU
	// workload file onto any Source.
	Profile Profile
	// Data is the caller's own record of the job (the swf package stores
	// the trace record here). The simulator carries it untouched into the
	// job's JobResult.
	Data any
}

// Source yields workload jobs in non-decreasing submit order. Next returns
// false at the end; an error stops the simulation.
type Source interface {
	Next() (Job, bool, error)
}

// SliceSource is a Source over a slice already sorted by submit time.
type SliceSource struct {
	Jobs []Job
	i    int
}

// Pos returns how many jobs Next has returned.
func (s *SliceSource) Pos() int { return s.i }

// Next returns the next job of the slice.
func (s *SliceSource) Next() (Job, bool, error) {
	if s.i >= len(s.Jobs) {
		return Job{}, false, nil
	}
	s.i++
	return s.Jobs[s.i-1], true, nil
}

// PurgeAge is the MinJobAge of the clusters the simulator builds
// (SyntheticCluster, swf.Machine.Config): Slurm's default, 5 minutes. A
// finished job's record then leaves the scheduler (the simulator keeps its
// own JobResult, unless Options.DiscardJobs), so a replay of millions of
// jobs keeps only the jobs in flight plus a few dozen bytes per finished
// job: its outcome, kept for dependencies.
const PurgeAge = 5 * time.Minute

// JobResult is what happened to one workload job.
type JobResult struct {
	// Index is the job's position among the jobs Run read from the source
	// (0-based, rejected jobs included).
	Index int
	// ID is the scheduler's ID for the job.
	ID scheduler.JobID
	// Job is the workload entry, as read from the source.
	Job Job
	// Start and End are the simulated start and end times.
	Start, End time.Time
	// State is the job's final state (COMPLETED, FAILED or TIMEOUT in a
	// simulation without failures).
	State scheduler.JobState
	// Nodes, CPUs and GPUs are what the job was allocated: whole nodes
	// count all their CPUs and GPUs.
	Nodes      int
	CPUs, GPUs int64
	// FirstExpectedStart is the first start estimate the scheduler gave
	// the job: its Cycle.Pending ExpectedStart in the first cycle where
	// that was set (zero when it never was: no backfill, or the job
	// started in the first cycle that could start it). See ETAError.
	FirstExpectedStart time.Time
	// Preemptions counts how many times the job was preempted (any
	// action); Restarts how many of those requeued it, each time ending
	// a run that it later started again (Start and End are those of its
	// last run).
	Preemptions, Restarts int
	// LostGPUSeconds and LostCPUSeconds are the work preemption destroyed
	// in the job (Preemption.LostGPUSeconds and LostCPUSeconds summed):
	// the resources × the time since its last checkpoint at each
	// preemption. A suspended job loses none.
	LostGPUSeconds, LostCPUSeconds float64
	// RequeuedCPUHours and RequeuedGPUHours are the resources allocated
	// to the job's earlier runs, those a requeue ended (CPUs × run time
	// of each). They count in Summary.CPUHours and GPUHours.
	RequeuedCPUHours, RequeuedGPUHours float64
	// Suspended is how long the last run spent SUSPENDED by preemption:
	// its CPUs were lent (they are not counted in CPUHours for that time)
	// while it kept its GPUs.
	Suspended time.Duration
	// BusyGPUHours, UsefulGPUHours, LostWorkGPUHours and EnergyKWh are
	// what the job's Profile says its runs (requeued ones included) did
	// with their GPUs, zero when it has none (see Goodput for the
	// definitions): the busy GPU-hours (each run's GPUs × the profile
	// integrated over the part of the work it covered), those of the work
	// kept, the allocated GPU-hours of the work not kept, and the energy
	// of the allocated GPUs under Options.Power.
	BusyGPUHours, UsefulGPUHours, LostWorkGPUHours float64
	EnergyKWh                                      float64
}

// Capacity is the size of the simulated cluster.
type Capacity struct {
	Nodes      int
	CPUs, GPUs int64
}

// Result is the outcome of a run.
type Result struct {
	// Jobs lists every job that ran, in order of completion (empty with
	// Options.DiscardJobs).
	Jobs []JobResult
	// Rejected counts workload jobs the scheduler refused at submit.
	Rejected int
	// Cycles counts scheduling cycles.
	Cycles int
	// Start is the first arrival and End the last event: the span over
	// which utilisation is measured.
	Start, End time.Time
	// Capacity is the cluster's size.
	Capacity Capacity
	// Series is queue length and resource use over time (see Sample).
	Series []Sample
	// Explain is the explanation series, one sample per grid step at
	// most (empty unless Options.ExplainEvery is set).
	Explain []ExplainSample
	// Summary aggregates the per-job metrics and the series.
	Summary Summary
}

// ErrStuck reports a simulation that ended with jobs still pending while
// nothing was running and nothing was left to arrive: they can never start.
var ErrStuck = errors.New("sim: jobs pending with nothing running or arriving")

// ErrInvalidOptions reports Options that Run rejects.
var ErrInvalidOptions = errors.New("sim: invalid options")

// Run replays src on s until every job has ended, following the event
// order of the package documentation. s should be fresh (no jobs yet); its
// clock is driven by the workload's submit times.
func Run(s *scheduler.Scheduler, src Source, opt Options) (Result, error) {
	switch {
	case opt.Interval < 0:
		return Result{}, fmt.Errorf("%w: Interval %v is negative", ErrInvalidOptions, opt.Interval)
	case opt.SeriesStep < 0:
		return Result{}, fmt.Errorf("%w: SeriesStep %v is negative", ErrInvalidOptions, opt.SeriesStep)
	case opt.ExplainEvery < 0:
		return Result{}, fmt.Errorf("%w: ExplainEvery %v is negative", ErrInvalidOptions, opt.ExplainEvery)
	}
	if err := checkTelemetryOptions(s, opt); err != nil {
		return Result{}, err
	}
	if opt.Power == (PowerModel{}) {
		opt.Power = DefaultPowerModel()
	} else if err := opt.Power.Validate(); err != nil {
		return Result{}, fmt.Errorf("%w: Power: %w", ErrInvalidOptions, err)
	}
	r := newRunner(s, src, opt)
	err := r.run()
	r.res.Summary = r.col.summary(r.res.Rejected, r.res.Start, r.res.End)
	if r.exp != nil {
		r.res.Explain, r.res.Summary.Explain = r.exp.finish(r.res.End)
	}
	r.res.Series = r.series.finish(r.res.End)
	if r.tel != nil {
		r.res.Summary.Telemetry = r.tel.sum
	}
	return r.res, err
}

// live is what the runner keeps about a submitted job until it ends.
type live struct {
	index int
	job   Job
	// gen numbers the job's runs: events carry the gen of the run that
	// queued them, and those of a run that preemption ended or suspended
	// are skipped.
	gen uint32
	// pendingETA is the first expected start the cycles gave the job
	// while it has been pending since its submission or last requeue
	// (zero: none yet); it becomes eta when the job starts.
	pendingETA time.Time
	// set when the job starts
	eta        time.Time // first expected start
	start      time.Time
	deadline   time.Time // when the scheduler ends the run at its limit
	nodes      int
	cpus, gpus int64
	// ranSince is when the run last started or resumed; ran the running
	// time of the run before that (a run suspended and resumed).
	ranSince time.Time
	ran      time.Duration
	// evAt and evKind are the run's queued end event (evFinish or
	// evExpire), kept to re-queue it after a suspension.
	evAt   time.Time
	evKind eventKind
	// suspendedAt is when the job was suspended (zero while it is not);
	// suspended its total suspended time in this run.
	suspendedAt time.Time
	suspended   time.Duration
	// killAt is set for a preemption victim in its grace time: the cycle
	// at killAt ends (CANCEL) or requeues it.
	killAt time.Time
	// inRun is set from a start until the run ends (requeue or end).
	inRun bool
	// keep is the work of the current run up to its last checkpoint, as
	// of its last preemption; done the work kept from earlier runs after
	// requeues: the next run needs Runtime − done.
	keep, done time.Duration
	// preemption bookkeeping, copied into the JobResult
	preemptions, restarts        int
	lostGPUSecs, lostCPUSecs     float64
	requeuedCPUHs, requeuedGPUHs float64
	// goodput bookkeeping of the runs ended so far (see runGoodput)
	gp goodputAcc
	// telemetry (Options.TelemetryEvery): the nodes of the current run
	// the sampler holds it on (a buffer kept across reuse), whether any
	// run of the job was sampled
	telNodes   []int
	telSampled bool
}

// worked returns the running time of lj's current run at now, its
// suspensions aside (a suspended run's is what it ran before).
func (lj *live) worked(now time.Time) time.Duration {
	if !lj.suspendedAt.IsZero() {
		return lj.ran
	}
	return lj.ran + now.Sub(lj.ranSince)
}

type runner struct {
	s   *scheduler.Scheduler
	src Source
	opt Options
	res Result
	q   eventQueue
	// jobs holds the record of every submitted job until it ends. The
	// records are reused: ended clears a record and puts it on free,
	// where admit takes it for a later job, so a replay allocates only
	// as many records as jobs are ever in flight at once. No pointer to
	// a record is kept once ended has returned.
	jobs   map[scheduler.JobID]*live
	free   []*live
	gpuID  gres.ID
	hasGPU bool
	col    collector
	series seriesRecorder
	exp    *explainer  // nil unless Options.ExplainEvery
	tel    *telSampler // nil unless Options.TelemetryEvery

	next     Job
	haveNext bool
	arrivals int
	// state after the last cycle, for the series
	pending, running int
	busyCPUs         int64
	busyGPUs         int64
	nextTick         time.Time // zero: no periodic cycle due
}

func newRunner(s *scheduler.Scheduler, src Source, opt Options) *runner {
	r := &runner{s: s, src: src, opt: opt, jobs: make(map[scheduler.JobID]*live)}
	r.gpuID, r.hasGPU = s.Registry().Lookup("gres/gpu")
	for _, n := range s.Nodes() {
		r.res.Capacity.Nodes++
		r.res.Capacity.CPUs += n.Capacity.At(gres.CPU)
		if r.hasGPU {
			r.res.Capacity.GPUs += n.Capacity.At(r.gpuID)
		}
	}
	r.col = newCollector(r.res.Capacity, opt.Power)
	r.series = seriesRecorder{off: opt.DiscardSeries, rs: resampler{step: opt.SeriesStep}}
	return r
}

func (r *runner) read() error {
	prev, had := r.next.Submit, r.haveNext
	j, ok, err := r.src.Next()
	if err != nil {
		return fmt.Errorf("sim: reading workload job %d: %w", r.arrivals, err)
	}
	if ok {
		if err := j.Profile.Validate(); err != nil {
			return fmt.Errorf("sim: workload job %d (%q): %w", r.arrivals, j.Spec.Name, err)
		}
	}
	if ok && had && j.Submit.Before(prev) {
		return fmt.Errorf("sim: workload job %d submitted at %s, before the previous job (%s)",
			r.arrivals, j.Submit.Format(time.RFC3339), prev.Format(time.RFC3339))
	}
	r.next, r.haveNext = j, ok
	return nil
}

func (r *runner) run() error {
	r.haveNext = false
	if err := r.read(); err != nil {
		return err
	}
	r.res.Start = r.next.Submit
	r.res.End = r.next.Submit
	if r.opt.ExplainEvery > 0 {
		r.exp = newExplainer(r.opt.ExplainEvery, r.res.Start, r.res.Capacity.GPUs > 0)
	}
	if r.opt.TelemetryEvery > 0 {
		r.tel = newTelSampler(r.s, r.opt, r.res.Start)
	}
	for r.haveNext || r.q.Len() > 0 {
		now := r.nextInstant()
		if r.tel.due(now) && !r.otherDue(now) {
			// A telemetry instant only: a cycle only if a run ended.
			acted, err := r.sampleTelemetry(now)
			if err != nil {
				return err
			}
			if !acted {
				continue
			}
			if r.exp != nil {
				r.exp.sample(r.s, now)
			}
			if err := r.cycle(now); err != nil {
				return err
			}
			continue
		}
		if r.exp != nil {
			r.exp.sample(r.s, now)
		}
		if err := r.complete(now); err != nil {
			return err
		}
		if r.tel.due(now) {
			if _, err := r.sampleTelemetry(now); err != nil {
				return err
			}
		}
		if err := r.arrive(now); err != nil {
			return err
		}
		if err := r.cycle(now); err != nil {
			return err
		}
	}
	return nil
}

// complete applies the completions due at now (by job ID) and discards
// the expiry and wake-up markers, which only make a cycle happen.
func (r *runner) complete(now time.Time) error {
	for r.q.Len() > 0 && !r.q[0].at.After(now) {
		ev := r.q.pop()
		if ev.kind != evFinish {
			continue
		}
		lj, ok := r.jobs[ev.id]
		if !ok || lj.gen != ev.gen || !lj.suspendedAt.IsZero() {
			continue // from a run that preemption ended or suspended
		}
		if err := r.s.Finish(now, ev.id, lj.job.ExitCode); err != nil {
			return fmt.Errorf("sim: finishing job %d at %s: %w", ev.id, now.Format(time.RFC3339), err)
		}
		// Finish's contract: COMPLETED for exit code 0, FAILED otherwise.
		st := scheduler.JobCompleted
		if lj.job.ExitCode != 0 {
			st = scheduler.JobFailed
		}
		if err := r.ended(ev.id, lj, now, st); err != nil {
			return err
		}
	}
	return nil
}

// arrive submits every job that arrives at or before now, in workload order.
func (r *runner) arrive(now time.Time) error {
	for r.haveNext && !r.next.Submit.After(now) {
		j := &r.next // read replaces it only at the end of the iteration
		id, err := r.s.Submit(now, j.Spec)
		if err != nil {
			if r.opt.OnSubmitError != nil {
				if err := r.opt.OnSubmitError(*j, err); err != nil {
					return err
				}
			}
			r.res.Rejected++
		} else {
			r.jobs[id] = r.admit(r.arrivals, j)
			if r.opt.FairShare != nil {
				r.opt.FairShare.submitted(now, j.Spec)
			}
			if b := j.Spec.BeginTime; b.After(now) {
				r.q.push(event{at: b, id: id, kind: evWake})
			}
		}
		r.arrivals++
		if err := r.read(); err != nil {
			return err
		}
	}
	return nil
}

// admit returns a fresh record for the workload job j, the index-th read:
// one from the free list when there is one.
func (r *runner) admit(index int, j *Job) *live {
	var lj *live
	if n := len(r.free); n > 0 {
		lj, r.free = r.free[n-1], r.free[:n-1]
	} else {
		lj = new(live)
	}
	*lj = live{index: index, job: *j, telNodes: lj.telNodes[:0]}
	return lj
}

// cycle runs one scheduling cycle at now and applies its decisions.
func (r *runner) cycle(now time.Time) error {
	cyc, err := r.s.Schedule(now)
	if err != nil {
		return fmt.Errorf("sim: cycle at %s: %w", now.Format(time.RFC3339), err)
	}
	r.res.Cycles++
	r.res.End = now
	for _, e := range cyc.Ended {
		lj, ok := r.jobs[e.Job]
		if !ok {
			return fmt.Errorf("sim: cycle at %s ended job %d, which the simulator does not run", now.Format(time.RFC3339), e.Job)
		}
		// The cycle ends a job at its deadline, start + time limit (the
		// running time, suspensions aside), or a preemption victim whose
		// grace time is over at killAt.
		end := lj.deadline
		if !lj.killAt.IsZero() && e.Reason == policy.ReasonPreempted {
			end = lj.killAt
			if e.State == scheduler.JobPending {
				r.requeued(e.Job, lj, end)
				continue
			}
		}
		if err := r.ended(e.Job, lj, end, e.State); err != nil {
			return err
		}
	}
	for _, id := range cyc.Resumed {
		if err := r.resumed(now, id); err != nil {
			return err
		}
	}
	for _, p := range cyc.Preemptions {
		if err := r.preempted(now, p); err != nil {
			return err
		}
	}
	for _, st := range cyc.Starts {
		if err := r.started(now, st); err != nil {
			return err
		}
	}
	r.pending = len(cyc.Pending)
	for _, p := range cyc.Pending {
		if !p.ExpectedStart.IsZero() {
			if lj, ok := r.jobs[p.Job]; ok && lj.pendingETA.IsZero() {
				lj.pendingETA = p.ExpectedStart
			}
		}
	}
	if r.exp != nil {
		r.exp.observe(now, cyc.Pending)
	}
	if r.tel != nil {
		r.tel.countIdleNotices(cyc.Decisions)
	}
	smp := sampleOf(now, r.res.Capacity, r.pending, r.running, r.busyCPUs, r.busyGPUs)
	r.col.observe(smp)
	r.series.observe(smp)
	if r.opt.OnCycle != nil {
		r.opt.OnCycle(r.s, cyc)
	}
	r.nextTick = time.Time{}
	if r.pending > 0 && r.opt.Interval > 0 {
		r.nextTick = now.Add(r.opt.Interval)
	}
	if r.pending > 0 && !r.haveNext && r.q.Len() == 0 && (r.opt.Interval == 0 || r.running == 0) {
		return fmt.Errorf("%w: %d job(s), first %d (%s)", ErrStuck, r.pending, cyc.Pending[0].Job, cyc.Pending[0].Reason)
	}
	return nil
}

// started records a start decision and queues the job's end.
func (r *runner) started(now time.Time, st scheduler.Start) error {
	lj, ok := r.jobs[st.Job]
	if !ok {
		return fmt.Errorf("sim: cycle at %s started job %d, which the simulator did not submit", now.Format(time.RFC3339), st.Job)
	}
	if lj.inRun {
		return fmt.Errorf("sim: cycle at %s started job %d, which is already running", now.Format(time.RFC3339), st.Job)
	}
	cpus, gpus := r.allocated(st.Alloc)
	limit := st.TimeLimit
	lj.start, lj.nodes, lj.cpus, lj.gpus = now, len(st.Alloc.Nodes), cpus, gpus
	lj.deadline = now.Add(limit)
	lj.gen++
	lj.ranSince, lj.ran = now, 0
	lj.suspendedAt, lj.suspended, lj.killAt = time.Time{}, 0, time.Time{}
	lj.inRun, lj.keep = true, 0
	if !lj.pendingETA.IsZero() {
		lj.eta, lj.pendingETA = lj.pendingETA, time.Time{}
	}
	r.occupy(now, st.Job, &lj.job.Spec, cpus, gpus)
	if r.tel != nil && gpus > 0 {
		r.tel.hold(now, st.Job, lj, st.Alloc)
	}
	if need := lj.job.Runtime - lj.done; need <= limit {
		lj.evAt, lj.evKind = now.Add(max(need, 0)), evFinish
	} else {
		lj.evAt, lj.evKind = now.Add(limit), evExpire
	}
	r.q.push(event{at: lj.evAt, id: st.Job, kind: lj.evKind, gen: lj.gen})
	return nil
}

// occupy counts a run that starts or resumes at now on cpus and gpus
// (the GPUs it does not hold yet) as running, and charges fair-share.
func (r *runner) occupy(now time.Time, id scheduler.JobID, spec *scheduler.JobSpec, cpus, gpus int64) {
	r.busyCPUs += cpus
	r.busyGPUs += gpus
	r.running++
	if r.opt.FairShare != nil {
		r.opt.FairShare.started(now, id, *spec, cpus)
	}
}

// release undoes occupy for a run that ends or is suspended at end.
func (r *runner) release(end time.Time, id scheduler.JobID, cpus, gpus int64) {
	r.busyCPUs -= cpus
	r.busyGPUs -= gpus
	r.running--
	if r.opt.FairShare != nil {
		r.opt.FairShare.ended(end, id)
	}
}

func (r *runner) allocated(a scheduler.Allocation) (cpus, gpus int64) {
	for _, na := range a.Nodes {
		cpus += na.TRES.At(gres.CPU)
		if r.hasGPU {
			gpus += na.TRES.At(r.gpuID)
		}
	}
	return cpus, gpus
}

// ended records the result of job id (lj, its record), which has just
// ended at end in state st, and frees the record. (The simulator tracks
// starts itself rather than taking a snapshot of every job from the
// scheduler; a test checks that both agree.)
func (r *runner) ended(id scheduler.JobID, lj *live, end time.Time, st scheduler.JobState) error {
	if lj.inRun {
		lj.runGoodput(end, lostState(st))
	}
	jr := JobResult{Index: lj.index, ID: id, Job: lj.job, Start: lj.start, End: end, State: st,
		Nodes: lj.nodes, CPUs: lj.cpus, GPUs: lj.gpus, FirstExpectedStart: lj.eta,
		Preemptions: lj.preemptions, Restarts: lj.restarts,
		LostGPUSeconds: lj.lostGPUSecs, LostCPUSeconds: lj.lostCPUSecs,
		RequeuedCPUHours: lj.requeuedCPUHs, RequeuedGPUHours: lj.requeuedGPUHs, Suspended: lj.suspended}
	lj.gp.fill(&jr, r.opt.Power)
	if r.tel != nil {
		r.telemetryEnded(id, lj)
	}
	delete(r.jobs, id)
	buf := lj.telNodes[:0]
	*lj = live{telNodes: buf} // drop its references (the job's Data) before reuse
	r.free = append(r.free, lj)
	r.release(end, id, jr.CPUs, jr.GPUs)
	r.col.add(&jr)
	if !r.opt.DiscardJobs {
		r.res.Jobs = append(r.res.Jobs, jr)
	}
	if r.opt.OnJobEnd != nil {
		return r.opt.OnJobEnd(jr)
	}
	return nil
}
