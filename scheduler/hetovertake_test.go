package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/scheduler"
)

// A heterogeneous job starts when all its components can, so a job
// outside the plan that may take a sibling's nodes can delay every
// component: x, ahead in the queue and released when the GPU node's job
// ends at t, takes that node at t; component 0 (CPU only) is then no
// promise, with x its overtaker, and indeed does not start at t.
func TestExplainHetOvertakerOnASiblingsNodes(t *testing.T) {
	s := hetTasksNodes(t, backfill.Conservative)
	busy := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "gpu", Nodes: 1, GRESPerNode: gpus(4), TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	end := t0.Add(time.Hour)
	now := t0.Add(time.Minute)
	x := mustSubmit(t, s, now, scheduler.JobSpec{User: "v", Partition: "gpu", Nodes: 1, GRESPerNode: gpus(4),
		TimeLimit: time.Hour, Dependency: fmt.Sprintf("afterany:%d", busy)})
	ids, err := s.SubmitHet(now, []scheduler.JobSpec{
		{User: "u", Partition: "cpu", Nodes: 1, TimeLimit: time.Hour},
		{User: "u", Partition: "gpu", Nodes: 1, GRESPerNode: gpus(4), TimeLimit: time.Hour},
	})
	require.NoError(t, err)
	mustSchedule(t, s, now)
	for _, id := range ids {
		ex, err := s.Explain(now, id, scheduler.ExplainOptions{})
		require.NoError(t, err)
		require.NotNil(t, ex.Estimate)
		assert.Equal(t, end, ex.Estimate.Start, "%s", ex)
		assert.False(t, ex.Estimate.Bound, "x may take the sibling's node: no promise: %s", ex)
		require.NotEmpty(t, ex.Estimate.Overtakers, "%s", ex)
		assert.Equal(t, x, ex.Estimate.Overtakers[0].Job)
	}
	// The break the label guards against.
	cyc := mustSchedule(t, s, end)
	_, okX := startOf(cyc, x)
	_, okH := startOf(cyc, ids[0])
	assert.True(t, okX && !okH, "x takes g0 at t, the heterogeneous job waits: %+v", cyc.Starts)
}
