package sim_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
)

var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func sec(s int) time.Duration { return time.Duration(s) * time.Second }

// procs returns a cluster of n single-CPU nodes in one partition, the
// classic model of trace simulators.
func procs(n int) scheduler.Config {
	cfg := scheduler.Config{Partitions: []scheduler.PartitionConfig{{Name: "batch", Default: true}}}
	for i := range n {
		cfg.Nodes = append(cfg.Nodes, scheduler.NodeConfig{Name: fmt.Sprintf("n%02d", i), CPUs: 1})
	}
	return cfg
}

// job is a rigid job of p processors arriving at submit, running run
// seconds with a limit of limit seconds.
func job(name string, submit, p, run, limit int) sim.Job {
	return sim.Job{
		Spec:    scheduler.JobSpec{Name: name, Nodes: p, TimeLimit: sec(limit)},
		Submit:  at(submit),
		Runtime: sec(run),
	}
}

// run replays jobs on a new scheduler and checks that every result the
// simulator reports is what the scheduler recorded for the job (which it
// therefore keeps: MinJobAge 0; TestRunPurgeChangesNothing covers purging).
func run(t *testing.T, cfg scheduler.Config, jobs []sim.Job, opt sim.Options) sim.Result {
	t.Helper()
	cfg.MinJobAge = 0
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	var ended []sim.JobResult
	user := opt.OnJobEnd
	opt.OnJobEnd = func(r sim.JobResult) error {
		ended = append(ended, r)
		if user != nil {
			return user(r)
		}
		return nil
	}
	res, err := sim.Run(s, &sim.SliceSource{Jobs: jobs}, opt)
	require.NoError(t, err)
	gpuID, hasGPU := s.Registry().Lookup("gres/gpu")
	for _, r := range ended {
		sj, ok := s.Job(r.ID)
		require.True(t, ok)
		require.Equal(t, sj.StartTime, r.Start, "job %d", r.ID)
		require.Equal(t, sj.EndTime, r.End, "job %d", r.ID)
		require.Equal(t, sj.State, r.State, "job %d", r.ID)
		require.Equal(t, len(sj.Alloc.Nodes), r.Nodes, "job %d", r.ID)
		total := sj.Alloc.Total()
		require.Equal(t, total.At(gres.CPU), r.CPUs, "job %d", r.ID)
		if hasGPU {
			require.Equal(t, total.At(gpuID), r.GPUs, "job %d", r.ID)
		}
	}
	return res
}

func byName(res sim.Result) map[string]sim.JobResult {
	out := map[string]sim.JobResult{}
	for _, r := range res.Jobs {
		out[r.Job.Spec.Name] = r
	}
	return out
}

