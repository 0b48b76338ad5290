package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/telemetry"
)

// idleCluster starts one 8-GPU job (spec's other fields as given) on a
// Mixed4 cluster with telemetry configuration tc, and returns the
// scheduler, the job and its node.
func idleCluster(t *testing.T, tc scheduler.TelemetryConfig, spec scheduler.JobSpec) (*scheduler.Scheduler, scheduler.JobID, string) {
	t.Helper()
	cfg := clustertest.Mixed4()
	cfg.Telemetry = tc
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	spec.Partition, spec.TimeLimit = "h100", time.Hour
	spec.GRESPerNode = []gres.Request{{Name: "gpu", Count: 8}}
	id := mustSubmit(t, s, clustertest.Epoch, spec)
	mustSchedule(t, s, clustertest.Epoch)
	j, _ := s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)
	return s, id, j.Alloc.Nodes[0].Name
}

// read applies one reading of all 8 devices at util, at offset at from
// the epoch, returning the jobs the idle action took.
func read(t *testing.T, s *scheduler.Scheduler, node string, at time.Duration, util float64) []scheduler.JobID {
	t.Helper()
	u := make([]float64, 8)
	for i := range u {
		u[i] = util
	}
	r, err := s.Apply(clustertest.Epoch.Add(at), scheduler.TelemetryEvent{Node: node, Devices: devSamples(u, -1)})
	require.NoError(t, err)
	return r.Jobs
}

// idleDecisions returns the DecisionIdle records the next cycle reports.
func idleDecisions(t *testing.T, s *scheduler.Scheduler, at time.Duration) []scheduler.Decision {
	t.Helper()
	cyc, err := s.Schedule(clustertest.Epoch.Add(at))
	require.NoError(t, err)
	var out []scheduler.Decision
	for _, d := range cyc.Decisions {
		if d.Kind == scheduler.DecisionIdle {
			out = append(out, d)
		}
	}
	return out
}

var actionRule = telemetry.Rule{IdleBelow: 5, IdleAfter: time.Minute}

func TestTelemetryIdleNotifiesOnlyByDefault(t *testing.T) {
	s, id, node := idleCluster(t, scheduler.TelemetryConfig{Rule: actionRule}, scheduler.JobSpec{})
	for k := 1; k <= 20; k++ { // ten minutes of idle readings
		assert.Empty(t, read(t, s, node, time.Duration(30*k)*time.Second, 1))
	}
	j, _ := s.Job(id)
	assert.Equal(t, scheduler.JobRunning, j.State, "notify only: the job keeps its GPUs")
	ds := idleDecisions(t, s, 11*time.Minute)
	require.Len(t, ds, 1, "one record per idle spell")
	d := ds[0]
	assert.Equal(t, id, d.Job)
	assert.Equal(t, clustertest.Epoch.Add(time.Minute), d.Time, "recorded when the rule's IdleAfter was reached")
	assert.Equal(t, time.Minute, d.IdleFor)
	assert.InDelta(t, 1, d.Utilization, 1e-9)
	assert.Equal(t, policy.ActionNone, d.Action)
	assert.Equal(t, policy.ReasonAllocatedIdle, d.Reason)
	require.Len(t, d.GPUs, 1)
	assert.Len(t, d.GPUs[0].Indices, 8, "the GPUs it holds idle")

	// A busy reading ends the spell; the next one is recorded again.
	read(t, s, node, 11*time.Minute, 80)
	for k := 1; k <= 3; k++ {
		read(t, s, node, 11*time.Minute+time.Duration(30*k)*time.Second, 0)
	}
	assert.Len(t, idleDecisions(t, s, 13*time.Minute), 1)

	ad, err := d.Accounting("c")
	require.NoError(t, err)
	back, err := scheduler.DecisionFromAccounting(ad)
	require.NoError(t, err)
	assert.Equal(t, scheduler.DecisionIdle, back.Kind)
	assert.Equal(t, d.IdleFor, back.IdleFor)
	assert.InDelta(t, d.Utilization, back.Utilization, 1e-12)
	assert.Equal(t, policy.ReasonAllocatedIdle, back.Reason)
}

