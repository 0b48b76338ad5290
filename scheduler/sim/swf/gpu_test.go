package swf_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
	"github.com/sluicehq/sluice/scheduler/sim/swf"
)

// TestReplayTinyGPUs replays the tiny trace with 2 GPUs per processor and
// a GPU workload file joined by job number. The schedule is that of
// TestReplayTinyFCFS; by hand, in GPU-seconds:
//
//   - job 1, 8 GPUs × 100 s at 50 %: 400 busy of 800, COMPLETED;
//   - job 2, 4 GPUs × 50 s, a 25 s stall then 100 %: 100 busy of 200;
//   - job 3, 2 GPUs × 30 s at 100 %, FAILED: 60 busy, 60 lost;
//   - job 5, 4 GPUs, 80 s of work ended at its 50 s limit, 100 % for the
//     first half of the work (40 s) then 0 %: 160 busy, 200 lost;
//   - job 6, 2 GPUs × 10 s, not in the file: 20 unmeasured.
func TestReplayTinyGPUs(t *testing.T) {
	rd, err := swf.NewReader(strings.NewReader(tiny), swf.Options{})
	require.NoError(t, err)
	m, err := swf.MachineFor(rd.Header(), 0, 1)
	require.NoError(t, err)
	m.GPUsPerNode = 2
	cfg, err := m.Config()
	require.NoError(t, err)
	profiles, err := sim.ReadProfiles(strings.NewReader("job,util,stall_s,phases\n1,50\n2,100,25\n3,100\n5,,,0.5:100 1:0\n"))
	require.NoError(t, err)
	res, err := runOn(t, cfg, sim.WithProfiles(swf.Source(rd, m), profiles), sim.Options{})
	require.NoError(t, err)
	assert.Equal(t, int64(8), res.Capacity.GPUs)
	gpus := map[string]int64{}
	for _, r := range res.Jobs {
		gpus[r.Job.Spec.Name] = r.GPUs
	}
	assert.Equal(t, map[string]int64{"1": 8, "2": 4, "3": 2, "5": 4, "6": 2}, gpus)
	sum := res.Summary
	assert.InDelta(t, 1280.0/1440, sum.Utilization, 1e-12, "the GPUs are as full as the processors")
	g := sum.Goodput
	assert.Equal(t, 4, g.MeasuredJobs)
	assert.InDelta(t, 1260.0/3600, g.AllocatedGPUHours, 1e-12)
	assert.InDelta(t, 20.0/3600, g.UnmeasuredGPUHours, 1e-12)
	assert.InDelta(t, 720.0/3600, g.BusyGPUHours, 1e-12)
	assert.InDelta(t, 500.0/3600, g.UsefulGPUHours, 1e-12)
	assert.InDelta(t, 260.0/3600, g.LostGPUHours, 1e-12)
	assert.InDelta(t, 500.0/1260, g.Goodput, 1e-12)
	assert.Equal(t, scheduler.JobTimeout, res.Jobs[len(res.Jobs)-1].State, "job 5 ends last, at its limit")

	m.GPUsPerNode = swf.MaxGPUsPerNode + 1
	assert.ErrorIs(t, m.Validate(), swf.ErrMachine)
	m.GPUsPerNode = -1
	assert.ErrorIs(t, m.Validate(), swf.ErrMachine)
}
