package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/telemetry"
)

// TelemetrySummary is what the simulated telemetry did
// (Options.TelemetryEvery): how many readings the scheduler got and what
// its allocated-but-idle policy (scheduler.TelemetryConfig, the
// scheduler's Config.Telemetry) made of them.
type TelemetrySummary struct {
	// Every is Options.TelemetryEvery (zero: telemetry was off and every
	// other field is zero).
	Every time.Duration
	// Events counts the TelemetryEvents applied (one per node running a
	// profiled job, per grid instant); Samples their device samples.
	Events, Samples int
	// IdleNotices counts the DecisionIdle records that only reported a
	// job (a run becoming allocated-but-idle, any action).
	IdleNotices int
	// IdleRequeues and IdleCancels count the runs the idle action ended:
	// requeued (the job ran again later) and ended CANCELLED.
	IdleRequeues, IdleCancels int
	// LimitCancels counts the runs the requeue action (IdleRequeue)
	// ended instead of requeueing them, the job requeued
	// TelemetryConfig.MaxIdleRequeues times already or not requeueable
	// (ended CANCELLED; not in IdleCancels).
	LimitCancels int
	// IdleGPUHours is the allocated-but-idle time the scheduler measured
	// (Job.Usage.IdleSeconds, all runs, every node that reported) × the
	// job's GPUs per node, over the jobs that ended: the "idle GPU-hours"
	// a report would show.
	IdleGPUHours float64
	// UnsampledRuns counts the profiled runs on GPUs that got no reading
	// (once per node of the run): on nodes without a device inventory (count-only GPUs, as the swf
	// package's GPUsPerNode gives), which a device sample cannot name.
	UnsampledRuns int
}

// telNode is the sampler's view of one node of the scheduler.
type telNode struct {
	name string
	ndev int // devices in the node's inventory (0: none, never sampled)
	// held lists the runs holding devices of the node (any order); the
	// entries past len keep their device buffers for reuse.
	held     []telHold
	profiled int  // how many of held have a profile
	listed   bool // in telSampler.active
}

// telHold is one run's devices on one node.
type telHold struct {
	id   scheduler.JobID
	lj   *live
	devs []int
}

// telSampler turns the running jobs' profiles into TelemetryEvents on the
// grid Start + k × every.
type telSampler struct {
	every time.Duration
	start time.Time
	next  time.Time // the next grid instant due (zero: none)
	power PowerModel
	nodes []telNode // by scheduler node index
	// active lists the nodes with a profiled run (some may have lost it
	// since: compacted, and sorted, at each instant). Only hold adds to
	// it, never while an instant's events are applied.
	active  []int
	samples []gres.DeviceSample
	// ev is the event applied, reused: passed by pointer, it is not
	// boxed anew for each Apply (the journal encodes a pointer to an
	// event as the event).
	ev  *scheduler.TelemetryEvent
	sum TelemetrySummary
}

func newTelSampler(s *scheduler.Scheduler, opt Options, start time.Time) *telSampler {
	t := &telSampler{every: opt.TelemetryEvery, start: start, power: opt.Power, ev: new(scheduler.TelemetryEvent)}
	t.sum.Every = opt.TelemetryEvery
	for _, n := range s.Nodes() {
		for len(t.nodes) <= n.Index {
			t.nodes = append(t.nodes, telNode{})
		}
		nd := 0
		for _, d := range n.FreeDevices {
			nd = max(nd, d+1)
		}
		for _, d := range n.UnhealthyDevices {
			nd = max(nd, d+1)
		}
		t.nodes[n.Index] = telNode{name: n.Name, ndev: nd}
	}
	return t
}

