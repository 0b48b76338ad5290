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
//     which a Rebind moves; a per-user or per-account counter made after
//     the compile is looked up at each answer): StartCheck.Valid;
//   - the job's policy request (policyRequest: its subject, rebased after
//     a policy change, total TRES with licenses, per-node TRES, node
//     count, time limit, reservation): StartCheck.Matches compares it by
//     value once per backfill pass (job.bfCheckPass is the pass,
//     bfState.pass, that compared it last), so an update of the job, of
//     its QOS or association,
//     or a time limit changed by a pass is seen whatever changed it.
//
// It holds no usage: the counters' values (what running jobs hold, which
// changes with every start and end, and the TRES-minutes that move with
// now) are read each time an answer is asked. Its answers are those of
// CheckStart (checkLimits), CheckStart without usage (neverBlocker),
// CheckStartAll (limitHeld) and Slots (appendUses) for the same request
// (policy's TestStartCheckMatchesUncompiled). A StartCheck is never
// changed once made, so the journal's copy of a job (touch) may hold the
// one it had: restored, it is checked as any other. bfState.pass is never
// taken back (a rolled-back cycle's pass number is not reused), so a
// stamp can only say "compared in this pass" within the pass that wrote
// it.
//
// Only the backfill pass's walk and counters (backfillPass,
// attachCounters) use them (the main pass's held counters read a job's
// keys, when it needs them, through policy.SlotKeys: limithold.go); bfHetJob checks a heterogeneous job's components uncompiled
// (their counter uses are compiled as any job's), and Explain and the
// final checks before a start (checkPolicy) never read them.

// bfRequestCheck returns job j's compiled policy request, compiling it
// when the kept one does not hold; nil without a policy, with reuse off,
// or where the request cannot be compiled (the uncompiled calls then
// answer). The request is compared once per backfill pass (bfState.pass):
// nothing changes a pending job's request between the pass's walk and its
// counters.
func (s *Scheduler) bfRequestCheck(j *job) *policy.StartCheck {
	b := s.bf
	if s.pol == nil || b == nil || b.noReuse {
		return nil
	}
	sc := j.bfCheck
	if !sc.Valid(s.pol.p, s.pol.usage) || j.bfCheckPass != b.pass || b.pass == 0 {
		req := s.policyRequest(j)
		if !sc.Valid(s.pol.p, s.pol.usage) || !sc.Matches(&req) {
			sc = s.pol.p.CompileStart(&req, s.pol.usage)
			j.bfCheck = sc
		}
		j.bfCheckPass = b.pass
	}
	return sc
}

// bfCheckPolicy is checkPolicy(now, j) for the backfill pass, its limits
// read through the job's compiled request.
func (s *Scheduler) bfCheckPolicy(now time.Time, j *job) policy.Reason {
	sc := s.bfRequestCheck(j)
	if sc == nil {
		return s.checkPolicy(now, j)
	}
	if b, blocked := s.depBlocker(j); blocked {
		return b.Reason
	}
	if b, held := s.arrayBlocker(j); held {
		return b.Reason
	}
	return sc.Reason(now) // CheckStart's reason; ReasonNone when it is not blocked
}

// bfLimitHeld is limitHeld(now, j) for the backfill pass.
func (s *Scheduler) bfLimitHeld(now time.Time, j *job) bool {
	if s.pol == nil || !j.dep.IsZero() && s.depHolds(j) {
		return false
	}
	if _, held := s.arrayBlocker(j); held {
		return false
	}
	sc := s.bfRequestCheck(j)
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
	if sc := s.bfRequestCheck(j); sc != nil {
		return sc.NeverReason()
	}
	return s.neverBlocker(now, j).Reason
}

// Counter keys by number. A compiled request's slot keys
// (StartCheck.SlotKey) hold user and account names: looking them up in the
// pass's maps costs a string hash per slot per job and pass. So the keys
// are numbered once (bfKeys.no, a map the numbers of which stand while the
// policy does: a policy change starts a new numbering, keys.gen), each job
// keeps its slot keys' numbers (job.bfKeyNos, for its StartCheck and the
// numbering it was made in; never changed once made), and what the passes
// record per key is kept in slices by number, each entry stamped with the
// pass (bfKeys.ctrPass) that wrote it.
type bfKeys struct {
	pol *policy.Policy
	gen uint64
	no  map[policy.CounterKey]int32
	// idOf is the counter of the pass of each key, valid where idPass
	// is ctrPass (attachCounters' count).
	idOf    []int32
	idPass  []uint64
	ctrPass uint64
}

// keyNos is what a job keeps of its slot keys' numbers.
type keyNos struct {
	sc  *policy.StartCheck
	gen uint64
	no  []int32
}

// bfKeyNos returns the numbers of the slot keys of job j's compiled
// request sc (j.bfCheck).
func (s *Scheduler) bfKeyNos(j *job, sc *policy.StartCheck) []int32 {
	k := &s.bf.keys
	if k.pol != s.pol.p || k.no == nil || len(k.no) > 1<<20 {
		// A new numbering: every number, and what was recorded by one,
		// goes.
		k.pol, k.gen, k.no = s.pol.p, k.gen+1, map[policy.CounterKey]int32{}
		k.idOf, k.idPass = nil, nil
	}
	if c := &j.bfKeyNos; c.sc == sc && c.gen == k.gen {
		return c.no
	}
	no := make([]int32, sc.NumSlots())
	for x := range no {
		key, _, _ := sc.SlotKey(x)
		n, ok := k.no[key]
		if !ok {
			n = int32(len(k.no))
			k.no[key] = n
		}
		no[x] = n
	}
	j.bfKeyNos = keyNos{sc: sc, gen: k.gen, no: no}
	return no
}

// grow makes the slices by number cover every key numbered.
func (k *bfKeys) grow() {
	if n := len(k.no); len(k.idOf) < n {
		k.idOf = append(k.idOf, make([]int32, n-len(k.idOf))...)
		k.idPass = append(k.idPass, make([]uint64, n-len(k.idPass))...)
	}
}
