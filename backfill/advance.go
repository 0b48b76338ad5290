package backfill

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/btree"
)

// maxOriginUnix bounds the origin (in Unix seconds, about 18 billion years)
// so that every stored time stays far below "never".
const maxOriginUnix = posInf / 4

// Advance moves the profile's origin forward to now and forgets the past,
// so that one profile can serve cycle after cycle instead of being rebuilt
// from every node and running job (see "Keeping a profile across cycles"
// in the package documentation). Afterwards the profile answers every
// question — Timeline, FreeAt, EarliestFit, Planner.Plan — exactly as the
// profile NewProfile would build at now from the running jobs it holds
// (with their original End times) and the same free amounts, with its
// blocks and reservations booked again:
//
//   - each node's free resources at the origin are those it had at now:
//     the change points at or before now are dropped, and the one in force
//     at now becomes the origin's; so do the summaries of the grid slots
//     before now's, whose own summary is the one in force at now;
//   - a running job whose end is at or before now (overdue: the caller has
//     not released it yet) is treated as NewProfile treats one: it holds
//     its resources until the first grid point after now — one resolution
//     step after an origin on the grid — and later calls extend it again
//     until Release removes it;
//   - reservations and blocks whose end is at or before now disappear;
//     those that began before now keep holding what remains of them until
//     their end.
//
// Stored ends stay as they were booked (exact, or on the grid for
// reservations that started after the origin of their plan); the new
// origin may be off the grid, as NewProfile's may. Advancing to the
// current origin is a no-op; to an earlier time (or the zero time) it is
// an error wrapping ErrInvalidTime that leaves p unchanged. An overdue
// job extended over resources a reservation or block has taken since its
// end leaves the node over-booked (negative free amounts) until one of
// them is released; releasing reservations before advancing, as the
// package documentation recommends, avoids it.
//
// Cost: proportional to what changes — the change points dropped, the
// nodes they list (whose timelines are trimmed), the entries that expired
// and the overdue jobs extended (about as dear as AddStarted each) — not
// to the number of nodes or jobs. The first Advance or
// ReleaseReservations on a profile also indexes its entries by end, once
// (O(entries log entries)); the index is then kept up to date. Like the
// other mutators, Advance on a Clone leaves the original untouched.
func (p *Profile) Advance(now time.Time) error {
	switch {
	case now.IsZero():
		return fmt.Errorf("%w: Advance: now is the zero time", ErrInvalidTime)
	case now.Before(p.nowT):
		return fmt.Errorf("%w: Advance to %v, before the profile's origin %v", ErrInvalidTime, now, p.nowT)
	case now.Unix() >= maxOriginUnix:
		return fmt.Errorf("%w: Advance to %v: out of range", ErrInvalidTime, now)
	case now.Equal(p.nowT):
		return nil
	}
	o := now.Unix()
	if o == p.origin {
		// Within the same second: nothing to drop (every stored time
		// after the origin is at least one second later).
		p.nowT = now
		return nil
	}
	p.index()

	// Entries that end at or before now: overdue running jobs, and
	// reservations and blocks that are over.
	sc := p.scratch()
	overdue, expired := sc.overdue[:0], sc.expired[:0]
	lo, hi := &sc.lo, &sc.hi
	for k := kindRunning; k <= kindBlock; k++ {
		lo.kind, lo.end, hi.kind, hi.end = k, math.MinInt64, k, o+1
		p.idx.AscendRange(lo, hi, func(e *entry) bool {
			if k == kindRunning {
				overdue = append(overdue, e)
			} else {
				expired = append(expired, e)
			}
			return true
		})
	}

	// Drop the change points at or before now, trimming the timelines of
	// the nodes they list; the last one dropped is in force at now.
	var last *changePoint
	for {
		cp, ok := p.cps.Min()
		if !ok || cp.t > o {
			break
		}
		p.cps.DeleteMin()
		last = cp
		for _, nd := range cp.nodes {
			p.trimTL(int(nd), o)
		}
	}
	// It becomes the origin's change point (which lists no node): reused
	// when this profile owns it, else copied (shared with a clone).
	ncp := last
	if last.owner == p.cow {
		last.t, last.nodes, last.upOK = o, last.nodes[:0], false
	} else {
		ncp = p.copyCP(o, nil)
	}
	p.cps.ReplaceOrInsert(ncp)
	// The summaries whose ranges end at or before now go; the one whose
	// range holds now stays (its range only shrinks) and starts at now,
	// the first change point of its slot; if now's slot has a summary
	// that starts later, that one takes its aggregates instead.
	keep := p.sumFloor(o)
	for {
		sm, _ := p.sums.Min()
		if sm.t >= keep.t {
			break
		}
		p.sums.DeleteMin()
	}
	var nx *summary
	p.sumProbe.t = o + 1
	p.sums.AscendGreaterOrEqual(p.sumProbe, func(sm *summary) bool {
		nx = sm
		return false
	})
	if nx != nil && nx.t < p.floorRes(o)+p.res {
		nx = p.mutSum(nx)
		nx.merge(keep)
		p.sums.Delete(keep)
		nx.t = o
	} else if keep.t != o {
		p.mutSum(keep).t = o
	}
	p.origin, p.nowT = o, now

	for _, e := range expired {
		p.dropEntry(e)
	}
	// Overdue jobs hold their resources again until the first grid point
	// after the new origin, as NewProfile's endOf decides for them.
	end := p.ceilRes(o + 1)
	for _, e := range overdue {
		ne := *e
		ne.start, ne.end = o, end
		p.dropEntry(e)
		p.addEntry(&ne)
		p.change(ne.nodes, ne.use, o, end, -1)
	}
	clear(overdue)
	clear(expired)
	sc.overdue, sc.expired = overdue[:0], expired[:0]
	return nil
}

