package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/policy"
)

// Job control: what Slurm's scontrol does to one job — hold and release,
// update, suspend and resume, requeue (and requeue held). Each operation
// is an event (see Event); a refused one changes nothing.

// HoldKind is a job's hold (Job.Hold).
type HoldKind uint8

// Hold kinds, weakest first.
const (
	// HoldNone: not held.
	HoldNone HoldKind = iota
	// HoldUser: held by its user (scontrol hold by the owner, uhold,
	// sbatch --hold, requeuehold): pends with JobHeldUser; the user may
	// release it.
	HoldUser
	// HoldAdmin: held by an administrator (scontrol hold by an operator,
	// scontrol update priority=0): pends with JobHeldAdmin; only an
	// administrator may release it.
	HoldAdmin
)

var holdKindNames = [...]string{HoldNone: "none", HoldUser: "user", HoldAdmin: "admin"}

// String returns the kind's name ("none", "user", "admin").
func (k HoldKind) String() string { return enumName(k, holdKindNames[:], "HoldKind") }

// MarshalText encodes the kind by its name.
func (k HoldKind) MarshalText() ([]byte, error) {
	if int(k) >= len(holdKindNames) {
		return nil, fmt.Errorf("%w: HoldKind(%d)", ErrInvalidEvent, uint8(k))
	}
	return []byte(holdKindNames[k]), nil
}

// UnmarshalText decodes a name written by MarshalText.
func (k *HoldKind) UnmarshalText(b []byte) error {
	i := slices.Index(holdKindNames[:], string(b))
	if i < 0 {
		return fmt.Errorf("%w: unknown hold kind %q", ErrInvalidEvent, b)
	}
	*k = HoldKind(i)
	return nil
}

// reason is the pending reason of a job held so.
func (k HoldKind) reason() policy.Reason {
	if k == HoldAdmin {
		return policy.ReasonJobHeldAdmin
	}
	return policy.ReasonJobHeldUser
}

// DefaultRequeueDelay is Slurm's delay of a requeued job, the default job
// credential lifetime (AuthInfo cred_expire=120): Config.RequeueDelay's
// value for Slurm's behaviour.
const DefaultRequeueDelay = 120 * time.Second

// ErrHeldByAdmin is returned when a user releases a job an administrator
// holds: as in Slurm, only an administrator may release it.
var ErrHeldByAdmin = errors.New("job held by an administrator")

// The job-control event kinds.
const (
	KindHold       EventKind = "hold"
	KindRelease    EventKind = "release"
	KindUpdateJob  EventKind = "update_job"
	KindSuspendJob EventKind = "suspend_job"
	KindResumeJob  EventKind = "resume_job"
	KindRequeueJob EventKind = "requeue_job"
)

// overridePriority is the job's priority given its computed one: 0 when
// held (as Slurm's hold sets priority 0), the administrator's fixed
// priority when one is set, else computed.
func (j *job) overridePriority(computed uint32) uint32 {
	switch {
	case j.Hold != HoldNone:
		return 0
	case j.AdminPriority > 0:
		return j.AdminPriority
	}
	return computed
}

// setPriority recomputes pending job j's priority (multifactor, or 0
// under FCFS) with its hold or fixed priority over it. j must not be in
// the pending index.
func (s *Scheduler) setPriority(now time.Time, j *job) error {
	if s.prio != nil {
		return s.computePriority(now, j)
	}
	j.Priority = j.overridePriority(0)
	return nil
}

// effectiveLimit is the time limit a job asking for limit runs with in
// the partition: its own, or the partition's DefaultTime, MaxTime, or
// (neither set) the limit Sluice plans unlimited jobs with.
func (p *partition) effectiveLimit(limit time.Duration) time.Duration {
	for _, l := range []time.Duration{limit, p.cfg.DefaultTime, p.cfg.MaxTime} {
		if l != 0 {
			return l
		}
	}
	return unlimitedPlanTime
}

// ---- hold and release ----

// HoldEvent holds a job (scontrol hold, or uhold with Admin false): see
// Hold.
type HoldEvent struct {
	Job JobID
	// Admin makes it an administrator's hold, which only an
	// administrator may release.
	Admin bool `json:",omitempty"`
}

