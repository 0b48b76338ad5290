package scheduler

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/backfill"
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
// left waiting with reason r, when the backfill plan places it or holds
// what it may take (a job of an advance reservation).
func (s *Scheduler) holdCounters(now time.Time, j *job, r policy.Reason, blocked *passBlocks) {
	if s.bf == nil || s.pol == nil || j.Hold != HoldNone || r == policy.ReasonNone {
		return
	}
	switch {
	case j.Spec.Reservation != "":
		// Not placed by the plan, but what it may hold in its window is
		// (holdReservationJobs): the main pass must not start a job that
		// the plan's counters, holding it, would not start now.
		if s.neverStarts(j) != "" {
			return
		}
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
	if sc := s.mainRequestCheck(j, &req); sc != nil {
		// The compiled request's slot keys, marked by number
		// (bfinputs.go) instead of in blocked.keys.
		no := s.bfKeyNos(j, sc)
		k := &s.bf.keys
		k.grow()
		k.heldPass(blocked)
		for _, n := range no {
			k.heldAt[n], k.heldAny = k.heldStamp, true
		}
		return
	}
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
// the main pass then leaves it to the backfill pass. A job of an advance
// reservation is never held: the plan has counted its use already.
func (s *Scheduler) countersHeld(j *job, blocked *passBlocks) bool {
	// The keys held are in blocked.keys, and, for the jobs with a
	// compiled request, marked by number (holdCounters).
	var k *bfKeys
	marked := false
	if s.bf != nil {
		k = &s.bf.keys
		marked = k.heldBlocks == blocked && k.heldAny
	}
	if (len(blocked.keys) == 0 && !marked) || s.pol == nil || j.Spec.Reservation != "" {
		// A reservation job starts in the main pass only; the plan holds
		// what it may take (holdReservationJobs).
		return false
	}
	req := s.policyRequest(j)
	if sc := s.mainRequestCheck(j, &req); sc != nil {
		no := s.bfKeyNos(j, sc)
		k.grow()
		for x, n := range no {
			if marked && k.heldAt[n] == k.heldStamp {
				return true
			}
			if len(blocked.keys) > 0 {
				if key, _, _ := sc.SlotKey(x); blocked.keys[key] {
					return true
				}
			}
		}
		return false
	}
	s.bf.ctr.slots = s.pol.p.Slots(&req, s.pol.usage, s.bf.ctr.slots[:0])
	for _, sl := range s.bf.ctr.slots {
		if blocked.keys[sl.Key] {
			return true
		}
		if marked {
			if n, ok := k.no[sl.Key]; ok && k.pol == s.pol.p && int(n) < len(k.heldAt) && k.heldAt[n] == k.heldStamp {
				return true
			}
		}
	}
	return false
}

// holdReservationJobs books into the pass's counter set what each pending
// job of an advance reservation may hold of the limit counters it counts
// against: the plan does not place such jobs (the main pass starts them
// inside their reservation's window, and they end by its end), so each is
// taken to hold its amounts over every window of its reservation within
// the plan's window, from now on. The planned jobs then find room only
// where a reservation job starting in its window leaves it: a bound, never
// later than the truth, on what the limits allow them.
func (s *Scheduler) holdReservationJobs(now time.Time, set *backfill.Counters) error {
	if s.pol == nil || s.pol.resv.Len() == 0 {
		return nil
	}
	b := &s.bf.ctr
	end := now.Add(s.bf.planner.Config().Window)
	var err error
	s.pending.Ascend(func(j *job) bool {
		if j.Spec.Reservation == "" || j.Hold != HoldNone || s.neverStarts(j) != "" {
			return true
		}
		ws, werr := s.pol.resv.Windows(j.Spec.Reservation, now, end, nil)
		if werr != nil || len(ws) == 0 {
			return true // no window to start in within the plan
		}
		req := s.policyRequest(j)
		b.slots = s.pol.p.Slots(&req, s.pol.usage, b.slots[:0])
		for _, sl := range b.slots {
			if sl.Limit == 0 {
				continue // admits nothing: it never starts
			}
			var id backfill.CounterID
			if id, err = b.counter(set, sl); err != nil {
				return false
			}
			for _, w := range ws {
				from := w.Start
				if from.Before(now) {
					from = now
				}
				if err = set.Hold(id, sl.Add, from, w.End); err != nil {
					err = fmt.Errorf("scheduler: backfill counters: reservation job %d: %w", j.ID, err)
					return false
				}
			}
		}
		return true
	})
	return err
}
