package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
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
