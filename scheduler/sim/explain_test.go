package sim_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
)

// withPolicy returns cfg and opt configured for policy p.
func withPolicy(t *testing.T, p sim.Policy, cfg scheduler.Config, opt sim.Options) (scheduler.Config, sim.Options) {
	t.Helper()
	require.NoError(t, p.Apply(&cfg, &opt))
	return cfg, opt
}

// TestETAStatsHandMade checks the ETA statistics on hand-made results:
// errors (actual − first estimate) of −30, 0, 0, +10 and +50 s, and one
// job without an estimate.
func TestETAStatsHandMade(t *testing.T) {
	var jobs []sim.JobResult
	for _, c := range []struct{ start, eta int }{{70, 100}, {100, 100}, {5, 5}, {60, 50}, {250, 200}} {
		r := result(0, sec(c.start), sec(c.start+10), 1, 0, scheduler.JobCompleted)
		r.FirstExpectedStart = at(c.eta)
		jobs = append(jobs, r)
	}
	jobs = append(jobs, result(0, 0, sec(10), 1, 0, scheduler.JobCompleted))

	d, ok := jobs[0].ETAError()
	assert.True(t, ok)
	assert.Equal(t, sec(-30), d)
	_, ok = jobs[5].ETAError()
	assert.False(t, ok)

	eta := sim.Summarize(jobs, nil, sim.Capacity{CPUs: 4}, t0, at(260)).ETA
	assert.Equal(t, 5, eta.Jobs)
	assert.Equal(t, 1, eta.Unestimated)
	assert.Equal(t, 1, eta.Early)
	assert.Equal(t, 2, eta.Late)
	// |errors| sorted: 0 0 10 30 50
	assert.Equal(t, sim.Stats{Mean: 18, P50: 10, P90: 50, P95: 50, P99: 50, Max: 50}, eta.Error)
	assert.InDelta(t, (-30.0+0+0+10+50)/5, eta.Bias, 1e-12)
	assert.InDelta(t, 3.0/5, eta.OnTime, 1e-12, "early or exact: −30, 0, 0")

	assert.Equal(t, sim.ETAStats{Unestimated: 1}, sim.Summarize(jobs[5:], nil, sim.Capacity{CPUs: 4}, t0, at(10)).ETA)
}

// TestRunETAHandComputed: on 4 processors under EASY, A (4 procs, limit
// 100 s) runs from 0 but ends at 50; B (2 procs) arrives at 10, is
// promised 100 (A's limit) and starts at 50: 50 s early. C, arriving at
// 60 on a free processor, starts at once and has no estimate.
func TestRunETAHandComputed(t *testing.T) {
	cfg, opt := withPolicy(t, sim.EASY, procs(4), sim.Options{})
	res := run(t, cfg, []sim.Job{
		job("A", 0, 4, 50, 100),
		job("B", 10, 2, 30, 40),
		job("C", 60, 1, 10, 20),
	}, opt)
	got := byName(res)
	assert.Equal(t, at(100), got["B"].FirstExpectedStart)
	assert.Equal(t, at(50), got["B"].Start)
	assert.True(t, got["A"].FirstExpectedStart.IsZero())
	assert.True(t, got["C"].FirstExpectedStart.IsZero())
	eta := res.Summary.ETA
	assert.Equal(t, sim.ETAStats{Jobs: 1, Unestimated: 2, Error: sim.Stats{Mean: 50, P50: 50, P90: 50, P95: 50, P99: 50, Max: 50},
		Bias: -50, OnTime: 1, Early: 1}, eta)

	// Without backfill there is no estimate at all.
	fcfs := run(t, procs(4), []sim.Job{job("A", 0, 4, 50, 100), job("B", 10, 2, 30, 40)}, sim.Options{})
	assert.Equal(t, sim.ETAStats{Unestimated: 2}, fcfs.Summary.ETA)
}

