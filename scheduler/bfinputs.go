package scheduler

import (
	"time"

	"github.com/sluicehq/sluice/policy"
)

// What the backfill pass keeps on a pending job from pass to pass to
// build its inputs for less (bfState.noReuse turns it off, for tests that
// compare).
//
// job.bfCheck is the job's policy request compiled against the policy
// usage (policy.StartCheck): the limit entries that apply to it and the
// counters they read, found once. It depends on
//
//   - the policy (s.pol.p: a policy change makes a new one) and the usage
//     counters (s.pol.usage, and where its counters sit: Usage's layout,
//     which a Rebind or a new per-user or per-account counter moves):
//     StartCheck.Valid;
//   - the job's policy request (policyRequest: its subject, rebased after
//     a policy change, total TRES with licenses, per-node TRES, node
//     count, time limit, reservation): StartCheck.Matches compares it by
//     value every time, so an update of the job, of its QOS or
//     association, or a time limit changed by the pass itself is seen
//     whatever changed it.
//
// It holds no usage: the counters' values (what running jobs hold, which
// changes with every start and end, and the TRES-minutes that move with
// now) are read each time an answer is asked. Its answers are those of
// CheckStart (checkLimits), CheckStart without usage (neverBlocker),
// CheckStartAll (limitHeld) and Slots (appendUses) for the same request
// (policy's TestStartCheckMatchesUncompiled). A StartCheck is never
// changed once made, so the journal's copy of a job (touch) may hold the
// one it had: restored, it is checked as any other.

// bfRequestCheck returns job j's compiled policy request for req (j's
// policyRequest), compiling it when the kept one does not hold; nil
// without a policy, with reuse off, or where the request cannot be
// compiled (the uncompiled calls then answer).
func (s *Scheduler) bfRequestCheck(j *job, req *policy.Request) *policy.StartCheck {
	if s.pol == nil || s.bf == nil || s.bf.noReuse {
		return nil
	}
	if sc := j.bfCheck; sc.Valid(s.pol.p, s.pol.usage) && sc.Matches(req) {
		return sc
	}
	j.bfCheck = s.pol.p.CompileStart(req, s.pol.usage)
	return j.bfCheck
}

// bfCheckPolicy is checkPolicy(now, j) for the backfill pass.
func (s *Scheduler) bfCheckPolicy(now time.Time, j *job) policy.Reason {
	if b, blocked := s.depBlocker(j); blocked {
		return b.Reason
	}
	if b, held := s.arrayBlocker(j); held {
		return b.Reason
	}
	if s.pol == nil {
		return policy.ReasonNone
	}
	req := s.policyRequest(j)
	if sc := s.bfRequestCheck(j, &req); sc != nil {
		// CheckStart's reason; ReasonNone when it is not blocked.
		return sc.Reason(now)
	}
	if b := s.pol.p.CheckStart(now, &req, s.pol.usage); b.Blocked() {
		return b.Reason
	}
	return policy.ReasonNone
}

// bfLimitHeld is limitHeld(now, j) for the backfill pass.
func (s *Scheduler) bfLimitHeld(now time.Time, j *job) bool {
	if s.pol == nil || !j.dep.IsZero() && s.depHolds(j) {
		return false
	}
	if _, held := s.arrayBlocker(j); held {
		return false
	}
	req := s.policyRequest(j)
	sc := s.bfRequestCheck(j, &req)
	if sc == nil {
		return s.limitHeld(now, j)
	}
	if sc.NeverReason() != policy.ReasonNone {
		return false // never: see neverBlocker
	}
	any, all := sc.HeldConcurrent(now)
	return any && all
}

// bfNeverReason is neverBlocker(now, j).Reason for the backfill pass
// (ReasonNone: waiting can start it).
func (s *Scheduler) bfNeverReason(now time.Time, j *job) policy.Reason {
	if s.pol == nil {
		return policy.ReasonNone
	}
	req := s.policyRequest(j)
	if sc := s.bfRequestCheck(j, &req); sc != nil {
		return sc.NeverReason()
	}
	return s.neverBlocker(now, j).Reason
}
