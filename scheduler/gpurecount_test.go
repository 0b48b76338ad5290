package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// Slurm decides a --gpus job's node count when it schedules it (sbatch
// -N: without it, enough nodes for the per-job options). A count fixed
// on 4-GPU nodes is chosen again when the nodes change: --gpus=8 took 2
// nodes of 4 GPUs; once every node has 2, it takes all 4 and starts.
func TestGPUsTotalRecountedOnUpdateNode(t *testing.T) {
	for _, bf := range []bool{false, true} {
		s := gpuQuad(t, bf, 4)
		// A hog keeps the job pending across the updates.
		hog := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 4, Exclusive: true, TimeLimit: time.Hour})
		mustSchedule(t, s, t0)
		id := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerJob: []gres.Request{{Name: "gpu", Count: 8}}, TimeLimit: time.Hour})
		j, _ := s.Job(id)
		require.Equal(t, 2, j.ReqNodes)
		require.NoError(t, s.Finish(t0.Add(time.Minute), hog, 0))
		for _, name := range []string{"g0", "g1", "g2", "g3"} {
			nc, ok := s.NodeConfig(name)
			require.True(t, ok)
			nc.Devices.Devices = nc.Devices.Devices[:2] // socket 0's two GPUs only
			require.NoError(t, s.UpdateNode(t0.Add(time.Minute), nc))
		}
		j, _ = s.Job(id)
		assert.Equal(t, 4, j.ReqNodes, "bf=%v", bf)
		mustSchedule(t, s, t0.Add(2*time.Minute))
		j, _ = s.Job(id)
		require.Equal(t, scheduler.JobRunning, j.State, "bf=%v reason %v", bf, j.Reason)
		assert.Equal(t, []int{2, 2, 2, 2}, gpusByNode(j.Alloc), "bf=%v", bf)
	}
}

// The count goes down too: -N 1-4 --gpus=8 took 4 nodes of 2 GPUs; nodes
// updated to 4 GPUs hold it on 2.
func TestGPUsTotalRecountShrinks(t *testing.T) {
	s := gpuQuad(t, false, 4)
	for _, name := range []string{"g0", "g1", "g2", "g3"} {
		nc, _ := s.NodeConfig(name)
		nc.Devices.Devices = nc.Devices.Devices[:2]
		require.NoError(t, s.UpdateNode(t0, nc))
	}
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 1, NodesMax: 4, GRESPerJob: []gres.Request{{Name: "gpu", Count: 8}}, Hold: true, TimeLimit: time.Hour})
	j, _ := s.Job(id)
	require.Equal(t, 4, j.ReqNodes)
	for _, name := range []string{"g0", "g1"} {
		require.NoError(t, s.UpdateNode(t0, gpuNode(name, 2, 8, 2, false)))
	}
	j, _ = s.Job(id)
	assert.Equal(t, 2, j.ReqNodes)
	require.NoError(t, s.Release(t0, id))
	mustSchedule(t, s, t0)
	j, _ = s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)
	assert.Equal(t, []int{4, 4}, gpusByNode(j.Alloc))
	assert.Equal(t, []string{"g0", "g1"}, []string{j.Alloc.Nodes[0].Name, j.Alloc.Nodes[1].Name})
}

// RemoveNode: --gpus=8 -n 8 (4 tasks and 4 GPUs on each of 2 nodes) of
// 4 nodes with 2, 2, 4, 4 GPUs chose g2 and g3; once g3 is gone the job
// needs 3 nodes (4+2+2) and starts on them.
func TestGPUsTotalRecountedOnRemoveNode(t *testing.T) {
	for _, bf := range []bool{false, true} {
		s := gpuQuad(t, bf, 4)
		for _, name := range []string{"g0", "g1"} {
			nc, _ := s.NodeConfig(name)
			nc.Devices.Devices = nc.Devices.Devices[:2]
			require.NoError(t, s.UpdateNode(t0, nc))
		}
		id := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 8, GRESPerJob: []gres.Request{{Name: "gpu", Count: 8}}, Hold: true, TimeLimit: time.Hour})
		j, _ := s.Job(id)
		require.Equal(t, 2, j.ReqNodes)
		require.NoError(t, s.RemoveNode(t0, "g3"))
		j, _ = s.Job(id)
		assert.Equal(t, 3, j.ReqNodes, "bf=%v", bf)
		require.NoError(t, s.Release(t0, id))
		mustSchedule(t, s, t0)
		j, _ = s.Job(id)
		require.Equal(t, scheduler.JobRunning, j.State, "bf=%v reason %v", bf, j.Reason)
		var gpus, tasks int
		for k, n := range j.Alloc.Nodes {
			gpus += gpusByNode(j.Alloc)[k]
			tasks += len(n.CPUs) // one CPU per task
		}
		assert.Equal(t, 8, gpus, "bf=%v", bf)
		assert.GreaterOrEqual(t, tasks, 8, "bf=%v", bf) // ceil(8/3) per node: see JobSpec.GRESPerJob
		assert.Len(t, j.Alloc.Nodes, 3, "bf=%v", bf)
	}
}

