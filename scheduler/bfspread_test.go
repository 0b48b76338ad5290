package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/scheduler"
)

// spreadCluster is an EASY backfill cluster of one-socket GPU nodes with
// the given GPU counts.
func spreadCluster(t *testing.T, gpuCounts ...int) *scheduler.Scheduler {
	t.Helper()
	var nodes []scheduler.NodeConfig
	for k, g := range gpuCounts {
		nodes = append(nodes, socketNode(string(rune('a'+k))+"1", 1, g, false))
	}
	s, err := scheduler.New(scheduler.Config{
		Nodes:      nodes,
		Partitions: []scheduler.PartitionConfig{{Name: "gpu", Default: true}},
		Backfill:   &backfill.Config{Mode: backfill.EASY},
	})
	require.NoError(t, err)
	return s
}

// startHog starts a job holding n GPUs on the first node at at for limit
// and returns its end.
func startHog(t *testing.T, s *scheduler.Scheduler, at time.Time, n int64, limit time.Duration) time.Time {
	t.Helper()
	hog := mustSubmit(t, s, at, scheduler.JobSpec{GRESPerNode: gpus(n), TimeLimit: limit})
	require.Len(t, mustSchedule(t, s, at).Starts, 1)
	hj, _ := s.Job(hog)
	require.Equal(t, 0, hj.Alloc.Nodes[0].Node)
	return at.Add(limit)
}

// The backfill planner plans --gpus as the job's total, as Slurm
// distributes it over the nodes (and as the main pass places it): -N4
// --gpus=8 on nodes with 5, 1, 1 and 1 GPUs, the first busy until an
// arbitrary second, is expected to start exactly then (the ceil(8/4) = 2
// per node view never fits); -N2 --gpus=5 reserves 5 GPUs, not 6, so a
// 3-GPU job fits beside the reservation and starts now.
func TestBackfillPlansGRESPerJobTotal(t *testing.T) {
	t.Run("uneven nodes", func(t *testing.T) {
		s := spreadCluster(t, 5, 1, 1, 1)
		at := t0.Add(17 * time.Second)
		end := startHog(t, s, at, 2, time.Hour)

		at = at.Add(31 * time.Second)
		id := mustSubmit(t, s, at, scheduler.JobSpec{Nodes: 4, GRESPerJob: gpus(8), TimeLimit: 2 * time.Hour})
		cyc := mustSchedule(t, s, at)
		assert.Empty(t, cyc.Starts)
		j, _ := s.Job(id)
		assert.Equal(t, end, j.ExpectedStart, "expected to start when the hog ends")
		// Explain plans it as the pass does, not by the ceil view.
		ex, err := s.Explain(at.Add(time.Second), id, scheduler.ExplainOptions{})
		require.NoError(t, err)
		require.NotNil(t, ex.Estimate, "%s", ex)
		assert.Equal(t, end, ex.Estimate.Start, "%s", ex)

		cyc = mustSchedule(t, s, end)
		require.Len(t, cyc.Starts, 1)
		assert.Equal(t, id, cyc.Starts[0].Job)
		assert.Equal(t, []int{5, 1, 1, 1}, gpusOf(cyc.Starts[0].Alloc))
	})
	t.Run("reserves the total", func(t *testing.T) {
		s := spreadCluster(t, 4, 4)
		end := startHog(t, s, t0, 4, time.Hour)

		at := t0.Add(43 * time.Second)
		wide := mustSubmit(t, s, at, scheduler.JobSpec{Nodes: 2, GRESPerJob: gpus(5), TimeLimit: 2 * time.Hour})
		side := mustSubmit(t, s, at, scheduler.JobSpec{GRESPerNode: gpus(3), TimeLimit: 10 * time.Hour})
		cyc := mustSchedule(t, s, at)
		jw, _ := s.Job(wide)
		assert.Equal(t, end, jw.ExpectedStart)
		require.Len(t, cyc.Starts, 1, "the 3-GPU job fits beside a reservation of 5 GPUs (4 + 1)")
		assert.Equal(t, side, cyc.Starts[0].Job)
		assert.True(t, cyc.Starts[0].Backfill)

		cyc = mustSchedule(t, s, end)
		require.Len(t, cyc.Starts, 1, "the reservation held")
		assert.Equal(t, wide, cyc.Starts[0].Job)
		assert.Equal(t, []int{4, 1}, gpusOf(cyc.Starts[0].Alloc))
	})
	t.Run("a backfill start places the planned shares", func(t *testing.T) {
		// Node a (8 GPUs) has 4 in use until end, then the head job's
		// reservation takes 7 of them: a job running past end may take
		// only one GPU there. Filling a first as it is free now (4) would
		// delay the head; the start takes the plan's shares, 1 + 3.
		s := spreadCluster(t, 8, 4)
		at := t0.Add(7 * time.Second)
		end := startHog(t, s, at, 4, time.Hour)

		at = at.Add(time.Minute)
		head := mustSubmit(t, s, at, scheduler.JobSpec{GRESPerNode: gpus(7), TimeLimit: time.Hour})
		wide := mustSubmit(t, s, at, scheduler.JobSpec{Nodes: 2, GRESPerJob: gpus(4), TimeLimit: 2 * time.Hour})
		cyc := mustSchedule(t, s, at)
		require.Len(t, cyc.Starts, 1, "%+v", cyc.Pending)
		assert.Equal(t, wide, cyc.Starts[0].Job)
		assert.True(t, cyc.Starts[0].Backfill)
		assert.Equal(t, []int{1, 3}, gpusOf(cyc.Starts[0].Alloc))
		jh, _ := s.Job(head)
		assert.Equal(t, end, jh.ExpectedStart)

		cyc = mustSchedule(t, s, end)
		require.Len(t, cyc.Starts, 1, "the head's reservation held")
		assert.Equal(t, head, cyc.Starts[0].Job)
	})
}
