package policy

import (
	"slices"
	"time"
)

// StartCheck is CheckStart, CheckStartAll and Slots compiled for one
// request against one Usage: the limit entries that apply to the request,
// each with the counters it reads found once. A scheduler that checks the
// same pending job pass after pass keeps one per job and re-reads only the
// counters' values (what running jobs hold changes with every start and
// end), instead of resolving the entries and looking the per-user and
// per-account counters up by name each time.
//
// A StartCheck answers exactly as the uncompiled calls would for a request
// equal to the one it was compiled for (Matches), with the same Policy and
// Usage, while the usage's counters stay where they were (Valid: a Rebind
// makes it stale). A per-user or per-account counter that did not exist
// when it was compiled is looked up at each answer.
// A nil or zero StartCheck is not valid.
type StartCheck struct {
	p      *Policy
	u      *Usage
	layout uint64
	// req is the request, its vectors copied.
	req Request
	// pre holds the refusals before the limit entries (access,
	// RequiresReservation, UsageThreshold) that hold the request, in
	// check order, and preConcurrent whether every one is a concurrent
	// limit.
	pre []Blocker
	// items are the entries that apply in start mode, in check order.
	items []startItem
	// slots are the items Slots lists (concurrent limits), with their
	// keys and what the job adds.
	slots []startSlot
	// never is CheckStart's reason with no usage (nil Usage).
	never         Reason
	preConcurrent bool
}

// startItem is one entry of a StartCheck with the counter and group it
// reads.
type startItem struct {
	e          *entry
	c          *counter // nil: look it up (lookup) or none
	lookup     bool     // a per-user or per-account counter not made yet
	g          *group
	concurrent bool // the entry's Constraint is Concurrent
}

// startSlot is one slot of a StartCheck: item it's counter key and what
// the job adds (Slots' Key and Add).
type startSlot struct {
	it  int32
	add int64
	key CounterKey
}

// CompileStart compiles r for checks against u (see StartCheck), or
// returns nil where CheckStart would report that the request or usage
// belongs to another policy: such a request is checked uncompiled. The
// StartCheck is never changed after.
func (p *Policy) CompileStart(r *Request, u *Usage) *StartCheck {
	pl := r.Subject.pl
	if pl == nil || pl.owner != p || u == nil || u.p != p {
		return nil
	}
	sc := &StartCheck{p: p, u: u, layout: u.layout, req: *r}
	// At most one item per entry: no array grown beyond what it holds
	// (one StartCheck is kept per pending job).
	items := make([]startItem, 0, len(pl.entries))
	var slots []startSlot
	if n := countConcurrent(pl.entries); n > 0 {
		slots = make([]startSlot, 0, n)
	}
	var pre []Blocker
	if r.TRES != nil {
		sc.req.TRES = slices.Clone(r.TRES)
	}
	if r.PerNode != nil {
		sc.req.PerNode = slices.Clone(r.PerNode)
	}
	rr := &sc.req
	// check's refusals before the entries, start mode (their reasons and
	// constraints: Reason and HeldConcurrent read nothing else).
	if d := rr.Subject.denied; d != nil {
		pre = append(pre, *d)
	}
	if c := pl.needResv; c.Limit != "" && rr.Reservation == "" {
		pre = append(pre, Blocker{Constraint: c})
	}
	if pl.threshold > 0 && rr.HasFairShare && rr.FairShare < pl.threshold {
		q := &p.qos[pl.jobQOS]
		pre = append(pre, Blocker{Constraint: Constraint{Reason: ReasonQOSUsageThreshold, Limit: "UsageThreshold", Level: LevelJobQOS, Entity: q.Name}})
	}
	sc.pre, sc.preConcurrent = pre, true
	for _, b := range pre {
		sc.preConcurrent = sc.preConcurrent && b.Concurrent()
	}
	for i := range pl.entries {
		e := &pl.entries[i]
		if e.kind.submitOnly() {
			continue // never in start mode (eval)
		}
		t := e.tres
		if t >= 0 && e.kind <= kindMaxTRESPerAccount && e.kind != kindMaxTRESPerNode && rr.jobVal(t) == 0 {
			continue // eval's skip of a TRES the job asks none of
		}
		it := startItem{e: e, c: u.counterFor(e, rr), concurrent: p.constraint(e).Concurrent()}
		it.lookup = it.c == nil && (e.scope == scQOSUser || e.scope == scQOSAcct)
		if e.scope == scQOS || e.scope == scAssoc {
			it.g = u.groupFor(e)
		}
		if e.kind.concurrent() {
			// Slots' entries: the same filter on the TRES asked.
			sl := startSlot{it: int32(len(items)), add: 1}
			if e.tres >= 0 {
				sl.add = rr.jobVal(e.tres)
			}
			if sl.add != 0 {
				sl.key = rr.counterKey(e)
				slots = append(slots, sl)
			}
		}
		items = append(items, it)
	}
	sc.items, sc.slots = items, slots
	sc.never = p.check(time.Time{}, rr, nil, modeStart, nil).Reason
	return sc
}

