package scheduler

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
)

// The jobs section: per job its ID, a flag word saying which internal
// fields follow, the public record (Job, with its JobSpec) by the value
// codec, field by field by name (so that fields added to them are
// written), then the scheduler's own fields and the allocation by hand.

func (e *senc) requests(rs []gres.Request) {
	e.uvarint(uint64(len(rs)))
	for _, r := range rs {
		e.symAt(symGRESName, r.Name)
		e.symAt(symGRESType, r.Type)
		e.varint(r.Count)
	}
}

func (d *sdec) requests() []gres.Request {
	n := d.count()
	if n == 0 || d.err != nil {
		return nil
	}
	out := make([]gres.Request, n)
	for i := range out {
		out[i] = gres.Request{Name: d.sym(), Type: d.sym(), Count: d.varint()}
	}
	return out
}

// Job flag bits (the second flag word of a job record).
const (
	jfReserved = 1 << iota
	jfPreemptFirst
	jfPreempting
	jfBFMinIsPer      // bfMin is bfPer (not written)
	jfBFSpreadIsExtra // bfSpread is extraTotal (not written)
	jfBreakdown       // a priority breakdown follows
	jfSuspended       // suspension bookkeeping follows
	jfPreemptFollows  // preemption bookkeeping follows
	jfExtra           // extra, extraTotal follow
	jfAlloc           // an allocation follows
	jfEstimate        // ExpectedStart, EstimatedAt, planned follow
	jfArray           // ArrayJobID, ArrayTaskID follow
	jfUsage           // usageTotal, usageEnd follow
	jfShares          // the allocation's device shares follow it (minor 2)
	jfTasks           // the task spread follows (see tasks.go)
	jfRequired        // the required nodes (JobSpec.NodeList resolved) follow
	jfOverSubscribe   // the allocation's OverSubscribe count follows
	jfTelemetry       // the job's telemetry follows (minor 4, see snapshot_telemetry.go)
	jfNumFlags        = iota
)

func (s *Scheduler) snapJobs(e *senc) error {
	js := slices.SortedFunc(maps.Values(s.jobs), func(a, b *job) int { return cmp.Compare(a.ID, b.ID) })
	e.uvarint(uint64(len(js)))
	for _, j := range js {
		if err := e.job(j); err != nil {
			return fmt.Errorf("job %d: %w", j.ID, err)
		}
	}
	return nil
}

