package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// polState is the scheduler's policy state: the compiled policy (QOS,
// associations, partition rules, limits), the usage counters the limits
// are checked against, and the advance reservations.
type polState struct {
	p     *policy.Policy
	usage *policy.Usage
	resv  *policy.Reservations
	// forbidden is scratch for reservation checks.
	forbidden topology.NodeSet
	// singletons counts running jobs per (user, name), for the singleton
	// dependency.
	singletons map[[2]string]int
	// gen counts the policy changes (runtime administration); a job's
	// subject of an older generation is rebased when read (subjectOf).
	// compacted is the generation of the last pass that rebased every
	// job's subject.
	gen, compacted uint64
}

// resvIDBase numbers the profile blocks that stand for reservation windows
// in the backfill plan, far above any job ID.
const resvIDBase = 1 << 62

func (s *Scheduler) initPolicy(cfg policy.Config, parts []PartitionConfig) error {
	if len(cfg.Partitions) != 0 {
		return fmt.Errorf("%w: policy: set partition policy on Config.Partitions, not Config.Policy.Partitions", ErrInvalidConfig)
	}
	for i := range parts {
		cfg.Partitions = append(cfg.Partitions, parts[i].policyPartition())
	}
	p, err := policy.New(s.reg, cfg)
	if err != nil {
		return fmt.Errorf("%w: policy: %w", ErrInvalidConfig, err)
	}

	s.pol = &polState{
		p: p, usage: p.NewUsage(), resv: policy.NewReservations(len(s.nodes)),
		forbidden: topology.NewNodeSet(len(s.nodes)), singletons: map[[2]string]int{},
	}
	return nil
}

// Policy returns the compiled policy, or nil when Config.Policy is unset.
func (s *Scheduler) Policy() *policy.Policy {
	if s.pol == nil {
		return nil
	}
	return s.pol.p
}

// policyRequest is what the limit checks see of a job.
func (s *Scheduler) policyRequest(j *job) policy.Request {
	total, _ := j.totalRequest() // bounded at submit
	return policy.Request{
		Subject: s.subjectOf(j), TRES: s.addLicenseTRES(j, total), PerNode: j.perNode, Nodes: j.nodes,
		TimeLimit: j.TimeLimit, Reservation: j.Spec.Reservation,
	}
}

// policyRef is the job's identity as the policy resolves it: user,
// account, partition and QOS.
func (j *job) policyRef() policy.JobRef {
	return policy.JobRef{User: j.Spec.User, Account: j.Spec.Account, Partition: j.Partition, QOS: j.Spec.QOS}
}

// admitPolicy runs the submit-time policy checks of a new job: its
// association, QOS and partition resolve, it may use them, the limits that
// reject at submit (DenyOnLimit, MaxSubmit*) hold, its reservation exists
// and admits it, and its dependency parses and can still be met. self is
// the job's ID (an array's first task's), which its dependency may not
// name.
func (s *Scheduler) admitPolicy(j *job, self JobID, tasks int) error {
	if j.Spec.Dependency != "" {
		d, err := policy.ParseDependency(j.Spec.Dependency)
		if err != nil {
			return fmt.Errorf("%w: Dependency: %w", ErrInvalidJob, err)
		}
		if err := policy.CheckDependency(policy.JobID(self), d, s.depOutcomes); err != nil {
			return fmt.Errorf("%w: Dependency: %w", ErrInvalidJob, err)
		}
		j.dep = d
	}
	if s.pol == nil {
		if j.Spec.Reservation != "" {
			return fmt.Errorf("%w: reservation %q: the scheduler has no policy (Config.Policy) and so no reservations", ErrInvalidJob, j.Spec.Reservation)
		}
		return nil
	}
	subj, err := s.pol.p.Resolve(j.policyRef())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidJob, err)
	}
	j.subject, j.subjGen = subj, s.pol.gen
	j.Spec.QOS = subj.Ref().QOS
	j.preemptRank = subj.PreemptRank()
	req := s.policyRequest(j)
	req.Tasks = tasks
	if err := s.pol.p.CheckSubmit(&req, s.pol.usage); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidJob, err)
	}
	if err := s.pol.resv.CheckAccess(j.resvJob()); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidJob, err)
	}
	return nil
}

