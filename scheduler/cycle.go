package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/feature"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// Cycle is everything one call of Schedule decided, as data: the caller
// launches the starts, kills what ended, and can show every pending job's
// reason without asking again.
type Cycle struct {
	// Now is the time the cycle ran at.
	Now time.Time
	// Ended lists jobs the cycle ended itself (time limit reached), in
	// deadline order. The caller must kill them.
	Ended []Ended
	// Starts lists jobs started, in the order they were decided. The
	// scheduler already counts them as running; a launch failure must come
	// back as Requeue or Finish.
	Starts []Start
	// Pending lists every job still pending after the cycle, in queue
	// order, with the reason it waits.
	Pending []Pending
	// Decisions holds the audit record of every start, timeout and
	// preemption of the cycle (see AuditRecords), and of the requeues made
	// by events since the last cycle (Requeue, DownNode): what to persist
	// to reconstruct later why a job got — or lost — its resources.
	Decisions []Decision
	// Resumed lists suspended jobs the cycle resumed (the caller sends
	// them SIGCONT); they hold CPUs again (see Job.Alloc).
	Resumed []JobID
	// Preemptions lists the running jobs preempted for pending ones. A
	// victim with a KillAt after Now is to be signalled now and is ended
	// by the first cycle at or after KillAt (it then appears in Ended).
	Preemptions []Preemption
	// With power saving (Config.Power): PowerUp lists the nodes the
	// cycle powers up for pending jobs (the caller runs its resume
	// program and reports each with NodePoweredUp), PowerDown the idle
	// nodes it powers down (the caller runs its suspend program), and
	// ResumeTimedOut the booting nodes whose ResumeTimeout passed, now
	// DOWN. See power.go.
	PowerUp        []PowerUp `json:",omitempty"`
	PowerDown      []string  `json:",omitempty"`
	ResumeTimedOut []string  `json:",omitempty"`
	// Reboots lists the nodes the cycle reboots into changeable features
	// for pending jobs (the caller runs its RebootProgram and reports
	// each with NodeRebooted), RebootTimedOut the rebooting nodes whose
	// BootTime passed, now DOWN. See reboot.go.
	Reboots        []Reboot `json:",omitempty"`
	RebootTimedOut []string `json:",omitempty"`
	// NextWake is the next instant after Now at which, absent events, a
	// Schedule call could change a decision (Scheduler.NextWake after the
	// cycle); zero when only events can; Now itself when the cycle
	// requeued preemption victims, which the next call judges. A control loop that calls
	// Schedule after every event and at NextWake misses nothing, and
	// calling it more often changes nothing (see "Periodic work" in the
	// package documentation).
	NextWake time.Time `json:",omitzero"`
}

// Start is the decision to run a job on concrete resources.
type Start struct {
	Job   JobID
	Alloc Allocation
	// TimeLimit is the limit the job runs with: its own, or less when it
	// started with --time-min in a backfill gap. The job is ended when it
	// is reached (or at its reservation's end, if sooner).
	TimeLimit time.Duration
	// Backfill is set when the backfill pass started the job ahead of
	// higher-priority jobs that could not start, without delaying them.
	Backfill bool
}

// Ended is a job the cycle ended, with its final state and reason.
type Ended struct {
	Job    JobID
	State  JobState
	Reason policy.Reason
}

// Pending is a job left waiting, with why.
type Pending struct {
	Job      JobID
	Reason   policy.Reason
	Priority uint32
	// ExpectedStart is when the backfill plan expects the job to start
	// (squeue --start); zero without backfill or when the plan has no
	// estimate (beyond the window, not tested). With
	// Config.EstimateInterval it may be an earlier cycle's estimate, still
	// standing (Job.EstimatedAt says which).
	ExpectedStart time.Time
}

// shape is the class of jobs with the same partition and per-node
// request: they share the set of nodes able to hold them (ignoring what is
// in use), computed once.
type shape struct {
	capable topology.NodeSet
	// allowed caches capable ∩ usable nodes, and usable its size, for the
	// cycle numbered stamp-1 (see allowedNodes; zero: not computed).
	allowed topology.NodeSet
	usable  int
	stamp   uint64
	// part, perNode and exclusive are what the shape was made for, so
	// that a node added or changed at run time can be judged (see
	// nodeadmin.go).
	part      int
	perNode   gres.Vector
	exclusive bool
	// userAllowed caches allowed without the nodes running --exclusive=user
	// jobs for the backfill plan, valid while userStamp is the cycle's
	// stamp and the list of such nodes generation userGen (exclusive.go).
	userAllowed        topology.NodeSet
	userStamp, userGen uint64
	// excluded (ascending) and cons are the job's excluded nodes and
	// constraint, whose per-node part (see where.go) the capable nodes
	// meet.
	excluded []int
	cons     feature.Constraint
	// reboot holds the capable nodes whose features meet cons only once
	// rebooted into its changeable features (reboot.go); empty (length
	// 0) when none.
	reboot topology.NodeSet
}

func shapeKey(part int, v gres.Vector, exclusive bool, excluded []int, cons feature.Constraint) string {
	return string(appendShapeKey(nil, part, v, exclusive, excluded, cons))
}

// appendShapeKey appends shapeKey's key to b, with the excluded nodes
// (JobSpec.Exclude, ascending indices) and the constraint after it.
func appendShapeKey(b []byte, part int, v gres.Vector, exclusive bool, excluded []int, cons feature.Constraint) []byte {
	b = strconv.AppendInt(b, int64(part), 10)
	if exclusive {
		b = append(b, 'x')
	}
	for i, x := range v {
		if x != 0 && gres.ID(i) != gres.Node {
			b = append(b, ' ')
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, '=')
			b = strconv.AppendInt(b, x, 10)
		}
	}
	for _, i := range excluded {
		b = append(b, " -"...)
		b = strconv.AppendInt(b, int64(i), 10)
	}
	if !cons.IsZero() {
		b = append(b, " c="...)
		b = append(b, cons.String()...)
	}
	return b
}

