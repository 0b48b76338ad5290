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

// A job requeued (its launch failed 40 s in) and started again by the
// next cycle, both before one Observe: its record is the new run's, with
// the first run's 2 GPUs × 40 s as prior GPU-seconds and as lost work,
// and the first run is charged up to its requeue.
func TestRecorderRequeueAndRestartInOneCycle(t *testing.T) {
	l, s, rec := setupWith(t, accounting.Config{NoDecay: true}, nil)
	id, err := s.Submit(t0, scheduler.JobSpec{User: "ann", Account: "physics", Partition: "h100", GRESPerNode: []gres.Request{{Name: "gpu", Count: 2}}, TimeLimit: time.Hour})
	require.NoError(t, err)
	cyc, err := s.Schedule(t0)
	require.NoError(t, err)
	require.Len(t, cyc.Starts, 1)
	require.NoError(t, rec.Observe(t0, cyc))

	t1 := t0.Add(40 * time.Second)
	require.NoError(t, s.Requeue(t1, id))
	t2 := t1.Add(20 * time.Second)
	cyc, err = s.Schedule(t2)
	require.NoError(t, err)
	require.Len(t, cyc.Starts, 1, "started again")
	require.NoError(t, rec.Observe(t2, cyc))

	r := storedJob(t, l, id)
	assert.Equal(t, accounting.StateRunning, r.State)
	assert.Equal(t, t2, r.Start)
	assert.Equal(t, 2, r.LaunchAttempts)
	assert.Equal(t, 1, r.LaunchFailures)
	assert.InDelta(t, 2*40, r.PriorGPUSeconds, 1e-9)
	assert.InDelta(t, 2*40, r.LostGPUSeconds, 1e-9)
	assert.Equal(t, 40.0, wallSeconds(t, l, "physics", "ann", t2), "the first run, charged up to its requeue")

	end := t2.Add(time.Hour)
	require.NoError(t, s.Finish(end, id, 0))
	cyc, err = s.Schedule(end)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(end, cyc))
	r = storedJob(t, l, id)
	assert.Equal(t, accounting.StateCompleted, r.State)
	assert.InDelta(t, 2*3600+2*40, r.AllocGPUSeconds(r.End), 1e-9)
	assert.Equal(t, 40.0+3600.0, wallSeconds(t, l, "physics", "ann", end))
}
