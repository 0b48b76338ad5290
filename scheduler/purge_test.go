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

// TestMinJobAge checks that finished jobs are forgotten MinJobAge after
// they finished, not before the cycle after the one that saw them
// finished, that events naming them then fail clearly, and that their
// outcomes still decide dependencies.
func TestMinJobAge(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.MinJobAge = 5 * time.Minute
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	ok := mustSubmit(t, s, t0, scheduler.JobSpec{Name: "ok", User: "ann", TimeLimit: time.Hour})
	bad := mustSubmit(t, s, t0, scheduler.JobSpec{Name: "bad", User: "ann", TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	require.NoError(t, s.Finish(t0.Add(time.Minute), ok, 0))
	require.NoError(t, s.Finish(t0.Add(time.Minute), bad, 1))

	// Long past MinJobAge, but this is the first cycle since: kept.
	mustSchedule(t, s, t0.Add(time.Hour))
	_, found := s.Job(ok)
	assert.True(t, found, "a caller reading each cycle sees the finished job once")
	mustSchedule(t, s, t0.Add(time.Hour+time.Second))
	_, found = s.Job(ok)
	assert.False(t, found, "forgotten after MinJobAge and a cycle")
	_, found = s.Job(bad)
	assert.False(t, found)
	for _, j := range s.Jobs() {
		assert.NotEqual(t, ok, j.ID)
	}
	err = s.Cancel(t0.Add(2*time.Hour), ok)
	require.ErrorIs(t, err, scheduler.ErrUnknownJob)
	assert.Contains(t, err.Error(), "purged")
	_, err = s.Explain(t0.Add(2*time.Hour), bad, scheduler.ExplainOptions{})
	require.ErrorIs(t, err, scheduler.ErrUnknownJob)

	// Dependencies still know how the forgotten jobs ended.
	next := mustSubmit(t, s, t0.Add(2*time.Hour), scheduler.JobSpec{Name: "next", User: "ann", Dependency: "afterok:1"})
	never := mustSubmit(t, s, t0.Add(2*time.Hour), scheduler.JobSpec{Name: "never", User: "ann", Dependency: "afterok:2"})
	cyc := mustSchedule(t, s, t0.Add(2*time.Hour))
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, next, cyc.Starts[0].Job)
	assert.Equal(t, policy.ReasonDependencyNeverSatisfied, reasonOf(cyc, never))

	// A job finished recently stays.
	recent := cyc.Starts[0].Job
	require.NoError(t, s.Finish(t0.Add(3*time.Hour), recent, 0))
	mustSchedule(t, s, t0.Add(3*time.Hour+time.Minute))
	mustSchedule(t, s, t0.Add(3*time.Hour+2*time.Minute))
	_, found = s.Job(recent)
	assert.True(t, found, "finished 2 minutes ago, MinJobAge is 5")
	mustSchedule(t, s, t0.Add(3*time.Hour+5*time.Minute))
	_, found = s.Job(recent)
	assert.False(t, found)

	cfg.MinJobAge = -time.Second
	_, err = scheduler.New(cfg)
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig)
}

// TestPurgedOutcomesByID checks the purged outcomes with job IDs that do
// not start at 1 and jobs forgotten out of ID order: a forgotten job is
// reported as purged and still decides dependencies, while IDs below the
// first one or never handed out are plainly unknown.
func TestPurgedOutcomesByID(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.MinJobAge = time.Minute
	cfg.FirstJobID = 1000
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	a := mustSubmit(t, s, t0, scheduler.JobSpec{Name: "a", User: "ann", TimeLimit: time.Hour})
	b := mustSubmit(t, s, t0, scheduler.JobSpec{Name: "b", User: "ann", TimeLimit: time.Hour})
	c := mustSubmit(t, s, t0, scheduler.JobSpec{Name: "c", User: "ann", TimeLimit: time.Hour})
	require.Equal(t, []scheduler.JobID{1000, 1001, 1002}, []scheduler.JobID{a, b, c})
	require.Len(t, mustSchedule(t, s, t0).Starts, 3)
	require.NoError(t, s.Finish(t0.Add(time.Minute), c, 1))
	require.NoError(t, s.Finish(t0.Add(2*time.Minute), a, 0))
	mustSchedule(t, s, t0.Add(time.Hour))
	mustSchedule(t, s, t0.Add(time.Hour+time.Second))

	later := t0.Add(2 * time.Hour)
	for _, id := range []scheduler.JobID{a, c} {
		_, found := s.Job(id)
		assert.False(t, found, "job %d", id)
		err := s.Cancel(later, id)
		require.ErrorIs(t, err, scheduler.ErrUnknownJob)
		assert.Contains(t, err.Error(), "purged", "job %d", id)
	}
	for _, id := range []scheduler.JobID{1, 999, 1003, 5000} {
		err := s.Cancel(later, id)
		require.ErrorIs(t, err, scheduler.ErrUnknownJob)
		assert.NotContains(t, err.Error(), "purged", "job %d", id)
	}
	_, found := s.Job(b)
	assert.True(t, found, "still running")

	ok := mustSubmit(t, s, later, scheduler.JobSpec{Name: "ok", User: "ann", Dependency: "afterok:1000"})
	never := mustSubmit(t, s, later, scheduler.JobSpec{Name: "never", User: "ann", Dependency: "afterok:1002"})
	cyc := mustSchedule(t, s, later)
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, ok, cyc.Starts[0].Job)
	assert.Equal(t, policy.ReasonDependencyNeverSatisfied, reasonOf(cyc, never))
}