// No count can run it any more (16 GPUs, 3 nodes of 4 left after
// RemoveNode, then 2 GPUs each): the job keeps its count and waits as a
// job of that -N whose nodes went, Explain naming too few nodes; adding a
// node back lets a count run it.
func TestGPUsTotalNeverStartableKeepsCount(t *testing.T) {
	s := gpuQuad(t, false, 5)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerJob: []gres.Request{{Name: "gpu", Count: 16}}, TimeLimit: time.Hour})
	require.NoError(t, s.RemoveNode(t0, "g4"))
	require.NoError(t, s.RemoveNode(t0, "g3"))
	j, _ := s.Job(id)
	assert.Equal(t, 4, j.ReqNodes)
	cyc := mustSchedule(t, s, t0.Add(time.Minute))
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, id))
	ex, err := s.Explain(t0.Add(time.Minute), id, scheduler.ExplainOptions{})
	require.NoError(t, err)
	assert.Contains(t, ex.String(), "needs 4 node(s) able to hold it, only 3 exist")
	require.NoError(t, s.AddNode(t0.Add(2*time.Minute), gpuNode("g9", 2, 8, 4, false))) // 8 GPUs
	j, _ = s.Job(id)
	assert.Equal(t, 3, j.ReqNodes) // 8 + 4 + 4
	mustSchedule(t, s, t0.Add(2*time.Minute))
	j, _ = s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State, "reason %v", j.Reason)
	assert.Len(t, j.Alloc.Nodes, 3)
}

// Partition changes recount too: --gpus=8 on 4 nodes of 2 GPUs takes 4;
// the partition narrowed to 3 of them (6 GPUs) holds it on no count, so
// it keeps 4; two nodes grown back to 4 GPUs make it 2, and the
// partition widened again keeps 2.
func TestGPUsTotalRecountedOnUpdatePartition(t *testing.T) {
	s := gpuQuad(t, false, 4)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerJob: []gres.Request{{Name: "gpu", Count: 8}}, Hold: true, TimeLimit: time.Hour})
	j, _ := s.Job(id)
	require.Equal(t, 2, j.ReqNodes)
	for _, name := range []string{"g0", "g1", "g2", "g3"} {
		nc, _ := s.NodeConfig(name)
		nc.Devices.Devices = nc.Devices.Devices[:2]
		require.NoError(t, s.UpdateNode(t0, nc))
	}
	j, _ = s.Job(id)
	require.Equal(t, 4, j.ReqNodes)
	// The partition narrowed to three nodes of 2 GPUs: 6 < 8, no count
	// runs it; it keeps 4.
	p, _ := s.Partition("gpu")
	p.Nodes = []string{"g0", "g1", "g2"}
	require.NoError(t, s.UpdatePartition(t0, p))
	j, _ = s.Job(id)
	assert.Equal(t, 4, j.ReqNodes)
	// g0 and g1 grow to 4 GPUs: 2 nodes again.
	for _, name := range []string{"g0", "g1"} {
		require.NoError(t, s.UpdateNode(t0, gpuNode(name, 2, 8, 2, false)))
	}
	j, _ = s.Job(id)
	assert.Equal(t, 2, j.ReqNodes)
	// Back to all four nodes of which two have 4 GPUs: still 2.
	p.Nodes = nil
	require.NoError(t, s.UpdatePartition(t0, p))
	j, _ = s.Job(id)
	assert.Equal(t, 2, j.ReqNodes)
}
