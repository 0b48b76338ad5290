package scheduler

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// Overtaker is a higher-priority pending job that the plan does not hold
// — it waits on a dependency, or on a limit the plan does not carry over
// time — but that can still start: once released it takes its turn
// ahead of the explained job, on nodes the explained job could use, so
// the explained job's planned start is no promise. As in Slurm, the
// backfill plan considers only jobs that are eligible now.
type Overtaker struct {
	Job    JobID
	Reason policy.Reason
}

// mayOvertake reports whether job x, ahead of the explained job in the
// queue, is an Overtaker of a job that may use the nodes of allowed:
// pending outside the plan (no expected start), not held, not in a
// reservation (whose window the plan blocks), able to start some day,
// and able to use one of those nodes.
func (s *Scheduler) mayOvertake(x *job, allowed topology.NodeSet) bool {
	if x.Hold != HoldNone || x.Spec.Reservation != "" || !x.ExpectedStart.IsZero() || x.reserved {
		return false
	}
	switch {
	case plannable(x.Reason), x.Reason == policy.ReasonNone:
		return false // in the plan (or beyond its window: after the job anyway)
	case x.Reason == policy.ReasonDependency:
	case x.Reason.Blocking(), x.Reason == policy.ReasonPriority:
		return false
	case !x.Reason.IsLimit():
		return false
	}
	return s.neverStarts(x) == "" && x.shape.capable.Intersects(allowed)
}

// addOvertaker lists x among the estimate's overtakers (at most max).
func (e *Estimate) addOvertaker(x *job, max int) {
	e.OvertakersTotal++
	if len(e.Overtakers) < max {
		e.Overtakers = append(e.Overtakers, Overtaker{Job: x.ID, Reason: x.Reason})
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
		fmt.Fprintf(b, " %d (%s)", o.Job, o.Reason)
	}
	if e.OvertakersTotal > len(e.Overtakers) {
		fmt.Fprintf(b, " … %d more", e.OvertakersTotal-len(e.Overtakers))
	}
	b.WriteString("\n")
}