// shapeOf returns the (cached) shape of a job's request in partition part,
// kept off the excluded nodes (ascending indices).
func (s *Scheduler) shapeOf(part int, perNode gres.Vector, exclusive bool, excluded []int, cons feature.Constraint) *shape {
	// The key is built in reused scratch; looking it up copies nothing.
	s.keyBuf = appendShapeKey(s.keyBuf[:0], part, perNode, exclusive, excluded, cons)
	if sh, ok := s.shapes[string(s.keyBuf)]; ok {
		return sh
	}
	key := string(s.keyBuf)
	p := &s.parts[part]
	sh := &shape{capable: topology.NewNodeSet(len(s.nodes)), part: part, perNode: perNode.Clone(), exclusive: exclusive,
		excluded: slices.Clone(excluded), cons: cons}
	for i := p.nodes.Next(0); i >= 0; i = p.nodes.Next(i + 1) {
		s.judgeNode(sh, i, true)
	}
	s.shapes[key] = sh
	return sh
}

// holds reports whether node i (in the shape's partition) could ever
// hold a job of the shape: its capacity holds the request, it is not
// excluded, and its features meet the constraint's per-node part.
func (sh *shape) holds(i int, n *node) bool {
	if !sh.perNode.Fits(n.capacity) {
		return false
	}
	if _, x := slices.BinarySearch(sh.excluded, i); x {
		return false
	}
	return sh.cons.Match(n.cfg.Features)
}

// allowedNodes returns the nodes a job of this shape may use this cycle:
// capable and up, computed once per cycle. The set is shared by all jobs
// of the shape and must not be modified.
func (s *Scheduler) allowedNodes(sh *shape) topology.NodeSet {
	if sh.stamp != s.cycleNo+1 {
		if sh.allowed.Len() != len(s.nodes) {
			sh.allowed = topology.NewNodeSet(len(s.nodes))
		}
		sh.allowed.CopyFrom(sh.capable)
		sh.allowed.IntersectWith(s.ableNodes())
		sh.usable = sh.allowed.Count()
		sh.stamp = s.cycleNo + 1
	}
	return sh.allowed
}

// Schedule runs one scheduling cycle at now: it ends jobs past their time
// limit, then walks the pending queue in order (with preemption, a job
// that may preempt another before it; reservation jobs; partition tier,
// priority, submit time, job ID) and starts every job that fits,
// first-fit, on nodes that are up, in its partition, and not held back by
// a higher-priority job. As in Slurm's main scheduler, a job that cannot
// start for lack of resources removes its partition's nodes from the rest
// of the cycle, so nothing behind it overtakes it (a job in a reservation
// removes the reservation's nodes, and, in a FLEX reservation, the
// partition's nodes it may use outside it too); jobs pending for their own
// constraints (begin time, dependencies, partition limits) block no one.
// A job that a MAGNETIC reservation admits without naming it is first
// tried inside the reservation in the reservation jobs' turn, exempt from
// its partition's block, and then, outside, in its own place.
//
// Schedule is all-or-nothing: when it returns an error (a fair-share
// source or the backfill planner failing), the scheduler is exactly as it
// was before the call — no job started, ended or changed, no counter
// moved — and the returned Cycle is empty. The cycle's changes are
// journaled as it makes them and taken back on error (see journal).
func (s *Scheduler) Schedule(now time.Time) (Cycle, error) {
	r, err := s.Apply(now, ScheduleEvent{})
	if err != nil {
		return Cycle{}, err
	}
	return *r.Cycle, nil
}

// runCycle is the ScheduleEvent: one cycle, journaled and taken back on
// error (see Schedule).
func (s *Scheduler) runCycle(now time.Time, fs *FairShareTree) (Cycle, error) {
	if err := s.tick(now); err != nil {
		return Cycle{}, err
	}
	s.begin()
	cyc, err := s.schedule(now, fs)
	if err == nil {
		cyc, err = s.settle(now, cyc)
	}
	if err == nil && s.cycleFault != nil {
		err = s.cycleFault()
	}
	if err != nil {
		s.rollback()
		return Cycle{}, err
	}
	s.commit()
	// Forgetting old finished jobs takes nothing back: done once the
	// cycle stands.
	s.purge(now)
	return cyc, nil
}

