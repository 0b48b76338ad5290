package ledger_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
)

// A GPU reading the scheduler accepted must not make the ledger refuse
// the job's record: a device that reports an infinite power (gres's
// DeviceSample.Validate lets +Inf through) would otherwise stop Observe
// for every later cycle.
func TestRecorderInfiniteReadingDoesNotStopObserve(t *testing.T) {
	l, s, rec := setup(t)
	id, err := s.Submit(t0, scheduler.JobSpec{User: "ann", Account: "physics", GRESPerNode: []gres.Request{{Name: "gpu", Count: 1}}, TimeLimit: time.Hour})
	require.NoError(t, err)
	cyc, err := s.Schedule(t0)
	require.NoError(t, err)
	require.Len(t, cyc.Starts, 1)
	require.NoError(t, rec.Observe(t0, cyc))
	j, _ := s.Job(id)
	na := j.Alloc.Nodes[0]
	dev := na.Devices[0]
	now := t0.Add(30 * time.Second)
	_, err = s.ReportTelemetry(now, scheduler.TelemetryEvent{Node: na.Name, Devices: []gres.DeviceSample{
		{Index: dev, Utilization: 50, MemoryUsedMiB: -1, PowerWatts: math.Inf(1), EnergyJoules: -1}}})
	require.NoError(t, err)
	j, _ = s.Job(id)
	require.NotNil(t, j.Usage)
	end := t0.Add(time.Minute)
	require.NoError(t, s.Finish(end, id, 0))
	cyc, err = s.Schedule(end)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(end, cyc))
	r := storedJob(t, l, id)
	assert.Equal(t, accounting.StateCompleted, r.State)
	assert.InDelta(t, 15, r.Usage.BusyGPUSeconds, 1e-9)
	assert.False(t, math.IsInf(r.Usage.PowerMaxWatts, 0))
}
