package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

func newBackfillMixed(t *testing.T, mode backfill.Mode) *scheduler.Scheduler {
	t.Helper()
	cfg := clustertest.Mixed4()
	cfg.Backfill = &backfill.Config{Mode: mode, Resolution: time.Second}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

func TestBackfillStartsWhatDoesNotDelayTheHead(t *testing.T) {
	for _, mode := range []backfill.Mode{backfill.EASY, backfill.Conservative} {
		t.Run(mode.String(), func(t *testing.T) {
			s := newBackfillMixed(t, mode)
			// Two nodes busy for 1 h, two for 3 h.
			for _, d := range []time.Duration{time.Hour, time.Hour, 3 * time.Hour, 3 * time.Hour} {
				mustSubmit(t, s, t0, scheduler.JobSpec{Exclusive: true, TimeLimit: d})
			}
			mustSchedule(t, s, t0)
			// The head needs three whole nodes: it can start in 3 h.
			head := mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{Nodes: 3, Exclusive: true, TimeLimit: time.Hour})
			// Fits the gap on the two 1 h nodes (ends before the head's start).
			short := mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{GRESPerNode: gpus(2), TimeLimit: 90 * time.Minute})
			// Would still run at the head's start: must wait.
			long := mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{Nodes: 2, Exclusive: true, TimeLimit: 5 * time.Hour})

			cyc := mustSchedule(t, s, t0.Add(time.Hour))
			require.Len(t, cyc.Starts, 1, "%+v", cyc)
			assert.Equal(t, short, cyc.Starts[0].Job)
			assert.True(t, cyc.Starts[0].Backfill)
			jh, _ := s.Job(head)
			assert.Equal(t, t0.Add(3*time.Hour), jh.ExpectedStart)
			assert.Len(t, jh.PlannedNodes, 3)
			assert.Equal(t, policy.ReasonResources, reasonOf(cyc, head))
			var longPending scheduler.Pending
			for _, p := range cyc.Pending {
				if p.Job == long {
					longPending = p
				}
			}
			assert.Equal(t, long, longPending.Job)
			if mode == backfill.Conservative {
				assert.Equal(t, t0.Add(4*time.Hour), longPending.ExpectedStart, "conservative plans it after the head")
			}
		})
	}
}

func TestBackfillTimeMin(t *testing.T) {
	s := newBackfillMixed(t, backfill.EASY)
	for _, d := range []time.Duration{time.Hour, time.Hour, 3 * time.Hour, 3 * time.Hour} {
		mustSubmit(t, s, t0, scheduler.JobSpec{Exclusive: true, TimeLimit: d})
	}
	mustSchedule(t, s, t0)
	mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 3, Exclusive: true, TimeLimit: time.Hour})
	// Asks for 5 h but accepts 1 h: fits the 2 h gap before the head.
	flexible := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(1), TimeLimit: 5 * time.Hour, TimeMin: time.Hour})
	cyc := mustSchedule(t, s, t0.Add(time.Hour))
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, flexible, cyc.Starts[0].Job)
	j, _ := s.Job(flexible)
	assert.Equal(t, 2*time.Hour, j.TimeLimit, "its limit is raised to the gap, not to 5 h")

	_, err := s.Submit(t0.Add(time.Hour), scheduler.JobSpec{TimeLimit: time.Hour, TimeMin: 2 * time.Hour})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob)
}

func TestBackfillConfigValidated(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Backfill = &backfill.Config{Window: -time.Hour}
	_, err := scheduler.New(cfg)
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig)

	cfg.Backfill = &backfill.Config{}
	cfg.EstimateInterval = -time.Second
	_, err = scheduler.New(cfg)
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig)
	assert.ErrorContains(t, err, "EstimateInterval -1s")
}

