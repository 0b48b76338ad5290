package scheduler

import (
	"fmt"

	"github.com/sluicehq/sluice/policy"
)

// Heterogeneous jobs and the concurrent limits. Each component is a job
// of its own for the limits, but the components start together, so the
// job starts only when its limits hold all of them at once: as Slurm
// checks a heterogeneous job's components in turn with the ones before
// counted, a counter (a QOS's or association's running jobs or TRES, a
// license pool) must have room for the sum of what the components add —
// two components of 4 GPUs each under MaxTRESPerUser gres/gpu=6 can never
// start, although either alone could. The main pass's checks are each
// component's own; the sum is checked by the backfill pass, which alone
// starts heterogeneous jobs:
//
//   - a job whose components together exceed a limit or a license pool
//     with nothing else running is left out of the plan, each component
//     pending with that limit's reason, and Explain says why it can never
//     start (hetLimits' never);
//   - a job whose components together do not fit what runs now waits with
//     that limit's reason (hetLimits' held), and is planned
//     as any limit-held job: each component's plan entry carries its own
//     uses, which the planner counts with those of the components before
//     it, so the co-start search finds the earliest time at which every
//     component fits the nodes and the counters hold them all, and the
//     reservation holds that room back from the jobs below it (each
//     component's until its own end);
//   - the start checks each component's limits with the components before
//     it counted, and the licenses of all (startHet).

// hetExcess is a concurrent limit or license pool that a heterogeneous
// job's pending components exceed together (see hetLimits): sl is its
// slot (sl.Used what is counted there besides the components), sum what
// all the components add to its counter; ok is false when none is
// exceeded.
type hetExcess struct {
	sl  policy.Slot
	sum int64
	ok  bool
}

// hetLimits returns the first concurrent limit or license pool that the
// pending components comps, in offset order, exceed together: each
// component's amount is counted with the components' before it, on top
// of what the running jobs hold (held, computed only when withRunning;
// sl.Used is then that) and on top of nothing (never: the job can then
// never start as it is). Both come from one walk of the components.
func (s *Scheduler) hetLimits(comps []*job, withRunning bool) (held, never hetExcess) {
	if len(comps) < 2 {
		return hetExcess{}, hetExcess{}
	}
	if len(s.lic.names) > 0 {
		held, never = s.hetLicenseExcess(comps, withRunning)
		if never.ok {
			// (With the running jobs counted, a pool exceeded with
			// nothing running is exceeded now too: held is set.)
			return held, never
		}
	}
	if s.pol == nil {
		return held, never
	}
	type keySum struct {
		key policy.CounterKey
		sum int64
	}
	var sums []keySum
	var slots []policy.Slot
	heldHit, neverHit := -1, -1
	var heldSl, neverSl policy.Slot
	for _, c := range comps {
		req := s.policyRequest(c)
		slots = s.pol.p.Slots(&req, s.pol.usage, slots[:0])
		for _, x := range slots {
			if x.Limit == 0 {
				continue // admits nothing: the component alone never starts
			}
			i := 0
			for i < len(sums) && sums[i].key != x.Key {
				i++
			}
			if i == len(sums) {
				sums = append(sums, keySum{key: x.Key})
			}
			sums[i].sum += x.Add
			if neverHit < 0 && sums[i].sum > x.Limit {
				neverHit, neverSl = i, x
				neverSl.Used = 0
			}
			if withRunning && heldHit < 0 && x.Used+sums[i].sum > x.Limit {
				heldHit, heldSl = i, x
			}
		}
	}
	if !held.ok && heldHit >= 0 {
		held = hetExcess{sl: heldSl, sum: sums[heldHit].sum, ok: true}
	}
	if !never.ok && neverHit >= 0 {
		never = hetExcess{sl: neverSl, sum: sums[neverHit].sum, ok: true}
	}
	return held, never
}

// hetLicenseExcess is hetLimits for the license pools alone.
func (s *Scheduler) hetLicenseExcess(comps []*job, withRunning bool) (held, never hetExcess) {
	var used []int64 // what the running jobs hold, walked for the first license asked
	sums := make([]int64, len(s.lic.names))
	heldHit, neverHit := -1, -1
	for _, c := range comps {
		for _, l := range c.Spec.Licenses {
			k, known := s.lic.byName[l.Name]
			if !known {
				continue
			}
			if withRunning && used == nil {
				used = s.licenseUse()
			}
			sums[k] += l.Count
			if neverHit < 0 && sums[k] > s.lic.total[k] {
				neverHit = k
			}
			if used != nil && heldHit < 0 && used[k]+sums[k] > s.lic.total[k] {
				heldHit = k
			}
		}
	}
	if heldHit >= 0 {
		held = hetExcess{sl: s.licenseSlot(heldHit), sum: sums[heldHit], ok: true}
		held.sl.Used = used[heldHit]
	}
	if neverHit >= 0 {
		never = hetExcess{sl: s.licenseSlot(neverHit), sum: sums[neverHit], ok: true}
	}
	return held, never
}

// hetLimitText says how a heterogeneous job's components exceed slot sl
// together (sum: what they add to its counter; used: what is in use
// there besides, 0 for none).
func hetLimitText(sl policy.Slot, sum, used int64) string {
	ask := fmt.Sprintf("count as %d jobs", sum)
	if t := sl.Blocker.Constraint.TRES; t != "" {
		ask = fmt.Sprintf("ask %s=%d", t, sum)
	}
	if used > 0 {
		ask += fmt.Sprintf(" with %d in use", used)
	}
	return "its heterogeneous job's components together " + ask + ", above " + limitName(sl)
}

// hetNeverNote is the note of a pending component whose job's components
// together exceed a limit even with no other job running; "" when they
// do not.
func (s *Scheduler) hetNeverNote(j *job) string {
	if j.HetJobID == 0 {
		return ""
	}
	if _, never := s.hetLimits(s.hetPending(j), false); never.ok {
		return "it can never start: " + hetLimitText(never.sl, never.sum, 0) + " even with no other job running"
	}
	return ""
}

// hetLicensesFree reports whether the licenses the pending components
// comps ask for are free now, all of them together.
func (s *Scheduler) hetLicensesFree(comps []*job) bool {
	if len(s.lic.names) == 0 {
		return true
	}
	held, _ := s.hetLicenseExcess(comps, true)
	return !held.ok
}

// hetLimitHeld gives the pending components comps of a heterogeneous
// job whose components together exceed limit or license pool sl with
// what runs now that limit's reason (Slurm's QOS*, Assoc* or Licenses),
// for the components that wait on nothing of their own.
func (s *Scheduler) hetLimitHeld(comps []*job, sl policy.Slot) {
	for _, c := range comps {
		if c.Reason == policy.ReasonResources || c.Reason == policy.ReasonPriority || c.Reason == policy.ReasonNone {
			s.setReason(c, sl.Blocker.Reason)
		}
	}
}

// hetBlocker is the explanation's blocker of pending component j when its
// heterogeneous job's pending components together exceed a limit or a
// license pool with what runs now (or even with nothing running); false
// when they do not.
func (s *Scheduler) hetBlocker(j *job) (Blocker, bool) {
	held, never := s.hetLimits(s.hetPending(j), true)
	if !held.ok {
		return Blocker{}, false
	}
	var d string
	if never.ok {
		d = hetLimitText(never.sl, never.sum, 0) + " even with no other job running: it can never start as it is"
	} else {
		d = hetLimitText(held.sl, held.sum, held.sl.Used)
	}
	return Blocker{Kind: BlockerLimit, Reason: held.sl.Blocker.Reason, Detail: d}, true
}
