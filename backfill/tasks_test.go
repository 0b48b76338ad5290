package backfill

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/topology"
)

// bookTasks fits req on a fresh profile of nodes, checks it starts at
// the origin with tasks per node (in node order), books it and returns
// the profile.
func bookTasks(t *testing.T, nodes []NodeState, req Request, tasks ...int) *Profile {
	t.Helper()
	p, err := NewProfile(t0, nodes, nil, ProfileOptions{})
	require.NoError(t, err)
	fit, err := p.EarliestFit(req)
	require.NoError(t, err)
	require.Equal(t, FitFound, fit.Status)
	require.Equal(t, t0, fit.Start)
	require.Equal(t, tasks, fit.Tasks)
	for x, n := range tasks {
		require.Equal(t, int64(n-1)*req.PerTask.At(0), fit.Spread[x].At(0), "node %d's share beyond its first task", x)
	}
	require.NoError(t, p.ReserveFit(1, req, fit))
	return p
}

// Slurm deals -n tasks over the job's nodes one per node in turn: -N2
// -n7 on two free 8-CPU nodes takes 4+3 CPUs, not ceil(7/2)=4 on each,
// and the booking holds exactly 7 CPUs.
func TestTasksRequestDealsCyclically(t *testing.T) {
	req := Request{Nodes: 2, PerNode: vec(1, 0, 0), Tasks: 7, PerTask: vec(1, 0, 0), Duration: mins(10)}
	p := bookTasks(t, gpuNodes(0, 0), req, 4, 3)
	require.Equal(t, int64(16-7), freeSum(t, p, t0, 0))
}

// -N2 -n5 --gpus-per-task=2 on nodes with 8 and 4 free GPUs: the second
// node holds only two tasks, so the first takes three (3+2), where a
// ceil(5/2)=3 tasks per node would be refused.
func TestTasksRequestFillsUnevenNodes(t *testing.T) {
	req := Request{Nodes: 2, PerNode: vec(1, 0, 2), Tasks: 5, PerTask: vec(1, 0, 2), Duration: mins(10)}
	p := bookTasks(t, gpuNodes(8, 4), req, 3, 2)
	require.Equal(t, int64(2), gpusFree(t, p, t0), "10 of the 12 GPUs booked")

	// Seven such tasks need 14 GPUs: never on these nodes.
	fit, err := p.EarliestFit(Request{Nodes: 2, PerNode: vec(1, 0, 2), Tasks: 7, PerTask: vec(1, 0, 2), Duration: mins(10)})
	require.NoError(t, err)
	require.Equal(t, FitNever, fit.Status)
}

// --ntasks-per-node with -n is a maximum per node (MaxTasksPerNode), and
// a request that cannot hold its tasks within it is invalid.
func TestTasksRequestMaxPerNode(t *testing.T) {
	p, err := NewProfile(t0, gpuNodes(0, 0, 0), nil, ProfileOptions{})
	require.NoError(t, err)
	fit, err := p.EarliestFit(Request{Nodes: 3, PerNode: vec(1, 0, 0), Tasks: 7, PerTask: vec(1, 0, 0), MaxTasksPerNode: 3, Duration: mins(10)})
	require.NoError(t, err)
	require.Equal(t, []int{3, 2, 2}, fit.Tasks)
	_, err = p.EarliestFit(Request{Nodes: 2, PerNode: vec(1, 0, 0), Tasks: 7, PerTask: vec(1, 0, 0), MaxTasksPerNode: 3, Duration: mins(10)})
	require.ErrorIs(t, err, ErrInvalidRequest)
	_, err = p.EarliestFit(Request{Nodes: 3, PerNode: vec(1, 0, 0), Tasks: 2, PerTask: vec(1, 0, 0), Duration: mins(10)})
	require.ErrorIs(t, err, ErrInvalidRequest, "fewer tasks than nodes")
	_, err = p.EarliestFit(Request{Nodes: 1, PerNode: vec(1, 0, 0), Tasks: 2, PerTask: vec(1, 0, 0), Spread: vec(1, 0, 0), Duration: mins(10)})
	require.ErrorIs(t, err, ErrInvalidRequest, "Tasks and Spread")
}

