package swf_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler/sim"
	"github.com/sluicehq/sluice/scheduler/sim/swf"
)

// TestKTHETAExactConservative is issue 8's ETA honesty check on a real
// trace: with exact run times and conservative backfill, every one of
// the first 8,000 KTH-SP2 jobs that waited with a start estimate starts
// exactly when first promised. (The whole trace gives the same; see
// docs/bench/sim.md.)
func TestKTHETAExactConservative(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 8,000 KTH-SP2 jobs")
	}
	rd, m, cfg := machineFor(t, openTrace(t, "KTH-SP2/log.swf"), swf.Options{}, 1)
	var opt sim.Options
	require.NoError(t, sim.Conservative.Apply(&cfg, &opt))
	opt.DiscardSeries = true
	res, err := runOn(t, cfg, sim.ExactEstimates(sim.Window(swf.Source(rd, m), 0, 8000)), opt)
	require.NoError(t, err)
	require.Len(t, res.Jobs, 8000)
	for _, r := range res.Jobs {
		if d, ok := r.ETAError(); ok {
			require.Zero(t, d, "job %d promised %v, started %v", r.Job.Data.(*swf.Record).Job, r.FirstExpectedStart, r.Start)
		}
	}
	eta := res.Summary.ETA
	require.Greater(t, eta.Jobs, 2000)
	require.Equal(t, sim.Stats{}, eta.Error)
	require.Equal(t, 1.0, eta.OnTime)
}
