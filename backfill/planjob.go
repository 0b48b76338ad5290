package backfill

import (
	"fmt"
	"slices"
	"time"
)

// jobFit is what find learned of a plain job: the answer res of the
// search for query q (planned for planned, the job's --time-min when it
// has one), why it may hold no reservation (noResv), whether only a start
// now is asked (startOnly), whether the kept reservation is looked
// through (ghost: the caller turns it off when done with q) and whether
// the entry already says the job never fits (settled).
type jobFit struct {
	res       result
	q         *query
	planned   time.Duration
	noResv    Reason
	startOnly bool
	ghost     bool
	settled   bool
}

// find searches the earliest start of plain job j (no components, no
// alternatives) at or before latest on the plan's profile, through the
// shape cache, and where j takes counters the earliest at which they have
// room too; an entry that never fits is settled in e. On error the kept
// reservation is no longer looked through.
func (r *run) find(j *Job, e *Entry, latest int64) (f jobFit, err error) {
	p := r.p
	f = jobFit{noResv: r.reserveReason(j), planned: j.TimeLimit}
	if j.TimeMin > 0 && j.TimeMin < j.TimeLimit {
		f.planned = j.TimeMin
	}
	req := r.pl.JobRequest(j, f.planned, j.Earliest)
	q, err := p.fillQuery(&r.q, &req)
	if err != nil {
		return f, err
	}
	f.q = q
	q.latest = latest
	// A job that may hold no reservation and wants no estimate needs only
	// the answer for now.
	f.startOnly = j.NoEstimate && f.noResv != ReasonNone
	if f.startOnly {
		q.latest = p.origin
	}
	if r.kept != nil && r.kept.id == j.ID {
		p.ghostOn(q, r.kept)
		f.ghost = true
		defer func() {
			if err != nil {
				p.ghostOff(q)
				f.ghost = false
			}
		}()
	}

	sh := r.cachedShape(j, q)
	if r.neverFits(sh, q) {
		e.Status, e.Reason = StatusNeverFits, ReasonCapacity
		f.settled = true
		return f, nil
	}
	e0 := q.t0
	res := result{st: FitBeyondLatest}
	if en := r.same(sh, q, e0); en != nil && q.ghost == nil {
		// The same question on the same profile: the same answer.
		if en.t <= q.latest {
			res = result{st: FitFound, t: en.t, nodes: append(q.nodeList(len(en.nodes)), en.nodes...)}
		}
	} else if hint, fail := sh.lookup(q.n, q.d, e0, q.latest); fail != FitFound {
		res.st = fail
	} else if hint.t <= q.latest {
		// (A hint past the latest start is the answer, beyond it, and
		// the entry that gave it stands for this job too.)
		q.t0, q.cands, q.upTo = hint.t, hint.cands, hint.upTo
		r.plan.Stats.Searches++
		res, err = p.search(q)
		if err != nil {
			return f, err
		}
		gen := r.gen
		if q.ghost != nil {
			gen = -1 // found on the profile without the kept reservation
		}
		sh.insert(q, e0, res, gen)
	}
	if res.st == FitFound && len(j.Uses) > 0 {
		res, err = r.counterFit(j, q, sh, res, e)
		if err != nil {
			return f, err
		}
		if res.st == FitNever && e.Reason == ReasonCounter {
			e.Status = StatusNeverFits
			f.settled = true
			return f, nil
		}
	}
	f.res = res
	return f, nil
}

// planJob tests one job and fills its entry, booking starts and
// reservations into the profile.
func (r *run) planJob(j *Job, e *Entry) error {
	if len(j.Components) > 0 {
		return r.planHet(j, e)
	}
	if len(j.Alternatives) > 0 {
		return r.planAlternatives(j, e)
	}
	r.plan.Stats.Tested++
	f, err := r.find(j, e, r.latest)
	if err != nil {
		return err
	}
	return r.place(j, e, f)
}

