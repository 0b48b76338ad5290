package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/internal/clustertest"
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

// When one component of a heterogeneous job is preempted (REQUEUE), its
// other components are requeued with its reason (Preempted) to start
// again whole: they lose their own work, which the preemption did not
// count.
func TestLostWorkOfAHetJobsOtherComponentsOnPreemption(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Backfill = &backfill.Config{Mode: backfill.EASY, Resolution: time.Second} // het jobs need it
	cfg.Policy = &policy.Config{PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptRequeue,
		QOS: []policy.QOS{{Name: "urgent", Priority: 100, Preempt: []string{"standby"}}, {Name: "standby"}}}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	spec := scheduler.JobSpec{User: "bob", QOS: "standby", Exclusive: true, Requeue: scheduler.RequeueYes, TimeLimit: 10 * time.Hour}
	var comps []scheduler.JobID
	for range 2 {
		ids, err := s.SubmitHet(t0, []scheduler.JobSpec{spec, spec})
		require.NoError(t, err)
		comps = append(comps, ids...)
	}
	mustSchedule(t, s, t0)
	for _, id := range comps {
		require.Equal(t, scheduler.JobRunning, mustJob(t, s, id).State)
	}
	mustSubmit(t, s, t0.Add(time.Hour), scheduler.JobSpec{User: "ann", QOS: "urgent", Exclusive: true, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0.Add(time.Hour))
	require.Len(t, cyc.Preemptions, 1)
	victim := cyc.Preemptions[0].Victim
	mustSchedule(t, s, t0.Add(time.Hour)) // the het job is regrouped
	var total float64
	requeued := 0
	for _, id := range comps {
		j := mustJob(t, s, id)
		if j.State == scheduler.JobPending {
			requeued++
			assert.Positive(t, j.LostWorkGPUSeconds, "component %d (victim %d) lost its hour", id, victim)
			total += j.LostWorkGPUSeconds
		}
	}
	require.Equal(t, 2, requeued, "the victim's het job starts again whole")
	assert.InDelta(t, 2*cyc.Preemptions[0].LostGPUSeconds, total, 1e-9, "the same GPUs × hour each")
}
