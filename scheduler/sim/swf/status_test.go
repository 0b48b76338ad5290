package swf_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler/sim"
	"github.com/sluicehq/sluice/scheduler/sim/swf"
)

// An SWF status of -1 means unknown (the Standard Workload Format: 1
// completed, 0 failed, 5 cancelled, -1 where the log does not say): such a
// job replays as one that did its work and is counted as unknown, not as
// failed, and is written back with status -1.
func TestUnknownSWFStatusIsNotFailed(t *testing.T) {
	const trace = `; MaxProcs: 4
1  0 -1 100 1 -1 -1 1 200 -1  1 1 1 -1 -1 -1 -1 -1
2  0 -1 100 1 -1 -1 1 200 -1  0 1 1 -1 -1 -1 -1 -1
3  0 -1 100 1 -1 -1 1 200 -1  5 1 1 -1 -1 -1 -1 -1
4  0 -1 100 1 -1 -1 1 200 -1 -1 1 1 -1 -1 -1 -1 -1
5  0 -1 300 1 -1 -1 1 200 -1 -1 1 1 -1 -1 -1 -1 -1
`
	rd, m, cfg := machineFor(t, strings.NewReader(trace), swf.Options{}, 1)
	res, err := runOn(t, cfg, swf.Source(rd, m), sim.Options{})
	require.NoError(t, err)
	sum := res.Summary
	assert.Equal(t, 1, sum.Completed, "status 1")
	assert.Equal(t, 2, sum.Failed, "statuses 0 and 5")
	assert.Equal(t, 1, sum.Unknown, "status -1, ran to its end")
	assert.Equal(t, 1, sum.TimedOut, "status -1, ended at its limit: a timeout all the same")

	var buf bytes.Buffer
	w := swf.NewWriter(&buf, m.Start)
	for _, r := range res.Jobs {
		require.NoError(t, w.WriteResult(r))
		if r.Job.Spec.Name == "4" {
			assert.True(t, r.Job.ExitUnknown)
			assert.Zero(t, r.Job.ExitCode)
		}
	}
	require.NoError(t, w.Flush())
	assert.Contains(t, buf.String(), "4 0 0 100 1 -1 -1 1 200 -1 -1 ", "unknown stays unknown")
}

// NASA-iPSC records no status (-1 for every job): none of its jobs is
// failed.
func TestNASAJobsAreNotFailed(t *testing.T) {
	rd, m, cfg := machineFor(t, openTrace(t, "NASA-iPSC-1993-3.1-cln.swf"), swf.Options{}, 1)
	var opt sim.Options
	require.NoError(t, sim.FCFS.Apply(&cfg, &opt))
	opt.DiscardSeries = true
	res, err := runOn(t, cfg, sim.Window(swf.Source(rd, m), 0, 2000), opt)
	require.NoError(t, err)
	assert.Zero(t, res.Summary.Failed)
	assert.Equal(t, res.Summary.Jobs, res.Summary.Unknown)
}