// place fills the entry e of plain job j from what find learned of it, f
// (turning the kept reservation's look-through off when done), booking a
// start or reservation into the profile.
func (r *run) place(j *Job, e *Entry, f jobFit) error {
	p := r.p
	if f.ghost {
		defer p.ghostOff(f.q)
	}
	if f.settled {
		return nil
	}
	q, res, planned, noResv, startOnly := f.q, f.res, f.planned, f.noResv, f.startOnly
	t, nodes := res.t, res.nodes
	switch res.st {
	case FitBeyondLatest:
		if startOnly {
			e.Status, e.Reason = StatusWaiting, noResv
			return nil
		}
		e.Status, e.Reason = StatusBeyondWindow, ReasonWindow
		return nil
	case FitNever:
		e.Status, e.Reason = StatusNeverFits, ReasonUnavailable
		return nil
	}

	d, limit := q.d, ceilSecs(j.TimeLimit)
	if t == p.origin && planned < j.TimeLimit {
		// --time-min: run as long as the plan allows, up to the limit.
		full := p.durAt(t, limit)
		if run := p.runLength(q, nodes, t, full); run >= full {
			d = limit
		} else {
			d = max(q.d, run/60*60)
		}
		if len(j.Uses) > 0 && d > q.d && p.ctr.blocking(j.Uses, t, d) >= 0 {
			d = q.d // the counters hold it for --time-min only
		}
	}
	e.Start = p.timeOf(t)
	e.Nodes = nodes
	e.Spread = p.shares(q)
	e.Tasks = p.taskCounts(q, len(nodes))
	e.TimeLimit = time.Duration(d) * time.Second
	if d == limit {
		e.TimeLimit = j.TimeLimit
	}
	e.End = e.Start.Add(e.TimeLimit)

	if t > p.origin && noResv != ReasonNone {
		e.Status, e.Reason = StatusEstimated, noResv
		return nil
	}
	end := p.endAt(t, d)
	if t == p.origin {
		// A start holds its resources until Now + TimeLimit, which is a
		// second later than the origin's count when Now has a fraction
		// of a second: book that, where the profile allows it, so that
		// the booking is exactly the running job (AddStarted then keeps
		// it).
		if e2 := p.endOf(e.End); e2 > end {
			// Its own last reservation must not stand in the way:
			// release it (this start replaces it anyway).
			if err := r.dropKept(); err != nil {
				return err
			}
			if p.fitsAll(q, nodes, end, e2) {
				end = e2
			}
		}
	}
	if err := r.book(j, q, t, end, nodes); err != nil {
		return err
	}
	if len(j.Uses) > 0 {
		p.ctr.book(j.Uses, t, end)
	}
	if t == p.origin {
		e.Status = StatusStart
		return nil
	}
	e.Status = StatusReserved
	r.partRes[j.Partition]++
	return nil
}

// book reserves [t, end) on nodes for job j.
func (r *run) book(j *Job, q *query, t, end int64, nodes []int) error {
	p := r.p
	a := p.a
	if k := r.kept; k != nil && k.start == t && k.end == end && r.bookedAs(k, q, nodes) {
		r.kept = nil
		return nil // booked exactly so already
	}
	ent := &entry{id: j.ID, kind: kindReserved, start: t, end: end, nodes: make([]int32, len(nodes)), use: make([]int64, len(nodes)*a)}
	for x, i := range nodes {
		ent.nodes[x] = int32(i)
		copy(ent.use[x*a:(x+1)*a], p.useOn(q, i))
	}
	if err := r.dropKept(); err != nil {
		return err
	}
	r.gen++
	r.noteBooked(nodes)
	if err := p.insertReserved(ent); err != nil {
		// The search said these nodes fit; this is a bug, not bad input.
		return fmt.Errorf("internal: booking a found fit failed: %w", err)
	}
	return nil
}

// bookedAs reports whether entry k holds exactly what booking q on nodes
// would (the same nodes in the same order, the same use on each).
func (r *run) bookedAs(k *entry, q *query, nodes []int) bool {
	a := r.p.a
	if len(k.nodes) != len(nodes) {
		return false
	}
	for x, i := range nodes {
		if int(k.nodes[x]) != i || !slices.Equal(k.use[x*a:(x+1)*a], r.p.useOn(q, i)) {
			return false
		}
	}
	return true
}

// dropKept releases the kept reservation, if it is still there.
func (r *run) dropKept() error {
	k := r.kept
	if k == nil {
		return nil
	}
	r.kept = nil
	r.gen++
	r.barrier = r.gen // room comes back: no earlier answer holds
	if err := r.p.Release(k.id); err != nil {
		return fmt.Errorf("internal: releasing the kept reservation: %w", err)
	}
	return nil
}

// fitsAll reports whether every node can hold the request over [s, e).
func (p *Profile) fitsAll(q *query, nodes []int, s, e int64) bool {
	for _, i := range nodes {
		if !p.fitsInterval(i, p.useOn(q, i), s, e) {
			return false
		}
	}
	return true
}