// TestRunFCFSHandComputed replays a tiny workload whose schedule is worked
// out by hand: on 4 processors, A (4 procs, 100 s) runs first; B (2 procs)
// and C (1 proc) wait for it and both start at 100.
func TestRunFCFSHandComputed(t *testing.T) {
	res := run(t, procs(4), []sim.Job{
		job("A", 0, 4, 100, 200),
		job("B", 10, 2, 50, 60),
		job("C", 20, 1, 30, 40),
	}, sim.Options{})
	got := byName(res)
	require.Len(t, got, 3)
	for name, want := range map[string]struct{ start, end int }{"A": {0, 100}, "B": {100, 150}, "C": {100, 130}} {
		assert.Equal(t, at(want.start), got[name].Start, name)
		assert.Equal(t, at(want.end), got[name].End, name)
		assert.Equal(t, scheduler.JobCompleted, got[name].State, name)
	}
	assert.Equal(t, sec(90), got["B"].Wait())
	assert.Equal(t, sec(80), got["C"].Wait())
	// completion order: A, C, B
	require.Len(t, res.Jobs, 3)
	assert.Equal(t, []string{"A", "C", "B"}, []string{res.Jobs[0].Job.Spec.Name, res.Jobs[1].Job.Spec.Name, res.Jobs[2].Job.Spec.Name})
	assert.Equal(t, []int{0, 2, 1}, []int{res.Jobs[0].Index, res.Jobs[1].Index, res.Jobs[2].Index})

	sum := res.Summary
	assert.Equal(t, 3, sum.Jobs)
	assert.Equal(t, 3, sum.Completed)
	assert.InDelta(t, (0.0+90+80)/3, sum.Wait.Mean, 1e-9)
	assert.InDelta(t, (100.0+140+110)/3, sum.Response.Mean, 1e-9)
	// bsld: A 1, B (90+50)/50 = 2.8, C (80+30)/30
	assert.InDelta(t, (1+2.8+110.0/30)/3, sum.BSLD.Mean, 1e-9)
	assert.Equal(t, 150*time.Second, sum.Makespan)
	// 4×100 + 2×50 + 1×30 CPU-seconds over 4 CPUs × 150 s
	assert.InDelta(t, 530.0/600, sum.Utilization, 1e-9)
	assert.InDelta(t, 530.0/3600, sum.CPUHours, 1e-9)
	assert.Equal(t, sum.CPUUtilization, sum.Utilization)
	assert.Zero(t, sum.GPUHours)
	assert.Equal(t, at(0), res.Start)
	assert.Equal(t, at(150), res.End)
	assert.Equal(t, sim.Capacity{Nodes: 4, CPUs: 4}, res.Capacity)
	// B and C wait from 10 and 20 until 100, with nothing idle.
	assert.Equal(t, 2, sum.MaxPending)
	assert.InDelta(t, (1.0*10+2*80)/150, sum.MeanPending, 1e-9)
	assert.InDelta(t, 90.0/150, sum.WaitingFraction, 1e-9)
	assert.Zero(t, sum.IdleCPUHoursWaiting)
	// cycles: arrivals at 0, 10, 20; completions at 100, 130, 150
	assert.Equal(t, 6, res.Cycles)
}

// TestRunIdleWhileWaiting checks the fragmentation figure: the head job
// needs 2 processors while only 1 is free, so 1 CPU idles while it waits.
func TestRunIdleWhileWaiting(t *testing.T) {
	res := run(t, procs(4), []sim.Job{
		job("A", 0, 3, 100, 100),
		job("B", 1, 2, 10, 10),
		job("C", 2, 1, 10, 10), // strict FCFS: waits behind B although 1 CPU is free
	}, sim.Options{})
	got := byName(res)
	assert.Equal(t, at(100), got["B"].Start)
	assert.Equal(t, at(100), got["C"].Start)
	sum := res.Summary
	// 1 CPU idle from 1 to 100 while jobs wait
	assert.InDelta(t, 99.0/3600, sum.IdleCPUHoursWaiting, 1e-12)
	assert.InDelta(t, 99.0/(4*110), sum.IdleWhileWaiting, 1e-12)
	// series: exact step function of the state after each cycle
	want := []sim.Sample{
		{At: at(0), Running: 1, BusyCPUs: 3},
		{At: at(1), Pending: 1, Running: 1, BusyCPUs: 3, IdleCPUsWaiting: 1},
		{At: at(2), Pending: 2, Running: 1, BusyCPUs: 3, IdleCPUsWaiting: 1},
		{At: at(100), Running: 2, BusyCPUs: 3},
		{At: at(110)},
	}
	assert.Equal(t, want, res.Series)
	again := sim.Summarize(res.Jobs, res.Series, res.Capacity, res.Start, res.End)
	again.Rejected = sum.Rejected
	assert.Equal(t, sum, again)
}

func TestRunTimeLimits(t *testing.T) {
	res := run(t, procs(2), []sim.Job{
		job("over", 0, 1, 500, 100),  // killed at its limit
		job("exact", 0, 1, 100, 100), // runs exactly its limit: completes
		job("next", 5, 2, 10, 10),    // needs both: starts when both end at 100
	}, sim.Options{})
	got := byName(res)
	assert.Equal(t, scheduler.JobTimeout, got["over"].State)
	assert.Equal(t, at(100), got["over"].End)
	assert.True(t, got["over"].Lost())
	assert.InDelta(t, 400.0/3600, got["over"].LostCPUHours(), 1e-12, "the 400 s of work beyond its limit")
	assert.Equal(t, scheduler.JobCompleted, got["exact"].State)
	assert.False(t, got["exact"].Lost())
	assert.Zero(t, got["exact"].LostCPUHours())
	assert.Equal(t, at(100), got["next"].Start)
	assert.Equal(t, 1, res.Summary.TimedOut)
	assert.Equal(t, 2, res.Summary.Completed)
	assert.InDelta(t, 400.0/3600, res.Summary.LostCPUHours, 1e-12)
	assert.InDelta(t, 400.0/3600, res.Summary.LostCPUHoursTimeLimit, 1e-12)
}

