package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

func allIn(t *testing.T, ids []int, lo, hi int) {
	t.Helper()
	for _, c := range ids {
		assert.True(t, c >= lo && c <= hi, "CPU %d outside [%d, %d]", c, lo, hi)
	}
}

func TestCPUsCloseToGPUs(t *testing.T) {
	s, err := scheduler.New(clustertest.DGX())
	require.NoError(t, err)
	// Take GPUs 0-3 (socket 0) so the next 4-GPU job lands on socket 1's GPUs.
	mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(4), CPUsPerTask: 4})
	second := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(4), CPUsPerTask: 8})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 2)
	j, _ := s.Job(second)
	na := j.Alloc.Nodes[0]
	inv := gpuserver.DGXH100()
	sock := inv.Devices[na.Devices[0]].Socket
	for _, d := range na.Devices {
		assert.Equal(t, sock, inv.Devices[d].Socket, "a 4-GPU job stays on one socket's GPUs")
	}
	allIn(t, na.CPUs, sock*gpuserver.CoresPerSocket, sock*gpuserver.CoresPerSocket+gpuserver.CoresPerSocket-1)
}

func TestEnforceBinding(t *testing.T) {
	cfg := clustertest.DGX()
	cfg.Nodes[0].CPUs = 128 // 2 sockets × 64, as the fixture's affinity says
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	// Fill socket 0's CPUs (0-63) with a CPU-only job.
	hog := mustSubmit(t, s, t0, scheduler.JobSpec{CPUsPerTask: 64})
	mustSchedule(t, s, t0)
	j, _ := s.Job(hog)
	allIn(t, j.Alloc.Nodes[0].CPUs, 0, 63)

	// Socket 0's GPUs are free, but their CPUs are not. A bound job must
	// take socket 1's GPUs with socket 1's CPUs.
	bound := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(4), CPUsPerTask: 16, EnforceBinding: true})
	mustSchedule(t, s, t0)
	j, _ = s.Job(bound)
	require.Equal(t, scheduler.JobRunning, j.State)
	allIn(t, j.Alloc.Nodes[0].CPUs, 64, 127)
	for _, d := range j.Alloc.Nodes[0].Devices {
		assert.Equal(t, 1, gpuserver.DGXH100().Devices[d].Socket)
	}
	// Socket 1 now has 48 CPUs and 4 GPUs free; socket 0 none of its CPUs.
	// A bound job needing 4 GPUs and 60 CPUs cannot start; unbound it can.
	tooBig := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(4), CPUsPerTask: 60, EnforceBinding: true})
	cyc := mustSchedule(t, s, t0)
	assert.Empty(t, cyc.Starts)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, tooBig))
	require.NoError(t, s.Cancel(t0, tooBig))
	loose := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(4), CPUsPerTask: 40})
	cyc = mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, loose, cyc.Starts[0].Job)
}

func TestCPUsAndMemPerGPU(t *testing.T) {
	s, err := scheduler.New(clustertest.DGX())
	require.NoError(t, err)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(2), CPUsPerGPU: 12, MemPerGPUMiB: 100 * clustertest.GiB})
	j, _ := s.Job(id)
	assert.Equal(t, int64(24), j.PerNode[gres.CPU])
	assert.Equal(t, int64(200*clustertest.GiB), j.PerNode[gres.Mem])
	_, err = s.Submit(t0, scheduler.JobSpec{MemPerGPUMiB: 1, MemPerNodeMiB: 1})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob)
}

func TestCountOnlyGRES(t *testing.T) {
	cfg := clustertest.DGX()
	cfg.Nodes[0].GRES = []gres.Request{{Name: "shard", Count: 16}}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	a := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: []gres.Request{{Name: "shard", Count: 10}}})
	b := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: []gres.Request{{Name: "shard", Count: 10}}})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, a, cyc.Starts[0].Job)
	assert.Empty(t, cyc.Starts[0].Alloc.Nodes[0].Devices, "shards are counted, not devices")
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, b))
	_, err = s.Submit(t0, scheduler.JobSpec{GRESPerNode: []gres.Request{{Name: "shard", Count: 17}}})
	assert.ErrorIs(t, err, scheduler.ErrUnsatisfiable)

	bad := clustertest.DGX()
	bad.Nodes[0].GRES = []gres.Request{{Name: "gpu", Count: 1}}
	_, err = scheduler.New(bad)
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig)
}

