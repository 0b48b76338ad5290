package scheduler

import (
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// KindAdmit is AdmitEvent's kind.
const KindAdmit EventKind = "admit"

// AdmitNode is one node of a re-admitted job's allocation: the CPU ids,
// memory and device indices the job holds there (NodeAlloc's data).
type AdmitNode struct {
	Node      string
	CPUs      []int
	MemoryMiB int64
	Devices   []int `json:",omitempty"`
}

// AdmitEvent re-admits a job that is already running, with the resources
// it holds, for a caller that keeps its own records (its ledger, the node
// agents' reports) rather than a snapshot: after a restart the new
// scheduler is told about each running job instead of scheduling it
// again. The spec is validated as Submit validates it (partition, QOS,
// association, submit limits; limits that hold starts do not judge a
// running job), and the allocation must hold the job's per-node request
// on exactly its node count, on nodes that are not down, with CPUs and
// devices that exist, are free, and (devices) healthy; an exclusive job
// must hold whole idle nodes (every CPU, every healthy device). All or
// nothing: on error nothing changes. Result.Job is the job's ID.
type AdmitEvent struct {
	Spec JobSpec
	// ID is the job's ID, which must not be below the next ID (IDs only
	// move forward); zero takes the next ID.
	ID JobID `json:",omitempty"`
	// Start is when the job started (its time limit runs from it); not
	// after now.
	Start time.Time
	// TimeLimit is the limit the job runs with; zero means its own
	// (Spec.TimeLimit, else the partition's default), as at submit.
	TimeLimit time.Duration `json:",omitempty"`
	Nodes     []AdmitNode
}

// Kind returns KindAdmit.
func (AdmitEvent) Kind() EventKind { return KindAdmit }

// Admit applies an AdmitEvent: it re-admits a running job with the
// allocation it holds and returns its ID.
func (s *Scheduler) Admit(now time.Time, ev AdmitEvent) (JobID, error) {
	r, err := s.Apply(now, ev)
	return r.Job, err
}

func (e AdmitEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	bad := func(format string, a ...any) (Result, error) {
		return Result{}, fmt.Errorf("%w: admit: %s", ErrInvalidJob, fmt.Sprintf(format, a...))
	}
	switch {
	case e.Start.IsZero():
		return bad("Start is required")
	case e.Start.After(now):
		return bad("Start %s is after now %s", e.Start.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
	case e.TimeLimit < 0 || (e.TimeLimit > 0 && e.TimeLimit < time.Second) || e.TimeLimit > MaxTimeLimit:
		return bad("TimeLimit %v out of range: 0 (the job's own) or [1s, %v]", e.TimeLimit, MaxTimeLimit)
	}
	id := s.nextID
	if e.ID != 0 {
		if e.ID < s.nextID {
			return bad("ID %d is below the next ID %d (IDs only move forward)", e.ID, s.nextID)
		}
		id = e.ID
	}
	j, err := s.newJob(e.Spec)
	if err != nil {
		return Result{}, err
	}
	if e.TimeLimit > 0 {
		j.TimeLimit = e.TimeLimit
	}
	if err := s.admitPolicy(j, s.nextID, 1); err != nil {
		return Result{}, err
	}
	if ts := j.tasks; ts != nil {
		// A task spread or node range: within the job's node counts (the
		// nodes given say how its tasks sit).
		if len(e.Nodes) < j.nodes && !ts.fewest || len(e.Nodes) < 1 || len(e.Nodes) > ts.nodesMax {
			return bad("%d node(s) given, the job runs on %s", len(e.Nodes), FormatNodeCount(j.nodes, ts.nodesMax))
		}
	} else if len(e.Nodes) != j.nodes {
		return bad("%d node(s) given, the job has %d", len(e.Nodes), j.nodes)
	}
	allocs := make([]NodeAlloc, 0, len(e.Nodes))
	for _, an := range e.Nodes {
		na, err := s.admitNode(j, an, allocs)
		if err != nil {
			return Result{}, err
		}
		allocs = append(allocs, na)
	}
	var killBy time.Time
	if r := j.Spec.Reservation; r != "" {
		ws, err := s.pol.resv.Windows(r, e.Start, e.Start.Add(time.Nanosecond), nil)
		if err != nil || len(ws) == 0 {
			return bad("reservation %q has no window open at Start", r)
		}
		killBy = ws[0].End
	}
	j.ID, j.State, j.SubmitTime, j.EligibleTime = id, JobPending, e.Start, e.Start
	if s.prio != nil {
		if err := s.computePriority(now, j); err != nil {
			return Result{}, fmt.Errorf("%w: %w", ErrInvalidJob, err)
		}
	}
	if s.pol != nil {
		if err := s.pol.usage.AddJob(policy.JobID(j.ID), j.subject); err != nil {
			return Result{}, fmt.Errorf("%w: %w", ErrInvalidJob, err)
		}
	}
	// Nothing fails from here on.
	quality := 1.0
	if s.graph != nil && len(allocs) > 1 {
		nodes := topology.NewNodeSet(len(s.nodes))
		for _, na := range allocs {
			nodes.Add(na.Node)
		}
		quality = s.graph.Quality(nodes, j.Spec.NVLinkDomain).Score
	}
	s.jobs[j.ID] = j
	s.commitAllocation(e.Start, j, allocs, quality, killBy)
	s.mutRunning().ReplaceOrInsert(j)
	s.nextID = id + 1
	s.last = now
	return Result{Job: j.ID}, nil
}

// admitNode checks one node of a re-admitted job's allocation against
// the node's state (and the nodes before it, taken) and returns it as
// the job would hold it.
func (s *Scheduler) admitNode(j *job, an AdmitNode, taken []NodeAlloc) (NodeAlloc, error) {
	bad := func(format string, a ...any) (NodeAlloc, error) {
		return NodeAlloc{}, fmt.Errorf("%w: admit: node %q: %s", ErrInvalidJob, an.Node, fmt.Sprintf(format, a...))
	}
	i, ok := s.nodeByName[an.Node]
	if !ok {
		return NodeAlloc{}, fmt.Errorf("%w: admit: %w %q", ErrInvalidJob, ErrUnknownNode, an.Node)
	}
	n := &s.nodes[i]
	switch {
	case slices.ContainsFunc(taken, func(na NodeAlloc) bool { return na.Node == i }):
		return bad("given twice")
	case n.admin == adminDown:
		return bad("is down")
	case j.Spec.Exclusive && len(n.jobs) > 0:
		return bad("runs other jobs; the job takes whole nodes")
	case !s.userShareOK(j, n):
		return bad("runs another user's job; --exclusive=user keeps users apart")
	case len(an.CPUs) == 0:
		return bad("no CPUs")
	case an.MemoryMiB < 0 || an.MemoryMiB > n.cfg.MemoryMiB:
		return bad("MemoryMiB %d out of range [0, %d]", an.MemoryMiB, n.cfg.MemoryMiB)
	}
	cpus := slices.Clone(an.CPUs)
	slices.Sort(cpus)
	for k, c := range cpus {
		switch {
		case c < 0 || c >= n.cfg.CPUs:
			return bad("CPU %d out of range [0, %d)", c, n.cfg.CPUs)
		case k > 0 && c == cpus[k-1]:
			return bad("CPU %d given twice", c)
		case n.cpuUsed[c>>6]&(1<<uint(c&63)) != 0:
			return bad("CPU %d is in use", c)
		}
	}
	devs := slices.Clone(an.Devices)
	slices.Sort(devs)
	if len(devs) > 0 {
		if n.devs == nil {
			return bad("has no devices")
		}
		if err := n.devs.Clone().Allocate(devs); err != nil {
			return bad("devices %v: %v", devs, err)
		}
	}
	na := NodeAlloc{Node: i, Name: n.cfg.Name, CPUs: cpus, MemoryMiB: an.MemoryMiB, Devices: devs, DeviceQuality: 1}
	if j.Spec.Exclusive {
		// The whole node, as a start gives it: every CPU and healthy device.
		if len(cpus) != n.cfg.CPUs || !slices.Equal(devs, n.freeDevices()) {
			return bad("the job takes whole nodes: give every CPU and every healthy device")
		}
		na.TRES = n.free.Clone()
	} else {
		na.TRES = s.reg.NewVector()
		na.TRES[gres.CPU] = int64(len(cpus))
		na.TRES[gres.Mem] = an.MemoryMiB
		n.addDeviceTRES(na.TRES, devs)
		for _, r := range j.devReq {
			if n.devs == nil || !n.hasDevices(r.Name) {
				na.TRES[s.reg.MustLookup(deviceTRES(r.Name, ""))] += r.Count
				if r.Type != "" {
					na.TRES[s.reg.MustLookup(deviceTRES(r.Name, r.Type))] += r.Count
				}
			}
		}
	}
	na.TRES[gres.Node] = 1
	if len(devs) > 1 {
		if p, err := n.devs.Evaluate(devs, gres.DeviceRequest{Name: n.deviceName(devs[0]), Count: len(devs)}); err == nil {
			na.DeviceQuality = p.Quality
		}
	}
	if !j.perNode.Fits(na.TRES) {
		return bad("%s does not hold the job's per-node request %s", s.reg.FormatTRES(na.TRES), s.reg.FormatTRES(j.perNode))
	}
	k := na.TRES[gres.Node]
	na.TRES[gres.Node] = 0
	fits := na.TRES.Fits(n.free)
	na.TRES[gres.Node] = k
	if !fits {
		return bad("%s is more than the node has free (%s)", s.reg.FormatTRES(na.TRES), s.reg.FormatTRES(n.free))
	}
	return na, nil
}

// deviceName returns the GRES name of device index d.
func (n *node) deviceName(d int) string {
	for _, dv := range n.cfg.Devices.Devices {
		if dv.Index == d {
			return dv.Name
		}
	}
	return ""
}
