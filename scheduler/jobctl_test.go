package scheduler_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
)

func ptrTo[T any](v T) *T { return &v }

// jobctlCluster is n nodes of 4 CPUs and 4 GiB in one partition p, plus a
// partition q on the same nodes; with backfill when bf is set.
func jobctlCluster(t *testing.T, n int, bf bool, mutate ...func(*scheduler.Config)) *scheduler.Scheduler {
	t.Helper()
	cfg := scheduler.Config{Partitions: []scheduler.PartitionConfig{{Name: "p", Default: true}, {Name: "q"}}}
	for i := range n {
		cfg.Nodes = append(cfg.Nodes, scheduler.NodeConfig{Name: "n" + string(rune('0'+i)), CPUs: 4, MemoryMiB: 4096})
	}
	if bf {
		cfg.Backfill = &backfill.Config{}
	}
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

func mustJob(t *testing.T, s *scheduler.Scheduler, id scheduler.JobID) scheduler.Job {
	t.Helper()
	j, ok := s.Job(id)
	require.True(t, ok, "job %d", id)
	return j
}

// TestHeldJobNeverStartsNorBlocks checks Slurm's hold: the held job (first
// in the queue, needing the whole node) never starts, pends with
// JobHeldUser at priority 0, is not planned by backfill, and does not hold
// back the job behind it; Explain names the hold; Release lets it run.
func TestHeldJobNeverStartsNorBlocks(t *testing.T) {
	s := jobctlCluster(t, 1, true)
	a := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", CPUsPerTask: 4, TimeLimit: time.Hour})
	b := mustSubmit(t, s, t0.Add(time.Second), scheduler.JobSpec{User: "u", CPUsPerTask: 4, TimeLimit: time.Hour})
	require.NoError(t, s.Hold(t0.Add(2*time.Second), a, false))
	ja := mustJob(t, s, a)
	assert.Equal(t, scheduler.HoldUser, ja.Hold)
	assert.Equal(t, policy.ReasonJobHeldUser, ja.Reason)

	c := mustSchedule(t, s, t0.Add(3*time.Second))
	assert.True(t, startedIn(c, b), "the job behind a held one starts")
	assert.False(t, startedIn(c, a))
	assert.Equal(t, policy.ReasonJobHeldUser, reasonOf(c, a))
	ja = mustJob(t, s, a)
	assert.Zero(t, ja.Priority)
	assert.True(t, ja.ExpectedStart.IsZero(), "backfill does not plan a held job")

	ex, err := s.Explain(t0.Add(3*time.Second), a, scheduler.ExplainOptions{Counterfactuals: true})
	require.NoError(t, err)
	require.NotEmpty(t, ex.Blockers)
	assert.Equal(t, scheduler.BlockerHold, ex.Blockers[0].Kind)
	assert.Equal(t, policy.ReasonJobHeldUser, ex.Blockers[0].Reason)
	assert.Contains(t, ex.String(), "held by its user")
	assert.True(t, ex.Estimate.Start.IsZero())
	assert.Empty(t, ex.Counterfactuals)

	require.NoError(t, s.Finish(t0.Add(time.Minute), b, 0))
	require.NoError(t, s.Release(t0.Add(time.Minute), a))
	assert.Equal(t, scheduler.HoldNone, mustJob(t, s, a).Hold)
	c = mustSchedule(t, s, t0.Add(time.Minute))
	assert.True(t, startedIn(c, a), "released, it runs")

	// Holding a finished job, or releasing one not held, is refused.
	require.ErrorIs(t, s.Release(t0.Add(time.Minute), a), scheduler.ErrJobState)
	require.NoError(t, s.Finish(t0.Add(2*time.Minute), a, 0))
	require.ErrorIs(t, s.Hold(t0.Add(2*time.Minute), a, true), scheduler.ErrJobState)
}

// TestUserCannotReleaseAdminHold checks that, as in Slurm, only an
// administrator releases an administrator's hold, and that a user's hold
// never weakens it.
func TestUserCannotReleaseAdminHold(t *testing.T) {
	s := jobctlCluster(t, 1, false)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", TimeLimit: time.Hour})
	require.NoError(t, s.Hold(t0, id, true))
	require.NoError(t, s.Hold(t0, id, false)) // uhold of an admin-held job: still admin-held
	before := mustJob(t, s, id)
	assert.Equal(t, scheduler.HoldAdmin, before.Hold)
	assert.Equal(t, policy.ReasonJobHeldAdmin, before.Reason)
	err := s.UserRelease(t0, id)
	require.ErrorIs(t, err, scheduler.ErrHeldByAdmin)
	assert.Equal(t, before, mustJob(t, s, id), "a refused release changes nothing")
	require.NoError(t, s.Release(t0, id))

	// A user hold the user releases; sbatch --hold submits held.
	h := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", TimeLimit: time.Hour, Hold: true})
	assert.Equal(t, policy.ReasonJobHeldUser, mustJob(t, s, h).Reason)
	c := mustSchedule(t, s, t0.Add(time.Second))
	assert.False(t, startedIn(c, h))
	require.NoError(t, s.UserRelease(t0.Add(time.Second), h))
	assert.True(t, startedIn(mustSchedule(t, s, t0.Add(2*time.Second)), h))
}

// priorityCluster is jobctlCluster with multifactor priority (age and
// nice matter) recomputed every minute.
func priorityCluster(t *testing.T) *scheduler.Scheduler {
	return jobctlCluster(t, 1, false, func(c *scheduler.Config) {
		c.Priority = &scheduler.PriorityConfig{
			Engine:     priority.Config{Weights: priority.Weights{Age: 1000, JobSize: 100}, MaxAge: time.Hour},
			CalcPeriod: time.Minute,
		}
	})
}

// TestHoldZeroesMultifactorPriority checks that a held job's priority is
// 0 through recalculations (Slurm's hold sets priority 0 and does not
// recompute it), and that Release gives the computed priority back.
func TestHoldZeroesMultifactorPriority(t *testing.T) {
	s := priorityCluster(t)
	hog := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", CPUsPerTask: 4, TimeLimit: 10 * time.Hour})
	mustSchedule(t, s, t0)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", CPUsPerTask: 4, TimeLimit: time.Hour})
	mustSchedule(t, s, t0.Add(10*time.Minute))
	p := mustJob(t, s, id).Priority
	require.Positive(t, p)
	require.NoError(t, s.Hold(t0.Add(10*time.Minute), id, false))
	c := mustSchedule(t, s, t0.Add(30*time.Minute))
	assert.Zero(t, mustJob(t, s, id).Priority)
	for _, pj := range c.Pending {
		if pj.Job == id {
			assert.Zero(t, pj.Priority)
		}
	}
	require.NoError(t, s.Release(t0.Add(30*time.Minute), id))
	assert.GreaterOrEqual(t, mustJob(t, s, id).Priority, p, "the computed priority is back (older: higher)")
	_ = hog
}

// TestUpdatePendingJobKeepsIdentityAndReorders checks scontrol update of
// a pending job: nice moves it in the queue, the job keeps its ID and
// submit time; a fixed priority puts it first and a reset takes it back;
// priority 0 holds it as an administrator.
func TestUpdatePendingJobKeepsIdentityAndReorders(t *testing.T) {
	s := priorityCluster(t)
	mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", CPUsPerTask: 4, TimeLimit: 10 * time.Hour})
	a := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", TimeLimit: time.Hour})
	b := mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{User: "u", TimeLimit: time.Hour})
	order := func(at time.Time) []scheduler.JobID {
		var out []scheduler.JobID
		for _, p := range mustSchedule(t, s, at).Pending {
			out = append(out, p.Job)
		}
		return out
	}
	require.Equal(t, []scheduler.JobID{a, b}, order(t0.Add(2*time.Minute)))

	before := mustJob(t, s, a)
	require.NoError(t, s.UpdateJob(t0.Add(3*time.Minute), a, scheduler.JobUpdate{Nice: ptrTo(100000), TimeLimit: ptrTo(2 * time.Hour)}))
	after := mustJob(t, s, a)
	assert.Equal(t, before.ID, after.ID)
	assert.Equal(t, before.SubmitTime, after.SubmitTime)
	assert.Equal(t, 100000, after.Spec.Nice)
	assert.Equal(t, 2*time.Hour, after.TimeLimit)
	assert.Less(t, after.Priority, before.Priority, "nice lowers the priority at once")
	assert.Equal(t, []scheduler.JobID{b, a}, order(t0.Add(4*time.Minute)))

	require.NoError(t, s.UpdateJob(t0.Add(5*time.Minute), a, scheduler.JobUpdate{Priority: ptrTo[uint32](1 << 30)}))
	assert.Equal(t, uint32(1<<30), mustJob(t, s, a).AdminPriority)
	assert.Equal(t, []scheduler.JobID{a, b}, order(t0.Add(6*time.Minute)), "a fixed priority survives recalculation")
	require.NoError(t, s.UpdateJob(t0.Add(7*time.Minute), a, scheduler.JobUpdate{ResetPriority: true}))
	assert.Equal(t, []scheduler.JobID{b, a}, order(t0.Add(8*time.Minute)))

	require.NoError(t, s.UpdateJob(t0.Add(9*time.Minute), b, scheduler.JobUpdate{Priority: ptrTo[uint32](0)}))
	assert.Equal(t, scheduler.HoldAdmin, mustJob(t, s, b).Hold, "priority=0 holds, as in Slurm")
}

