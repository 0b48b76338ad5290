package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// bfState is the scheduler's backfill state: the planner, and the plan of
// the last cycle (its profile, holding running jobs and reservations, is
// what explanations re-plan on).
type bfState struct {
	planner *backfill.Planner
	// estimateEvery is Config.EstimateInterval.
	estimateEvery time.Duration
	// customChooser says that Config.Backfill.Chooser was the caller's
	// (not the topology chooser New supplies): Restore must be given it.
	customChooser bool
	// last is the profile kept from cycle to cycle: running jobs, the
	// reservation windows and the last plan's bookings. Explanations
	// re-plan on clones of it.
	last *backfill.Profile
	// Changes since the last plan, applied to the kept profile before the
	// next: jobs that stopped running (or whose end moved), jobs that
	// started, and whether node capacity changed (then it is rebuilt; an
	// added node is grown into it instead, see growProfile).
	ended   []JobID
	started []*job
	dirty   bool
	// rebuild forces a fresh profile every cycle (tests compare both);
	// noExtend a plan of the whole queue (benchmarks).
	rebuild, noExtend bool
	// nodes, running and jobs are reused from cycle to cycle.
	nodes   []backfill.NodeState
	running []backfill.Running
	jobs    []backfill.Job
	pjobs   []*job
	// The last plan, when it was made, its jobs, and the node states and
	// reservation windows it saw: what canExtend compares.
	plan                 *backfill.Plan
	spare                *backfill.Plan // the plan before, reused for the next
	planAt               time.Time
	prevJobs             []backfill.Job
	prevUsable           topology.NodeSet
	windows, prevWindows []bfWindow
	// ctr is the pass's limit counters (see limitplan.go).
	ctr bfCounters
	// lastClaim1 is the claim dimension (Scheduler.claim1) the kept
	// profile was built with.
	lastClaim1 int
	// noReuse turns off what the pass keeps on the jobs to build its
	// inputs (bfinputs.go): tests compare both. pass counts the passes
	// (bfinputs.go's stamps), never taken back.
	noReuse bool
	pass    uint64
	// keys numbers the limit counters' keys (bfinputs.go).
	keys bfKeys
}

func (s *Scheduler) initBackfill(cfg backfill.Config, estimateEvery time.Duration) error {
	custom := cfg.Chooser != nil
	if s.graph != nil && cfg.Chooser == nil {
		cfg.Chooser = graphChooser(s.graph)
	}
	pl, err := backfill.NewPlanner(cfg)
	if err != nil {
		return fmt.Errorf("%w: backfill: %w", ErrInvalidConfig, err)
	}
	s.bf = &bfState{planner: pl, estimateEvery: estimateEvery, customChooser: custom}
	return nil
}

// planReasons are the pending reasons of jobs the backfill planner can
// consider: the others wait on their own constraints (partition limits,
// nodes down), which no plan changes.
func plannable(r policy.Reason) bool {
	switch r {
	case policy.ReasonPriority, policy.ReasonResources, policy.ReasonReqNodeNotAvailMaint, policy.ReasonBeginTime, policy.ReasonLicenses:
		return true
	}
	return false
}

// profileNodes returns every node's capacity and free resources for the
// backfill profile. Node, billing and energy are not shared out per node
// and stay zero; a node that is down offers nothing. An unhealthy device
// is no part of the node's capacity (nor free, nor in a running job's use,
// see profileUse: it never comes back free): the node is idle (whole, for
// an exclusive job) when everything else is free, and a request that
// needs the device does not fit it. The capacity changes only with a
// device's health, which marks the kept profile stale. The slice and its
// vectors are reused from cycle to cycle.
func (s *Scheduler) profileNodes() []backfill.NodeState {
	b := s.bf
	if b == nil {
		b = &bfState{} // no backfill configured: nothing to reuse
	}
	s.addProfileNodes(b)
	for i := range s.nodes {
		s.fillProfileNode(b, i)
	}
	return b.nodes
}