// TestRunSameInstant: a job arriving when another finishes sees the freed
// processors in the same cycle; a non-zero exit code ends FAILED.
func TestRunSameInstant(t *testing.T) {
	a := job("A", 0, 2, 50, 60)
	a.ExitCode = 3
	res := run(t, procs(2), []sim.Job{a, job("B", 50, 2, 10, 10)}, sim.Options{})
	got := byName(res)
	assert.Equal(t, scheduler.JobFailed, got["A"].State)
	assert.Equal(t, at(50), got["B"].Start)
	assert.Zero(t, got["B"].Wait())
	assert.Equal(t, 1, res.Summary.Failed)
	assert.Equal(t, 3, res.Cycles) // at 0, 50 (A ends, B arrives: one cycle), 60
}

func TestRunBeginTimeWakesTheScheduler(t *testing.T) {
	j := job("later", 0, 1, 10, 20)
	j.Spec.BeginTime = at(50)
	res := run(t, procs(2), []sim.Job{j}, sim.Options{})
	require.Len(t, res.Jobs, 1)
	assert.Equal(t, at(50), res.Jobs[0].Start)
}

func TestRunInterval(t *testing.T) {
	jobs := []sim.Job{job("A", 0, 2, 100, 100), job("B", 1, 2, 10, 10)}
	plain := run(t, procs(2), jobs, sim.Options{})
	ticked := run(t, procs(2), jobs, sim.Options{Interval: 30 * time.Second})
	assert.Equal(t, plain.Summary, ticked.Summary)
	// ticks at 31, 61, 91 while B waits
	assert.Equal(t, plain.Cycles+3, ticked.Cycles)
}

func TestRunStuck(t *testing.T) {
	cfg := procs(2)
	cfg.Partitions[0].State = scheduler.PartitionDown
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	_, err = sim.Run(s, &sim.SliceSource{Jobs: []sim.Job{job("A", 0, 1, 10, 10)}}, sim.Options{})
	require.ErrorIs(t, err, sim.ErrStuck)
	assert.Contains(t, err.Error(), "PartitionDown")
}

func TestRunRejects(t *testing.T) {
	jobs := []sim.Job{job("ok", 0, 1, 10, 10), job("huge", 1, 3, 10, 10), job("ok2", 2, 1, 10, 10)}
	res := run(t, procs(2), jobs, sim.Options{})
	assert.Equal(t, 1, res.Rejected)
	assert.Equal(t, 1, res.Summary.Rejected)
	assert.Len(t, res.Jobs, 2)
	assert.Equal(t, 2, byName(res)["ok2"].Index, "indices count rejected jobs")

	s, err := scheduler.New(procs(2))
	require.NoError(t, err)
	stop := errors.New("stop")
	_, err = sim.Run(s, &sim.SliceSource{Jobs: jobs}, sim.Options{OnSubmitError: func(j sim.Job, err error) error {
		assert.ErrorIs(t, err, scheduler.ErrUnsatisfiable)
		return stop
	}})
	require.ErrorIs(t, err, stop)
}

func TestRunErrors(t *testing.T) {
	s, err := scheduler.New(procs(2))
	require.NoError(t, err)
	_, err = sim.Run(s, &sim.SliceSource{}, sim.Options{Interval: -1})
	require.ErrorIs(t, err, sim.ErrInvalidOptions)
	_, err = sim.Run(s, &sim.SliceSource{}, sim.Options{SeriesStep: -1})
	require.ErrorIs(t, err, sim.ErrInvalidOptions)

	_, err = sim.Run(s, &sim.SliceSource{Jobs: []sim.Job{job("b", 10, 1, 1, 1), job("a", 5, 1, 1, 1)}}, sim.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "before the previous job")

	s, err = scheduler.New(procs(2))
	require.NoError(t, err)
	bad := errors.New("disk on fire")
	_, err = sim.Run(s, failingSource{bad}, sim.Options{})
	require.ErrorIs(t, err, bad)

	res, err := sim.Run(s, &sim.SliceSource{}, sim.Options{})
	require.NoError(t, err)
	assert.Zero(t, res.Summary.Jobs)
	assert.Empty(t, res.Series)
}