// TestUpdatePendingJobIsValidatedAsSubmit checks that an update is
// validated as Submit validates a spec, all or nothing.
func TestUpdatePendingJobIsValidatedAsSubmit(t *testing.T) {
	s := jobctlCluster(t, 1, false, func(c *scheduler.Config) {
		c.Partitions = append(c.Partitions, scheduler.PartitionConfig{Name: "closed", State: scheduler.PartitionDrain})
	})
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", TimeLimit: time.Hour})
	before := mustJob(t, s, id)
	for _, u := range []scheduler.JobUpdate{
		{Partition: ptrTo("nope"), Nice: ptrTo(5)},
		{Partition: ptrTo("closed")},
		{TimeLimit: ptrTo(time.Millisecond)},
		{TimeMin: ptrTo(2 * time.Hour)},
		{Nice: ptrTo(1 << 40)},
		{Dependency: ptrTo("afterok:999")},
		{Dependency: ptrTo("afterok:1")}, // itself
		{Priority: ptrTo[uint32](3), ResetPriority: true},
		{},
	} {
		err := s.UpdateJob(t0, id, u)
		require.ErrorIs(t, err, scheduler.ErrInvalidJob, "%+v", u)
		assert.Equal(t, before, mustJob(t, s, id), "a refused update changes nothing")
	}
	require.NoError(t, s.UpdateJob(t0, id, scheduler.JobUpdate{Partition: ptrTo("q")}))
	assert.Equal(t, "q", mustJob(t, s, id).Partition)

	// Begin time: the job waits for it again.
	require.NoError(t, s.UpdateJob(t0, id, scheduler.JobUpdate{BeginTime: ptrTo(t0.Add(time.Hour))}))
	c := mustSchedule(t, s, t0.Add(time.Minute))
	assert.Equal(t, policy.ReasonBeginTime, reasonOf(c, id))
	assert.True(t, startedIn(mustSchedule(t, s, t0.Add(time.Hour)), id))
	// Only its time limit changes once it runs.
	require.ErrorIs(t, s.UpdateJob(t0.Add(time.Hour), id, scheduler.JobUpdate{Nice: ptrTo(1)}), scheduler.ErrJobState)
}

