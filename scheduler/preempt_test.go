package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

func newPreemptMixed(t *testing.T, mode policy.PreemptMode, grace time.Duration) *scheduler.Scheduler {
	t.Helper()
	cfg := clustertest.Mixed4()
	cfg.Policy = &policy.Config{
		PreemptType: policy.PreemptQOS,
		PreemptMode: mode,
		QOS: []policy.QOS{
			{Name: "urgent", Priority: 100, Preempt: []string{"standby"}},
			{Name: "standby", GraceTime: grace},
		},
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

func TestPreemptionChoosesLeastLostWork(t *testing.T) {
	s := newPreemptMixed(t, policy.PreemptRequeue, 0)
	var standby []scheduler.JobID
	for range 4 {
		standby = append(standby, mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", QOS: "standby", Exclusive: true, Requeue: true, TimeLimit: 10 * time.Hour}))
	}
	mustSchedule(t, s, t0)
	// Job 3 checkpointed a minute ago: preempting it loses least.
	require.NoError(t, s.Checkpoint(t0.Add(2*time.Hour-time.Minute), standby[2]))
	urgent := mustSubmit(t, s, t0.Add(2*time.Hour), scheduler.JobSpec{User: "ann", QOS: "urgent", Exclusive: true, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0.Add(2*time.Hour))
	require.Len(t, cyc.Preemptions, 1)
	p := cyc.Preemptions[0]
	assert.Equal(t, standby[2], p.Victim)
	assert.Equal(t, urgent, p.Preemptor)
	assert.Equal(t, policy.ActionRequeue, p.Action)
	assert.InDelta(t, 8*60.0, p.LostGPUSeconds, 1e-9, "8 GPUs × one minute since the checkpoint")
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, urgent, cyc.Starts[0].Job)
	// The audit record keeps the lost work, through the ledger and back.
	var rec *scheduler.Decision
	for i := range cyc.Decisions {
		if cyc.Decisions[i].Kind == scheduler.DecisionPreempt {
			rec = &cyc.Decisions[i]
		}
	}
	require.NotNil(t, rec)
	assert.InDelta(t, 480.0, rec.LostGPUSeconds, 1e-9)
	ad, err := rec.Accounting("c")
	require.NoError(t, err)
	back, err := scheduler.DecisionFromAccounting(ad)
	require.NoError(t, err)
	assert.InDelta(t, 480.0, back.LostGPUSeconds, 1e-9)
	v, _ := s.Job(standby[2])
	assert.Equal(t, scheduler.JobPending, v.State, "requeued")
	assert.Equal(t, 1, v.Restarts)
	assert.Equal(t, policy.ReasonPreempted, v.Reason)
}

func TestPreemptionGraceTimeAndCancel(t *testing.T) {
	s := newPreemptMixed(t, policy.PreemptCancel, 5*time.Minute)
	for range 4 {
		mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", QOS: "standby", Exclusive: true, TimeLimit: 10 * time.Hour})
	}
	mustSchedule(t, s, t0)
	urgent := mustSubmit(t, s, t0.Add(time.Hour), scheduler.JobSpec{User: "ann", QOS: "urgent", Exclusive: true, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0.Add(time.Hour))
	require.Len(t, cyc.Preemptions, 1)
	assert.Equal(t, t0.Add(time.Hour+5*time.Minute), cyc.Preemptions[0].KillAt)
	assert.Empty(t, cyc.Starts, "the preemptor waits for the grace time")
	victim := cyc.Preemptions[0].Victim

	cyc = mustSchedule(t, s, t0.Add(time.Hour+5*time.Minute))
	require.Len(t, cyc.Ended, 1)
	assert.Equal(t, scheduler.Ended{Job: victim, State: scheduler.JobPreempted, Reason: policy.ReasonPreempted}, cyc.Ended[0])
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, urgent, cyc.Starts[0].Job)
	assert.Empty(t, cyc.Preemptions, "no second victim for the same job")
}

func TestNoPreemptionOfPeersOrUpward(t *testing.T) {
	s := newPreemptMixed(t, policy.PreemptRequeue, 0)
	for range 4 {
		mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", QOS: "urgent", Exclusive: true, TimeLimit: 10 * time.Hour})
	}
	mustSchedule(t, s, t0)
	mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", QOS: "urgent", Exclusive: true})
	mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", QOS: "standby", Exclusive: true})
	cyc := mustSchedule(t, s, t0)
	assert.Empty(t, cyc.Preemptions)
	assert.Empty(t, cyc.Starts)

	cfg := clustertest.Mixed4()
	cfg.Policy = &policy.Config{PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptSuspend,
		QOS: []policy.QOS{{Name: "a", Preempt: []string{"b"}}, {Name: "b"}}}
	_, err := scheduler.New(cfg)
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig, "SUSPEND is refused, not half-supported")
}
