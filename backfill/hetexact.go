package backfill

import (
	"cmp"
	"slices"

	"github.com/sluicehq/sluice/topology"
)

// The co-start search at one candidate start t (see coSearch): when the
// components placed in turn, each on the nodes its own search chooses
// with the ones before it booked, do not all fit at t, an earlier
// component may merely have taken nodes a later one needs (a 1-CPU
// component on the only GPU node a GPU component can use). coExact then
// searches the components' node choices at t; only when it finds none
// does the search move on, to the first start after t's next change of
// the profile at which every component fits alone (coNext). Between two
// changes of the profile the free resources only shrink, so a start that
// does not fit at t does not fit before that change either: the common
// start found is the earliest (within the bound on coExact's work).

// maxExactScan bounds the allowed nodes (summed over the components) of a
// job whose node choices coExact searches; a larger one is tried again
// at the same start with the component that did not fit first (the most
// constrained first), up to one order per component.
const maxExactScan = 512

// maxExactSteps bounds the starts a co-start search leaves because no
// choice fits there and moves on from to the next change (coNext); past
// it, as before, the search moves on to where the component that did not
// fit finds a start with the ones before it booked (a bound on the work
// of a job that waits long for its components to fit together; that
// start may be later than the earliest).
const maxExactSteps = 16

// maxCoTries bounds the node sets coExact books at one start; past it the
// start counts as one no choice fits (the search moves on).
const maxCoTries = 64