// TestUpdatePendingJobNotCountedTwiceAgainstSubmitLimit checks that the
// job being updated does not count against MaxSubmitJobs beside itself.
func TestUpdatePendingJobNotCountedTwiceAgainstSubmitLimit(t *testing.T) {
	s := jobctlCluster(t, 1, false, func(c *scheduler.Config) {
		c.Policy = &policy.Config{
			QOS:    []policy.QOS{{Name: "normal", Limits: policy.QOSLimits{MaxSubmitJobsPerUser: ptrTo(2)}}},
			Assocs: []policy.Assoc{{Account: "a"}, {Account: "a", User: "u"}},
		}
	})
	mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", Account: "a", TimeLimit: time.Hour})
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", Account: "a", TimeLimit: time.Hour})
	_, err := s.Submit(t0, scheduler.JobSpec{User: "u", Account: "a", TimeLimit: time.Hour})
	require.ErrorIs(t, err, scheduler.ErrInvalidJob, "the limit holds")
	require.NoError(t, s.UpdateJob(t0, id, scheduler.JobUpdate{TimeLimit: ptrTo(2 * time.Hour)}))
	_, err = s.Submit(t0, scheduler.JobSpec{User: "u", Account: "a", TimeLimit: time.Hour})
	require.ErrorIs(t, err, scheduler.ErrInvalidJob, "the updated job is still counted once")
}