// schedule is Schedule's cycle, journaled by its caller.
func (s *Scheduler) schedule(now time.Time, fs *FairShareTree) (Cycle, error) {
	if err := s.refreshPriorities(now, fs); err != nil {
		return Cycle{}, err
	}
	s.last = now
	s.cycleNo++
	cyc := Cycle{Now: now}
	s.endExpired(now, &cyc)
	s.regroupHets(now, &cyc)
	s.resumeSuspended(now, &cyc)
	s.powerBegin(now, &cyc)
	s.bootBegin(now, &cyc)

	s.avail.CopyFrom(s.usable)
	blocked := &passBlocks{parts: make([]bool, len(s.parts)), holders: s.holders[:0]}
	// Jobs that may run in a MAGNETIC reservation without naming it take
	// a first turn there, ordered as reservation jobs (Slurm queues them
	// once per such reservation, ahead of the plain jobs).
	mags := s.magneticJobs()
	// started (the jobs the pass starts, moved to the running index after
	// it) and s.pendJobs (the job of each cyc.Pending entry, kept in step
	// with it until the audit records are made) are scratch, emptied
	// before Schedule returns.
	started := s.started[:0]
	pend := s.pendJobs[:0]
	cyc.Pending = make([]Pending, 0, s.pending.Len())
	wake := s.newWakeSet(now) // the pending jobs' wakes (see NextWake)
	s.inPass = true
	s.fits.begin(true) // placement summaries for this pass (placesum.go)
	s.pending.Ascend(func(j *job) bool {
		for len(mags) > 0 && queueKeyLess(mags[0], true, j, j.Spec.Reservation != "") {
			m := mags[0]
			mags = mags[1:]
			if s.evaluate(now, m, blocked, &cyc, true) == policy.ReasonNone {
				started = append(started, m)
				cyc.Starts = append(cyc.Starts, Start{Job: m.ID, Alloc: copyAlloc(m.Alloc), TimeLimit: m.TimeLimit})
			}
		}
		if j.State != JobPending {
			return true // started in its MAGNETIC reservation's turn
		}
		if s.unjudged[j.ID] {
			// Requeued by a preemption earlier in this Schedule call
			// (see settle): it keeps its reason until the next call.
			cyc.Pending = append(cyc.Pending, Pending{Job: j.ID, Reason: j.Reason, Priority: j.Priority})
			pend = append(pend, j)
			wake.job(j)
			return true
		}
		r := s.evaluate(now, j, blocked, &cyc, false)
		s.holdCounters(now, j, r, blocked)
		if r == policy.ReasonNone {
			// Its allocation is final: only running jobs (not those
			// started by this pass) can be preempted.
			started = append(started, j)
			cyc.Starts = append(cyc.Starts, Start{Job: j.ID, Alloc: copyAlloc(j.Alloc), TimeLimit: j.TimeLimit})
			return true
		}
		s.setReason(j, r)
		cyc.Pending = append(cyc.Pending, Pending{Job: j.ID, Reason: r, Priority: j.Priority})
		pend = append(pend, j)
		wake.job(j)
		return true
	})
	s.inPass = false
	s.fits.begin(false)
	clear(blocked.holders) // scratch: kept for the next pass, holding no job
	s.holders = blocked.holders[:0]
	for _, j := range started {
		s.mutPending().Delete(j)
		s.mutRunning().ReplaceOrInsert(j)
	}
	for _, j := range s.deferred {
		s.mutPending().ReplaceOrInsert(j)
		cyc.Pending = append(cyc.Pending, Pending{Job: j.ID, Reason: j.Reason, Priority: j.Priority})
		pend = append(pend, j)
		wake.job(j)
	}
	s.started, s.pendJobs = started, pend
	defer s.dropScratch()
	s.deferred = s.deferred[:0]
	for _, j := range s.rekey {
		if j.State == JobPending {
			s.mutPending().Delete(j)
			s.touch(j)
			j.preemptFirst = true
			s.mutPending().ReplaceOrInsert(j)
		}
	}
	s.rekey = s.rekey[:0]
	if s.bf != nil {
		if err := s.backfillPass(now, &cyc); err != nil {
			return cyc, err
		}
	}
	s.powerEnd(now, &cyc)
	recs := s.auditRecords(cyc, s.pendJobs)
	if len(s.eventDecisions) > 0 {
		recs = append(s.eventDecisions, recs...)
	} else if len(recs) == 0 {
		recs = nil // as appending nothing to no event decisions gives
	}
	cyc.Decisions = recs
	s.eventDecisions = nil
	s.wakeTimes(&wake)
	cyc.NextWake = wake.at
	names := s.tresNames()
	for i := range cyc.Starts {
		cyc.Starts[i].Alloc.tres = names // for MarshalJSON's TRES names
	}
	return cyc, nil
}

// dropScratch empties Schedule's job scratch lists, so that they hold no
// job after the cycle.
func (s *Scheduler) dropScratch() {
	clear(s.started)
	clear(s.pendJobs)
	s.started, s.pendJobs = s.started[:0], s.pendJobs[:0]
}

// endExpired ends every running job whose time limit has passed.
func (s *Scheduler) endExpired(now time.Time, cyc *Cycle) {
	for {
		j, ok := s.running.Min()
		if !ok || j.deadline.After(now) {
			return
		}
		if j.preempting {
			// A preemption victim's grace time is over.
			s.endPreempted(j.deadline, j, j.preemptAction)
			cyc.Ended = append(cyc.Ended, Ended{Job: j.ID, State: j.State, Reason: policy.ReasonPreempted})
			continue
		}
		s.endJob(j, JobTimeout, j.deadline)
		j.Reason = policy.ReasonTimeLimit
		cyc.Ended = append(cyc.Ended, Ended{Job: j.ID, State: j.State, Reason: j.Reason})
	}
}

// passBlocks is what the main pass holds back: per partition, whether a
// job of it waits for resources (the jobs behind it wait on Priority),
// and the reservations in which a job waits for resources likewise.
type passBlocks struct {
	parts []bool
	resv  map[string]bool
	// keys are the limit counters held back for the plan (limithold.go):
	// those of holders[:keyed], the jobs that hold them, read on demand.
	keys    map[policy.CounterKey]bool
	holders []*job
	keyed   int
	buf     []policy.CounterKey // scratch
}

// magneticJobs returns the pending jobs that name no reservation but
// that a MAGNETIC reservation admits, in the order of their turn as
// reservation jobs; nil when there is no MAGNETIC reservation.
func (s *Scheduler) magneticJobs() []*job {
	if s.pol == nil || s.pol.resv.Len() == 0 {
		return nil
	}
	magnetic := false
	for _, r := range s.pol.resv.All() {
		magnetic = magnetic || r.Flags.Has(policy.ResvMagnetic)
	}
	if !magnetic {
		return nil
	}
	var out []*job
	s.pending.Ascend(func(j *job) bool {
		if j.Spec.Reservation == "" && len(s.pol.resv.Usable(j.resvJob())) > 0 {
			out = append(out, j)
		}
		return true
	})
	// Their order among themselves as reservation jobs is their queue
	// order: only the reservation rank changes, for all of them alike.
	return out
}

// queueKeyLess is queueLess for jobs a and b taking their turn as
// reservation jobs (aResv, bResv) or not.
func queueKeyLess(a *job, aResv bool, b *job, bResv bool) bool {
	if a.preemptFirst != b.preemptFirst {
		return a.preemptFirst
	}
	if a.preemptRank != b.preemptRank {
		return a.preemptRank > b.preemptRank
	}
	if aResv != bResv {
		return aResv
	}
	if a.tier != b.tier {
		return a.tier > b.tier
	}
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if !a.SubmitTime.Equal(b.SubmitTime) {
		return a.SubmitTime.Before(b.SubmitTime)
	}
	return a.ID < b.ID
}

