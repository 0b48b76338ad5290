package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// arrayDepCluster is four 8-CPU nodes with room for an array and its
// dependants at once; it submits a 3-task array ("0-2" plus throttle)
// and starts what fits.
func arrayDepCluster(t *testing.T, array string) (*scheduler.Scheduler, []scheduler.JobID) {
	t.Helper()
	cfg := scheduler.Config{}
	cfg.Nodes = cpuNodes(4)
	cfg.Partitions = []scheduler.PartitionConfig{{Name: "batch", Default: true}}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	ids, err := s.SubmitArray(t0, scheduler.JobSpec{TimeLimit: time.Hour}, array)
	require.NoError(t, err)
	require.Len(t, ids, 3)
	return s, ids
}

func dependant(t *testing.T, s *scheduler.Scheduler, at time.Time, dep string) scheduler.JobID {
	t.Helper()
	return mustSubmit(t, s, at, scheduler.JobSpec{TimeLimit: time.Hour, Dependency: dep})
}

// pendingReason returns job id's reason after cycle c, or ReasonNone when
// it started in c.
func pendingReason(t *testing.T, c scheduler.Cycle, id scheduler.JobID) policy.Reason {
	t.Helper()
	if startedIn(c, id) {
		return policy.ReasonNone
	}
	r := reasonOf(c, id)
	require.NotEqual(t, policy.ReasonNone, r, "job %d neither started nor pending", id)
	return r
}

// TestDependencyOnArrayWaitsForEveryTask checks Slurm's rule for a
// dependency on a job array's ID: it is about every task (afterok: all
// succeeded; afterany: all ended; afternotok: all ended, one failed), and
// "id_N" names task N alone.
func TestDependencyOnArrayWaitsForEveryTask(t *testing.T) {
	s, task := arrayDepCluster(t, "0-2")
	mustSchedule(t, s, t0) // all three tasks run
	a := task[0]           // the array's ID is its first task's
	t1 := t0.Add(time.Minute)
	ok := dependant(t, s, t1, fmt.Sprintf("afterok:%d", a))
	anyEnd := dependant(t, s, t1, fmt.Sprintf("afterany:%d", a))
	notOK := dependant(t, s, t1, fmt.Sprintf("afternotok:%d", a))
	first := dependant(t, s, t1, fmt.Sprintf("afterok:%d_0", a))
	require.NoError(t, s.Finish(t1, task[0], 0))
	c := mustSchedule(t, s, t1)
	assert.Equal(t, policy.ReasonDependency, pendingReason(t, c, ok), "tasks 1 and 2 still run")
	assert.Equal(t, policy.ReasonDependency, pendingReason(t, c, anyEnd))
	assert.Equal(t, policy.ReasonDependency, pendingReason(t, c, notOK))
	assert.Equal(t, policy.ReasonNone, pendingReason(t, c, first), "id_0 names task 0 alone")

	// Task 1 fails: afterok waits for task 2 still, as Slurm decides on the whole array.
	t2 := t1.Add(time.Minute)
	require.NoError(t, s.Finish(t2, task[1], 1))
	c = mustSchedule(t, s, t2)
	assert.Equal(t, policy.ReasonDependency, pendingReason(t, c, ok))
	assert.Equal(t, policy.ReasonDependency, pendingReason(t, c, notOK))

	t3 := t2.Add(time.Minute)
	require.NoError(t, s.Finish(t3, task[2], 0))
	c = mustSchedule(t, s, t3)
	assert.Equal(t, policy.ReasonDependencyNeverSatisfied, pendingReason(t, c, ok), "exit codes [0 1 0]: not all succeeded")
	assert.Equal(t, policy.ReasonNone, pendingReason(t, c, anyEnd))
	assert.Equal(t, policy.ReasonNone, pendingReason(t, c, notOK), "one task failed")
}

