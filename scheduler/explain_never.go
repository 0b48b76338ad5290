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
	return b, true
}

// jobNodesBlocker is the nodes blocker of job j: over the nodes able to
// hold it, or, for a job that runs in a reservation (not a FLEX one,
// whose job may also use nodes outside it), over those of them the
// reservation holds.
func (s *Scheduler) jobNodesBlocker(j *job) (Blocker, bool) {
	if j.Spec.Reservation != "" && s.pol != nil {
		if r, ok := s.pol.resv.Get(j.Spec.Reservation); ok && !r.Flags.Has(policy.ResvFlex) && r.Nodes.Len() == j.shape.capable.Len() {
			return s.nodesBlocker(j, j.shape.capable.And(r.Nodes), "reservation "+r.Name)
		}
	}
	return s.nodesBlocker(j, j.shape.capable, "")
}
