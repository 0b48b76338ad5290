package backfill

import (
	"fmt"
	"slices"
	"time"
)

// Heterogeneous jobs (Slurm's sbatch with ':'-separated components): the
// components of one job must start at the same instant, each on its own
// nodes with its own request. The co-start search tries candidate
// common starts t in increasing order:
//
//  1. The first t is the latest of the components' own earliest starts.
//  2. At t each component in turn takes the nodes its own search chooses
//     at t, with the components before it booked there. When one does
//     not fit, coExact searches the components' node choices at t (a
//     1-CPU component on the only GPU node may have to move aside).
//  3. When nothing fits at t, the next t is the first start at which
//     every component fits alone after the profile's next change after
//     t (hetexact.go: until a change nothing frees up).
//
// t only grows, through the profile's change points, so the search ends
// (maxCoRounds bounds it); a component that never fits, or fits only
// beyond Latest, ends it at once with that status. A component is booked
// at t before any search or overlapping fit that comes after it, so the
// components never count the same free resources twice; those whose own
// nodes fit and meet no other's are booked only when the job keeps its
// start (the planner's starts and reservations), so that a search ending
// in an estimate leaves the profile untouched.

// maxCoRounds bounds the candidate starts of one co-start search (each
// later than the one before); past it the search answers FitBeyondLatest.
const maxCoRounds = 4096

// maxOverlapTest bounds the node pairs compared when testing whether a
// component's nodes meet those of the components chosen before it; past
// it they are booked first, as if they met.
const maxOverlapTest = 4096

// coResult is the outcome of a co-start search. On FitFound the
// components booked on the way (booked: their IDs) are in the profile;
// the others (unbooked: their indices) were taken on nodes none of the
// components before them uses, where their fit alone is their fit with
// those booked, and are not (see bookRest and release).
type coResult struct {
	st       FitStatus
	t        int64
	nodes    [][]int
	searches int
	booked   []JobID
	unbooked []int
}

// coSearch runs the co-start search for the queries from t, the latest
// of the components' own earliest starts, that of component lead.
// own[k] are the nodes of component k's own earliest fit: where they are
// still free over the component's interval from the candidate start,
// they are taken without a new search — its own fit there is a fit at
// that start. A component is booked (under ids[k], at the candidate start,
// for its duration) only when one after it must see it: a search, or
// nodes that meet its nodes; the components whose own nodes fit and meet
// no other's — the common case, components on different partitions —
// leave the profile as it is, so that a search that ends without a
// reservation changes nothing. On any status but FitFound nothing stays
// booked.
func (p *Profile) coSearch(ids []JobID, qs []*query, latest, t int64, lead int, own [][]int) (coResult, error) {
	res := coResult{st: FitFound, nodes: make([][]int, len(qs))}
	order := leadFirst(make([]int, 0, len(qs)), lead, len(qs))
	searched := make([]bool, len(qs))
	var pendNodes int // the nodes of the unbooked components
	bookPending := func() error {
		pendNodes = 0
		return p.bookRest(ids, qs, &res, t)
	}
	fail := func(err error) (coResult, error) {
		pendNodes = 0
		if rerr := p.release(&res); err == nil {
			err = rerr
		}
		return res, err
	}
	// small: few enough nodes to search the components' choices at a
	// start (coExact); steps: the starts left without a fit, reorders:
	// the orders tried at this one.
	small, steps, reorders := true, 0, 0
	if len(qs) > 1 {
		total := 0
		for _, q := range qs {
			total += q.allowed.Count()
		}
		small = total <= maxExactScan
	}
	exactSteps := 0
	if small {
		exactSteps = maxExactSteps
	}
	for round := 0; ; round++ {
		if round >= maxCoRounds || t > latest {
			res.st = FitBeyondLatest
			return fail(nil)
		}
		fit, jumped, failed := true, false, 0
		for _, k := range order {
			q := qs[k]
			end := p.endAt(t, q.d)
			nodes := own[k]
			if searched[k] && q.hasSpread() {
				nodes = nil // the query's shares are those of its last search now
			}
			if nodes != nil && pendNodes > 0 && res.meets(nodes, pendNodes) {
				if err := bookPending(); err != nil {
					return fail(err)
				}
			}
			if nodes == nil || !p.fitsAll(q, nodes, t, end) {
				// The search must see the components chosen before it.
				if err := bookPending(); err != nil {
					return fail(err)
				}
				searched[k] = true
				q.t0, q.latest, q.cands, q.upTo = t, t, nil, 0
				r, err := p.search(q)
				res.searches++
				if err != nil {
					return fail(err)
				}
				if r.st == FitNever {
					res.st = r.st
					return fail(nil)
				}
				if r.st != FitFound && steps >= exactSteps && (small || reorders >= len(qs)-1 || order[0] == k) {
					// Past the exact steps (and, for a large job, the
					// orders), as a bound on the work: the start this
					// component's search finds with the ones before it
					// booked at t.
					q.t0, q.latest, q.cands, q.upTo = t, latest, nil, 0
					r, err = p.search(q)
					res.searches++
					if err != nil || r.st != FitFound {
						res.st = r.st
						return fail(err)
					}
				}
				if r.st != FitFound {
					fit, failed = false, k
					break
				}
				if r.t > t {
					if _, err := fail(nil); err != nil {
						return res, err
					}
					t, jumped = r.t, true
					break
				}
				nodes = r.nodes
			}
			res.nodes[k] = nodes
			res.unbooked = append(res.unbooked, k)
			pendNodes += len(nodes)
		}
		if jumped {
			reorders = 0
			continue
		}
		if fit {
			res.t = t
			return res, nil
		}
		// The components in turn do not fit at t: search their node
		// choices there (coExact) where they are few, else try again at
		// t with the one that did not fit first; when nothing fits at t,
		// the next start to try is where each fits alone after the next
		// change of the profile.
		if _, err := fail(nil); err != nil {
			return res, err
		}
		if small {
			ok, n, err := p.coExact(ids, qs, t, &res)
			res.searches += n
			if err != nil {
				return fail(err)
			}
			if ok {
				res.t = t
				return res, nil
			}
		} else if reorders < len(qs)-1 && order[0] != failed {
			reorders++
			x := slices.Index(order, failed)
			copy(order[1:x+1], order[:x])
			order[0] = failed
			continue
		}
		reorders = 0
		steps++
		var st FitStatus
		var n int
		var err error
		t, lead, own, st, n, err = p.coNext(qs, t, latest)
		res.searches += n
		if err != nil || st != FitFound {
			res.st = st
			return fail(err)
		}
		clear(searched)
		order = leadFirst(order[:0], lead, len(qs))
	}
}