func TestQOSNoReserveGetsNoReservation(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Backfill = &backfill.Config{Mode: backfill.Conservative, Resolution: time.Second}
	cfg.Policy = &policy.Config{QOS: []policy.QOS{{Name: "normal"}, {Name: "standby", Flags: policy.QOSNoReserve}}}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	for _, d := range []time.Duration{time.Hour, time.Hour, 3 * time.Hour, 3 * time.Hour} {
		mustSubmit(t, s, t0, scheduler.JobSpec{Exclusive: true, TimeLimit: d})
	}
	mustSchedule(t, s, t0)
	// The standby head needs three nodes (in 3 h) but reserves nothing, so
	// a 5-hour two-node job that would delay it starts when two nodes free.
	head := mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{QOS: "standby", Nodes: 3, Exclusive: true, TimeLimit: time.Hour})
	long := mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{Nodes: 2, Exclusive: true, TimeLimit: 5 * time.Hour})
	cyc := mustSchedule(t, s, t0.Add(time.Hour))
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, long, cyc.Starts[0].Job)
	j, _ := s.Job(head)
	assert.Equal(t, scheduler.JobPending, j.State)
}

// TestEstimateInterval runs two schedulers side by side on the same
// events, one refreshing every waiting job's expected start in every
// cycle and one letting an estimate stand for an hour: they decide the
// same, the second's estimates stand (with when they were computed) until
// the interval passes, Explain computes a fresh one meanwhile, and a job
// that starts keeps none.
func TestEstimateInterval(t *testing.T) {
	newS := func(every time.Duration) *scheduler.Scheduler {
		cfg := clustertest.Mixed4()
		cfg.Backfill = &backfill.Config{Mode: backfill.EASY, Resolution: time.Second}
		cfg.EstimateInterval = every
		s, err := scheduler.New(cfg)
		require.NoError(t, err)
		return s
	}
	fresh, lazy := newS(0), newS(time.Hour)
	both := func(f func(s *scheduler.Scheduler)) { f(fresh); f(lazy) }
	schedule := func(at time.Time) {
		a, b := mustSchedule(t, fresh, at), mustSchedule(t, lazy, at)
		require.Equal(t, a.Starts, b.Starts, "same starts at %v", at)
		require.Equal(t, a.Ended, b.Ended)
	}
	var short, long []scheduler.JobID
	both(func(s *scheduler.Scheduler) {
		short = nil
		long = nil
		for _, d := range []time.Duration{time.Hour, time.Hour, 3 * time.Hour, 3 * time.Hour} {
			id := mustSubmit(t, s, t0, scheduler.JobSpec{Exclusive: true, TimeLimit: d})
			if d == time.Hour {
				short = append(short, id)
			} else {
				long = append(long, id)
			}
		}
	})
	schedule(t0)
	var head, b, c scheduler.JobID
	both(func(s *scheduler.Scheduler) {
		head = mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{Nodes: 3, Exclusive: true, TimeLimit: time.Hour})
		b = mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{Nodes: 2, Exclusive: true, TimeLimit: 5 * time.Hour})
		c = mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{Exclusive: true, TimeLimit: 6 * time.Hour})
	})
	schedule(t0.Add(time.Minute))
	first, _ := lazy.Job(b)
	require.False(t, first.ExpectedStart.IsZero())
	require.Equal(t, t0.Add(time.Minute), first.EstimatedAt)

	// A 3 h job ends early: the head's reservation moves up, and so does
	// a fresh estimate of b; the lazy scheduler's stands.
	both(func(s *scheduler.Scheduler) { require.NoError(t, s.Finish(t0.Add(30*time.Minute), long[0], 0)) })
	schedule(t0.Add(30 * time.Minute))
	fb, _ := fresh.Job(b)
	lb, _ := lazy.Job(b)
	require.Equal(t, first.ExpectedStart, lb.ExpectedStart, "the estimate stands")
	require.Equal(t, t0.Add(time.Minute), lb.EstimatedAt)
	require.Equal(t, t0.Add(30*time.Minute), fb.EstimatedAt)
	require.True(t, fb.ExpectedStart.Before(lb.ExpectedStart), "a fresh estimate moved up: %v, stood %v", fb.ExpectedStart, lb.ExpectedStart)
	fh, _ := fresh.Job(head)
	lh, _ := lazy.Job(head)
	require.Equal(t, fh.ExpectedStart, lh.ExpectedStart, "the head's reservation is planned in every pass")
	require.Equal(t, t0.Add(30*time.Minute), lh.EstimatedAt)

	// Explain does not show the stale estimate: it searches the last plan.
	ex, err := lazy.Explain(t0.Add(30*time.Minute), b, scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.Equal(t, scheduler.EstimateOutsidePlan, ex.Estimate.Source)
	require.Equal(t, fb.ExpectedStart, ex.Estimate.Start)
	exFresh, err := fresh.Explain(t0.Add(30*time.Minute), b, scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.Equal(t, scheduler.EstimateEstimated, exFresh.Estimate.Source)

	// Past the interval every estimate is computed again; the head has
	// started and keeps no estimate.
	schedule(t0.Add(time.Hour + 5*time.Minute))
	for _, id := range []scheduler.JobID{b, c} {
		f, _ := fresh.Job(id)
		l, _ := lazy.Job(id)
		require.Equal(t, scheduler.JobPending, l.State)
		require.Equal(t, f.ExpectedStart, l.ExpectedStart, "job %d", id)
		require.Equal(t, f.PlannedNodes, l.PlannedNodes, "job %d", id)
		require.Equal(t, t0.Add(time.Hour+5*time.Minute), l.EstimatedAt, "job %d", id)
	}
	lh, _ = lazy.Job(head)
	require.Equal(t, scheduler.JobRunning, lh.State)
	require.True(t, lh.ExpectedStart.IsZero())
	require.True(t, lh.EstimatedAt.IsZero())
	require.Empty(t, lh.PlannedNodes)
}

// TestRequeuedJobKeepsNoStalePlan: a job that held a reservation, started
// and was requeued shows no expected start from before it ran, and
// Explain does not call the running job's old booking its reservation.
func TestRequeuedJobKeepsNoStalePlan(t *testing.T) {
	s := newBackfillMixed(t, backfill.EASY)
	blockers := []scheduler.JobID{}
	for _, d := range []time.Duration{time.Hour, time.Hour, 3 * time.Hour, 3 * time.Hour} {
		blockers = append(blockers, mustSubmit(t, s, t0, scheduler.JobSpec{Exclusive: true, TimeLimit: d}))
	}
	mustSchedule(t, s, t0)
	head := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 3, Exclusive: true, TimeLimit: time.Hour})
	mustSchedule(t, s, t0.Add(time.Minute))
	j, _ := s.Job(head)
	require.Equal(t, t0.Add(3*time.Hour), j.ExpectedStart, "it holds a reservation")

	for _, id := range blockers[:3] {
		require.NoError(t, s.Finish(t0.Add(2*time.Minute), id, 0))
	}
	cyc := mustSchedule(t, s, t0.Add(2*time.Minute))
	require.Len(t, cyc.Starts, 1)
	require.Equal(t, head, cyc.Starts[0].Job)
	j, _ = s.Job(head)
	require.True(t, j.ExpectedStart.IsZero(), "a running job has no expected start")

	require.NoError(t, s.Requeue(t0.Add(3*time.Minute), head))
	j, _ = s.Job(head)
	require.Equal(t, scheduler.JobPending, j.State)
	require.True(t, j.ExpectedStart.IsZero(), "no plan from before it ran: %v", j.ExpectedStart)
	require.Empty(t, j.PlannedNodes)
	ex, err := s.Explain(t0.Add(3*time.Minute), head, scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.NotEqual(t, scheduler.EstimateReserved, ex.Estimate.Source, "%+v", ex.Estimate)
}