// outcome reports what a job has done, for dependencies.
func (s *Scheduler) outcome(id policy.JobID) (policy.Outcome, bool) {
	j, ok := s.jobs[JobID(id)]
	if !ok {
		return s.purgedOutcome(JobID(id))
	}
	switch j.State {
	case JobPending:
		return policy.OutcomePending, true
	case JobRunning, JobSuspended:
		// A suspended job has not ended (preempted in SUSPEND mode, or
		// suspended by SuspendJob): its dependents wait.
		return policy.OutcomeRunning, true
	case JobCompleted:
		return policy.OutcomeCompleted, true
	case JobCancelled:
		return policy.OutcomeCancelled, true
	}
	return policy.OutcomeFailed, true
}

// partitionLimits reports whether job j breaks its partition's MaxTime
// (overTime) or MinNodes/MaxNodes (outNodes), the partition checks the
// main pass and Explain make before any policy limit. A limit the job's
// QOS overrides (flags PartitionTimeLimit, PartitionMinNodes,
// PartitionMaxNodes) does not count; the QOS's own limits still hold the
// job (checkPolicy).
func (s *Scheduler) partitionLimits(j *job) (overTime, outNodes bool) {
	pc := &s.parts[j.part].cfg
	overTime = pc.MaxTime > 0 && j.TimeLimit > pc.MaxTime
	under, over := j.nodes < pc.MinNodes, pc.MaxNodes > 0 && j.nodes > pc.MaxNodes
	if !overTime && !under && !over {
		return false, false // within every limit: no flag to look up
	}
	ov := s.subjectOf(j).PartitionOverrides() // zero without a policy
	overTime = overTime && !ov.Has(policy.QOSPartitionTimeLimit)
	outNodes = (under && !ov.Has(policy.QOSPartitionMinNodes)) || (over && !ov.Has(policy.QOSPartitionMaxNodes))
	return overTime, outNodes
}

// depOutcomes reports what the jobs one dependency element names have
// done: job ref.ID alone; every task when ref.ID is a job array's ID (as
// in Slurm, a dependency on an array is on all its tasks); the one task
// ref names ("12_3"). It reads every task of an array, purged ones
// included.
func (s *Scheduler) depOutcomes(ref policy.DepJob) (policy.Outcomes, bool) {
	if c, ok := s.hetOutcomes(ref); ok {
		return c, true
	}
	a := s.arrays[JobID(ref.ID)]
	if ref.HasTask {
		if a == nil {
			return policy.Outcomes{}, false
		}
		k, found := slices.BinarySearch(a.indices, ref.Task)
		if !found {
			return policy.Outcomes{}, false
		}
		o, ok := s.outcome(ref.ID + policy.JobID(k))
		return policy.OneOutcome(o), ok
	}
	if a == nil {
		o, ok := s.outcome(ref.ID)
		return policy.OneOutcome(o), ok
	}
	var c policy.Outcomes
	for k := range a.indices {
		if o, ok := s.outcome(ref.ID + policy.JobID(k)); ok {
			c[o]++
		}
	}
	return c, true
}

// checkPolicy returns why a job may not start now for policy reasons
// (dependency, array throttle, limits: the first in that order, limits in
// Slurm's hierarchy order; explanations ask the policy for all of them),
// or ReasonNone.
func (s *Scheduler) checkPolicy(now time.Time, j *job) policy.Reason {
	if b, blocked := s.depBlocker(j); blocked {
		return b.Reason
	}
	return s.checkLimits(now, j)
}

// checkLimits is checkPolicy without the dependency: the array throttle,
// then the limits.
func (s *Scheduler) checkLimits(now time.Time, j *job) policy.Reason {
	if b, held := s.arrayBlocker(j); held {
		return b.Reason
	}
	if s.pol == nil {
		return policy.ReasonNone
	}
	req := s.policyRequest(j)
	if b := s.pol.p.CheckStart(now, &req, s.pol.usage); b.Blocked() {
		return b.Reason
	}
	return policy.ReasonNone
}

// arrayBlocker reports the throttle of job j's array when it holds the
// job: as many of the array's tasks run as its %N allows.
func (s *Scheduler) arrayBlocker(j *job) (policy.Blocker, bool) {
	if j.ArrayJobID == 0 {
		return policy.Blocker{}, false // not an array task: no array has ID 0
	}
	a := s.arrays[j.ArrayJobID]
	if a == nil {
		return policy.Blocker{}, false
	}
	b := policy.ArraySpec{Throttle: a.throttle}.ThrottleBlocker(a.running)
	return b, b.Blocked()
}

