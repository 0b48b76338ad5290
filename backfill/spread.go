package backfill

import (
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
)

// A request with a Spread (a job's GPU total beyond one per node, Slurm's
// --gpus) is searched like any other for its per-node minimum: a node is
// a candidate while it holds PerNode for the whole interval, and the
// summaries only rule nodes out. What decides is exact: a set of
// candidates fits when what they have free beyond PerNode, each at its
// lowest over the interval, covers the Spread; the booking gives each
// chosen node, in the chosen order, as much of what is left as it holds.
// The candidates' spare amounts change only where their own free amounts
// do, so the sweep tries the choice again at every change point of a
// candidate, not only where one joins.

// hasSpread reports whether the query carries a Spread.
func (q *query) hasSpread() bool { return len(q.sdims) > 0 }

// setSpread projects r.Spread into q.
func (p *Profile) setSpread(q *query, r *Request) error {
	q.spread, q.sdims = q.spread[:0], q.sdims[:0]
	if r.Spread.IsZero() {
		return nil
	}
	q.spread = slices.Grow(q.spread, p.a)[:p.a]
	ok, err := p.project(r.Spread, q.spread)
	if err != nil {
		return fmt.Errorf("%w: Spread: %w", ErrInvalidRequest, err)
	}
	if !ok {
		q.never = true // a resource no node has
	}
	for j, v := range q.spread {
		if v != 0 {
			q.sdims = append(q.sdims, j)
		}
	}
	return nil
}

// spareOn writes into dst (length a) what node i has free beyond the
// request's per-node minimum at its lowest over [s, e), counting the
// ghost's use as free, never below zero.
func (p *Profile) spareOn(q *query, i int, s, e int64, dst []int64) {
	for _, j := range q.sdims {
		dst[j] = posInf
	}
	p.walkFree(q, i, s, e, func(_ int64, f []int64) bool {
		for _, j := range q.sdims {
			dst[j] = min(dst[j], f[j])
		}
		return true
	})
	for _, j := range q.sdims {
		dst[j] = max(dst[j]-q.req[j], 0)
	}
}

// walkFree calls fn with node i's free amounts (the ghost's use counted
// free) piece by piece over [s, e), from each piece's start, until fn
// returns false.
func (p *Profile) walkFree(q *query, i int, s, e int64, fn func(at int64, f []int64) bool) {
	a := p.a
	tl := p.tls[i]
	gx := q.ghostAt(i)
	k := tl.seg(s)
	for at := s; at < e && k < len(tl.times); {
		segEnd := int64(posInf)
		if k+1 < len(tl.times) {
			segEnd = tl.times[k+1]
		}
		end := segEnd
		f := tl.free[k*a : (k+1)*a]
		if gx >= 0 {
			g := q.ghost
			if g.s > at && g.s < end {
				end = g.s
			}
			if g.e.end > at && g.e.end < end {
				end = g.e.end
			}
			if at >= g.s && at < g.e.end {
				f = g.freeWith(f, gx)
			}
		}
		if !fn(at, f) {
			return
		}
		at = end
		if at >= segEnd {
			k++
		}
	}
}

// spreadOver reports whether nodes, in this order, hold the Spread over
// [s, e): each takes as much of what is left as it has spare. On success
// q.shareOf, q.share and q.use hold each node's share and its whole use
// (PerNode plus the share, or the whole node for an exclusive request).
func (p *Profile) spreadOver(q *query, nodes []int, s, e int64) bool {
	a := p.a
	n := len(nodes)
	if q.hasTasks() {
		if !p.tasksOver(q, nodes, s, e) {
			return false
		}
		return p.spreadUses(q, nodes)
	}
	q.share = slices.Grow(q.share[:0], n*a)[:n*a]
	clear(q.share)
	q.left = slices.Grow(q.left[:0], a)[:a]
	copy(q.left, q.spread)
	spare := q.spare(a)
	rest := 0
	for _, j := range q.sdims {
		if q.left[j] > 0 {
			rest++
		}
	}
	for x, i := range nodes {
		if rest == 0 {
			break
		}
		p.spareOn(q, i, s, e, spare)
		for _, j := range q.sdims {
			c := min(q.left[j], spare[j])
			if c <= 0 {
				continue
			}
			q.share[x*a+j] = c
			if q.left[j] -= c; q.left[j] == 0 {
				rest--
			}
		}
	}
	if rest > 0 {
		return false
	}
	return p.spreadUses(q, nodes)
}

