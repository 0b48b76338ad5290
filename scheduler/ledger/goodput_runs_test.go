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

// A control plane's clock has sub-second times; the ledger keeps whole
// seconds. The record a run's end rewrites is the same run's: it must not
// count the run again as a prior run (8 GPUs for an hour are 8 GPU-hours,
// not 16).
func TestRecorderSubSecondTimesCountARunOnce(t *testing.T) {
	l, s, rec := setup(t)
	start := t0.Add(500 * time.Millisecond)
	id, err := s.Submit(start, scheduler.JobSpec{User: "ann", Account: "physics", GRESPerNode: []gres.Request{{Name: "gpu", Count: 8}}, TimeLimit: 4 * time.Hour})
	require.NoError(t, err)
	cyc, err := s.Schedule(start)
	require.NoError(t, err)
	require.Len(t, cyc.Starts, 1)
	require.NoError(t, rec.Observe(start, cyc))
	end := start.Add(time.Hour)
	require.NoError(t, s.Finish(end, id, 0))
	cyc, err = s.Schedule(end)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(end, cyc))

	r := storedJob(t, l, id)
	assert.Equal(t, accounting.StateCompleted, r.State)
	assert.Zero(t, r.PriorGPUSeconds, "one run: nothing before it")
	assert.InDelta(t, 8*3600, r.AllocGPUSeconds(r.End), 8)
}