// trimTL drops node i's segments that end at or before o, so that its
// first segment holds at o; times[0] becomes o.
func (p *Profile) trimTL(i int, o int64) {
	tl := p.tls[i]
	k := tl.seg(o)
	if k == 0 {
		return // already trimmed (the node was listed at an earlier point)
	}
	a := p.a
	if tl.owner == p.cow {
		tl.times = slices.Delete(tl.times, 0, k)
		tl.free = slices.Delete(tl.free, 0, k*a)
	} else {
		tl = &timeline{owner: p.cow, times: slices.Clone(tl.times[k:]), free: slices.Clone(tl.free[k*a:])}
		p.tls[i] = tl
	}
	tl.times[0] = o
}

// AddStarted adds a running job that started at or after the profile was
// built (or last advanced) and releases its resources at r.End (zero:
// never; at or before the origin: overdue, treated as in NewProfile). Unlike
// AddRunning, the profile's free amounts do not yet exclude it: its Allocs
// are taken from the origin until the end. This is how a profile kept
// across cycles learns of a job the scheduler has just started.
//
// When the profile holds a reservation under r.ID — the last plan's
// booking of this very start — the running job replaces it. If the
// reservation began at or before the origin and holds exactly what the
// job holds (the same nodes in the same order, the same use, the same end)
// it simply becomes the running job, at no cost; otherwise it is released
// first. Either way the result is what ReleaseReservations followed by
// AddStarted gives, so a caller may start the plan's jobs before releasing
// the rest of the plan and save booking every start twice.
//
// A running job is a fact, not a request: AddStarted does not check that
// its resources are free in the profile. Where it overlaps a block (a job
// that runs inside a maintenance reservation) or a reservation, the node
// shows negative free amounts there, as Block's overlaps do, until one of
// them is released. It fails, leaving p unchanged, when the ID is taken by
// a running job or a block, or an Alloc is malformed or exceeds its node's
// capacity.
func (p *Profile) AddStarted(r Running) error {
	old, had := p.entryOf(r.ID)
	if had && old.kind != kindReserved {
		return fmt.Errorf("%w: %d", ErrDuplicateID, r.ID)
	}
	e, err := p.newEntry(r.ID, kindRunning, p.origin, p.endOf(r.End), r.Allocs)
	if err != nil {
		return fmt.Errorf("started job %d: %w", r.ID, err)
	}
	if had {
		if old.start <= p.origin && old.end == e.end && slices.Equal(old.nodes, e.nodes) && p.onlyMore(old.use, e.use) {
			// The booking is the job, or holds part of what the job
			// holds on each of its nodes (the job got a GPU type the
			// plan did not name): take the rest and relabel it
			// (entries are immutable, so a copy replaces it in both
			// trees). The nodes were not idle under the booking, so
			// only their timelines change, not the change points'
			// summaries (taking more never raises a block's maximum).
			if !slices.Equal(old.use, e.use) {
				delta := make([]int64, len(e.use))
				for x := range delta {
					delta[x] = e.use[x] - old.use[x]
				}
				p.applyTL(e.nodes, delta, p.origin, e.end, -1)
				p.mergeTL(e.nodes, delta, p.origin, e.end)
			}
			p.dropEntry(old)
			e.start = old.start
			p.addEntry(e)
			return nil
		}
		p.change(old.nodes, old.use, old.start, old.end, +1)
		p.dropEntry(old)
	}
	p.change(e.nodes, e.use, e.start, e.end, -1)
	p.addEntry(e)
	return nil
}

