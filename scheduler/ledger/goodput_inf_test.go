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
// the job's record: readings whose sums overflow (two devices each
// reporting the largest power and energy counter there is) would
// otherwise stop Observe for every later cycle.
func TestRecorderInfiniteReadingDoesNotStopObserve(t *testing.T) {
	l, s, rec := setup(t)
	id, err := s.Submit(t0, scheduler.JobSpec{User: "ann", Account: "physics", GRESPerNode: []gres.Request{{Name: "gpu", Count: 2}}, TimeLimit: time.Hour})
	require.NoError(t, err)
	cyc, err := s.Schedule(t0)
	require.NoError(t, err)
	require.Len(t, cyc.Starts, 1)
	require.NoError(t, rec.Observe(t0, cyc))
	j, _ := s.Job(id)
	na := j.Alloc.Nodes[0]
	for k, energy := range []float64{0, math.MaxFloat64} {
		var devs []gres.DeviceSample
		for _, dev := range na.Devices {
			devs = append(devs, gres.DeviceSample{Index: dev, Utilization: 50, MemoryUsedMiB: -1, PowerWatts: math.MaxFloat64, EnergyJoules: energy})
		}
		_, err = s.ReportTelemetry(t0.Add(time.Duration(15*(k+1))*time.Second), scheduler.TelemetryEvent{Node: na.Name, Devices: devs})
		require.NoError(t, err)
	}
	j, _ = s.Job(id)
	require.NotNil(t, j.Usage)
	end := t0.Add(time.Minute)
	require.NoError(t, s.Finish(end, id, 0))
	cyc, err = s.Schedule(end)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(end, cyc))
	r := storedJob(t, l, id)
	assert.Equal(t, accounting.StateCompleted, r.State)
	assert.InDelta(t, 2*30*0.5, r.Usage.BusyGPUSeconds, 1e-9)
	assert.Equal(t, math.MaxFloat64, r.Usage.PowerMaxWatts)
	assert.Equal(t, math.MaxFloat64, r.Usage.EnergyJoules)
}