// evaluate decides one pending job: it starts it (returning ReasonNone) or
// returns why it waits. It does not touch the pending index. With
// magnetic set it is the turn of a job that names no reservation in the
// MAGNETIC reservations that admit it: exempt from its partition's block,
// it may start only inside one of them, and holds nothing back when it
// cannot (its plain turn comes later, in queue order).
func (s *Scheduler) evaluate(now time.Time, j *job, blocked *passBlocks, cyc *Cycle, magnetic bool) policy.Reason {
	p := &s.parts[j.part]
	if j.Hold != HoldNone {
		// Held (priority 0): never started, never planned, blocking no one.
		return j.Hold.reason()
	}
	overTime, outNodes := s.partitionLimits(j)
	switch {
	case p.cfg.State == PartitionDown:
		return policy.ReasonPartitionDown
	case p.cfg.State == PartitionInactive:
		return policy.ReasonPartitionInactive
	case !j.Spec.BeginTime.IsZero() && j.Spec.BeginTime.After(now):
		s.holdPlanned(j)
		return policy.ReasonBeginTime
	case overTime:
		return policy.ReasonPartitionTimeLimit
	case outNodes:
		return policy.ReasonPartitionNodeLimit
	}
	if b, waiting := s.depBlocker(j); waiting {
		// Not eligible: Slurm keeps a job whose dependencies are not
		// satisfied out of the queue, wherever it would sit in it, and
		// its age does not accrue.
		return b.Reason
	}
	if j.EligibleTime.IsZero() {
		// Begin time passed, dependencies satisfied: the age clock starts.
		s.notePending(j)
		j.EligibleTime = now
	}
	if (j.Spec.Reservation == "" && !magnetic && blocked.parts[j.part]) || (j.Spec.Reservation != "" && blocked.resv[j.Spec.Reservation]) {
		// Behind a higher-priority job of its partition (or reservation)
		// that could not start: Slurm's main scheduler moves on without
		// testing limits.
		return policy.ReasonPriority
	}
	if r := s.checkLimits(now, j); r != policy.ReasonNone {
		s.holdForLimit(now, j, blocked, magnetic)
		return r
	}
	if !s.licensesFree(j) {
		s.holdForLicenses(j, blocked, magnetic)
		return policy.ReasonLicenses
	}
	if j.HetJobID != 0 {
		// Started by the backfill pass, all components at once (see
		// hetjob.go); here each component holds back what it may start
		// on, as a job that waits for resources does, so that the jobs
		// behind it are left to the backfill pass, which keeps the
		// heterogeneous job's reservation. A job the backfill pass may
		// not plan now (hetMayStart) holds nothing back, as a plain job
		// in that state.
		if !magnetic && s.hetMayStart(now, j) {
			s.holdBack(j, blocked)
		}
		return policy.ReasonResources
	}
	allowed := s.allowedNodes(j.shape) // and j.shape.usable, its size
	if r := s.whereReason(j); r != policy.ReasonNone {
		return r // BadConstraints, or required nodes not up (where.go)
	}
	if j.shape.usable == 0 {
		// No node able to hold the job is up: it waits for its nodes to
		// return (ReqNodeNotAvail is for a job whose nodes are down or
		// reserved). One that merely needs more nodes than are up waits
		// on Resources, as in Slurm.
		return policy.ReasonReqNodeNotAvail
	}
	resvEnd, r := s.candidates(now, j, magnetic)
	if r != policy.ReasonNone {
		return r
	}
	if len(s.requiredReserved(j)) > 0 {
		return policy.ReasonReqNodeNotAvail // a required node is reserved
	}
	nodes, quality := s.place(now, j, s.cand)
	if nodes == nil && !magnetic && s.preemptionOn() && j.Spec.Reservation == "" && j.awaitingVictims == 0 && s.tryPreempt(now, j, cyc) {
		// The victims are gone: place again.
		if resvEnd, r = s.candidates(now, j, false); r != policy.ReasonNone {
			return r
		}
		nodes, quality = s.place(now, j, s.cand)
	}
	if nodes != nil {
		if r := s.checkExclusiveLimits(now, j, nodes); r != policy.ReasonNone {
			return r
		}
		if s.countersHeld(j, blocked) {
			return policy.ReasonPriority // left to the backfill pass (limithold.go)
		}
		// Killed at its reservation's end, if any. The nodes were chosen
		// by the predicate allocate plans with (fitsNow), so it fails only
		// on a state the filter did not foresee; the job then waits.
		if err := s.allocate(now, j, nodes, quality, resvEnd); err == nil {
			return policy.ReasonNone
		}
		nodes = nil
	}
	// Resources, also when nodes are held back by a blocked job of
	// another partition: Priority means a higher-priority job waits in
	// the job's own partition (or reservation), which the checks above
	// report before placing.
	reason := policy.ReasonResources
	if s.maintHeld(now, j, allowed, s.avail) {
		reason = policy.ReasonReqNodeNotAvailMaint
	}
	if magnetic {
		return reason
	}
	if reason == policy.ReasonResources {
		s.wakeForMainPass(now, j, cyc)   // power saving: its nodes may be resumable
		s.rebootForMainPass(now, j, cyc) // changeable features: or rebootable (reboot.go)
	}
	s.holdBack(j, blocked)
	return reason
}

