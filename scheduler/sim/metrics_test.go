package sim_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
)

func result(submit, start, end time.Duration, cpus, gpus int64, st scheduler.JobState) sim.JobResult {
	return sim.JobResult{
		Job:   sim.Job{Submit: t0.Add(submit)},
		Start: t0.Add(start), End: t0.Add(end),
		CPUs: cpus, GPUs: gpus, State: st, Nodes: 1,
	}
}

// needing returns r with the work its job needed (Job.Runtime).
func needing(r sim.JobResult, run time.Duration) sim.JobResult {
	r.Job.Runtime = run
	return r
}

func TestJobMetrics(t *testing.T) {
	tests := []struct {
		name                string
		r                   sim.JobResult
		wait, response, run time.Duration
		slowdown, bsld      float64
		cpuH, gpuH          float64
		lost                bool
		lostCPUH, lostGPUH  float64
	}{
		{"no wait", result(0, 0, sec(100), 4, 0, scheduler.JobCompleted), 0, sec(100), sec(100), 1, 1, 400.0 / 3600, 0, false, 0, 0},
		{"waited", result(0, sec(300), sec(400), 2, 1, scheduler.JobCompleted), sec(300), sec(400), sec(100), 4, 4, 200.0 / 3600, 100.0 / 3600, false, 0, 0},
		// short job: bounded slowdown divides by τ = 10 s, slowdown by its 5 s
		{"short", result(0, sec(20), sec(25), 1, 0, scheduler.JobCompleted), sec(20), sec(25), sec(5), 5, 2.5, 5.0 / 3600, 0, false, 0, 0},
		// short and not waited: bounded slowdown is at least 1
		{"short no wait", result(0, 0, sec(2), 1, 0, scheduler.JobCompleted), 0, sec(2), sec(2), 1, 1, 2.0 / 3600, 0, false, 0, 0},
		// sub-second run: slowdown counts it as 1 s
		{"sub-second", result(0, sec(10), sec(10)+500*time.Millisecond, 1, 0, scheduler.JobCompleted), sec(10), sec(10) + 500*time.Millisecond, 500 * time.Millisecond, 10.5, 1.05, 0.5 / 3600, 0, false, 0, 0},
		{"zero run", result(0, sec(10), sec(10), 1, 0, scheduler.JobCompleted), sec(10), sec(10), 0, 10, 1, 0, 0, false, 0, 0},
		// ended at its limit 30 s short of its work: it loses those 30 s
		{"timeout", needing(result(0, sec(60), sec(3660), 8, 8, scheduler.JobTimeout), sec(3630)), sec(60), sec(3660), sec(3600), 3660.0 / 3600, 3660.0 / 3600, 8, 8, true, 8 * 30.0 / 3600, 8 * 30.0 / 3600},
		{"failed is not lost", result(0, 0, sec(3600), 1, 1, scheduler.JobFailed), 0, sec(3600), sec(3600), 1, 1, 1, 1, false, 0, 0},
		{"node fail", result(0, 0, sec(1800), 2, 0, scheduler.JobNodeFail), 0, sec(1800), sec(1800), 1, 1, 1, 0, true, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			assert.Equal(t, tc.wait, r.Wait())
			assert.Equal(t, tc.response, r.Response())
			assert.Equal(t, tc.run, r.RunTime())
			assert.InDelta(t, tc.slowdown, r.Slowdown(), 1e-12)
			assert.InDelta(t, tc.bsld, r.BoundedSlowdown(sim.BSLDThreshold), 1e-12)
			assert.InDelta(t, tc.cpuH, r.CPUHours(), 1e-12)
			assert.InDelta(t, tc.gpuH, r.GPUHours(), 1e-12)
			assert.Equal(t, tc.lost, r.Lost())
			assert.InDelta(t, tc.lostCPUH, r.LostCPUHours(), 1e-12)
			assert.InDelta(t, tc.lostGPUH, r.LostGPUHours(), 1e-12)
		})
	}
	// τ is a parameter: with τ = 60 s the short job's bounded slowdown is 1
	assert.Equal(t, 1.0, tests[2].r.BoundedSlowdown(time.Minute))
}

