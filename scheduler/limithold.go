package scheduler

import (
	"time"

	"github.com/sluicehq/sluice/policy"
)

// The main pass and the limit counters. A job that the main pass leaves
// waiting and the backfill plan places (on Resources, behind a blocked
// job, on its begin time with a reservation, on a concurrent limit)
// needs, at its planned start, room on the limit counters it counts
// against (its user's MaxTRESPerUser, its account's GrpTRES…), not only
// on its nodes. Holding its partition's nodes back is not enough: a
// lower-priority job of another partition started by the main pass could
// take that room, and the planned start would be no bound. So each such
// job holds back its counters (passBlocks.keys): a later job that counts
// against one of them is not started by the main pass but left to the
// backfill pass, which starts it now only where the plan's counters,
// carried over time, leave room for every reservation ahead of it.

// holdCounters records the limit counters of job j, which the main pass
// left waiting with reason r, when the backfill plan places it.
func (s *Scheduler) holdCounters(now time.Time, j *job, r policy.Reason, blocked *passBlocks) {
	if s.bf == nil || s.pol == nil || j.Spec.Reservation != "" || j.Hold != HoldNone {
		return
	}
	switch {
	case r == policy.ReasonBeginTime:
		if !j.reserved {
			return
		}
	case plannable(r):
	case r.IsLimit():
		if !s.limitHeld(now, j) {
			return
		}
	default:
		return
	}
	req := s.policyRequest(j)
	s.bf.ctr.slots = s.pol.p.Slots(&req, s.pol.usage, s.bf.ctr.slots[:0])
	for _, sl := range s.bf.ctr.slots {
		if blocked.keys == nil {
			blocked.keys = map[policy.CounterKey]bool{}
		}
		blocked.keys[sl.Key] = true
	}
}

// countersHeld reports whether job j counts against a limit counter that
// a higher-priority job waiting for the plan holds back (holdCounters):
// the main pass then leaves it to the backfill pass.
func (s *Scheduler) countersHeld(j *job, blocked *passBlocks) bool {
	if len(blocked.keys) == 0 || s.pol == nil {
		return false
	}
	req := s.policyRequest(j)
	s.bf.ctr.slots = s.pol.p.Slots(&req, s.pol.usage, s.bf.ctr.slots[:0])
	for _, sl := range s.bf.ctr.slots {
		if blocked.keys[sl.Key] {
			return true
		}
	}
	return false
}