// onlyMore reports whether, node by node, now holds at least what before
// held, and before holds something on every node (so the node is not idle
// while before is booked).
func (p *Profile) onlyMore(before, now []int64) bool {
	a := p.a
	for x := 0; x < len(before); x += a {
		if isZero(before[x : x+a]) {
			return false
		}
	}
	for x := range before {
		if now[x] < before[x] {
			return false
		}
	}
	return true
}

// ReleaseReservations releases every reservation — what Reserve,
// ReserveFit and Planner.Plan booked, starts included — and returns how
// many it released. Running jobs and blocks stay, so a profile kept across
// cycles returns to the cluster's state before the last plan. The cost
// grows with what it releases, about as booking it did: one pass over the
// timeline of each node the reservations hold, then the summaries of the
// change points they span, node by node or, when that would be dearer, in
// one sweep over those change points; running jobs are not scanned. The
// first call on a profile indexes its entries once (see Advance).
func (p *Profile) ReleaseReservations() int { return p.releaseKind(kindReserved, nil) }

// ReleaseReservationsExcept is ReleaseReservations keeping the reservation
// of job keep, if it has one: the first job of the next plan, whose
// reservation Plan keeps when it would book the same again (see
// Planner.Plan) — in EASY the head job's, which rarely moves.
func (p *Profile) ReleaseReservationsExcept(keep JobID) int {
	return p.releaseKind(kindReserved, &keep)
}

// ReleaseBlocks releases every block (see Block) and returns how many it
// released, for a caller that books its maintenance windows again each
// cycle. Costs as ReleaseReservations.
func (p *Profile) ReleaseBlocks() int { return p.releaseKind(kindBlock, nil) }

// releaseKind releases every entry of kind k but the one of job *keep.
func (p *Profile) releaseKind(k entryKind, keep *JobID) int {
	p.index()
	sc := p.scratch()
	es := sc.expired[:0]
	sc.lo, sc.hi = entry{kind: k, end: math.MinInt64}, entry{kind: k + 1, end: math.MinInt64}
	p.idx.AscendRange(&sc.lo, &sc.hi, func(e *entry) bool {
		if keep == nil || e.id != *keep {
			es = append(es, e)
		}
		return true
	})
	p.releaseAll(es)
	clear(es)
	sc.expired = es[:0]
	return len(es)
}

