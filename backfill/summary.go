package backfill

import (
	"slices"

	"github.com/google/btree"
	"github.com/sluicehq/sluice/topology"
)

// summary describes every node's free resources over one range of time,
// so that a search can rule nodes out without reading their timelines.
// Summaries are kept per grid slot (bf_resolution), not per change point:
// change points are exact to the second and many more (every running
// job's exact end), while the summaries every booking must update over
// the time it spans are bounded by one per grid slot.
//
// Every grid slot that holds a change point has one summary, which starts
// at the slot's first change point (the origin for the origin's slot) and
// covers the time up to the next summary's start (forever for the last
// one): with one change point in a slot it describes exactly the state
// there, as a summary per change point would. Its aggregates are conservative over the whole range, so that a
// summary can only rule a node out or let the search look closer, never
// accept one:
//
//   - idle: a superset of the nodes whose free resources equal their
//     capacity at some moment of the range;
//   - bmax: per block of 64 nodes, an upper bound on the block's free
//     vectors over the range (element-wise; reservations lower free
//     amounts without lowering it, scans tighten it again).
type summary struct {
	t     int64
	owner *cowToken
	idle  topology.NodeSet
	bmax  []int64
}

func sumLess(x, y *summary) bool { return x.t < y.t }

// newSummary returns an empty summary of this profile at t.
func (p *Profile) newSummary(t int64) *summary {
	return &summary{t: t, owner: p.cow, idle: topology.NewNodeSet(p.n), bmax: make([]int64, p.nblocks()*p.a)}
}

// buildSummaries makes the summaries of a new profile, one per grid slot
// of the change points cps (ascending, the origin first), exactly.
func (p *Profile) buildSummaries(cps []*changePoint) {
	p.sums = btree.NewG(btreeDeg, sumLess)
	var sums []*summary
	for _, cp := range cps {
		if len(sums) == 0 || p.floorRes(cp.t) != p.floorRes(sums[len(sums)-1].t) {
			sums = append(sums, p.newSummary(cp.t))
		}
	}
	for _, sm := range sums {
		p.sums.ReplaceOrInsert(sm)
	}
	p.resummarize(sums, posInf)
}

// sumFloor returns the summary whose range holds t (t ≥ origin): the one
// with the greatest start ≤ t.
func (p *Profile) sumFloor(t int64) *summary {
	p.sumProbe.t = t
	return floorItem(p.sums, p.sumProbe)
}

// sumEnd returns the end of the range of the summary at t: the next
// summary's start, or posInf.
func (p *Profile) sumEnd(t int64) int64 {
	out := int64(posInf)
	p.sumProbe.t = t + 1
	p.sums.AscendGreaterOrEqual(p.sumProbe, func(sm *summary) bool {
		out = sm.t
		return false
	})
	return out
}

// sumWindow hands a sweep over ascending times the summary whose range
// holds each, reading the summaries a batch at a time instead of looking
// each up.
type sumWindow struct {
	p     *Profile
	buf   []*summary
	x     int
	end   bool // buf reaches the last summary
	batch int  // summaries read at the next fill (doubling: most sweeps stop early)
}

// at returns the summary whose range holds t (t ≥ origin); successive
// calls must not go back in time.
func (w *sumWindow) at(t int64) *summary {
	if len(w.buf) == 0 {
		w.fill(w.p.sumFloor(t))
	}
	for {
		for w.x+1 < len(w.buf) && w.buf[w.x+1].t <= t {
			w.x++
		}
		if w.x+1 < len(w.buf) || w.end {
			return w.buf[w.x]
		}
		w.fill(w.buf[w.x])
	}
}

// fill reads from and the summaries after it.
func (w *sumWindow) fill(from *summary) {
	w.batch = min(max(2*w.batch, 4), 64)
	w.buf, w.x = append(w.buf[:0], from), 0
	w.p.sumProbe.t = from.t + 1
	w.p.sums.AscendGreaterOrEqual(w.p.sumProbe, func(sm *summary) bool {
		w.buf = append(w.buf, sm)
		return len(w.buf) < w.batch
	})
	w.end = len(w.buf) < w.batch
}

// sumEnsure keeps the summaries right for a change point just created at
// t (after the origin). If t's slot has no summary, a new one starts at t,
// a copy of the summary whose range held t (so it stays conservative); if
// the slot's summary starts later, it now starts at t and takes in the
// aggregates of the summary whose range [t, its old start) was part of.
func (p *Profile) sumEnsure(t int64) {
	fl := p.sumFloor(t)
	g := p.floorRes(t)
	if fl.t >= g {
		return // the slot's summary starts before t
	}
	var nx *summary
	p.sumProbe.t = t + 1
	p.sums.AscendGreaterOrEqual(p.sumProbe, func(sm *summary) bool {
		nx = sm
		return false
	})
	if nx != nil && nx.t < g+p.res {
		nx = p.mutSum(nx)
		nx.merge(fl)
		nx.t = t // no summary lies between t and its old start
		return
	}
	p.sums.ReplaceOrInsert(&summary{t: t, owner: p.cow, idle: fl.idle.Clone(), bmax: slices.Clone(fl.bmax)})
}