// holdBack holds back what job j, which the main pass leaves waiting for
// resources, may start on: its partition's nodes (the later jobs of the
// partition wait on Priority, and no job of another partition starts on
// them in this pass) or, for a job in a reservation, the reservation's
// nodes. The jobs held back are left to the backfill pass, which starts
// them only where the plan's reservations leave room.
func (s *Scheduler) holdBack(j *job, blocked *passBlocks) {
	p := &s.parts[j.part]
	if j.Spec.Reservation != "" {
		// A job in a reservation holds back the reservation's nodes (the
		// later jobs in it wait on Priority) and, in a FLEX reservation,
		// the nodes of its partition it may use outside it, as a job
		// outside reservations holds back its partition.
		if blocked.resv == nil {
			blocked.resv = map[string]bool{}
		}
		blocked.resv[j.Spec.Reservation] = true
		r, ok := s.pol.resv.Get(j.Spec.Reservation)
		if !ok {
			return
		}
		s.avail.Subtract(r.Nodes)
		if r.Flags.Has(policy.ResvFlex) {
			// s.pol.forbidden holds the other reservations' nodes, which
			// the job may not use (candidates set it last).
			outside := p.nodes.Clone()
			outside.Subtract(s.pol.forbidden)
			s.avail.Subtract(outside)
			blocked.parts[j.part] = true
		}
		return
	}
	blocked.parts[j.part] = true
	s.avail.Subtract(p.nodes)
	s.holdWake(p.nodes)
}

// candidates fills s.cand with the nodes the job may start on in this
// pass: capable, up, not held back by a blocked job ahead, and not
// forbidden by advance reservations. It returns the end of the
// reservation window the job would run in, or why it cannot start now.
func (s *Scheduler) candidates(now time.Time, j *job, magnetic bool) (time.Time, policy.Reason) {
	s.cand.CopyFrom(j.shape.capable)
	s.cand.IntersectWith(s.avail)
	return s.constrainByReservations(now, j, s.cand, magnetic)
}

// fitsNow reports whether node i can take the job's per-node request now
// (an exclusive job: an idle node where it fits). Counts decide, except
// under enforce-binding or per socket, where the choice decides.
func (s *Scheduler) fitsNow(j *job, i int) bool {
	n := &s.nodes[i]
	if j.shape.needsReboot(i) && !s.rebootFits(n) {
		return false // only its features after a reboot meet the constraint
	}
	if j.Spec.Exclusive && len(n.jobs) > 0 {
		return false // whole nodes: only an idle one, where the request must fit too
	}
	if !s.fitsFree(j, n, j.perNode) || !s.userShareOK(j, n) {
		return false
	}
	if j.choiceDecides(n) || sharedChoice(j, n) || s.cpuChoiceDecides(j, n) {
		// Counts do not see where the free devices sit (near which CPUs,
		// on which socket): the choice itself decides, so that the node
		// filter and allocate agree.
		_, ok := s.planNode(j, n, nil)
		return ok
	}
	return true
}

// place chooses the nodes of cand the job starts on now, or returns nil.
// Without a topology it is first-fit by node index. With one, the nodes
// that fit now are handed to the graph, which picks the least-spread set
// (and, for small jobs, avoids breaking whole leaves and NVLink domains);
// a placement that misses the job's --switches count is refused until the
// job has waited SwitchesMaxWait since it became eligible. It also returns
// the placement quality (1 without a topology). The nodes are returned in
// s.placed, which the next call reuses: callers use them before placing
// again and keep none of them.
func (s *Scheduler) place(now time.Time, j *job, cand topology.NodeSet) ([]int, float64) {
	if cand.Count() < j.nodes {
		return nil, 0
	}
	if j.where != nil {
		return s.placeWhere(now, j, cand)
	}
	if j.tasks != nil {
		return s.placeTasks(now, j, cand)
	}
	if s.graph == nil && len(j.extra) == 0 {
		// First fit, lightest nodes first (Weight), then by index; the
		// hot case, every node of one weight, walks the set directly
		// (asking the pass's summaries, when they serve the job).
		out := s.placed[:0]
		if s.tiers == nil {
			c := s.fitClassOf(j)
			for i := cand.Next(0); i >= 0 && len(out) < j.nodes; i = cand.Next(i + 1) {
				if s.fitsNowIn(j, c, i) {
					out = append(out, i)
				}
			}
		} else {
			s.byWeight(cand, func(i int) bool {
				if s.fitsNow(j, i) {
					out = append(out, i)
				}
				return len(out) < j.nodes
			})
		}
		s.placed = out
		if len(out) == j.nodes {
			return out, 1
		}
		return nil, 0
	}
	if s.graph == nil {
		// A GRESPerJob total: the first nodes that hold it, or those with
		// the most of it free.
		var fit []int
		s.byWeight(cand, func(i int) bool {
			if s.fitsNow(j, i) {
				fit = append(fit, i)
			}
			return true
		})
		s.placed = s.spreadNodes(j, fit, s.placed)
		if s.placed == nil {
			return nil, 0
		}
		return s.placed, 1
	}
	if k := s.fitSet(j, s.fitClassOf(j), cand); k < j.nodes {
		return nil, 0
	}
	p, ok := s.selectByWeight(s.fit, j.nodes, j.constraints())
	if !ok {
		return nil, 0
	}
	if !p.Met && (j.Spec.SwitchesMaxWait == 0 || now.Sub(j.EligibleTime) < j.Spec.SwitchesMaxWait) {
		return nil, 0
	}
	s.placed = p.Nodes.AppendTo(s.placed[:0])
	if _, ok := s.spreadExtra(j, s.placed); !ok {
		// The least-spread nodes do not hold the GRESPerJob total: the
		// graph chooses among the nodes that do.
		nodes := s.spreadNodes(j, s.fit.AppendTo(nil), nil)
		if nodes == nil {
			return nil, 0
		}
		s.fit.Reset()
		for _, i := range nodes {
			s.fit.Add(i)
		}
		if p, ok = s.selectByWeight(s.fit, j.nodes, j.constraints()); !ok || !p.Met {
			return nil, 0
		}
		s.placed = p.Nodes.AppendTo(s.placed[:0])
	}
	return s.placed, p.Quality.Score
}