// checkTelemetryOptions validates the telemetry options against the
// scheduler's telemetry rule.
func checkTelemetryOptions(s *scheduler.Scheduler, opt Options) error {
	switch {
	case opt.TelemetryEvery < 0:
		return fmt.Errorf("%w: TelemetryEvery %v is negative", ErrInvalidOptions, opt.TelemetryEvery)
	case opt.TelemetryEvery == 0:
		return nil
	}
	gap := s.Telemetry().Rule.MaxGap
	if gap == 0 {
		gap = telemetry.DefaultMaxGap
	}
	if opt.TelemetryEvery > gap {
		return fmt.Errorf("%w: TelemetryEvery %v is longer than the scheduler's telemetry MaxGap %v: each reading would cover only part of its interval",
			ErrInvalidOptions, opt.TelemetryEvery, gap)
	}
	return nil
}

// gridAfter returns the first grid instant after now.
func (t *telSampler) gridAfter(now time.Time) time.Time {
	k := now.Sub(t.start)/t.every + 1
	return t.start.Add(k * t.every)
}

// hold registers the run of job id (record lj) that started at now with
// allocation a.
func (t *telSampler) hold(now time.Time, id scheduler.JobID, lj *live, a scheduler.Allocation) {
	prof := lj.job.Profile.Known()
	for _, na := range a.Nodes {
		n := &t.nodes[na.Node]
		if n.ndev == 0 {
			if prof {
				t.sum.UnsampledRuns++ // GPUs by count only
			}
			continue
		}
		if len(na.Devices) == 0 && len(na.Shares) == 0 {
			continue
		}
		k := len(n.held)
		if k < cap(n.held) {
			n.held = n.held[:k+1]
		} else {
			n.held = append(n.held, telHold{})
		}
		h := &n.held[k]
		h.id, h.lj = id, lj
		h.devs = append(h.devs[:0], na.Devices...)
		for _, sh := range na.Shares {
			if !slices.Contains(h.devs, sh.Device) {
				h.devs = append(h.devs, sh.Device)
			}
		}
		lj.telNodes = append(lj.telNodes, na.Node)
		if !prof {
			continue
		}
		n.profiled++
		lj.telSampled = true
		if !n.listed {
			n.listed = true
			t.active = append(t.active, na.Node)
		}
		if t.next.IsZero() {
			t.next = t.gridAfter(now)
		}
	}
}

// drop forgets the run of job id (record lj): it ended or was requeued.
func (t *telSampler) drop(id scheduler.JobID, lj *live) {
	prof := lj.job.Profile.Known()
	for _, ni := range lj.telNodes {
		n := &t.nodes[ni]
		for k := range n.held {
			if n.held[k].id != id {
				continue
			}
			last := len(n.held) - 1
			n.held[k], n.held[last] = n.held[last], n.held[k] // keep both buffers
			n.held[last].lj = nil
			n.held = n.held[:last]
			if prof {
				n.profiled--
			}
			break
		}
	}
	lj.telNodes = lj.telNodes[:0]
}

// due reports whether a grid instant is due at now.
func (t *telSampler) due(now time.Time) bool {
	return t != nil && !t.next.IsZero() && !t.next.After(now)
}

