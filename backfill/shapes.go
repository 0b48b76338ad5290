package backfill

import (
	"encoding/binary"

	"github.com/sluicehq/sluice/topology"
)

// The shape cache.
//
// Within one pass the profile only loses free resources (the planner only
// books), so "job A cannot start before T" carries over to any later job
// B that needs at least as much: the same per-node vector, exclusivity and
// allowed set, at least as many nodes, at least as long, and an earliest
// start no earlier. The cache keeps, per shape, a few such facts (the
// start found, or "none within the window"), and the lowest node chosen
// then, below which no node was feasible at that time. An answer itself
// (start and nodes) is given again to a job asking exactly the same while
// the bookings made since touch none of its nodes (stillHolds).

// setFP buckets the pass's sets by content (NodeSet.Hash).
type setFP uint64

type shapeEntry struct {
	n    int
	d, e int64
	t    int64 // start found; posInf: none at or before lim
	st   FitStatus
	// lim is the latest start the search allowed: the window's end, or
	// the origin for a job tested only for a start now. A failure tells
	// nothing of later starts.
	lim int64
	// gen is the pass's profile generation the entry was found at (-1:
	// on a profile with the kept reservation looked through), and nodes
	// the nodes chosen then: a job asking the same at the same gen gets
	// the same answer without a search.
	gen   int
	nodes []int
	// Every node feasible at t (for this entry's job) below upTo is in
	// cands.
	cands []int32
	upTo  int
}

type shape struct {
	capable int
	// allCapable: every allowed node's capacity holds the request.
	allCapable bool
	pass       uint64 // the pass it was last used in
	ents       []shapeEntry
}

const maxShapeEntries = 32
const maxSets = 512

func (r *run) shapeFor(j *Job, q *query) *shape {
	set := -1
	if j.Allowed.Len() != 0 {
		set = r.setIndex(j.Allowed)
		if set < 0 {
			return &shape{capable: -1} // uncached: too many distinct sets
		}
	}
	r.keyBuf = r.keyBuf[:0]
	for _, v := range q.req {
		r.keyBuf = binary.LittleEndian.AppendUint64(r.keyBuf, uint64(v))
	}
	excl := byte(0)
	if q.excl {
		excl = 1
	}
	r.keyBuf = append(r.keyBuf, excl)
	r.keyBuf = binary.LittleEndian.AppendUint64(r.keyBuf, uint64(int64(set)))
	r.keyBuf = append(r.keyBuf, j.ChooserKey...)
	if len(j.Required) > 0 {
		// The required nodes change the answer of the default chooser.
		r.keyBuf = append(r.keyBuf, 0)
		for _, i := range j.Required {
			r.keyBuf = binary.LittleEndian.AppendUint64(r.keyBuf, uint64(int64(i)))
		}
	}
	sh := r.shapes[string(r.keyBuf)] // no allocation when found
	if sh == nil {
		sh = &shape{}
		r.shapes[string(r.keyBuf)] = sh
	}
	if sh.pass != r.planScratch.pass {
		// An earlier pass's (set indices, in the key, are per pass too).
		*sh = shape{capable: -1, pass: r.planScratch.pass, ents: sh.ents[:0]}
	}
	return sh
}

// setIndex returns the index of a set equal to s, registering it; -1 when
// too many distinct sets were seen.
//
// A set seen before in the pass through the same storage (the caller's
// shared allowed set of many jobs: topology.SetRef) is found without
// hashing it; its members cannot have changed, since the caller may not
// change a job's Allowed during the call.
func (r *run) setIndex(s topology.NodeSet) int {
	ref := s.Ref()
	if x, ok := r.setRefs[ref]; ok {
		return x
	}
	x := r.setByContent(s)
	if x >= 0 {
		r.setRefs[ref] = x
	}
	return x
}

// setByContent is setIndex for a set not seen through its storage.
func (r *run) setByContent(s topology.NodeSet) int {
	fp := setFP(s.Hash())
	for _, x := range r.setIdx[fp] {
		if r.sets[x].Equal(s) {
			return x
		}
	}
	if len(r.sets) >= maxSets {
		return -1
	}
	r.sets = append(r.sets, s.Clone())
	r.setIdx[fp] = append(r.setIdx[fp], len(r.sets)-1)
	return len(r.sets) - 1
}

// hint is what the cache knows for a new job: no feasible start before t,
// and at t every feasible node below upTo is in cands.
type hint struct {
	t     int64
	cands []int32
	upTo  int
}

// lookup returns what the cache knows for a job of this shape with n
// nodes, raw duration d, earliest start e and latest start latest; st is
// FitFound when a search is needed, or the failure (beyond latest, never)
// already known.
func (sh *shape) lookup(n int, d, e, latest int64) (h hint, st FitStatus) {
	h.t = e
	for x := range sh.ents {
		en := &sh.ents[x]
		if en.n > n || en.d > d || en.e > e {
			continue
		}
		if en.t >= posInf {
			if en.lim < latest && en.st == FitBeyondLatest {
				continue // it searched less far
			}
			return hint{}, en.st
		}
		switch {
		case en.t > h.t:
			h = hint{t: en.t, cands: en.cands, upTo: en.upTo}
		case en.t == h.t && en.upTo > h.upTo:
			h.cands, h.upTo = en.cands, en.upTo
		}
	}
	return h, FitFound
}

