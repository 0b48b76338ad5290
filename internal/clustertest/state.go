package clustertest

import (
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

// StateOptions shape a standard-scale scheduler state.
type StateOptions struct {
	// Running and Pending are the load: jobs running and jobs queued
	// (DESIGN.md's standard scale is 40,000 and 100,000).
	Running, Pending int
	// Seed makes the workload reproducible.
	Seed uint64
	// Configure, when set, adjusts the standard cluster's configuration
	// (priority, backfill, policy) before the scheduler is built.
	Configure func(*scheduler.Config) error
	// Spec, when set, adjusts the k-th job's spec of the workload before
	// it is submitted (after the choice of the small jobs that fill the
	// cluster).
	Spec func(k int, spec *scheduler.JobSpec)
	// Mutate, when set, adjusts the k-th job of the workload before it
	// is queued (where-requests in the mix, say); the running jobs are
	// the standard ones.
	Mutate func(k int, spec *scheduler.JobSpec)
}

// NewState returns a scheduler over the standard cluster (adjusted by
// o.Configure) carrying the standard load: it submits small (1–2 GPU,
// shared-node) jobs and runs cycles until about o.Running run, then queues
// o.Pending more jobs of the whole mix. It returns the scheduler and the
// time the state is at.
func NewState(o StateOptions) (*scheduler.Scheduler, time.Time, error) {
	cfg := StandardCluster()
	if o.Configure != nil {
		if err := o.Configure(&cfg); err != nil {
			return nil, time.Time{}, err
		}
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		return nil, time.Time{}, err
	}
	now := Epoch
	jobs := Workload(WorkloadConfig{Jobs: o.Running*2 + o.Pending, Seed: o.Seed})
	started, next := 0, 0
	for started < o.Running && next < len(jobs) {
		for submitted := 0; submitted < min(o.Running-started, 4096) && next < len(jobs); next++ {
			spec := jobs[next].Spec
			if spec.Nodes > 1 || spec.Exclusive || spec.GRESPerNode[0].Count > 2 {
				continue
			}
			if o.Spec != nil {
				o.Spec(next, &spec)
			}
			if _, err := s.Submit(now, spec); err != nil {
				return nil, now, err
			}
			submitted++
		}
		cyc, err := s.Schedule(now)
		if err != nil {
			return nil, now, err
		}
		started += len(cyc.Starts)
		if len(cyc.Starts) == 0 {
			break
		}
		now = now.Add(time.Second)
	}
	queued, _ := s.Counts()
	for ; queued < o.Pending; next++ {
		if next == len(jobs) {
			jobs = append(jobs, Workload(WorkloadConfig{Jobs: o.Pending, Seed: o.Seed + 1})...)
		}
		spec := jobs[next].Spec
		if o.Spec != nil {
			o.Spec(next, &spec)
		}
		if o.Mutate != nil {
			o.Mutate(next, &spec)
		}
		if _, err := s.Submit(now, spec); err != nil {
			return nil, now, err
		}
		queued++
	}
	return s, now, nil
}
