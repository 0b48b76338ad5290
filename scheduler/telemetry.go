package scheduler

import (
	"cmp"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/telemetry"
)

// KindTelemetry tags a TelemetryEvent.
const KindTelemetry EventKind = "telemetry"

// TelemetryEvent reports what the devices and jobs of one node were doing
// at the event's time: a driver's device samples (gres/nvml's Sample) and
// per-job readings (gres/cgroup's usage of the job's cgroup, or a caller's
// agent). Each reading is folded into the usage of the running job it
// belongs to (Job.Usage) as it arrives, at a bounded cost; no sample is
// kept. A device sample goes to every running job holding the device (a
// shared GPU's activity is given to each of its sharers, its energy split
// evenly among them) unless a job's own reading names its utilisation on
// the device (JobReading.GPUs, from NVML's process utilisation), which
// then replaces the device's for that job.
//
// Readings of jobs that no longer run on the node (an agent's last poll
// racing the job's end) are skipped. A malformed sample (a device the
// node does not have, a UUID of another device, a reading out of range)
// fails the whole event, which then changes nothing.
type TelemetryEvent struct {
	Node    string
	Devices []gres.DeviceSample `json:",omitempty"`
	Jobs    []JobReading        `json:",omitempty"`
}

// JobReading is one job's own reading on a node: its cgroup's counters
// and, where the driver can tell processes apart, its share of each
// device it uses. Unknown parts are -1.
type JobReading struct {
	Job JobID
	// Step names the job step whose cgroup was read ("batch", "extern",
	// "0", "1", …, as Slurm names steps); "" is the job's own cgroup,
	// which holds its steps'. A step's reading is folded into that
	// step's usage only (Job.Steps, at most MaxSteps per run), its GPUs
	// entry (if any) giving its GPU utilisation; the job's usage comes
	// from the job's reading and the device samples.
	Step string `json:",omitempty"`
	// CPUSeconds is the CPU time (user+system) the job's cgroup on the
	// node has used since it was created (cpu.stat usage_usec / 1e6): a
	// counter; the scheduler folds its rise since the previous reading
	// (from 0 at the run's start, so the first reading counts whole; a
	// counter that fell is a new baseline).
	CPUSeconds float64
	// MemoryPeakBytes is the cgroup's memory high-water mark (memory.peak).
	MemoryPeakBytes int64
	// GPUs lists the job's own utilisation of devices of the node (the
	// SM utilisation of its processes), replacing the device samples'
	// utilisation for this job; each device at most once (an event
	// naming one twice fails). Devices the job does not hold there are
	// ignored.
	GPUs []JobGPUReading `json:",omitempty"`
}

// JobGPUReading is a job's own utilisation of one device, in percent.
type JobGPUReading struct {
	Index       int
	Utilization float64
}

// TelemetryConfig says how the scheduler folds telemetry and treats a
// job that is allocated but idle.
type TelemetryConfig struct {
	// Rule is the folding and idle rule (telemetry.Rule: IdleBelow,
	// IdleAfter, MaxGap).
	Rule telemetry.Rule `json:",omitzero"`
	// Action is what the scheduler does with a running job that is
	// allocated but idle (see IdleAction): IdleNotify, the default, only
	// records a DecisionIdle; IdleRequeue and IdleCancel take the job's
	// allocation back once it has been idle for Rule.IdleAfter + Grace
	// (a component of a heterogeneous job, and a preemption victim in its
	// grace time, are only reported).
	Action IdleAction `json:",omitzero"`
	// Grace is how long a job that became allocated-but-idle (idle for
	// Rule.IdleAfter) may stay so before Action is taken: the time its
	// owner has to react to the notification.
	Grace time.Duration `json:",omitzero"`
	// MaxIdleRequeues is how many times IdleRequeue may requeue one job:
	// a hung job usually hangs again, so the next time it is idle for
	// Rule.IdleAfter + Grace it is ended as by IdleCancel. Zero means
	// DefaultMaxIdleRequeues. Job.IdleRequeues counts them.
	MaxIdleRequeues int `json:",omitzero"`
}

// DefaultMaxIdleRequeues is the MaxIdleRequeues of a TelemetryConfig that
// names none: 5, the bound Slurm's MaxBatchRequeue puts on the requeues
// of a job whose launch keeps failing by default.
const DefaultMaxIdleRequeues = 5

// maxIdleRequeues returns MaxIdleRequeues, defaulted.
func (c TelemetryConfig) maxIdleRequeues() int {
	if c.MaxIdleRequeues == 0 {
		return DefaultMaxIdleRequeues
	}
	return c.MaxIdleRequeues
}

