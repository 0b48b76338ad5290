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
		standby = append(standby, mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", QOS: "standby", Exclusive: true, Requeue: scheduler.RequeueYes, TimeLimit: 10 * time.Hour}))
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
}

func TestPreemptionSuspendLendsCPUsKeepsGPUs(t *testing.T) {
	s := newSuspendDGX(t)
	bg := mustSubmit(t, s, t0, scheduler.JobSpec{QOS: "standby", GRESPerNode: gpus(4), CPUsPerTask: 100, TimeLimit: 4 * time.Hour})
	mustSchedule(t, s, t0)
	before, _ := s.Job(bg)
	urgent := mustSubmit(t, s, t0.Add(time.Hour), scheduler.JobSpec{QOS: "urgent", GRESPerNode: gpus(4), CPUsPerTask: 50, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0.Add(time.Hour))
	require.Len(t, cyc.Preemptions, 1)
	assert.Equal(t, policy.ActionSuspend, cyc.Preemptions[0].Action)
	assert.Zero(t, cyc.Preemptions[0].LostGPUSeconds, "a suspended job loses no work")
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, urgent, cyc.Starts[0].Job)
	v, _ := s.Job(bg)
	assert.Equal(t, scheduler.JobSuspended, v.State)
	assert.Equal(t, before.Alloc.Nodes[0].Devices, v.Alloc.Nodes[0].Devices, "it keeps its GPUs")
	assert.Empty(t, v.Alloc.Nodes[0].CPUs, "its CPUs are lent")
	assert.Empty(t, intersect(v.Alloc.Nodes[0].Devices, cyc.Starts[0].Alloc.Nodes[0].Devices))
	checkInvariants(t, s, "suspended")
	ex, err := s.Explain(t0.Add(time.Hour), bg, scheduler.ExplainOptions{Records: scheduler.Decisions(cyc.Decisions)})
	require.NoError(t, err)
	assert.Contains(t, ex.String(), "SUSPENDED")

	// The preemptor ends: the suspended job resumes with its 3 hours left.
	require.NoError(t, s.Finish(t0.Add(90*time.Minute), urgent, 0))
	cyc = mustSchedule(t, s, t0.Add(90*time.Minute))
	assert.Equal(t, []scheduler.JobID{bg}, cyc.Resumed)
	v, _ = s.Job(bg)
	assert.Equal(t, scheduler.JobRunning, v.State)
	assert.Len(t, v.Alloc.Nodes[0].CPUs, 100)
	checkInvariants(t, s, "resumed")
	cyc = mustSchedule(t, s, t0.Add(90*time.Minute+3*time.Hour))
	require.Len(t, cyc.Ended, 1)
	assert.Equal(t, scheduler.JobTimeout, cyc.Ended[0].State, "the limit counts running time only")
}

// A preemptor waiting for its victim's grace time goes first in the queue:
// what the victim frees is not taken back by the victim itself, requeued
// in a partition of a higher tier (which would preempt again, for ever).
func TestPreemptorWaitingForGraceGoesFirst(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Policy = &policy.Config{
		PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptRequeue,
		QOS: []policy.QOS{{Name: "urgent", Preempt: []string{"standby"}}, {Name: "standby", GraceTime: 5 * time.Minute}},
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	for range 2 { // both h100 nodes, partition h100 (tier 2)
		mustSubmit(t, s, t0, scheduler.JobSpec{QOS: "standby", Partition: "h100", Exclusive: true, Requeue: scheduler.RequeueYes, TimeLimit: 4 * time.Hour})
	}
	mustSchedule(t, s, t0)
	urgent := mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{QOS: "urgent", GRESPerNode: typed("h100", 8), TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0.Add(time.Minute))
	require.Len(t, cyc.Preemptions, 1)
	victim := cyc.Preemptions[0].Victim
	cyc = mustSchedule(t, s, t0.Add(3*time.Minute))
	assert.Empty(t, cyc.Preemptions, "no second victim while the first is in its grace time")
	cyc = mustSchedule(t, s, t0.Add(6*time.Minute))
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, urgent, cyc.Starts[0].Job, "the preemptor gets the freed node, not its requeued victim")
	v, _ := s.Job(victim)
	assert.Equal(t, scheduler.JobPending, v.State)
}

// TestPreemptorOrderedAheadOfJobItCanPreempt checks Slurm's queue sort
// with preemption on: a job that may preempt another is considered before
// it whatever their priorities, so on one free node the preemptor H
// starts (priority 1, QOS hi) rather than L (priority 100, QOS lo, which
// hi may preempt) starting and being preempted by H a cycle later.
func TestPreemptorOrderedAheadOfJobItCanPreempt(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Nodes = cfg.Nodes[:1]
	cfg.Partitions = cfg.Partitions[:1]
	cfg.Policy = &policy.Config{
		PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptCancel,
		QOS: []policy.QOS{{Name: "hi", Preempt: []string{"lo"}}, {Name: "lo"}},
	}
	cfg.Priority = &scheduler.PriorityConfig{}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	l := mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", QOS: "lo", Exclusive: true, Nice: -100, TimeLimit: time.Hour})
	h := mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", QOS: "hi", Exclusive: true, Nice: -1, TimeLimit: time.Hour})
	jl, _ := s.Job(l)
	jh, _ := s.Job(h)
	require.Equal(t, uint32(100), jl.Priority)
	require.Equal(t, uint32(1), jh.Priority)
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, h, cyc.Starts[0].Job, "the preemptor starts first")
	require.Len(t, cyc.Pending, 1)
	assert.Equal(t, l, cyc.Pending[0].Job)
	cyc = mustSchedule(t, s, t0.Add(time.Minute))
	assert.Empty(t, cyc.Preemptions, "nothing to preempt: L never started")
}