// TestUpdateRunningTimeLimitMovesEnd checks scontrol update TimeLimit of
// a running job: a raised limit moves its end (and the backfill plan's
// expected start of the job waiting for it), a limit below its run time
// ends it as TIMEOUT at the next cycle.
func TestUpdateRunningTimeLimitMovesEnd(t *testing.T) {
	s := jobctlCluster(t, 1, true)
	run := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", CPUsPerTask: 4, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	wait := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", CPUsPerTask: 4, TimeLimit: time.Hour})
	mustSchedule(t, s, t0.Add(time.Minute))
	assert.Equal(t, t0.Add(time.Hour), mustJob(t, s, wait).ExpectedStart)

	require.NoError(t, s.UpdateJob(t0.Add(30*time.Minute), run, scheduler.JobUpdate{TimeLimit: ptrTo(2 * time.Hour)}))
	assert.Equal(t, 2*time.Hour, mustJob(t, s, run).TimeLimit)
	c := mustSchedule(t, s, t0.Add(90*time.Minute))
	assert.Empty(t, c.Ended, "the raised limit holds")
	assert.Equal(t, t0.Add(2*time.Hour), mustJob(t, s, wait).ExpectedStart, "the plan learnt the new end")

	require.NoError(t, s.UpdateJob(t0.Add(100*time.Minute), run, scheduler.JobUpdate{TimeLimit: ptrTo(10 * time.Minute)}))
	c = mustSchedule(t, s, t0.Add(101*time.Minute))
	require.Len(t, c.Ended, 1)
	assert.Equal(t, scheduler.Ended{Job: run, State: scheduler.JobTimeout, Reason: policy.ReasonTimeLimit}, c.Ended[0])
	assert.Equal(t, t0.Add(100*time.Minute), mustJob(t, s, run).EndTime, "ended when the limit fell below its run time")
	assert.True(t, startedIn(c, wait))
}

// TestAdminSuspendKeepsAllocationAndStopsClock checks scontrol suspend
// and resume: the suspended job keeps its resources (nothing starts on
// them), no cycle resumes it, its suspended time does not count against
// its limit.
func TestAdminSuspendKeepsAllocationAndStopsClock(t *testing.T) {
	s := jobctlCluster(t, 1, true)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", CPUsPerTask: 4, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	alloc := mustJob(t, s, id).Alloc
	require.NoError(t, s.SuspendJob(t0.Add(10*time.Minute), id))
	j := mustJob(t, s, id)
	assert.Equal(t, scheduler.JobSuspended, j.State)
	assert.True(t, j.AdminSuspended)
	assert.Equal(t, alloc, j.Alloc, "its whole allocation, CPUs included, stays")
	other := mustSubmit(t, s, t0.Add(10*time.Minute), scheduler.JobSpec{User: "u", TimeLimit: time.Hour})
	c := mustSchedule(t, s, t0.Add(2*time.Hour))
	assert.Empty(t, c.Resumed, "a cycle never resumes an admin-suspended job")
	assert.Empty(t, c.Ended)
	assert.False(t, startedIn(c, other), "nothing starts on its CPUs")
	assert.True(t, mustJob(t, s, other).ExpectedStart.IsZero(), "held until resumed: no end to plan with")
	require.ErrorIs(t, s.SuspendJob(t0.Add(2*time.Hour), id), scheduler.ErrJobState)

	require.NoError(t, s.ResumeJob(t0.Add(3*time.Hour), id))
	assert.Equal(t, scheduler.JobRunning, mustJob(t, s, id).State)
	require.ErrorIs(t, s.ResumeJob(t0.Add(3*time.Hour), id), scheduler.ErrJobState)
	c = mustSchedule(t, s, t0.Add(3*time.Hour+49*time.Minute))
	assert.Empty(t, c.Ended, "50 minutes were left when it was suspended")
	c = mustSchedule(t, s, t0.Add(3*time.Hour+50*time.Minute))
	require.Len(t, c.Ended, 1)
	assert.Equal(t, scheduler.JobTimeout, c.Ended[0].State)
}

