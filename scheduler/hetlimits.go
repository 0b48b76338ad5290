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
//     start (hetLimit without the running jobs);
//   - a job whose components together do not fit what runs now waits with
//     that limit's reason (hetLimit with the running jobs), and is planned
//     as any limit-held job: each component's plan entry carries its own
//     uses, which the planner counts with those of the components before
//     it, so the co-start search finds the earliest time at which every
//     component fits the nodes and the counters hold them all, and the
//     reservation holds that room back from the jobs below it (each
//     component's until its own end);
//   - the start checks each component's limits with the components before
//     it counted, and the licenses of all (startHet).

// hetLimit returns the first concurrent limit or license pool that the
// pending components comps, in offset order, exceed together: each
// component's amount is counted with the components' before it, on top
// of what the running jobs hold (withRunning; sl.Used is then that) or
// of nothing (the job can then never start as it is). sum is what all
// the components add to that counter; ok is false when none is exceeded.
func (s *Scheduler) hetLimit(comps []*job, withRunning bool) (sl policy.Slot, sum int64, ok bool) {
	if len(comps) < 2 {
		return policy.Slot{}, 0, false
	}
	if len(s.lic.names) > 0 {
		var used []int64 // what the running jobs hold, walked for the first license asked
		sums := make([]int64, len(s.lic.names))
		hit := -1
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
				u := int64(0)
				if used != nil {
					u = used[k]
				}
				if hit < 0 && u+sums[k] > s.lic.total[k] {
					hit = k
					sl = s.licenseSlot(k)
					sl.Used = u
				}
			}
		}
		if hit >= 0 {
			return sl, sums[hit], true
		}
	}
	if s.pol == nil {
		return policy.Slot{}, 0, false
	}
	type keySum struct {
		key policy.CounterKey
		sum int64
	}
	var sums []keySum
	var slots []policy.Slot
	hit := -1
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
			used := int64(0)
			if withRunning {
				used = x.Used
			}
			if hit < 0 && used+sums[i].sum > x.Limit {
				hit, sl = i, x
				sl.Used = used
			}
		}
	}
	if hit >= 0 {
		return sl, sums[hit].sum, true
	}
	return policy.Slot{}, 0, false
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
	comps := s.hetPending(j)
	if sl, sum, ok := s.hetLimit(comps, false); ok {
		return "it can never start: " + hetLimitText(sl, sum, 0) + " even with no other job running"
	}
	return ""
}

// hetLicensesFree reports whether the licenses the pending components
// comps ask for are free now, all of them together.
func (s *Scheduler) hetLicensesFree(comps []*job) bool {
	if len(s.lic.names) == 0 {
		return true
	}
	var used []int64 // what the running jobs hold, walked for the first license asked
	for _, c := range comps {
		for _, l := range c.Spec.Licenses {
			if k, ok := s.lic.byName[l.Name]; ok {
				if used == nil {
					used = s.licenseUse()
				}
				if used[k] += l.Count; used[k] > s.lic.total[k] {
					return false
				}
			}
		}
	}
	return true
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
	comps := s.hetPending(j)
	sl, sum, ok := s.hetLimit(comps, true)
	if !ok {
		return Blocker{}, false
	}
	var d string
	if nsl, nsum, never := s.hetLimit(comps, false); never {
		d = hetLimitText(nsl, nsum, 0) + " even with no other job running: it can never start as it is"
	} else {
		d = hetLimitText(sl, sum, sl.Used)
	}
	return Blocker{Kind: BlockerLimit, Reason: sl.Blocker.Reason, Detail: d}, true
}
