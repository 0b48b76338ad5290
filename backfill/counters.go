package backfill

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// CounterID names one counter of a Counters set: the index Add returned.
type CounterID int32

// Use is what a pending job takes of one counter while it runs: Amount
// from its start to its end. Limit, when positive and below the
// counter's capacity, is the bound this job sees instead (the same
// running count read against a lower limit, as a QOS LimitFactor scales
// an association's limit for some jobs only).
type Use struct {
	Counter CounterID
	Amount  int64
	Limit   int64
}

// Counters is a set of counted resources that are not on any node —
// cluster-wide licenses, or the running counts a limit bounds (jobs or
// TRES per user, account, QOS, association) — each a step function of
// time from the profile's origin: what is in use now, less what the
// running jobs hold until their expected ends, plus what the plan starts
// and reserves over their planned intervals. The package gives them no
// meaning: a counter is a capacity and a use over time.
//
// A job whose Job.Uses name counters is planned at the earliest time its
// nodes fit and every counter it uses has room for its amount over its
// whole planned run; its start or reservation then books that amount
// into the counters, so a later (lower-priority) job cannot take room a
// reservation needs. Attach a set to a profile with Profile.SetCounters
// before planning; Clone copies it with the profile.
//
// Build a set afresh for each plan (the running jobs' holds change from
// cycle to cycle): Add every counter with its capacity and its use now,
// then Release each running job's hold at its expected end.
type Counters struct {
	cs []counterTL
}

// counterTL is one counter: its capacity and its use as a step function,
// pts sorted by time, pts[0] at math.MinInt64 (the use at and before the
// origin), each point's use holding until the next point.
type counterTL struct {
	capacity int64
	pts      []cpoint
	// pend holds releases not yet merged into pts (Release is called
	// once per running job; merging them in one sort keeps building a
	// set O(r log r)).
	pend []cpoint
}

type cpoint struct {
	t   int64
	use int64 // in pts: the use from t; in pend: the delta at t
}

// MaxCounter bounds capacities, uses, amounts and limits of Counters so
// that sums never overflow; a counter of this capacity bounds nothing but
// its uses' limits.
const MaxCounter = math.MaxInt64 / 4

const maxCounterValue = MaxCounter

// NewCounters returns an empty set.
func NewCounters() *Counters { return &Counters{} }

// Len returns the number of counters.
func (c *Counters) Len() int {
	if c == nil {
		return 0
	}
	return len(c.cs)
}

// Add adds a counter with the given capacity (the most that may be in
// use at any time) and the amount in use now, and returns its ID. The use
// may exceed the capacity (a limit lowered below what runs): the counter
// then has no room until enough is released. Errors wrap
// ErrInvalidRequest for negative or oversized values.
func (c *Counters) Add(capacity, inUse int64) (CounterID, error) {
	if capacity < 0 || capacity > maxCounterValue || inUse < 0 || inUse > maxCounterValue {
		return 0, fmt.Errorf("%w: counter capacity %d, in use %d, want [0, %d]", ErrInvalidRequest, capacity, inUse, int64(maxCounterValue))
	}
	if len(c.cs) >= math.MaxInt32 {
		return 0, fmt.Errorf("%w: too many counters", ErrInvalidRequest)
	}
	c.cs = append(c.cs, counterTL{capacity: capacity, pts: []cpoint{{t: math.MinInt64, use: inUse}}})
	return CounterID(len(c.cs) - 1), nil
}

// Capacity returns counter id's capacity (0 for an unknown id).
func (c *Counters) Capacity(id CounterID) int64 {
	if !c.valid(id) {
		return 0
	}
	return c.cs[id].capacity
}

// Release records that amount of counter id's use now is released at at
// (a running job's expected end; the zero time means never, and does
// nothing). Errors wrap ErrInvalidRequest for an unknown counter or a
// negative or oversized amount.
func (c *Counters) Release(id CounterID, amount int64, at time.Time) error {
	switch {
	case !c.valid(id):
		return fmt.Errorf("%w: unknown counter %d", ErrInvalidRequest, id)
	case amount < 0 || amount > maxCounterValue:
		return fmt.Errorf("%w: counter %d release %d, want [0, %d]", ErrInvalidRequest, id, amount, int64(maxCounterValue))
	case at.IsZero() || amount == 0:
		return nil
	}
	k := &c.cs[id]
	k.pend = append(k.pend, cpoint{t: ceilUnix(at), use: -amount})
	return nil
}