// Validate checks the configuration: a valid rule, a known action, a
// non-negative grace time, and an idle threshold when the action is not
// IdleNotify (an action that could never fire is a mistake).
func (c TelemetryConfig) Validate() error {
	if err := c.Rule.Validate(); err != nil {
		return fmt.Errorf("%w: telemetry: %w", ErrInvalidConfig, err)
	}
	switch {
	case c.Action >= numIdleActions:
		return fmt.Errorf("%w: telemetry: unknown idle action %d", ErrInvalidConfig, uint8(c.Action))
	case c.Grace < 0:
		return fmt.Errorf("%w: telemetry: negative grace time %v", ErrInvalidConfig, c.Grace)
	case c.MaxIdleRequeues < 0:
		return fmt.Errorf("%w: telemetry: negative MaxIdleRequeues %d", ErrInvalidConfig, c.MaxIdleRequeues)
	case c.Action != IdleNotify && c.Rule.IdleBelow <= 0:
		return fmt.Errorf("%w: telemetry: idle action %s without an idle threshold (Rule.IdleBelow)", ErrInvalidConfig, c.Action)
	}
	return nil
}

// Kind returns KindTelemetry.
func (TelemetryEvent) Kind() EventKind { return KindTelemetry }

func (e TelemetryEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	ids, err := s.telemetry(now, e)
	return Result{Jobs: ids}, err
}

// ReportTelemetry applies a TelemetryEvent (see there) and returns the
// jobs an idle action (TelemetryConfig.Action) requeued or ended, which
// the caller kills on their nodes, as after DownNode; none under the
// default IdleNotify.
func (s *Scheduler) ReportTelemetry(now time.Time, ev TelemetryEvent) ([]JobID, error) {
	res, err := s.Apply(now, ev)
	return res.Jobs, err
}

// jobTelemetry is what the scheduler keeps of one job's readings: the
// usage of its earlier runs, merged, and of its current run per node of
// its allocation (parallel to Alloc.Nodes), with the counters the next
// reading's rise is measured from.
type jobTelemetry struct {
	past  telemetry.Usage
	nodes []nodeUsage
	// steps is the current run's usage per step and node, in the order
	// first read (at most MaxSteps distinct steps; telemetry_steps.go).
	steps []stepUsage
	// idleNoted says the current run's current idle spell was recorded
	// (a DecisionIdle); a reading that ends the spell clears it.
	idleNoted bool
}

// nodeUsage is one job's current-run usage on one of its nodes.
type nodeUsage struct {
	telemetry.Usage
	// cpuLast is the last CPU counter read: 0 before the run's first
	// reading (the cgroup's counter starts at 0 when the run creates it,
	// so the first reading's counter is all the run's); -1 (from an
	// earlier snapshot): unknown, the next reading sets it.
	cpuLast float64
}

// usage returns the job's usage over all its runs.
func (t *jobTelemetry) usage() telemetry.Usage {
	if t == nil {
		return telemetry.Usage{}
	}
	return t.mergeRun(t.past)
}

// runUsage returns the usage of the job's current run over its nodes.
func (t *jobTelemetry) runUsage() telemetry.Usage { return t.mergeRun(telemetry.Usage{}) }

// mergeRun returns u with the current run's usage on each node merged in.
func (t *jobTelemetry) mergeRun(u telemetry.Usage) telemetry.Usage {
	for i := range t.nodes {
		u.Merge(t.nodes[i].Usage)
	}
	return u
}

// newRun returns the telemetry of a job starting a new run: t's usage
// so far as the past (nil when t is nil). t is not changed.
func (t *jobTelemetry) newRun() *jobTelemetry {
	if t == nil {
		return nil
	}
	return &jobTelemetry{past: t.usage()}
}

// idle reports whether the current run is allocated-but-idle under rule:
// every node that reported has been idle for rule.IdleAfter, and one has.
// It returns the shortest idle time among them.
func (t *jobTelemetry) idle(rule telemetry.Rule) (bool, time.Duration) {
	if t == nil || rule.IdleBelow <= 0 {
		return false, 0
	}
	var least time.Duration
	seen := false
	for i := range t.nodes {
		u := &t.nodes[i].Usage
		if !u.Measured() && u.IdleSince.IsZero() {
			continue // no utilisation from this node yet
		}
		if !u.IsIdle(rule) {
			return false, 0
		}
		if d := u.IdleFor(); !seen || d < least {
			least = d
		}
		seen = true
	}
	return seen, least
}

// nodeTelemetry is what the scheduler keeps of a node's devices between
// readings: each device's last energy counter (-1: none yet), by index.
type nodeTelemetry struct {
	energy []float64
}

