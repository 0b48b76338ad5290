package scheduler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

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
	// cycle numbered stamp (see allowedNodes).
	allowed topology.NodeSet
	usable  int
	stamp   uint64
}

func shapeKey(part int, v gres.Vector, exclusive bool) string {
	return string(appendShapeKey(nil, part, v, exclusive))
}

// appendShapeKey appends shapeKey's key to b.
func appendShapeKey(b []byte, part int, v gres.Vector, exclusive bool) []byte {
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
	return b
}

// shapeOf returns the (cached) shape of a job's request in partition part.
func (s *Scheduler) shapeOf(part int, perNode gres.Vector, exclusive bool) *shape {
	// The key is built in reused scratch; looking it up copies nothing.
	s.keyBuf = appendShapeKey(s.keyBuf[:0], part, perNode, exclusive)
	if sh, ok := s.shapes[string(s.keyBuf)]; ok {
		return sh
	}
	key := string(s.keyBuf)
	p := &s.parts[part]
	sh := &shape{capable: topology.NewNodeSet(len(s.nodes))}
	for i := p.nodes.Next(0); i >= 0; i = p.nodes.Next(i + 1) {
		if perNode.Fits(s.nodes[i].capacity) {
			sh.capable.Add(i)
		}
	}
	s.shapes[key] = sh
	return sh
}

// allowedNodes returns the nodes a job of this shape may use this cycle:
// capable and up, computed once per cycle. The set is shared by all jobs
// of the shape and must not be modified.
func (s *Scheduler) allowedNodes(sh *shape) topology.NodeSet {
	if sh.stamp != s.cycleNo {
		if sh.allowed.Len() == 0 {
			sh.allowed = topology.NewNodeSet(len(s.nodes))
		}
		sh.allowed.CopyFrom(sh.capable)
		sh.allowed.IntersectWith(s.usable)
		sh.usable = sh.allowed.Count()
		sh.stamp = s.cycleNo
	}
	return sh.allowed
}