type failingSource struct{ err error }

func (f failingSource) Next() (sim.Job, bool, error) { return sim.Job{}, false, f.err }

func TestRunStreamingOptions(t *testing.T) {
	cfg, err := sim.SyntheticCluster(64)
	require.NoError(t, err)
	jobs, err := sim.Synthetic(sim.SyntheticConfig{Jobs: 400, Seed: 3, Span: 12 * time.Hour, MaxNodes: 16})
	require.NoError(t, err)
	full := run(t, cfg, jobs, sim.Options{})
	var streamed []sim.JobResult
	lean := run(t, cfg, jobs, sim.Options{DiscardJobs: true, DiscardSeries: true, OnJobEnd: func(r sim.JobResult) error {
		streamed = append(streamed, r)
		return nil
	}})
	assert.Empty(t, lean.Jobs)
	assert.Empty(t, lean.Series)
	assert.Equal(t, full.Jobs, streamed)
	assert.Equal(t, full.Summary, lean.Summary)

	stepped := run(t, cfg, jobs, sim.Options{SeriesStep: time.Hour})
	assert.Equal(t, full.Summary, stepped.Summary, "the summary uses exact values whatever the series step")
	assertSeriesNear(t, sim.Resample(full.Series, full.End, time.Hour), stepped.Series)
	assert.Greater(t, full.Summary.GPUHours, 0.0)
	assert.Greater(t, full.Summary.GPUUtilization, 0.0)
	assert.Equal(t, full.Summary.GPUUtilization, full.Summary.Utilization)
}

// TestRunInvariants replays seeded synthetic workloads and checks what
// must hold whatever the schedule: no job starts before it arrives, runs
// past its limit, or exceeds the cluster; the busy series never exceeds
// capacity; metrics are consistent; the same input gives the same result.
func TestRunInvariants(t *testing.T) {
	cfg, err := sim.SyntheticCluster(40)
	require.NoError(t, err)
	for seed := range uint64(4) {
		jobs, err := sim.Synthetic(sim.SyntheticConfig{Jobs: 300, Seed: seed, Span: 6 * time.Hour, MaxNodes: 8})
		require.NoError(t, err)
		res := run(t, cfg, jobs, sim.Options{})
		again := run(t, cfg, jobs, sim.Options{})
		require.Equal(t, res, again, "seed %d: not deterministic", seed)
		require.Equal(t, len(jobs), len(res.Jobs)+res.Rejected)
		seen := map[int]bool{}
		for _, r := range res.Jobs {
			require.False(t, seen[r.Index])
			seen[r.Index] = true
			require.Equal(t, jobs[r.Index].Spec.Name, r.Job.Spec.Name)
			require.False(t, r.Start.Before(r.Job.Submit))
			require.LessOrEqual(t, r.RunTime(), r.Job.Spec.TimeLimit)
			require.LessOrEqual(t, r.RunTime(), max(r.Job.Runtime, 0))
			require.GreaterOrEqual(t, r.BoundedSlowdown(sim.BSLDThreshold), 1.0)
			require.GreaterOrEqual(t, r.Slowdown(), 1.0)
			require.LessOrEqual(t, r.GPUs, res.Capacity.GPUs)
		}
		for _, s := range res.Series {
			require.LessOrEqual(t, s.BusyGPUs, float64(res.Capacity.GPUs))
			require.LessOrEqual(t, s.BusyCPUs, float64(res.Capacity.CPUs))
			require.GreaterOrEqual(t, s.IdleGPUsWaiting, 0.0)
		}
		sum := res.Summary
		require.LessOrEqual(t, sum.Utilization, 1.0)
		require.LessOrEqual(t, sum.IdleWhileWaiting, 1.0)
		require.LessOrEqual(t, sum.Wait.P50, sum.Wait.P90)
		require.LessOrEqual(t, sum.Wait.P99, sum.Wait.Max)
		require.Equal(t, sum.Jobs, sum.Completed+sum.Failed+sum.TimedOut+sum.Killed)
	}
}