// addProfileNodes gives the nodes added since the last call (all of them
// the first time) their entry in b.nodes; UpdateNode and RemoveNode
// rewrite a node's capacity.
func (s *Scheduler) addProfileNodes(b *bfState) {
	for i := len(b.nodes); i < len(s.nodes); i++ {
		c := s.nodes[i].capacity.Clone()
		c[gres.Node] = 0
		b.nodes = append(b.nodes, backfill.NodeState{Capacity: c, Free: make(gres.Vector, len(c))})
	}
}

// fillProfileNode writes node i's capacity and free resources into
// b.nodes[i] (see profileNodes).
func (s *Scheduler) fillProfileNode(b *bfState, i int) {
	n := &s.nodes[i]
	if w := max(len(n.capacity), s.claim1); len(b.nodes[i].Capacity) != w {
		// The claim dimension came or went (backfill_claims.go).
		c := make(gres.Vector, w)
		copy(c, n.capacity)
		c[gres.Node] = 0
		b.nodes[i] = backfill.NodeState{Capacity: c, Free: make(gres.Vector, w)}
	}
	if n.devs != nil {
		c := b.nodes[i].Capacity
		copy(c, n.capacity)
		c[gres.Node] = 0
		for _, d := range n.cfg.Devices.Devices {
			if !n.devs.IsHealthy(d.Index) {
				n.subDeviceTRES(c, d.Index)
			}
		}
	}
	f := b.nodes[i].Free[:cap(b.nodes[i].Free)]
	if n.admin == adminDown {
		clear(f)
	} else {
		copy(f, n.free)
		f[gres.Node] = 0
	}
	if n.sharesDevices() {
		// Whole-free devices, the most shares one device has and the
		// claim (backfill_shares.go, backfill_claims.go).
		var nf gres.Vector
		if n.admin != adminDown {
			nf = f
		}
		s.shareProfileNode(i, b.nodes[i].Capacity, nf)
	} else if s.claim1 > 0 {
		b.nodes[i].Capacity[s.claim1-1] = claimUnlimited
		if n.admin != adminDown {
			f[s.claim1-1] = claimUnlimited
		}
	}
	b.nodes[i].Free = f
}

// growProfile adds node i, the one just added (up, not powered down), to
// the kept profile instead of marking it stale: backfill's AddNode gives
// the profile NewProfile would build with the node, without rebuilding
// the timelines of the others. It reports whether it did; the caller
// marks the profile stale otherwise. The next cycle then plans the whole
// queue on the grown profile (canExtend: the node count changed).
func (s *Scheduler) growProfile(i int) bool {
	b := s.bf
	if b == nil || b.last == nil || b.dirty || b.rebuild || b.last.NumNodes() != i || len(s.nodes) != i+1 {
		return false
	}
	if s.refreshClaim(); s.claim1 != b.lastClaim1 {
		return false // the claim dimension changed: rebuilt
	}
	s.addProfileNodes(b)
	s.fillProfileNode(b, i)
	return b.last.AddNode(b.nodes[i]) == nil
}

// profileRunning returns every running job as the profile sees it: what it
// holds on each node until its deadline. The slice is reused from cycle to
// cycle; each job's per-node use is computed once, when it starts.
func (s *Scheduler) profileRunning() []backfill.Running {
	b := s.bf
	if b == nil {
		b = &bfState{} // no backfill configured: nothing to reuse
	}
	out := b.running[:0]
	s.running.Ascend(func(j *job) bool {
		out = append(out, s.profileRunningJob(j))
		return true
	})
	b.running = out
	return out
}

