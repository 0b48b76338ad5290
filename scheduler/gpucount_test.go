package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
)

// gpuQuad is n nodes g0… of 2 sockets × 8 CPUs and 2 GPUs per socket (4
// GPUs, 16 CPUs each).
func gpuQuad(t *testing.T, bf bool, n int) *scheduler.Scheduler {
	t.Helper()
	var nodes []scheduler.NodeConfig
	for i := range n {
		nodes = append(nodes, gpuNode(fmt.Sprintf("g%d", i), 2, 8, 2, false))
	}
	return socketCluster(t, bf, nodes...)
}

// gpusByNode is each allocated node's GPU count.
func gpusByNode(a scheduler.Allocation) []int {
	out := make([]int, len(a.Nodes))
	for k, n := range a.Nodes {
		out[k] = len(n.Devices)
	}
	return out
}

// sbatch's --gpus is the job's total, and without -N Slurm allocates
// enough nodes to satisfy the per-job options (-n, --gpus); with -N
// min-max, within the range.
func TestGPUsTotalChoosesNodeCount(t *testing.T) {
	gpu := func(n int64) []gres.Request { return []gres.Request{{Name: "gpu", Count: n}} }
	for _, tc := range []struct {
		name       string
		spec       scheduler.JobSpec
		gpus, cpus []int
	}{
		// sbatch -n 8 --gpus=8 on 4-GPU nodes: 2 nodes, 4 tasks and 4 GPUs each.
		{"-n 8 --gpus=8", scheduler.JobSpec{Tasks: 8, GRESPerJob: gpu(8)}, []int{4, 4}, []int{4, 4}},
		// --gpus=8 alone: 2 nodes, one task on each.
		{"--gpus=8", scheduler.JobSpec{GRESPerJob: gpu(8)}, []int{4, 4}, []int{1, 1}},
		// -N 1-4 --gpus=12: the 3 nodes the GPUs need, within the range.
		{"-N 1-4 --gpus=12", scheduler.JobSpec{Nodes: 1, NodesMax: 4, GRESPerJob: gpu(12)}, []int{4, 4, 4}, []int{1, 1, 1}},
		// -N 2-4 --gpus=2: the range's minimum holds them.
		{"-N 2-4 --gpus=2", scheduler.JobSpec{Nodes: 2, NodesMax: 4, GRESPerJob: gpu(2)}, []int{1, 1}, []int{1, 1}},
		// -n 2 --gpus=3: one node holds both.
		{"-n 2 --gpus=3", scheduler.JobSpec{Tasks: 2, GRESPerJob: gpu(3)}, []int{3}, []int{2}},
	} {
		for _, bf := range []bool{false, true} {
			s := gpuQuad(t, bf, 4)
			sp := tc.spec
			sp.TimeLimit = time.Hour
			id := mustSubmit(t, s, t0, sp)
			mustSchedule(t, s, t0)
			j, _ := s.Job(id)
			require.Equal(t, scheduler.JobRunning, j.State, "%s bf=%v: %s", tc.name, bf, j.Reason)
			assert.Equal(t, tc.gpus, gpusByNode(j.Alloc), "%s bf=%v", tc.name, bf)
			assert.Equal(t, tc.cpus, cpusPerNode(j.Alloc), "%s bf=%v", tc.name, bf)
			assert.Equal(t, sp.Nodes, j.Spec.Nodes, "the spec keeps -N as given")
			assert.Equal(t, sp.NodesMax, j.Spec.NodesMax)
		}
	}
}

// A --gpus total no count in range holds is refused as unsatisfiable; a
// malformed range as invalid.
func TestGPUsTotalNodeCountRefused(t *testing.T) {
	s := gpuQuad(t, false, 4)
	gpu := []gres.Request{{Name: "gpu", Count: 12}}
	for _, sp := range []scheduler.JobSpec{
		{Nodes: 1, NodesMax: 2, GRESPerJob: gpu},
		{Tasks: 2, GRESPerJob: gpu},
		{GRESPerJob: []gres.Request{{Name: "gpu", Count: 17}}},
	} {
		sp.TimeLimit = time.Hour
		_, err := s.Submit(t0, sp)
		assert.ErrorIs(t, err, scheduler.ErrUnsatisfiable, "%+v", sp)
	}
	_, err := s.Submit(t0, scheduler.JobSpec{Nodes: 3, NodesMax: 2, GRESPerJob: gpu, TimeLimit: time.Hour})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob)
	assert.NotErrorIs(t, err, scheduler.ErrUnsatisfiable)
}

// The chosen count is the job's: with two of four nodes busy, -n 8
// --gpus=8 waits for 2 whole nodes' GPUs, its backfill plan expects it
// when they free.
func TestGPUsTotalChosenCountPlans(t *testing.T) {
	s := gpuQuad(t, true, 3)
	hog := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 2, GRESPerNode: []gres.Request{{Name: "gpu", Count: 4}}, TimeLimit: time.Hour})
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 8, GRESPerJob: []gres.Request{{Name: "gpu", Count: 8}}, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	require.Equal(t, scheduler.JobPending, j.State)
	assert.Equal(t, t0.Add(time.Hour), j.ExpectedStart)
	assert.Len(t, j.PlannedNodes, 2)
	at := t0.Add(time.Hour)
	require.NoError(t, s.Finish(at, hog, 0))
	mustSchedule(t, s, at)
	j, _ = s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)
	assert.Equal(t, []int{4, 4}, gpusByNode(j.Alloc))
}

// A --gpus total's node count is chosen again when a node is removed
// (gpurecount.go), but 16 GPUs fit no count of the three 4-GPU nodes
// left: the job keeps its 4, cannot start, and Explain says there are too
// few nodes rather than listing none as down.
func TestGPUsTotalCountAfterNodeRemoved(t *testing.T) {
	for _, bf := range []bool{false, true} {
		s := gpuQuad(t, bf, 4)
		id := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerJob: []gres.Request{{Name: "gpu", Count: 16}}, TimeLimit: time.Hour})
		require.NoError(t, s.RemoveNode(t0, "g3"))
		mustSchedule(t, s, t0.Add(time.Minute))
		j, _ := s.Job(id)
		require.Equal(t, scheduler.JobPending, j.State)
		assert.Equal(t, 4, j.ReqNodes)
		ex, err := s.Explain(t0.Add(time.Minute), id, scheduler.ExplainOptions{})
		require.NoError(t, err)
		var found bool
		for _, b := range ex.Blockers {
			if b.Kind == scheduler.BlockerNodes {
				found = true
				assert.Equal(t, "needs 4 node(s) able to hold it, only 3 exist", b.Detail, "bf=%v", bf)
			}
		}
		assert.True(t, found, "bf=%v: a nodes blocker: %s", bf, ex.String())
	}
}