func TestTelemetryIdleRequeuesAfterGrace(t *testing.T) {
	tc := scheduler.TelemetryConfig{Rule: actionRule, Action: scheduler.IdleRequeue, Grace: 2 * time.Minute}
	s, id, node := idleCluster(t, tc, scheduler.JobSpec{})
	require.NoError(t, s.Checkpoint(clustertest.Epoch.Add(30*time.Second), id))
	for k := 1; k <= 5; k++ { // idle for 2.5 min: within IdleAfter + Grace
		assert.Empty(t, read(t, s, node, time.Duration(30*k)*time.Second, 2), "reading %d", k)
	}
	got := read(t, s, node, 3*time.Minute, 2)
	assert.Equal(t, []scheduler.JobID{id}, got, "listed for the caller to kill")
	j, _ := s.Job(id)
	assert.Equal(t, scheduler.JobPending, j.State)
	assert.Equal(t, policy.ReasonAllocatedIdle, j.Reason)
	assert.Equal(t, 1, j.Restarts)
	assert.Equal(t, 1, j.Starts)
	assert.Zero(t, j.LaunchFailures)
	assert.InDelta(t, 8*150.0, j.LostWorkGPUSeconds, 1e-9, "8 GPUs since the checkpoint at 0:30")
	assert.Zero(t, j.LostGPUSeconds, "not a preemption")
	require.NotNil(t, j.Usage, "the run's usage stays with the job")
	assert.Equal(t, int64(6), j.Usage.Samples)

	cyc, err := s.Schedule(clustertest.Epoch.Add(4 * time.Minute))
	require.NoError(t, err)
	var kinds []scheduler.DecisionKind
	for _, d := range cyc.Decisions {
		if d.Job == id {
			kinds = append(kinds, d.Kind)
			if d.Kind == scheduler.DecisionIdle && d.Action == policy.ActionRequeue {
				assert.Equal(t, 3*time.Minute, d.IdleFor)
			}
		}
	}
	assert.Equal(t, []scheduler.DecisionKind{scheduler.DecisionIdle, scheduler.DecisionIdle, scheduler.DecisionRequeue, scheduler.DecisionStart}, kinds,
		"reported, acted on, requeued, started again")
	j, _ = s.Job(id)
	assert.Equal(t, 2, j.Starts)
}

func TestTelemetryIdleCancelsAfterGrace(t *testing.T) {
	tc := scheduler.TelemetryConfig{Rule: actionRule, Action: scheduler.IdleCancel, Grace: time.Minute}
	s, id, node := idleCluster(t, tc, scheduler.JobSpec{})
	for k := 1; k <= 3; k++ {
		assert.Empty(t, read(t, s, node, time.Duration(30*k)*time.Second, 0))
	}
	assert.Equal(t, []scheduler.JobID{id}, read(t, s, node, 2*time.Minute, 0))
	j, _ := s.Job(id)
	assert.Equal(t, scheduler.JobCancelled, j.State)
	assert.Equal(t, policy.ReasonAllocatedIdle, j.Reason)
	assert.Equal(t, clustertest.Epoch.Add(2*time.Minute), j.EndTime)
	assert.InDelta(t, 8*120.0, j.LostWorkGPUSeconds, 1e-9)
	assert.Empty(t, read(t, s, node, 150*time.Second, 0), "an ended job is not read")
}

func TestTelemetryBusyReadingBeforeGraceCancelsTheAction(t *testing.T) {
	tc := scheduler.TelemetryConfig{Rule: actionRule, Action: scheduler.IdleCancel, Grace: 2 * time.Minute}
	s, id, node := idleCluster(t, tc, scheduler.JobSpec{})
	for k := 1; k <= 5; k++ { // idle to 2.5 min
		read(t, s, node, time.Duration(30*k)*time.Second, 0)
	}
	read(t, s, node, 3*time.Minute, 60) // busy just before the action was due
	// Idle again: the clock of the new spell starts at 3 min.
	for k := 1; k <= 5; k++ {
		assert.Empty(t, read(t, s, node, 3*time.Minute+time.Duration(30*k)*time.Second, 0), "reading %d of the new spell", k)
	}
	j, _ := s.Job(id)
	assert.Equal(t, scheduler.JobRunning, j.State)
	assert.Equal(t, []scheduler.JobID{id}, read(t, s, node, 6*time.Minute, 0), "3 minutes into the new spell")
}

func TestTelemetryIdleRequeueOfANoRequeueJobEndsIt(t *testing.T) {
	tc := scheduler.TelemetryConfig{Rule: actionRule, Action: scheduler.IdleRequeue}
	s, id, node := idleCluster(t, tc, scheduler.JobSpec{Requeue: scheduler.RequeueNo})
	read(t, s, node, 30*time.Second, 0)
	assert.Equal(t, []scheduler.JobID{id}, read(t, s, node, time.Minute, 0))
	j, _ := s.Job(id)
	assert.Equal(t, scheduler.JobCancelled, j.State, "--no-requeue: ended instead")
	assert.Equal(t, policy.ReasonAllocatedIdle, j.Reason)
	assert.Zero(t, j.Restarts)
	ds := idleDecisions(t, s, 2*time.Minute)
	require.Len(t, ds, 2)
	assert.Equal(t, policy.ActionCancel, ds[1].Action)
}