// leadFirst appends to order the components 0..n-1, lead first and the
// others in turn: the order a co-start search tries them in.
func leadFirst(order []int, lead, n int) []int {
	order = append(order, lead)
	for k := range n {
		if k != lead {
			order = append(order, k)
		}
	}
	return order
}

// meets reports whether nodes meet those of the unbooked components
// (pend of them in all), or are too many to tell cheaply.
func (res *coResult) meets(nodes []int, pend int) bool {
	if len(nodes)*pend > maxOverlapTest {
		return true
	}
	for _, k := range res.unbooked {
		for _, i := range res.nodes[k] {
			if slices.Contains(nodes, i) {
				return true
			}
		}
	}
	return false
}

// bookRest books the components a co-start search left unbooked, at
// start t (a successful search's res.t): then every component is booked.
func (p *Profile) bookRest(ids []JobID, qs []*query, res *coResult, t int64) error {
	for _, k := range res.unbooked {
		if err := p.bookQuery(ids[k], qs[k], t, p.endAt(t, qs[k].d), res.nodes[k]); err != nil {
			return err
		}
		res.booked = append(res.booked, ids[k])
	}
	res.unbooked = res.unbooked[:0]
	return nil
}

// release takes back what a successful co-start search booked: the
// profile is then as it was before the search.
func (p *Profile) release(res *coResult) error {
	err := p.releaseIDs(res.booked)
	res.booked, res.unbooked = res.booked[:0], res.unbooked[:0]
	return err
}

// soloStarts searches each query alone on the profile (nothing booked):
// the status is FitFound when every one fits, then t is the latest of
// their starts, lead the query that gave it and own each one's nodes.
func (p *Profile) soloStarts(qs []*query, solo func(k int, q *query) (result, error)) (st FitStatus, t int64, lead int, own [][]int, err error) {
	own = make([][]int, len(qs))
	for k, q := range qs {
		r, err := solo(k, q)
		if err != nil {
			return 0, 0, 0, nil, err
		}
		if r.st != FitFound {
			return r.st, 0, 0, nil, nil
		}
		own[k] = r.nodes
		if k == 0 || r.t > t {
			t, lead = r.t, k
		}
	}
	return FitFound, t, lead, own, nil
}