// A task job waits until its nodes have room for all its tasks: node 0
// runs 6 of its 8 CPUs until 10 min, so -N2 -n12 (needing 8+4 or 6+6)
// is reserved for then, and the plan books 12 CPUs.
func TestPlanTasksJobReservedWhenRoomFrees(t *testing.T) {
	end := t0.Add(10 * time.Minute)
	run := []Running{{ID: 100, End: end, Allocs: []Alloc{{Node: 0, Use: vec(6, 0, 0)}}}}
	pl, err := NewPlanner(Config{Mode: EASY, Window: 24 * time.Hour})
	require.NoError(t, err)
	p, err := pl.NewProfile(t0, gpuNodes(0, 0), run)
	require.NoError(t, err)
	plan, err := pl.Plan(p, []Job{
		{ID: 1, Nodes: 2, PerNode: vec(1, 0, 0), Tasks: 12, PerTask: vec(1, 0, 0), TimeLimit: mins(30)},
		{ID: 2, Nodes: 1, PerNode: vec(2, 0, 0), TimeLimit: mins(5)},
	})
	require.NoError(t, err)
	e := entryByID(plan, 1)
	require.Equal(t, StatusReserved, e.Status)
	require.Equal(t, end, e.Start)
	require.Equal(t, []int{6, 6}, e.Tasks)
	// The short job backfills into the CPUs the reservation leaves.
	require.Equal(t, StatusStart, entryByID(plan, 2).Status)
}

func TestDealTasks(t *testing.T) {
	cases := []struct {
		extra      int64
		room, want []int64
		ok         bool
	}{
		{6, []int64{5, 1, 5}, []int64{3, 1, 2}, true},
		{3, []int64{3, 2}, []int64{2, 1}, true},
		{0, []int64{3, 2}, []int64{0, 0}, true},
		{4, []int64{0, 4}, []int64{0, 4}, true},
		{5, []int64{2, 2}, nil, false},
	}
	for _, c := range cases {
		out := make([]int64, len(c.room))
		ok := DealTasks(c.extra, c.room, out)
		require.Equal(t, c.ok, ok, "%v", c)
		if ok {
			require.Equal(t, c.want, out, "%v", c)
		}
	}
}

// Slurm's plane distribution (dist_plane page): -N4 -n21 -m plane=4 on
// nodes with room for all deals blocks of 4 in turn, 8+5+4+4; plane=2
// gives 6+6+5+4; a node's block is cut to its room and the rest goes on
// to the next nodes; too little room, or a node left without a task, is
// refused.
func TestDealPlanes(t *testing.T) {
	big := []int64{100, 100, 100, 100}
	for _, tc := range []struct {
		total, plane int64
		room, want   []int64
	}{
		{21, 4, big, []int64{8, 5, 4, 4}},
		{21, 2, big, []int64{6, 6, 5, 4}},
		{21, 1, big, []int64{6, 5, 5, 5}},
		{21, 21, []int64{100}, []int64{21}},
		{10, 4, []int64{2, 100, 100}, []int64{2, 4, 4}},
		{12, 4, []int64{2, 100, 100}, []int64{2, 6, 4}},
		{9, 4, []int64{2, 3, 4}, []int64{2, 3, 4}},
		{10, 4, []int64{2, 3, 4}, nil},
		{4, 4, []int64{100, 100}, nil},
	} {
		out := make([]int64, len(tc.room))
		ok := DealPlanes(tc.total, tc.plane, tc.room, out)
		if tc.want == nil {
			if ok {
				t.Errorf("DealPlanes(%d, %d, %v) = %v, want refused", tc.total, tc.plane, tc.room, out)
			}
			continue
		}
		if !ok || !slices.Equal(out, tc.want) {
			t.Errorf("DealPlanes(%d, %d, %v) = %v %v, want %v", tc.total, tc.plane, tc.room, out, ok, tc.want)
		}
	}
}

