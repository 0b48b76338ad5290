package ledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
)

// TestRecorderCarriesGoodputOverRuns: a job whose first launch fails
// (10 minutes on 8 GPUs, all lost), runs again, checkpoints 30 minutes in
// and fails an hour in. Its record counts both launches, the failed one,
// the first run's GPU-seconds as prior, and the work lost: the whole
// first run and the second run's last 30 minutes since its checkpoint.
func TestRecorderCarriesGoodputOverRuns(t *testing.T) {
	l, s, rec := setup(t)
	id, err := s.Submit(t0, scheduler.JobSpec{User: "ann", Account: "physics", GRESPerNode: []gres.Request{{Name: "gpu", Count: 8}}, TimeLimit: 4 * time.Hour})
	require.NoError(t, err)
	observe := func(now time.Time) {
		t.Helper()
		cyc, err := s.Schedule(now)
		require.NoError(t, err)
		require.NoError(t, rec.Observe(now, cyc))
	}
	observe(t0)
	j, _ := s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)

	failed := t0.Add(10 * time.Minute)
	require.NoError(t, s.RequeueExcluding(failed, id, j.Alloc.Nodes[0].Name))
	require.NoError(t, rec.Observe(failed, scheduler.Cycle{}))
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		r, err := tx.Job(accounting.JobID(id))
		require.NoError(t, err)
		assert.Equal(t, accounting.StateRequeued, r.State)
		assert.Equal(t, 1, r.LaunchAttempts)
		assert.Equal(t, 1, r.LaunchFailures)
		assert.InDelta(t, 8*600, r.LostGPUSeconds, 1e-9)
		return nil
	}))

	restart := t0.Add(11 * time.Minute)
	observe(restart)
	j, _ = s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)
	require.NoError(t, s.Checkpoint(restart.Add(30*time.Minute), id))
	end := restart.Add(time.Hour)
	require.NoError(t, s.Finish(end, id, 1))
	observe(end)

	require.NoError(t, l.View(func(tx accounting.Tx) error {
		r, err := tx.Job(accounting.JobID(id))
		require.NoError(t, err)
		assert.Equal(t, accounting.StateFailed, r.State)
		assert.Equal(t, 2, r.LaunchAttempts)
		assert.Equal(t, 1, r.LaunchFailures)
		assert.InDelta(t, 8*600, r.PriorGPUSeconds, 1e-9)
		assert.InDelta(t, 8*600+8*1800, r.LostGPUSeconds, 1e-9)
		assert.InDelta(t, 8*3600+8*600, r.AllocGPUSeconds(end), 1e-9)
		assert.Greater(t, r.Quality, 0.0)
		return nil
	}))
}

// TestRecorderWritesStepUsage: the steps the scheduler read (their
// cgroups) get their usage in the ledger at the run's end; a step the
// caller recorded keeps its own fields.
func TestRecorderWritesStepUsage(t *testing.T) {
	l, s, rec := setup(t)
	id, err := s.Submit(t0, scheduler.JobSpec{User: "ann", Account: "physics", GRESPerNode: []gres.Request{{Name: "gpu", Count: 8}}, TimeLimit: 4 * time.Hour})
	require.NoError(t, err)
	cyc, err := s.Schedule(t0)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(t0, cyc))
	j, _ := s.Job(id)
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		return tx.PutStep(accounting.StepRecord{Job: accounting.JobID(id), Step: "batch", Name: "train.sh", Start: t0, State: accounting.StateRunning})
	}))
	for k := 1; k <= 2; k++ {
		_, err := s.ReportTelemetry(t0.Add(time.Duration(k)*time.Minute), scheduler.TelemetryEvent{Node: j.Alloc.Nodes[0].Name, Jobs: []scheduler.JobReading{
			{Job: id, Step: "batch", CPUSeconds: float64(30 * k), MemoryPeakBytes: 1 << 20},
			{Job: id, Step: "0", CPUSeconds: float64(600 * k), MemoryPeakBytes: 4 << 30},
		}})
		require.NoError(t, err)
	}
	end := t0.Add(time.Hour)
	require.NoError(t, s.Finish(end, id, 0))
	cyc, err = s.Schedule(end)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(end, cyc))
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		steps, err := tx.Steps(accounting.JobID(id))
		require.NoError(t, err)
		require.Len(t, steps, 2)
		byName := map[string]accounting.StepRecord{steps[0].Step: steps[0], steps[1].Step: steps[1]}
		b, z := byName["batch"], byName["0"]
		assert.Equal(t, "train.sh", b.Name, "the caller's step record keeps its fields")
		assert.InDelta(t, 60, b.Usage.CPUSeconds, 1e-9)
		assert.Equal(t, 60*time.Second, b.CPUTime)
		assert.Equal(t, int64(1<<20), b.MaxRSS)
		assert.InDelta(t, 1200, z.Usage.CPUSeconds, 1e-9)
		assert.Equal(t, t0, z.Start)
		assert.Equal(t, end, z.End)
		assert.Equal(t, accounting.StateCompleted, z.State)
		assert.Equal(t, int64(4<<30), z.MaxRSS)
		return nil
	}))
}
