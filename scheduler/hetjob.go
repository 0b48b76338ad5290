package scheduler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/policy"
)

// Heterogeneous jobs, as Slurm's (sbatch with ':'-separated components):
//
//   - Every component is a job of its own, with its own request
//     (partition, QOS, nodes, tasks, GRES …) and its own job ID: the
//     components of one submission get consecutive IDs, the first
//     (offset 0) is the leader, and each carries HetJobID (the leader's
//     ID) and HetJobOffset. squeue and sacct show them as 123+0, 123+1.
//   - The submission is accepted or refused whole (one SubmitEvent).
//     Each component is counted as a job of its own by the limits
//     (MaxSubmitJobs, MaxJobs, TRES limits) and its QOS and association
//     are its own; as the components start together, the job starts
//     only where every concurrent limit and license pool holds them all
//     at once (the sum of what they add, see hetlimits.go).
//   - As in Slurm, heterogeneous jobs are started by the backfill
//     scheduler only (the main pass starts jobs one at a time and cannot
//     start all the components at once): the main pass checks each
//     component's own constraints (hold, begin time, dependency,
//     partition state and limits) and leaves it pending, holding back
//     its partition (or reservation) as a job waiting for resources
//     does (unless the pass may not plan the job now: hetMayStart),
//     so that the jobs behind it are the backfill pass's, which
//     keeps the job's reservation (Slurm's main scheduler holds nothing
//     back for them; see the package doc). The backfill pass plans the job
//     as one: its turn is that of its first component in queue order
//     (as Slurm's bf_hetjob_prio=max), and the planner's co-start search
//     (backfill.EarliestCoFit) finds the earliest time at which every
//     component fits at once; the components then start in that same
//     cycle, all of them or none (their reservations likewise all start
//     at that time). A submission therefore needs Config.Backfill.
//   - Cancel of the leader cancels every component; a pending
//     component other than the leader cannot be cancelled alone (only
//     the whole job, as scancel refuses), a running one can.
//   - When a component goes back to the queue (requeued after a launch
//     failure, a node failure, preemption or RequeueJob), the next cycle
//     requeues its running siblings too, so the job starts again whole
//     (Cycle.Ended lists them, pending with the component's reason).
//   - A dependency on the leader's ID stands for every component, as a
//     dependency on a job array's ID stands for its tasks.

// hetJob is the scheduler's state of a heterogeneous job: its components
// in offset order (component k has ID leader + k; nil once forgotten,
// see Config.MinJobAge).
type hetJob struct {
	comps []*job
}

// SubmitHet submits a heterogeneous job: specs are its components in
// order (sbatch's ':'-separated groups), at least two. It returns the
// components' IDs, consecutive, the first being the leader's and the
// HetJobID of all. The job is accepted whole or not at all: a component
// that Submit would refuse refuses the job, with an error naming the
// component. It needs backfill (Config.Backfill), which alone starts
// heterogeneous jobs, as in Slurm; components may not be job arrays or
// name an advance reservation.
func (s *Scheduler) SubmitHet(now time.Time, specs []JobSpec) ([]JobID, error) {
	if len(specs) < 2 {
		return nil, fmt.Errorf("%w: a heterogeneous job has at least two components, got %d", ErrInvalidJob, len(specs))
	}
	r, err := s.Apply(now, SubmitEvent{Spec: specs[0], Components: specs[1:]})
	return r.Jobs, err
}

// submitHetEvent applies a SubmitEvent with Components.
func (s *Scheduler) submitHetEvent(now time.Time, e SubmitEvent) (Result, error) {
	if e.Array != "" {
		return Result{}, fmt.Errorf("%w: a heterogeneous job cannot be a job array (Array %q)", ErrInvalidJob, e.Array)
	}
	if s.bf == nil {
		return Result{}, fmt.Errorf("%w: heterogeneous jobs are started by the backfill scheduler only: the scheduler has no Config.Backfill", ErrInvalidJob)
	}
	specs := make([]JobSpec, 0, 1+len(e.Components))
	specs = append(append(specs, e.Spec), e.Components...)
	ids, err := s.submitHet(now, specs)
	if err != nil {
		return Result{}, err
	}
	return Result{Job: ids[0], Jobs: ids}, nil
}

