package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// hetTasksNodes has two 16-CPU nodes (c0, c1) in partition cpu and one
// 16-CPU node with 4 GPUs (g0) in partition gpu; partition all has the
// three, partition mix c0 and g0.
func hetTasksNodes(t *testing.T, mode backfill.Mode) *scheduler.Scheduler {
	t.Helper()
	nodes := append(taskNodes(2, 16), gpuNode("g0", 1, 16, 4, true))
	s, err := scheduler.New(scheduler.Config{
		Nodes: nodes,
		Partitions: []scheduler.PartitionConfig{
			{Name: "cpu", Nodes: []string{"c0", "c1"}, Default: true},
			{Name: "gpu", Nodes: []string{"g0"}},
			{Name: "all"},
			{Name: "mix", Nodes: []string{"c0", "g0"}},
		},
		Backfill: &backfill.Config{Mode: mode, Resolution: time.Second},
	})
	require.NoError(t, err)
	return s
}

// hetTasksCluster is hetTasksNodes with a -N2 -n16 job keeping 8 CPUs of
// each CPU node busy for an hour from t0 (16 CPUs free in all): it
// returns the scheduler and when that job ends.
func hetTasksCluster(t *testing.T, mode backfill.Mode) (*scheduler.Scheduler, time.Time) {
	t.Helper()
	s := hetTasksNodes(t, mode)
	busy := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "cpu", Nodes: 2, Tasks: 16, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	jb := mustJob(t, s, busy)
	require.Equal(t, scheduler.JobRunning, jb.State)
	require.Equal(t, []int{8, 8}, cpusPerNode(jb.Alloc))
	return s, t0.Add(time.Hour)
}

