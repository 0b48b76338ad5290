package backfill

// Heterogeneous jobs and the Counters: the components of a heterogeneous
// job start together, so the counters (licenses, limit counts) must hold
// all of them from the common start, each component's uses checked with
// those of the components before it where their runs overlap — as Slurm
// checks a heterogeneous job's components in turn, the ones before
// counted. The co-start search (het.go) finds the earliest start at which
// every component fits the nodes; coCounted moves it later until the
// counters agree.

// coCounter is what the counters did to a co-start search: moved the
// common start later (by, counter the one without room) or can never
// hold the job (never).
type coCounter struct {
	by, never bool
	counter   CounterID
}

// coRoom reports whether the counters have room, at common start t, for
// the components' uses: component k's uses[k] over [t, t+ds[k]), each
// within its own bound with the uses of the components before it
// counted where their runs overlap (as Slurm checks a heterogeneous
// job's components in turn, the ones before counted). When they have
// none, next is the earliest start that may (the end of the first step
// found too full: every start before it still runs the component
// through that step, with at least as many of the components before it
// running), and never says that none ever does (the step lasts for
// ever); counter is the counter without room.
func (c *Counters) coRoom(uses [][]Use, ds []int64, t int64) (ok bool, next int64, never bool, counter CounterID) {
	for k, us := range uses {
		for _, u := range us {
			if u.Amount == 0 {
				continue
			}
			tl := c.settled(u.Counter)
			b := tl.bound(u)
			first := tl.at(t)
			for i := first; i < len(tl.pts) && (i == first || tl.pts[i].t < t+ds[k]); i++ {
				need := tl.pts[i].use + u.Amount
				for j := range k {
					if i != first && tl.pts[i].t >= t+ds[j] {
						continue // component j has ended by this step
					}
					for _, v := range uses[j] {
						if v.Counter == u.Counter {
							need += v.Amount
						}
					}
				}
				if need <= b {
					continue
				}
				if i+1 == len(tl.pts) {
					return false, 0, true, u.Counter
				}
				return false, tl.pts[i+1].t, false, u.Counter
			}
		}
	}
	return true, t, false, 0
}

// bookCo books the components' uses at common start t, each over its
// own run [t, ends[k]).
func (c *Counters) bookCo(uses [][]Use, t int64, ends []int64) {
	for k, us := range uses {
		c.book(us, t, ends[k])
	}
}

// coCounted makes a co-start search's result res (at common start
// res.t) agree with the attached counters: while they have no room for
// the components' uses there (coRoom), what the search booked is
// released and the co-start search runs again from the earliest start
// at which they may (each component searched afresh there, so that the
// nodes chosen at a start do not depend on where they first fitted),
// until the nodes and the counters agree on one start. again, when set,
// is called before each new search (it books and releases). On any
// status but FitFound nothing stays booked.
func (p *Profile) coCounted(ids []JobID, qs []*query, latest int64, res coResult, uses [][]Use, again func()) (coResult, coCounter, error) {
	var cc coCounter
	if p.ctr == nil || res.st != FitFound || !hasUses(uses) {
		return res, cc, nil
	}
	ds := make([]int64, len(qs))
	for k, q := range qs {
		ds[k] = q.d
	}
	for round := 0; ; round++ {
		ok, s, never, ctr := p.ctr.coRoom(uses, ds, res.t)
		if ok {
			return res, cc, nil
		}
		cc.by, cc.counter = true, ctr
		if err := p.release(&res); err != nil {
			return res, cc, err
		}
		switch {
		case never:
			cc.never, res.st = true, FitNever
			return res, cc, nil
		case s > latest || round >= maxCoRounds:
			res.st = FitBeyondLatest
			return res, cc, nil
		}
		if again != nil {
			again()
		}
		n := res.searches
		next, err := p.coSearch(ids, qs, latest, s, 0, make([][]int, len(qs)))
		next.searches += n
		if err != nil {
			return next, cc, err
		}
		if res = next; res.st != FitFound {
			return res, cc, nil
		}
	}
}

// hasUses reports whether any component takes a counter.
func hasUses(uses [][]Use) bool {
	for _, us := range uses {
		if len(us) > 0 {
			return true
		}
	}
	return false
}

// coEnds are the ends of the components' bookings at start t.
func coEnds(p *Profile, qs []*query, t int64) []int64 {
	ends := make([]int64, len(qs))
	for k, q := range qs {
		ends[k] = p.endAt(t, q.d)
	}
	return ends
}