// randomRigid is a seeded workload of rigid jobs on n processors:
// bursts of arrivals, widths up to n, run times up to an hour, limits up
// to four times the run time.
func randomRigid(seed uint64, jobs, n int) []sim.Job {
	rng := rand.New(rand.NewPCG(seed, 99))
	out := make([]sim.Job, 0, jobs)
	submit := 0
	for i := range jobs {
		if rng.IntN(3) == 0 {
			submit += rng.IntN(600)
		}
		p := 1 + rng.IntN(n)
		if rng.IntN(2) == 0 {
			p = 1 + rng.IntN(max(n/4, 1))
		}
		runT := 1 + rng.IntN(3600)
		out = append(out, job(string(rune('a'+i%26))+string(rune('0'+i/26%10)), submit, p, runT, runT+rng.IntN(3*runT+1)))
	}
	return out
}

// TestETAExactConservativeIsZero is issue 8's ETA honesty check: with
// exact run times and conservative backfill on a single partition, every
// job starts exactly when the scheduler first said it would.
func TestETAExactConservativeIsZero(t *testing.T) {
	for seed := range uint64(4) {
		jobs := randomRigid(seed, 150, 16)
		src := sim.ExactEstimates(&sim.SliceSource{Jobs: jobs})
		cfg, opt := withPolicy(t, sim.Conservative, procs(16), sim.Options{})
		s, err := scheduler.New(cfg)
		require.NoError(t, err)
		res, err := sim.Run(s, src, opt)
		require.NoError(t, err)
		require.Len(t, res.Jobs, len(jobs))
		eta := res.Summary.ETA
		require.Greater(t, eta.Jobs, len(jobs)/3, "seed %d: most jobs wait and get an estimate", seed)
		for _, r := range res.Jobs {
			if d, ok := r.ETAError(); ok {
				require.Zero(t, d, "seed %d: job %s promised %s, started %s", seed, r.Job.Spec.Name,
					r.FirstExpectedStart.Sub(t0), r.Start.Sub(t0))
			}
		}
		require.Equal(t, sim.Stats{}, eta.Error)
		require.Equal(t, 1.0, eta.OnTime)

		// With the users' loose limits the same workload's estimates are
		// wrong, mostly early (jobs end before their limits; re-planning
		// after early ends can still push a few back: list-scheduling
		// anomalies).
		cfg, opt = withPolicy(t, sim.Conservative, procs(16), sim.Options{})
		loose := run(t, cfg, jobs, opt).Summary.ETA
		require.Greater(t, loose.Error.Mean, 0.0, "seed %d", seed)
		require.Greater(t, loose.Early, loose.Late, "seed %d", seed)
	}
}

// TestRunExplainHandComputed replays TestRunIdleWhileWaiting's workload
// (strict FCFS on 4 processors: A holds 3 from 0 to 100, B needs 2 and
// waits from 1, C waits behind it from 2) with a 10 s sampling grid.
func TestRunExplainHandComputed(t *testing.T) {
	jobs := []sim.Job{job("A", 0, 3, 100, 100), job("B", 1, 2, 10, 10), job("C", 2, 1, 10, 10)}
	res := run(t, procs(4), jobs, sim.Options{ExplainEvery: 10 * time.Second})
	ex := res.Summary.Explain
	assert.Equal(t, 10*time.Second, ex.Every)
	// Reasons, exact: B waits on Resources 1→100, C on Priority 2→100.
	assert.InDelta(t, 197.0/3600, ex.PendingJobHours, 1e-12)
	require.Len(t, ex.Reasons, 2)
	assert.Equal(t, policy.ReasonResources, ex.Reasons[0].Reason)
	assert.InDelta(t, 99.0/3600, ex.Reasons[0].JobHours, 1e-12)
	assert.InDelta(t, 99.0/197, ex.Reasons[0].Share, 1e-12)
	assert.Equal(t, policy.ReasonPriority, ex.Reasons[1].Reason)
	assert.InDelta(t, 98.0/197, ex.Share(policy.ReasonPriority), 1e-12)
	assert.Zero(t, ex.Share(policy.ReasonBeginTime))
	assert.InDelta(t, res.Summary.MeanPending*res.Summary.Makespan.Seconds()/3600, ex.PendingJobHours, 1e-12)

	// Idle classes on the grid 0, 10, …, 100 (span 0→110): at 0 the free
	// processor has no demand; from 10 to 90 (one sample, the state left
	// by the cycle at 2) it is held for the blocked queue; at 100 the
	// queue is empty again.
	var noDemand, reserved scheduler.IdleCounts
	noDemand[scheduler.IdleNoDemand] = 1
	reserved[scheduler.IdleReserved] = 1
	want := []sim.ExplainSample{
		{At: at(0), Span: sec(10), IdleCPUs: noDemand},
		{At: at(10), Span: sec(90), IdleCPUs: reserved, Reasons: []sim.ReasonCount{
			{Reason: policy.ReasonPriority, Jobs: 1}, {Reason: policy.ReasonResources, Jobs: 1}}},
		{At: at(100), Span: sec(10), IdleCPUs: noDemand},
	}
	assert.Equal(t, want, res.Explain)
	assert.Equal(t, 2, res.Explain[1].Pending())
	assert.Equal(t, 3, ex.Samples)
	assert.InDelta(t, 20.0/3600, ex.IdleCPUHours[scheduler.IdleNoDemand], 1e-12)
	assert.InDelta(t, 90.0/3600, ex.IdleCPUHours[scheduler.IdleReserved], 1e-12)
	assert.InDelta(t, 20.0/110, ex.IdleShares[scheduler.IdleNoDemand], 1e-12)
	assert.InDelta(t, 90.0/110, ex.IdleShares[scheduler.IdleReserved], 1e-12)
	assert.Zero(t, ex.IdleGPUHours)

	// Off by default; negative is refused.
	off := run(t, procs(4), jobs, sim.Options{})
	assert.Empty(t, off.Explain)
	assert.Equal(t, sim.ExplainSummary{}, off.Summary.Explain)
	s, err := scheduler.New(procs(4))
	require.NoError(t, err)
	_, err = sim.Run(s, &sim.SliceSource{Jobs: jobs}, sim.Options{ExplainEvery: -time.Second})
	require.ErrorIs(t, err, sim.ErrInvalidOptions)
}