// profileUse returns what a running job holds on each node as the profile
// counts it: its allocation without the node TRES and without devices
// that failed under it (they never come back free). It is computed once
// and cached: until a device's health changes, and for a sharer until a
// sharer on one of its nodes changes (sharersChanged); with
// bfState.noReuse (tests) it is computed every time.
func (s *Scheduler) profileUse(j *job) []backfill.Alloc {
	// sharedUse walks j's nodes: asked only when the share generation moved.
	if j.bfUse != nil && (s.bf == nil || !s.bf.noReuse) && j.bfUseHealthGen == s.healthGen && (j.bfUseShareGen == s.shareGen || !s.sharedUse(j)) && s.sharerGensValid(j) {
		return j.bfUse
	}
	use := make([]backfill.Alloc, len(j.Alloc.Nodes))
	// The per-node vectors share one array, each capped at its length.
	n := 0
	for _, na := range j.Alloc.Nodes {
		n += len(na.TRES)
	}
	buf := make(gres.Vector, n)
	for k, na := range j.Alloc.Nodes {
		u := cutCopy(&buf, na.TRES)
		u[gres.Node] = 0
		if bad := s.nodes[na.Node].unhealthy(na.Devices); len(bad) > 0 {
			u, _ = u.Sub(s.nodes[na.Node].deviceVector(u, bad))
		}
		if j.Alloc.OverSubscribe > 1 && j.State == JobRunning {
			// Shared CPUs count once, for the holder that keeps them
			// longest; a sharer's start, end or end move re-adds the
			// other sharers on its nodes (sharersChanged).
			u[gres.CPU] -= int64(len(na.CPUs)) - s.sharedCPUUse(j, &s.nodes[na.Node], &j.Alloc.Nodes[k])
		}
		use[k] = s.profileAlloc(j, na.Node, u)
	}
	j.bfUse, j.bfUseHealthGen, j.bfUseShareGen = use, s.healthGen, s.shareGen
	j.bfUseSharerGens = nil
	if j.Alloc.OverSubscribe > 1 {
		// Who holds a shared CPU longest changes as sharers come and go:
		// valid while the nodes keep their share generation. A new slice:
		// a journaled copy of the job may hold the old one.
		j.bfUseSharerGens = make([]uint64, len(j.Alloc.Nodes))
		for k, na := range j.Alloc.Nodes {
			j.bfUseSharerGens[k] = s.nodes[na.Node].sharerGen
		}
	}
	return use
}

// sharerGensValid reports whether job j's cached profile use still holds
// as far as sharing goes: j shares no CPUs, or none of its nodes saw a
// sharer change since it was computed.
func (s *Scheduler) sharerGensValid(j *job) bool {
	if j.Alloc.OverSubscribe <= 1 {
		return true
	}
	if len(j.bfUseSharerGens) != len(j.Alloc.Nodes) {
		return false
	}
	for k, na := range j.Alloc.Nodes {
		if s.nodes[na.Node].sharerGen != j.bfUseSharerGens[k] {
			return false
		}
	}
	return true
}