// submitHet queues the components of a heterogeneous job, or none.
func (s *Scheduler) submitHet(now time.Time, specs []JobSpec) ([]JobID, error) {
	if err := s.tick(now); err != nil {
		return nil, err
	}
	leader := s.nextID
	jobs := make([]*job, len(specs))
	for k, spec := range specs {
		if spec.Reservation != "" {
			return nil, fmt.Errorf("%w: component %d: Reservation %q: heterogeneous jobs in advance reservations are not supported", ErrInvalidJob, k, spec.Reservation)
		}
		j, err := s.newJob(spec)
		if err != nil {
			return nil, fmt.Errorf("component %d: %w", k, err)
		}
		jobs[k] = j
	}
	// Each component is a job for the limits: admitted in turn, with
	// the components before it counted (and taken back on refusal).
	added := 0
	undo := func() {
		if s.pol != nil {
			for _, j := range jobs[:added] {
				_ = s.pol.usage.RemoveJob(policy.JobID(j.ID))
			}
		}
	}
	for k, j := range jobs {
		if err := s.admitPolicy(j, leader, 1); err != nil {
			undo()
			return nil, fmt.Errorf("component %d: %w", k, err)
		}
		if j.Spec.Hold {
			j.Hold, j.Reason = HoldUser, policy.ReasonJobHeldUser
		}
		j.ID = leader + JobID(k)
		j.SubmitTime = now
		j.State = JobPending
		j.HetJobID, j.HetJobOffset = leader, k
		if s.prio != nil {
			if err := s.computePriority(now, j); err != nil {
				undo()
				return nil, fmt.Errorf("%w: component %d: %w", ErrInvalidJob, k, err)
			}
		}
		if s.pol != nil {
			if err := s.pol.usage.AddJob(policy.JobID(j.ID), j.subject); err != nil {
				undo()
				return nil, fmt.Errorf("%w: component %d: %w", ErrInvalidJob, k, err)
			}
			added++
		}
	}
	ids := make([]JobID, len(jobs))
	for k, j := range jobs {
		s.jobs[j.ID] = j
		s.mutPending().ReplaceOrInsert(j)
		ids[k] = j.ID
	}
	s.hets[leader] = &hetJob{comps: jobs}
	s.nextID += JobID(len(jobs))
	s.last = now
	return ids, nil
}

// HetJob returns the components of the heterogeneous job whose leader
// is id, in offset order; false when id is not a heterogeneous job's
// leader (or the job was forgotten, see Config.MinJobAge).
func (s *Scheduler) HetJob(id JobID) ([]Job, bool) {
	h := s.hets[id]
	if h == nil {
		return nil, false
	}
	out := make([]Job, 0, len(h.comps))
	for _, c := range h.comps {
		if c != nil {
			out = append(out, s.snapshot(c))
		}
	}
	return out, len(out) > 0
}

// Label returns the job's ID as squeue and sacct show it: "123+1" for a
// component of a heterogeneous job (HetJobID+HetJobOffset), "12_3" for
// task 3 of job array 12, else the plain ID.
func (j Job) Label() string {
	switch {
	case j.HetJobID != 0:
		return strconv.FormatUint(uint64(j.HetJobID), 10) + "+" + strconv.Itoa(j.HetJobOffset)
	case j.ArrayJobID != 0:
		return strconv.FormatUint(uint64(j.ArrayJobID), 10) + "_" + strconv.Itoa(j.ArrayTaskID)
	}
	return strconv.FormatUint(uint64(j.ID), 10)
}

// ParseHetJobID parses a heterogeneous job component as squeue writes it,
// "123+1" (HetJobID+HetJobOffset), into the leader's ID and the offset;
// a plain ID "123" gives offset -1 (the whole job). IDs are decimal and
// positive, offsets decimal and non-negative, without signs or spaces.
func ParseHetJobID(s string) (leader JobID, offset int, err error) {
	idPart, offPart, hasOff := strings.Cut(s, "+")
	id, err := parseDecimal(idPart, 1<<63)
	if err != nil || id == 0 {
		return 0, 0, fmt.Errorf("%w: heterogeneous job ID %q: bad job ID %q", ErrInvalidJob, s, idPart)
	}
	if !hasOff {
		return JobID(id), -1, nil
	}
	off, err := parseDecimal(offPart, 1<<31)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: heterogeneous job ID %q: bad offset %q", ErrInvalidJob, s, offPart)
	}
	return JobID(id), int(off), nil
}