// TestDependencyOnSuspendedJobWaits checks that a suspended job has not
// ended for its dependents (afterany waits for it).
func TestDependencyOnSuspendedJobWaits(t *testing.T) {
	s := jobctlCluster(t, 2, false)
	a := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	require.NoError(t, s.SuspendJob(t0, a))
	b := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", TimeLimit: time.Hour, Dependency: "afterany:1"})
	c := mustSchedule(t, s, t0.Add(time.Minute))
	assert.Equal(t, policy.ReasonDependency, reasonOf(c, b))
}

// TestRequeueJobAsScontrol checks scontrol requeue and requeuehold: a
// finished job (completed, failed, timed out) is queued again with its
// restart counted, a cancelled or --no-requeue job is not, a suspended
// job comes back held, requeuehold holds.
func TestRequeueJobAsScontrol(t *testing.T) {
	s := jobctlCluster(t, 2, false, func(c *scheduler.Config) { c.MinJobAge = time.Minute })
	done := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", TimeLimit: time.Hour})
	failed := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	require.NoError(t, s.Finish(t0.Add(time.Minute), done, 0))
	require.NoError(t, s.Finish(t0.Add(time.Minute), failed, 3))
	require.NoError(t, s.RequeueJob(t0.Add(2*time.Minute), done, false))
	require.NoError(t, s.RequeueJob(t0.Add(2*time.Minute), failed, true))
	j := mustJob(t, s, done)
	assert.Equal(t, scheduler.JobPending, j.State)
	assert.Equal(t, 1, j.Restarts)
	assert.True(t, j.EndTime.IsZero())
	assert.Equal(t, policy.ReasonJobHeldUser, mustJob(t, s, failed).Reason, "requeuehold")
	// Long past MinJobAge: queued again, it is not forgotten.
	c := mustSchedule(t, s, t0.Add(time.Hour))
	assert.True(t, startedIn(c, done))
	_, ok := s.Job(failed)
	assert.True(t, ok)
	require.ErrorIs(t, s.RequeueJob(t0.Add(time.Hour), failed, false), scheduler.ErrJobState, "pending")

	cancelled := mustSubmit(t, s, t0.Add(time.Hour), scheduler.JobSpec{User: "u", TimeLimit: time.Hour})
	require.NoError(t, s.Cancel(t0.Add(time.Hour), cancelled))
	require.ErrorIs(t, s.RequeueJob(t0.Add(time.Hour), cancelled, false), scheduler.ErrJobState)
	norq := mustSubmit(t, s, t0.Add(time.Hour), scheduler.JobSpec{User: "u", TimeLimit: time.Hour, Requeue: scheduler.RequeueNo})
	require.ErrorIs(t, s.RequeueJob(t0.Add(time.Hour), norq, false), scheduler.ErrJobState)

	// A suspended job requeued is held; its resources are free.
	require.NoError(t, s.SuspendJob(t0.Add(time.Hour), done))
	require.NoError(t, s.RequeueJob(t0.Add(time.Hour), done, false))
	j = mustJob(t, s, done)
	assert.Equal(t, scheduler.JobPending, j.State)
	assert.False(t, j.AdminSuspended)
	assert.Equal(t, scheduler.HoldUser, j.Hold)
	assert.Equal(t, 2, j.Restarts)
	for _, n := range s.Nodes() {
		assert.Empty(t, n.Jobs)
	}
}

