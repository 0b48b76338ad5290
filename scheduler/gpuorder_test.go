package scheduler_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
)

// TestGPUOrderAffinityFirstPrefersFreeSocket checks Config.GPUOrder on an
// A100 PCIe node (NVLink pairs 0-1, 2-3 on socket 0; 4-5, 6-7 on socket 1)
// whose socket 0 CPUs are all in use and whose GPUs 4 and 6 are broken: a
// 2-GPU job gets the bridged pair 0,1 by default (NVLinkFirst) and the
// unbridged 5,7 next to the free CPUs with gres.AffinityFirst (Slurm's
// order).
func TestGPUOrderAffinityFirstPrefersFreeSocket(t *testing.T) {
	for _, tt := range []struct {
		order gres.DeviceOrder
		want  []int
	}{{gres.NVLinkFirst, []int{0, 1}}, {gres.AffinityFirst, []int{5, 7}}} {
		t.Run(tt.order.String(), func(t *testing.T) {
			cfg := scheduler.Config{
				Nodes:      []scheduler.NodeConfig{{Name: "a100", CPUs: 128, MemoryMiB: 512 * clustertest.GiB, Devices: gpuserver.PCIeA100Pairs()}},
				Partitions: []scheduler.PartitionConfig{{Name: "gpu"}},
				GPUOrder:   tt.order,
			}
			s, err := scheduler.New(cfg)
			require.NoError(t, err)
			mustSubmit(t, s, t0, scheduler.JobSpec{CPUsPerTask: 64}) // fills socket 0's CPUs
			cyc := mustSchedule(t, s, t0)
			require.Len(t, cyc.Starts, 1)
			allIn(t, cyc.Starts[0].Alloc.Nodes[0].CPUs, 0, 63)
			for _, d := range []int{4, 6} {
				require.NoError(t, s.SetDeviceHealth(t0, "a100", d, false, "XID 79"))
			}
			id := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(2)})
			mustSchedule(t, s, t0)
			j, _ := s.Job(id)
			require.Equal(t, scheduler.JobRunning, j.State)
			assert.Equal(t, tt.want, j.Alloc.Nodes[0].Devices)
		})
	}
	_, err := scheduler.New(scheduler.Config{
		Nodes:      []scheduler.NodeConfig{{Name: "n", CPUs: 1}},
		Partitions: []scheduler.PartitionConfig{{Name: "p"}},
		GPUOrder:   gres.AffinityFirst + 1,
	})
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig)
}