// Hold records amount of counter id in use over [from, to) on top of its
// use (a job the plan does not place but that may hold the counter then:
// a pending job of an advance reservation, within its window); the zero
// to means for ever. Errors wrap ErrInvalidRequest for an unknown
// counter, a negative or oversized amount, or to before from.
func (c *Counters) Hold(id CounterID, amount int64, from, to time.Time) error {
	switch {
	case !c.valid(id):
		return fmt.Errorf("%w: unknown counter %d", ErrInvalidRequest, id)
	case amount < 0 || amount > maxCounterValue:
		return fmt.Errorf("%w: counter %d hold %d, want [0, %d]", ErrInvalidRequest, id, amount, int64(maxCounterValue))
	case !to.IsZero() && to.Before(from):
		return fmt.Errorf("%w: counter %d hold ends %s before it starts %s", ErrInvalidRequest, id, to, from)
	case amount == 0:
		return nil
	}
	k := &c.cs[id]
	k.pend = append(k.pend, cpoint{t: from.Unix(), use: amount})
	if !to.IsZero() {
		k.pend = append(k.pend, cpoint{t: ceilUnix(to), use: -amount})
	}
	return nil
}

// UseAt returns counter id's use at t (0 for an unknown id).
func (c *Counters) UseAt(id CounterID, t time.Time) int64 {
	if !c.valid(id) {
		return 0
	}
	k := c.settled(id)
	return k.pts[k.at(t.Unix())].use
}

// Earliest returns the earliest start s ≥ from at which every use has
// room over [s, s+d): for each, the counter's use plus the amount stays
// within its bound. ok is false when no such time exists (an amount above
// a bound, or a use that is never released enough). It ignores nodes; the
// planner combines it with the node search. Errors wrap
// ErrInvalidRequest for an unknown counter.
func (c *Counters) Earliest(uses []Use, from time.Time, d time.Duration) (s time.Time, ok bool, err error) {
	if err := c.validUses(uses); err != nil {
		return time.Time{}, false, err
	}
	t, ok := c.earliest(uses, from.Unix(), ceilSecs(d))
	if !ok {
		return time.Time{}, false, nil
	}
	if t == from.Unix() {
		return from, true, nil
	}
	return time.Unix(t, 0).In(from.Location()), true, nil
}

// Clone returns an independent copy.
func (c *Counters) Clone() *Counters {
	if c == nil {
		return nil
	}
	out := &Counters{cs: make([]counterTL, len(c.cs))}
	for i := range c.cs {
		k := c.settled(CounterID(i))
		out.cs[i] = counterTL{capacity: k.capacity, pts: slices.Clone(k.pts)}
	}
	return out
}

func (c *Counters) valid(id CounterID) bool { return c != nil && id >= 0 && int(id) < len(c.cs) }

func (c *Counters) validUses(uses []Use) error {
	for _, u := range uses {
		switch {
		case !c.valid(u.Counter):
			return fmt.Errorf("%w: unknown counter %d", ErrInvalidRequest, u.Counter)
		case u.Amount < 0 || u.Amount > maxCounterValue || u.Limit < 0 || u.Limit > maxCounterValue:
			return fmt.Errorf("%w: counter %d amount %d, limit %d, want [0, %d]", ErrInvalidRequest, u.Counter, u.Amount, u.Limit, int64(maxCounterValue))
		}
	}
	return nil
}

// settled merges counter id's pending releases into its steps.
func (c *Counters) settled(id CounterID) *counterTL {
	k := &c.cs[id]
	if len(k.pend) == 0 {
		return k
	}
	slices.SortFunc(k.pend, func(x, y cpoint) int {
		switch {
		case x.t < y.t:
			return -1
		case x.t > y.t:
			return 1
		}
		return 0
	})
	// Merge: pts is sorted, pend sorted; deltas apply from their time on.
	out := make([]cpoint, 0, len(k.pts)+len(k.pend))
	var delta int64 // pend deltas applied so far
	var prev int64  // pts use in force
	i, j := 0, 0
	for i < len(k.pts) || j < len(k.pend) {
		var t int64
		switch {
		case j >= len(k.pend) || (i < len(k.pts) && k.pts[i].t <= k.pend[j].t):
			t = k.pts[i].t
		default:
			t = k.pend[j].t
		}
		for i < len(k.pts) && k.pts[i].t == t {
			prev = k.pts[i].use
			i++
		}
		for j < len(k.pend) && k.pend[j].t == t {
			delta += k.pend[j].use
			j++
		}
		out = append(out, cpoint{t: t, use: max(prev+delta, 0)})
	}
	k.pts, k.pend = out, k.pend[:0]
	return k
}

// at returns the index of the step holding at t.
func (k *counterTL) at(t int64) int {
	return sort.Search(len(k.pts), func(i int) bool { return k.pts[i].t > t }) - 1
}

// bound is the most a use may see in use with its amount added.
func (k *counterTL) bound(u Use) int64 {
	if u.Limit > 0 && u.Limit < k.capacity {
		return u.Limit
	}
	return k.capacity
}