// releaseAll releases the entries together. Each node they hold gets its
// new timeline in one pass over its old one and its released intervals
// (rather than one pass per interval). Then the breakpoints that appeared
// are registered with the change points, and only after them those that
// disappeared (one change-point look-up per time each), so that change
// points are first only added and every grid slot that gets its first
// one copies a summary that still holds for all the nodes it does not
// list. Last, the summaries of the grid slots the releases span are
// restored, node by node or in one sweep.
func (p *Profile) releaseAll(es []*entry) {
	if len(es) == 0 {
		return
	}
	a := p.a
	rb := &p.scratch().rel
	// The released (interval, use) per node, grouped by a counting sort.
	start := slices.Grow(rb.start[:0], p.n+1)[:p.n+1]
	clear(start)
	total := 0
	for _, e := range es {
		for x, nd := range e.nodes {
			if !isZero(e.use[x*a : (x+1)*a]) {
				start[nd+1]++
				total++
			}
		}
	}
	for i := range p.n {
		start[i+1] += start[i]
	}
	fill := append(rb.fill[:0], start[:p.n]...)
	parts := slices.Grow(rb.parts[:0], total)[:total]
	for _, e := range es {
		s := max(e.start, p.origin)
		for x, nd := range e.nodes {
			if u := e.use[x*a : (x+1)*a]; !isZero(u) {
				parts[fill[nd]] = relPart{s: s, e: e.end, use: u}
				fill[nd]++
			}
		}
		p.dropEntry(e)
	}
	unions, appeared, removed := rb.unions[:0], rb.appeared[:0], rb.removed[:0]
	lo, hi := int64(posInf), int64(math.MinInt64)
	for i := range p.n {
		ps := parts[start[i]:start[i+1]]
		if len(ps) == 0 {
			continue
		}
		slices.SortFunc(ps, func(x, y relPart) int { return cmp.Compare(x.s, y.s) })
		for _, q := range ps {
			lo, hi = min(lo, q.s), max(hi, q.e)
			if h := len(unions) - 1; h >= 0 && unions[h].node == int32(i) && q.s <= unions[h].e {
				unions[h].e = max(unions[h].e, q.e)
				continue
			}
			unions = append(unions, relSpan{int32(i), q.s, q.e})
		}
		p.releaseOnNode(i, ps, rb)
		for _, t := range rb.added {
			appeared = append(appeared, relPoint{t, int32(i)})
		}
		for _, t := range rb.gone {
			removed = append(removed, relPoint{t, int32(i)})
		}
	}
	rb.nodes = p.cpApply(appeared, true, rb.nodes)
	rb.nodes = p.cpApply(removed, false, rb.nodes)
	clear(parts) // drop the references to entries' use
	rb.start, rb.fill, rb.parts, rb.unions, rb.appeared, rb.removed = start, fill, parts[:0], unions, appeared, removed
	if len(unions) == 0 {
		return
	}
	p.cpTouchedIn(lo, hi) // the released nodes' free amounts changed in [lo, hi]
	sums, next := p.sumsIn(lo, hi)
	defer p.putSums(sums)
	// Refreshing node by node costs one scattered update per node and
	// summary it spans; recomputing every summary in [lo, hi) in one
	// sweep costs a pass over every node plus a sequential rewrite of
	// each summary. Take the cheaper.
	at := func(t int64) int { // the summary whose range holds t
		x, found := slices.BinarySearchFunc(sums, t, func(sm *summary, t int64) int { return cmp.Compare(sm.t, t) })
		if !found {
			x--
		}
		return max(x, 0)
	}
	pairs := 0
	for x := range unions {
		u := &unions[x]
		x0, x1 := at(u.s), len(sums)
		if u.e < next {
			x1 = at(u.e-1) + 1
		}
		u.s, u.e = int64(x0), int64(x1) // now indices into sums
		pairs += x1 - x0
	}
	if pairs > sweepFactor*(p.n+len(sums)*(p.n/blockBits+p.nblocks()*p.a)/8) {
		p.resummarize(sums, next)
		return
	}
	for _, u := range unions {
		end := next
		if int(u.e) < len(sums) {
			end = sums[u.e].t
		}
		p.refreshNode(int(u.node), sums[u.s:u.e], end)
	}
}

// relBufs are releaseAll's reusable buffers.
type relBufs struct {
	start, fill []int32
	parts       []relPart
	unions      []relSpan
	appeared    []relPoint
	removed     []relPoint
	nodes       []int32
	evs         []relEvent
	delta       []int64
	times, free []int64
	added, gone []int64
}

// relPart is one released interval on a node, relSpan a union of them,
// relEvent one of their ends, relPoint a breakpoint.
type relPart struct {
	s, e int64
	use  []int64
}

type relSpan struct {
	node int32
	s, e int64
}

type relEvent struct {
	t    int64
	sign int64
	use  []int64
}