// backfillPass plans every plannable pending job in queue order on a
// profile of the cluster after the main pass, starts the jobs the plan
// starts now, and records every other job's expected start and nodes.
func (s *Scheduler) backfillPass(now time.Time, cyc *Cycle) error {
	b := s.bf
	b.pass++
	s.refreshClaim()
	windows := b.windows[:0]
	if err := s.reservationWindows(now, now.Add(b.planner.Config().Window), func(id uint64, w policy.Window, nodes []int) error {
		windows = append(windows, bfWindow{id: id, w: w, nodes: nodes})
		return nil
	}); err != nil {
		return fmt.Errorf("scheduler: backfill: reservations: %w", err)
	}
	windows = s.powerWindows(now, windows)
	windows = s.bootWindows(now, windows)
	jobs, pjobs := b.jobs[:0], b.pjobs[:0]
	s.pending.Ascend(func(j *job) bool {
		// Jobs in reservations start in the main pass, inside their
		// window.
		// A job that can never start, or waits on a dependency too
		// (reporting its begin time first), holds nothing in the plan.
		// (bfCheckPolicy, bfLimitHeld and bfNeverReason are checkPolicy,
		// limitHeld and neverBlocker with the job's compiled request,
		// bfinputs.go.)
		consider := (plannable(j.Reason) || s.bfLimitHeld(now, j)) && j.Spec.Reservation == "" && !s.outsidePlan(j)
		if consider && j.Reason == policy.ReasonPriority {
			// Not evaluated by the main pass (behind a blocked job):
			// its own limits and dependencies are checked now.
			if r := s.bfCheckPolicy(now, j); r != policy.ReasonNone {
				s.setReason(j, r)
				consider = s.bfLimitHeld(now, j)
			}
		}
		if consider {
			// A job no waiting can start gets no plan (limitplan.go).
			if r := s.bfNeverReason(now, j); r != policy.ReasonNone {
				s.setReason(j, r)
				consider = false
			}
		}
		// An estimate of this EstimateInterval period of the clock that
		// has not come stands: the plan then only tests the job for a
		// start now, unless it gives it a reservation.
		keep := consider && b.estimateEvery > 0 && j.ExpectedStart.After(now) &&
			!j.EstimatedAt.Before(periodStart(now, unixEpoch(), b.estimateEvery))
		if !keep {
			s.notePending(j)
			j.clearEstimate()
		}
		if !consider {
			return true
		}
		if j.HetJobID != 0 {
			if bj, ok := s.bfHetJob(now, j); ok {
				jobs, pjobs = append(jobs, bj), append(pjobs, j)
			}
			return true
		}
		jobs = append(jobs, s.bfJob(now, j, s.allowedNodes(j.shape), j.shape))
		jobs[len(jobs)-1].NoEstimate = keep
		pjobs = append(pjobs, j)
		return true
	})
	b.jobs, b.pjobs = jobs, pjobs
	ctr, err := s.attachCounters(now, jobs, pjobs)
	if err != nil {
		return err
	}

	extend := ctr == nil && s.canExtend(now, windows, jobs)
	prof, extended, err := s.keptProfile(now, extend, jobs)
	if err != nil {
		return err
	}
	prof.SetCounters(ctr)
	// Two plans alternate: this cycle's is written into the one before
	// last (the last one is what it may extend).
	dst := b.spare
	var plan *backfill.Plan
	// fail leaves nothing to extend and the kept profile, half updated,
	// to be built afresh by the next cycle.
	fail := func(err error) error {
		b.plan, b.spare, b.dirty = nil, nil, true
		return err
	}
	if extended {
		plan, err = b.planner.ExtendInto(dst, prof, b.plan, jobs[len(b.prevJobs):])
	} else {
		for _, w := range windows {
			if err := prof.Block(backfill.JobID(w.id), w.w.Start, w.w.End, w.nodes); err != nil {
				return fail(fmt.Errorf("scheduler: backfill: reservations: %w", err))
			}
		}
		plan, err = b.planner.PlanInto(dst, prof, jobs)
	}
	if err != nil {
		return fail(fmt.Errorf("scheduler: backfill plan: %w", err))
	}
	// What the next cycle needs to extend this plan.
	b.windows, b.prevWindows = b.prevWindows[:0], windows
	b.spare, b.plan, b.planAt = b.plan, plan, now
	// This cycle's jobs are kept as they are; the array of the last
	// cycle's is reused for the next cycle's.
	b.prevJobs, b.jobs = jobs, b.prevJobs[:0]
	if b.prevUsable.Len() != s.usable.Len() {
		b.prevUsable = topology.NewNodeSet(s.usable.Len())
	}
	b.prevUsable.CopyFrom(s.usable)
	s.noteCounterWaits(plan, pjobs)
	s.wakeForPlan(now, plan, cyc)
	s.rebootForPlan(now, plan, pjobs, cyc)
	cyc.Starts = slices.Grow(cyc.Starts, len(plan.Starts))
	for _, k := range plan.Starts {
		e := &plan.Entries[k]
		j := pjobs[k]
		if len(e.Components) > 0 {
			s.startHet(now, e, cyc)
			continue
		}
		// Limits are checked against the usage of every job started so
		// far, this pass included; a job they hold keeps its slot empty.
		if r := s.checkPolicy(now, j); r != policy.ReasonNone {
			s.setReason(j, r)
			continue
		}
		if r := s.checkExclusiveLimits(now, j, e.Nodes); r != policy.ReasonNone {
			s.setReason(j, r)
			continue
		}
		// The profile counts TRES, not where devices sit: a node the plan
		// chose may still refuse the job's per-socket or binding choice
		// (allocate then changes nothing and the job keeps waiting).
		if err := s.allocatePlanned(now, j, e); err != nil {
			continue
		}
		s.mutPending().Delete(j)
		j.Backfilled = true
		s.mutRunning().ReplaceOrInsert(j)
		cyc.Starts = append(cyc.Starts, Start{Job: j.ID, Alloc: copyAlloc(j.Alloc), TimeLimit: j.TimeLimit, Backfill: true})
	}
	for k := range plan.Entries {
		e := &plan.Entries[k]
		j := pjobs[k]
		if j.State != JobPending {
			continue
		}
		if len(e.Components) > 0 {
			s.noteHetPlan(now, e)
			continue
		}
		s.notePending(j)
		switch e.Status {
		case backfill.StatusEstimated:
			if jobs[k].NoEstimate {
				// An extended plan carries the estimate the last plan
				// computed; the job's estimate stands (EstimateInterval)
				// as it was computed then, as a full plan, which only
				// tests such a job for a start now, leaves it.
				j.reserved = false
				break
			}
			j.ExpectedStart, j.EstimatedAt = e.Start, now
			j.planned = append(j.planned[:0], e.Nodes...)
			j.reserved = false
		case backfill.StatusReserved:
			j.ExpectedStart, j.EstimatedAt = e.Start, now
			j.planned = append(j.planned[:0], e.Nodes...)
			j.reserved = true
		case backfill.StatusWaiting:
			j.reserved = false // its estimate (NoEstimate) stands
		default:
			j.clearEstimate()
		}
	}
	// The pending list was built before the backfill starts: drop them and
	// attach expected starts.
	// s.pendJobs holds the job of each entry and is filtered in step.
	out, pend := cyc.Pending[:0], s.pendJobs[:0]
	for k, p := range cyc.Pending {
		j := s.pendJobs[k]
		if j.State != JobPending {
			continue
		}
		p.Reason = j.Reason
		p.ExpectedStart = j.ExpectedStart
		out = append(out, p)
		pend = append(pend, j)
	}
	cyc.Pending = out
	clear(s.pendJobs[len(pend):])
	s.pendJobs = pend
	return nil
}

