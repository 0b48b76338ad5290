package scheduler

import (
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/policy"
)

// JobUpdate is what scontrol update changes of a job: each field set
// (non-nil) replaces the job's, the others stay. The values mean what the
// JobSpec fields of the same names mean (TimeLimit 0: the partition's
// default; QOS "": the default QOS; Dependency "": none; BeginTime zero:
// none).
type JobUpdate struct {
	TimeLimit  *time.Duration `json:",omitempty"`
	TimeMin    *time.Duration `json:",omitempty"`
	Nice       *int           `json:",omitempty"`
	Partition  *string        `json:",omitempty"`
	QOS        *string        `json:",omitempty"`
	Account    *string        `json:",omitempty"`
	Dependency *string        `json:",omitempty"`
	BeginTime  *time.Time     `json:",omitempty"`
	// Priority fixes the job's priority (scontrol update priority=N, an
	// administrator's): it replaces the multifactor priority (or FCFS's
	// 0) until ResetPriority. As in Slurm, priority 0 holds the job (an
	// administrator's hold; Release lets it run).
	Priority *uint32 `json:",omitempty"`
	// ResetPriority drops a fixed priority: the job's priority is
	// computed again. Not with Priority.
	ResetPriority bool `json:",omitempty"`
}

// isZero reports whether the update changes nothing.
func (u *JobUpdate) isZero() bool { return *u == JobUpdate{} }

// onlyTimeLimit reports whether the update sets the time limit alone.
func (u *JobUpdate) onlyTimeLimit() bool {
	return u.TimeLimit != nil && *u == JobUpdate{TimeLimit: u.TimeLimit}
}

// UpdateJobEvent changes a job (scontrol update job): see UpdateJob. Its
// JSON form holds the job and the fields set.
type UpdateJobEvent struct {
	Job JobID
	JobUpdate
}

// Kind returns KindUpdateJob.
func (UpdateJobEvent) Kind() EventKind { return KindUpdateJob }

func (e UpdateJobEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{Job: e.Job}, s.updateJob(now, e.Job, e.JobUpdate)
}

// UpdateJob changes job id as scontrol update does. A pending job may
// change its time limit, time min, nice, priority, partition, QOS,
// account, dependency and begin time: the changed request is validated
// exactly as Submit validates a spec (its partition accepting jobs and
// able to hold it, QOS and account access, submit limits with the job
// itself not counted twice, the dependency), and the whole update is
// applied or none of it. The job keeps its ID, submit time, array task
// and restarts; its queue place follows its new priority and partition
// tier. Changing the begin time or the dependency makes it wait to be
// eligible again (its age restarts from then, as EligibleTime does).
//
// A running or suspended job may change its time limit only: its end
// moves by the difference (never past the end of the reservation it runs
// in); a limit below the time it has run ends it as TIMEOUT in the next
// cycle, as Slurm does. Running jobs are not judged again against
// partition or QOS limits.
//
// Sluice does not tell users from administrators here: the caller, which
// knows who asks, decides what each may change (Slurm lets a user only
// lower a limit or raise nice).
func (s *Scheduler) UpdateJob(now time.Time, id JobID, u JobUpdate) error {
	_, err := s.Apply(now, UpdateJobEvent{Job: id, JobUpdate: u})
	return err
}

func (s *Scheduler) updateJob(now time.Time, id JobID, u JobUpdate) error {
	j, err := s.jobAt(now, id)
	if err != nil {
		return err
	}
	switch {
	case u.isZero():
		return fmt.Errorf("%w: update of job %d sets nothing", ErrInvalidJob, id)
	case u.Priority != nil && u.ResetPriority:
		return fmt.Errorf("%w: update of job %d both sets and resets its priority", ErrInvalidJob, id)
	}
	switch j.State {
	case JobPending:
		return s.updatePending(now, j, u)
	case JobRunning, JobSuspended:
		if !u.onlyTimeLimit() {
			return fmt.Errorf("%w: job %d is %s: only its time limit can change", ErrJobState, id, j.State)
		}
		return s.updateRunningLimit(now, j, *u.TimeLimit)
	}
	return fmt.Errorf("%w: job %d is %s, cannot be updated", ErrJobState, id, j.State)
}

