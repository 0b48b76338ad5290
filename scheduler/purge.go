package scheduler

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/policy"
)

// purge forgets the jobs finished at least MinJobAge before now and
// before the previous cycle began (a caller reading each cycle has seen
// them), keeping their outcomes for dependencies. Jobs are taken in the
// order they finished; one whose time has not come stops the walk, so a
// job may be kept a little longer than MinJobAge, never less.
func (s *Scheduler) purge(now time.Time) {
	if s.minJobAge <= 0 {
		return
	}
	for s.doneHead < len(s.done) {
		j := s.done[s.doneHead]
		if now.Sub(j.EndTime) < s.minJobAge || j.doneCycle+1 >= s.cycleNo {
			break
		}
		if o, ok := s.outcome(policy.JobID(j.ID)); ok {
			s.setPurged(j.ID, o)
		}
		delete(s.jobs, j.ID)
		if j.HetJobID != 0 {
			s.forgetHet(j)
		}
		s.done[s.doneHead] = nil
		s.doneHead++
	}
	if s.doneHead > 1024 && s.doneHead*2 > len(s.done) {
		n := copy(s.done, s.done[s.doneHead:])
		clear(s.done[n:])
		s.done, s.doneHead = s.done[:n], 0
	}
}

// unknownJob is the error for an ID the scheduler does not hold: never
// submitted, or finished and forgotten after MinJobAge.
func (s *Scheduler) unknownJob(id JobID) error {
	if _, ok := s.purgedOutcome(id); ok {
		return fmt.Errorf("%w: %d (finished more than MinJobAge %v ago and purged)", ErrUnknownJob, id, s.minJobAge)
	}
	return fmt.Errorf("%w: %d", ErrUnknownJob, id)
}

// Job IDs are handed out in sequence from firstID, so the outcomes of
// purged jobs are kept densely: purged[id-firstID] is the outcome plus
// one, 0 for a job not purged.

// setPurged keeps the outcome of purged job id.
func (s *Scheduler) setPurged(id JobID, o policy.Outcome) {
	k := int(id - s.firstID)
	if k >= len(s.purged) {
		s.purged = append(s.purged, make([]uint8, k+1-len(s.purged))...)
	}
	s.purged[k] = uint8(o) + 1
}

// purgedOutcome returns the outcome of job id if it was purged.
func (s *Scheduler) purgedOutcome(id JobID) (policy.Outcome, bool) {
	if id < s.firstID || id-s.firstID >= JobID(len(s.purged)) || s.purged[id-s.firstID] == 0 {
		return 0, false
	}
	return policy.Outcome(s.purged[id-s.firstID] - 1), true
}
