package scheduler

import (
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
)

// Explain and GRESPerJob (--gpus) jobs. The backfill planner plans such a
// job's total exactly where it can (bfMin, bfSpread; see bfSpreadExact)
// and at ceil(total/nodes) on every node elsewhere (typed totals, GPUs
// that bring CPUs or memory): cautious, but blind there to a total that
// fits unevenly (-N2 --gpus=a100:4 on nodes with 3 and 1 free). The main
// pass places the total itself (spreadNodes, spreadExtra). Explain's
// resource blocker and its what-ifs judge a start now by the main pass's
// rule where the main pass is what would start the job; later starts, and
// starts by the backfill pass, are the planner's.

// perJobTotal returns, for each GRESPerJob request of j, its TRES and the
// job's total of it (the per-node minimum on every node plus the rest),
// or nil for a job without one beyond one per node.
func (s *Scheduler) perJobTotal(j *job) (ids []gres.ID, totals []int64) {
	for _, r := range j.extra {
		id := s.reg.MustLookup(deviceTRES(r.Name, r.Type))
		ids = append(ids, id)
		totals = append(totals, j.perNode[id]*int64(j.nodes)+j.extraTotal[id])
	}
	return ids, totals
}

// perJobNeed adds to need the job's GRESPerJob totals (need.PerJob) and,
// when the nodes of fit cannot hold them, a deficit per total with the
// most that j.nodes of those nodes hold now. It reports whether a total
// is short; topo whether the totals fit but not under the job's topology
// constraint (place's choice fails).
func (s *Scheduler) perJobNeed(j *job, fit topology.NodeSet, need *ResourceNeed) (short, topo bool) {
	ids, totals := s.perJobTotal(j)
	if len(ids) == 0 {
		return false, false
	}
	tv := s.reg.NewVector()
	for k, id := range ids {
		tv[id] = totals[k]
	}
	need.PerJob = s.reg.FormatTRES(tv)
	if fit.Count() < j.nodes {
		return false, false // too few nodes hold the minimum: the per-node deficits say it
	}
	if s.spreadNodes(j, fit.AppendTo(nil), nil) == nil {
		for k, id := range ids {
			free := make([]int64, 0, fit.Count())
			for i := fit.Next(0); i >= 0; i = fit.Next(i + 1) {
				free = append(free, s.nodes[i].free[id])
			}
			slices.SortFunc(free, func(a, b int64) int { return int(b - a) })
			var room int64
			for _, f := range free[:j.nodes] {
				room += f
			}
			need.Deficits = append(need.Deficits, Deficit{TRES: s.reg.Name(id), PerNode: j.perNode[id],
				Nodes: fit.Count(), Total: totals[k], Room: room})
		}
		return true, false
	}
	return false, s.choosePerJob(j, fit) == nil
}

// mainPassTurn reports whether job j would get an unobstructed turn in
// the main pass on the nodes of allowed: no pending job ahead of it that
// holds back its partition (or reservation) shares a node with allowed.
// Only then does the main pass, rather than the backfill pass, decide
// whether it starts now. It errs on the side of false.
func (s *Scheduler) mainPassTurn(j *job, allowed topology.NodeSet) bool {
	open := true
	s.pending.Ascend(func(x *job) bool {
		if x == j {
			return false
		}
		if x.Reason.Blocking() && (x.Spec.Reservation != "" || s.parts[x.part].nodes.Intersects(allowed)) {
			open = false
			return false
		}
		return true
	})
	return open
}

// perJobFitAt places GRESPerJob job x by the main pass's rule on what
// the profile holds free on every allowed node over [t, t+d): a node takes
// part when its least free resources over the window hold the job's
// per-node minimum (and, under enforce-binding or --gpus-per-socket, the
// device choice succeeds now), and place's choice among those nodes must
// hold the total. It returns the nodes, or nil.
func (s *Scheduler) perJobFitAt(p *backfill.Profile, x *job, allowed topology.NodeSet, t time.Time, d time.Duration) []int {
	end := t.Add(d)
	low := make(map[int]gres.Vector)
	fit := topology.NewNodeSet(len(s.nodes))
	for i := allowed.Next(0); i >= 0; i = allowed.Next(i + 1) {
		steps, err := p.Timeline(i)
		if err != nil {
			return nil
		}
		var m gres.Vector
		for k, st := range steps {
			if !st.Start.Before(end) || (k+1 < len(steps) && !steps[k+1].Start.After(t)) {
				continue // outside the window
			}
			if m == nil {
				m = st.Free.Clone()
				continue
			}
			for a := range m {
				m[a] = min(m[a], st.Free[a])
			}
		}
		if m == nil {
			continue
		}
		m = m[:min(len(m), s.reg.Len())] // no profile-only dimension (backfill_claims.go)
		m[gres.Node] = s.nodes[i].free[gres.Node]
		if !x.perNode.Fits(m) || ((x.choiceDecides(&s.nodes[i]) || x.exclUser() || s.nodes[i].exclUsers > 0) && !s.fitsNow(x, i)) {
			continue
		}
		low[i] = m
		fit.Add(i)
	}
	var nodes []int
	s.withFree(low, func() bool {
		nodes = s.choosePerJob(x, fit)
		return nodes != nil
	})
	return nodes
}

// perJobGPUs returns the type and total of the GPUs job j asks as its
// only GPU request, a GRESPerJob (--gpus) one; ok is false otherwise.
func perJobGPUs(j *job) (typ string, total int64, ok bool) {
	for _, rs := range [][]gres.Request{j.Spec.GRESPerNode, j.Spec.GRESPerTask} {
		for _, r := range rs {
			if strings.EqualFold(r.Name, "gpu") {
				return "", 0, false
			}
		}
	}
	if j.Spec.GPUsPerSocket > 0 {
		return "", 0, false
	}
	n := 0
	for _, r := range j.Spec.GRESPerJob {
		if strings.EqualFold(r.Name, "gpu") {
			typ, total = r.Type, r.Count
			n++
		}
	}
	return typ, total, n == 1
}
