package scheduler

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

// Limit-aware planning. The backfill plan carries, beside the nodes, the
// running counters that the policy's concurrent limits read (jobs and TRES
// per user, account, QOS and association: policy.Slots) as
// backfill.Counters: each counter holds its use now, less what each
// running job holds of it at the job's deadline, plus what the plan
// starts and reserves. Every planned job names the counters its start
// counts against, so a job held by such a limit is planned at the
// earliest time the limit and the nodes allow, and no lower job takes the
// room a reservation needs. A job that no amount of waiting can start (a
// request above a per-job limit, or above a concurrent limit with nothing
// else running, a partition MaxTime it exceeds) is left out of the plan:
// it gets no expected start, and Explain says why.

// bfCounters is the counter set of one backfill pass, rebuilt every pass
// (its maps and slices reused).
type bfCounters struct {
	set *backfill.Counters
	ids map[policy.CounterKey]backfill.CounterID
	// slot describes each counter (by CounterID): the limit as the first
	// job that named it saw it.
	slot  []policy.Slot
	slots []policy.Slot
	held  []policy.CounterKey
	// keys numbers the job-count keys (policy.CounterKey.Jobs) seen since
	// the policy generation keysGen, and want lists, per such key, the
	// counters of the pass on it (the job count itself or a TRES): what
	// a running job's hold releases.
	keys    map[policy.CounterKey]int32
	keysGen uint64
	want    [][]wantedCounter
	uses    []backfill.Use
	// waits holds, for each job whose planned start a counter set (or
	// that a counter keeps beyond the window), that counter.
	waits map[JobID]backfill.CounterID
}

// limitHeld reports whether pending job j waits only on concurrent limits
// (every limit that holds it now is one that running jobs release): the
// plan then considers it. A job held by anything else — a dependency, an
// array throttle, a limit on accrued usage, access — or that can never
// start is not.
func (s *Scheduler) limitHeld(now time.Time, j *job) bool {
	if s.pol == nil || !j.dep.IsZero() && s.depHolds(j) {
		return false
	}
	if _, held := s.arrayBlocker(j); held {
		return false
	}
	req := s.policyRequest(j)
	if s.pol.p.CheckStart(now, &req, nil).Blocked() {
		return false // never: see neverBlocker
	}
	bs := s.pol.p.CheckStartAll(now, &req, s.pol.usage, nil)
	for _, b := range bs {
		if !b.Concurrent() {
			return false
		}
	}
	return len(bs) > 0
}

// depHolds reports whether j's dependency is unmet.
func (s *Scheduler) depHolds(j *job) bool {
	_, waiting := s.depBlocker(j)
	return waiting
}

// neverBlocker returns the limit that keeps pending job j from ever
// starting: one that holds it with no other job running (a request above
// a per-job or per-user limit, a partition MaxTime it exceeds, an access
// rule); the zero Blocker when waiting can start it.
func (s *Scheduler) neverBlocker(now time.Time, j *job) policy.Blocker {
	if s.pol == nil {
		return policy.Blocker{}
	}
	req := s.policyRequest(j)
	return s.pol.p.CheckStart(now, &req, nil)
}