// TestLaunchFailureRequeueExcludesNode checks that a launch failure
// reported with the node it failed on keeps the job off that node.
func TestLaunchFailureRequeueExcludesNode(t *testing.T) {
	s := jobctlCluster(t, 2, true)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", CPUsPerTask: 4, TimeLimit: time.Hour})
	c := mustSchedule(t, s, t0)
	require.True(t, startedIn(c, id))
	require.Equal(t, []string{"n0"}, c.Starts[0].Alloc.NodeNames())

	require.ErrorIs(t, s.RequeueExcluding(t0, id, "n0", "n1"), scheduler.ErrUnsatisfiable, "no node would be left")
	require.ErrorIs(t, s.RequeueExcluding(t0, id, "nope"), scheduler.ErrUnknownNode)
	assert.Equal(t, scheduler.JobRunning, mustJob(t, s, id).State, "refused: still running")

	require.NoError(t, s.RequeueExcluding(t0.Add(time.Second), id, "n0"))
	j := mustJob(t, s, id)
	assert.Equal(t, policy.ReasonLaunchFailRequeue, j.Reason)
	assert.Equal(t, []string{"n0"}, j.Spec.Exclude)
	assert.Equal(t, 1, j.Restarts)
	c = mustSchedule(t, s, t0.Add(2*time.Second))
	require.True(t, startedIn(c, id))
	assert.Equal(t, []string{"n1"}, c.Starts[0].Alloc.NodeNames())

	// sbatch --exclude: the plan keeps the job off the node too.
	x := mustSubmit(t, s, t0.Add(2*time.Second), scheduler.JobSpec{User: "u", CPUsPerTask: 4, TimeLimit: time.Hour, Exclude: []string{"n0"}})
	c = mustSchedule(t, s, t0.Add(3*time.Second))
	assert.False(t, startedIn(c, x), "n0 is free, but excluded")
	assert.Equal(t, []string{"n1"}, mustJob(t, s, x).PlannedNodes)
	_, err := s.Submit(t0.Add(3*time.Second), scheduler.JobSpec{User: "u", TimeLimit: time.Hour, Exclude: []string{"n0", "n1"}})
	require.ErrorIs(t, err, scheduler.ErrUnsatisfiable)
	_, err = s.Submit(t0.Add(3*time.Second), scheduler.JobSpec{User: "u", TimeLimit: time.Hour, Exclude: []string{"n9"}})
	require.ErrorIs(t, err, scheduler.ErrUnknownNode)
}