// maintHeld reports whether a node able to hold job j now (allowed,
// within avail unless avail is zero, its per-node request free) is held
// by a MAINT reservation (not the job's own) with a window within the
// job's time limit: Slurm then shows "ReqNodeNotAvail, Reserved for
// maintenance".
func (s *Scheduler) maintHeld(now time.Time, j *job, allowed, avail topology.NodeSet) bool {
	if s.pol == nil || s.pol.resv.Len() == 0 {
		return false
	}
	for _, r := range s.pol.resv.All() {
		if !r.Flags.Has(policy.ResvMaint) || r.Name == j.Spec.Reservation || !r.Nodes.Intersects(allowed) {
			continue
		}
		if ws, err := s.pol.resv.Windows(r.Name, now, now.Add(max(j.TimeLimit, insideWall)), nil); err != nil || len(ws) == 0 {
			continue
		}
		for i := r.Nodes.Next(0); i >= 0; i = r.Nodes.Next(i + 1) {
			if allowed.Has(i) && (avail.Len() == 0 || avail.Has(i)) && s.fitsNow(j, i) {
				return true
			}
		}
	}
	return false
}

// nodePlan is how a job would sit on one node: its CPU ids, device
// indices and TRES.
type nodePlan struct {
	cpus    []int
	devices []int
	quality float64
	tres    gres.Vector
	shares  []gres.ShareGrant // shards and MPS shares, by device (see shares.go)
}

// planNode works out, without changing anything, which CPUs and devices
// the job would get on node n: best-connected devices first, then CPUs
// close to them (only close CPUs with EnforceBinding). It reports false
// when the node cannot host the job now. The plan's CPU and TRES slices
// come from buf (nil: allocated).
func (s *Scheduler) planNode(j *job, n *node, buf *allocBuf) (nodePlan, bool) {
	return s.planNodeFor(j, n, buf, nil)
}

// planNodeFor is planNode for the job's request on this node: req, or
// (nil) its per-node request.
func (s *Scheduler) planNodeFor(j *job, n *node, buf *allocBuf, req *nodeReq) (nodePlan, bool) {
	perNode, devReq := j.perNode, j.devReq
	if req != nil {
		perNode, devReq = req.vec, req.devReq
	}
	if !s.userShareOK(j, n) {
		return nodePlan{quality: 1}, false
	}
	if j.Spec.Exclusive {
		// The whole node, but only where the job's own request fits its
		// healthy free resources (and, per socket or bound, the choice
		// succeeds): an unhealthy device is no part of what it gets.
		p := nodePlan{quality: 1}
		if len(n.jobs) > 0 || !perNode.Fits(n.free) {
			return p, false
		}
		if j.Spec.EnforceBinding || j.Spec.GPUsPerSocket > 0 {
			if _, ok := s.planShare(j, n, nil, perNode, devReq); !ok {
				return p, false
			}
		}
		p.tres = buf.vector(len(n.free))
		copy(p.tres, n.free) // everything but unhealthy devices
		p.tres[gres.Node] = 1
		p.cpus = n.freeCPUsInto(buf.cpuIDs(n.cfg.CPUs), n.cfg.CPUs, gres.CoreSet{}, false)
		p.devices = n.freeDevices()
		return p, true
	}
	return s.planShare(j, n, buf, perNode, devReq)
}

// planShare plans the request perNode (with its device requests devReq)
// as the job's share of node n: planNodeFor's choice for a job that does
// not take the whole node.
func (s *Scheduler) planShare(j *job, n *node, buf *allocBuf, perNode gres.Vector, devReq []gres.Request) (nodePlan, bool) {
	p := nodePlan{quality: 1}
	if !s.fitsFree(j, n, perNode) {
		return p, false
	}
	p.tres = buf.vector(s.reg.Len())
	p.tres[gres.CPU] = perNode[gres.CPU]
	p.tres[gres.Mem] = perNode[gres.Mem]
	p.tres[gres.Node] = 1
	var near, freeCores gres.CoreSet
	devs := n.devs
	for _, r := range devReq {
		if gres.IsSharing(r.Name) && devs != nil && devs.HasShares(r.Name) {
			// Shards and MPS shares on concrete devices (shares.go).
			var ok bool
			if devs, ok = s.planShares(n, devs, r, len(devReq) > 1, &p); !ok {
				return p, false
			}
			continue
		}
		if devs == nil || !n.hasDevices(r.Name) {
			// A count-only GRES (shards, MPS, licenses on the node):
			// counted, no device indices.
			p.tres[s.reg.MustLookup(deviceTRES(r.Name, ""))] += r.Count
			if r.Type != "" {
				p.tres[s.reg.MustLookup(deviceTRES(r.Name, r.Type))] += r.Count
			}
			continue
		}
		if devs == n.devs && len(devReq) > 1 {
			devs = devs.Clone() // dry run: later requests must not reuse these devices
		}
		if freeCores.IsEmpty() && n.hasAffinity {
			freeCores = n.freeCoreSet()
		}
		// Devices close to free CPUs are preferred, so the job's CPUs can
		// sit next to its devices. Under enforce-binding only such devices
		// are eligible, and only sets of them whose free CPUs (with those
		// of the devices chosen so far) hold the job's CPUs on the node:
		// the choice, not a count, decides whether the node can host it.
		var pl gres.Placement
		var err error
		if j.Spec.GPUsPerSocket > 0 && r.Name == "gpu" && r.Type == "" {
			pl, err = s.choosePerSocket(j, n, devs, int(r.Count))
		} else {
			dr := gres.DeviceRequest{Name: r.Name, Type: r.Type, Count: int(r.Count),
				Cores: freeCores, EnforceBinding: j.Spec.EnforceBinding, Order: s.gpuOrder}
			if j.Spec.EnforceBinding {
				dr.CPUs, dr.BoundCores = int(perNode[gres.CPU]), near
			}
			pl, err = devs.Choose(dr)
		}
		if err != nil {
			return p, false
		}
		if devs != n.devs {
			if err := devs.Allocate(pl.Devices); err != nil {
				return p, false
			}
		}
		p.devices = append(p.devices, pl.Devices...)
		p.quality = min(p.quality, pl.Quality)
		n.addDeviceTRES(p.tres, pl.Devices)
		for _, d := range pl.Devices {
			near = near.Union(n.devCores[d])
		}
	}
	slices.Sort(p.devices)
	k := int(perNode[gres.CPU])
	var want int
	p.cpus, want = s.chooseCPUs(j, n, buf, k, near, j.Spec.EnforceBinding && !near.IsEmpty())
	if len(p.cpus) < want {
		return p, false // not enough CPUs close to the devices (enforce-binding), or whole units free
	}
	// The CPU count is the allocation's, in whole units (CR_Core: whole
	// cores), shared CPUs included (AllocTRES cpu).
	p.tres[gres.CPU] = int64(len(p.cpus))
	// Memory per CPU is per allocated CPU: the rounded count raises it.
	mem, ok := j.unitMem(n, perNode, len(p.cpus))
	if !ok || mem > n.free[gres.Mem] {
		return p, false
	}
	p.tres[gres.Mem] = mem
	return p, true
}