// countConcurrent counts the entries of concurrent limits (Slots' kinds).
func countConcurrent(es []entry) int {
	n := 0
	for i := range es {
		if es[i].kind.concurrent() {
			n++
		}
	}
	return n
}

// Valid reports whether sc still answers for requests against u under p:
// it was compiled for them and u's counters have not moved since.
func (sc *StartCheck) Valid(p *Policy, u *Usage) bool {
	return sc != nil && sc.p != nil && sc.p == p && sc.u == u && sc.layout == u.layout
}

// Matches reports whether r is the request sc was compiled for (equal in
// every field CheckStart and Slots read).
func (sc *StartCheck) Matches(r *Request) bool {
	q := &sc.req
	return q.Subject == r.Subject && q.Nodes == r.Nodes && q.TimeLimit == r.TimeLimit && q.Tasks == r.Tasks &&
		q.Reservation == r.Reservation && q.HasFairShare == r.HasFairShare && q.FairShare == r.FairShare &&
		slices.Equal(q.TRES, r.TRES) && slices.Equal(q.PerNode, r.PerNode) &&
		(q.TRES == nil) == (r.TRES == nil) && (q.PerNode == nil) == (r.PerNode == nil)
}

// Reason is CheckStart(now, r, u).Reason for the compiled request r: the
// reason of the first limit that holds it now, ReasonNone when none does.
func (sc *StartCheck) Reason(now time.Time) Reason {
	if len(sc.pre) > 0 {
		return sc.pre[0].Reason
	}
	nowSec := now.Unix()
	for k := range sc.items {
		it := &sc.items[k]
		if _, _, bad := sc.p.evalRead(it.e, nowSec, &sc.req, sc.counter(it), it.g, false); bad {
			return it.e.reason
		}
	}
	return ReasonNone
}

// counter returns the counter item it reads (as counterFor gives it).
func (sc *StartCheck) counter(it *startItem) *counter {
	if it.lookup {
		return sc.u.counterFor(it.e, &sc.req)
	}
	return it.c
}

// NeverReason is CheckStart's reason for the compiled request with no
// usage (a nil Usage): what holds it whatever runs.
func (sc *StartCheck) NeverReason() Reason { return sc.never }

// HeldConcurrent reports what CheckStartAll(now, r, u) gives: whether any
// limit holds the compiled request now (any), and whether every one that
// does is a concurrent limit (all; true when none does).
func (sc *StartCheck) HeldConcurrent(now time.Time) (any, all bool) {
	all = true
	if len(sc.pre) > 0 {
		any, all = true, sc.preConcurrent
	}
	nowSec := now.Unix()
	for k := range sc.items {
		it := &sc.items[k]
		if _, _, bad := sc.p.evalRead(it.e, nowSec, &sc.req, sc.counter(it), it.g, false); bad {
			any = true
			if !it.concurrent {
				return true, false
			}
		}
	}
	return any, all
}

// NumSlots is the number of slots Slots lists for the compiled request.
func (sc *StartCheck) NumSlots() int { return len(sc.slots) }

// SlotKey returns slot k's counter key, limit and what the job adds (as
// Slots lists them, k in Slots' order), without reading the usage.
func (sc *StartCheck) SlotKey(k int) (key CounterKey, limit, add int64) {
	sl := &sc.slots[k]
	return sl.key, sc.items[sl.it].e.limit, sl.add
}

// Slot returns Slots' slot k for the compiled request, with the counter's
// use now.
func (sc *StartCheck) Slot(k int) Slot {
	sl := &sc.slots[k]
	it := &sc.items[sl.it]
	var used int64
	if c := sc.counter(it); c != nil {
		if it.e.tres >= 0 {
			used = c.tres[it.e.tres]
		} else {
			used = c.jobs
		}
	}
	return Slot{Key: sl.key, Limit: it.e.limit, Used: used, Add: sl.add, Blocker: sc.p.blocker(it.e, &sc.req, used, sl.add)}
}