// parseDecimal parses digits only (no sign, no spaces) below limit.
func parseDecimal(s string, limit uint64) (uint64, error) {
	if s == "" || len(s) > 20 {
		return 0, strconv.ErrSyntax
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v >= limit {
		return 0, strconv.ErrRange
	}
	return v, nil
}

// cancelHet cancels component j of a heterogeneous job (see Cancel): the
// leader takes every live component with it; another component may be
// cancelled alone only once the job runs.
func (s *Scheduler) cancelHet(now time.Time, j *job) error {
	h := s.hets[j.HetJobID]
	if h == nil || j.HetJobOffset != 0 {
		if j.State == JobPending {
			return fmt.Errorf("%w: job %d is pending component %s of a heterogeneous job: cancel the whole job (%d)",
				ErrJobState, j.ID, j.Label(), j.HetJobID)
		}
		s.endJob(j, JobCancelled, now)
		s.last = now
		return nil
	}
	for _, c := range h.comps {
		if c == nil {
			continue
		}
		switch c.State {
		case JobPending, JobRunning, JobSuspended:
			s.endJob(c, JobCancelled, now)
		}
	}
	s.last = now
	return nil
}

// hetOutcomes is a dependency's view of the heterogeneous job led by
// ref's ID: every component's outcome (false when it is none).
func (s *Scheduler) hetOutcomes(ref policy.DepJob) (policy.Outcomes, bool) {
	h := s.hets[JobID(ref.ID)]
	if h == nil || ref.HasTask {
		return policy.Outcomes{}, false
	}
	var c policy.Outcomes
	for k := range h.comps { // a purged component's outcome is kept by ID
		if o, ok := s.outcome(ref.ID + policy.JobID(k)); ok {
			c[o]++
		}
	}
	return c, true
}

// regroupHets runs at the start of a cycle: a heterogeneous job with a
// component back in the queue while others run has them requeued too,
// so that it starts again whole (they are listed in cyc.Ended, pending).
func (s *Scheduler) regroupHets(now time.Time, cyc *Cycle) {
	if len(s.hets) == 0 {
		return
	}
	var leaders []JobID
	for id, h := range s.hets {
		if hetSplit(h) {
			leaders = append(leaders, id)
		}
	}
	slices.Sort(leaders)
	for _, id := range leaders {
		h := s.hets[id]
		r := policy.ReasonNone
		for _, c := range h.comps {
			if c != nil && c.State == JobPending {
				r = c.Reason
				break
			}
		}
		for _, c := range h.comps {
			if c != nil && (c.State == JobRunning || c.State == JobSuspended) {
				s.requeue(now, c, r)
				s.logRequeue(now, c)
				cyc.Ended = append(cyc.Ended, Ended{Job: c.ID, State: c.State, Reason: r})
			}
		}
	}
}

// hetSplit reports whether some components of h pend while others run.
func hetSplit(h *hetJob) bool {
	pending, running := false, false
	for _, c := range h.comps {
		if c == nil {
			continue
		}
		switch c.State {
		case JobPending:
			pending = true
		case JobRunning, JobSuspended:
			running = true
		}
	}
	return pending && running
}

// hetMayStart reports whether the heterogeneous job of pending component
// j is one the backfill pass may plan now, as far as its components' own
// states tell: none is held, in a partition that is down or inactive,
// out of the backfill plan (outsidePlan: over its partition's MaxTime or
// node limits, or waiting on a dependency) or above a limit of its own
// with nothing else running (neverBlocker: MaxWall …), and the components
// together exceed no limit even with nothing else running. The main pass
// holds back a component's partition only for such a job, as a plain job
// waiting on its dependency or unable ever to start holds nothing back:
// there is no reservation to keep, and a job that cannot start would keep
// its partition's lower jobs out of the main pass for as long as it
// waits.
func (s *Scheduler) hetMayStart(now time.Time, j *job) bool {
	comps := s.hetPending(j)
	for _, c := range comps {
		st := s.parts[c.part].cfg.State
		if c.Hold != HoldNone || st == PartitionDown || st == PartitionInactive || s.outsidePlan(c) || s.neverBlocker(now, c).Blocked() {
			return false
		}
	}
	_, never := s.hetLimits(comps, false)
	return !never.ok
}

// hetPending returns the pending components of j's heterogeneous job.
func (s *Scheduler) hetPending(j *job) []*job {
	h := s.hets[j.HetJobID]
	if h == nil {
		return nil
	}
	out := make([]*job, 0, len(h.comps))
	for _, c := range h.comps {
		if c != nil && c.State == JobPending {
			out = append(out, c)
		}
	}
	return out
}

// bfHetJob is the planner's input for the heterogeneous job of pending
// component j, when j is its first pending component in queue order and
// every pending component may be planned (their own constraints pass;
// backfillPass has checked j's before it asks); false otherwise (the job
// is then planned at that component's turn, or not at all this cycle).
func (s *Scheduler) bfHetJob(now time.Time, j *job) (backfill.Job, bool) {
	comps := s.hetPending(j)
	if len(comps) == 0 {
		return backfill.Job{}, false
	}
	for _, c := range comps {
		if c != j && queueLess(c, j) {
			return backfill.Job{}, false // planned at c's turn
		}
	}
	for _, c := range comps {
		if c == j {
			continue // backfillPass has just considered j itself
		}
		// As backfillPass considers a job: its own constraints pass, or
		// hold it only on concurrent limits (then it is planned, as any
		// limit-held job, at the time they allow).
		ok := plannable(c.Reason) || s.limitHeld(now, c)
		if ok && c.Reason == policy.ReasonPriority {
			if r := s.checkPolicy(now, c); r != policy.ReasonNone {
				s.setReason(c, r)
				ok = s.limitHeld(now, c)
			}
		}
		if ok && s.outsidePlan(c) {
			ok = false
		}
		if ok {
			if nb := s.neverBlocker(now, c); nb.Blocked() {
				s.setReason(c, nb.Reason)
				ok = false
			}
		}
		if !ok {
			return backfill.Job{}, false
		}
	}
	// The components together (hetlimits.go): above a limit even with
	// nothing else running, the job is not planned; above what the
	// running jobs leave, it waits with that limit's reason.
	if held, never := s.hetLimits(comps, true); held.ok {
		// (Above a limit with nothing running is above it now too.)
		if never.ok {
			for _, c := range comps {
				s.setReason(c, never.sl.Blocker.Reason)
			}
			return backfill.Job{}, false
		}
		s.hetLimitHeld(comps, held.sl)
	}
	return s.hetBackfillJob(j, comps, func(c *job) backfill.Job {
		return s.bfJob(now, c, s.allowedNodes(c.shape), c.shape)
	}), true
}

// hetOnDemandJob is the planner's input for the heterogeneous job of
// pending component j in a plan Explain makes on demand: bfHetJob's,
// without its side effects (no reason is set); false when the job may
// not start as it stands (hetMayStart), which the backfill pass does
// not plan either.
func (s *Scheduler) hetOnDemandJob(now time.Time, j *job) (backfill.Job, bool) {
	comps := s.hetPending(j)
	if len(comps) == 0 || !s.hetMayStart(now, j) {
		return backfill.Job{}, false
	}
	return s.hetBackfillJob(j, comps, func(c *job) backfill.Job {
		return s.bfJob(now, c, s.jobAllowed(c), nil)
	}), true
}

// hetBackfillJob is the planner's job for the heterogeneous job of
// pending component j, whose pending components are comps, each
// component's job made by part.
func (s *Scheduler) hetBackfillJob(j *job, comps []*job, part func(c *job) backfill.Job) backfill.Job {
	parts := make([]backfill.Job, len(comps))
	for k, c := range comps {
		parts[k] = part(c)
	}
	bj := parts[0] // the leader's ID, user, partition and association
	bj.Priority = float64(j.Priority)
	bj.Components = parts
	for _, p := range parts {
		bj.NoReserve = bj.NoReserve || p.NoReserve
		if p.Earliest.After(bj.Earliest) {
			bj.Earliest = p.Earliest
		}
		if p.Eligible.After(bj.Eligible) {
			bj.Eligible = p.Eligible
		}
	}
	return bj
}

// startHet starts, from the plan's entry e, every pending component of
// a heterogeneous job, or none: the licenses of all must be free, and
// each component is checked against the limits with the components
// before it counted, and allocated; when one fails, what the others took
// is taken back and all keep waiting.
func (s *Scheduler) startHet(now time.Time, e *backfill.Entry, cyc *Cycle) {
	comps := make([]*job, len(e.Components))
	for k := range e.Components {
		c := s.jobs[JobID(e.Components[k].ID)]
		if c == nil || c.State != JobPending {
			return
		}
		comps[k] = c
	}
	if !s.hetLicensesFree(comps) {
		for _, c := range comps {
			s.setReason(c, policy.ReasonLicenses)
		}
		return
	}
	sp := s.savepoint()
	fail := func(r policy.Reason) {
		s.rollbackTo(sp)
		for _, c := range comps {
			s.setReason(c, r)
		}
	}
	for k, c := range comps {
		ce := &e.Components[k]
		if r := s.checkPolicy(now, c); r != policy.ReasonNone {
			fail(r)
			return
		}
		if r := s.checkExclusiveLimits(now, c, ce.Nodes); r != policy.ReasonNone {
			fail(r)
			return
		}
		// As a plain job's start: the plan's nodes, shares and task
		// counts.
		if err := s.allocatePlanned(now, c, ce); err != nil {
			fail(policy.ReasonResources)
			return
		}
	}
	for _, c := range comps {
		s.mutPending().Delete(c)
		c.Backfilled = true
		s.mutRunning().ReplaceOrInsert(c)
		cyc.Starts = append(cyc.Starts, Start{Job: c.ID, Alloc: copyAlloc(c.Alloc), TimeLimit: c.TimeLimit, Backfill: true})
	}
}

// noteHetPlan records the plan's entry e for the pending components of a
// heterogeneous job: each component's expected start (the common one)
// and planned nodes, or none.
func (s *Scheduler) noteHetPlan(now time.Time, e *backfill.Entry) {
	for k := range e.Components {
		ce := &e.Components[k]
		c := s.jobs[JobID(ce.ID)]
		if c == nil || c.State != JobPending {
			continue
		}
		s.notePending(c)
		switch e.Status {
		case backfill.StatusEstimated, backfill.StatusReserved:
			c.ExpectedStart, c.EstimatedAt = ce.Start, now
			c.planned = append(c.planned[:0], ce.Nodes...)
			c.reserved = e.Status == backfill.StatusReserved
		default:
			c.clearEstimate()
		}
	}
}

// sameBFComponents reports whether two planner inputs' components ask
// the same.
func sameBFComponents(x, y []backfill.Job) bool {
	return slices.EqualFunc(x, y, func(a, b backfill.Job) bool { return sameBFJob(&a, &b) })
}

// attachHet enters restored component j in its heterogeneous job's
// record (jobs are restored in ID order, so offsets come in order; the
// components before it may have been forgotten, see Config.MinJobAge).
func (s *Scheduler) attachHet(j *job) error {
	if j.HetJobID == 0 {
		return nil
	}
	if j.HetJobOffset < 0 || j.ID != j.HetJobID+JobID(j.HetJobOffset) {
		return fmt.Errorf("component %s has ID %d", j.Label(), j.ID)
	}
	h := s.hets[j.HetJobID]
	if h == nil {
		h = &hetJob{}
		s.hets[j.HetJobID] = h
	}
	if j.HetJobOffset < len(h.comps) {
		return fmt.Errorf("component %s out of order", j.Label())
	}
	for len(h.comps) < j.HetJobOffset {
		h.comps = append(h.comps, nil) // forgotten (Config.MinJobAge)
	}
	h.comps = append(h.comps, j)
	return nil
}

// forgetHet drops purged job j from its heterogeneous job's record (its
// slot stays, for the dependencies on the job, see hetOutcomes).
func (s *Scheduler) forgetHet(j *job) {
	if h := s.hets[j.HetJobID]; h != nil && j.HetJobOffset < len(h.comps) {
		h.comps[j.HetJobOffset] = nil
	}
}
