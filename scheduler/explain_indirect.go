package scheduler

import (
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// Indirect overtakers.
//
// A promise (Estimate.Bound) says: under exact run times and no new
// submissions, the job starts at its planned start or sooner. The plan
// holds every eligible job; what it cannot foresee is a job outside it
// (waiting on a dependency, or on a limit the plan does not carry) that
// is released later. Such a job x delays the explained job j only through
// a chain: x takes room that some planned job y₁ was to use, y₁ is
// replanned and takes room of y₂ … until some yₙ (or x itself, the direct
// case, overtakeScan.visit) takes j's nodes before j's start. Each link
// is a job replanned before j, so it is ahead of j in the queue, and it
// can only move onto nodes it can use (its capable set).
//
// Conservative backfill: every planned job holds a reservation, and a
// released job backfills only where no reservation is delayed, so x moves
// a reserved job only by being ahead of it in priority order, and only a
// job ahead of j can then be replanned before j. Let S be the closure of
// j's usable nodes under "add the capable nodes of a job planned ahead of
// j whose capable nodes meet S". Every yᵢ of a chain ending on j's nodes
// meets S (by induction from the end), so x must be able to use a node of
// S: an x ahead of j whose capable nodes miss S cannot delay j, and one
// behind j cannot either (it never moves a reservation). The closure is a
// superset (it ignores times and the order among the jobs ahead), which
// keeps the rule sound at the cost of some promises.
//
// EASY backfill: only the first k jobs that cannot start hold a
// reservation. An x ahead of j that is released and cannot start takes a
// reservation before j does, so with the k reservations taken j's start
// is unprotected and a job behind it may backfill onto its nodes,
// whatever nodes x runs on; and if x does start, it moves whatever
// unreserved job it takes room from. So under EASY any job outside the
// plan ahead of j that can start some day (overtakeReason) is an
// overtaker. If some job ahead of j is planned later without a
// reservation (bf_min_prio_reserve, --no-reserve …, or the k taken), even
// a released job behind j may take its room (backfill protects only
// reservations), and that job, replanned ahead of j, may take j's nodes:
// then every job outside the plan counts, ahead or behind.

// overtakeScan collects, during Explain's walk of the queue up to the
// explained job, what indirectOvertakers needs.
type overtakeScan struct {
	// easy: the plan is an EASY backfill plan.
	easy bool
	// cands are the jobs ahead outside the plan that are no direct
	// overtakers, with what keeps them outside.
	cands []overtakeCand
	// ahead are the capable nodes of the jobs ahead in the plan, one
	// entry per shape (seen: the shapes listed), so that the closure's
	// work grows with the distinct shapes ahead, not with the queue.
	ahead []topology.NodeSet
	seen  map[*shape]bool
	// unreserved is a job ahead planned to start later without a
	// reservation (EASY), or nil.
	unreserved *job
}

type overtakeCand struct {
	x *job
	r policy.Reason
}

// newOvertakeScan returns the scan for a plan read through ctx.
func (s *Scheduler) newOvertakeScan(ctx *planCtx) *overtakeScan {
	return &overtakeScan{easy: !ctx.strict && s.bf != nil && s.bf.planner.Config().Mode == backfill.EASY}
}

// visit records job x ahead of the explained job, which may use the nodes
// of allowed and needs the limit counters keys, and lists x in est when
// it is a direct overtaker: outside the plan (overtakeReason) and able to
// use one of those nodes or to take room on one of keys (limitKeys).
// reserved says whether x holds a reservation.
func (sc *overtakeScan) visit(s *Scheduler, now time.Time, x *job, ctx *planCtx, reserved bool, allowed topology.NodeSet, keys map[policy.CounterKey]bool, est *Estimate, max int) {
	if r, ok := s.overtakeReason(now, x); ok {
		if x.shape.capable.Intersects(allowed) || s.sharesCounter(x, keys) {
			est.addOvertaker(x, r, false, max)
		} else {
			sc.cands = append(sc.cands, overtakeCand{x, r})
		}
		return
	}
	if x.Hold != HoldNone {
		return
	}
	if start, nodes := ctx.plannedOf(x); !start.IsZero() || len(nodes) > 0 {
		if !sc.seen[x.shape] {
			if sc.seen == nil {
				sc.seen = map[*shape]bool{}
			}
			sc.seen[x.shape] = true
			sc.ahead = append(sc.ahead, x.shape.capable)
		}
		if sc.easy && !reserved && start.After(now) && sc.unreserved == nil {
			sc.unreserved = x
		}
	}
}

// indirectOvertakers lists in est the indirect overtakers of job j, which
// may use the nodes of allowed, after the walk of the jobs ahead (the
// argument is at the top of this file).
func (s *Scheduler) indirectOvertakers(now time.Time, j *job, sc *overtakeScan, allowed topology.NodeSet, est *Estimate, max int) {
	if sc.easy {
		for _, c := range sc.cands {
			est.addOvertaker(c.x, c.r, true, max)
		}
		if sc.unreserved == nil || est.OvertakersTotal > 0 || !est.Bound {
			return
		}
		// The jobs behind j (j is pending, so in the queue).
		s.pending.AscendGreaterOrEqual(j, func(x *job) bool {
			if x != j {
				if r, ok := s.overtakeReason(now, x); ok {
					est.addOvertaker(x, r, true, max)
				}
			}
			return true
		})
		return
	}
	if len(sc.cands) == 0 {
		return
	}
	// The closure: at most one pass per set added, each over the sets
	// not yet added (O(S² · nodes/64) for S distinct shapes ahead).
	set := allowed.Clone()
	used := make([]bool, len(sc.ahead))
	for grown := true; grown; {
		grown = false
		for i, c := range sc.ahead {
			if !used[i] && c.Intersects(set) {
				used[i], grown = true, true
				set.UnionWith(c)
			}
		}
	}
	for _, c := range sc.cands {
		if c.x.shape.capable.Intersects(set) {
			est.addOvertaker(c.x, c.r, true, max)
		}
	}
}