// allocatePlanned allocates pending job j as the plan's entry e (j's
// own, or its component's of a heterogeneous job) places it: on e's
// nodes, for e's time limit, with the shares of a GRESPerJob spread
// (e.Spread) and the task counts of a task spread (e.Tasks) the plan
// booked, so that the start is the one the plan made room for. On
// failure j keeps its time limit and allocate changed nothing.
func (s *Scheduler) allocatePlanned(now time.Time, j *job, e *backfill.Entry) error {
	quality := 1.0
	if s.graph != nil {
		quality = s.graph.Quality(topology.NodeSetOf(len(s.nodes), e.Nodes...), j.Spec.NVLinkDomain).Score
	}
	s.touch(j)
	limit := j.TimeLimit
	j.TimeLimit = e.TimeLimit
	j.planShares, j.planTasks = e.Spread, e.Tasks
	err := s.allocate(now, j, e.Nodes, quality, time.Time{})
	j.planShares, j.planTasks = nil, nil
	if err != nil {
		j.TimeLimit = limit
	}
	return err
}

// clearEstimate forgets the job's expected start and planned nodes.
func (j *job) clearEstimate() {
	j.ExpectedStart, j.EstimatedAt, j.planned, j.reserved = time.Time{}, time.Time{}, j.planned[:0], false
}

