package scheduler

import (
	"time"

	"github.com/sluicehq/sluice/policy"
)

// settle runs further passes of the cycle at now after one that started
// jobs, until a pass starts nothing, and returns the cycles merged: what
// a job started late in a pass changes for jobs judged before it (a
// limit its user now reaches, so that a job that waited for resources no
// longer holds its partition back; a dependency on the start) is then
// decided at once, not by whichever Schedule call comes next. A cycle's
// outcome is thus a fixed point: calling Schedule again at the same
// instant changes nothing, and so does calling it at any instant before
// NextWake (see "Periodic work" in the package documentation).
//
// The jobs a preemption of the call requeued are not judged again by the
// further passes: they keep the reason Preempted until the next call.
func (s *Scheduler) settle(now time.Time, cyc Cycle) (Cycle, error) {
	defer func() { s.unjudged = nil }()
	last := cyc
	for s.unsettled(now, last) {
		for _, id := range s.requeuedVictims(last) {
			if s.unjudged == nil {
				s.unjudged = make(map[JobID]bool)
			}
			s.unjudged[id] = true
		}
		s.settlePasses++
		more, err := s.schedule(now, nil)
		if err != nil {
			return cyc, err
		}
		cyc, last = mergeCycles(cyc, more), more
	}
	if len(s.requeuedVictims(cyc)) > 0 {
		cyc.NextWake = now // the requeued victims are judged by the next call
	}
	return cyc, nil
}

// requeuedVictims returns the victims of cyc's preemptions that are
// pending again (requeued), in preemption order.
func (s *Scheduler) requeuedVictims(cyc Cycle) []JobID {
	var ids []JobID
	for _, p := range cyc.Preemptions {
		if j, ok := s.jobs[p.Victim]; ok && j.State == JobPending {
			ids = append(ids, p.Victim)
		}
	}
	return ids
}

// mergeCycles is the cycle of two passes at the same instant: a's
// decisions then b's, and b's view of what is pending and when to wake.
func mergeCycles(a, b Cycle) Cycle {
	a.Ended = append(a.Ended, b.Ended...)
	a.Starts = append(a.Starts, b.Starts...)
	a.Decisions = append(a.Decisions, b.Decisions...)
	a.Resumed = append(a.Resumed, b.Resumed...)
	a.Preemptions = append(a.Preemptions, b.Preemptions...)
	a.PowerUp = append(a.PowerUp, b.PowerUp...)
	a.PowerDown = append(a.PowerDown, b.PowerDown...)
	a.ResumeTimedOut = append(a.ResumeTimedOut, b.ResumeTimedOut...)
	a.Pending, a.NextWake = b.Pending, b.NextWake
	return a
}

// unsettled reports whether a pass that made the cycle cyc left work for
// another pass at the same instant: it started jobs, and a job it judged
// before them that holds others back — one waiting for resources (it
// holds its partition back in the main pass) or holding a backfill
// reservation — would now be held by its own policy instead (a limit its
// user or account reached through those starts, its array's throttle; a
// reserved job already held by a limit only if the limit that holds it
// changed), or
// a job waiting on a dependency now has it satisfied (after: a start),
// or, with preemption, a job that may preempt still waits (the jobs
// started after it may be ones it preempts).
// Anything else a start changes for jobs judged before it only removes
// resources, which changes no decision.
func (s *Scheduler) unsettled(now time.Time, cyc Cycle) bool {
	if len(cyc.Starts) == 0 {
		return false
	}
	preempt := s.preemptionOn()
	for k := range cyc.Pending {
		p := &cyc.Pending[k]
		if !preempt && p.Reason != policy.ReasonDependency && p.Reason != policy.ReasonResources && p.ExpectedStart.IsZero() {
			continue // no reservation (a reserved job has an expected start): nothing to look up
		}
		j := s.jobs[p.Job]
		if j == nil || j.State != JobPending || s.unjudged[p.Job] {
			continue
		}
		switch {
		case p.Reason == policy.ReasonDependency:
			if _, blocked := s.depBlocker(j); !blocked {
				return true
			}
		case preempt && j.preemptRank > 0 && j.Hold == HoldNone:
			return true // a job started after it may be one it can preempt
		case p.Reason == policy.ReasonResources || j.reserved:
			// A reserved job the pass already found held by a limit
			// (limit-aware planning reserves it where the limit frees)
			// was planned with the pass's starts counted against that
			// limit: only a reason that changed is news.
			if r := s.checkPolicy(now, j); r != policy.ReasonNone && r != p.Reason {
				return true
			}
		}
	}
	return false
}