func TestSummarizePercentiles(t *testing.T) {
	var jobs []sim.JobResult
	for i := 1; i <= 10; i++ {
		// wait i seconds, run 10 s: bounded slowdown (i+10)/10
		jobs = append(jobs, result(0, sec(i), sec(i+10), 1, 0, scheduler.JobCompleted))
	}
	s := sim.Summarize(jobs, nil, sim.Capacity{Nodes: 2, CPUs: 2}, t0, t0.Add(sec(20)))
	assert.Equal(t, sim.Stats{Mean: 5.5, P50: 5, P90: 9, P95: 10, P99: 10, Max: 10}, s.Wait)
	assert.InDelta(t, 1.55, s.BSLD.Mean, 1e-12)
	assert.InDelta(t, 1.5, s.BSLD.P50, 1e-12)
	assert.InDelta(t, 2.0, s.BSLD.Max, 1e-12)
	assert.Equal(t, 20*time.Second, s.Makespan)
	// 10 jobs × 1 CPU × 10 s over 2 CPUs × 20 s
	assert.InDelta(t, 100.0/40, s.CPUUtilization, 1e-12, "Summarize does not clamp: a wrong capacity shows")
	assert.Equal(t, 10, s.Completed)

	one := sim.Summarize(jobs[:1], nil, sim.Capacity{CPUs: 1}, t0, t0.Add(sec(11)))
	assert.Equal(t, sim.Stats{Mean: 1, P50: 1, P90: 1, P95: 1, P99: 1, Max: 1}, one.Wait)
	assert.Equal(t, sim.Summary{}, sim.Summarize(nil, nil, sim.Capacity{}, t0, t0))
}

// TestSummarizeMatchesJobMethods checks that the per-job figures Summarize
// (and Run) aggregate are exactly, bit for bit, those of the JobResult
// methods, summed in job order.
func TestSummarizeMatchesJobMethods(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	states := []scheduler.JobState{scheduler.JobCompleted, scheduler.JobFailed, scheduler.JobTimeout,
		scheduler.JobNodeFail, scheduler.JobPreempted, scheduler.JobCancelled}
	var jobs []sim.JobResult
	for range 500 {
		submit := time.Duration(rng.IntN(100000)) * time.Millisecond
		start := submit + time.Duration(rng.IntN(100000))*time.Millisecond
		end := start + time.Duration(rng.IntN(100000))*time.Millisecond
		r := result(submit, start, end, int64(rng.IntN(64)), int64(rng.IntN(8)), states[rng.IntN(len(states))])
		r.Suspended = time.Duration(rng.Int64N(int64(end-start) + 1))
		r.RequeuedCPUHours, r.RequeuedGPUHours = rng.Float64()*3, rng.Float64()
		r.LostCPUSeconds, r.LostGPUSeconds = rng.Float64()*100, rng.Float64()*10
		if rng.IntN(2) == 0 {
			r.FirstExpectedStart = t0.Add(time.Duration(rng.IntN(200000)) * time.Millisecond)
		}
		jobs = append(jobs, r)
	}
	var wait, resp, slow, bsld, eta, cpuH, gpuH, lostC, lostG float64
	var estimated int
	for _, r := range jobs {
		wait += r.Wait().Seconds()
		resp += r.Response().Seconds()
		slow += r.Slowdown()
		bsld += r.BoundedSlowdown(sim.BSLDThreshold)
		if d, ok := r.ETAError(); ok {
			eta += d.Seconds()
			estimated++
		}
		cpuH += r.CPUHours() + r.RequeuedCPUHours
		gpuH += r.GPUHours() + r.RequeuedGPUHours
		lostC += r.LostCPUHours()
		lostG += r.LostGPUHours()
	}
	n := float64(len(jobs))
	s := sim.Summarize(jobs, nil, sim.Capacity{CPUs: 64, GPUs: 8}, t0, t0.Add(time.Hour))
	assert.Equal(t, wait/n, s.Wait.Mean)
	assert.Equal(t, resp/n, s.Response.Mean)
	assert.Equal(t, slow/n, s.Slowdown.Mean)
	assert.Equal(t, bsld/n, s.BSLD.Mean)
	assert.Equal(t, estimated, s.ETA.Jobs)
	assert.Equal(t, eta/float64(estimated), s.ETA.Bias)
	assert.Equal(t, cpuH, s.CPUHours)
	assert.Equal(t, gpuH, s.GPUHours)
	assert.Equal(t, lostC, s.LostCPUHours)
	assert.Equal(t, lostG, s.LostGPUHours)
}