// bookQuery books q's use on nodes over [s, e) under id.
func (p *Profile) bookQuery(id JobID, q *query, s, e int64, nodes []int) error {
	a := p.a
	ent := &entry{id: id, kind: kindReserved, start: s, end: e, nodes: make([]int32, len(nodes)), use: make([]int64, len(nodes)*a)}
	for x, i := range nodes {
		ent.nodes[x] = int32(i)
		copy(ent.use[x*a:(x+1)*a], p.useOn(q, i))
	}
	if err := p.insertReserved(ent); err != nil {
		return fmt.Errorf("internal: booking a found fit failed: %w", err)
	}
	return nil
}

// releaseIDs releases the tentative bookings under ids, last first.
func (p *Profile) releaseIDs(ids []JobID) error {
	for k := len(ids) - 1; k >= 0; k-- {
		if err := p.Release(ids[k]); err != nil {
			return fmt.Errorf("internal: releasing a tentative booking: %w", err)
		}
	}
	return nil
}

// EarliestCoFit returns the earliest time at which every request fits at
// once, all starting at that same instant (the components of a
// heterogeneous job), and the nodes of each: fits[k] answers reqs[k].
// The start is no earlier than any request's Earliest and no later than
// the earliest Latest among them. Each request is searched on the
// profile holding the others' bookings, so two requests never count the
// same free resources; ids name those tentative bookings (they must not
// be in the profile) and nothing stays booked when EarliestCoFit
// returns. Every Fit has the common status; Nodes and Spread are set
// only when it is FitFound. It ignores the profile's Counters; see
// EarliestCoFitUses.
func (p *Profile) EarliestCoFit(ids []JobID, reqs []Request) ([]Fit, error) {
	return p.EarliestCoFitUses(ids, reqs, nil)
}

// EarliestCoFitUses is EarliestCoFit for requests that also take uses
// of the profile's Counters while they run: uses[k] (nil for none) are
// what reqs[k] takes from the common start for its Duration (a
// heterogeneous job's components' licenses and limit counts). As Slurm
// checks a heterogeneous job's components in turn with the ones before
// counted, request k's uses must fit their bounds with those of the
// requests before it added where their runs overlap: the common start is
// the earliest at which every request fits the nodes and the counters.
// When the counters can never hold them every Fit is FitNever; when they
// keep the job past the latest start, FitBeyondLatest. Errors wrap
// ErrInvalidRequest for uses without a counter set, naming an unknown
// counter, or not one list per request.
func (p *Profile) EarliestCoFitUses(ids []JobID, reqs []Request, uses [][]Use) ([]Fit, error) {
	if len(ids) != len(reqs) || len(reqs) == 0 {
		return nil, fmt.Errorf("%w: %d IDs for %d requests, want as many and at least one", ErrInvalidRequest, len(ids), len(reqs))
	}
	if uses != nil && len(uses) != len(reqs) {
		return nil, fmt.Errorf("%w: %d use lists for %d requests, want one per request", ErrInvalidRequest, len(uses), len(reqs))
	}
	if hasUses(uses) {
		if p.ctr == nil {
			return nil, fmt.Errorf("%w: uses counters, but the profile has none (SetCounters)", ErrInvalidRequest)
		}
		for k, us := range uses {
			if err := p.ctr.validUses(us); err != nil {
				return nil, fmt.Errorf("request %d: %w", k, err)
			}
		}
	}
	seen := make(map[JobID]bool, len(ids))
	for _, id := range ids {
		if seen[id] || p.hasID(id) {
			return nil, fmt.Errorf("%w: %d", ErrDuplicateID, id)
		}
		seen[id] = true
	}
	qs := make([]*query, len(reqs))
	latest := int64(posInf)
	for k := range reqs {
		q, err := p.makeQuery(&reqs[k])
		if err != nil {
			return nil, fmt.Errorf("request %d: %w", k, err)
		}
		latest = min(latest, q.latest)
		qs[k] = q
	}
	st, t, lead, nodes, err := p.soloStarts(qs, func(_ int, q *query) (result, error) {
		q.latest = latest
		r, err := p.search(q)
		if err == nil && r.st == FitBeyondLatest && (p.capable(q) < q.n || !p.spreadCapable(q)) {
			r.st = FitNever
		}
		return r, err
	})
	if err != nil {
		return nil, err
	}
	res := coResult{st: st}
	if st == FitFound {
		if res, err = p.coSearch(ids, qs, latest, t, lead, nodes); err != nil {
			return nil, err
		}
		if res, _, err = p.coCounted(ids, qs, latest, res, uses, nil); err != nil {
			return nil, err
		}
	}
	fits := make([]Fit, len(reqs))
	for k := range fits {
		fits[k].Status = res.st
		if res.st != FitFound {
			continue
		}
		fits[k].Start = p.timeOf(res.t)
		fits[k].End = p.timeOf(p.endAt(res.t, qs[k].d))
		fits[k].Nodes = res.nodes[k]
		fits[k].Spread = p.shares(qs[k])
		fits[k].Tasks = p.taskCounts(qs[k], len(res.nodes[k]))
	}
	if res.st == FitFound {
		if err := p.release(&res); err != nil {
			return nil, err
		}
	}
	return fits, nil
}