// sbatch -n 32 : -N1 --gpus-per-node=4 on 16-CPU nodes: the first
// component has no -N, so Slurm gives it the fewest nodes that hold its
// 32 tasks (two whole nodes), and the components start together. With
// half of each CPU node busy until t, the job cannot start before t: its
// expected start is t (for every component), Explain says so, and at t
// the job starts with two nodes of 16 tasks for component 0.
func TestHetTasksComponentStartsWhenItsTasksFit(t *testing.T) {
	s, end := hetTasksCluster(t, backfill.EASY)
	now := t0.Add(time.Minute)
	ids, err := s.SubmitHet(now, []scheduler.JobSpec{
		{User: "u", Partition: "cpu", Tasks: 32, TimeLimit: time.Hour},
		{User: "u", Partition: "gpu", Nodes: 1, GRESPerNode: gpus(4), TimeLimit: time.Hour},
	})
	require.NoError(t, err)
	cyc := mustSchedule(t, s, now)
	assert.Empty(t, cyc.Starts, "32 tasks do not fit the 16 free CPUs")
	for _, id := range ids {
		j := mustJob(t, s, id)
		require.Equal(t, scheduler.JobPending, j.State)
		assert.Equal(t, end, j.ExpectedStart, "component %s", j.Label())
		assert.Equal(t, policy.ReasonResources, j.Reason, "component %s", j.Label())
	}
	assert.Equal(t, []string{"c0", "c1"}, mustJob(t, s, ids[0]).PlannedNodes)
	assert.Equal(t, []string{"g0"}, mustJob(t, s, ids[1]).PlannedNodes)

	ex, err := s.Explain(now, ids[0], scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.NotNil(t, ex.Estimate)
	assert.Equal(t, end, ex.Estimate.Start, "%s", ex)
	require.NotNil(t, ex.Het)
	assert.Equal(t, end, ex.Het.Start)
	require.Len(t, ex.Het.Components, 2)
	assert.Equal(t, end, ex.Het.Components[0].Alone, "alone, the tasks fit once the busy job ends")
	assert.Equal(t, now, ex.Het.Components[1].Alone, "the GPU node is free")
	assert.Equal(t, 0, ex.Het.Blocking, "the job waits for its -n 32 component")

	cyc = mustSchedule(t, s, end)
	a, okA := startOf(cyc, ids[0])
	b, okB := startOf(cyc, ids[1])
	require.True(t, okA && okB, "both start at t: %+v", cyc)
	assert.True(t, a.Backfill && b.Backfill)
	assert.Equal(t, []string{"c0", "c1"}, a.Alloc.NodeNames())
	assert.Equal(t, []int{16, 16}, cpusPerNode(a.Alloc))
	assert.Equal(t, []string{"g0"}, b.Alloc.NodeNames())
	assert.Len(t, b.Alloc.Nodes[0].Devices, 4)
}

// Under conservative backfill the job's expected start is a promise
// (Estimate.Bound): its reservation holds the two CPU nodes whole from
// t. The main pass leaves heterogeneous jobs to backfill, as Slurm's
// does; here a 48-task job in partition all (which one CPU busy on g0
// until long after t keeps from fitting) stops the main pass on these
// nodes, so a later 8-CPU job that would still run at t is backfill's
// to place: it does not take the 8 free CPUs of a CPU node now (that
// would delay the job), and the job starts at t as promised.
func TestHetTasksConservativePromiseHolds(t *testing.T) {
	s, end := hetTasksCluster(t, backfill.Conservative)
	now := t0.Add(time.Minute)
	mustSubmit(t, s, now, scheduler.JobSpec{User: "w", Partition: "gpu", Tasks: 1, TimeLimit: 3 * time.Hour})
	ids, err := s.SubmitHet(now, []scheduler.JobSpec{
		{User: "u", Partition: "cpu", Tasks: 32, TimeLimit: time.Hour},
		{User: "u", Partition: "gpu", Nodes: 1, GRESPerNode: gpus(4), TimeLimit: time.Hour},
	})
	require.NoError(t, err)
	wide := mustSubmit(t, s, now, scheduler.JobSpec{User: "v", Partition: "all", Tasks: 48, TimeLimit: time.Hour})
	late := mustSubmit(t, s, now, scheduler.JobSpec{User: "v", Partition: "cpu", Tasks: 8, TimeLimit: 2 * time.Hour})
	cyc := mustSchedule(t, s, now)
	require.Len(t, cyc.Starts, 1, "only the one-CPU job on g0: %+v", cyc.Starts)
	for _, id := range ids {
		assert.Equal(t, end, mustJob(t, s, id).ExpectedStart)
	}
	assert.Equal(t, scheduler.JobPending, mustJob(t, s, wide).State)
	assert.Equal(t, scheduler.JobPending, mustJob(t, s, late).State, "it would run into the reservation at t")

	ex, err := s.Explain(now, ids[0], scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.NotNil(t, ex.Estimate)
	assert.Equal(t, end, ex.Estimate.Start, "%s", ex)
	assert.True(t, ex.Estimate.Bound, "a reservation: a promise under exact run times: %s", ex)

	cyc = mustSchedule(t, s, end)
	a, okA := startOf(cyc, ids[0])
	_, okB := startOf(cyc, ids[1])
	require.True(t, okA && okB, "the promise holds: %+v", cyc)
	assert.Equal(t, []string{"c0", "c1"}, a.Alloc.NodeNames())
	assert.Equal(t, []int{16, 16}, cpusPerNode(a.Alloc))
	_, okL := startOf(cyc, late)
	assert.False(t, okL, "the CPU nodes are the heterogeneous job's")
}

// A component starts with the task counts the plan booked, as a plain
// job does. A higher-priority -N2 -n16 --ntasks-per-node=8 job in
// partition mix waits for 8
// CPUs of g0 (12 of its 16 busy for 30 minutes) and holds 8 CPUs of c0
// from then. The heterogeneous job's -n 20 component may start now on
// c0 and c1 only with at most 8 tasks on c0 for its hour: the plan deals
// them 8+12 (c0 has room for 7 beyond its first over the interval), and
// the start takes those counts, not the 10+10 that the CPUs free now
// would give, so the reservation at +30 minutes holds.
func TestHetTasksComponentStartsWithThePlansCounts(t *testing.T) {
	s := hetTasksNodes(t, backfill.EASY)
	g := mustSubmit(t, s, t0, scheduler.JobSpec{User: "w", Partition: "gpu", Tasks: 12, TimeLimit: 30 * time.Minute})
	mustSchedule(t, s, t0)
	require.Equal(t, scheduler.JobRunning, mustJob(t, s, g).State)
	ends := t0.Add(30 * time.Minute)

	now := t0.Add(time.Minute)
	head := mustSubmit(t, s, now, scheduler.JobSpec{User: "v", Partition: "mix", Nodes: 2, Tasks: 16, TasksPerNode: 8, TimeLimit: time.Hour})
	ids, err := s.SubmitHet(now, []scheduler.JobSpec{
		{User: "u", Partition: "cpu", Tasks: 20, TimeLimit: time.Hour},
		{User: "u", Partition: "gpu", Nodes: 1, GRESPerNode: gpus(4), TimeLimit: time.Hour},
	})
	require.NoError(t, err)
	cyc := mustSchedule(t, s, now)
	jh := mustJob(t, s, head)
	require.Equal(t, scheduler.JobPending, jh.State)
	assert.Equal(t, ends, jh.ExpectedStart)
	a, okA := startOf(cyc, ids[0])
	_, okB := startOf(cyc, ids[1])
	require.True(t, okA && okB, "the heterogeneous job starts now: %+v", cyc)
	assert.Equal(t, []string{"c0", "c1"}, a.Alloc.NodeNames())
	assert.Equal(t, []int{8, 12}, cpusPerNode(a.Alloc), "the plan's counts")

	cyc = mustSchedule(t, s, ends)
	st, ok := startOf(cyc, head)
	require.True(t, ok, "the reservation holds: %+v", cyc)
	assert.Equal(t, []int{8, 8}, cpusPerNode(st.Alloc))
}