// attachCounters builds the pass's counter set for the planned jobs
// (jobs[x] is pjobs[x]): the counters their limits read, each with its
// use now and the running jobs' holds released at their deadlines, and
// sets every job's Uses, with what the pending jobs of advance
// reservations may hold in their windows (holdReservationJobs). It
// returns nil when no job counts against a limit.
func (s *Scheduler) attachCounters(now time.Time, jobs []backfill.Job, pjobs []*job) (*backfill.Counters, error) {
	b := &s.bf.ctr
	b.set = nil
	if b.ids == nil {
		b.ids = map[policy.CounterKey]backfill.CounterID{}
		b.waits = map[JobID]backfill.CounterID{}
	}
	clear(b.waits)
	if s.pol == nil && len(s.lic.names) == 0 {
		return nil, nil
	}
	clear(b.ids)
	s.bf.keys.ctrPass++ // the counters by key number go with b.ids
	for k := range b.want {
		b.want[k] = b.want[k][:0]
	}
	gen := uint64(0)
	if s.pol != nil {
		gen = s.pol.gen
	}
	if b.keys == nil || b.keysGen != gen {
		b.keys, b.keysGen = map[policy.CounterKey]int32{}, gen
	}
	b.slot, b.uses = b.slot[:0], b.uses[:0]
	set := backfill.NewCounters()
	licIDs, err := s.licenseCounters(set)
	if err != nil {
		return nil, err
	}
	type span struct{ x, comp, from, to int }
	spans := make([]span, 0, len(pjobs))
	for x, j := range pjobs {
		if len(jobs[x].Components) > 0 {
			// A heterogeneous job: each component's own, which the
			// planner counts together (hetlimits.go).
			for k, c := range s.hetPending(j) {
				from := len(b.uses)
				if err := s.appendUses(set, licIDs, c); err != nil {
					return nil, err
				}
				spans = append(spans, span{x, k, from, len(b.uses)})
			}
			continue
		}
		from := len(b.uses)
		if err := s.appendUses(set, licIDs, j); err != nil {
			return nil, err
		}
		spans = append(spans, span{x, -1, from, len(b.uses)})
	}
	if err := s.holdReservationJobs(now, set); err != nil {
		return nil, err
	}
	if set.Len() == 0 {
		return nil, nil
	}
	for _, sp := range spans {
		switch {
		case sp.to == sp.from:
		case sp.comp < 0:
			jobs[sp.x].Uses = b.uses[sp.from:sp.to:sp.to]
		default:
			jobs[sp.x].Components[sp.comp].Uses = b.uses[sp.from:sp.to:sp.to]
		}
	}
	s.running.Ascend(func(r *job) bool {
		for _, l := range r.Spec.Licenses {
			if k, ok := s.lic.byName[l.Name]; ok {
				if err = set.Release(licIDs[k], l.Count, r.deadline); err != nil {
					return false
				}
			}
		}
		if s.pol == nil {
			return true
		}
		h := s.heldOf(r)
		for _, k := range h.keys {
			if int(k) >= len(b.want) {
				continue // a counter no planned job reads
			}
			for _, w := range b.want[k] {
				n := int64(1)
				if w.tres >= 0 {
					n = h.alloc.At(w.tres)
				}
				if err = set.Release(w.id, n, r.deadline); err != nil {
					return false
				}
			}
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("scheduler: backfill counters: %w", err)
	}
	b.set = set
	return set, nil
}

// appendUses appends to the pass's uses what pending job j takes of the
// counters of set while it runs: its licenses (licIDs: the license
// counters) and every concurrent limit its start counts against.
func (s *Scheduler) appendUses(set *backfill.Counters, licIDs []backfill.CounterID, j *job) error {
	b := &s.bf.ctr
	for _, l := range j.Spec.Licenses {
		if k, ok := s.lic.byName[l.Name]; ok {
			b.uses = append(b.uses, backfill.Use{Counter: licIDs[k], Amount: l.Count})
		}
	}
	if s.pol == nil {
		return nil
	}
	if sc := s.bfRequestCheck(j); sc != nil {
		// The compiled request's slots, by key number (bfinputs.go): the
		// pass's counter of a key is looked up in b.ids, and the usage
		// read (Slot), only at the key's first job of the pass, which
		// adds it with its use now (counter) where no job before named
		// it.
		no := s.bfKeyNos(j, sc)
		k := &s.bf.keys
		k.grow()
		for x, n := range no {
			key, limit, add := sc.SlotKey(x)
			var id backfill.CounterID
			if k.idPass[n] == k.ctrPass {
				id = backfill.CounterID(k.idOf[n])
			} else {
				var ok bool
				if id, ok = b.ids[key]; !ok {
					var err error
					if id, err = b.counter(set, sc.Slot(x)); err != nil {
						return err
					}
				}
				k.idOf[n], k.idPass[n] = int32(id), k.ctrPass
			}
			b.uses = append(b.uses, slotUse(id, policy.Slot{Limit: limit, Add: add}))
		}
		return nil
	}
	req := s.policyRequest(j)
	b.slots = s.pol.p.Slots(&req, s.pol.usage, b.slots[:0])
	for _, sl := range b.slots {
		id, err := b.counter(set, sl)
		if err != nil {
			return err
		}
		b.uses = append(b.uses, slotUse(id, sl))
	}
	return nil
}

// slotUse is the use of counter id by a job whose start counts against
// slot sl. A zero limit admits nothing (such jobs are never planned, see
// neverBlocker): its amount is above the bound.
func slotUse(id backfill.CounterID, sl policy.Slot) backfill.Use {
	if sl.Limit == 0 {
		return backfill.Use{Counter: id, Amount: backfill.MaxCounter, Limit: 1}
	}
	return backfill.Use{Counter: id, Amount: sl.Add, Limit: sl.Limit}
}

// counter returns the pass's counter for slot sl, added (with its use
// now) the first time a job names it.
func (b *bfCounters) counter(set *backfill.Counters, sl policy.Slot) (backfill.CounterID, error) {
	id, ok := b.ids[sl.Key]
	if ok {
		return id, nil
	}
	// Capacity unbounded: each use carries the limit its job sees
	// (LimitFactor may scale it per job).
	id, err := set.Add(backfill.MaxCounter, sl.Used)
	if err != nil {
		return 0, fmt.Errorf("scheduler: backfill counters: %w", err)
	}
	b.ids[sl.Key] = id
	b.slot = append(b.slot, sl)
	k := b.keyIndex(sl.Key.Jobs())
	if int(k) >= len(b.want) {
		b.want = append(b.want, make([][]wantedCounter, int(k)+1-len(b.want))...)
	}
	b.want[k] = append(b.want[k], wantedCounter{tres: sl.Key.TRES(), id: id})
	return id, nil
}

// keyIndex numbers job-count key k.
func (b *bfCounters) keyIndex(k policy.CounterKey) int32 {
	x, ok := b.keys[k]
	if !ok {
		x = int32(len(b.keys))
		b.keys[k] = x
	}
	return x
}

// heldCache is what a running job holds of the limit counters: the
// numbers (bfCounters.keys) of the job-count keys it counts in and its
// allocation as the counters hold it, for the run that the policy usage
// counted with total, in policy generation gen.
type heldCache struct {
	keys  []int32
	alloc gres.Vector
	total gres.Vector
	gen   uint64
}

// heldOf returns running job j's holds, computed once per run (and again
// after a policy change).
func (s *Scheduler) heldOf(j *job) *heldCache {
	h := &j.held
	b := &s.bf.ctr
	if h.gen == b.keysGen && len(h.total) > 0 && len(j.usageTotal) > 0 && &h.total[0] == &j.usageTotal[0] {
		return h
	}
	var ok bool
	var alloc gres.Vector
	if b.held, alloc, ok = s.pol.usage.Held(policy.JobID(j.ID), b.held[:0]); !ok {
		*h = heldCache{}
		return h
	}
	h.keys, h.alloc, h.total, h.gen = h.keys[:0], alloc, j.usageTotal, b.keysGen
	for _, k := range b.held {
		h.keys = append(h.keys, b.keyIndex(k))
	}
	return h
}

// licenseCounters adds one counter per license to set (capacity the
// cluster's count, in use what the running jobs hold), in license order,
// each described in b.slot.
func (s *Scheduler) licenseCounters(set *backfill.Counters) ([]backfill.CounterID, error) {
	if len(s.lic.names) == 0 {
		return nil, nil
	}
	b := &s.bf.ctr
	used := s.licenseUse()
	ids := make([]backfill.CounterID, len(used))
	for k := range used {
		id, err := set.Add(s.lic.total[k], used[k])
		if err != nil {
			return nil, fmt.Errorf("scheduler: backfill counters: license %q: %w", s.lic.names[k], err)
		}
		ids[k] = id
		b.slot = append(b.slot, s.licenseSlot(k))
	}
	return ids, nil
}

// wantedCounter is a counter of the pass on a job-count key: its TRES
// (-1: the job count) and ID.
type wantedCounter struct {
	tres gres.ID
	id   backfill.CounterID
}

// noteCounterWaits records the planned jobs whose outcome a counter set.
func (s *Scheduler) noteCounterWaits(plan *backfill.Plan, pjobs []*job) {
	b := &s.bf.ctr
	if b.set == nil {
		return
	}
	for k := range plan.Entries {
		e := &plan.Entries[k]
		if !e.ByCounter {
			continue
		}
		b.waits[pjobs[k].ID] = e.Counter
		for _, c := range e.Components { // a heterogeneous job: every component
			b.waits[JobID(c.ID)] = e.Counter
		}
	}
}

// counterWait describes the limit that set job j's planned start (or
// keeps it from one) in the last plan; ok is false when none did.
func (s *Scheduler) counterWait(j *job) (policy.Slot, bool) {
	if s.bf == nil {
		return policy.Slot{}, false
	}
	b := &s.bf.ctr
	id, ok := b.waits[j.ID]
	if !ok || int(id) >= len(b.slot) {
		return policy.Slot{}, false
	}
	return b.slot[id], true
}

// limitNote is the estimate note of a job the last plan did not consider,
// or considered and found a limit in the way of: why it has no expected
// start, or which limit its expected start waits on.
func (s *Scheduler) limitNote(now time.Time, j *job) string {
	if b := s.neverBlocker(now, j); b.Blocked() {
		return "it can never start: " + b.String() + " even with no other job running"
	}
	if note := s.hetNeverNote(j); note != "" {
		return note
	}
	if sl, ok := s.counterWait(j); ok {
		return "its start waits on " + limitName(sl) + ", which the plan carries over time"
	}
	return "the plan does not consider it: it waits on " + j.Reason.String()
}

// limitName names a slot's limit: "MaxTRESPerUser gres/gpu=8 (user alice)".
func limitName(sl policy.Slot) string {
	c := sl.Blocker.Constraint
	s := c.Limit
	if c.TRES != "" {
		s += " " + c.TRES
	}
	s += fmt.Sprintf("=%d", c.Value)
	if h := sl.Blocker.Holder; h != "" {
		s += " (" + h + ")"
	}
	return s
}

// noteLimitWait adds to an estimate from the plan the limit its start
// waits on, when a counter set it.
func (s *Scheduler) noteLimitWait(j *job, est *Estimate) {
	if est.Source != EstimateEstimated && est.Source != EstimateReserved {
		return
	}
	if sl, ok := s.counterWait(j); ok {
		est.Limit = limitName(sl)
	}
}

// holdForLimit makes a job that waits only on concurrent limits hold back
// its partition in the main pass, as a job waiting on Resources does,
// when backfill plans it: the later jobs are then started by the backfill
// pass only where they delay neither its planned start nor the room its
// limits need then. Without it a lower-priority job started by the main
// pass could take that room, and the expected start would be no bound.
func (s *Scheduler) holdForLimit(now time.Time, j *job, blocked *passBlocks, magnetic bool) {
	if s.bf == nil || magnetic || j.Spec.Reservation != "" || !s.limitHeld(now, j) {
		return
	}
	blocked.parts[j.part] = true
	s.avail.Subtract(s.parts[j.part].nodes)
}