// same returns the entry found for exactly query q's question (n nodes,
// raw duration d, earliest start e) whose answer still holds on the
// profile now (see stillHolds), or nil.
func (r *run) same(sh *shape, q *query, e int64) *shapeEntry {
	lowest := q.lowestChoice()
	for x := range sh.ents {
		en := &sh.ents[x]
		if en.n == q.n && en.d == q.d && en.e == e && en.st == FitFound && r.stillHolds(en, lowest) {
			return en
		}
	}
	return nil
}

// lowestChoice reports whether q's nodes are the default chooser's plain
// choice, the lowest feasible ones.
func (q *query) lowestChoice() bool {
	return q.chooser == nil && !q.preferBusy && !q.taskReq && len(q.required) == 0 && !q.hasSpread()
}

// stillHolds reports whether entry en answers the same query on the
// profile now: found at the pass's current generation, or — for the
// default chooser's plain choice, the lowest feasible nodes (lowest) — found
// since the last change that may have added room (the kept
// reservation's release, a heterogeneous job's bookings) and with none of
// its nodes booked since. A booking elsewhere only takes room away: no
// earlier start appears, the nodes chosen stay feasible, and every lower
// node stays infeasible, so the search would answer the same.
func (r *run) stillHolds(en *shapeEntry, lowest bool) bool {
	if en.gen == r.gen {
		return true
	}
	if !lowest || en.gen < r.barrier {
		return false
	}
	for _, i := range en.nodes {
		if r.booked[i] > en.gen {
			return false
		}
	}
	return true
}

// noteBooked records that the pass booked nodes at its current generation
// (see stillHolds).
func (r *run) noteBooked(nodes []int) {
	for _, i := range nodes {
		r.booked[i] = r.gen
	}
}

// insert records the outcome of a search for q whose job's own earliest
// start was e0 (the search itself may have started later, at a bound from
// this cache).
func (sh *shape) insert(q *query, e0 int64, res result, gen int) {
	ne := shapeEntry{n: q.n, d: q.d, e: e0, t: posInf, st: res.st, gen: gen, lim: q.latest}
	if res.st == FitFound {
		ne.t, ne.cands, ne.upTo, ne.nodes = res.t, res.cands, res.upTo, res.nodes
	}
	// Drop entries the new one makes useless: those it answers for at
	// least as far. "Beyond the latest" says nothing of later starts, so
	// it only replaces entries that searched no further (as lookup skips
	// it for a job that may start later; every limit is at most the
	// window's end, so one searched to it replaces all).
	useless := func(x *shapeEntry) bool {
		return x.n >= ne.n && x.d >= ne.d && x.e >= ne.e && (x.t < ne.t || (x.t == ne.t && x.upTo <= ne.upTo)) &&
			(ne.st != FitBeyondLatest || x.lim <= ne.lim)
	}
	// Entries move only from the first one dropped on: most inserts drop
	// none, and an entry is large.
	k := 0
	for k < len(sh.ents) && !useless(&sh.ents[k]) {
		k++
	}
	if k < len(sh.ents) {
		out := sh.ents[:k]
		for x := k + 1; x < len(sh.ents); x++ {
			if !useless(&sh.ents[x]) {
				out = append(out, sh.ents[x])
			}
		}
		sh.ents = out
	}
	if len(sh.ents) >= maxShapeEntries {
		sh.ents = append(sh.ents[:0], sh.ents[1:]...)
	}
	sh.ents = append(sh.ents, ne)
}

// cachedShape returns the shape cache's entry for job j's query q (a
// fresh one that knows nothing for a query with a Spread: the cache is
// about per-node requests alone), with its count of capable nodes filled
// in, and sets q.allCapable from it.
func (r *run) cachedShape(j *Job, q *query) *shape {
	var sh *shape
	if q.hasSpread() {
		sh = &shape{capable: -1}
	} else {
		sh = r.shapeFor(j, q)
	}
	if sh.capable < 0 {
		sh.capable = r.capableCount(q)
		sh.allCapable = sh.capable == q.allowed.Count()
	}
	q.allCapable = sh.allCapable
	return sh
}

// capableCount is p.capable(q): how many allowed nodes' capacities hold
// q's request, counted as the allowed nodes among those whose capacity
// holds the request — a set computed once per pass for each request
// (q.fits reads the request alone), so that the many shapes of one
// request with different allowed sets each cost a word-wise count, not
// a scan of the allowed nodes.
func (r *run) capableCount(q *query) int {
	if q.never {
		return 0
	}
	p := r.p
	r.keyBuf = r.keyBuf[:0]
	for _, v := range q.req {
		r.keyBuf = binary.LittleEndian.AppendUint64(r.keyBuf, uint64(v))
	}
	set, ok := r.capSets[string(r.keyBuf)] // no allocation when found
	if !ok || set.Len() != p.n {
		set = topology.NewNodeSet(p.n)
		a := p.a
		for i := range p.n {
			if q.fits(p.caps[i*a : (i+1)*a]) {
				set.Add(i)
			}
		}
		r.capSets[string(r.keyBuf)] = set
	}
	return q.allowed.IntersectionCount(set)
}

// neverFits reports whether query q can never be met: too few allowed
// nodes can ever hold its request, or its spread.
func (r *run) neverFits(sh *shape, q *query) bool {
	return q.never || sh.capable < q.n || !r.p.spreadCapable(q)
}