// sampleTelemetry applies, at the grid instant now, one TelemetryEvent
// per node running a profiled job (in node order), each with one device
// sample per device of the node: the utilisation the profile of the run
// holding the device gives its current work position (0 while suspended;
// -1, unknown, for a run without a profile; 0 for a device no run holds),
// its power under Options.Power (-1 when unknown) and no memory or energy
// reading. The runs the scheduler's idle action took back are ended or
// requeued here. It reports whether any was, and schedules the next grid
// instant while a profiled run remains.
func (r *runner) sampleTelemetry(now time.Time) (bool, error) {
	t := r.tel
	t.next = time.Time{}
	keep := t.active[:0]
	for _, ni := range t.active {
		if t.nodes[ni].profiled > 0 {
			keep = append(keep, ni)
		} else {
			t.nodes[ni].listed = false
		}
	}
	t.active = keep
	slices.Sort(t.active)
	acted := false
	for _, ni := range t.active {
		n := &t.nodes[ni]
		if n.profiled == 0 {
			continue // its runs ended at this instant
		}
		t.samples = t.samples[:0]
		for d := range n.ndev {
			t.samples = append(t.samples, gres.DeviceSample{Index: d, MemoryUsedMiB: -1, EnergyJoules: -1})
		}
		for k := range n.held {
			u := -1.0
			if lj := n.held[k].lj; lj.job.Profile.Known() {
				u = 0
				if lj.suspendedAt.IsZero() {
					pos := lj.done + lj.worked(now)
					u = lj.job.Profile.At(lj.job.Runtime, pos)
				}
			}
			for _, d := range n.held[k].devs {
				if d < 0 || d >= n.ndev {
					continue
				}
				sm := &t.samples[d]
				if sm.Utilization < 0 {
					continue
				}
				if u < 0 {
					sm.Utilization = -1
				} else {
					sm.Utilization = min(100, sm.Utilization+u)
				}
			}
		}
		for d := range t.samples {
			sm := &t.samples[d]
			sm.PowerWatts = -1
			if sm.Utilization >= 0 {
				sm.PowerWatts = t.power.IdleWatts + sm.Utilization/100*(t.power.MaxWatts-t.power.IdleWatts)
			}
		}
		*t.ev = scheduler.TelemetryEvent{Node: n.name, Devices: t.samples}
		res, err := r.s.Apply(now, t.ev)
		if err != nil {
			return acted, fmt.Errorf("sim: telemetry of node %s at %s: %w", n.name, now.Format(time.RFC3339), err)
		}
		t.sum.Events++
		t.sum.Samples += len(t.samples)
		for _, id := range res.Jobs {
			acted = true
			if err := r.idleEnded(now, id); err != nil {
				return acted, err
			}
		}
	}
	for _, ni := range t.active {
		if t.nodes[ni].profiled > 0 {
			t.next = now.Add(t.every)
			break
		}
	}
	return acted, nil
}

// idleEnded applies the idle action's decision on job id at now: a
// requeued job's run ends (all its work since its start is lost, as the
// scheduler counts it: the simulator sends no checkpoints) and it waits
// to run again; a job the action ended (IdleCancel, or IdleRequeue past
// TelemetryConfig.MaxIdleRequeues) ends in the scheduler's state
// (CANCELLED).
func (r *runner) idleEnded(now time.Time, id scheduler.JobID) error {
	lj, ok := r.jobs[id]
	if !ok || !lj.inRun {
		return fmt.Errorf("sim: telemetry at %s took back job %d, which the simulator does not run", now.Format(time.RFC3339), id)
	}
	j, ok := r.s.Job(id)
	if !ok {
		return fmt.Errorf("sim: telemetry at %s took back job %d, which the scheduler does not know", now.Format(time.RFC3339), id)
	}
	lj.keep = 0
	if j.State != scheduler.JobPending {
		if r.s.Telemetry().Action == scheduler.IdleRequeue {
			r.tel.sum.LimitCancels++
		} else {
			r.tel.sum.IdleCancels++
		}
		return r.ended(id, lj, now, j.State)
	}
	r.tel.sum.IdleRequeues++
	r.requeued(id, lj, now)
	if b := j.Spec.BeginTime; b.After(now) {
		// the requeue delay (Config.RequeueDelay): a cycle then
		r.q.push(event{at: b, id: id, kind: evWake})
	}
	return nil
}

// telemetryEnded folds what the scheduler measured of job id's idle time
// into the summary, and forgets the job's current run (if any). The job is
// still in the scheduler (it has just ended).
func (r *runner) telemetryEnded(id scheduler.JobID, lj *live) {
	r.tel.drop(id, lj)
	if !lj.telSampled || lj.nodes == 0 {
		return
	}
	if j, ok := r.s.Job(id); ok && j.Usage != nil {
		r.tel.sum.IdleGPUHours += j.Usage.IdleSeconds / 3600 * float64(lj.gpus) / float64(lj.nodes)
	}
}

// countIdleNotices counts the DecisionIdle records of a cycle that only
// reported a job.
func (t *telSampler) countIdleNotices(ds []scheduler.Decision) {
	for i := range ds {
		if ds[i].Kind == scheduler.DecisionIdle && ds[i].Action == policy.ActionNone {
			t.sum.IdleNotices++
		}
	}
}