// updatePending applies u to pending job j, all or nothing.
func (s *Scheduler) updatePending(now time.Time, j *job, u JobUpdate) error {
	spec := j.Spec
	set := func(dst, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	set(&spec.Partition, u.Partition)
	set(&spec.QOS, u.QOS)
	set(&spec.Account, u.Account)
	set(&spec.Dependency, u.Dependency)
	if u.TimeLimit != nil {
		spec.TimeLimit = *u.TimeLimit
	}
	if u.TimeMin != nil {
		spec.TimeMin = *u.TimeMin
	}
	if u.Nice != nil {
		spec.Nice = *u.Nice
	}
	if u.BeginTime != nil {
		spec.BeginTime = *u.BeginTime
	}
	// A partition that accepts no new jobs refuses a job moved into it,
	// not a change to one already queued there.
	nj, err := s.newJobIn(spec, spec.Partition != j.Spec.Partition)
	if err != nil {
		return fmt.Errorf("update job %d: %w", j.ID, err)
	}
	// The job is counted in the submit usage already: it is taken out
	// while the new request is admitted, and counted again with its new
	// association and QOS (or, on failure, as it was).
	id := policy.JobID(j.ID)
	if s.pol != nil {
		if err := s.pol.usage.RemoveJob(id); err != nil {
			return fmt.Errorf("scheduler: update job %d: policy usage: %w", j.ID, err)
		}
	}
	fail := func(err error) error {
		if s.pol != nil {
			_ = s.pol.usage.AddJob(id, s.subjectOf(j)) // removed a moment ago
		}
		return fmt.Errorf("update job %d: %w", j.ID, err)
	}
	if err := s.admitPolicy(nj, j.ID, 1); err != nil {
		return fail(err)
	}
	n := *nj
	n.Job = j.Job // identity, state, times, restarts, hold
	n.Spec, n.Partition, n.TimeLimit = nj.Spec, nj.Partition, nj.TimeLimit
	// What is the job's own rather than its request's.
	n.breakdown = j.breakdown
	n.breakdown.TRES = nil // computed afresh: j's array stays j's
	n.touched, n.viewed = j.touched, j.viewed
	n.preemptFirst, n.awaitingVictims = j.preemptFirst, j.awaitingVictims
	n.planned = j.planned
	n.clearEstimate()
	switch {
	case u.Priority != nil && *u.Priority == 0:
		n.Hold = HoldAdmin // Slurm: priority=0 holds the job
	case u.Priority != nil:
		n.AdminPriority = *u.Priority
	case u.ResetPriority:
		n.AdminPriority = 0
	}
	if u.BeginTime != nil || u.Dependency != nil {
		n.EligibleTime = time.Time{}
	}
	n.Reason = policy.ReasonNone // the next cycle says why it waits
	if n.Hold != HoldNone {
		n.Reason = n.Hold.reason()
	}
	if err := s.setPriority(now, &n); err != nil {
		return fail(fmt.Errorf("%w: %w", ErrInvalidJob, err))
	}
	if s.pol != nil {
		if err := s.pol.usage.AddJob(id, n.subject); err != nil {
			return fail(fmt.Errorf("%w: %w", ErrInvalidJob, err))
		}
	}
	s.mutPending().Delete(j)
	*j = n
	s.mutPending().ReplaceOrInsert(j)
	s.last = now
	return nil
}

// updateRunningLimit sets running (or suspended) job j's time limit.
func (s *Scheduler) updateRunningLimit(now time.Time, j *job, limit time.Duration) error {
	if j.preempting {
		return fmt.Errorf("%w: job %d is being preempted: its end is its grace time's", ErrJobState, j.ID)
	}
	if limit < 0 || (limit > 0 && limit < time.Second) || limit > MaxTimeLimit {
		return fmt.Errorf("%w: update job %d: TimeLimit %v out of range: 0 (the partition's default) or [1s, %v]",
			ErrInvalidJob, j.ID, limit, MaxTimeLimit)
	}
	eff := s.parts[j.part].effectiveLimit(limit)
	if j.Spec.TimeMin > eff {
		return fmt.Errorf("%w: update job %d: TimeMin %v exceeds the time limit %v", ErrInvalidJob, j.ID, j.Spec.TimeMin, eff)
	}
	delta := eff - j.TimeLimit
	if j.State == JobSuspended {
		// Suspended time does not count: what is left of its run moves.
		j.remaining = max(j.remaining+delta, 0)
	} else {
		s.moveDeadline(now, j, j.deadline.Add(delta))
	}
	j.Spec.TimeLimit, j.TimeLimit = limit, eff
	s.last = now
	return nil
}

// moveDeadline moves running job j's end to end, kept within the
// reservation it runs in and not before now (a limit below the time run
// ends the job at the next cycle), and tells the running index, the
// policy usage and the kept backfill profile.
func (s *Scheduler) moveDeadline(now time.Time, j *job, end time.Time) {
	if !j.killBy.IsZero() && end.After(j.killBy) {
		end = j.killBy
	}
	end = maxTime(end, now)
	s.mutRunning().Delete(j)
	j.deadline = end
	s.mutRunning().ReplaceOrInsert(j)
	if s.pol != nil {
		if err := s.pol.usage.SetEnd(policy.JobID(j.ID), end); err == nil {
			j.usageEnd = end
		}
	}
	s.noteEnded(j) // its end moved: the kept profile re-adds it
	s.noteStarted(j)
	if j.Alloc.OverSubscribe > 1 {
		s.sharersChanged(j) // which sharer holds a shared CPU longest may change
	}
}

// maxTime returns the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// sortedNames returns names with extra appended (those not in it yet).
func sortedNames(names, extra []string) []string {
	out := slices.Clone(names)
	for _, n := range extra {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