// Schedule runs one scheduling cycle at now: it ends jobs past their time
// limit, then walks the pending queue in order (partition tier, priority,
// submit time, job ID) and starts every job that fits, first-fit, on nodes
// that are up, in its partition, and not held back by a higher-priority
// job. As in Slurm's main scheduler, a job that cannot start for lack of
// resources removes its partition's nodes from the rest of the cycle, so
// nothing behind it overtakes it; jobs pending for their own constraints
// (begin time, partition limits) block no one.
func (s *Scheduler) Schedule(now time.Time) (Cycle, error) {
	if err := s.tick(now); err != nil {
		return Cycle{}, err
	}
	if err := s.refreshPriorities(now); err != nil {
		return Cycle{}, err
	}
	s.last = now
	s.cycleNo++
	cyc := Cycle{Now: now}
	s.purge(now)
	s.endExpired(now, &cyc)
	s.resumeSuspended(now, &cyc)

	s.avail.CopyFrom(s.usable)
	blocked := make([]bool, len(s.parts))
	// started (the jobs the pass starts, moved to the running index after
	// it) and s.pendJobs (the job of each cyc.Pending entry, kept in step
	// with it until the audit records are made) are scratch, emptied
	// before Schedule returns.
	started := s.started[:0]
	pend := s.pendJobs[:0]
	cyc.Pending = make([]Pending, 0, s.pending.Len())
	s.inPass = true
	s.pending.Ascend(func(j *job) bool {
		r := s.evaluate(now, j, blocked, &cyc)
		if r == policy.ReasonNone {
			// Its allocation is final: only running jobs (not those
			// started by this pass) can be preempted.
			started = append(started, j)
			cyc.Starts = append(cyc.Starts, Start{Job: j.ID, Alloc: copyAlloc(j.Alloc), TimeLimit: j.TimeLimit})
			return true
		}
		j.Reason = r
		cyc.Pending = append(cyc.Pending, Pending{Job: j.ID, Reason: r, Priority: j.Priority})
		pend = append(pend, j)
		return true
	})
	s.inPass = false
	for _, j := range started {
		s.pending.Delete(j)
		s.running.ReplaceOrInsert(j)
	}
	for _, j := range s.deferred {
		s.pending.ReplaceOrInsert(j)
		cyc.Pending = append(cyc.Pending, Pending{Job: j.ID, Reason: j.Reason, Priority: j.Priority})
		pend = append(pend, j)
	}
	s.started, s.pendJobs = started, pend
	defer s.dropScratch()
	s.deferred = s.deferred[:0]
	for _, j := range s.rekey {
		if j.State == JobPending {
			s.pending.Delete(j)
			j.preemptFirst = true
			s.pending.ReplaceOrInsert(j)
		}
	}
	s.rekey = s.rekey[:0]
	if s.bf != nil {
		if err := s.backfillPass(now, &cyc); err != nil {
			return cyc, err
		}
	}
	recs := s.auditRecords(cyc, s.pendJobs)
	if len(s.eventDecisions) > 0 {
		recs = append(s.eventDecisions, recs...)
	} else if len(recs) == 0 {
		recs = nil // as appending nothing to no event decisions gives
	}
	cyc.Decisions = recs
	s.eventDecisions = nil
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

// evaluate decides one pending job: it starts it (returning ReasonNone) or
// returns why it waits. It does not touch the pending index.
func (s *Scheduler) evaluate(now time.Time, j *job, blocked []bool, cyc *Cycle) policy.Reason {
	p := &s.parts[j.part]
	switch {
	case p.cfg.State == PartitionDown:
		return policy.ReasonPartitionDown
	case p.cfg.State == PartitionInactive:
		return policy.ReasonPartitionInactive
	case !j.Spec.BeginTime.IsZero() && j.Spec.BeginTime.After(now):
		return policy.ReasonBeginTime
	case p.cfg.MaxTime > 0 && j.TimeLimit > p.cfg.MaxTime:
		return policy.ReasonPartitionTimeLimit
	case j.nodes < p.cfg.MinNodes || (p.cfg.MaxNodes > 0 && j.nodes > p.cfg.MaxNodes):
		return policy.ReasonPartitionNodeLimit
	}
	if blocked[j.part] && j.Spec.Reservation == "" {
		// Behind a higher-priority job of its partition that could not
		// start: Slurm's main scheduler moves on without testing limits.
		if j.EligibleTime.IsZero() {
			j.EligibleTime = now
		}
		return policy.ReasonPriority
	}
	if r := s.checkPolicy(now, j); r != policy.ReasonNone {
		return r
	}
	if j.EligibleTime.IsZero() {
		j.EligibleTime = now
	}
	allowed := s.allowedNodes(j.shape) // and j.shape.usable, its size
	if j.shape.usable < j.nodes {
		// Not enough capable nodes are up: waiting for them, not for the queue.
		return policy.ReasonReqNodeNotAvail
	}
	resvEnd, r := s.candidates(now, j)
	if r != policy.ReasonNone {
		return r
	}
	nodes, quality := s.place(now, j, s.cand)
	if nodes == nil && s.preemptionOn() && j.Spec.Reservation == "" && j.awaitingVictims == 0 && s.tryPreempt(now, j, cyc) {
		// The victims are gone: place again.
		if resvEnd, r = s.candidates(now, j); r != policy.ReasonNone {
			return r
		}
		nodes, quality = s.place(now, j, s.cand)
	}
	if nodes != nil {
		if r := s.checkExclusiveLimits(now, j, nodes); r != policy.ReasonNone {
			return r
		}
		s.allocate(now, j, nodes, quality, resvEnd) // killed at its reservation's end, if any
		return policy.ReasonNone
	}
	reason := policy.ReasonResources
	// Nodes held back by a higher-priority job of another partition: had
	// they been free to use, would the job have started?
	if allowed.IntersectionCount(s.avail) < j.shape.usable && s.fits(now, j, allowed) {
		reason = policy.ReasonPriority
	}
	if j.Spec.Reservation != "" {
		// A job in a reservation holds back only the reservation's nodes.
		if r, ok := s.pol.resv.Get(j.Spec.Reservation); ok {
			s.avail.Subtract(r.Nodes)
		}
		return reason
	}
	blocked[j.part] = true
	s.avail.Subtract(p.nodes)
	return reason
}

// candidates fills s.cand with the nodes the job may start on in this
// pass: capable, up, not held back by a blocked job ahead, and not
// forbidden by advance reservations. It returns the end of the
// reservation window the job would run in, or why it cannot start now.
func (s *Scheduler) candidates(now time.Time, j *job) (time.Time, policy.Reason) {
	s.cand.CopyFrom(j.shape.capable)
	s.cand.IntersectWith(s.avail)
	return s.constrainByReservations(now, j, s.cand)
}

// fitsNow reports whether node i can take the job's per-node request now.
// Counts decide, except under enforce-binding, where the CPUs close to
// the chosen devices must be free too.
func (s *Scheduler) fitsNow(j *job, i int) bool {
	n := &s.nodes[i]
	if j.Spec.Exclusive {
		return len(n.jobs) == 0
	}
	if !j.perNode.Fits(n.free) {
		return false
	}
	if j.Spec.EnforceBinding {
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
	if s.graph == nil {
		out := s.placed[:0]
		for i := cand.Next(0); i >= 0; i = cand.Next(i + 1) {
			if s.fitsNow(j, i) {
				if out = append(out, i); len(out) == j.nodes {
					s.placed = out
					return out, 1
				}
			}
		}
		s.placed = out
		return nil, 0
	}
	s.fit.Reset()
	k := 0
	for i := cand.Next(0); i >= 0; i = cand.Next(i + 1) {
		if s.fitsNow(j, i) {
			s.fit.Add(i)
			k++
		}
	}
	if k < j.nodes {
		return nil, 0
	}
	p, err := s.graph.Select(s.fit, j.nodes, j.constraints())
	if err != nil {
		return nil, 0
	}
	if !p.Met && (j.Spec.SwitchesMaxWait == 0 || now.Sub(j.EligibleTime) < j.Spec.SwitchesMaxWait) {
		return nil, 0
	}
	s.placed = p.Nodes.AppendTo(s.placed[:0])
	return s.placed, p.Quality.Score
}

// fits reports whether the job could start on cand now (used to tell
// Priority from Resources).
func (s *Scheduler) fits(now time.Time, j *job, cand topology.NodeSet) bool {
	nodes, _ := s.place(now, j, cand)
	return nodes != nil
}

// nodePlan is how a job would sit on one node: its CPU ids, device
// indices and TRES.
type nodePlan struct {
	cpus    []int
	devices []int
	quality float64
	tres    gres.Vector
}

// planNode works out, without changing anything, which CPUs and devices
// the job would get on node n: best-connected devices first, then CPUs
// close to them (only close CPUs with EnforceBinding). It reports false
// when the node cannot host the job now. The plan's CPU and TRES slices
// come from buf (nil: allocated).
func (s *Scheduler) planNode(j *job, n *node, buf *allocBuf) (nodePlan, bool) {
	p := nodePlan{quality: 1}
	if j.Spec.Exclusive {
		if len(n.jobs) > 0 {
			return p, false
		}
		p.tres = buf.vector(len(n.free))
		copy(p.tres, n.free) // everything but unhealthy devices
		p.tres[gres.Node] = 1
		p.cpus = n.freeCPUsInto(buf.cpuIDs(n.cfg.CPUs), n.cfg.CPUs, gres.CoreSet{}, false)
		p.devices = n.freeDevices()
		return p, true
	}
	if !j.perNode.Fits(n.free) {
		return p, false
	}
	p.tres = buf.vector(s.reg.Len())
	p.tres[gres.CPU] = j.perNode[gres.CPU]
	p.tres[gres.Mem] = j.perNode[gres.Mem]
	p.tres[gres.Node] = 1
	var near, freeCores gres.CoreSet
	devs := n.devs
	for _, r := range j.devReq {
		if devs == nil || !n.hasDevices(r.Name) {
			// A count-only GRES (shards, MPS, licenses on the node):
			// counted, no device indices.
			p.tres[s.reg.MustLookup(deviceTRES(r.Name, ""))] += r.Count
			if r.Type != "" {
				p.tres[s.reg.MustLookup(deviceTRES(r.Name, r.Type))] += r.Count
			}
			continue
		}
		if devs == n.devs && len(j.devReq) > 1 {
			devs = devs.Clone() // dry run: later requests must not reuse these devices
		}
		if freeCores.IsEmpty() && n.hasAffinity {
			freeCores = n.freeCoreSet()
		}
		// Devices close to free CPUs are preferred (required under
		// enforce-binding), so the job's CPUs can sit next to its devices.
		var pl gres.Placement
		var err error
		if j.Spec.GPUsPerSocket > 0 && r.Name == "gpu" && r.Type == "" {
			pl, err = s.choosePerSocket(j, n, devs, int(r.Count))
		} else {
			pl, err = devs.Choose(gres.DeviceRequest{Name: r.Name, Type: r.Type, Count: int(r.Count),
				Cores: freeCores, EnforceBinding: j.Spec.EnforceBinding, Order: s.gpuOrder})
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
	k := int(j.perNode[gres.CPU])
	p.cpus = n.freeCPUsInto(buf.cpuIDs(k), k, near, j.Spec.EnforceBinding && !near.IsEmpty())
	if len(p.cpus) < int(j.perNode[gres.CPU]) {
		return p, false // not enough CPUs close to the devices (enforce-binding)
	}
	return p, true
}

// allocate commits the job to the given nodes: CPUs, memory and device
// indices on each, then marks it running, ending at its time limit or at
// killBy when that is earlier (a reservation's end; zero for none), and
// counts it in the policy usage. quality is the placement's score.
func (s *Scheduler) allocate(now time.Time, j *job, nodes []int, quality float64, killBy time.Time) {
	allocs := make([]NodeAlloc, 0, len(nodes))
	buf := s.newAllocBuf(j, nodes)
	for _, i := range nodes {
		n := &s.nodes[i]
		p, ok := s.planNode(j, n, buf)
		if !ok {
			panic(fmt.Sprintf("scheduler: node %s was chosen for job %d but cannot host it", n.cfg.Name, j.ID))
		}
		n.markCPUs(p.cpus)
		if len(p.devices) > 0 {
			if err := n.devs.Allocate(p.devices); err != nil {
				panic(fmt.Sprintf("scheduler: allocating devices %v of job %d on %s: %v", p.devices, j.ID, n.cfg.Name, err))
			}
		}
		if err := n.charge(p.tres); err != nil {
			panic(fmt.Sprintf("scheduler: node %s over-allocated by job %d: %v", n.cfg.Name, j.ID, err))
		}
		n.jobs = append(n.jobs, j.ID)
		allocs = append(allocs, NodeAlloc{
			Node: i, Name: n.cfg.Name, CPUs: p.cpus, MemoryMiB: p.tres[gres.Mem],
			Devices: p.devices, DeviceQuality: p.quality, TRES: p.tres,
		})
	}
	j.Alloc = Allocation{Nodes: allocs, Quality: quality}
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
	j.StartTime = now
	if a := s.arrays[j.ArrayJobID]; a != nil {
		a.running++
	}
	j.deadline = now.Add(j.TimeLimit)
	if !killBy.IsZero() && killBy.Before(j.deadline) {
		j.deadline = killBy
	}
	s.noteStarted(j)
	s.policyStart(j, s.sum)
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
	for _, sk := range order[:sockets] {
		var cores gres.CoreSet
		for _, d := range n.cfg.Devices.Devices {
			if d.Socket == sk {
				cores = cores.Union(d.Cores)
			}
		}
		pl, err := work.Choose(gres.DeviceRequest{Name: "gpu", Count: per, Cores: cores, EnforceBinding: !cores.IsEmpty()})
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
