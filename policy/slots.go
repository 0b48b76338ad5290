package policy

import "github.com/sluicehq/sluice/gres"

// CounterKey names one running counter that a concurrent limit reads: the
// running jobs or one TRES of a QOS (all its jobs, one user's, one
// account's) or of an association subtree. Equal keys are the same
// counter, whichever job's limit reads it; a planner keeps one time
// profile per key (see Slots and Usage.Holds). The zero value names no
// counter.
type CounterKey struct {
	scope counterScope
	ctr   int32
	name  string  // the user or account of a per-user or per-account counter
	tres  gres.ID // -1: the running job count
}

// IsZero reports whether k names no counter.
func (k CounterKey) IsZero() bool { return k.scope == scNone }

// Slot is one concurrent limit that a job's start counts against (Slurm's
// GrpTRES, GrpJobs, MaxTRESPerUser, MaxTRESPerAccount, MaxJobsPerUser,
// MaxJobsPerAccount, and an association's MaxJobs and GrpTRES/GrpJobs):
// while the job runs it adds Add to the counter Key, whose use must stay
// within Limit. Used is the counter's use now. Waiting helps such a
// limit: what running jobs hold comes back when they end.
type Slot struct {
	Key CounterKey
	// Limit is the bound this job sees (an association limit scaled by
	// the job QOS's LimitFactor may differ between jobs on one counter).
	Limit int64
	// Used is what the running jobs hold of the counter now.
	Used int64
	// Add is what the job adds: 1 for a job count, its TRES count
	// otherwise.
	Add int64
	// Blocker describes the limit with its numbers, as CheckStart would
	// report it.
	Blocker Blocker
}

// concurrent reports the limit kinds a running counter bounds.
func (k limitKind) concurrent() bool {
	switch k {
	case kindGrpTRES, kindMaxTRESPerUser, kindMaxTRESPerAccount,
		kindGrpJobs, kindMaxJobsPerUser, kindMaxJobsPerAccount, kindAssocMaxJobs:
		return true
	}
	return false
}

// Concurrent reports whether the constraint is a concurrent limit, one
// that Slots lists: what running jobs count against it is released when
// they end, so a job it holds starts once enough of them have.
func (c Constraint) Concurrent() bool {
	switch c.Limit {
	case "GrpTRES", "MaxTRESPerUser", "MaxTRESPerAccount", "GrpJobs", "MaxJobsPerUser", "MaxJobsPerAccount", "MaxJobs":
		return c.Level != LevelPartition && c.Level != LevelNone
	}
	return false
}

// Slots appends to dst every concurrent limit r's start counts against
// (see Slot), in hierarchy order, with the counters' use now from u (nil:
// none). Limits on a TRES the job does not ask for are left out, as
// CheckStart skips them. A Subject not resolved by p gives none.
func (p *Policy) Slots(r *Request, u *Usage, dst []Slot) []Slot {
	if u != nil && u.p != p {
		return dst
	}
	p.eachSlot(r, func(e *entry, k CounterKey, add int64) {
		var used int64
		if c := u.counterFor(e, r); c != nil {
			if e.tres >= 0 {
				used = c.tres[e.tres]
			} else {
				used = c.jobs
			}
		}
		dst = append(dst, Slot{Key: k, Limit: e.limit, Used: used, Add: add, Blocker: p.blocker(e, r, used, add)})
	})
	return dst
}

// SlotKeys appends to dst the keys of the slots Slots gives for r, in
// the same order, without reading any usage: what a caller that only
// asks which counters a start counts against needs.
func (p *Policy) SlotKeys(r *Request, dst []CounterKey) []CounterKey {
	p.eachSlot(r, func(_ *entry, k CounterKey, _ int64) { dst = append(dst, k) })
	return dst
}

// eachSlot calls f for every concurrent limit r's start counts against,
// in hierarchy order, with its counter's key and what the start adds.
func (p *Policy) eachSlot(r *Request, f func(e *entry, k CounterKey, add int64)) {
	pl := r.Subject.pl
	if pl == nil || pl.owner != p {
		return
	}
	for i := range pl.entries {
		e := &pl.entries[i]
		if !e.kind.concurrent() {
			continue
		}
		add := int64(1)
		if e.tres >= 0 {
			if add = r.jobVal(e.tres); add == 0 {
				continue
			}
		}
		f(e, r.counterKey(e), add)
	}
}

// counterKey is the key of the counter entry e reads for r.
func (r *Request) counterKey(e *entry) CounterKey {
	k := CounterKey{scope: e.scope, ctr: e.ctr, tres: e.tres}
	switch e.scope {
	case scQOSUser:
		k.name = r.Subject.ref.User
	case scQOSAcct:
		k.name = r.Subject.ref.Account
	}
	return k
}

// WithTRES returns the key of TRES t's count on the counter k names
// (a key as Usage.Held returns it, of the running job count).
func (k CounterKey) WithTRES(t gres.ID) CounterKey {
	k.tres = t
	return k
}

// Jobs returns the key of the running job count on the counter k names.
func (k CounterKey) Jobs() CounterKey {
	k.tres = -1
	return k
}

// TRES returns the TRES k counts, -1 for the running job count.
func (k CounterKey) TRES() gres.ID { return k.tres }

// Held appends to dst the counters running job id counts in — its QOS's
// group, user and account counters and its associations' — as keys of
// their running job count, and returns the job's allocation as the
// counters hold it: while it runs the job holds 1 of each key and
// alloc[t] of each key's WithTRES(t). ok is false for a job that is
// unknown or not running. The keys equal those of Slots: a planner
// releases what the job holds, at its expected end, from the counters it
// plans with. alloc must not be modified.
func (u *Usage) Held(id JobID, dst []CounterKey) (keys []CounterKey, alloc gres.Vector, ok bool) {
	j, found := u.jobs[id]
	if !found || !j.running {
		return dst, nil, false
	}
	for _, q := range j.sub.pl.qosOrder {
		dst = append(dst, CounterKey{scope: scQOS, ctr: q, tres: -1},
			CounterKey{scope: scQOSUser, ctr: q, name: j.sub.ref.User, tres: -1},
			CounterKey{scope: scQOSAcct, ctr: q, name: j.sub.ref.Account, tres: -1})
	}
	for _, a := range j.sub.pl.path {
		dst = append(dst, CounterKey{scope: scAssoc, ctr: a, tres: -1})
	}
	return dst, j.alloc, true
}
