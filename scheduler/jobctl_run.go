package scheduler

import (
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/policy"
)

// ---- suspend and resume ----

// SuspendJobEvent suspends a running job (scontrol suspend): see
// SuspendJob.
type SuspendJobEvent struct{ Job JobID }

// Kind returns KindSuspendJob.
func (SuspendJobEvent) Kind() EventKind { return KindSuspendJob }

func (e SuspendJobEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{Job: e.Job}, s.suspendJob(now, e.Job)
}

// SuspendJob suspends running job id as an administrator (scontrol
// suspend; the caller sends it SIGSTOP). It becomes SUSPENDED with
// Job.AdminSuspended and keeps its whole allocation — CPUs, memory and
// devices stay its own, nothing else starts on them — until ResumeJob; its
// time limit clock stops meanwhile (suspended time does not count, as in
// Slurm). Unlike a job suspended by preemption (which lends its CPUs to
// its preemptor and resumes by itself when the preemptor ends), it is
// never resumed by a cycle, and preemption never picks it as a victim. A
// preemption victim in its grace time cannot be suspended.
func (s *Scheduler) SuspendJob(now time.Time, id JobID) error {
	_, err := s.Apply(now, SuspendJobEvent{Job: id})
	return err
}

func (s *Scheduler) suspendJob(now time.Time, id JobID) error {
	j, err := s.runningJob(now, id, "be suspended")
	if err != nil {
		return err
	}
	if j.preempting {
		return fmt.Errorf("%w: job %d is being preempted", ErrJobState, id)
	}
	s.mutRunning().Delete(j)
	j.remaining = max(j.deadline.Sub(now), 0)
	j.State, j.AdminSuspended = JobSuspended, true
	// The kept profile cannot say "held until resumed": it is rebuilt,
	// and a fresh one counts what the job holds as never freed.
	s.noteCapacity()
	if j.Alloc.OverSubscribe > 1 {
		s.sharersChanged(j) // the other sharers hold its shared CPUs in the profile (sharedCPUUse)
	}
	s.last = now
	return nil
}

// ResumeJobEvent resumes a job SuspendJob suspended (scontrol resume):
// see ResumeJob.
type ResumeJobEvent struct{ Job JobID }

// Kind returns KindResumeJob.
func (ResumeJobEvent) Kind() EventKind { return KindResumeJob }

func (e ResumeJobEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{Job: e.Job}, s.resumeJob(now, e.Job)
}

// ResumeJob resumes a job suspended by SuspendJob (scontrol resume; the
// caller sends it SIGCONT): it runs again on the allocation it kept, with
// the run time it had left (never past the end of the reservation it
// runs in). A job suspended by preemption resumes only when its
// preemptor ends (ErrJobState).
func (s *Scheduler) ResumeJob(now time.Time, id JobID) error {
	_, err := s.Apply(now, ResumeJobEvent{Job: id})
	return err
}

func (s *Scheduler) resumeJob(now time.Time, id JobID) error {
	j, err := s.jobAt(now, id)
	if err != nil {
		return err
	}
	switch {
	case j.State != JobSuspended:
		return fmt.Errorf("%w: job %d is %s, only a SUSPENDED job can be resumed", ErrJobState, id, j.State)
	case !j.AdminSuspended:
		return fmt.Errorf("%w: job %d was suspended by preemption: it resumes when its preemptor ends", ErrJobState, id)
	}
	j.State, j.AdminSuspended = JobRunning, false
	s.moveDeadline(now, j, now.Add(j.remaining)) // back in the running index
	j.remaining = 0
	s.noteCapacity()
	s.last = now
	return nil
}

// ---- requeue ----

// RequeueJobEvent requeues a job as scontrol requeue does (Hold:
// requeuehold): see RequeueJob.
type RequeueJobEvent struct {
	Job  JobID
	Hold bool `json:",omitempty"`
}

// Kind returns KindRequeueJob.
func (RequeueJobEvent) Kind() EventKind { return KindRequeueJob }

func (e RequeueJobEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{Job: e.Job}, s.requeueControl(now, e.Job, e.Hold)
}

// RequeueJob puts job id back in the queue as scontrol requeue does
// (with hold, scontrol requeuehold: held by its user, JobHeldUser, until
// Release). A running job frees its resources, as Requeue; a suspended job
// is requeued held, as in Slurm; a finished job — COMPLETED, FAILED,
// TIMEOUT, NODE_FAIL or PREEMPTED — is queued again. A CANCELLED job
// cannot be requeued (as in Slurm), nor a pending one, nor one submitted
// with --no-requeue (JobSpec.Requeue RequeueNo, or the cluster's
// Config.JobRequeue), nor a preemption victim in its grace time
// (ErrJobState). The job keeps its ID and submit time; Restarts counts
// the requeue. It is eligible again at once, or after Config.RequeueDelay
// (Slurm's delay, DefaultRequeueDelay).
func (s *Scheduler) RequeueJob(now time.Time, id JobID, hold bool) error {
	_, err := s.Apply(now, RequeueJobEvent{Job: id, Hold: hold})
	return err
}