// allocate commits the job to the given nodes: CPUs, memory and device
// indices on each, then marks it running, ending at its time limit or at
// killBy when that is earlier (a reservation's end; zero for none), and
// counts it in the policy usage. quality is the placement's score. Every
// node is planned before any is changed: when one cannot host the job
// (ErrCannotHost) nothing changes and the job stays pending.
func (s *Scheduler) allocate(now time.Time, j *job, nodes []int, quality float64, killBy time.Time) error {
	allocs := make([]NodeAlloc, 0, len(nodes))
	buf := s.newAllocBuf(j, nodes)
	reqs, ok := s.nodeReqs(j, nodes) // nil when every node takes perNode
	if !ok {
		return fmt.Errorf("%w: nodes %v do not hold job %d's tasks or GRESPerJob", errCannotHost, nodes, j.ID)
	}
	for k, i := range nodes {
		n := &s.nodes[i]
		var req *nodeReq
		if reqs != nil {
			req = &reqs[k]
		}
		p, ok := s.planNodeFor(j, n, buf, req)
		if !ok || !s.canTake(j, n, p) {
			return fmt.Errorf("%w: node %s for job %d", errCannotHost, n.cfg.Name, j.ID)
		}
		allocs = append(allocs, NodeAlloc{
			Node: i, Name: n.cfg.Name, CPUs: p.cpus, MemoryMiB: p.tres[gres.Mem],
			Devices: p.devices, DeviceQuality: p.quality, TRES: p.tres, Shares: p.shares,
		})
	}
	s.commitAllocation(now, j, allocs, quality, killBy)
	return nil
}

// commitAllocation gives job j the allocations (checked by the caller:
// CPUs and devices free and healthy, TRES within the nodes' free TRES)
// and marks it running from start, until its time limit or killBy when
// that is earlier (zero for none), counted in the policy usage.
func (s *Scheduler) commitAllocation(start time.Time, j *job, allocs []NodeAlloc, quality float64, killBy time.Time) {
	s.touch(j)
	j.tel = j.tel.newRun()
	j.Starts++
	share := s.shareLimit(j)
	if share <= 1 {
		share = 0
	}
	j.Alloc = Allocation{Nodes: allocs, Quality: quality, OverSubscribe: share}
	for k := range allocs {
		na := &allocs[k]
		s.saveNode(na.Node)
		n := &s.nodes[na.Node]
		_ = n.takeCPUs(na) // shared CPUs are not charged again; fits: checked by canTake
		if len(na.Devices) > 0 {
			_ = n.devs.Allocate(na.Devices) // free and healthy: checked by canTake
		}
		if len(na.Shares) > 0 {
			_ = n.devs.AllocateShares(na.Shares) // free: checked by canTake
		}
		n.jobs = append(n.jobs, j.ID)
		s.noteUse(j, na.Node, 1)
	}
	var weights gres.BillingWeights // none: billing is the CPU count
	if s.pol != nil {
		weights = s.pol.p.BillingWeights(j.Partition)
	}
	s.sum = j.Alloc.sumInto(s.sum)
	j.Alloc.Billing = weights.Billable(s.sum, s.billMode)
	j.bfUse = nil // the profile's view of the allocation is recomputed
	j.clearEstimate()
	j.State = JobRunning
	j.Reason = policy.ReasonNone
	j.StartTime = start
	if a := s.arrays[j.ArrayJobID]; a != nil {
		a.running++
		s.onUndo(func() { a.running-- })
	}
	j.deadline = start.Add(j.TimeLimit)
	j.killBy = killBy
	if !killBy.IsZero() && killBy.Before(j.deadline) {
		j.deadline = killBy
	}
	s.noteStarted(j)
	if share > 1 {
		s.sharersChanged(j) // the kept profile counts shared CPUs once (sharedCPUUse)
	}
	s.policyStart(j, s.addLicenseTRES(j, s.sum))
}

// errCannotHost is allocate's error for a node that cannot host the job
// it was chosen for; the cycle leaves the job pending.
var errCannotHost = errors.New("scheduler: node cannot host the job")

// canTake reports whether node n can take job j's plan p now: its CPUs
// free or ones j may share, its devices free (and healthy), its TRES
// within the free TRES (shared CPUs not counted again).
func (s *Scheduler) canTake(j *job, n *node, p nodePlan) bool {
	var mask []uint64
	var shared int64
	for _, c := range p.cpus {
		if c < 0 || c >= n.cfg.CPUs {
			return false
		}
		if n.cpuUsed[c>>6]&(1<<uint(c&63)) == 0 {
			continue
		}
		if mask == nil {
			if mask = s.shareMask(j, n, s.shareLimit(j)); mask == nil {
				return false
			}
		}
		if mask[c>>6]&(1<<uint(c&63)) != 0 {
			return false
		}
		shared++
	}
	for _, d := range p.devices {
		if n.devs == nil || n.devs.InUse(d) || !n.devs.IsHealthy(d) {
			return false
		}
	}
	if len(p.shares) > 0 && !n.sharesFree(p.shares) {
		return false
	}
	k, cpus := p.tres[gres.Node], p.tres[gres.CPU]
	p.tres[gres.Node], p.tres[gres.CPU] = 0, cpus-shared
	ok := p.tres.Fits(n.free)
	p.tres[gres.Node], p.tres[gres.CPU] = k, cpus
	return ok
}

