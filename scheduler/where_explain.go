package scheduler

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/feature"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// Explain's view of where a job may run (see where.go).

// whereBlockers adds Explain's blockers for where job j may run: its
// constraint unsatisfiable (BadConstraints), required nodes not up
// (ReqNodeNotAvail, "UnavailableNodes:" with the nodes).
func (s *Scheduler) whereBlockers(j *job, out []Blocker) []Blocker {
	if j.where == nil && j.cons.IsZero() {
		return out
	}
	if !s.whereSatisfiable(j) {
		out = append(out, Blocker{Kind: BlockerNodes, Reason: policy.ReasonBadConstraints,
			Detail: fmt.Sprintf("no %d node(s) of partition %s able to hold it meet Constraint %q, NodeList %q and Contiguous %t together (%d capable)",
				j.nodes, j.Partition, j.Spec.Constraint, j.Spec.NodeList, j.Spec.Contiguous, j.shape.capable.Count())})
		return out
	}
	if un := s.unavailableRequired(j); len(un) > 0 {
		states := make([]string, len(un))
		for k, i := range un {
			n := &s.nodes[i]
			states[k] = n.cfg.Name + " " + n.state().String()
			if n.reason != "" {
				states[k] += " (" + n.reason + ")"
			}
		}
		names := s.nodeNames(un)
		out = append(out, Blocker{Kind: BlockerNodes, Reason: policy.ReasonReqNodeNotAvail, Nodes: names,
			Detail: fmt.Sprintf("UnavailableNodes:%s (required by NodeList: %s)", compactNames(names), strings.Join(states, ", "))})
	}
	return out
}

// whereBusyBlocker is Explain's resources blocker of a job whose where
// request the nodes that fit now (fit) cannot meet, although enough of
// them fit: the required nodes busy, no alternative of a matching OR or
// no counted group with enough free nodes, no free consecutive run.
func (s *Scheduler) whereBusyBlocker(j *job, fit topology.NodeSet) (Blocker, bool) {
	w := j.where
	if w == nil || fit.Count() < j.nodes || !s.whereSatisfiable(j) || s.whereChoosable(j, fit) {
		return Blocker{}, false
	}
	var parts []string
	var busy []int
	for _, i := range w.required {
		if !fit.Has(i) {
			busy = append(busy, i)
		}
	}
	busyNames := s.nodeNames(busy)
	if len(busy) > 0 {
		parts = append(parts, "required node(s) "+compactNames(busyNames)+" without its request free")
	}
	switch w.cons.Kind() {
	case feature.KindMatchingOR:
		parts = append(parts, fmt.Sprintf("no alternative of %s has %d node(s) free", w.cons, j.nodes))
	case feature.KindCounts:
		parts = append(parts, fmt.Sprintf("the free nodes do not make the counts of %s", w.cons))
	}
	if w.contiguous {
		parts = append(parts, fmt.Sprintf("no %d consecutive nodes free", j.nodes))
	}
	if ts := j.tasks; ts != nil && ts.total > 0 {
		parts = append(parts, fmt.Sprintf("the free nodes it may use do not hold its %d task(s) on at most %d node(s)", ts.total, ts.nodesMax))
	}
	return Blocker{Kind: BlockerResources, Reason: policy.ReasonResources, Nodes: busyNames,
		Detail: fmt.Sprintf("%d node(s) fit now, but not where it may run: %s", fit.Count(), strings.Join(parts, "; "))}, true
}