// validateHet checks a heterogeneous job's components (jobs[x] has
// Components): the first is the leader and carries the job's ID, the
// others have IDs of their own, none nested.
func (pl *Planner) validateHet(p *Profile, x int, j *Job, ids map[JobID]struct{}, firstKept bool) error {
	if j.Components[0].ID != j.ID {
		return fmt.Errorf("%w: jobs[%d] (ID %d): Components[0] has ID %d, want the job's", ErrInvalidJob, x, j.ID, j.Components[0].ID)
	}
	if len(j.Uses) > 0 {
		return fmt.Errorf("%w: jobs[%d] (ID %d): a heterogeneous job's Uses are its components' (Components[k].Uses)", ErrInvalidJob, x, j.ID)
	}
	for k := range j.Components {
		c := &j.Components[k]
		if len(c.Components) > 0 {
			return fmt.Errorf("%w: jobs[%d] (ID %d): component %d has components of its own", ErrInvalidJob, x, j.ID, k)
		}
		if k > 0 {
			if _, dup := ids[c.ID]; dup {
				return fmt.Errorf("%w: jobs[%d] component %d: ID %d appears twice", ErrDuplicateID, x, k, c.ID)
			}
			ids[c.ID] = struct{}{}
		}
		if p.hasID(c.ID) && (k > 0 || x > 0 || !firstKept) {
			return fmt.Errorf("%w: jobs[%d] component %d: ID %d is already in the profile", ErrDuplicateID, x, k, c.ID)
		}
		if err := pl.validateJobs(p, []Job{*c}, map[JobID]struct{}{}, true); err != nil {
			return fmt.Errorf("jobs[%d] component %d: %w", x, k, err)
		}
	}
	return nil
}