// TestResamplePreservesIntegrals: resampling a random step function keeps
// its time integrals, whatever the step.
func TestResamplePreservesIntegrals(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for range 50 {
		var series []sim.Sample
		tm := t0
		for range 1 + rng.IntN(40) {
			series = append(series, sim.Sample{At: tm, Pending: float64(rng.IntN(9)), BusyCPUs: float64(rng.IntN(100)),
				IdleGPUsWaiting: float64(rng.IntN(5))})
			tm = tm.Add(time.Duration(1+rng.IntN(1000)) * time.Second)
		}
		end := tm
		step := time.Duration(1+rng.IntN(3000)) * time.Second
		integral := func(s []sim.Sample, f func(sim.Sample) float64) float64 {
			var sum float64
			for i, x := range s {
				e := end
				if i+1 < len(s) {
					e = s[i+1].At
				}
				if e.After(x.At) {
					sum += f(x) * e.Sub(x.At).Seconds()
				}
			}
			return sum
		}
		rs := sim.Resample(series, end, step)
		require.NotEmpty(t, rs)
		for i := 1; i < len(rs); i++ {
			require.Equal(t, step, rs[i].At.Sub(rs[i-1].At))
		}
		for _, f := range []func(sim.Sample) float64{
			func(s sim.Sample) float64 { return s.Pending },
			func(s sim.Sample) float64 { return s.BusyCPUs },
			func(s sim.Sample) float64 { return s.IdleGPUsWaiting },
		} {
			want := integral(series, f)
			require.InDelta(t, want, integral(rs, f), 1e-6*math.Max(1, want))
		}
	}
	assert.Nil(t, sim.Resample(nil, t0, time.Second))
	assert.Nil(t, sim.Resample([]sim.Sample{{At: t0}}, t0, 0))
	one := sim.Resample([]sim.Sample{{At: t0, Pending: 3}}, t0, time.Second)
	assert.Equal(t, []sim.Sample{{At: t0, Pending: 3}}, one)
}

func TestWindowAndExactEstimates(t *testing.T) {
	var jobs []sim.Job
	for i := range 10 {
		jobs = append(jobs, job(fmt.Sprint(i), i, 1, 10+i, 1000))
	}
	w := sim.Window(&sim.SliceSource{Jobs: jobs}, 3, 4)
	var names []string
	for {
		j, ok, err := w.Next()
		require.NoError(t, err)
		if !ok {
			break
		}
		names = append(names, j.Spec.Name)
	}
	assert.Equal(t, []string{"3", "4", "5", "6"}, names)

	w = sim.Window(&sim.SliceSource{Jobs: jobs}, 8, 0)
	n := 0
	for _, ok, _ := w.Next(); ok; _, ok, _ = w.Next() {
		n++
	}
	assert.Equal(t, 2, n)
	_, ok, err := sim.Window(&sim.SliceSource{Jobs: jobs}, 20, 0).Next()
	assert.False(t, ok)
	assert.NoError(t, err)

	e := sim.ExactEstimates(&sim.SliceSource{Jobs: jobs})
	j, ok, err := e.Next()
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, sec(10), j.Spec.TimeLimit)
	zero := sim.ExactEstimates(&sim.SliceSource{Jobs: []sim.Job{{Runtime: 0}}})
	j, _, _ = zero.Next()
	assert.Equal(t, time.Second, j.Spec.TimeLimit)
}

func assertSeriesNear(t *testing.T, want, got []sim.Sample) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		require.Equal(t, w.At, g.At, i)
		for _, p := range [][2]float64{{w.Pending, g.Pending}, {w.Running, g.Running}, {w.BusyCPUs, g.BusyCPUs},
			{w.BusyGPUs, g.BusyGPUs}, {w.IdleCPUsWaiting, g.IdleCPUsWaiting}, {w.IdleGPUsWaiting, g.IdleGPUsWaiting}} {
			require.InDelta(t, p[0], p[1], 1e-9*math.Max(1, math.Abs(p[0])), "sample %d", i)
		}
	}
}