func (e *senc) job(j *job) error {
	var f uint64
	set := func(bit uint64, on bool) {
		if on {
			f |= bit
		}
	}
	set(jfReserved, j.reserved)
	set(jfPreemptFirst, j.preemptFirst)
	set(jfPreempting, j.preempting)
	bfMinIsPer := len(j.bfMin) > 0 && &j.bfMin[0] == &j.bfPer[0]
	set(jfBFMinIsPer, bfMinIsPer)
	spreadIsExtra := j.bfSpread != nil && len(j.extraTotal) > 0 && &j.bfSpread[0] == &j.extraTotal[0]
	set(jfBFSpreadIsExtra, spreadIsExtra)
	set(jfBreakdown, j.breakdown.Priority != 0 || j.breakdown.TRES != nil || j.breakdown.Weights != (priority.Weights{}))
	set(jfSuspended, j.suspendedBy != 0 || j.remaining != 0 || j.suspendedCPUs != nil)
	set(jfPreemptFollows, j.awaitingVictims != 0 || j.preemptedFor != 0 || j.preemptAction != 0)
	set(jfExtra, j.extra != nil || j.extraTotal != nil)
	set(jfAlloc, j.Alloc.Nodes != nil || j.Alloc.Billing != 0 || j.Alloc.Quality != 0)
	set(jfEstimate, j.planned != nil)
	set(jfUsage, j.usageTotal != nil || !j.usageEnd.IsZero())
	set(jfShares, j.Alloc.hasShares())
	set(jfTasks, j.tasks != nil)
	set(jfRequired, j.where != nil && len(j.where.required) > 0)
	set(jfOverSubscribe, j.Alloc.OverSubscribe != 0)
	set(jfTelemetry, j.tel != nil)
	e.uvarint(uint64(j.ID))
	e.uvarint(f)
	// The public record (Job) field by field by name, so that fields
	// added to Job and JobSpec are written; the allocation follows by
	// hand, PerNode and PlannedNodes are Job's copies (perNode, planned).
	if e.pub == nil {
		e.pub = new(Job)
	}
	*e.pub = j.Job
	e.pub.ID, e.pub.PerNode, e.pub.PlannedNodes, e.pub.Alloc = 0, nil, nil, Allocation{}
	err := e.encodeValue(reflect.ValueOf(e.pub).Elem())
	*e.pub = Job{}
	if err != nil {
		return err
	}
	e.int(j.tier)
	e.int(j.nodes)
	e.varint(j.tpn)
	e.time(j.deadline)
	e.uvarint(j.doneCycle)
	e.time(j.killBy)
	e.varint(j.defMemPerCPU)
	e.varint(j.defCPUPerGPU)
	e.varint(j.defMemPerGPU)
	// The excluded nodes as resolved at submission: a node named there
	// may have been removed since, its name even reused.
	e.ints(j.excluded)
	e.vec(j.perNode)
	e.requests(j.devReq)
	e.vec(j.bfPer)
	if !bfMinIsPer {
		e.vec(j.bfMin)
	}
	if !spreadIsExtra {
		e.vec(j.bfSpread)
	}
	if f&jfExtra != 0 {
		e.requests(j.extra)
		e.vec(j.extraTotal)
	}
	if f&jfEstimate != 0 {
		e.ints(j.planned)
	}
	if f&jfAlloc != 0 {
		e.alloc(&j.Alloc)
	}
	if f&jfShares != 0 {
		e.allocShares(&j.Alloc)
	}
	if f&jfOverSubscribe != 0 {
		e.varint(int64(j.Alloc.OverSubscribe))
	}
	if f&jfUsage != 0 {
		e.vec(j.usageTotal)
		e.time(j.usageEnd)
	}
	if f&jfRequired != 0 {
		// As resolved at submission, like the excluded nodes.
		e.ints(j.where.required)
	}
	if f&jfSuspended != 0 {
		e.uvarint(uint64(j.suspendedBy))
		e.varint(int64(j.remaining))
		e.uvarint(uint64(len(j.suspendedCPUs)))
		for _, c := range j.suspendedCPUs {
			e.varint(c)
		}
	}
	if f&jfPreemptFollows != 0 {
		e.int(j.awaitingVictims)
		e.uvarint(uint64(j.preemptedFor))
		e.byte(byte(j.preemptAction))
	}
	if f&jfBreakdown != 0 {
		e.breakdown(&j.breakdown)
	}
	if f&jfTasks != 0 {
		e.tasks(j.tasks)
	}
	if f&jfTelemetry != 0 {
		return e.jobTelemetry(j.tel)
	}
	return nil
}

func (e *senc) tasks(ts *taskSpread) {
	e.int(ts.total)
	e.int(ts.maxPer)
	e.int(ts.perSocket)
	e.int(ts.nodesMax)
	e.bool(ts.fewest)
	e.requests(ts.devFixed)
	e.requests(ts.devTask)
	e.vec(ts.perTask)
	e.vec(ts.totalVec)
}

func (d *sdec) tasks() *taskSpread {
	ts := &taskSpread{
		total:     d.intIn(0, MaxTasksPerJob, "task count"),
		maxPer:    d.intIn(0, MaxTasksPerJob, "tasks per node"),
		perSocket: d.intIn(0, MaxTasksPerJob, "tasks per socket"),
		nodesMax:  d.intIn(1, MaxNodesPerJob, "node count maximum"),
		fewest:    d.bool(),
	}
	ts.devFixed = d.requests()
	ts.devTask = d.requests()
	ts.perTask = d.vec()
	ts.totalVec = d.vec()
	return ts
}

func (e *senc) alloc(a *Allocation) {
	e.f64(a.Billing)
	e.f64(a.Quality)
	e.uvarint(uint64(len(a.Nodes)))
	for k := range a.Nodes {
		na := &a.Nodes[k]
		e.int(na.Node)
		e.ints(na.CPUs)
		e.varint(na.MemoryMiB)
		e.ints(na.Devices)
		e.f64(na.DeviceQuality)
		e.vec(na.TRES)
	}
}

func (e *senc) factors(f *priority.Factors) {
	for _, x := range [...]float64{f.Age, f.Assoc, f.FairShare, f.JobSize, f.Partition, f.QOS} {
		e.f64(x)
	}
}