// TestBackfillNeverDelaysReservationBySeconds is the scenario of a
// reserved job whose blocker ends off the bf_resolution grid (the default
// 60 s): a lower job that would end even one second after the blocker
// must not be backfilled in front of it, and the reserved job's expected
// start is the blocker's exact end, not the next grid point (squeue
// --start shows the exact second). One that ends at the blocker's end or
// before fits the gap and starts.
func TestBackfillNeverDelaysReservationBySeconds(t *testing.T) {
	base := time.Date(2026, 1, 5, 18, 10, 44, 0, time.UTC) // not a whole minute
	for _, late := range []int{-20, 0, 1, 16, 17, 46, 58, 59, 76} {
		t.Run(fmt.Sprintf("ends%+ds", late), func(t *testing.T) {
			s, err := scheduler.New(scheduler.Config{
				Nodes:      []scheduler.NodeConfig{{Name: "n1", CPUs: 8, MemoryMiB: 32 * 1024}},
				Partitions: []scheduler.PartitionConfig{{Name: "batch", MaxTime: 24 * time.Hour}},
				Backfill:   &backfill.Config{Mode: backfill.EASY},
			})
			require.NoError(t, err)
			at := base.Add(30 * time.Second)
			first := mustSubmit(t, s, at, scheduler.JobSpec{CPUsPerTask: 4, TimeLimit: 10 * time.Minute})
			cyc := mustSchedule(t, s, at)
			require.Len(t, cyc.Starts, 1)
			firstEnd := at.Add(10 * time.Minute) // 18:21:14

			at = base.Add(31 * time.Second)
			wide := mustSubmit(t, s, at, scheduler.JobSpec{CPUsPerTask: 8, TimeLimit: time.Hour})
			limit := firstEnd.Add(time.Duration(late) * time.Second).Sub(at)
			narrow := mustSubmit(t, s, at, scheduler.JobSpec{CPUsPerTask: 4, TimeLimit: limit})
			cyc = mustSchedule(t, s, at)

			jw, _ := s.Job(wide)
			assert.Equal(t, firstEnd, jw.ExpectedStart, "the 8-CPU job waits exactly for job %d's end", first)
			var shown time.Time
			for _, p := range cyc.Pending {
				if p.Job == wide {
					shown = p.ExpectedStart
				}
			}
			assert.Equal(t, firstEnd, shown, "Pending.ExpectedStart")
			ex, err := s.Explain(at, wide, scheduler.ExplainOptions{})
			require.NoError(t, err)
			require.NotNil(t, ex.Estimate)
			assert.Equal(t, firstEnd, ex.Estimate.Start, "Explain's estimate")

			jn, _ := s.Job(narrow)
			if late > 0 {
				assert.Empty(t, cyc.Starts, "a job ending %d s after the blocker would delay the reservation", late)
				assert.Equal(t, scheduler.JobPending, jn.State)
				return
			}
			require.Len(t, cyc.Starts, 1, "a job ending %d s after the blocker fits the gap", late)
			assert.Equal(t, narrow, cyc.Starts[0].Job)
		})
	}
}

