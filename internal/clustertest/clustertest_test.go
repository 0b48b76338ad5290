package clustertest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
)

// TestStandardCluster pins the standard cluster of DESIGN.md: h100, a100
// and GB200 nodes in that order, in the counts of the Standard constants,
// and the three partitions, with finished jobs kept (MinJobAge 0).
func TestStandardCluster(t *testing.T) {
	cfg := clustertest.StandardCluster()
	require.NoError(t, cfg.Validate())
	require.Len(t, cfg.Nodes, clustertest.StandardNodes)
	var h100, gb200 []string
	for i, n := range cfg.Nodes {
		kind, devs := "a", gpuserver.PCIeA100Pairs()
		switch {
		case i < clustertest.StandardH100:
			kind, devs = "h", gpuserver.DGXH100()
			h100 = append(h100, n.Name)
		case i >= clustertest.StandardH100+clustertest.StandardA100:
			kind, devs = "g", gpuserver.GB200Node()
			gb200 = append(gb200, n.Name)
		}
		require.Equal(t, scheduler.NodeConfig{Name: fmt.Sprintf("%s%05d", kind, i), CPUs: 128, MemoryMiB: 2048 * clustertest.GiB, Devices: devs}, n)
	}
	assert.Len(t, gb200, clustertest.StandardGB200)
	assert.Equal(t, []scheduler.PartitionConfig{
		{Name: "batch", Default: true, MaxTime: 48 * time.Hour, DefaultTime: time.Hour},
		{Name: "h100", Nodes: h100, MaxTime: 24 * time.Hour, PriorityTier: 2},
		{Name: "gb200", Nodes: gb200, MaxTime: 24 * time.Hour},
	}, cfg.Partitions)
	assert.Zero(t, cfg.MinJobAge)
	assert.Equal(t, time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC), clustertest.Epoch)
}
