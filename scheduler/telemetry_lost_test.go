package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// preemptInGrace starts four exclusive standby jobs, preempts one for an
// urgent job at 1h (REQUEUE, 5 minutes' grace) and returns the victim and
// the preemption's lost GPU-seconds.
func preemptInGrace(t *testing.T) (*scheduler.Scheduler, scheduler.JobID, float64) {
	t.Helper()
	s := newPreemptMixed(t, policy.PreemptRequeue, 5*time.Minute)
	for range 4 {
		mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", QOS: "standby", Exclusive: true, Requeue: scheduler.RequeueYes, TimeLimit: 10 * time.Hour})
	}
	mustSchedule(t, s, t0)
	mustSubmit(t, s, t0.Add(time.Hour), scheduler.JobSpec{User: "ann", QOS: "urgent", Exclusive: true, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0.Add(time.Hour))
	require.Len(t, cyc.Preemptions, 1)
	p := cyc.Preemptions[0]
	require.Positive(t, p.LostGPUSeconds)
	v, _ := s.Job(p.Victim)
	require.InDelta(t, p.LostGPUSeconds, v.LostWorkGPUSeconds, 1e-9)
	return s, p.Victim, p.LostGPUSeconds
}

// A preemption victim that fails (exits non-zero on its signal) in its
// grace time lost what the preemption counted, once.
func TestLostWorkOfAPreemptionVictimFailingInGraceCountsOnce(t *testing.T) {
	s, victim, lost := preemptInGrace(t)
	require.NoError(t, s.Finish(t0.Add(time.Hour+time.Minute), victim, 143))
	v, _ := s.Job(victim)
	assert.Equal(t, scheduler.JobFailed, v.State)
	assert.InDelta(t, lost, v.LostWorkGPUSeconds, 1e-9, "counted by the preemption, not again by the failure")
}

// A victim whose node goes down in its grace time is requeued: its loss
// is still the preemption's, once.
func TestLostWorkOfAPreemptionVictimOnADownNodeCountsOnce(t *testing.T) {
	s, victim, lost := preemptInGrace(t)
	v, _ := s.Job(victim)
	_, err := s.DownNode(t0.Add(time.Hour+time.Minute), v.Alloc.Nodes[0].Name, "test")
	require.NoError(t, err)
	v, _ = s.Job(victim)
	assert.Equal(t, scheduler.JobPending, v.State)
	assert.InDelta(t, lost, v.LostWorkGPUSeconds, 1e-9, "counted by the preemption, not again by the node failure")
}