// bfJob is job x as the backfill pass hands it to the planner; sh is the
// job's shape when allowed is its allowed set of this cycle (nil otherwise).
func (s *Scheduler) bfJob(now time.Time, x *job, allowed topology.NodeSet, sh *shape) backfill.Job {
	bj := backfill.Job{
		ID: backfill.JobID(x.ID), Nodes: x.nodes, PerNode: s.claimedPerNode(x), Spread: x.bfSpread, Exclusive: x.Spec.Exclusive || x.exclUser(),
		Allowed: s.userAllowed(x, allowed, sh), TimeLimit: x.TimeLimit, TimeMin: x.Spec.TimeMin,
		Earliest: x.Spec.BeginTime, Eligible: x.EligibleTime, Priority: float64(x.Priority),
		User: x.Spec.User, Partition: x.Partition, Assoc: x.assocKey(),
		NoReserve: s.subjectOf(x).NoReserve(), // QOS NoReserve
	}
	bj.Tasks, bj.PerTask, bj.MaxTasksPerNode = x.bfTasks()
	bj.PlaneSize = x.bfPlane()
	if c := x.constraints(); s.graph != nil && c != (topology.Constraints{}) {
		var relaxed bool
		bj.Chooser, relaxed = s.constrainedChooser(now, x, c)
		bj.ChooserKey = x.chooserKey(c, relaxed)
	} else if ch, key := s.weightChooser(); ch != nil {
		bj.Chooser, bj.ChooserKey = ch, key
	} else if s.graph != nil && s.tiers != nil && !s.bf.customChooser {
		// Weights under a topology: the least-spread choice, lightest
		// nodes first.
		bj.Chooser, bj.ChooserKey = s.baseChoice(x, false), s.tierKey+" topo"
	}
	if x.where != nil {
		s.bfWhere(now, x, &bj)
	}
	if x.shape.reboot.Len() > 0 || s.boot.n > 0 {
		s.bfReboot(now, x, &bj)
	}
	return bj
}

// chooserKey names the job's topology constraint for the planner's shape
// cache (with whether --switches' max-wait relaxed it), built once per
// state rather than at every cycle.
func (x *job) chooserKey(c topology.Constraints, relaxed bool) string {
	k := 0
	if relaxed {
		k = 1
	}
	if x.chooserKeys[k] == "" {
		x.chooserKeys[k] = fmt.Sprintf("%s relaxed=%t", c, relaxed)
	}
	return x.chooserKeys[k]
}

// constrainedChooser returns the node chooser for a job with topology
// constraints: the least-spread choice that meets them, or — once the job
// has waited its --switches max-wait — the best choice at all.
// It also reports whether the constraint is relaxed.
func (s *Scheduler) constrainedChooser(now time.Time, j *job, c topology.Constraints) (backfill.NodeChooser, bool) {
	g := s.graph
	relaxed := j.Spec.SwitchesMaxWait > 0 && !j.EligibleTime.IsZero() && now.Sub(j.EligibleTime) >= j.Spec.SwitchesMaxWait
	if s.tiers != nil {
		return s.baseChoice(j, relaxed), relaxed // weights first (where.go)
	}
	return func(cand topology.NodeSet, n int) []int {
		p, err := g.Select(cand, n, c)
		if err != nil || (!p.Met && !relaxed) {
			return nil
		}
		return p.Nodes.AppendTo(make([]int, 0, n))
	}, relaxed
}