// telemetry applies e at now (see TelemetryEvent) and returns the jobs
// the idle action requeued or ended (see TelemetryConfig.Action).
func (s *Scheduler) telemetry(now time.Time, e TelemetryEvent) ([]JobID, error) {
	ni, err := s.nodeIndex(now, e.Node)
	if err != nil {
		return nil, err
	}
	n := &s.nodes[ni]
	if err := s.checkTelemetry(n, e); err != nil {
		return nil, fmt.Errorf("scheduler: telemetry of node %s: %w", e.Node, err)
	}
	sc := &s.telScratch
	// Energy: each device's rise since its last reading, split among
	// the jobs holding it; a counter that fell (a device reset) starts
	// again from here.
	if len(e.Devices) > 0 {
		ndev := len(n.devs.Inventory().Devices)
		if len(n.tel.energy) != ndev {
			n.tel.energy = fill[float64](nil, ndev, -1)
		}
		sc.rise = fill(sc.rise, ndev, -1)
		for _, d := range e.Devices {
			if d.EnergyJoules < 0 {
				continue
			}
			if last := n.tel.energy[d.Index]; last >= 0 && d.EnergyJoules >= last {
				sc.rise[d.Index] = d.EnergyJoules - last
			}
			n.tel.energy[d.Index] = d.EnergyJoules
		}
		s.countHolders(n, ni, ndev)
	}
	rule := s.telCfg.Rule
	sc.idle = sc.idle[:0]
	for j, pos := range s.runningOn(n, ni) {
		id := j.ID
		var own *JobReading
		steps := false
		for k := range e.Jobs {
			if r := &e.Jobs[k]; r.Job == id {
				if r.Step != "" {
					steps = true
				} else if own == nil {
					own = r
				}
			}
		}
		if len(e.Devices) == 0 && own == nil && !steps {
			continue
		}
		if j.tel == nil {
			j.tel = &jobTelemetry{}
		}
		if len(j.tel.nodes) != len(j.Alloc.Nodes) {
			j.tel.nodes = make([]nodeUsage, len(j.Alloc.Nodes)) // CPU counters from 0
		}
		nu := &j.tel.nodes[pos]
		if g, ok := jobGPUReading(now, &j.Alloc.Nodes[pos], e.Devices, sc.rise, sc.holders, own); ok {
			nu.AddGPU(g, j.StartTime, rule)
		}
		if own != nil {
			nu.AddHost(hostReading(&nu.cpuLast, own))
		}
		if steps {
			j.tel.foldSteps(id, pos, &j.Alloc.Nodes[pos], e.Jobs, j.StartTime, now, rule)
		}
		if rule.IdleBelow > 0 {
			sc.idle = append(sc.idle, j)
		}
	}
	s.last = now // the clock's floor, as after any event applied
	if len(sc.idle) == 0 {
		return nil, nil
	}
	// The idle rule, after the readings are in: the jobs on the node
	// change only now (an action takes a job off it).
	return s.idleAction(now, sc.idle), nil
}

// telScratch is the scratch of one TelemetryEvent (empty between calls
// but for its capacity).
type telScratch struct {
	rise    []float64 // per device: the energy counter's rise (-1: unknown)
	holders []int32   // per device: the running jobs holding it (at least 1)
	idle    []*job    // the jobs read, for the idle rule
	order   []int32   // the readings' positions, by (job, step), for the duplicate check
}

// MaxReadings bounds the job readings (TelemetryEvent.Jobs) of one
// event, so that a hostile event costs a bounded amount: room for 1,000
// jobs on a node, each with its own reading and MaxSteps step readings.
const MaxReadings = 1000 * (MaxSteps + 1)

// fill returns buf resized to n, every element v.
func fill[T any](buf []T, n int, v T) []T {
	if cap(buf) < n {
		buf = make([]T, n)
	}
	buf = buf[:n]
	for i := range buf {
		buf[i] = v
	}
	return buf
}

// countHolders counts, per device of node n (index ni), the running
// jobs holding it, whole or shared, into s.telScratch.holders (at least
// 1 each): what a shared device's power and energy are split by.
func (s *Scheduler) countHolders(n *node, ni, ndev int) {
	h := fill(s.telScratch.holders, ndev, 0)
	for j, pos := range s.runningOn(n, ni) {
		for d := range heldDevs(&j.Alloc.Nodes[pos]) {
			if d >= 0 && d < ndev {
				h[d]++
			}
		}
	}
	for i := range h {
		h[i] = max(h[i], 1)
	}
	s.telScratch.holders = h
}