// TestJobControlEventsJSON checks that every job-control event survives
// an Entry's JSON round trip, and that a requeue written before
// ExcludeNodes existed still decodes.
func TestJobControlEventsJSON(t *testing.T) {
	at := t0.Add(time.Second)
	for _, ev := range []scheduler.Event{
		scheduler.HoldEvent{Job: 3, Admin: true},
		scheduler.HoldEvent{Job: 3},
		scheduler.ReleaseEvent{Job: 4, Admin: true},
		scheduler.UpdateJobEvent{Job: 5, JobUpdate: scheduler.JobUpdate{TimeLimit: ptrTo(time.Hour), Nice: ptrTo(-5),
			Partition: ptrTo("q"), QOS: ptrTo(""), Account: ptrTo("a"), Dependency: ptrTo("afterok:1"),
			BeginTime: ptrTo(t0.Add(time.Hour)), Priority: ptrTo[uint32](7), TimeMin: ptrTo(time.Minute)}},
		scheduler.UpdateJobEvent{Job: 5, JobUpdate: scheduler.JobUpdate{ResetPriority: true}},
		scheduler.SuspendJobEvent{Job: 6},
		scheduler.ResumeJobEvent{Job: 6},
		scheduler.RequeueJobEvent{Job: 7, Hold: true},
		scheduler.RequeueEvent{Job: 8, ExcludeNodes: []string{"n0"}},
		scheduler.SubmitEvent{Spec: scheduler.JobSpec{User: "u", Hold: true, Exclude: []string{"n1"}}},
	} {
		b, err := json.Marshal(scheduler.Entry{At: at, Event: ev})
		require.NoError(t, err)
		var e scheduler.Entry
		require.NoError(t, json.Unmarshal(b, &e), "%s", b)
		assert.Equal(t, ev, e.Event, "%s", b)
		assert.True(t, at.Equal(e.At))
	}
	var e scheduler.Entry
	require.NoError(t, json.Unmarshal([]byte(`{"at":"2026-12-01T10:00:00Z","kind":"requeue","event":{"Job":7}}`), &e))
	assert.Equal(t, scheduler.RequeueEvent{Job: 7}, e.Event)
	b, err := json.Marshal(scheduler.UpdateJobEvent{Job: 5, JobUpdate: scheduler.JobUpdate{Nice: ptrTo(1)}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"Job":5,"Nice":1}`, string(b), "only the fields set")
	j, err := json.Marshal(scheduler.Job{Hold: scheduler.HoldAdmin})
	require.NoError(t, err)
	assert.Contains(t, string(j), `"Hold":"admin"`)
}

// TestRequeueDelayAsSlurm checks Config.RequeueDelay: a requeued job
// (launch failure, node failure, scontrol requeue of a finished job) pends
// with BeginTime until the delay has passed, as Slurm delays a requeued
// job by the credential lifetime; without it the job may start at once.
func TestRequeueDelayAsSlurm(t *testing.T) {
	for _, delay := range []time.Duration{0, scheduler.DefaultRequeueDelay} {
		s := jobctlCluster(t, 1, false, func(c *scheduler.Config) { c.RequeueDelay = delay })
		launch := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", TimeLimit: time.Hour})
		down := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", TimeLimit: time.Hour})
		done := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", TimeLimit: time.Hour})
		mustSchedule(t, s, t0)
		require.NoError(t, s.Finish(t0.Add(time.Minute), done, 0))
		at := t0.Add(2 * time.Minute)
		require.NoError(t, s.Requeue(at, launch))
		require.NoError(t, s.RequeueJob(at, done, false))
		_, err := s.DownNode(at, "n0", "gone")
		require.NoError(t, err)
		require.NoError(t, s.ResumeNode(at, "n0"))
		c := mustSchedule(t, s, at.Add(time.Second))
		for _, id := range []scheduler.JobID{launch, down, done} {
			if delay == 0 {
				assert.True(t, startedIn(c, id), "job %d: no delay", id)
				continue
			}
			assert.Equal(t, policy.ReasonBeginTime, reasonOf(c, id), "job %d", id)
			assert.Equal(t, at.Add(delay), mustJob(t, s, id).Spec.BeginTime)
		}
		if delay > 0 {
			c = mustSchedule(t, s, at.Add(delay))
			assert.Len(t, c.Starts, 3, "the delay passed")
		}
	}
	_, err := scheduler.New(scheduler.Config{Nodes: []scheduler.NodeConfig{{Name: "n0", CPUs: 1}},
		Partitions: []scheduler.PartitionConfig{{Name: "p"}}, RequeueDelay: -time.Second})
	require.ErrorIs(t, err, scheduler.ErrInvalidConfig)
}

// newSuspendDGX is a DGX whose QOS urgent preempts standby in SUSPEND
// mode.
func newSuspendDGX(t *testing.T) *scheduler.Scheduler {
	t.Helper()
	cfg := clustertest.DGX()
	cfg.Policy = &policy.Config{PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptSuspend,
		QOS: []policy.QOS{{Name: "urgent", Preempt: []string{"standby"}}, {Name: "standby"}}}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

// TestPreemptionLeavesAdminSuspendedJobAlone checks that the two kinds of
// suspension stay apart: an admin-suspended job is never a preemption
// victim and never resumed by a cycle, and ResumeJob does not resume a
// job suspended by preemption.
func TestPreemptionLeavesAdminSuspendedJobAlone(t *testing.T) {
	s := newSuspendDGX(t)
	admin := mustSubmit(t, s, t0, scheduler.JobSpec{QOS: "standby", GRESPerNode: gpus(4), CPUsPerTask: 50, TimeLimit: 4 * time.Hour})
	other := mustSubmit(t, s, t0, scheduler.JobSpec{QOS: "standby", CPUsPerTask: 60, TimeLimit: 4 * time.Hour})
	mustSchedule(t, s, t0)
	require.NoError(t, s.SuspendJob(t0.Add(time.Minute), admin))
	urgent := mustSubmit(t, s, t0.Add(time.Hour), scheduler.JobSpec{QOS: "urgent", GRESPerNode: gpus(4), CPUsPerTask: 50, TimeLimit: time.Hour})
	c := mustSchedule(t, s, t0.Add(time.Hour))
	require.Len(t, c.Preemptions, 1)
	assert.Equal(t, other, c.Preemptions[0].Victim, "the admin-suspended job is no victim")
	assert.True(t, startedIn(c, urgent))
	require.ErrorIs(t, s.ResumeJob(t0.Add(time.Hour), other), scheduler.ErrJobState, "preemption's suspension is not ResumeJob's")

	require.NoError(t, s.Finish(t0.Add(2*time.Hour), urgent, 0))
	c = mustSchedule(t, s, t0.Add(2*time.Hour))
	assert.Equal(t, []scheduler.JobID{other}, c.Resumed, "the cycle resumes only what preemption suspended")
	j := mustJob(t, s, admin)
	assert.Equal(t, scheduler.JobSuspended, j.State)
	assert.True(t, j.AdminSuspended)
	require.NoError(t, s.ResumeJob(t0.Add(2*time.Hour), admin))
}