// room returns the earliest s ≥ t at which the counter holds amount over
// [s, s+d) under bound b, or false when it never does.
func (k *counterTL) room(amount, b, t, d int64) (int64, bool) {
	if amount > b {
		return 0, false
	}
	s := t
	i := k.at(t)
	for ; i < len(k.pts); i++ {
		if i > 0 && k.pts[i].t >= s+d {
			return s, true
		}
		if k.pts[i].use+amount > b {
			if i+1 == len(k.pts) {
				return 0, false // never released
			}
			s = max(s, k.pts[i+1].t)
		}
	}
	return s, true
}

// earliest is Earliest in seconds: the least s ≥ t where every use has
// room over [s, s+d).
func (c *Counters) earliest(uses []Use, t, d int64) (int64, bool) {
	for {
		moved := false
		for _, u := range uses {
			if u.Amount == 0 {
				continue
			}
			k := c.settled(u.Counter)
			s, ok := k.room(u.Amount, k.bound(u), t, d)
			if !ok {
				return 0, false
			}
			if s > t {
				t, moved = s, true
			}
		}
		if !moved {
			return t, true
		}
	}
}

// blocking returns the index in uses of the first counter without room at
// t over [t, t+d), or -1.
func (c *Counters) blocking(uses []Use, t, d int64) int {
	for x, u := range uses {
		if u.Amount == 0 {
			continue
		}
		k := c.settled(u.Counter)
		if s, ok := k.room(u.Amount, k.bound(u), t, d); !ok || s > t {
			return x
		}
	}
	return -1
}

// book adds the uses' amounts over [s, e).
func (c *Counters) book(uses []Use, s, e int64) {
	for _, u := range uses {
		if u.Amount != 0 {
			c.settled(u.Counter).add(u.Amount, s, e)
		}
	}
}

// add adds a to the use over [s, e).
func (k *counterTL) add(a, s, e int64) {
	i := k.split(s)
	j := len(k.pts)
	if e < posInf {
		j = k.split(e)
	}
	for x := i; x < j; x++ {
		k.pts[x].use = min(k.pts[x].use+a, maxCounterValue)
	}
}

// split makes sure a step starts at t and returns its index.
func (k *counterTL) split(t int64) int {
	i := k.at(t)
	if k.pts[i].t == t {
		return i
	}
	k.pts = slices.Insert(k.pts, i+1, cpoint{t: t, use: k.pts[i].use})
	return i + 1
}

// SetCounters attaches the counter set the next plans book into (nil
// detaches it). Jobs with Uses need one; Clone copies it.
func (p *Profile) SetCounters(c *Counters) { p.ctr = c }

// Counters returns the attached counter set, nil for none.
func (p *Profile) Counters() *Counters { return p.ctr }

// counterFit moves a node fit res of job j later until every counter the
// job uses has room over its planned run: from the nodes' earliest fit t,
// the counters' earliest time s ≥ t; when s > t, the nodes are searched
// again from s, as for a job whose earliest start is s (which is what the
// shape cache sh learns from it); until both agree. It marks e when a
// counter set the outcome; FitNever with e.Reason ReasonCounter means a
// counter can never hold the job.
func (r *run) counterFit(j *Job, q *query, sh *shape, res result, e *Entry) (result, error) {
	p := r.p
	for res.st == FitFound {
		s, ok := p.ctr.earliest(j.Uses, res.t, q.d)
		if !ok {
			e.ByCounter, e.Reason = true, ReasonCounter
			e.Counter = j.Uses[max(p.ctr.blocking(j.Uses, res.t, q.d), 0)].Counter
			return result{st: FitNever}, nil
		}
		if s == res.t {
			return res, nil
		}
		e.ByCounter = true
		e.Counter = j.Uses[max(p.ctr.blocking(j.Uses, res.t, q.d), 0)].Counter
		if s > q.latest {
			return result{st: FitBeyondLatest}, nil
		}
		// The nodes found at res.t may still hold it from s, but they
		// are searched again: the plan's choice at s must not depend on
		// where the nodes first fitted (a reservation that moves to
		// other nodes from one plan to the next could displace a lower
		// one's).
		var err error
		if res, err = r.searchFrom(q, sh, s); err != nil {
			return res, err
		}
	}
	return res, nil
}

// searchFrom searches the nodes for q as for a job whose earliest start
// is e0, through the shape cache (unless the query bypasses it: a spread,
// or the kept reservation looked through).
func (r *run) searchFrom(q *query, sh *shape, e0 int64) (result, error) {
	q.t0, q.cands, q.upTo = e0, nil, 0
	cached := !q.hasSpread() && q.ghost == nil
	if cached {
		hint, fail := sh.lookup(q.n, q.d, e0, q.latest)
		if fail != FitFound {
			return result{st: fail}, nil
		}
		if hint.t > q.latest {
			return result{st: FitBeyondLatest}, nil
		}
		q.t0, q.cands, q.upTo = hint.t, hint.cands, hint.upTo
	}
	r.plan.Stats.Searches++
	res, err := r.p.search(q)
	if err != nil {
		return res, err
	}
	if cached {
		sh.insert(q, e0, res, r.gen)
	}
	return res, nil
}