func TestUpdateTelemetryEventChangesTheActionOrNothing(t *testing.T) {
	s, id, node := idleCluster(t, scheduler.TelemetryConfig{Rule: actionRule}, scheduler.JobSpec{})
	before := s.Telemetry()
	for name, bad := range map[string]scheduler.TelemetryConfig{
		"action without a threshold": {Action: scheduler.IdleCancel},
		"negative grace":             {Rule: actionRule, Grace: -time.Second},
		"unknown action":             {Rule: actionRule, Action: scheduler.IdleAction(9)},
		"threshold above 100":        {Rule: telemetry.Rule{IdleBelow: 101}},
	} {
		err := s.SetTelemetry(clustertest.Epoch.Add(time.Second), bad)
		assert.ErrorIs(t, err, scheduler.ErrInvalidConfig, name)
		assert.Equal(t, before, s.Telemetry(), "%s changed the configuration", name)
	}
	for k := 1; k <= 4; k++ {
		assert.Empty(t, read(t, s, node, time.Duration(30*k)*time.Second, 0))
	}
	tc := scheduler.TelemetryConfig{Rule: actionRule, Action: scheduler.IdleCancel}
	require.NoError(t, s.SetTelemetry(clustertest.Epoch.Add(2*time.Minute+time.Second), tc))
	assert.Equal(t, tc, s.Telemetry())
	j, _ := s.Job(id)
	assert.Equal(t, scheduler.JobRunning, j.State, "the change acts on the next reading, not before")
	assert.Equal(t, []scheduler.JobID{id}, read(t, s, node, 150*time.Second, 0))
}

func TestRequeueCountsLaunchFailuresAndLostWork(t *testing.T) {
	cfg := clustertest.Mixed4()
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	t0 := clustertest.Epoch
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", TimeLimit: time.Hour, GRESPerNode: []gres.Request{{Name: "gpu", Count: 4}}})
	mustSchedule(t, s, t0)
	require.NoError(t, s.Requeue(t0.Add(10*time.Second), id)) // a launch failure
	mustSchedule(t, s, t0.Add(time.Minute))
	j, _ := s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)
	assert.Equal(t, 2, j.Starts)
	assert.Equal(t, 1, j.LaunchFailures)
	assert.InDelta(t, 4*10.0, j.LostWorkGPUSeconds, 1e-9)
	_, err = s.DownNode(t0.Add(2*time.Minute), j.Alloc.Nodes[0].Name, "dead")
	require.NoError(t, err)
	j, _ = s.Job(id)
	assert.Equal(t, 1, j.LaunchFailures, "a node failure is not a launch failure")
	assert.Equal(t, 2, j.Restarts)
	assert.InDelta(t, 4*10.0+4*60, j.LostWorkGPUSeconds, 1e-9)
	assert.Zero(t, j.LostGPUSeconds, "preemption only")
}

// TestTelemetryIdleRequeuesAtMostMaxIdleRequeues: a job that hangs again
// after every requeue is requeued MaxIdleRequeues times, then ended.
func TestTelemetryIdleRequeuesAtMostMaxIdleRequeues(t *testing.T) {
	tc := scheduler.TelemetryConfig{Rule: actionRule, Action: scheduler.IdleRequeue, MaxIdleRequeues: 2}
	s, id, node := idleCluster(t, tc, scheduler.JobSpec{})
	at := time.Duration(0)
	for run := 1; run <= 3; run++ {
		var got []scheduler.JobID
		for k := 0; k < 3 && got == nil; k++ { // idle from the run's start: acted on at its second reading
			at += 30 * time.Second
			got = read(t, s, node, at, 0)
		}
		require.Equal(t, []scheduler.JobID{id}, got, "run %d", run)
		j, _ := s.Job(id)
		if run <= 2 {
			require.Equal(t, scheduler.JobPending, j.State, "run %d", run)
			assert.Equal(t, run, j.IdleRequeues)
			at += 30 * time.Second
			mustSchedule(t, s, clustertest.Epoch.Add(at))
			j, _ = s.Job(id)
			require.Equal(t, scheduler.JobRunning, j.State, "run %d starts again", run+1)
			node = j.Alloc.Nodes[0].Name
			continue
		}
		assert.Equal(t, scheduler.JobCancelled, j.State, "the third idle spell ends it")
		assert.Equal(t, policy.ReasonAllocatedIdle, j.Reason)
		assert.Equal(t, 2, j.IdleRequeues)
		assert.Equal(t, 2, j.Restarts)
	}
	_, err := s.Apply(clustertest.Epoch.Add(at), scheduler.UpdateTelemetryEvent{Config: scheduler.TelemetryConfig{Rule: actionRule, Action: scheduler.IdleRequeue, MaxIdleRequeues: -1}})
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig)
}
