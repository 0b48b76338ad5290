package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/scheduler"
)

// A heterogeneous job that the main pass does not start holds back its
// components' partitions there, as a plain job waiting for resources
// does, so a lower-priority job is left to the backfill pass, which keeps
// the heterogeneous job's reservation. Under conservative backfill the
// job -n 32 : -N1 --gpus-per-node=4 is promised t (Estimate.Bound), when
// the CPU nodes free up; a lower -n 32 job of partition cpu, queued
// behind it, would fit the same two nodes at t. At t the heterogeneous
// job starts as promised and the lower job waits for its end.
func TestHetJobHoldsBackLowerJobsInTheMainPass(t *testing.T) {
	s, end := hetTasksCluster(t, backfill.Conservative)
	now := t0.Add(time.Minute)
	ids, err := s.SubmitHet(now, []scheduler.JobSpec{
		{User: "u", Partition: "cpu", Tasks: 32, TimeLimit: time.Hour},
		{User: "u", Partition: "gpu", Nodes: 1, GRESPerNode: gpus(4), TimeLimit: time.Hour},
	})
	require.NoError(t, err)
	lower := mustSubmit(t, s, now, scheduler.JobSpec{User: "v", Partition: "cpu", Tasks: 32, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, now)
	assert.Empty(t, cyc.Starts)
	for _, id := range ids {
		assert.Equal(t, end, mustJob(t, s, id).ExpectedStart)
	}
	assert.Equal(t, end.Add(time.Hour), mustJob(t, s, lower).ExpectedStart, "after the heterogeneous job")
	ex, err := s.Explain(now, ids[0], scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.NotNil(t, ex.Estimate)
	assert.Equal(t, end, ex.Estimate.Start, "%s", ex)
	assert.True(t, ex.Estimate.Bound, "a promise: %s", ex)

	cyc = mustSchedule(t, s, end)
	a, okA := startOf(cyc, ids[0])
	_, okB := startOf(cyc, ids[1])
	require.True(t, okA && okB, "the promise holds: %+v", cyc.Starts)
	assert.Equal(t, []string{"c0", "c1"}, a.Alloc.NodeNames())
	_, okL := startOf(cyc, lower)
	assert.False(t, okL, "the lower job does not take the heterogeneous job's nodes")
	jl := mustJob(t, s, lower)
	assert.Equal(t, scheduler.JobPending, jl.State)
	assert.Equal(t, end.Add(time.Hour), jl.ExpectedStart)
}
