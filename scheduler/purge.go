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
			s.purged[j.ID] = o
		}
		delete(s.jobs, j.ID)
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
	if _, ok := s.purged[id]; ok {
		return fmt.Errorf("%w: %d (finished more than MinJobAge %v ago and purged)", ErrUnknownJob, id, s.minJobAge)
	}
	return fmt.Errorf("%w: %d", ErrUnknownJob, id)
}
