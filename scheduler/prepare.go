package scheduler

import (
	"fmt"
	"time"
)

// Prepare returns ev as Apply at now would hand it to the EventLog: an
// event that reads input from outside the scheduler takes it in. Today
// that is a ScheduleEvent without a FairShare tree whose cycle is due to
// recalculate priorities: it gets the tree read from src, or, when src
// is nil, from the configured PriorityConfig.FairShare. Any other event
// is returned as it is. Prepare changes nothing.
//
// A replicated log calls Prepare on the replica that proposes the event,
// before it is proposed, so that every replica applies the same data
// (and none reads a source of its own); the prepared event is then
// applied everywhere with Apply, which leaves a filled tree as it is.
// The answer is the one Apply would give only while the state is the one
// Prepare saw: the proposer prepares a ScheduleEvent after the events
// before it have been applied.
func (s *Scheduler) Prepare(now time.Time, ev Event, src FairShareSource) (Event, error) {
	if ev == nil {
		return nil, fmt.Errorf("%w: nil event", ErrInvalidEvent)
	}
	e, ok := ev.(ScheduleEvent)
	if !ok || e.FairShare != nil {
		return ev, nil
	}
	if src == nil {
		return e.prepare(s, now)
	}
	if !s.priorityDue(now) {
		return e, nil
	}
	fs, err := readFairShareFrom(src, s.prio.calcBoundary(now))
	if err != nil || fs == nil {
		return e, err
	}
	return ScheduleEvent{FairShare: fs}, nil
}