func (d *sdec) factors() priority.Factors {
	return priority.Factors{Age: d.f64(), Assoc: d.f64(), FairShare: d.f64(), JobSize: d.f64(), Partition: d.f64(), QOS: d.f64()}
}

func (e *senc) weights(w *priority.Weights) {
	for _, x := range [...]uint32{w.Age, w.Assoc, w.FairShare, w.JobSize, w.Partition, w.QOS} {
		e.uvarint(uint64(x))
	}
}

func (d *sdec) weights() priority.Weights {
	u := func() uint32 {
		x := d.uvarint()
		if x > 1<<32-1 {
			d.fail("weight %d out of range", x)
		}
		return uint32(x)
	}
	return priority.Weights{Age: u(), Assoc: u(), FairShare: u(), JobSize: u(), Partition: u(), QOS: u()}
}

func (e *senc) breakdown(b *priority.Breakdown) {
	e.uvarint(uint64(b.Priority))
	e.uvarint(uint64(b.Computed))
	e.f64(b.Sum)
	e.bool(b.Admin)
	e.factors(&b.Factors)
	e.factors(&b.Weighted)
	if b.TRES == nil {
		e.uvarint(0)
	} else {
		e.uvarint(uint64(len(b.TRES)) + 1)
		for _, t := range b.TRES {
			e.uvarint(uint64(t.ID))
			e.f64(t.Factor)
			e.f64(t.Weighted)
		}
	}
	e.f64(b.TRESSum)
	e.varint(b.Site)
	e.varint(b.Nice)
	e.weights(&b.Weights)
}

func (d *sdec) breakdown() priority.Breakdown {
	var b priority.Breakdown
	b.Priority = d.u32()
	b.Computed = d.u32()
	b.Sum = d.f64()
	b.Admin = d.bool()
	b.Factors = d.factors()
	b.Weighted = d.factors()
	if n := d.count1(); n > 0 && d.err == nil {
		b.TRES = make([]priority.TRESFactor, n-1)
		for i := range b.TRES {
			b.TRES[i] = priority.TRESFactor{ID: d.tres(d.uvarint()), Factor: d.f64(), Weighted: d.f64()}
		}
	}
	b.TRESSum = d.f64()
	b.Site = d.varint()
	b.Nice = d.varint()
	b.Weights = d.weights()
	return b
}

func (d *sdec) u32() uint32 {
	x := d.uvarint()
	if d.err == nil && x > 1<<32-1 {
		d.fail("%d overflows uint32", x)
	}
	return uint32(x)
}

