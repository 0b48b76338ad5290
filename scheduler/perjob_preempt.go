package scheduler

import (
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
)

// withFree runs fn with the free resources of the nodes in free replaced
// by the given vectors (what they would have free once some jobs are gone,
// or over some time window), then puts the nodes' own back. It lets the
// main pass's own predicates — spreadNodes and spreadExtra, which read a
// node's free resources — judge a state that is not the present one, so
// that preemption and Explain decide a GRESPerJob job by the very rule
// placement uses. Nothing else of the node is replaced (the Scheduler is
// not safe for concurrent use, and fn must not change nodes).
func (s *Scheduler) withFree(free map[int]gres.Vector, fn func() bool) bool {
	saved := make(map[int]gres.Vector, len(free))
	for i, f := range free {
		saved[i] = s.nodes[i].free
		s.nodes[i].free = f
	}
	defer func() {
		for i, f := range saved {
			s.nodes[i].free = f
		}
	}()
	return fn()
}

// choosePerJob returns the nodes the main pass (place) would choose for
// job j among fit, every node of which holds the job's per-node minimum,
// or nil: with a topology, the graph's choice under the job's
// constraints, else (or when those nodes do not hold the GRESPerJob
// total) the nodes spreadNodes picks; the total must then spread over
// them (spreadExtra). It reads the nodes' free resources as they are (see
// withFree).
func (s *Scheduler) choosePerJob(j *job, fit topology.NodeSet) []int {
	if fit.Count() < j.nodes {
		return nil
	}
	if s.graph == nil {
		return s.spreadNodes(j, fit.AppendTo(nil), nil)
	}
	p, err := s.graph.Select(fit, j.nodes, j.constraints())
	if err != nil || !p.Met {
		return nil
	}
	nodes := p.Nodes.AppendTo(nil)
	if _, ok := s.spreadExtra(j, nodes); ok {
		return nodes
	}
	nodes = s.spreadNodes(j, fit.AppendTo(nil), nil)
	if nodes == nil {
		return nil
	}
	sub := topology.NewNodeSet(len(s.nodes))
	for _, i := range nodes {
		sub.Add(i)
	}
	if p, err = s.graph.Select(sub, j.nodes, j.constraints()); err != nil || !p.Met {
		return nil
	}
	return p.Nodes.AppendTo(nil)
}