// coExact looks for nodes on which every component fits at common start
// t, nothing being booked: a depth-first search over the components,
// most constrained first. A plain component (default chooser, no spread
// or task counts) fits a node set exactly when it fits each node, so its
// choices are the nodes where it fits with the components before it
// booked: it takes its required nodes (Request.Required), then those no
// later component could use (they leave the later ones as much), and
// branches over the rest only for what it still lacks. A component with its own chooser, spread or tasks takes what
// its search at t answers. On success every component is booked at t
// (res.booked, res.nodes); on failure nothing is. It reports the
// searches it ran.
func (p *Profile) coExact(ids []JobID, qs []*query, t int64, res *coResult) (bool, int, error) {
	K := len(qs)
	searches := 0
	ends := coEnds(p, qs, t)
	alone := make([][]int, K) // a plain component's nodes at t, alone
	plain := make([]bool, K)
	for k, q := range qs {
		plain[k] = q.chooser == nil && !q.hasSpread() && !q.taskReq
		// Each must fit alone at t (a search, cheap with the summaries).
		q.t0, q.latest, q.cands, q.upTo = t, t, nil, 0
		r, err := p.search(q)
		searches++
		if err != nil || r.st != FitFound {
			return false, searches, err
		}
	}
	for k, q := range qs {
		if !plain[k] {
			continue
		}
		for i := q.allowed.Next(0); i >= 0; i = q.allowed.Next(i + 1) {
			if p.fitsInterval(i, p.useOn(q, i), t, ends[k]) {
				alone[k] = append(alone[k], i)
			}
		}
	}
	// Most constrained first: the plain components by their slack, then
	// those that choose by their own search (they see the others booked).
	order := make([]int, K)
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(x, y int) int {
		if plain[x] != plain[y] {
			if plain[x] {
				return -1
			}
			return 1
		}
		if !plain[x] {
			return 0
		}
		return cmp.Compare(len(alone[x])-qs[x].n, len(alone[y])-qs[y].n)
	})
	// later[x]: the nodes a component after order[x] may use.
	later := make([]topology.NodeSet, K)
	later[K-1] = topology.NewNodeSet(p.n)
	for x := K - 2; x >= 0; x-- {
		later[x] = later[x+1].Clone()
		k := order[x+1]
		if plain[k] {
			for _, i := range alone[k] {
				later[x].Add(i)
			}
		} else {
			later[x].UnionWith(qs[k].allowed)
		}
	}
	tries := 0
	var booked []JobID
	var dfs func(x int) (bool, error)
	dfs = func(x int) (bool, error) {
		if x == K {
			return true, nil
		}
		k := order[x]
		q := qs[k]
		try := func(nodes []int) (bool, error) {
			if tries++; tries > maxCoTries {
				return false, nil
			}
			if err := p.bookQuery(ids[k], q, t, ends[k], nodes); err != nil {
				return false, err
			}
			booked = append(booked, ids[k])
			res.nodes[k] = nodes
			if ok, err := dfs(x + 1); ok || err != nil {
				return ok, err
			}
			booked = booked[:len(booked)-1]
			return false, p.releaseIDs([]JobID{ids[k]})
		}
		if !plain[k] {
			q.t0, q.latest, q.cands, q.upTo = t, t, nil, 0
			r, err := p.search(q)
			searches++
			if err != nil || r.st != FitFound {
				return false, err
			}
			return try(slices.Clone(r.nodes))
		}
		// Its required nodes (-w) are in every choice.
		take := make([]int, 0, q.n)
		for _, i := range q.required {
			if !q.allowed.Has(i) || !p.fitsInterval(i, p.useOn(q, i), t, ends[k]) {
				return false, nil
			}
			take = append(take, i)
		}
		var free, contested []int
		for _, i := range alone[k] {
			if q.isRequired(i) || !p.fitsInterval(i, p.useOn(q, i), t, ends[k]) {
				continue
			}
			if x+1 < K && later[x].Has(i) {
				contested = append(contested, i)
			} else {
				free = append(free, i)
			}
		}
		if len(take)+len(free)+len(contested) < q.n {
			return false, nil
		}
		take = append(take, free[:min(len(free), q.n-len(take))]...)
		need := q.n - len(take)
		// Every need-subset of the contested nodes, in lexical order.
		pick := make([]int, need)
		for c := range pick {
			pick[c] = c
		}
		for {
			nodes := append(slices.Clone(take), make([]int, need)...)
			for c, y := range pick {
				nodes[len(take)+c] = contested[y]
			}
			slices.Sort(nodes)
			if ok, err := try(nodes); ok || err != nil || tries > maxCoTries {
				return ok, err
			}
			c := need - 1
			for c >= 0 && pick[c] == len(contested)-need+c {
				c--
			}
			if c < 0 {
				return false, nil
			}
			pick[c]++
			for c++; c < need; c++ {
				pick[c] = pick[c-1] + 1
			}
		}
	}
	ok, err := dfs(0)
	if err != nil || !ok {
		if rerr := p.releaseIDs(booked); err == nil {
			err = rerr
		}
		return false, searches, err
	}
	res.booked = append(res.booked, booked...)
	res.unbooked = res.unbooked[:0]
	return true, searches, nil
}

// coNext is the next common start to try after t, where the components
// do not fit together, nothing being booked: the first start at which
// every component fits alone after the profile's next change after t
// (before it nothing frees up, so nothing fits together either), found
// by soloStarts with each search from the latest start found so far.
// lead is the component that gave it and own each component's nodes
// there. FitBeyondLatest when that start is past latest or the profile
// never changes again.
func (p *Profile) coNext(qs []*query, t, latest int64) (next int64, lead int, own [][]int, st FitStatus, searches int, err error) {
	next = int64(posInf)
	p.probeA.t = t + 1
	p.cps.AscendGreaterOrEqual(p.probeA, func(cp *changePoint) bool {
		next = cp.t
		return false
	})
	if next > latest {
		return 0, 0, nil, FitBeyondLatest, 0, nil
	}
	// Each from the latest start found so far: a start where all fit is
	// no earlier than any one's earliest from a lower bound of it.
	st, next, lead, own, err = p.soloStarts(qs, func(_ int, q *query) (result, error) {
		q.t0, q.latest, q.cands, q.upTo = next, latest, nil, 0
		r, err := p.search(q)
		searches++
		if err == nil && r.st == FitFound {
			next = max(next, r.t)
		}
		return r, err
	})
	return next, lead, own, st, searches, err
}