func (s *Scheduler) requeueControl(now time.Time, id JobID, hold bool) error {
	j, err := s.jobAt(now, id)
	if err != nil {
		return err
	}
	switch {
	case j.State == JobPending || j.State == JobCancelled:
		return fmt.Errorf("%w: job %d is %s, cannot be requeued", ErrJobState, id, j.State)
	case !s.requeueable(j):
		return fmt.Errorf("%w: job %d may not be requeued (--no-requeue)", ErrJobState, id)
	case j.preempting:
		return fmt.Errorf("%w: job %d is being preempted", ErrJobState, id)
	case j.part < 0:
		return fmt.Errorf("%w: job %d: its partition %q was removed", ErrJobState, id, j.Partition)
	}
	if j.State == JobSuspended {
		hold = true // Slurm: a suspended job that is requeued is held
	}
	was := j.Job // for a finished job's undo
	if hold {
		j.Hold = max(j.Hold, HoldUser)
	}
	if !j.State.Finished() {
		s.requeue(now, j, policy.ReasonNone)
		s.logRequeue(now, j)
		s.last = now
		return nil
	}
	// A finished job: counted as submitted again, queued again.
	j.State, j.Reason = JobPending, policy.ReasonNone
	if hold {
		j.Reason = j.Hold.reason()
	}
	b := j.breakdown
	b.TRES = slices.Clone(b.TRES)
	// A finished job's policy subject is not kept current by policy
	// changes: it is resolved again, as at submission.
	subj, subjGen, rank := j.subject, j.subjGen, j.preemptRank
	if err := s.requeueFinished(now, j); err != nil {
		j.Job, j.breakdown = was, b
		j.subject, j.subjGen, j.preemptRank = subj, subjGen, rank
		return err
	}
	j.Restarts++
	j.StartTime, j.EndTime, j.ExitCode = time.Time{}, time.Time{}, 0
	s.delayRequeued(now, j)
	if s.minJobAge > 0 {
		// Not to be purged: it is queued again.
		s.done = slices.DeleteFunc(s.done, func(x *job) bool { return x == j })
		s.doneHead = min(s.doneHead, len(s.done))
	}
	s.mutPending().ReplaceOrInsert(j)
	s.logRequeue(now, j)
	s.last = now
	return nil
}

// requeueFinished resolves finished job j's policy subject again, gives
// it a priority and counts it in the submit usage, as at submission; on
// error the caller restores what it changed.
func (s *Scheduler) requeueFinished(now time.Time, j *job) error {
	if s.pol != nil {
		ns, err := s.pol.p.Resolve(j.policyRef())
		if err != nil {
			return fmt.Errorf("%w: requeue job %d: %w", ErrInvalidJob, j.ID, err)
		}
		j.subject, j.subjGen, j.preemptRank = ns, s.pol.gen, ns.PreemptRank()
	}
	if err := s.setPriority(now, j); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidJob, err)
	}
	if s.pol != nil {
		if err := s.pol.usage.AddJob(policy.JobID(j.ID), j.subject); err != nil {
			return fmt.Errorf("%w: requeue job %d: %w", ErrInvalidJob, j.ID, err)
		}
	}
	return nil
}

// delayRequeued moves the begin time of job j, requeued at now, to
// Config.RequeueDelay after now (Slurm's delay of a requeued job).
func (s *Scheduler) delayRequeued(now time.Time, j *job) {
	if s.requeueDelay > 0 {
		j.Spec.BeginTime = maxTime(j.Spec.BeginTime, now.Add(s.requeueDelay))
	}
}

// requeueExcluding requeues running job id after its launch failed on
// nodes (RequeueEvent with ExcludeNodes): as Requeue, and the job is kept
// off those nodes from then on (they join JobSpec.Exclude).
func (s *Scheduler) requeueExcluding(now time.Time, id JobID, nodes []string) error {
	j, err := s.runningJob(now, id, "be requeued")
	if err != nil {
		return err
	}
	names := sortedNames(j.Spec.Exclude, nodes)
	excluded, err := s.resolveHostlists("Exclude", names)
	if err != nil {
		return fmt.Errorf("requeue job %d: %w", id, err)
	}
	sh := s.shapeOf(j.part, j.perNode, j.Spec.Exclusive, excluded, j.cons)
	if c := sh.capable.Count(); c < j.nodes {
		return fmt.Errorf("%w: %w: requeue job %d: without nodes %v, %d node(s) of partition %q can hold it, it needs %d",
			ErrInvalidJob, ErrUnsatisfiable, id, names, c, j.Partition, j.nodes)
	}
	if j.where != nil {
		for _, i := range j.where.required {
			if !sh.capable.Has(i) {
				return fmt.Errorf("%w: %w: requeue job %d: node %q is in its NodeList", ErrInvalidJob, ErrUnsatisfiable, id, s.nodes[i].cfg.Name)
			}
		}
	}
	j.Spec.Exclude, j.excluded, j.shape = names, excluded, sh
	j.LaunchFailures++
	s.requeue(now, j, policy.ReasonLaunchFailRequeue)
	s.logRequeue(now, j)
	s.last = now
	return nil
}