// TestRunExplainInvariants replays seeded synthetic GPU workloads under
// EASY with explanation statistics and checks what must hold whatever
// the schedule: samples tile the span, idle GPUs per sample never exceed
// the cluster's, shares sum to 1, the reasons' pending-job-time is the
// queue's, and gathering the statistics changes no decision.
func TestRunExplainInvariants(t *testing.T) {
	base, err := sim.SyntheticCluster(40)
	require.NoError(t, err)
	for seed := range uint64(2) {
		jobs, err := sim.Synthetic(sim.SyntheticConfig{Jobs: 200, Seed: seed, Span: 4 * time.Hour, MaxNodes: 8})
		require.NoError(t, err)
		cfg, opt := withPolicy(t, sim.EASY, base, sim.Options{})
		plain := run(t, cfg, jobs, opt)
		opt.ExplainEvery = 5 * time.Minute
		res := run(t, cfg, jobs, opt)
		require.Equal(t, plain.Jobs, res.Jobs, "seed %d: explanation statistics changed the schedule", seed)
		ex := res.Summary.Explain
		require.NotEmpty(t, res.Explain)
		require.Equal(t, len(res.Explain), ex.Samples)
		require.LessOrEqual(t, ex.Samples, res.Cycles)
		var span time.Duration
		for i, smp := range res.Explain {
			require.Equal(t, res.Start.Add(span), smp.At, "seed %d sample %d", seed, i)
			require.Greater(t, smp.Span, time.Duration(0))
			span += smp.Span
			require.LessOrEqual(t, smp.IdleGPUs.Total(), res.Capacity.GPUs)
			require.LessOrEqual(t, smp.IdleCPUs.Total(), res.Capacity.CPUs)
		}
		require.Equal(t, res.End.Sub(res.Start), span)
		var sum float64
		for _, v := range ex.IdleShares {
			sum += v
		}
		require.InDelta(t, 1, sum, 1e-9)
		sum = 0
		for i, rs := range ex.Reasons {
			sum += rs.Share
			if i > 0 {
				require.GreaterOrEqual(t, ex.Reasons[i-1].JobHours, rs.JobHours)
			}
		}
		require.InDelta(t, 1, sum, 1e-9)
		require.InDelta(t, res.Summary.MeanPending*res.Summary.Makespan.Hours(), ex.PendingJobHours, 1e-6*ex.PendingJobHours)
		require.Greater(t, res.Summary.ETA.Jobs, 0)
	}
}