// TestEstimateOnceChangesNothing replays with expected starts computed
// once per job (EASY's EstimateOnce) and in every pass: every result,
// first estimates included, is the same, though the cycles' expected
// starts of jobs waiting behind others differ (they stand once computed).
func TestEstimateOnceChangesNothing(t *testing.T) {
	cfg, err := sim.SyntheticCluster(64)
	require.NoError(t, err)
	jobs, err := sim.Synthetic(sim.SyntheticFor(64, 1500, 5))
	require.NoError(t, err)
	replay := func(every time.Duration) (sim.Result, map[scheduler.JobID][]time.Time) {
		c := cfg
		etas := map[scheduler.JobID][]time.Time{}
		opt := sim.Options{OnCycle: func(_ *scheduler.Scheduler, cyc scheduler.Cycle) {
			for _, p := range cyc.Pending {
				etas[p.Job] = append(etas[p.Job], p.ExpectedStart)
			}
		}}
		require.NoError(t, sim.EASY.Apply(&c, &opt))
		require.Equal(t, sim.EstimateOnce, c.EstimateInterval)
		c.EstimateInterval = every
		s, err := scheduler.New(c)
		require.NoError(t, err)
		res, err := sim.Run(s, &sim.SliceSource{Jobs: jobs}, opt)
		require.NoError(t, err)
		return res, etas
	}
	once, onceETAs := replay(sim.EstimateOnce)
	every, everyETAs := replay(0)
	stood := 0
	for id, e := range everyETAs {
		o := onceETAs[id]
		require.Len(t, o, len(e), "job %d pends in as many cycles", id)
		require.Equal(t, e[0], o[0], "job %d: first estimate", id)
		for k := range e {
			if !o[k].Equal(e[k]) {
				stood++
			}
		}
	}
	require.Positive(t, stood, "some estimates stood while a fresh one differed")
	require.Equal(t, every.Jobs, once.Jobs)
	require.Equal(t, every.Summary, once.Summary)
	require.Equal(t, every.Cycles, once.Cycles)
	require.Positive(t, every.Summary.ETA.Jobs, "the replay has estimates to compare")
}

// TestRunPurgeChangesNothing replays the synthetic workload with the
// simulator's MinJobAge (PurgeAge) and without: the results are the same,
// and the purging scheduler holds only the jobs in flight and those
// finished within PurgeAge at the end.
func TestRunPurgeChangesNothing(t *testing.T) {
	cfg, err := sim.SyntheticCluster(64)
	require.NoError(t, err)
	require.Equal(t, sim.PurgeAge, cfg.MinJobAge)
	jobs, err := sim.Synthetic(sim.SyntheticFor(64, 1500, 3))
	require.NoError(t, err)
	for _, p := range []sim.Policy{sim.EASY, sim.Conservative, sim.Priority} {
		t.Run(string(p), func(t *testing.T) {
			replay := func(minAge time.Duration) (sim.Result, *scheduler.Scheduler) {
				c := cfg
				c.MinJobAge = minAge
				var opt sim.Options
				require.NoError(t, p.Apply(&c, &opt))
				s, err := scheduler.New(c)
				require.NoError(t, err)
				res, err := sim.Run(s, &sim.SliceSource{Jobs: jobs}, opt)
				require.NoError(t, err)
				return res, s
			}
			kept, _ := replay(0)
			purged, s := replay(sim.PurgeAge)
			require.Equal(t, kept.Jobs, purged.Jobs)
			require.Equal(t, kept.Summary, purged.Summary)
			require.Equal(t, kept.Cycles, purged.Cycles)
			held := s.Jobs()
			require.Less(t, len(held), len(jobs)/2, "finished jobs are forgotten")
			for _, j := range held {
				if !j.EndTime.IsZero() {
					require.Less(t, kept.End.Sub(j.EndTime), sim.PurgeAge+time.Hour, "job %d finished at %v, long before the end %v", j.ID, j.EndTime, kept.End)
				}
			}
		})
	}
}
