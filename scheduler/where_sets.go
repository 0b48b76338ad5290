package scheduler

import (
	"github.com/sluicehq/sluice/feature"
	"github.com/sluicehq/sluice/topology"
)

// The where chooser's working data, kept so that the backfill plan,
// which calls a where job's chooser at every time it tries, neither
// allocates nor matches features per call: the nodes of each matching-OR
// alternative and counted group (shared by every job with the same
// constraint, rebuilt when a node's configuration changes) and scratch
// sets.

// whereSets holds, for one constraint, the nodes whose features match
// each matching-OR alternative and each counted group (all nodes, not
// only a job's capable ones), and the union of the groups.
type whereSets struct {
	alts   []topology.NodeSet
	groups []topology.NodeSet
	union  topology.NodeSet
}

// whereCache is the scheduler's where-chooser state: whereSets by
// constraint (canonical text) for node generation gen (Scheduler.tierGen),
// and scratch sets and slices the chooser reuses (it is not re-entered).
type whereCache struct {
	gen         uint64
	sets        map[string]*whereSets
	alt, rest   topology.NodeSet
	sub, narrow topology.NodeSet
	out, need   []int
	// The task spread's view (where_tasks.go): each node's room, the
	// candidates with room and of one alternative, the most-room choice's
	// set, and scratch lists.
	room            []int64
	rooms           []int64
	tasks, tasksAlt topology.NodeSet
	top             topology.NodeSet
	order           []int
	// anyFn is anyChoice as a nodeChoice (anyChoiceFn).
	anyFn nodeChoice
	// noNarrow turns narrowAllowed off (tests comparing decisions).
	noNarrow bool
}

// maxWhereSets bounds the constraints whose node sets are kept at once;
// beyond it the cache starts afresh.
const maxWhereSets = 4096

// setsOf returns the node sets of w's constraint for the current nodes.
func (s *Scheduler) setsOf(w *whereReq) *whereSets {
	c := &s.whereC
	if w.sets != nil && w.setsGen == s.tierGen && c.gen == s.tierGen {
		return w.sets
	}
	if c.gen != s.tierGen || c.sets == nil || len(c.sets) >= maxWhereSets {
		c.sets, c.gen = make(map[string]*whereSets), s.tierGen
	}
	key := w.cons.String()
	ws := c.sets[key]
	if ws == nil {
		ws = &whereSets{union: topology.NewNodeSet(len(s.nodes))}
		for _, a := range w.cons.Alternatives() {
			ws.alts = append(ws.alts, s.matching(a))
		}
		for _, g := range w.cons.Groups() {
			set := s.matching(g.Expr)
			ws.groups = append(ws.groups, set)
			ws.union.UnionWith(set)
		}
		c.sets[key] = ws
	}
	w.sets, w.setsGen = ws, s.tierGen
	return ws
}

// matching returns the nodes whose features match e.
func (s *Scheduler) matching(e feature.Expr) topology.NodeSet {
	set := topology.NewNodeSet(len(s.nodes))
	for i := range s.nodes {
		if e.Match(s.nodes[i].cfg.Features) {
			set.Add(i)
		}
	}
	return set
}

// scratchSet returns *p emptied, with length n (allocated when its
// length differs).
func scratchSet(p *topology.NodeSet, n int) topology.NodeSet {
	if p.Len() != n {
		*p = topology.NewNodeSet(n)
	} else {
		p.Reset()
	}
	return *p
}

// groupNeed fills dst with how many nodes each counted group still needs
// once the required nodes are counted toward the first group they
// satisfy, and returns it with the total.
func (w *whereReq) groupNeed(ws *whereSets, dst []int) ([]int, int) {
	dst = w.groupCounts(dst)
	for _, i := range w.required {
		ws.countToward(dst, i)
	}
	total := 0
	for _, x := range dst {
		total += x
	}
	return dst, total
}

// groupCounts fills dst with the count of each counted group.
func (w *whereReq) groupCounts(dst []int) []int {
	dst = dst[:0]
	for _, g := range w.cons.Groups() {
		dst = append(dst, g.Count)
	}
	return dst
}

// countToward counts node i toward the first group in need it
// satisfies.
func (ws *whereSets) countToward(need []int, i int) {
	for k := range need {
		if need[k] > 0 && ws.groups[k].Has(i) {
			need[k]--
			return
		}
	}
}

// narrowAllowed is the backfill plan's allowed set for job x with a
// where request: when every node the chooser can pick is a required
// node or one of a counted group's (n is the required nodes plus what
// the groups still need), or one of a matching OR's alternatives (the
// chooser takes all nodes from one of them), the nodes outside them are
// dropped, so that the plan's search looks at those alone. The choice at every time is
// the same (the chooser never picks the dropped nodes, and the first
// time it can choose is when one of the kept nodes becomes free); the
// set is only narrowed when it keeps at least n nodes, so that a job
// the plan judged able to fit by capacity still is. The result is
// cached on the job and replaced (never changed in place: a kept plan
// holds it) when it differs; the bool says whether it was narrowed.
// allowed is not changed.
func (s *Scheduler) narrowAllowed(x *job, allowed topology.NodeSet, spread, components bool) (topology.NodeSet, bool) {
	w := x.where
	if w == nil || s.whereC.noNarrow || w.contiguous || spread || components || allowed.Len() != len(s.nodes) {
		return allowed, false
	}
	ws := s.setsOf(w)
	c := &s.whereC
	nar := scratchSet(&c.narrow, len(s.nodes))
	if w.cons.Kind() == feature.KindMatchingOR {
		// The chooser picks every node from one alternative
		// (chooseWhere): never a node outside their union.
		for _, a := range ws.alts {
			nar.UnionWith(a)
		}
	} else {
		var total int
		c.need, total = w.groupNeed(ws, c.need)
		if x.nodes != len(w.required)+total {
			return allowed, false
		}
		nar.CopyFrom(ws.union)
	}
	for _, i := range w.required {
		nar.Add(i)
	}
	nar.IntersectWith(allowed)
	if nar.Count() < x.nodes {
		return allowed, false
	}
	if x.bfNarrow.Len() != nar.Len() || !x.bfNarrow.Equal(nar) {
		x.bfNarrow = nar.Clone()
	}
	return x.bfNarrow, true
}
