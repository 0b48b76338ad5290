package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

// Explain before any backfill pass plans on demand; a component of a
// heterogeneous job starts with its siblings, so it is not promised a
// start at which a sibling's nodes are held by an advance reservation.
func TestExplainHetOnDemandPlansTheComponentsTogether(t *testing.T) {
	nodes := append(taskNodes(2, 16), gpuNode("g0", 1, 16, 4, true))
	s, err := scheduler.New(scheduler.Config{
		Nodes: nodes,
		Partitions: []scheduler.PartitionConfig{
			{Name: "cpu", Nodes: []string{"c0", "c1"}, Default: true},
			{Name: "gpu", Nodes: []string{"g0"}},
		},
		Policy:   &policy.Config{},
		Backfill: &backfill.Config{Mode: backfill.Conservative, Resolution: time.Second},
	})
	require.NoError(t, err)
	end := t0.Add(time.Hour)
	require.NoError(t, s.AddReservation(t0, policy.Reservation{Name: "r", Start: t0, Duration: time.Hour,
		Nodes: topology.NodeSetOf(3, 2), Users: []string{"bob"}}))
	ids, err := s.SubmitHet(t0, []scheduler.JobSpec{
		{User: "u", Partition: "cpu", Nodes: 1, TimeLimit: time.Hour},
		{User: "u", Partition: "gpu", Nodes: 1, GRESPerNode: gpus(4), TimeLimit: time.Hour},
	})
	require.NoError(t, err)
	for _, id := range ids {
		ex, err := s.Explain(t0, id, scheduler.ExplainOptions{})
		require.NoError(t, err)
		require.NotNil(t, ex.Estimate, "%s", ex)
		assert.Equal(t, end, ex.Estimate.Start, "job %d starts with its sibling: %s", id, ex)
		assert.Equal(t, scheduler.EstimateOnDemand, ex.Estimate.Source)
	}
	cyc := mustSchedule(t, s, t0)
	assert.Empty(t, cyc.Starts)
	for _, id := range ids {
		assert.Equal(t, end, mustJob(t, s, id).ExpectedStart)
	}
}