// cpuChoiceDecides reports whether node n can host job j only as its CPU
// choice says, the counts not being enough: the allocation unit is more
// than a CPU there (whole cores or sockets must be free), or j may share
// CPUs that jobs on the node hold.
func (s *Scheduler) cpuChoiceDecides(j *job, n *node) bool {
	return n.lay.unitSize(s.crUnit) > 1 || (n.sharing > 0 && s.shareLimit(j) > 1)
}

// allocBuf hands out the CPU-id and TRES slices of one job's allocation
// from two arrays sized for all its nodes, instead of allocating two
// slices per node. Every slice it hands out is capped at its own length
// (CPU ids: at the count asked for), so appending to one never writes
// into another; when an array is too short (or buf is nil) the slice is
// allocated on its own.
type allocBuf struct {
	cpus []int
	tres gres.Vector
}

// newAllocBuf sizes the arrays for the job on nodes: the CPU ids it asks
// for (every CPU of an exclusive node) and one TRES vector per node.
func (s *Scheduler) newAllocBuf(j *job, nodes []int) *allocBuf {
	var cpus, tres int
	for _, i := range nodes {
		n := &s.nodes[i]
		if j.Spec.Exclusive {
			cpus += n.cfg.CPUs
			tres += len(n.free)
		} else {
			cpus += int(j.perNode[gres.CPU])
			tres += s.reg.Len()
		}
	}
	return &allocBuf{cpus: make([]int, cpus), tres: make(gres.Vector, tres)}
}

// vector returns a zeroed TRES vector of length n.
func (b *allocBuf) vector(n int) gres.Vector {
	if b == nil || len(b.tres) < n {
		return make(gres.Vector, n)
	}
	return cut(&b.tres, n)
}

// cpuIDs returns an empty slice with room for k CPU ids.
func (b *allocBuf) cpuIDs(k int) []int {
	if b == nil || len(b.cpus) < k {
		return make([]int, 0, k)
	}
	return cut(&b.cpus, k)[:0]
}

// socketsCapable reports whether node n has, counting every GPU it has
// (in use or not, healthy or not), the SocketsPerNode sockets of
// GPUsPerSocket GPUs the job asks for: whether it could ever host it.
func socketsCapable(j *job, n *node) bool {
	if j.Spec.GPUsPerSocket == 0 {
		return true
	}
	count := map[int]int{}
	for _, d := range n.cfg.Devices.Devices {
		if strings.EqualFold(d.Name, "gpu") && d.Socket >= 0 {
			count[d.Socket]++
		}
	}
	k := 0
	for _, c := range count {
		if c >= j.Spec.GPUsPerSocket {
			k++
		}
	}
	return k >= max(j.Spec.SocketsPerNode, 1)
}

// choosePerSocket chooses a --gpus-per-socket request: GPUsPerSocket
// best-connected free GPUs from each of SocketsPerNode distinct sockets
// (those with the most free GPUs first, then the lowest socket), plus any
// other untyped GPUs the job asks for on the node from anywhere. devs is
// not changed.
func (s *Scheduler) choosePerSocket(j *job, n *node, devs *gres.NodeDevices, total int) (gres.Placement, error) {
	per, sockets := j.Spec.GPUsPerSocket, max(j.Spec.SocketsPerNode, 1)
	free := map[int]int{}
	for _, d := range n.cfg.Devices.Devices {
		if strings.EqualFold(d.Name, "gpu") && !devs.InUse(d.Index) && devs.IsHealthy(d.Index) && d.Socket >= 0 {
			free[d.Socket]++
		}
	}
	order := make([]int, 0, len(free))
	for sk, c := range free {
		if c >= per {
			order = append(order, sk)
		}
	}
	if len(order) < sockets {
		return gres.Placement{}, fmt.Errorf("%w: %d socket(s) with %d free GPUs, %d wanted", gres.ErrInsufficientDevices, len(order), per, sockets)
	}
	slices.SortFunc(order, func(a, b int) int {
		if free[a] != free[b] {
			return free[b] - free[a]
		}
		return a - b
	})
	work := devs.Clone()
	out := gres.Placement{Quality: 1}
	var others []int
	for _, sk := range order[:sockets] {
		// The choice sees only this socket's free GPUs: the others are
		// taken in a copy (devices need not declare their CPUs for this).
		others = others[:0]
		for _, d := range n.cfg.Devices.Devices {
			if d.Socket != sk && !work.InUse(d.Index) && work.IsHealthy(d.Index) {
				others = append(others, d.Index)
			}
		}
		sock := work.Clone()
		if err := sock.Allocate(others); err != nil {
			return gres.Placement{}, err
		}
		pl, err := sock.Choose(gres.DeviceRequest{Name: "gpu", Count: per})
		if err != nil {
			return gres.Placement{}, err
		}
		if err := work.Allocate(pl.Devices); err != nil {
			return gres.Placement{}, err
		}
		out.Devices = append(out.Devices, pl.Devices...)
		out.Quality = min(out.Quality, pl.Quality)
	}
	if rest := total - per*sockets; rest > 0 {
		pl, err := work.Choose(gres.DeviceRequest{Name: "gpu", Count: rest})
		if err != nil {
			return gres.Placement{}, err
		}
		out.Devices = append(out.Devices, pl.Devices...)
	}
	slices.Sort(out.Devices)
	return out, nil
}