// depBlocker evaluates the job's dependency (singleton terms clear when
// no job of the same user and name runs) and reports the blocker when it
// is not satisfied.
func (s *Scheduler) depBlocker(j *job) (policy.Blocker, bool) {
	if j.dep.IsZero() {
		return policy.Blocker{}, false
	}
	clear := s.pol == nil || s.pol.singletons[[2]string{j.Spec.User, j.Spec.Name}] == 0
	st, b := j.dep.Evaluate(s.depOutcomes, clear)
	return b, st != policy.DepSatisfied
}

// constrainByReservations removes from cand the nodes reservations forbid
// to the job if it started now, and returns the reservation window's end
// (the job's kill time; zero for none) or the reason it cannot start now.
// With magneticOnly (a job naming no reservation, in its MAGNETIC turn)
// only the MAGNETIC reservations that admit it are tried: cand is emptied
// when none holds enough of its nodes.
func (s *Scheduler) constrainByReservations(now time.Time, j *job, cand topology.NodeSet, magneticOnly bool) (time.Time, policy.Reason) {
	if s.pol == nil || s.pol.resv.Len() == 0 {
		return time.Time{}, policy.ReasonNone
	}
	rj := j.resvJob()
	// Jobs outside reservations must keep off reserved nodes for their
	// whole limit.
	wall := j.TimeLimit
	if rj.Reservation == "" {
		// MAGNETIC reservations that admit the job are tried first.
		for _, name := range s.pol.resv.Usable(rj) {
			if dl, b, n := s.tryMagnetic(now, rj, name, cand, s.pol.forbidden); !b.Blocked() && n >= j.nodes {
				cand.Subtract(s.pol.forbidden)
				return dl, policy.ReasonNone
			}
		}
		if magneticOnly {
			cand.Reset()
			return time.Time{}, policy.ReasonNone
		}
	} else {
		wall = insideWall
	}
	dl, b := s.pol.resv.Constrain(rj, now, wall, s.pol.forbidden)
	if b.Blocked() {
		return time.Time{}, b.Reason
	}
	cand.Subtract(s.pol.forbidden)
	return dl, policy.ReasonNone
}

// insideWall is the wall a job inside a reservation is checked for: it
// may start while the window is open and is ended at the window's end,
// whatever its own limit.
const insideWall = time.Second

// resvJob is what reservations see of job j.
func (j *job) resvJob() policy.ResvJob {
	return policy.ResvJob{User: j.Spec.User, Account: j.Spec.Account, Reservation: j.Spec.Reservation}
}

// tryMagnetic checks job rj, which names no reservation, inside MAGNETIC
// reservation name at now, as the main pass tries it before keeping the
// job off reserved nodes: forbidden gets the nodes the job may not use in
// it, and n counts the nodes of cand left to it. A blocked b says why the
// reservation cannot take the job now (n is then zero).
func (s *Scheduler) tryMagnetic(now time.Time, rj policy.ResvJob, name string, cand, forbidden topology.NodeSet) (deadline time.Time, b policy.Blocker, n int) {
	rj.Reservation = name
	if deadline, b = s.pol.resv.Constrain(rj, now, insideWall, forbidden); b.Blocked() {
		return deadline, b, 0
	}
	return deadline, b, cand.Count() - cand.IntersectionCount(forbidden)
}

// policyStart records a started job in the usage counters; total is its
// allocation's Total (the usage keeps a copy).
func (s *Scheduler) policyStart(j *job, total gres.Vector) {
	if s.pol == nil {
		return
	}
	k := [2]string{j.Spec.User, j.Spec.Name}
	s.pol.singletons[k]++
	if err := s.pol.usage.StartJob(policy.JobID(j.ID), total, len(j.Alloc.Nodes), j.deadline); err != nil {
		panic(fmt.Sprintf("scheduler: policy usage: start job %d: %v", j.ID, err))
	}
	j.usageTotal, j.usageEnd = total.Clone(), j.deadline
	s.onUndo(func() {
		s.dropSingleton(k)
		_ = s.pol.usage.StopJob(policy.JobID(j.ID)) // counted a moment ago
	})
}

// dropSingleton counts one running job fewer for the singleton key k.
func (s *Scheduler) dropSingleton(k [2]string) {
	if s.pol.singletons[k]--; s.pol.singletons[k] <= 0 {
		delete(s.pol.singletons, k)
	}
}