// TestDependencyOnArrayAllSucceeded checks the other outcome: every task
// exits 0, so afterok on the array is satisfied and afternotok never is,
// while a dependency on one failed task decides on that task.
func TestDependencyOnArrayAllSucceeded(t *testing.T) {
	s, task := arrayDepCluster(t, "0-2")
	mustSchedule(t, s, t0)
	a := task[0]
	t1 := t0.Add(time.Minute)
	ok := dependant(t, s, t1, fmt.Sprintf("afterok:%d", a))
	notOK := dependant(t, s, t1, fmt.Sprintf("afternotok:%d", a))
	require.NoError(t, s.Finish(t1, task[0], 0))
	c := mustSchedule(t, s, t1)
	assert.Equal(t, policy.ReasonDependency, pendingReason(t, c, notOK), "task 0 succeeded, but tasks 1 and 2 may still fail")
	t2 := t1.Add(time.Minute)
	require.NoError(t, s.Finish(t2, task[1], 0))
	require.NoError(t, s.Finish(t2, task[2], 0))
	c = mustSchedule(t, s, t2)
	assert.Equal(t, policy.ReasonNone, pendingReason(t, c, ok))
	assert.Equal(t, policy.ReasonDependencyNeverSatisfied, pendingReason(t, c, notOK))

	_, err := s.Submit(t2, scheduler.JobSpec{Dependency: fmt.Sprintf("afterok:%d_7", a)})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob, "the array has no task 7")
}

// TestDependencyAfterArrayWaitsForEveryTaskToStart checks "after" on an
// array: satisfied once no task is pending (all started or ended).
func TestDependencyAfterArrayWaitsForEveryTaskToStart(t *testing.T) {
	s, task := arrayDepCluster(t, "0-2%1")
	after := dependant(t, s, t0, fmt.Sprintf("after:%d", task[0]))
	c := mustSchedule(t, s, t0) // the throttle lets task 0 run alone
	require.True(t, startedIn(c, task[0]))
	assert.Equal(t, policy.ReasonDependency, pendingReason(t, c, after), "tasks 1 and 2 have not started")
	t1 := t0.Add(time.Minute)
	require.NoError(t, s.Finish(t1, task[0], 0))
	mustSchedule(t, s, t1) // task 1 starts
	t2 := t1.Add(time.Minute)
	require.NoError(t, s.Finish(t2, task[1], 1))
	c = mustSchedule(t, s, t2) // task 2 starts, and with it the dependant
	require.True(t, startedIn(c, task[2]))
	j, found := s.Job(after)
	require.True(t, found)
	assert.Equal(t, scheduler.JobRunning, j.State, "every task has started")
}

// TestDependencyOnPurgedArrayKeepsEveryTask checks that a dependency on
// an array whose tasks were forgotten (MinJobAge) still reads every
// task's outcome.
func TestDependencyOnPurgedArrayKeepsEveryTask(t *testing.T) {
	cfg := scheduler.Config{Nodes: cpuNodes(4), Partitions: []scheduler.PartitionConfig{{Name: "batch", Default: true}}, MinJobAge: time.Minute}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	task, err := s.SubmitArray(t0, scheduler.JobSpec{TimeLimit: time.Hour}, "0-2")
	require.NoError(t, err)
	mustSchedule(t, s, t0)
	t1 := t0.Add(time.Minute)
	for k, id := range task {
		require.NoError(t, s.Finish(t1, id, min(k, 1))) // exit codes 0, 1, 1
	}
	mustSchedule(t, s, t1.Add(time.Hour))
	mustSchedule(t, s, t1.Add(time.Hour+time.Second))
	_, found := s.Job(task[2])
	require.False(t, found, "the tasks are purged")
	at := t1.Add(2 * time.Hour)
	ok := dependant(t, s, at, fmt.Sprintf("afterok:%d", task[0]))
	notOK := dependant(t, s, at, fmt.Sprintf("afternotok:%d", task[0]))
	first := dependant(t, s, at, fmt.Sprintf("afterok:%d_0", task[0]))
	c := mustSchedule(t, s, at)
	assert.Equal(t, policy.ReasonDependencyNeverSatisfied, pendingReason(t, c, ok))
	assert.Equal(t, policy.ReasonNone, pendingReason(t, c, notOK))
	assert.Equal(t, policy.ReasonNone, pendingReason(t, c, first))
}