// job reads one job record. The record's partition name is checked
// against the restored scheduler's partitions; what it refers to (nodes,
// jobs) is checked by the caller.
func (d *sdec) job(s *Scheduler) *job {
	if len(d.jobs) == 0 {
		// Records are cut from small slabs: fewer allocations, and a
		// purged job keeps at most a slab's worth alive.
		d.jobs = make([]job, 64)
	}
	j := &d.jobs[0]
	d.jobs = d.jobs[1:]
	id := JobID(d.uvarint())
	j.ID = id
	f := d.uvarint()
	if d.err == nil && f >= 1<<jfNumFlags {
		d.fail("job %d: unknown flags 0x%x (a snapshot of a newer version?)", j.ID, f)
	}
	d.decodeValue(reflect.ValueOf(&j.Job).Elem())
	j.ID = id
	if d.err == nil && j.State > JobPreempted {
		d.fail("job %d: bad state %d", j.ID, j.State)
	}
	if pi, ok := s.partByName[j.Partition]; ok {
		j.part = pi
	} else if j.State.Finished() {
		j.part = -1 // a finished job of a removed partition (RemovePartition)
	} else if d.err == nil {
		d.fail("job %d: unknown partition %q", j.ID, j.Partition)
	}
	j.tier = d.int()
	j.nodes = d.intIn(1, MaxNodesPerJob, "node count")
	j.tpn = d.varint()
	j.deadline = d.time()
	j.doneCycle = d.uvarint()
	j.killBy = d.time()
	j.defMemPerCPU = int64(d.intIn(0, gres.MaxCount, "DefMemPerCPU"))
	j.defCPUPerGPU = int64(d.intIn(0, gres.MaxCount, "DefCpuPerGPU"))
	j.defMemPerGPU = int64(d.intIn(0, gres.MaxCount, "DefMemPerGPU"))
	if ex := d.ints(); len(ex) > 0 {
		for k, i := range ex {
			if d.err == nil && (i < 0 || i >= len(s.nodes) || (k > 0 && i <= ex[k-1])) {
				d.fail("job %d: excluded node %d out of range or order", j.ID, i)
			}
		}
		j.excluded = ex
	}
	j.perNode = d.vec()
	j.devReq = d.requests()
	j.bfPer = d.vec()
	if f&jfBFMinIsPer != 0 {
		j.bfMin = j.bfPer
	} else {
		j.bfMin = d.vec()
	}
	if f&jfBFSpreadIsExtra == 0 {
		j.bfSpread = d.vec()
	}
	if f&jfExtra != 0 {
		j.extra = d.requests()
		j.extraTotal = d.vec()
	}
	if f&jfBFSpreadIsExtra != 0 {
		j.bfSpread = j.extraTotal
	}
	if f&jfEstimate != 0 {
		j.planned = d.ints()
	}
	if f&jfAlloc != 0 {
		j.Alloc = d.alloc(s)
	}
	if f&jfShares != 0 {
		d.allocShares(&j.Alloc)
	}
	if f&jfOverSubscribe != 0 {
		j.Alloc.OverSubscribe = d.intIn(2, 1<<15, "OverSubscribe count")
	}
	if f&jfUsage != 0 {
		j.usageTotal = d.vec()
		j.usageEnd = d.time()
	}
	if f&jfRequired != 0 {
		req := d.ints()
		for k, i := range req {
			if d.err == nil && (i < 0 || i >= len(s.nodes) || (k > 0 && i <= req[k-1])) {
				d.fail("job %d: required node %d out of range or order", j.ID, i)
			}
		}
		j.restoreRequired = req
	}
	if f&jfSuspended != 0 {
		j.suspendedBy = JobID(d.uvarint())
		j.remaining = durationOf(d.varint())
		n := d.count()
		if n > 0 {
			j.suspendedCPUs = make([]int64, n)
			for k := range j.suspendedCPUs {
				j.suspendedCPUs[k] = d.varint()
			}
		}
	}
	if f&jfPreemptFollows != 0 {
		j.awaitingVictims = d.intIn(0, 1<<31, "victim count")
		j.preemptedFor = JobID(d.uvarint())
		j.preemptAction = policy.PreemptAction(d.byte())
	}
	if f&jfBreakdown != 0 {
		j.breakdown = d.breakdown()
	}
	if f&jfTasks != 0 {
		j.tasks = d.tasks()
		j.tasks.plane = int64(j.Spec.planeSize()) // the spec's (tasks.go)
	}
	if f&jfTelemetry != 0 {
		j.tel = d.jobTelemetry()
		if n := len(j.tel.nodes); d.err == nil && n > 0 && n != len(j.Alloc.Nodes) {
			d.fail("job %d: telemetry of %d nodes, an allocation of %d", j.ID, n, len(j.Alloc.Nodes))
		}
		for _, u := range j.tel.steps {
			if d.err == nil && u.pos >= len(j.Alloc.Nodes) {
				d.fail("job %d: step %s on allocation node %d of %d", j.ID, u.step, u.pos, len(j.Alloc.Nodes))
			}
		}
	}
	j.reserved = f&jfReserved != 0
	j.preemptFirst = f&jfPreemptFirst != 0
	j.preempting = f&jfPreempting != 0
	for _, i := range j.planned {
		if d.err == nil && (i < 0 || i >= len(s.nodes)) {
			d.fail("job %d: planned node %d out of range", j.ID, i)
		}
	}
	return j
}

func (d *sdec) alloc(s *Scheduler) Allocation {
	var a Allocation
	a.Billing = d.f64()
	a.Quality = d.f64()
	n := d.count()
	if n == 0 || d.err != nil {
		return a
	}
	a.Nodes = make([]NodeAlloc, n)
	for k := range a.Nodes {
		na := &a.Nodes[k]
		na.Node = d.intIn(0, int64(len(s.nodes)-1), "allocated node")
		if d.err != nil {
			return a
		}
		na.Name = s.nodes[na.Node].cfg.Name
		na.CPUs = d.ints()
		na.MemoryMiB = d.varint()
		na.Devices = d.ints()
		na.DeviceQuality = d.f64()
		na.TRES = d.vec()
	}
	return a
}