type relPoint struct {
	t    int64
	node int32
}

// releaseOnNode gives node i its resources in ps back ([s, e) each, s at
// or after the origin) in one pass that merges its timeline with the
// intervals' ends, keeping it canonical. It leaves in rb.added and rb.gone
// the breakpoints that appeared and disappeared.
func (p *Profile) releaseOnNode(i int, ps []relPart, rb *relBufs) {
	a := p.a
	tl := p.mutTL(i)
	evs := rb.evs[:0]
	for _, q := range ps {
		evs = append(evs, relEvent{q.s, +1, q.use})
		if q.e < posInf {
			evs = append(evs, relEvent{q.e, -1, q.use})
		}
	}
	slices.SortFunc(evs, func(x, y relEvent) int { return cmp.Compare(x.t, y.t) })
	delta := slices.Grow(rb.delta[:0], a)[:a]
	clear(delta)
	x := 0
	apply := func(t int64) {
		for ; x < len(evs) && evs[x].t <= t; x++ {
			for j, u := range evs[x].use {
				delta[j] += evs[x].sign * u
			}
		}
	}
	nt, nf := rb.times[:0], rb.free[:0]
	emit := func(t int64, old []int64) {
		m := len(nf)
		nf = append(nf, old...)
		for j, d := range delta {
			nf[m+j] += d
		}
		if m > 0 && equalVec(nf[m:], nf[m-a:m]) {
			nf = nf[:m] // same as the segment before: no breakpoint
			return
		}
		nt = append(nt, t)
	}
	apply(p.origin) // intervals from the origin hold over the first segment
	emit(tl.times[0], tl.free[:a])
	for k := 0; ; {
		next := int64(posInf)
		if k+1 < len(tl.times) {
			next = tl.times[k+1]
		}
		if x < len(evs) {
			next = min(next, evs[x].t)
		}
		if next >= posInf {
			break
		}
		if k+1 < len(tl.times) && tl.times[k+1] == next {
			k++
		}
		apply(next)
		emit(next, tl.free[k*a:(k+1)*a])
	}
	// Breakpoints that appeared and disappeared (times[0] is not one).
	added, gone := rb.added[:0], rb.gone[:0]
	o, n := tl.times[1:], nt[1:]
	for len(o) > 0 || len(n) > 0 {
		switch {
		case len(n) == 0 || (len(o) > 0 && o[0] < n[0]):
			gone = append(gone, o[0])
			o = o[1:]
		case len(o) == 0 || n[0] < o[0]:
			added = append(added, n[0])
			n = n[1:]
		default:
			o, n = o[1:], n[1:]
		}
	}
	tl.times = append(tl.times[:0], nt...)
	tl.free = append(tl.free[:0], nf...)
	clear(evs)
	rb.evs, rb.delta, rb.times, rb.free, rb.added, rb.gone = evs[:0], delta, nt, nf, added, gone
}

// sweepFactor weighs releaseAll's choice between refreshing nodes one by
// one and resummarizing a range in one sweep: measured at the standard
// scale, a sweep over a change point costs about as much as three times
// the 64-bit words of its summaries refreshed one node at a time.
const sweepFactor = 3

// addEntry inserts e into the entries and, once built, their index.
func (p *Profile) addEntry(e *entry) {
	p.ents.ReplaceOrInsert(e)
	if p.idx != nil {
		p.idx.ReplaceOrInsert(e)
	}
}

// dropEntry removes e from the entries and their index.
func (p *Profile) dropEntry(e *entry) {
	p.ents.Delete(e)
	if p.idx != nil {
		p.idx.Delete(e)
	}
}

// index builds the (kind, end, id) index of the entries when it is
// missing. Profiles that are never advanced or bulk-released never pay
// for it.
func (p *Profile) index() {
	if p.idx != nil {
		return
	}
	es := make([]*entry, 0, p.ents.Len())
	p.ents.Ascend(func(e *entry) bool {
		es = append(es, e)
		return true
	})
	slices.SortFunc(es, idxCmp)
	p.idx = btree.NewG(btreeDeg, idxLess)
	for _, e := range es {
		p.idx.ReplaceOrInsert(e)
	}
}
