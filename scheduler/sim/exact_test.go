package sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
)

// drain reads every job of src.
func drain(t *testing.T, src sim.Source) []sim.Job {
	t.Helper()
	var out []sim.Job
	for {
		j, ok, err := src.Next()
		require.NoError(t, err)
		if !ok {
			return out
		}
		out = append(out, j)
	}
}

// With exact estimates every job ends exactly at its limit, which is its
// run time, and the replay does the same work as the replay with the
// jobs' own limits: a job that overran its request runs only up to it
// (there it is ended at its limit).
func TestExactEstimatesReplayTheSameWorkload(t *testing.T) {
	jobs := []sim.Job{
		job("overran", 0, 2, 105, 100), // ended at its limit with its own
		job("early", 0, 1, 40, 100),
		job("on-limit", 10, 1, 60, 60),
		job("long-wait", 20, 4, 30, 50),
		{Spec: scheduler.JobSpec{Name: "sub-second", Nodes: 1, TimeLimit: sec(10)}, Submit: at(30), Runtime: 400 * time.Millisecond},
		{Spec: scheduler.JobSpec{Name: "no-limit", Nodes: 1}, Submit: at(40), Runtime: sec(70)},
	}
	exact := drain(t, sim.ExactEstimates(&sim.SliceSource{Jobs: jobs}))
	require.Len(t, exact, len(jobs))
	want := map[string]time.Duration{"overran": sec(100), "early": sec(40), "on-limit": sec(60),
		"long-wait": sec(30), "sub-second": 400 * time.Millisecond, "no-limit": sec(70)}
	for _, j := range exact {
		assert.Equal(t, want[j.Spec.Name], j.Runtime, j.Spec.Name)
		assert.Equal(t, max(want[j.Spec.Name], time.Second), j.Spec.TimeLimit, j.Spec.Name)
	}

	user := run(t, procs(4), jobs, sim.Options{})
	ex := run(t, procs(4), exact, sim.Options{})
	assert.Equal(t, 1, user.Summary.TimedOut)
	assert.Zero(t, ex.Summary.TimedOut)
	assert.Equal(t, len(jobs), ex.Summary.Completed)
	for _, r := range ex.Jobs {
		assert.Equal(t, want[r.Job.Spec.Name], r.RunTime(), "%s ends exactly at its run time", r.Job.Spec.Name)
	}
	assert.InDelta(t, user.Summary.CPUHours, ex.Summary.CPUHours, 1e-12, "the same work")
	var work float64 // CPU-hours of each job's run time, cut to its own limit
	for _, j := range jobs {
		run := j.Runtime
		if j.Spec.TimeLimit > 0 {
			run = min(run, j.Spec.TimeLimit)
		}
		work += float64(j.Spec.Nodes) * run.Hours()
	}
	assert.InDelta(t, work, ex.Summary.CPUHours, 1e-12)
}

// Lost to time limits is the work beyond the limits, not the runs of the
// jobs that reached them: a job that overran its limit by 5 s loses 5 s
// of its CPUs, and the replay's CPU-hours plus what the limits cut off
// are the workload's.
func TestLostToTimeLimitsCountsOnlyTheWorkBeyondTheLimit(t *testing.T) {
	jobs := []sim.Job{
		job("overran-by-seconds", 0, 2, 3605, 3600),
		job("far-over", 0, 1, 500, 100),
		job("within", 0, 1, 50, 100),
	}
	res := run(t, procs(4), jobs, sim.Options{})
	got := byName(res)
	assert.Equal(t, scheduler.JobTimeout, got["overran-by-seconds"].State)
	assert.InDelta(t, 2*5.0/3600, got["overran-by-seconds"].LostCPUHours(), 1e-12)
	assert.InDelta(t, 400.0/3600, got["far-over"].LostCPUHours(), 1e-12)
	assert.Zero(t, got["within"].LostCPUHours())
	sum := res.Summary
	assert.InDelta(t, (10+400)/3600.0, sum.LostCPUHoursTimeLimit, 1e-12)
	assert.Equal(t, sum.LostCPUHoursTimeLimit, sum.LostCPUHours, "nothing else ended a job")
	workload := (2*3605 + 500 + 50) / 3600.0
	assert.InDelta(t, workload, sum.CPUHours+sum.LostCPUHoursTimeLimit, 1e-12)

	exact := run(t, procs(4), drain(t, sim.ExactEstimates(&sim.SliceSource{Jobs: jobs})), sim.Options{})
	assert.Zero(t, exact.Summary.LostCPUHours, "exact estimates: no job reaches its limit short of its work")
}