// policyStop records that a running job stopped; ended says whether it
// also leaves the queue (finished, cancelled) rather than being requeued.
func (s *Scheduler) policyStop(j *job, wasRunning, ended bool) {
	if s.pol == nil {
		return
	}
	k := [2]string{j.Spec.User, j.Spec.Name}
	if wasRunning {
		s.dropSingleton(k)
	}
	var err error
	switch {
	case ended:
		err = s.pol.usage.RemoveJob(policy.JobID(j.ID))
	case wasRunning:
		err = s.pol.usage.StopJob(policy.JobID(j.ID))
	}
	if err != nil && !errors.Is(err, policy.ErrUnknownJob) {
		panic(fmt.Sprintf("scheduler: policy usage: stop job %d: %v", j.ID, err))
	}
	if err != nil || !s.jr.on {
		return
	}
	// Taking the stop back counts the job as it was counted: submitted,
	// and running with what policyStart gave the usage.
	id, sub, total, end, nodes := policy.JobID(j.ID), s.subjectOf(j), j.usageTotal, j.usageEnd, len(j.Alloc.Nodes)
	s.onUndo(func() {
		if ended {
			_ = s.pol.usage.AddJob(id, sub) // removed a moment ago
		}
		if wasRunning {
			s.pol.singletons[k]++
			_ = s.pol.usage.StartJob(id, total, nodes, end)
		}
	})
}

// AddReservation creates an advance reservation. Nodes may be given
// (Reservation.Nodes, indices of Config.Nodes), or chosen by the scheduler:
// NodeCount nodes each offering TRES, or enough nodes to hold TRES in
// total, among the nodes that are up — least-spread when the cluster has
// a topology. Unless the reservation has the IGNORE_JOBS flag, a node
// where a job still runs when the reservation's first window opens (by
// its time limit; a suspended job always) is busy, as in Slurm: named
// nodes that are busy refuse the reservation (policy.ErrNodesBusy), and
// busy nodes are never chosen. Overlapping reservations need the OVERLAP
// or MAINT flag. Jobs already running on reserved nodes (IGNORE_JOBS)
// keep running.
func (s *Scheduler) AddReservation(now time.Time, r policy.Reservation) error {
	_, err := s.Apply(now, AddReservationEvent{Reservation: r})
	return err
}

// addReservation is the AddReservationEvent (see AddReservation).
func (s *Scheduler) addReservation(now time.Time, r policy.Reservation) error {
	if err := s.tick(now); err != nil {
		return err
	}
	if s.pol == nil {
		return fmt.Errorf("%w: reservations need a policy (Config.Policy)", ErrInvalidConfig)
	}
	if r.Nodes.Intersects(s.removed) {
		return fmt.Errorf("%w: reservation %q: names removed node(s) %v", ErrUnknownNode, r.Name, r.Nodes.And(s.removed).AppendTo(nil))
	}
	busy, err := s.reservationBusy(now, &r)
	if err != nil {
		return fmt.Errorf("scheduler: reservation %q: %w", r.Name, err)
	}
	if r.Nodes.Intersects(busy) {
		return fmt.Errorf("scheduler: reservation %q: %w: jobs run on %s past the window's start (set IGNORE_JOBS to reserve them anyway)",
			r.Name, policy.ErrNodesBusy, strings.Join(s.nodeNames(r.Nodes.And(busy).AppendTo(nil)), ","))
	}
	choose := func(rv *policy.Reservation, count int, exclude topology.NodeSet) (topology.NodeSet, error) {
		exclude = exclude.Clone()
		exclude.UnionWith(busy)
		return s.chooseReservationNodes(rv, count, exclude)
	}
	if err := s.pol.resv.Add(r, choose); err != nil {
		return fmt.Errorf("scheduler: reservation %q: %w", r.Name, err)
	}
	s.policyVersion = ""
	s.last = now
	return nil
}

// RemoveReservation deletes a reservation. Jobs that named it stay pending
// with reason ReservationDeleted.
func (s *Scheduler) RemoveReservation(now time.Time, name string) error {
	_, err := s.Apply(now, RemoveReservationEvent{Name: name})
	return err
}

// removeReservation is the RemoveReservationEvent (see RemoveReservation).
func (s *Scheduler) removeReservation(now time.Time, name string) error {
	if err := s.tick(now); err != nil {
		return err
	}
	if s.pol == nil {
		return fmt.Errorf("%w: reservations need a policy (Config.Policy)", ErrInvalidConfig)
	}
	if err := s.pol.resv.Remove(name); err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	s.policyVersion = ""
	s.last = now
	return nil
}

// Reservations returns the advance reservations, by name.
func (s *Scheduler) Reservations() []policy.Reservation {
	if s.pol == nil {
		return nil
	}
	return s.pol.resv.All()
}

