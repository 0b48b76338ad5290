//go:build cgo

package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/nvml"
	"github.com/sluicehq/sluice/gres/nvml/nvmltest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

// discoverTray discovers a mock GB200 compute tray whose GPUs registered
// in the given clique of one fabric cluster (clique 0: no multi-node
// fabric), as the NVML driver reads it.
func discoverTray(t *testing.T, clique uint32) gres.Inventory {
	t.Helper()
	srv := nvmltest.GB200()
	if clique != 0 {
		srv.SetFabricAll([16]uint8{0xab, 1: 0xcd, 15: 0x01}, clique)
	}
	sys, proc := t.TempDir(), t.TempDir()
	require.NoError(t, srv.WriteSysfs(sys))
	require.NoError(t, srv.WriteProcfs(proc))
	d, err := nvml.New(srv, nvml.Options{SysfsRoot: sys, ProcRoot: proc})
	require.NoError(t, err)
	require.NoError(t, d.Init())
	t.Cleanup(func() { _ = d.Shutdown() })
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	return disc.Inventory
}

// TestNVLinkDomainsFromHardware: with no Topology configured, the
// scheduler's NVLink domains come from the GPUs' fabric clique (two
// NVL72-style partitions of 2 and 3 trays, one tray outside), and
// --nvlink-domain=one jobs are placed inside one of them.
func TestNVLinkDomainsFromHardware(t *testing.T) {
	cliques := []uint32{1, 1, 2, 2, 2, 0}
	cfg := scheduler.Config{Partitions: []scheduler.PartitionConfig{{Name: "gpu", Default: true, MaxTime: 24 * time.Hour}}}
	for i, c := range cliques {
		cfg.Nodes = append(cfg.Nodes, scheduler.NodeConfig{Name: fmt.Sprintf("tray%d", i), CPUs: 128, MemoryMiB: 1 << 20, Devices: discoverTray(t, c)})
	}
	doms := scheduler.FabricDomains(cfg.Nodes)
	require.Len(t, doms, 2)
	assert.Equal(t, topology.DomainConfig{Name: "abcd0000-0000-0000-0000-000000000001/1", Nodes: []string{"tray0", "tray1"}}, doms[0])
	assert.Equal(t, []string{"tray2", "tray3", "tray4"}, doms[1].Nodes)

	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	three := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 3, GRESPerNode: gpus(4), NVLinkDomain: topology.DomainOne})
	two := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 2, GRESPerNode: gpus(4), NVLinkDomain: topology.DomainOne})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 2)
	j3, _ := s.Job(three)
	assert.Equal(t, []string{"tray2", "tray3", "tray4"}, j3.Alloc.NodeNames())
	j2, _ := s.Job(two)
	assert.Equal(t, []string{"tray0", "tray1"}, j2.Alloc.NodeNames())
	// Only tray5 is free, outside every domain: a one-domain job waits,
	// and Explain names the topology constraint.
	blocked := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 1, GRESPerNode: gpus(4), NVLinkDomain: topology.DomainOne})
	cyc = mustSchedule(t, s, t0)
	assert.Empty(t, cyc.Starts)
	ex, err := s.Explain(t0, blocked, scheduler.ExplainOptions{})
	require.NoError(t, err)
	var constraint string
	for _, b := range ex.Blockers {
		if b.Need != nil && b.Need.Constraint != "" {
			constraint = b.Need.Constraint
		}
	}
	assert.Contains(t, constraint, "NVLink domain")

	// Configured domains win over the hardware's.
	cfg.Topology = &topology.Config{Domains: []topology.DomainConfig{{Name: "all", Nodes: []string{"tray[0-5]"}}}}
	s, err = scheduler.New(cfg)
	require.NoError(t, err)
	six := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 6, GRESPerNode: gpus(4), NVLinkDomain: topology.DomainOne})
	cyc = mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, six, cyc.Starts[0].Job)
}
