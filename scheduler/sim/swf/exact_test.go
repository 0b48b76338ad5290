package swf_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler/sim"
	"github.com/sluicehq/sluice/scheduler/sim/swf"
)

// TestKTHExactReplaysTheTracesWorkload replays the whole KTH-SP2 trace
// (FCFS, the fastest policy) with user and with exact estimates: both do
// the trace's work as its requests allow it (each job's run time, cut to
// its requested time for the 475 jobs that overran it), CPU-hour for
// CPU-hour; with exact estimates no job is ended by its limit. With user
// estimates, what the limits cut off is what is lost to them.
func TestKTHExactReplaysTheTracesWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the whole KTH-SP2 trace twice")
	}
	data, err := io.ReadAll(openTrace(t, "KTH-SP2/log.swf"))
	require.NoError(t, err)
	rd, err := swf.NewReader(bytes.NewReader(data), swf.Options{})
	require.NoError(t, err)
	var work, traced float64 // CPU-seconds: cut to the requests, as recorded
	overran := 0
	for rec, err := rd.Read(); err != io.EOF; rec, err = rd.Read() {
		require.NoError(t, err)
		if rec.Run > rec.ReqTime {
			overran++
		}
		work += float64(min(rec.Run, rec.ReqTime) * rec.Procs)
		traced += float64(rec.Run * rec.Procs)
	}
	require.Equal(t, 475, overran)

	replay := func(exact bool) sim.Summary {
		rd, m, cfg := machineFor(t, bytes.NewReader(data), swf.Options{}, 1)
		opt := sim.Options{DiscardSeries: true}
		require.NoError(t, sim.FCFS.Apply(&cfg, &opt))
		src := swf.Source(rd, m)
		if exact {
			src = sim.ExactEstimates(src)
		}
		res, err := runOn(t, cfg, src, opt)
		require.NoError(t, err)
		return res.Summary
	}
	user, exact := replay(false), replay(true)
	assert.Equal(t, overran, user.TimedOut)
	assert.Zero(t, exact.TimedOut)
	assert.InDelta(t, work/3600, user.CPUHours, 1e-6)
	assert.InDelta(t, work/3600, exact.CPUHours, 1e-6, "the exact replay does the same work")
	assert.InDelta(t, traced/3600, user.CPUHours+user.LostCPUHoursTimeLimit, 1e-6, "what the limits cut off is lost to them")
	assert.Zero(t, exact.LostCPUHours)
}