// reservationBusy returns the nodes reservation r may not take: those
// running a job that still runs when r's first window after now opens (a
// suspended job whatever its limit) — none when r has IGNORE_JOBS or no
// window left. The named-node and the chosen-node paths of AddReservation
// both ask this one set. Errors are r's validation errors.
func (s *Scheduler) reservationBusy(now time.Time, r *policy.Reservation) (topology.NodeSet, error) {
	busy := topology.NewNodeSet(len(s.nodes))
	w, ok, err := s.pol.resv.NextWindow(*r, now)
	if err != nil || !ok || r.Flags.Has(policy.ResvIgnoreJobs) {
		return busy, err
	}
	for i := range s.nodes {
		for _, id := range s.nodes[i].jobs {
			if j := s.jobs[id]; j != nil && (j.State == JobSuspended || j.deadline.After(w.Start)) {
				busy.Add(i)
				break
			}
		}
	}
	return busy, nil
}

// chooseReservationNodes is the node chooser for reservations given by
// count or TRES: nodes that are up and not in exclude (other
// reservations' nodes, and the nodes busy with jobs, reservationBusy).
func (s *Scheduler) chooseReservationNodes(r *policy.Reservation, count int, exclude topology.NodeSet) (topology.NodeSet, error) {
	cand := topology.NewNodeSet(len(s.nodes))
	for i := range s.nodes {
		n := &s.nodes[i]
		if exclude.Has(i) || !s.usable.Has(i) {
			continue
		}
		if count > 0 && !r.TRES.Fits(n.capacity) {
			continue
		}
		cand.Add(i)
	}
	if count == 0 {
		// Enough nodes to hold r.TRES in total, in allocation order
		// (lightest first, then by index).
		need := r.TRES.Clone()
		out := topology.NewNodeSet(len(s.nodes))
		s.byWeight(cand, func(i int) bool {
			if need.IsZero() {
				return false
			}
			out.Add(i)
			for k := range need {
				need[k] = max(0, need[k]-s.nodes[i].capacity.At(gres.ID(k)))
			}
			need[gres.Node] = 0
			return true
		})
		if !need.IsZero() {
			return topology.NodeSet{}, fmt.Errorf("not enough free nodes to hold %s", s.reg.FormatTRES(r.TRES))
		}
		return out, nil
	}
	if cand.Count() < count {
		return topology.NodeSet{}, fmt.Errorf("%d node(s) wanted, %d free and able", count, cand.Count())
	}
	if s.graph != nil {
		p, err := s.graph.Select(cand, count, topology.Constraints{})
		if err != nil {
			return topology.NodeSet{}, err
		}
		return p.Nodes, nil
	}
	return topology.NodeSetOf(len(s.nodes), s.firstByWeight(cand, count)...), nil
}

// reservationWindows calls fn for every reservation window overlapping
// [now, end), with a unique profile block ID and the reserved nodes.
func (s *Scheduler) reservationWindows(now, end time.Time, fn func(id uint64, w policy.Window, nodes []int) error) error {
	if s.pol == nil {
		return nil
	}
	id := uint64(resvIDBase)
	for _, r := range s.pol.resv.All() {
		ws, err := s.pol.resv.Windows(r.Name, now, end, nil)
		if err != nil {
			return err
		}
		nodes := r.Nodes.AppendTo(nil)
		for _, w := range ws {
			id++
			if err := fn(id, w, nodes); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkExclusiveLimits checks the limits of a whole-node job against what
// it would really hold on the chosen nodes (everything they offer), as
// Slurm checks the allocation after node selection.
func (s *Scheduler) checkExclusiveLimits(now time.Time, j *job, nodes []int) policy.Reason {
	if s.pol == nil || !j.Spec.Exclusive {
		return policy.ReasonNone
	}
	req := s.policyRequest(j)
	req.TRES = s.reg.NewVector()
	req.PerNode = s.reg.NewVector()
	for _, i := range nodes {
		f := s.nodes[i].free
		_ = req.TRES.AddInPlace(f) // bounded by node capacities
		for k := range f {
			req.PerNode[k] = max(req.PerNode[k], f[k])
		}
	}
	req.TRES[gres.Node] = int64(len(nodes))
	req.PerNode[gres.Node] = 1
	if b := s.pol.p.CheckStart(now, &req, s.pol.usage); b.Blocked() {
		return b.Reason
	}
	return policy.ReasonNone
}