// keptProfile brings the kept profile to now — drop the last plan's
// bookings and the reservation windows, release the jobs that stopped,
// advance the origin, add the jobs that started — or builds a fresh one
// when there is none, when node capacity changed (a node down or back, a
// device failing, a node updated or removed; an added node is grown into
// it instead), or when an update fails. Both give the same profile
// (backfill's Advance is tested against fresh builds). With extend (see
// canExtend) it only advances the origin, keeping the last plan's
// bookings and windows, when no change point of the profile was passed
// since; it reports whether it did.
func (s *Scheduler) keptProfile(now time.Time, extend bool, jobs []backfill.Job) (*backfill.Profile, bool, error) {
	b := s.bf
	ended, started := b.ended, b.started
	b.ended, b.started = b.ended[:0], b.started[:0]
	if p := b.last; p != nil && !b.dirty && !b.rebuild && b.lastClaim1 == s.claim1 {
		if extend {
			if next := p.NextChange(); (next.IsZero() || next.After(now)) && p.Advance(now) == nil {
				return p, true, nil
			}
		}
		if err := s.updateProfile(p, now, ended, started, jobs); err == nil {
			return p, false, nil
		}
	}
	p, err := b.planner.NewProfile(now, s.profileNodes(), s.profileRunning())
	if err != nil {
		return nil, false, fmt.Errorf("scheduler: backfill profile: %w", err)
	}
	b.last, b.dirty, b.lastClaim1 = p, false, s.claim1
	return p, false, nil
}

// canExtend reports whether this cycle's plan can be the last one
// extended with the jobs that joined the queue since (backfill's Extend),
// which then gives exactly what planning every job again would: nothing
// the last plan depended on changed. That holds when the last plan started
// nothing, no job ended or started since, nodes (their number included:
// a node added since grew the kept profile, see growProfile) and
// reservation windows are as they were, the jobs it planned are the head of this cycle's list
// with the same requests, priorities and constraints, and none of them
// reached an expected start or a begin time meanwhile (the kept profile
// also checks that no running job's end or booking was passed). The
// time-dependent knobs bf_min_age_reserve and --time-min stay on the full
// path.
func (s *Scheduler) canExtend(now time.Time, windows []bfWindow, jobs []backfill.Job) bool {
	b := s.bf
	if b.plan == nil || b.rebuild || b.noExtend || b.dirty || len(b.ended) > 0 || len(b.started) > 0 || len(b.plan.Starts) > 0 ||
		b.planner.Config().MinAgeReserve > 0 || len(jobs) < len(b.prevJobs) || now.Before(b.planAt) ||
		b.prevUsable.Len() != s.usable.Len() || !b.prevUsable.Equal(s.usable) ||
		!slices.EqualFunc(windows, b.prevWindows, func(x, y bfWindow) bool {
			return x.id == y.id && x.w == y.w && slices.Equal(x.nodes, y.nodes)
		}) {
		return false
	}
	for x := range b.prevJobs {
		if !sameBFJob(&b.prevJobs[x], &jobs[x]) {
			return false
		}
		if b.prevJobs[x].NoEstimate && !jobs[x].NoEstimate {
			return false // its estimate is due
		}
		j := &jobs[x]
		if j.TimeMin > 0 || (j.Earliest.After(b.planAt) && !j.Earliest.After(now)) {
			return false
		}
		e := &b.plan.Entries[x]
		switch e.Status {
		case backfill.StatusBeyondWindow:
			return false // the window moved with now
		case backfill.StatusReserved, backfill.StatusEstimated:
			if !e.Start.After(now) {
				return false
			}
		}
	}
	return true
}

// sameBFJob reports whether two planner inputs ask the same.
func sameBFJob(x, y *backfill.Job) bool {
	return x.ID == y.ID && x.Nodes == y.Nodes && x.Exclusive == y.Exclusive && x.TimeLimit == y.TimeLimit &&
		x.TimeMin == y.TimeMin && x.Earliest.Equal(y.Earliest) && x.Eligible.Equal(y.Eligible) &&
		x.Priority == y.Priority && x.NoReserve == y.NoReserve && x.User == y.User &&
		x.Partition == y.Partition && x.Assoc == y.Assoc && x.ChooserKey == y.ChooserKey &&
		(x.Chooser == nil) == (y.Chooser == nil) && slices.Equal(x.PerNode, y.PerNode) && slices.Equal(x.Spread, y.Spread) &&
		x.Allowed.Len() == y.Allowed.Len() && x.Allowed.Equal(y.Allowed) &&
		x.Tasks == y.Tasks && x.MaxTasksPerNode == y.MaxTasksPerNode && slices.Equal(x.PerTask, y.PerTask) &&
		x.PlaneSize == y.PlaneSize && slices.Equal(x.Required, y.Required) &&
		slices.EqualFunc(x.Alternatives, y.Alternatives, topology.NodeSet.Equal) &&
		sameBFComponents(x.Components, y.Components)
}