// Kind returns KindHold.
func (HoldEvent) Kind() EventKind { return KindHold }

func (e HoldEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{Job: e.Job}, s.holdJob(now, e.Job, e.Admin)
}

// Hold holds job id (scontrol hold; with admin false, scontrol uhold or a
// user's own hold). A held pending job never starts, is not planned by
// backfill, holds back no other job, has priority 0 and pends with
// JobHeldUser (admin false) or JobHeldAdmin. Holding a running or
// suspended job does not stop it, as in Slurm: it is held if it is later
// requeued. An administrator's hold is never weakened by a user's;
// holding a job as it is already held changes nothing. Finished jobs
// cannot be held (ErrJobState).
func (s *Scheduler) Hold(now time.Time, id JobID, admin bool) error {
	_, err := s.Apply(now, HoldEvent{Job: id, Admin: admin})
	return err
}

func (s *Scheduler) holdJob(now time.Time, id JobID, admin bool) error {
	j, err := s.jobAt(now, id)
	if err != nil {
		return err
	}
	if j.State.Finished() {
		return fmt.Errorf("%w: job %d is %s, cannot be held", ErrJobState, id, j.State)
	}
	k := HoldUser
	if admin {
		k = HoldAdmin
	}
	if j.Hold < k {
		if j.State == JobPending {
			s.mutPending().Delete(j)
			j.Hold, j.Reason, j.Priority = k, k.reason(), 0
			j.clearEstimate()
			s.mutPending().ReplaceOrInsert(j)
		} else {
			j.Hold = k
		}
	}
	s.last = now
	return nil
}

// ReleaseEvent releases a held job (scontrol release): see Release and
// UserRelease.
type ReleaseEvent struct {
	Job JobID
	// Admin releases as an administrator (any hold); a user's release
	// of an administrator's hold fails with ErrHeldByAdmin.
	Admin bool `json:",omitempty"`
}

// Kind returns KindRelease.
func (ReleaseEvent) Kind() EventKind { return KindRelease }

func (e ReleaseEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{Job: e.Job}, s.releaseJob(now, e.Job, e.Admin)
}

// Release releases job id's hold, as an administrator (scontrol release):
// a pending job is eligible again, its priority recomputed (or its fixed
// priority back), and the next cycle gives its reason. A job that is not
// held is an error (ErrJobState).
func (s *Scheduler) Release(now time.Time, id JobID) error {
	_, err := s.Apply(now, ReleaseEvent{Job: id, Admin: true})
	return err
}

// UserRelease is Release by the job's user: a user hold is released, an
// administrator's is not (ErrHeldByAdmin), as in Slurm.
func (s *Scheduler) UserRelease(now time.Time, id JobID) error {
	_, err := s.Apply(now, ReleaseEvent{Job: id})
	return err
}

func (s *Scheduler) releaseJob(now time.Time, id JobID, admin bool) error {
	j, err := s.jobAt(now, id)
	if err != nil {
		return err
	}
	switch {
	case j.Hold == HoldNone:
		return fmt.Errorf("%w: job %d is not held", ErrJobState, id)
	case j.Hold == HoldAdmin && !admin:
		return fmt.Errorf("%w: job %d: a user cannot release an administrator's hold", ErrHeldByAdmin, id)
	}
	if j.State != JobPending {
		j.Hold = HoldNone
		s.last = now
		return nil
	}
	s.mutPending().Delete(j)
	was, prio, b := j.Hold, j.Priority, j.breakdown
	b.TRES = slices.Clone(b.TRES)
	j.Hold = HoldNone
	if err := s.setPriority(now, j); err != nil {
		j.Hold, j.Priority, j.breakdown = was, prio, b
		s.mutPending().ReplaceOrInsert(j)
		return fmt.Errorf("%w: %w", ErrInvalidJob, err)
	}
	j.Reason = policy.ReasonNone // the next cycle says why it waits
	s.mutPending().ReplaceOrInsert(j)
	s.last = now
	return nil
}