// spreadUses records, after a successful spread of q.share over nodes,
// each node's whole use (PerNode plus its share, or the whole node for an
// exclusive request); it returns true.
func (p *Profile) spreadUses(q *query, nodes []int) bool {
	a := p.a
	n := len(nodes)
	q.shareOf = append(q.shareOf[:0], nodes...)
	q.use = slices.Grow(q.use[:0], n*a)[:n*a]
	for x, i := range nodes {
		u := q.use[x*a : (x+1)*a]
		if q.excl {
			copy(u, p.caps[i*a:(i+1)*a])
			continue
		}
		for j := range u {
			u[j] = q.req[j] + q.share[x*a+j]
		}
	}
	return true
}

// spare returns q's buffer of a spare amounts.
func (q *query) spare(a int) []int64 {
	q.spareBuf = slices.Grow(q.spareBuf[:0], a)[:a]
	return q.spareBuf
}

// spreadUse returns what a Spread request takes on node i (one of the
// last successful spreadOver's nodes), or nil.
func (p *Profile) spreadUse(q *query, i int) []int64 {
	a := p.a
	for x, nd := range q.shareOf {
		if nd == i {
			return q.use[x*a : (x+1)*a]
		}
	}
	return nil
}

// chooseSpread chooses, among the candidates F at t, nodes that hold the
// Spread over the interval a start at t reserves: the chooser's own
// choice when it does; else the required nodes and the candidates with
// the most spare (ties to the lower index), Nodes in all, in increasing order for the default chooser
// or as a custom chooser takes them from that set. It returns nil when
// neither choice holds it.
func (p *Profile) chooseSpread(q *query, F topology.NodeSet, t int64) ([]int, error) {
	end := p.endAt(t, q.d)
	nodes, err := p.choosePlain(q, F, t)
	if err != nil || nodes == nil {
		return nil, err
	}
	if p.spreadOver(q, nodes, t, end) {
		return nodes, nil
	}
	a := p.a
	type ranked struct {
		node  int
		spare int64
	}
	sc := p.scratch()
	rk := make([]ranked, 0, q.n*2)
	spare := q.spare(a)
	for i := F.Next(0); i >= 0; i = F.Next(i + 1) {
		p.spareOn(q, i, t, end, spare)
		var sum int64
		if q.hasTasks() {
			sum = q.taskRoom(spare) // the tasks it could take
		} else {
			for _, j := range q.sdims {
				sum += min(spare[j], q.spread[j])
			}
		}
		rk = append(rk, ranked{i, sum})
	}
	slices.SortStableFunc(rk, func(x, y ranked) int {
		switch {
		case x.spare > y.spare:
			return -1
		case x.spare < y.spare:
			return 1
		}
		return x.node - y.node
	})
	top := append(q.nodeList(q.n), q.required...)
	for _, r := range rk {
		if len(top) == q.n {
			break
		}
		if !q.isRequired(r.node) {
			top = append(top, r.node)
		}
	}
	slices.Sort(top)
	if q.chooser != nil {
		set := sc.tmp
		set.Reset()
		for _, i := range top {
			set.Add(i)
		}
		if top, err = p.choosePlain(q, set, t); err != nil || top == nil {
			return nil, err
		}
	}
	if p.spreadOver(q, top, t, end) {
		return top, nil
	}
	return nil, nil
}

// spreadCapable reports whether the allowed nodes that can hold the
// per-node minimum could ever hold the Spread: on each of its resources
// the Nodes of them with the most capacity beyond the minimum hold it.
func (p *Profile) spreadCapable(q *query) bool {
	if !q.hasSpread() {
		return true
	}
	if q.hasTasks() {
		return p.tasksCapable(q)
	}
	a := p.a
	room := make([]int64, 0, 64)
	for _, j := range q.sdims {
		room = room[:0]
		for i := q.allowed.Next(0); i >= 0; i = q.allowed.Next(i + 1) {
			if c := p.caps[i*a : (i+1)*a]; q.fits(c) {
				room = append(room, c[j]-q.req[j])
			}
		}
		slices.SortFunc(room, func(x, y int64) int { return int(y - x) })
		var sum int64
		for _, r := range room[:min(q.n, len(room))] {
			sum += r
		}
		if sum < q.spread[j] {
			return false
		}
	}
	return true
}

// shares returns each chosen node's Spread share as vectors, or nil for a
// request without a Spread.
func (p *Profile) shares(q *query) []gres.Vector {
	if !q.hasSpread() {
		return nil
	}
	a := p.a
	out := make([]gres.Vector, len(q.shareOf))
	for x := range q.shareOf {
		out[x] = p.expand(q.share[x*a : (x+1)*a])
	}
	return out
}

// holdsUntil returns the first time in [s, e) at which node i cannot
// hold use (counting the ghost's use as free), or e.
func (p *Profile) holdsUntil(q *query, i int, use []int64, s, e int64) int64 {
	until := e
	p.walkFree(q, i, s, e, func(at int64, f []int64) bool {
		if !holds(f, use) {
			until = at
			return false
		}
		return true
	})
	return until
}