// planHet plans a heterogeneous job: one co-start search for all its
// components (see coSearch), then, as for any job, a start now, a
// reservation (every component booked at the common start) or an
// estimate. The components are planned with their full TimeLimit
// (TimeMin is not applied to heterogeneous jobs). The job's entry has
// the common start and its Components one entry per component.
func (r *run) planHet(j *Job, e *Entry) error {
	p := r.p
	r.plan.Stats.Tested++
	// A kept reservation of the leader is searched through by releasing
	// it: the components are booked afresh together.
	if err := r.dropKept(); err != nil {
		return err
	}
	noResv := r.reserveReason(j)
	ids := make([]JobID, len(j.Components))
	qs := make([]*query, len(j.Components))
	var uses [][]Use // the components' counters, when any takes one
	e.Components = make([]Entry, len(j.Components))
	for k := range j.Components {
		c := &j.Components[k]
		ids[k] = c.ID
		if len(c.Uses) > 0 && uses == nil {
			uses = make([][]Use, len(j.Components))
		}
		if uses != nil {
			uses[k] = c.Uses
		}
		e.Components[k].ID = c.ID
		// The request a plain job of the component's shape would search
		// (its task spread included: -n without -N).
		req := r.pl.JobRequest(c, c.TimeLimit, laterOf(j.Earliest, c.Earliest))
		q, err := p.makeQuery(&req)
		if err != nil {
			return fmt.Errorf("component %d: %w", k, err)
		}
		qs[k] = q
	}
	latest := r.latest
	if j.NoEstimate && noResv != ReasonNone {
		latest = p.origin
	}
	capacity := false // a component no allowed node set can ever hold
	fst, t, lead, nodes, err := p.soloStarts(qs, func(k int, q *query) (result, error) {
		q.latest = latest
		res, never, err := r.soloFit(&j.Components[k], q)
		capacity = capacity || never
		return res, err
	})
	if err != nil {
		return err
	}
	if capacity {
		r.setHetStatus(e, StatusNeverFits, ReasonCapacity)
		return nil
	}
	res := coResult{st: fst}
	// The search may book and release; when nothing stays booked the
	// profile is as it was, and so are the shape cache's answers (it
	// learns nothing during the search).
	gen, booked := r.gen, false
	defer func() {
		if !booked {
			r.gen = gen
		}
	}()
	if fst == FitFound {
		r.gen++
		res, err = p.coSearch(ids, qs, latest, t, lead, nodes)
		if err == nil && hasUses(uses) {
			// The counters must hold the components together from
			// the common start.
			var cc coCounter
			res, cc, err = p.coCounted(ids, qs, latest, res, uses, func() { r.gen++ })
			e.ByCounter, e.Counter = cc.by, cc.counter
			if err == nil && cc.never {
				r.plan.Stats.Searches += res.searches
				r.setHetStatus(e, StatusNeverFits, ReasonCounter)
				return nil
			}
		}
		r.plan.Stats.Searches += res.searches
		if err != nil {
			return err
		}
	}
	switch res.st {
	case FitBeyondLatest:
		if latest == p.origin {
			r.setHetStatus(e, StatusWaiting, noResv)
			return nil
		}
		r.setHetStatus(e, StatusBeyondWindow, ReasonWindow)
		return nil
	case FitNever:
		r.setHetStatus(e, StatusNeverFits, ReasonUnavailable)
		return nil
	}
	start := p.timeOf(res.t)
	e.Start = start
	for k := range e.Components {
		ce := &e.Components[k]
		ce.Start, ce.TimeLimit = start, j.Components[k].TimeLimit
		ce.End = start.Add(ce.TimeLimit)
		ce.Nodes = res.nodes[k] // its own array: kept by plans that extend this one
		ce.Spread = p.shares(qs[k])
		ce.Tasks = p.taskCounts(qs[k], len(ce.Nodes))
		e.End = laterOf(e.End, ce.End)
	}
	e.TimeLimit = e.End.Sub(start)
	st, why := StatusReserved, ReasonNone
	switch {
	case res.t == p.origin:
		st = StatusStart
	case noResv != ReasonNone:
		st, why = StatusEstimated, noResv
		// Estimated only: the bookings go.
		if err := p.release(&res); err != nil {
			return err
		}
	default:
		r.partRes[j.Partition]++
	}
	if st != StatusEstimated {
		if err := p.bookRest(ids, qs, &res, res.t); err != nil {
			return err
		}
		booked = true
		r.barrier = r.gen // its searches booked and released: no earlier answer holds
		if hasUses(uses) {
			p.ctr.bookCo(uses, res.t, coEnds(p, qs, res.t))
		}
	}
	r.setHetStatus(e, st, why)
	return nil
}

// soloFit is a component's own earliest start on the profile as it is,
// answered from the planner's shape cache where it can be and entered in
// it (a component asks what a job of its shape would), as planJob does;
// capacity reports that too few allowed nodes can ever hold it.
func (r *run) soloFit(c *Job, q *query) (res result, capacity bool, err error) {
	p := r.p
	sh := r.cachedShape(c, q)
	if r.neverFits(sh, q) {
		return result{st: FitNever}, true, nil
	}
	e0 := q.t0
	if en := r.same(sh, q, e0); en != nil {
		if en.t > q.latest {
			return result{st: FitBeyondLatest}, false, nil
		}
		return result{st: FitFound, t: en.t, nodes: append(q.nodeList(len(en.nodes)), en.nodes...)}, false, nil
	}
	hint, fail := sh.lookup(q.n, q.d, e0, q.latest)
	if fail != FitFound {
		return result{st: fail}, false, nil
	}
	if hint.t > q.latest {
		return result{st: FitBeyondLatest}, false, nil
	}
	q.t0, q.cands, q.upTo = hint.t, hint.cands, hint.upTo
	r.plan.Stats.Searches++
	if res, err = p.search(q); err != nil {
		return res, false, err
	}
	sh.insert(q, e0, res, r.gen)
	return res, false, nil
}

// setHetStatus sets the status and reason of a heterogeneous job's entry
// and of each of its components' entries.
func (r *run) setHetStatus(e *Entry, st Status, why Reason) {
	e.Status, e.Reason = st, why
	for k := range e.Components {
		e.Components[k].Status, e.Components[k].Reason = st, why
		if st != StatusStart && st != StatusReserved && st != StatusEstimated {
			e.Components[k].Start, e.Components[k].End, e.Components[k].Nodes = time.Time{}, time.Time{}, nil
		}
	}
}

// laterOf returns the later of two times (zero counting as earliest).
func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