// merge widens sm's aggregates to cover o's too.
func (sm *summary) merge(o *summary) {
	sm.idle.UnionWith(o.idle)
	for j, v := range o.bmax {
		sm.bmax[j] = max(sm.bmax[j], v)
	}
}

// sumDropped keeps the summaries right for the change point at t (after
// the origin) just deleted: a summary that started there starts at the
// slot's next change point, or goes when there is none. Nothing changes
// between t and that point any more, so the time continues the previous
// summary's range, whose aggregates already cover that state.
func (p *Profile) sumDropped(t int64) {
	p.sumProbe.t = t
	sm, ok := p.sums.Get(p.sumProbe)
	if !ok {
		return
	}
	var next *changePoint
	p.probeA.t = t
	p.cps.AscendGreaterOrEqual(p.probeA, func(cp *changePoint) bool {
		next = cp
		return false
	})
	if next != nil && next.t < p.floorRes(t)+p.res {
		p.mutSum(sm).t = next.t // no summary lies between
		return
	}
	p.sums.Delete(sm)
}

// mutSum returns sm made writable (copied when shared with a clone).
func (p *Profile) mutSum(sm *summary) *summary {
	if sm.owner == p.cow {
		return sm
	}
	c := &summary{t: sm.t, owner: p.cow, idle: sm.idle.Clone(), bmax: slices.Clone(sm.bmax)}
	p.sums.ReplaceOrInsert(c)
	return c
}

// sumsIn returns the summaries whose ranges meet [s, e) (s ≥ origin),
// made writable, in a scratch slice the caller must hand back with
// putSums, and the end of the last one's range.
func (p *Profile) sumsIn(s, e int64) ([]*summary, int64) {
	sc := p.scratch()
	sums := append(sc.sums[:0], p.sumFloor(s))
	next := int64(posInf)
	p.sumProbe.t = sums[0].t + 1
	p.sums.AscendGreaterOrEqual(p.sumProbe, func(sm *summary) bool {
		if sm.t >= e {
			next = sm.t
			return false
		}
		sums = append(sums, sm)
		return true
	})
	for x := range sums {
		sums[x] = p.mutSum(sums[x])
	}
	sc.sums = nil // in use; putSums returns it
	return sums, next
}

func (p *Profile) putSums(sums []*summary) {
	clear(sums)
	p.sc.sums = sums[:0]
}

// rangeOf returns the range [lo, hi) of sums[x], a run of consecutive
// summaries whose last one's range ends at next.
func (p *Profile) rangeOf(sums []*summary, x int, next int64) (lo, hi int64) {
	lo, hi = max(sums[x].t, p.origin), next
	if x+1 < len(sums) {
		hi = sums[x+1].t
	}
	return lo, hi
}

// updateSummaries fixes the summaries over [s, e) after a change of sign
// on the given nodes (their timelines already changed).
func (p *Profile) updateSummaries(nodes []int32, use []int64, s, e int64, sign int64) {
	a := p.a
	sums, next := p.sumsIn(s, e)
	// Taking resources: a node is not idle where the booking holds
	// something on it, and block maxima stay upper bounds. Only the first
	// and last summaries can lie partly outside [s, e) and need the
	// node's timeline; those in [full0, full1) lie inside.
	full0, full1 := 0, len(sums)
	if sign < 0 {
		if lo, _ := p.rangeOf(sums, 0, next); lo < s {
			full0 = 1
		}
		if _, hi := p.rangeOf(sums, len(sums)-1, next); hi > e {
			full1 = len(sums) - 1
		}
	}
	for x, nd := range nodes {
		if isZero(use[x*a : (x+1)*a]) {
			continue
		}
		i := int(nd)
		if sign > 0 {
			p.refreshNode(i, sums, next)
			continue
		}
		for y := full0; y < full1; y++ {
			sums[y].idle.Remove(i)
		}
		for _, y := range [...]int{0, len(sums) - 1} {
			if (y < full0 || y >= full1) && sums[y].idle.Has(i) {
				_, hi := p.rangeOf(sums, y, next)
				p.refreshNode(i, sums[y:y+1], hi)
			}
		}
	}
	p.putSums(sums)
}

