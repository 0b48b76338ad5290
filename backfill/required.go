package backfill

import (
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/topology"
)

// Required nodes (Request.Required, Job.Required): every choice includes
// them, so no start is possible before each of them can hold the
// request. A job listing one busy node of the two it takes would
// otherwise have its sweep read every node at every change point until
// that node frees; the bound moves the search's first time there
// instead. The answer is the same: before the bound the feasible set
// lacks a required node at every time, and the feasible set at the
// bound, found by the search's full scan, is the one the sweep would
// have built (a node's feasibility changes only at its own change
// points).

// setRequired validates req (node indices of the profile, no
// duplicates, at most the request's node count) and keeps it in q.
func (p *Profile) setRequired(q *query, req []int) error {
	q.required = q.required[:0]
	if len(req) > q.n {
		return fmt.Errorf("%w: Required lists %d nodes for a request of %d", ErrInvalidRequest, len(req), q.n)
	}
	for x, i := range req {
		if i < 0 || i >= p.n {
			return fmt.Errorf("%w: Required[%d] is node %d, want [0, %d)", ErrInvalidRequest, x, i, p.n)
		}
		q.required = append(q.required, i)
	}
	// Kept ascending (every use is order-free), so that duplicates are
	// adjacent and isRequired a binary search: a long list costs
	// O(n log n), not a scan per node.
	slices.Sort(q.required)
	for x := 1; x < len(q.required); x++ {
		if q.required[x] == q.required[x-1] {
			return fmt.Errorf("%w: Required lists node %d twice", ErrInvalidRequest, q.required[x])
		}
	}
	return nil
}

// isRequired reports whether node i is one of the required nodes.
func (q *query) isRequired(i int) bool {
	_, ok := slices.BinarySearch(q.required, i)
	return ok
}

// requiredIn reports whether F holds every required node.
func (q *query) requiredIn(F topology.NodeSet) bool {
	for _, i := range q.required {
		if !F.Has(i) {
			return false
		}
	}
	return true
}

// requiredBound moves q's first time to the first time at or after it at
// which every required node can hold the request, forgetting the hint
// (it describes the old first time). When some required node never can,
// q is left as it is: the search then finds no choice on its own.
func (p *Profile) requiredBound(q *query) {
	if len(q.required) == 0 {
		return
	}
	lb := q.t0
	for _, i := range q.required {
		t, ok := p.firstHold(q, i, q.t0)
		if !ok {
			return
		}
		lb = max(lb, t)
	}
	if lb > q.t0 {
		q.t0, q.cands, q.upTo = lb, nil, 0
	}
}

// firstHold returns the first time at or after t at which node i (with
// the ghost's use counted free) can take the request, and whether there
// is one.
func (p *Profile) firstHold(q *query, i int, t int64) (int64, bool) {
	a := p.a
	capI := p.caps[i*a : (i+1)*a]
	if !q.allowed.Has(i) || !q.fits(capI) {
		return 0, false
	}
	var at int64
	ok := false
	p.walkFree(q, i, t, posInf, func(s int64, f []int64) bool {
		if q.takes(f, capI) {
			at, ok = s, true
			return false
		}
		return true
	})
	return at, ok
}

// withRequired is the default chooser's choice with required nodes: the
// required ones and the lowest other candidates, ascending; nil when F
// has too few. F holds every required node (choose checked it).
func (q *query) withRequired(F topology.NodeSet) []int {
	out := append(q.nodeList(q.n), q.required...)
	for i := F.Next(0); i >= 0 && len(out) < q.n; i = F.Next(i + 1) {
		if !q.isRequired(i) {
			out = append(out, i)
		}
	}
	if len(out) < q.n {
		return nil
	}
	slices.Sort(out)
	return out
}