// TestCounterfactualNowMeansNow: with exact end times, a job whose start
// is seconds after the time asked about does not start "now", even when
// Explain is asked after the last pass and the gap is under one backfill
// resolution step: its what-ifs are offered (here another GPU type that
// starts it at once) and none that starts later is called immediate.
func TestCounterfactualNowMeansNow(t *testing.T) {
	base := time.Date(2026, 1, 5, 18, 10, 44, 0, time.UTC)
	node := func(name, typ string) scheduler.NodeConfig {
		return scheduler.NodeConfig{Name: name, CPUs: 8, MemoryMiB: 32 * 1024,
			GRES: []gres.Request{{Name: "gpu", Type: typ, Count: 2}}}
	}
	s, err := scheduler.New(scheduler.Config{
		Nodes:      []scheduler.NodeConfig{node("n1", "a100"), node("n2", "h100")},
		Partitions: []scheduler.PartitionConfig{{Name: "batch", MaxTime: 24 * time.Hour}},
		Backfill:   &backfill.Config{Mode: backfill.EASY},
	})
	require.NoError(t, err)
	a100 := []gres.Request{{Name: "gpu", Type: "a100", Count: 2}}
	mustSubmit(t, s, base, scheduler.JobSpec{CPUsPerTask: 8, TimeLimit: 10 * time.Minute, GRESPerNode: a100})
	require.Len(t, mustSchedule(t, s, base).Starts, 1)
	end := base.Add(10 * time.Minute)
	x := mustSubmit(t, s, base.Add(time.Second), scheduler.JobSpec{CPUsPerTask: 8, TimeLimit: time.Hour, GRESPerNode: a100})
	mustSchedule(t, s, base.Add(time.Second))

	asked := end.Add(-9 * time.Second)
	ex, err := s.Explain(asked, x, scheduler.ExplainOptions{Counterfactuals: true})
	require.NoError(t, err)
	require.NotNil(t, ex.Estimate)
	require.Equal(t, end, ex.Estimate.Start, "it waits for the a100 node, 9 s")
	offered := false
	for _, cf := range ex.Counterfactuals {
		if cf.Now {
			assert.False(t, cf.Start.After(asked), "%s is called immediate but starts %s after %s", cf, cf.Start.Sub(asked), asked)
		}
		if cf.Kind == scheduler.CounterGPUType && cf.GPUType == "h100" && cf.Now {
			offered = true
		}
	}
	assert.True(t, offered, "switching to the free h100 node starts it now, 9 s sooner:\n%s", ex)
}
