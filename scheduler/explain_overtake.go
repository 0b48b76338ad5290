package scheduler

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// Overtaker is a higher-priority pending job that the plan does not hold
// — it waits on a dependency, or on a limit the plan does not carry over
// time — but that can still start: once released it takes its turn
// ahead of the explained job, on nodes the explained job could use, so
// the explained job's planned start is no promise. As in Slurm, the
// backfill plan considers only jobs that are eligible now.
//
// An Indirect overtaker cannot use the explained job's nodes itself but
// can displace a job planned ahead of it, which then can (see
// indirectOvertakers), or, under EASY backfill (bf_max_job_test with
// Slurm's single reservation), can take the reservation the explained
// job holds.
type Overtaker struct {
	// Job is the overtaking job.
	Job JobID
	// Reason is what keeps it outside the plan (its dependency first).
	Reason policy.Reason
	// Indirect: it overtakes through a job ahead (see above).
	Indirect bool
}

// overtakeReason reports whether pending job x is outside the plan but
// can still start, and what keeps it outside (its dependency, whatever
// reason it reports first, or a limit): pending outside the plan (no
// expected start), not held, not in a reservation (whose window the plan
// blocks), not held only by the concurrent limits the plan carries
// (limitHeld), and able to start some day (neither neverStarts nor a
// limit it exceeds with nothing running).
func (s *Scheduler) overtakeReason(now time.Time, x *job) (policy.Reason, bool) {
	if x.Hold != HoldNone || x.Spec.Reservation != "" || !x.ExpectedStart.IsZero() || x.reserved {
		return 0, false
	}
	r := x.Reason
	switch {
	case !x.dep.IsZero() && s.depHolds(x):
		// Outside the plan for its dependency, whatever it reports first
		// (a begin time, a limit).
		r = policy.ReasonDependency
	case s.bf != nil && r.IsLimit() && s.limitHeld(now, x):
		// The plan considers it (limitplan.go): planned where its limits
		// and the nodes allow, or beyond the window (after the job anyway).
		return 0, false
	case plannable(r), r == policy.ReasonNone:
		return 0, false // in the plan (or beyond its window: after the job anyway)
	case r == policy.ReasonDependency:
	case r.Blocking(), r == policy.ReasonPriority, !r.IsLimit():
		return 0, false
	}
	if s.neverBlocker(now, x).Blocked() {
		return 0, false // above a limit even with nothing else running
	}
	return r, s.neverStarts(x) == ""
}

// limitKeys returns the limit counters job j counts against (nil without
// a policy): a job outside the plan that counts against one of them may
// take, once released, the room j's planned start needs, whatever nodes
// it runs on.
func (s *Scheduler) limitKeys(j *job) map[policy.CounterKey]bool {
	if s.pol == nil {
		return nil
	}
	req := s.policyRequest(j)
	var keys map[policy.CounterKey]bool
	for _, sl := range s.pol.p.Slots(&req, s.pol.usage, nil) {
		if keys == nil {
			keys = map[policy.CounterKey]bool{}
		}
		keys[sl.Key] = true
	}
	return keys
}

// hetOvertakeScope is what an overtaker of pending job j may take to
// delay it: j's allowed nodes and limit counters keys or, for a
// component of a heterogeneous job, which starts only with its pending
// siblings, the nodes and counters of them all (a job that takes a
// sibling's node delays every component).
func (s *Scheduler) hetOvertakeScope(j *job, allowed topology.NodeSet, keys map[policy.CounterKey]bool) (topology.NodeSet, map[policy.CounterKey]bool) {
	if j.HetJobID == 0 {
		return allowed, keys
	}
	comps := s.hetPending(j)
	if len(comps) < 2 {
		return allowed, keys
	}
	all := allowed.Clone()
	for _, c := range comps {
		if c == j {
			continue
		}
		all.UnionWith(s.jobAllowed(c))
		for k := range s.limitKeys(c) {
			if keys == nil {
				keys = map[policy.CounterKey]bool{}
			}
			keys[k] = true
		}
	}
	return all, keys
}

// sharesCounter reports whether job x counts against one of keys.
func (s *Scheduler) sharesCounter(x *job, keys map[policy.CounterKey]bool) bool {
	if len(keys) == 0 {
		return false
	}
	req := s.policyRequest(x)
	for _, sl := range s.pol.p.Slots(&req, s.pol.usage, nil) {
		if keys[sl.Key] {
			return true
		}
	}
	return false
}

// addOvertaker lists x, outside the plan for r, among the estimate's
// overtakers (at most max); indirect as Overtaker.Indirect.
func (e *Estimate) addOvertaker(x *job, r policy.Reason, indirect bool, max int) {
	e.OvertakersTotal++
	if len(e.Overtakers) < max {
		e.Overtakers = append(e.Overtakers, Overtaker{Job: x.ID, Reason: r, Indirect: indirect})
	}
}

// writeOvertakers writes the estimate's overtakers as an explanation's
// line.
func (e *Estimate) writeOvertakers(b *strings.Builder) {
	if e.OvertakersTotal == 0 {
		return
	}
	b.WriteString("    may be overtaken by higher-priority job(s) outside the plan:")
	for _, o := range e.Overtakers {
		if o.Indirect {
			fmt.Fprintf(b, " %d (%s, through a job ahead)", o.Job, o.Reason)
			continue
		}
		fmt.Fprintf(b, " %d (%s)", o.Job, o.Reason)
	}
	if e.OvertakersTotal > len(e.Overtakers) {
		fmt.Fprintf(b, " … %d more", e.OvertakersTotal-len(e.Overtakers))
	}
	b.WriteString("\n")
}
