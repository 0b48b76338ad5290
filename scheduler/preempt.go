package scheduler

import (
	"slices"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// Preemption is the decision to preempt a running job for a pending one.
type Preemption struct {
	// Victim is the preempted job; Preemptor the job it makes room for.
	Victim, Preemptor JobID
	// Action is CANCEL (the victim ends PREEMPTED), REQUEUE (it goes back
	// to the queue) or SUSPEND (it keeps its memory and devices, lends its
	// CPUs, and resumes later; see Cycle.Resumed).
	Action policy.PreemptAction
	// KillAt is when the victim's resources are free: now, or now plus
	// its GraceTime (the caller signals it now and kills it then).
	KillAt time.Time
	// LostGPUSeconds and LostCPUSeconds are the work lost since the
	// victim's last checkpoint.
	LostGPUSeconds, LostCPUSeconds float64
}

// preemptionOn reports whether preemption is configured.
func (s *Scheduler) preemptionOn() bool {
	return s.pol != nil && s.pol.p.Config().PreemptType != policy.PreemptNone
}

// checkpointJob records a checkpoint of running job id (see Checkpoint).
func (s *Scheduler) checkpointJob(now time.Time, id JobID) error {
	j, err := s.runningJob(now, id, "checkpoint")
	if err != nil {
		return err
	}
	j.LastCheckpoint = now
	s.last = now
	return nil
}

// tryPreempt looks for the cheapest set of running jobs whose preemption
// lets j start on its capable, usable nodes, and applies it: victims whose
// grace time is zero are ended or requeued now, the others get a deadline
// at their KillAt. It reports whether j can start now (all victims freed
// immediately); otherwise j waits for them.
func (s *Scheduler) tryPreempt(now time.Time, j *job, cyc *Cycle) bool {
	allowed := s.activeOnly(j.shape, s.allowedNodes(j.shape))
	pre := policy.Preemptor{Subject: s.subjectOf(j), Priority: j.Priority, Nodes: allowed}
	gpuID, hasGPU := s.reg.Lookup("gres/gpu")
	var cands []policy.Candidate
	var cjobs []*job
	s.running.Ascend(func(r *job) bool {
		if !s.subjectOf(r).Valid() || r.preempting {
			return true
		}
		on := false
		for _, na := range r.Alloc.Nodes {
			if allowed.Has(na.Node) {
				on = true
				break
			}
		}
		if !on {
			return true
		}
		s.sum = r.Alloc.sumInto(s.sum)
		tot := s.sum
		c := policy.Candidate{
			Job: policy.JobID(r.ID), Subject: s.subjectOf(r), Priority: r.Priority, Start: r.StartTime,
			LastCheckpoint: r.LastCheckpoint, CheckpointInterval: r.Spec.CheckpointInterval,
			Requeue: s.requeueable(r), CPUs: tot[gres.CPU],
		}
		if hasGPU {
			c.GPUs = tot.At(gpuID)
		}
		for _, na := range r.Alloc.Nodes {
			c.Nodes = append(c.Nodes, na.Node)
		}
		cands = append(cands, c)
		cjobs = append(cjobs, r)
		return true
	})
	if len(cands) == 0 {
		return false
	}
	fits := func(vs []policy.Victim) bool {
		return s.fitsWithout(now, j, allowed, vs, cjobs)
	}
	plan, ok := s.pol.p.PreemptVictims(now, pre, cands, fits)
	if !ok {
		return false
	}
	ready := true
	for _, v := range plan.Victims {
		r := cjobs[v.Index]
		cyc.Preemptions = append(cyc.Preemptions, Preemption{
			Victim: r.ID, Preemptor: j.ID, Action: v.Action, KillAt: v.KillAt,
			LostGPUSeconds: v.LostGPUSeconds, LostCPUSeconds: v.LostCPUSeconds,
		})
		s.touch(r)
		r.LostGPUSeconds += v.LostGPUSeconds
		r.LostWorkGPUSeconds += v.LostGPUSeconds
		if v.Action == policy.ActionSuspend {
			s.suspend(now, r, j.ID)
			continue
		}
		if v.KillAt.After(now) {
			// Signalled now, killed at KillAt: the cycle at or after then
			// ends it (see endExpired). The preemptor waits for it, first
			// in the queue.
			ready = false
			r.preemptedFor = j.ID
			s.touch(j)
			j.awaitingVictims++
			r.preempting = true
			r.preemptAction = v.Action
			s.mutRunning().Delete(r)
			r.deadline = v.KillAt
			s.mutRunning().ReplaceOrInsert(r)
			s.noteEnded(r) // its end moved: the kept profile re-adds it
			s.noteStarted(r)
			if r.Alloc.OverSubscribe > 1 {
				s.sharersChanged(r) // which sharer holds a shared CPU longest may change
			}
			continue
		}
		s.endPreempted(now, r, v.Action)
	}
	if j.awaitingVictims > 0 && !j.preemptFirst {
		s.rekey = append(s.rekey, j) // first in the queue after the pass
	}
	return ready
}

// endPreempted ends (CANCEL) or requeues (REQUEUE) a preempted job now.
func (s *Scheduler) endPreempted(now time.Time, r *job, action policy.PreemptAction) {
	s.touch(r)
	if p, ok := s.jobs[r.preemptedFor]; ok && p.awaitingVictims > 0 {
		s.touch(p)
		p.awaitingVictims--
	}
	r.preemptedFor = 0
	// preempting stays set through the requeue or end, so that its loss,
	// counted by the preemption, is not counted again (noteLostRun).
	r.preempting = true
	if action == policy.ActionRequeue {
		s.requeue(now, r, policy.ReasonPreempted)
	} else {
		s.endJob(r, JobPreempted, now)
		r.Reason = policy.ReasonPreempted
	}
	r.preempting = false
}

// fitsWithout reports whether j could start on allowed if the given
// victims' resources were free, by placement's rule: enough nodes hold
// its per-node request and, for a GRESPerJob (--gpus) total, the nodes
// place would choose hold the whole total spread over them (choosePerJob),
// so that victims are taken until the preemptor truly fits. It changes
// nothing.
func (s *Scheduler) fitsWithout(now time.Time, j *job, allowed topology.NodeSet, vs []policy.Victim, cjobs []*job) bool {
	extra := map[int]gres.Vector{}
	busy := map[int]int{} // node → jobs left on it
	shares := map[int][]freedAlloc{}
	for _, v := range vs {
		for _, na := range cjobs[v.Index].Alloc.Nodes {
			shares[na.Node] = append(shares[na.Node], freedAlloc{job: cjobs[v.Index].ID, na: na, suspend: v.Action == policy.ActionSuspend})
			e, ok := extra[na.Node]
			if !ok {
				e = s.reg.NewVector()
				extra[na.Node] = e
				busy[na.Node] = len(s.nodes[na.Node].jobs)
			}
			if v.Action == policy.ActionSuspend {
				// A suspended job lends only its CPUs and stays on the node.
				e[gres.CPU] += na.TRES[gres.CPU]
				continue
			}
			_ = e.AddInPlace(na.TRES)
			busy[na.Node]--
		}
	}
	fit := topology.NewNodeSet(len(s.nodes))
	freed := make(map[int]gres.Vector, len(extra)) // the freed nodes' free resources
	k := 0
	for i := allowed.Next(0); i >= 0; i = allowed.Next(i + 1) {
		n := &s.nodes[i]
		ok := false
		if e, isFreed := extra[i]; isFreed {
			// An exclusive job needs the node idle once the victims are
			// gone, and its own request must fit there, as in fitsNow.
			f, _ := n.free.Add(e)
			f[gres.Node] = n.free[gres.Node]
			freed[i] = f
			ok = (!j.Spec.Exclusive || busy[i] == 0) && j.perNode.Fits(f)
			if ok && (j.choiceDecides(n) || n.exclUsers > 0 || j.exclUser()) {
				// Where the freed devices sit decides, as in fitsNow.
				ok = s.fitsFreed(j, n, f, shares[i])
			}
		} else {
			ok = s.fitsNow(j, i)
		}
		if ok {
			fit.Add(i)
			k++
		}
	}
	if k < j.nodes {
		return false
	}
	if j.where != nil && j.tasks != nil {
		// Where and tasks (where_tasks.go): the nodes place would choose,
		// holding every task, on the freed resources.
		return s.withFree(freed, func() bool {
			return s.whereTasks(j, fit, s.baseChoice(j, switchesRelaxed(now, j)), s.freeRoom(j)) != nil
		})
	}
	if j.where != nil && s.chooseWhere(j, fit, j.nodes, s.baseChoice(j, switchesRelaxed(now, j))) == nil {
		return false // its required nodes, matching OR, counts (where.go)
	}
	if j.tasks != nil {
		// Tasks: the nodes place would choose, holding every task, on the
		// freed resources.
		return s.withFree(freed, func() bool { nodes, _ := s.chooseTasks(now, j, fit, nil); return nodes != nil })
	}
	if len(j.extra) > 0 {
		// A GRESPerJob total: the nodes place would choose, and the total
		// spread over them, on the freed resources — not only one per node.
		return s.withFree(freed, func() bool { return s.choosePerJob(j, fit) != nil })
	}
	if s.graph != nil {
		p, err := s.graph.Select(fit, j.nodes, j.constraints())
		return err == nil && p.Met
	}
	return true
}

// freedAlloc is a victim's share of a node (of job), and whether it is only
// suspended (lending its CPUs, keeping its devices).
type freedAlloc struct {
	job     JobID
	na      NodeAlloc
	suspend bool
}

// fitsFreed reports whether the job's choice of CPUs and devices on node
// n succeeds once the victims' shares are freed (free resources f). It
// plans on a copy of the node: n is not changed.
func (s *Scheduler) fitsFreed(j *job, n *node, f gres.Vector, victims []freedAlloc) bool {
	tmp := *n
	tmp.free = f
	tmp.cpuUsed = slices.Clone(n.cpuUsed)
	if n.devs != nil {
		tmp.devs = n.devs.Clone()
	}
	tmp.jobs = slices.Clone(n.jobs)
	if n.sharing > 0 {
		s.freedShared(n, &tmp, victims)
	}
	for _, v := range victims {
		if n.sharing == 0 {
			tmp.releaseCPUs(v.na.CPUs)
		}
		if !v.suspend {
			if tmp.devs != nil && len(v.na.Devices) > 0 {
				_ = tmp.devs.Release(v.na.Devices) // held by the victim: in use
			}
			if tmp.devs != nil && len(v.na.Shares) > 0 {
				_ = tmp.devs.ReleaseShares(v.na.Shares) // held by the victim
			}
			tmp.removeJob(v.job)
		}
	}
	_, ok := s.planNode(j, &tmp, nil)
	return ok
}

// suspend suspends running job r for preemptor pre: its CPUs go back to
// the nodes, its memory and devices stay allocated, and its remaining run
// time is kept for when it resumes.
func (s *Scheduler) suspend(now time.Time, r *job, pre JobID) {
	s.touch(r)
	r.suspendedCPUs = make([]int64, len(r.Alloc.Nodes))
	for k := range r.Alloc.Nodes {
		na := &r.Alloc.Nodes[k]
		s.saveNode(na.Node)
		n := &s.nodes[na.Node]
		freed := s.dropCPUs(n, r.ID, na.CPUs) // a CPU another job shares stays held
		r.suspendedCPUs[k] = na.TRES[gres.CPU]
		n.free[gres.CPU] += max(na.TRES[gres.CPU]-(int64(len(na.CPUs))-freed), 0)
		na.TRES[gres.CPU], na.CPUs = 0, nil
	}
	s.mutRunning().Delete(r)
	r.State, r.Reason = JobSuspended, policy.ReasonPreempted
	r.remaining = max(r.deadline.Sub(now), 0)
	r.suspendedBy = pre
	r.bfUse = nil
	s.suspended = append(s.suspended, r)
	s.noteCapacity() // the kept profile cannot express "held until resumed"
	if r.Alloc.OverSubscribe > 1 {
		s.sharersChanged(r) // it no longer holds shared CPUs (sharedCPUUse)
	}
}

// resumeSuspended resumes, in suspension order, every suspended job whose
// preemptor is no longer running and whose CPUs are free again on all its
// nodes (taken close to its devices). Its time limit runs on from where
// it stopped.
func (s *Scheduler) resumeSuspended(now time.Time, cyc *Cycle) {
	if len(s.suspended) == 0 {
		return
	}
	kept := s.suspended[:0]
	for _, r := range s.suspended {
		if p, ok := s.jobs[r.suspendedBy]; ok && p.State == JobRunning {
			kept = append(kept, r)
			continue
		}
		ok := true
		for k, na := range r.Alloc.Nodes {
			n := &s.nodes[na.Node]
			if n.free[gres.CPU] < r.suspendedCPUs[k] {
				ok = false
				break
			}
		}
		if !ok {
			kept = append(kept, r)
			continue
		}
		s.touch(r)
		for k := range r.Alloc.Nodes {
			na := &r.Alloc.Nodes[k]
			s.saveNode(na.Node)
			n := &s.nodes[na.Node]
			var near gres.CoreSet
			for _, d := range na.Devices {
				near = near.Union(n.devCores[d])
			}
			want := int(r.suspendedCPUs[k])
			units := want / max(n.lay.unitSize(s.crUnit), 1) // its CPUs were whole units (crunit.go)
			if na.CPUs = n.selectUnits(make([]int, 0, want), s.crUnit, cpuRequestOf(r, want, near, false), units); len(na.CPUs) < want {
				na.CPUs = n.freeCPUs(want, near, false) // one thread per core no longer fits: any free CPUs
			}
			n.markCPUs(na.CPUs)
			na.TRES[gres.CPU] = r.suspendedCPUs[k]
			n.free[gres.CPU] -= r.suspendedCPUs[k]
		}
		r.State, r.Reason = JobRunning, policy.ReasonNone
		r.deadline = now.Add(r.remaining)
		r.suspendedBy, r.suspendedCPUs, r.bfUse = 0, nil, nil
		s.mutRunning().ReplaceOrInsert(r)
		s.noteCapacity()
		if r.Alloc.OverSubscribe > 1 {
			s.sharersChanged(r) // it holds CPUs again (sharedCPUUse)
		}
		cyc.Resumed = append(cyc.Resumed, r.ID)
	}
	s.suspended = kept
}