// jobGPUReading sums the device samples of the devices job allocation a
// holds on its node (whole devices and shared ones) into one reading,
// with the job's own utilisation where its reading names it; holders
// counts each device's holders (countHolders). ok is false when the
// samples cover none of its devices.
func jobGPUReading(now time.Time, a *NodeAlloc, devs []gres.DeviceSample, rise []float64, holders []int32, own *JobReading) (telemetry.GPUReading, bool) {
	g := telemetry.GPUReading{Time: now, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1}
	found := false
	for _, d := range devs {
		if !holdsDevice(a, d.Index) {
			continue
		}
		found = true
		util := d.Utilization
		if own != nil {
			for _, o := range own.GPUs {
				if o.Index == d.Index {
					util = o.Utilization
				}
			}
		}
		if util >= 0 {
			g.Devices++
			g.UtilizationSum += util
		}
		sharers := float64(holders[d.Index])
		if d.MemoryUsedMiB >= 0 {
			g.MemoryUsedMiB = max(g.MemoryUsedMiB, 0) + d.MemoryUsedMiB
		}
		if d.PowerWatts >= 0 {
			g.PowerWatts = min(max(g.PowerWatts, 0)+d.PowerWatts/sharers, math.MaxFloat64)
		}
		if r := rise[d.Index]; r >= 0 {
			g.EnergyJoules = min(max(g.EnergyJoules, 0)+r/sharers, math.MaxFloat64)
		}
	}
	g.UtilizationSum = min(g.UtilizationSum, 100*float64(g.Devices))
	return g, found
}

// heldDevs yields the devices a holds, each once: its whole devices (in
// index order), then those it holds only through shares (a job holding
// two shares of one device, or a share of a device it holds whole, holds
// it once).
func heldDevs(a *NodeAlloc) iter.Seq[int] {
	return func(yield func(int) bool) {
		for _, d := range a.Devices {
			if !yield(d) {
				return
			}
		}
		for k, sh := range a.Shares {
			if slices.ContainsFunc(a.Shares[:k], func(o gres.ShareGrant) bool { return o.Device == sh.Device }) {
				continue
			}
			if _, whole := slices.BinarySearch(a.Devices, sh.Device); whole {
				continue
			}
			if !yield(sh.Device) {
				return
			}
		}
	}
}

// holdsDevice reports whether a holds device idx, whole or shared.
func holdsDevice(a *NodeAlloc, idx int) bool {
	if _, ok := slices.BinarySearch(a.Devices, idx); ok {
		return true
	}
	for _, sh := range a.Shares {
		if sh.Device == idx {
			return true
		}
	}
	return false
}

// runningOn iterates over the running jobs on node n (index ni) with
// the position of the node in each one's allocation.
func (s *Scheduler) runningOn(n *node, ni int) iter.Seq2[*job, int] {
	return func(yield func(*job, int) bool) {
		for _, id := range n.jobs {
			j := s.jobs[id]
			if j == nil || j.State != JobRunning {
				continue
			}
			if pos := allocPos(j, ni); pos >= 0 && !yield(j, pos) {
				return
			}
		}
	}
}

// hostReading is job reading r as a host reading: its CPU counter's rise
// since *last (the counter starts at 0 with the run's cgroup), *last
// moved on; a counter that fell (a new cgroup) starts again from there.
func hostReading(last *float64, r *JobReading) telemetry.HostReading {
	h := telemetry.HostReading{CPUSeconds: -1, MemoryPeakBytes: r.MemoryPeakBytes}
	if r.CPUSeconds >= 0 {
		if *last >= 0 && r.CPUSeconds >= *last {
			h.CPUSeconds = r.CPUSeconds - *last
		}
		*last = r.CPUSeconds
	}
	return h
}

// allocPos returns the position of node ni in j's allocation, or -1.
func allocPos(j *job, ni int) int {
	for k := range j.Alloc.Nodes {
		if j.Alloc.Nodes[k].Node == ni {
			return k
		}
	}
	return -1
}

// maxDeviceMiB bounds a device sample's memory in use (an exbibyte), so
// that a job's sum over its devices cannot overflow.
const maxDeviceMiB = 1 << 40

