package scheduler

import (
	"slices"
	"time"

	"github.com/sluicehq/sluice/telemetry"
)

// MaxSteps bounds the steps whose usage a job keeps per run (JobReading
// with a Step): readings of further steps are not kept per step (the
// job's own reading still covers them), so a job that runs many small
// steps costs the scheduler a bounded amount.
const MaxSteps = 64

// maxStepName bounds the length of JobReading.Step.
const maxStepName = 64

// StepUsage is what one step of a job's current run did (Job.Steps),
// folded from the readings of its cgroup (JobReading.Step) on all the
// job's nodes: Slurm's per-step TRESUsageIn* (sacct -j JOB.STEP).
type StepUsage struct {
	Step  string
	Usage telemetry.Usage
}

// stepUsage is one step's usage on one node of the job's allocation.
type stepUsage struct {
	step string
	pos  int // the node's position in Alloc.Nodes
	telemetry.Usage
	cpuLast float64 // the last CPU counter read (0 before the first, as nodeUsage's)
}

// foldSteps folds the step readings of job id in rs, read on the job's
// pos-th node (where it holds a) at now, into the steps' usage (since:
// the run's start). A step's GPU reading counts only the devices a
// holds, as the job's own reading does (jobGPUReading).
func (t *jobTelemetry) foldSteps(id JobID, pos int, a *NodeAlloc, rs []JobReading, since, now time.Time, rule telemetry.Rule) {
	for k := range rs {
		r := &rs[k]
		if r.Job != id || r.Step == "" {
			continue
		}
		i := slices.IndexFunc(t.steps, func(u stepUsage) bool { return u.step == r.Step && u.pos == pos })
		if i < 0 {
			if !slices.ContainsFunc(t.steps, func(u stepUsage) bool { return u.step == r.Step }) && t.stepCount() >= MaxSteps {
				continue
			}
			t.steps = append(t.steps, stepUsage{step: r.Step, pos: pos})
			i = len(t.steps) - 1
		}
		u := &t.steps[i]
		g := telemetry.GPUReading{Time: now, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1}
		for _, x := range r.GPUs {
			if holdsDevice(a, x.Index) {
				g.Devices++
				g.UtilizationSum += x.Utilization
			}
		}
		if g.Devices > 0 {
			u.AddGPU(g, since, rule)
		}
		u.AddHost(hostReading(&u.cpuLast, r))
	}
}

// stepCount counts the distinct steps kept.
func (t *jobTelemetry) stepCount() int {
	c := 0
	for i, u := range t.steps {
		if !slices.ContainsFunc(t.steps[:i], func(o stepUsage) bool { return o.step == u.step }) {
			c++
		}
	}
	return c
}

// stepUsages returns the current run's steps, each merged over its
// nodes, in the order first read (nil without any).
func (t *jobTelemetry) stepUsages() []StepUsage {
	if t == nil || len(t.steps) == 0 {
		return nil
	}
	var out []StepUsage
	for _, u := range t.steps {
		i := slices.IndexFunc(out, func(o StepUsage) bool { return o.Step == u.step })
		if i < 0 {
			out = append(out, StepUsage{Step: u.step})
			i = len(out) - 1
		}
		out[i].Usage.Merge(u.Usage)
	}
	return out
}