// refreshNode sets node i's idle bit in each of the writable, consecutive
// summaries sums (the last one's range ending at next) from its timeline —
// set when the node is idle at some moment of the summary's range — and
// raises its block's maximum in each to its free amounts over the range.
// Right after node i's free amounts changed this restores both summaries
// for it.
func (p *Profile) refreshNode(i int, sums []*summary, next int64) {
	a := p.a
	tl := p.tls[i]
	capI := p.caps[i*a : (i+1)*a]
	b := i / blockBits
	k := 0
	for x, sm := range sums {
		lo, hi := p.rangeOf(sums, x, next)
		if x == 0 {
			k = tl.seg(lo)
		}
		for k+1 < len(tl.times) && tl.times[k+1] <= lo {
			k++
		}
		idle := false
		bm := sm.bmax[b*a : (b+1)*a]
		for kk := k; kk < len(tl.times) && (kk == k || tl.times[kk] < hi); kk++ {
			f := tl.free[kk*a : (kk+1)*a]
			idle = idle || equalVec(f, capI)
			for j, v := range f {
				bm[j] = max(bm[j], v)
			}
		}
		if idle {
			sm.idle.Add(i)
		} else {
			sm.idle.Remove(i)
		}
	}
}

// tightenBlock recomputes block b's maximum in sm, whose range ends at
// end, exactly from the timelines, when p owns sm (a shared summary is
// left alone: the other profile may rely on the looser bound).
func (p *Profile) tightenBlock(sm *summary, end int64, b int) {
	if sm.owner != p.cow {
		return
	}
	a := p.a
	lo := max(sm.t, p.origin)
	bm := sm.bmax[b*a : (b+1)*a]
	for x := range bm {
		bm[x] = -1 << 62
	}
	for i := b * blockBits; i < min((b+1)*blockBits, p.n); i++ {
		tl := p.tls[i]
		for k := tl.seg(lo); k < len(tl.times) && tl.times[k] < end; k++ {
			f := tl.free[k*a : (k+1)*a]
			for x := range bm {
				bm[x] = max(bm[x], f[x])
			}
		}
	}
}

// resummarize recomputes exactly the summaries of sums, a run of writable
// summaries that are consecutive in the profile (or all of them, for
// NewProfile) whose last one's range ends at next, from the timelines: one
// pass over every node to find its free amounts at the first one's start,
// then only the nodes each later change point lists.
func (p *Profile) resummarize(sums []*summary, next int64) {
	a, n := p.a, p.n
	cur := make([]int64, n*a)
	segIdx := make([]int32, n)
	idle := topology.NewNodeSet(n) // exact, at the time reached
	lo := max(sums[0].t, p.origin)
	for i := range n {
		tl := p.tls[i]
		k := tl.seg(lo)
		segIdx[i] = int32(k)
		copy(cur[i*a:(i+1)*a], tl.free[k*a:(k+1)*a])
		if equalVec(cur[i*a:(i+1)*a], p.caps[i*a:(i+1)*a]) {
			idle.Add(i)
		}
	}
	nb := p.nblocks()
	bmax := make([]int64, nb*a) // exact, at the time reached
	for b := range nb {
		p.blockMaxFrom(cur, b, bmax[b*a:(b+1)*a])
	}
	x := 0
	open := func() { // the state reached is sums[x]'s at its start
		sums[x].idle.CopyFrom(idle)
		copy(sums[x].bmax, bmax)
	}
	open()
	var dirty []int
	p.probeA.t = lo + 1
	p.probeB.t = next
	visit := func(cp *changePoint) bool {
		// Summaries that start before cp hold the state before it.
		for x+1 < len(sums) && sums[x+1].t < cp.t {
			x++
			open()
		}
		dirty = dirty[:0]
		for _, nd := range cp.nodes {
			i := int(nd)
			segIdx[i]++
			k := int(segIdx[i])
			copy(cur[i*a:(i+1)*a], p.tls[i].free[k*a:(k+1)*a])
			if equalVec(cur[i*a:(i+1)*a], p.caps[i*a:(i+1)*a]) {
				idle.Add(i)
			} else {
				idle.Remove(i)
			}
			dirty = append(dirty, i/blockBits)
		}
		slices.Sort(dirty)
		dirty = slices.Compact(dirty)
		for _, b := range dirty {
			p.blockMaxFrom(cur, b, bmax[b*a:(b+1)*a])
		}
		if x+1 < len(sums) && sums[x+1].t == cp.t {
			x++
			open()
			return true
		}
		// Within sums[x]'s range: fold the new state in.
		sm := sums[x]
		for _, nd := range cp.nodes {
			if i := int(nd); idle.Has(i) {
				sm.idle.Add(i)
			}
		}
		for _, b := range dirty {
			bm, cb := sm.bmax[b*a:(b+1)*a], bmax[b*a:(b+1)*a]
			for j := range bm {
				bm[j] = max(bm[j], cb[j])
			}
		}
		return true
	}
	if next < posInf {
		p.cps.AscendRange(p.probeA, p.probeB, visit)
	} else {
		p.cps.AscendGreaterOrEqual(p.probeA, visit)
	}
	for x+1 < len(sums) {
		x++
		open()
	}
}
