package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler"
)

// Slurm's plane distribution (the dist_plane page) allocates tasks in
// blocks of plane_size to the nodes in turn: -N4 -n21 -m plane=4 runs
// 8+5+4+4 tasks, plane=2 6+6+5+4, where the default deals one at a time
// (6+5+5+5); on one node all 21 land there.
func TestPlaneDistributionAllocation(t *testing.T) {
	for _, tc := range []struct {
		dist  string
		nodes int
		want  []int
	}{
		{"plane=4", 4, []int{8, 5, 4, 4}},
		{"plane=2", 4, []int{6, 6, 5, 4}},
		{"", 4, []int{6, 5, 5, 5}},
		{"block", 4, []int{6, 5, 5, 5}},
		{"cyclic,Pack", 4, []int{6, 5, 5, 5}},
		{"plane=4", 1, []int{21}},
	} {
		for _, bf := range []bool{false, true} {
			d, err := scheduler.ParseDistribution(tc.dist)
			require.NoError(t, err)
			s := tasksCluster(t, bf, taskNodes(4, 32))
			id := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: tc.nodes, Tasks: 21, Distribution: d, TimeLimit: time.Hour})
			mustSchedule(t, s, t0)
			j, _ := s.Job(id)
			require.Equal(t, scheduler.JobRunning, j.State, "%s bf=%v: %s", tc.dist, bf, j.Reason)
			assert.Equal(t, tc.want, cpusPerNode(j.Alloc), "-N%d -n21 -m %s bf=%v", tc.nodes, tc.dist, bf)
		}
	}
}

// Without -N the scheduler chooses the fewest nodes that hold the
// blocks: -n 21 -m plane=4 on 16-CPU nodes takes 2, 12+9; a block is cut
// to a node's room (one busy CPU on the first node: 4, 4, 4, 3 there);
// fewer blocks than -N nodes are refused, as Slurm does.
func TestPlaneDistributionChoosesNodes(t *testing.T) {
	plane4 := scheduler.Distribution{Node: scheduler.DistPlane, PlaneSize: 4}
	s := tasksCluster(t, false, taskNodes(4, 16))
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 21, Distribution: plane4, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	assert.Equal(t, []int{12, 9}, cpusPerNode(j.Alloc))

	s = tasksCluster(t, false, taskNodes(2, 16))
	mustSubmit(t, s, t0, scheduler.JobSpec{NodeList: "c0", Tasks: 1, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	id = mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 2, Tasks: 31, Distribution: plane4, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	j, _ = s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State, "%s", j.Reason)
	assert.Equal(t, []int{15, 16}, cpusPerNode(j.Alloc))

	_, err := s.Submit(t0, scheduler.JobSpec{Nodes: 4, Tasks: 8, Distribution: plane4, TimeLimit: time.Hour})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob)
}

// The backfill plan deals the blocks as the cycle does: -N2 -n10 -m
// plane=4 behind a node-wide job is expected when it ends and then runs
// 6+4.
func TestPlaneDistributionPlanned(t *testing.T) {
	s := tasksCluster(t, true, taskNodes(2, 8))
	hog := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 1, Tasks: 8, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 2, Tasks: 10, TimeLimit: time.Hour,
		Distribution: scheduler.Distribution{Node: scheduler.DistPlane, PlaneSize: 4}})
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	require.Equal(t, scheduler.JobPending, j.State)
	assert.Equal(t, t0.Add(time.Hour), j.ExpectedStart)
	require.NoError(t, s.Finish(t0.Add(time.Hour), hog, 0))
	mustSchedule(t, s, t0.Add(time.Hour))
	j, _ = s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)
	assert.Equal(t, []int{6, 4}, cpusPerNode(j.Alloc))
}
