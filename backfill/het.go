package backfill

import (
	"fmt"
	"time"
)

// Heterogeneous jobs (Slurm's sbatch with ':'-separated components): the
// components of one job must start at the same instant, each on its own
// nodes with its own request. The co-start search finds the earliest
// common start by iterating to a fixed point:
//
//  1. t is the latest Earliest of the components.
//  2. Each component in turn is searched from t on a profile that holds
//     the components before it booked at t. If one cannot start at t but
//     can at a later t', every tentative booking is released and the
//     search starts again from t'.
//  3. When every component fits at t, t is the common start.
//
// t only grows, and each value it takes is a start some component's
// search returned (a change point of the profile or an Earliest), so the
// iteration ends; a component that never fits, or fits only beyond
// Latest, ends it at once with that status. Every component is then
// booked at t (the planner keeps them, EarliestCoFit releases them), so
// the components never count the same free resources twice.

// maxCoRounds bounds the restarts of one co-start search (each moves the
// common start later); past it the search answers FitBeyondLatest.
const maxCoRounds = 4096

// coResult is the outcome of a co-start search.
type coResult struct {
	st       FitStatus
	t        int64
	nodes    [][]int
	searches int
}

// coSearch runs the co-start search for the queries (booked, on
// success, under ids at the common start, for their durations), from t:
// the latest of the components' own earliest starts, that of component
// lead. own[k] are the nodes of component k's own earliest fit: where
// they are still free over the component's interval from the candidate
// start (the components before it booked), they are taken without a new
// search — its own fit there is a fit at that start. On any status but
// FitFound nothing stays booked.
func (p *Profile) coSearch(ids []JobID, qs []*query, latest, t int64, lead int, own [][]int) (coResult, error) {
	res := coResult{st: FitFound, nodes: make([][]int, len(qs))}
	order := make([]int, 0, len(qs))
	order = append(order, lead)
	for k := range qs {
		if k != lead {
			order = append(order, k)
		}
	}
	var booked []JobID
	searched := make([]bool, len(qs))
	release := func() error {
		for x := len(booked) - 1; x >= 0; x-- {
			if err := p.Release(booked[x]); err != nil {
				return fmt.Errorf("internal: releasing a tentative booking: %w", err)
			}
		}
		booked = booked[:0]
		return nil
	}
	for round := 0; ; round++ {
		if round >= maxCoRounds || t > latest {
			res.st = FitBeyondLatest
			return res, release()
		}
		moved := false
		for _, k := range order {
			q := qs[k]
			end := p.endAt(t, q.d)
			nodes := own[k]
			if searched[k] && q.hasSpread() {
				nodes = nil // the query's shares are those of its last search now
			}
			if nodes == nil || !p.fitsAll(q, nodes, t, end) {
				searched[k] = true
				q.t0, q.latest, q.cands, q.upTo = t, latest, nil, 0
				r, err := p.search(q)
				res.searches++
				if err != nil {
					_ = release()
					return res, err
				}
				if r.st != FitFound {
					// Each component fits alone (soloStarts): beyond the
					// latest start, not never.
					res.st = r.st
					return res, release()
				}
				if r.t > t {
					if err := release(); err != nil {
						return res, err
					}
					t, moved = r.t, true
					break
				}
				nodes = r.nodes
			}
			res.nodes[k] = nodes
			if err := p.bookQuery(ids[k], q, t, end, nodes); err != nil {
				_ = release()
				return res, err
			}
			booked = append(booked, ids[k])
		}
		if !moved {
			res.t = t
			return res, nil
		}
	}
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

// EarliestCoFit returns the earliest time at which every request fits at
// once, all starting at that same instant (the components of a
// heterogeneous job), and the nodes of each: fits[k] answers reqs[k].
// The start is no earlier than any request's Earliest and no later than
// the earliest Latest among them. Each request is searched on the
// profile holding the others' bookings, so two requests never count the
// same free resources; ids name those tentative bookings (they must not
// be in the profile) and nothing stays booked when EarliestCoFit
// returns. Every Fit has the common status; Nodes and Spread are set
// only when it is FitFound.
func (p *Profile) EarliestCoFit(ids []JobID, reqs []Request) ([]Fit, error) {
	if len(ids) != len(reqs) || len(reqs) == 0 {
		return nil, fmt.Errorf("%w: %d IDs for %d requests, want as many and at least one", ErrInvalidRequest, len(ids), len(reqs))
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
	}
	if res.st == FitFound {
		for k := len(ids) - 1; k >= 0; k-- {
			if err := p.Release(ids[k]); err != nil {
				return nil, fmt.Errorf("internal: releasing a tentative booking: %w", err)
			}
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
	cfg := &r.pl.cfg
	r.plan.Stats.Tested++
	// A kept reservation of the leader is searched through by releasing
	// it: the components are booked afresh together.
	if err := r.dropKept(); err != nil {
		return err
	}
	noResv := r.reserveReason(j)
	ids := make([]JobID, len(j.Components))
	qs := make([]*query, len(j.Components))
	e.Components = make([]Entry, len(j.Components))
	for k := range j.Components {
		c := &j.Components[k]
		ids[k] = c.ID
		e.Components[k].ID = c.ID
		chooser := cfg.Chooser
		if c.Chooser != nil {
			chooser = c.Chooser
		}
		q, err := p.makeQuery(&Request{
			Nodes: c.Nodes, PerNode: c.PerNode, Spread: c.Spread, Exclusive: c.Exclusive, Allowed: c.Allowed,
			Duration: c.TimeLimit, Earliest: laterOf(j.Earliest, c.Earliest), Chooser: chooser, PreferBusy: cfg.BusyNodes,
		})
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
	if fst == FitFound {
		r.gen++ // the search books and releases
		res, err = p.coSearch(ids, qs, latest, t, lead, nodes)
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
		for k := len(ids) - 1; k >= 0; k-- {
			if err := p.Release(ids[k]); err != nil {
				return fmt.Errorf("internal: releasing a tentative booking: %w", err)
			}
		}
	default:
		r.partRes[j.Partition]++
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
	if en := sh.same(q.n, q.d, e0, r.gen); en != nil {
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