func TestDeviceHealth(t *testing.T) {
	s, err := scheduler.New(clustertest.DGX())
	require.NoError(t, err)
	require.NoError(t, s.SetDeviceHealth(t0, "dgx01", 3, false, "XID 79"))
	n, _ := s.Node("dgx01")
	assert.Equal(t, []int{3}, n.UnhealthyDevices)
	assert.NotContains(t, n.FreeDevices, 3)

	all8 := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(8)})
	seven := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(7)})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 0, "an 8-GPU job cannot use the broken GPU, and blocks the queue")
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, all8))
	require.NoError(t, s.Cancel(t0, all8))
	cyc = mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, seven, cyc.Starts[0].Job)
	assert.NotContains(t, cyc.Starts[0].Alloc.Nodes[0].Devices, 3)

	// A GPU failing under a running job stays out of the pool when the job ends.
	dev := cyc.Starts[0].Alloc.Nodes[0].Devices[0]
	require.NoError(t, s.SetDeviceHealth(t0.Add(time.Minute), "dgx01", dev, false, "XID 48"))
	require.NoError(t, s.Finish(t0.Add(2*time.Minute), seven, 0))
	n, _ = s.Node("dgx01")
	assert.Len(t, n.FreeDevices, 6)
	assert.Equal(t, int64(6), n.Free.At(s.Registry().MustLookup("gres/gpu")))

	// All GPUs failing drains the node; one recovering lifts that drain.
	for d := range 8 {
		require.NoError(t, s.SetDeviceHealth(t0.Add(3*time.Minute), "dgx01", d, false, "fell off the bus"))
	}
	n, _ = s.Node("dgx01")
	assert.Equal(t, scheduler.NodeDrained, n.State)
	assert.Contains(t, n.Reason, "fell off the bus")
	require.NoError(t, s.SetDeviceHealth(t0.Add(4*time.Minute), "dgx01", 5, true, ""))
	n, _ = s.Node("dgx01")
	assert.Equal(t, scheduler.NodeIdle, n.State)
	assert.Equal(t, []int{5}, n.FreeDevices)

	assert.ErrorIs(t, s.SetDeviceHealth(t0.Add(5*time.Minute), "dgx01", 42, false, ""), gres.ErrUnknownDevice)
	assert.ErrorIs(t, s.SetDeviceHealth(t0.Add(5*time.Minute), "nope", 0, false, ""), scheduler.ErrUnknownNode)
}

// TestSubmitRejectsMalformedGRESName checks that Submit validates GRES
// names and types by gres's one rule: Name "gpu:h100" used to be charged as
// a count-only TRES gres/gpu:h100, so two jobs got the same GPUs, and a
// count-like type ("2") could never match a device.
func TestSubmitRejectsMalformedGRESName(t *testing.T) {
	s, err := scheduler.New(clustertest.DGX())
	require.NoError(t, err)
	for _, q := range []gres.Request{{Name: "gpu:h100", Count: 2}, {Name: "gpu", Type: "2", Count: 3}, {Name: "", Count: 1}} {
		for _, spec := range []scheduler.JobSpec{
			{GRESPerNode: []gres.Request{q}},
			{GRESPerTask: []gres.Request{q}},
			{GRESPerJob: []gres.Request{q}},
		} {
			_, err := s.Submit(t0, spec)
			require.ErrorIs(t, err, scheduler.ErrInvalidJob, "%+v", spec)
			require.ErrorIs(t, err, gres.ErrInvalidGRES, "%+v", spec)
		}
	}
	assert.Empty(t, s.Jobs(), "a rejected submit queues nothing")
	// The well-formed spelling of the same request is accepted and takes devices.
	mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: []gres.Request{{Name: "gpu", Type: "h100", Count: 2}}})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 1)
	assert.Len(t, cyc.Starts[0].Alloc.Nodes[0].Devices, 2)
}
