package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

// treeCluster returns 8 CPU-only nodes n0..n7 under two leaf switches of
// four (s0: n0-n3, s1: n4-n7) and one spine.
func treeCluster() scheduler.Config {
	cfg := scheduler.Config{
		Partitions: []scheduler.PartitionConfig{{Name: "all", MaxTime: time.Hour}},
		Topology: &topology.Config{Switches: []topology.SwitchConfig{
			{Name: "s0", Nodes: []string{"n[0-3]"}},
			{Name: "s1", Nodes: []string{"n[4-7]"}},
			{Name: "spine", Switches: []string{"s0", "s1"}},
		}},
	}
	for i := range 8 {
		cfg.Nodes = append(cfg.Nodes, scheduler.NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 4, MemoryMiB: 1024})
	}
	return cfg
}

func TestTopologyLeastSpread(t *testing.T) {
	s, err := scheduler.New(treeCluster())
	require.NoError(t, err)
	// Occupy n0 and n1: first-fit would now give a 4-node job n2..n5 across
	// both leaves; the topology keeps it on one leaf switch.
	for range 2 {
		mustSubmit(t, s, t0, scheduler.JobSpec{Exclusive: true})
	}
	mustSchedule(t, s, t0)
	wide := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 4, Exclusive: true})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, wide, cyc.Starts[0].Job)
	assert.Equal(t, []string{"n4", "n5", "n6", "n7"}, cyc.Starts[0].Alloc.NodeNames())
	assert.Equal(t, 1.0, cyc.Starts[0].Alloc.Quality)
}

func TestTopologySwitchesWait(t *testing.T) {
	s, err := scheduler.New(treeCluster())
	require.NoError(t, err)
	// Take one node of each leaf: no leaf has 4 free nodes left.
	mustSubmit(t, s, t0, scheduler.JobSpec{Exclusive: true})
	mustSchedule(t, s, t0)
	require.NoError(t, s.DrainNode(t0, "n4", "test"))
	strict := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 4, Exclusive: true, Switches: 1, SwitchesMaxWait: 30 * time.Minute})
	cyc := mustSchedule(t, s, t0)
	assert.Empty(t, cyc.Starts, "the job waits for a single-leaf placement")
	assert.Equal(t, "Resources", reasonOf(cyc, strict).String())

	// After max-wait (and before the blocking job's hour is up) it accepts
	// a two-leaf placement.
	cyc = mustSchedule(t, s, t0.Add(30*time.Minute))
	require.Len(t, cyc.Starts, 1)
	assert.Less(t, cyc.Starts[0].Alloc.Quality, 1.0)

}

func TestTopologyRejectsImpossible(t *testing.T) {
	s, err := scheduler.New(treeCluster())
	require.NoError(t, err)
	_, err = s.Submit(t0, scheduler.JobSpec{Nodes: 4, Segment: 3})
	assert.ErrorIs(t, err, scheduler.ErrUnsatisfiable)

	flat, err := scheduler.New(clusterWithoutTopology())
	require.NoError(t, err)
	_, err = flat.Submit(t0, scheduler.JobSpec{Switches: 1})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob)

	bad := treeCluster()
	bad.Topology.Switches[0].Nodes = []string{"nope"}
	_, err = scheduler.New(bad)
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig)
}

func clusterWithoutTopology() scheduler.Config {
	c := treeCluster()
	c.Topology = nil
	return c
}