// bfWindow is a reservation window the backfill profile blocks.
type bfWindow struct {
	id    uint64
	w     policy.Window
	nodes []int
}

func (s *Scheduler) updateProfile(p *backfill.Profile, now time.Time, ended []JobID, started []*job, jobs []backfill.Job) error {
	for _, id := range ended {
		if err := p.Release(backfill.JobID(id)); err != nil && !errors.Is(err, backfill.ErrUnknownID) {
			return err
		}
	}
	// The last plan's starts: their bookings become the running jobs
	// (AddStarted replaces a reservation under the same ID), instead of
	// being released with the rest of the plan and booked again.
	for _, j := range started {
		if j.State == JobRunning && p.Has(backfill.JobID(j.ID)) {
			if err := p.AddStarted(s.profileRunningJob(j)); err != nil {
				return err
			}
		}
	}
	if len(jobs) > 0 {
		// The first job's reservation stays: the plan keeps it when it
		// finds it again (in EASY the head job's, which rarely moves).
		p.ReleaseReservationsExcept(jobs[0].ID)
	} else {
		p.ReleaseReservations()
	}
	p.ReleaseBlocks()
	if err := p.Advance(now); err != nil {
		return err
	}
	for _, j := range started {
		if j.State != JobRunning || p.Has(backfill.JobID(j.ID)) {
			continue // ended again since, or already added
		}
		if err := p.AddStarted(s.profileRunningJob(j)); err != nil {
			return err
		}
	}
	return nil
}

// profileRunningJob is running job j as the profile holds it.
func (s *Scheduler) profileRunningJob(j *job) backfill.Running {
	return backfill.Running{ID: backfill.JobID(j.ID), End: j.deadline, Allocs: s.profileUse(j)}
}

// noteStarted and noteEnded record job changes for the kept profile.
// A job holding devices on nodes that share them changes the profile's
// view of the other jobs there too (noteShared).
func (s *Scheduler) noteStarted(j *job) {
	if s.bf != nil {
		s.bf.started = append(s.bf.started, j)
	}
	s.noteShared(j)
}

func (s *Scheduler) noteEnded(j *job) {
	if s.bf != nil {
		s.bf.ended = append(s.bf.ended, j.ID)
	}
	s.noteShared(j)
}

// noteCapacity marks the kept profile stale (node capacity changed).
// readableProfile returns the profile kept from the last backfill pass for
// reading between cycles (Explain, IdleCapacity), or nil without one or
// when it does not cover every node (nodes were added since and the next
// cycle rebuilds it): readers then build what they need on demand.
func (s *Scheduler) readableProfile() *backfill.Profile {
	if s.bf == nil || s.bf.last == nil || s.bf.last.NumNodes() != len(s.nodes) || s.bf.lastClaim1 != s.claim1 {
		return nil
	}
	return s.bf.last
}

func (s *Scheduler) noteCapacity() {
	s.shareGen++ // what devices hold may have changed too (a suspension)
	if s.bf != nil {
		s.bf.dirty = true
	}
}

// assocKey is the job's association as the backfill planner groups jobs
// (bf_max_job_assoc), computed once.
func (j *job) assocKey() string {
	if j.assoc == "" {
		j.assoc = j.Spec.Account + "/" + j.Spec.User
	}
	return j.assoc
}
