package scheduler

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// Jobs that can never start, and the nodes a job in a reservation waits
// for. A pending job that no course of events changes (only an update of
// the job or of its partition would) takes no place in the backfill plan
// — no reservation a lower-priority job would have to keep off, no
// expected start — and Explain says why instead.

// neverStarts says why pending job x can never start as it stands, or ""
// when it may: its time limit exceeds its partition's MaxTime, its node
// count is outside the partition's MinNodes/MaxNodes (neither overridden
// by its QOS), or its dependency can never be satisfied. The main pass
// reports a future begin time before the partition's limits (as Slurm
// does), so such a job may wait on BeginTime; it never starts all the
// same.
func (s *Scheduler) neverStarts(x *job) string {
	overTime, outNodes := s.partitionLimits(x)
	pc := &s.parts[x.part].cfg
	switch {
	case overTime:
		return fmt.Sprintf("it can never start as it is: its time limit %s exceeds partition %s MaxTime %s",
			policy.FormatDuration(x.TimeLimit), pc.Name, policy.FormatDuration(pc.MaxTime))
	case outNodes:
		return fmt.Sprintf("it can never start as it is: %d node(s) is outside partition %s MinNodes=%d MaxNodes=%d",
			x.nodes, pc.Name, pc.MinNodes, pc.MaxNodes)
	}
	if !x.dep.IsZero() {
		if b, waiting := s.depBlocker(x); waiting && b.Reason == policy.ReasonDependencyNeverSatisfied {
			return "it can never start: its dependency can never be satisfied (" + b.String() + ")"
		}
	}
	return ""
}

// outsidePlan reports whether pending job x stays out of the backfill
// plan although its reason is one the plan considers: it can never start,
// or it waits on a dependency too (the main pass reports a future begin
// time first). As in Slurm, only a job eligible but for its begin time
// and resources is planned.
func (s *Scheduler) outsidePlan(x *job) bool {
	if s.neverStarts(x) != "" {
		return true
	}
	_, waiting := s.depBlocker(x)
	return waiting && !x.dep.IsZero()
}

// nodesBlocker returns the blocker of job j when fewer than j.nodes of
// the nodes of pool that can hold it are up, naming those that are not
// with their state; where says what pool is ("" for the partition,
// "reservation R" for the nodes of a reservation the job runs in).
func (s *Scheduler) nodesBlocker(j *job, pool topology.NodeSet, where string) (Blocker, bool) {
	up := pool.And(s.usable)
	c := up.Count()
	if c >= j.nodes {
		return Blocker{}, false
	}
	// As the main pass: ReqNodeNotAvail when none of its nodes is up,
	// Resources when it merely needs more than are up.
	b := Blocker{Kind: BlockerNodes, Reason: policy.ReasonReqNodeNotAvail}
	if c > 0 {
		b.Reason = policy.ReasonResources
	}
	var states []string
	for i := pool.Next(0); i >= 0; i = pool.Next(i + 1) {
		if !s.usable.Has(i) {
			n := &s.nodes[i]
			b.Nodes = append(b.Nodes, n.cfg.Name)
			st := n.cfg.Name + " " + n.state().String()
			if n.reason != "" {
				st += " (" + n.reason + ")"
			}
			states = append(states, st)
		}
	}
	const maxShown = 8
	more := ""
	if len(states) > maxShown {
		more = fmt.Sprintf(" and %d more", len(states)-maxShown)
		states = states[:maxShown]
	}
	in := ""
	if where != "" {
		in = " in " + where
	}
	b.Detail = fmt.Sprintf("needs %d node(s)%s able to hold it, %d are up; not up: %s%s", j.nodes, in, c,
		strings.Join(states, ", "), more)
	if len(states) == 0 {
		// Every such node is up: there are too few of them (nodes
		// removed, or changed, since the job's count was fixed).
		b.Detail = fmt.Sprintf("needs %d node(s)%s able to hold it, only %d exist", j.nodes, in, c)
	}
	return b, true
}

// jobNodesBlocker is the nodes blocker of job j: over the nodes able to
// hold it, or, for a job that runs in a reservation (not a FLEX one,
// whose job may also use nodes outside it), over those of them the
// reservation holds.
func (s *Scheduler) jobNodesBlocker(j *job) (Blocker, bool) {
	if j.Spec.Reservation != "" && s.pol != nil {
		if r, ok := s.pol.resv.Get(j.Spec.Reservation); ok && !r.Flags.Has(policy.ResvFlex) && !r.Nodes.IsEmpty() && r.Nodes.Len() == j.shape.capable.Len() {
			return s.nodesBlocker(j, j.shape.capable.And(r.Nodes), "reservation "+r.Name)
		}
	}
	return s.nodesBlocker(j, j.shape.capable, "")
}

// holdPlanned keeps the main pass off the nodes the last backfill plan
// reserved for job j, which waits on its begin time: such a job does not
// block its partition (it is not eligible yet), but a lower-priority job
// the main pass started on its reserved nodes would push its start past
// the one the plan promised. The backfill pass still starts the jobs that
// end before the reservation (it plans around it).
func (s *Scheduler) holdPlanned(j *job) {
	if !j.reserved {
		return
	}
	for _, i := range j.planned {
		s.avail.Remove(i)
	}
}
