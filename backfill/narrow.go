package backfill

// The sweep after t0 (search, step 2) visits the profile's change points
// in time order: a node can only become feasible where its own free
// amounts change. For a request allowed on a few nodes (a rack named by
// --constraint, a node list, one alternative of a matching OR) nearly all
// change points name none of them, yet the walk reads them all. The
// narrow sweep visits instead the change times of the allowed nodes
// alone, merged from their timelines, with the same answer: a time at
// which no allowed node changes adds nothing to the feasible set, so no
// choice is made there, and the nodes whose feasible interval ended are
// dropped lazily at the next visited time as at any other.

// narrowWorth reports whether the sweep for q should merge the allowed
// nodes' timelines instead of walking every change point: the allowed
// nodes' breakpoints are few against the profile's change points.
func (p *Profile) narrowWorth(q *query) bool {
	ncp := p.cps.Len()
	switch {
	case q.allowed.Len() == 0 || p.sweep < 0:
		return false
	case p.sweep > 0:
		return true
	case ncp < 256:
		return false
	}
	// Merging costs a heap step (about log2 of the allowed count) per
	// breakpoint of an allowed node; the walk costs a summary lookup and
	// a list of nodes (a dozen or more on a large cluster) per change
	// point. Setting up the merge reads every allowed node's timeline
	// (a node has a few breakpoints: at the origin and each job's end).
	// Both counts only grow over the allowed nodes: the walk stops at the
	// first that is too many (without counting the whole set first).
	nodes, segs := 0, 0
	for i := q.allowed.Next(0); i >= 0; i = q.allowed.Next(i + 1) {
		nodes++
		if segs += len(p.tls[i].times); nodes*8 > ncp || segs*2 > ncp {
			return false
		}
	}
	return true
}

// sweepNarrow calls visit, in ascending time order, with each time after
// t0 at which an allowed node's free amounts change and the allowed
// nodes that change then (ascending), until visit returns false.
func (p *Profile) sweepNarrow(q *query, t0 int64, visit func(t int64, nodes []int32) bool) {
	sc := p.scratch()
	if len(sc.cursor) != p.n {
		sc.cursor = make([]int32, p.n)
	}
	h := sc.nheap[:0]
	for i := q.allowed.Next(0); i >= 0; i = q.allowed.Next(i + 1) {
		tl := p.tls[i]
		k := tl.seg(t0) + 1
		if k < len(tl.times) {
			sc.cursor[i] = int32(k)
			heapPush(&h, hitem{u: tl.times[k], node: int32(i)})
		}
	}
	at := sc.at[:0]
	for len(h) > 0 {
		t := h[0].u
		at = at[:0]
		for len(h) > 0 && h[0].u == t {
			it := heapPop(&h)
			at = append(at, it.node)
			tl := p.tls[it.node]
			if k := int(sc.cursor[it.node]) + 1; k < len(tl.times) {
				sc.cursor[it.node] = int32(k)
				heapPush(&h, hitem{u: tl.times[k], node: it.node})
			}
		}
		if !visit(t, at) {
			break
		}
	}
	sc.nheap, sc.at = h[:0], at[:0]
}

// lastChange returns the time of the profile's last change point.
func (p *Profile) lastChange() int64 {
	cp, ok := p.cps.Max()
	if !ok {
		return p.origin
	}
	return cp.t
}