// checkTelemetry validates e against node n, changing nothing.
func (s *Scheduler) checkTelemetry(n *node, e TelemetryEvent) error {
	ndev := 0
	var inv *gres.Inventory
	if n.devs != nil {
		inv = n.devs.Inventory()
		ndev = len(inv.Devices)
	}
	for k, d := range e.Devices {
		if err := d.Validate(); err != nil {
			return fmt.Errorf("%w: sample %d: %w", ErrInvalidEvent, k, err)
		}
		// Beyond gres's check (which refuses an infinite power or energy,
		// one that would make the job's usage unencodable and the node's
		// energy counter unrestorable): a memory whose sum over a node's
		// devices cannot overflow.
		if d.MemoryUsedMiB > maxDeviceMiB {
			return fmt.Errorf("%w: sample %d: device %d: memory used %d MiB (at most %d)", ErrInvalidEvent, k, d.Index, d.MemoryUsedMiB, int64(maxDeviceMiB))
		}
		if d.Index >= ndev {
			return fmt.Errorf("%w: sample %d: device %d, the node has %d", ErrInvalidEvent, k, d.Index, ndev)
		}
		if u := inv.Devices[d.Index].UUID; d.UUID != "" && u != "" && d.UUID != u {
			return fmt.Errorf("%w: sample %d: device %d is %s, the sample names %s", ErrInvalidEvent, k, d.Index, u, d.UUID)
		}
		for _, o := range e.Devices[:k] {
			if o.Index == d.Index {
				return fmt.Errorf("%w: sample %d: device %d sampled twice", ErrInvalidEvent, k, d.Index)
			}
		}
	}
	if len(e.Jobs) > MaxReadings {
		return fmt.Errorf("%w: %d job readings (at most %d)", ErrInvalidEvent, len(e.Jobs), MaxReadings)
	}
	for k, r := range e.Jobs {
		// The counter, not its rise, but the same bounds as a host reading's.
		if err := (telemetry.HostReading{CPUSeconds: r.CPUSeconds, MemoryPeakBytes: r.MemoryPeakBytes}).Validate(); err != nil {
			return fmt.Errorf("%w: reading %d (job %d): %w", ErrInvalidEvent, k, r.Job, err)
		}
		if r.Step != "" {
			if msg := badStepName(r.Step); msg != "" {
				return fmt.Errorf("%w: reading %d (job %d): %s", ErrInvalidEvent, k, r.Job, msg)
			}
		}
		for i, g := range r.GPUs {
			if slices.ContainsFunc(r.GPUs[:i], func(o JobGPUReading) bool { return o.Index == g.Index }) {
				return fmt.Errorf("%w: reading %d (job %d): device %d read twice", ErrInvalidEvent, k, r.Job, g.Index)
			}
			if g.Index < 0 || g.Index >= ndev {
				return fmt.Errorf("%w: reading %d (job %d): device %d, the node has %d", ErrInvalidEvent, k, r.Job, g.Index, ndev)
			}
			if !(g.Utilization >= 0 && g.Utilization <= 100) {
				return fmt.Errorf("%w: reading %d (job %d): device %d utilization %v outside [0, 100]", ErrInvalidEvent, k, r.Job, g.Index, g.Utilization)
			}
		}
	}
	return s.checkReadingsOnce(e.Jobs)
}

// checkReadingsOnce fails when a (job, step) is read twice in rs, naming
// the later reading; it sorts positions (O(n log n)), not pairs.
func (s *Scheduler) checkReadingsOnce(rs []JobReading) error {
	if len(rs) < 2 {
		return nil
	}
	ord := s.telScratch.order[:0]
	for k := range rs {
		ord = append(ord, int32(k))
	}
	s.telScratch.order = ord
	slices.SortStableFunc(ord, func(a, b int32) int {
		return cmp.Or(cmp.Compare(rs[a].Job, rs[b].Job), strings.Compare(rs[a].Step, rs[b].Step))
	})
	for i := 1; i < len(ord); i++ {
		p, r := &rs[ord[i-1]], &rs[ord[i]]
		if p.Job != r.Job || p.Step != r.Step {
			continue
		}
		if r.Step != "" {
			return fmt.Errorf("%w: reading %d: step %s of job %d read twice", ErrInvalidEvent, ord[i], r.Step, r.Job)
		}
		return fmt.Errorf("%w: reading %d: job %d read twice", ErrInvalidEvent, ord[i], r.Job)
	}
	return nil
}

// badStepName says what is wrong with a step name ("" when nothing): at
// most maxStepName bytes of valid UTF-8, without blanks, control
// characters, '|' or ',' (the names sacct lists: "batch", "extern", "0").
func badStepName(step string) string {
	switch {
	case step == "":
		return "empty step name"
	case len(step) > maxStepName:
		return fmt.Sprintf("step name of %d bytes (at most %d)", len(step), maxStepName)
	case !utf8.ValidString(step):
		return fmt.Sprintf("step name %q is not valid UTF-8", step)
	}
	for _, r := range step {
		if r <= ' ' || r == 0x7f || r == '|' || r == ',' {
			return fmt.Sprintf("step name %q contains %q", step, r)
		}
	}
	return ""
}