// -N2 -n7 -m plane=4 on two free 8-CPU nodes: a block of 4, then the 3
// left (4+3); with -n 10 plane=4 on
// nodes of 8 CPUs: 4, 4, then 2 (6+4), not cyclic's 5+5.
func TestTasksRequestDealsPlanes(t *testing.T) {
	req := Request{Nodes: 2, PerNode: vec(1, 0, 0), Tasks: 10, PerTask: vec(1, 0, 0), PlaneSize: 4, Duration: mins(10)}
	bookTasks(t, gpuNodes(0, 0), req, 6, 4)
	req.Tasks = 7
	bookTasks(t, gpuNodes(0, 0), req, 4, 3)
	req.Tasks, req.PlaneSize = 10, 0
	bookTasks(t, gpuNodes(0, 0), req, 5, 5)
	req.PlaneSize = -1
	p, err := NewProfile(t0, gpuNodes(0, 0), nil, ProfileOptions{})
	require.NoError(t, err)
	_, err = p.EarliestFit(req)
	require.ErrorIs(t, err, ErrInvalidRequest)
}

// A heterogeneous job's component with a task spread (sbatch -p cpu -n
// 12 on 8-CPU nodes : -p gpu a whole GPU node) is planned with its tasks,
// as a plain job is: node 0 runs 6 of its 8 CPUs until 10 min, so the
// -n 12 component, whose two nodes need 6+6 or 8+4, and with it the job,
// starts then, not now (where one task per node would fit); the entry
// gives the component's task counts, and EarliestCoFit answers the same
// for the planner's requests (JobRequest).
func TestPlanHetComponentWithTasks(t *testing.T) {
	end := t0.Add(10 * time.Minute)
	run := []Running{{ID: 100, End: end, Allocs: []Alloc{{Node: 0, Use: vec(6, 0, 0)}}}}
	pl, err := NewPlanner(Config{Mode: Conservative, Window: 24 * time.Hour})
	require.NoError(t, err)
	p, err := pl.NewProfile(t0, gpuNodes(0, 0, 4), run)
	require.NoError(t, err)
	comps := []Job{
		{ID: 1, Nodes: 2, PerNode: vec(1, 0, 0), Tasks: 12, PerTask: vec(1, 0, 0), TimeLimit: mins(30), Allowed: topology.NodeSetOf(3, 0, 1)},
		{ID: 2, Nodes: 1, PerNode: vec(1, 0, 4), TimeLimit: mins(30), Allowed: topology.NodeSetOf(3, 2)},
	}

	fits, err := p.EarliestCoFit([]JobID{1, 2}, []Request{pl.JobRequest(&comps[0], mins(30), t0), pl.JobRequest(&comps[1], mins(30), t0)})
	require.NoError(t, err)
	require.Equal(t, FitFound, fits[0].Status)
	require.Equal(t, end, fits[0].Start)
	require.Equal(t, []int{0, 1}, fits[0].Nodes)
	require.Equal(t, []int{6, 6}, fits[0].Tasks)
	require.Nil(t, fits[1].Tasks, "no task spread")

	plan, err := pl.Plan(p, []Job{
		{ID: 1, Components: comps},
		{ID: 3, Nodes: 1, PerNode: vec(2, 0, 0), TimeLimit: mins(5)},
	})
	require.NoError(t, err)
	e := entryByID(plan, 1)
	require.Equal(t, StatusReserved, e.Status)
	require.Equal(t, end, e.Start)
	require.Len(t, e.Components, 2)
	require.Equal(t, []int{0, 1}, e.Components[0].Nodes)
	require.Equal(t, []int{6, 6}, e.Components[0].Tasks)
	require.Equal(t, []int{2}, e.Components[1].Nodes)
	require.Nil(t, e.Components[1].Tasks)
	// The short job backfills into the CPUs the reservation leaves.
	require.Equal(t, StatusStart, entryByID(plan, 3).Status)
	checkNoOverAllocation(t, p)
}
