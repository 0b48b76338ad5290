package ledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
)

// wallSeconds returns the undecayed wall-clock seconds charged to the
// association (cluster "c", account, user) as of now (the ledger must be
// opened with NoDecay).
func wallSeconds(t *testing.T, l accounting.Ledger, account, user string, now time.Time) float64 {
	t.Helper()
	var wall float64
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		a, err := tx.LookupAssoc(accounting.AssocKey{Cluster: "c", Account: account, User: user})
		if err != nil {
			return err
		}
		u, err := tx.Usage(a.ID, now)
		wall = u.Wall
		return err
	}))
	return wall
}

func storedJob(t *testing.T, l accounting.Ledger, id scheduler.JobID) accounting.JobRecord {
	t.Helper()
	var j accounting.JobRecord
	require.NoError(t, l.View(func(tx accounting.Tx) (err error) {
		j, err = tx.Job(accounting.JobID(id))
		return err
	}))
	return j
}

// A job requeued after a launch failure whose nodes are drained stays
// pending. Slurm's accounting ends the requeued run with a REQUEUED record
// whose end is the requeue time; the cycle's other starts and ends must be
// recorded with it, and the following cycles too.
func TestObserveRecordsRequeuedPendingJobWithTheCyclesOtherWork(t *testing.T) {
	l, s, rec := setupWith(t, accounting.Config{NoDecay: true}, nil)
	gpu := []gres.Request{{Name: "gpu", Count: 1}}
	requeued, err := s.Submit(t0, scheduler.JobSpec{User: "ann", Account: "physics", Partition: "h100", GRESPerNode: gpu, TimeLimit: time.Hour})
	require.NoError(t, err)
	finished, err := s.Submit(t0, scheduler.JobSpec{User: "cy", Account: "bio", CPUsPerTask: 4, TimeLimit: time.Hour})
	require.NoError(t, err)
	cyc, err := s.Schedule(t0)
	require.NoError(t, err)
	require.Len(t, cyc.Starts, 2)
	require.NoError(t, rec.Observe(t0, cyc))

	// The launch failed: the job goes back to the queue, its nodes are
	// drained, so it stays pending; meanwhile another job ends and a new
	// one starts.
	t1 := t0.Add(20 * time.Second)
	require.NoError(t, s.Requeue(t1, requeued))
	for _, n := range []string{"h100-01", "h100-02"} {
		require.NoError(t, s.DrainNode(t1, n, "launch failed"))
	}
	require.NoError(t, s.Finish(t1, finished, 0))
	started, err := s.Submit(t1, scheduler.JobSpec{User: "cy", Account: "bio", CPUsPerTask: 2, TimeLimit: time.Hour})
	require.NoError(t, err)
	now := t1.Add(45 * time.Second)
	cyc, err = s.Schedule(now)
	require.NoError(t, err)
	require.Len(t, cyc.Starts, 1)
	require.Equal(t, started, cyc.Starts[0].Job)
	j, _ := s.Job(requeued)
	require.Equal(t, scheduler.JobPending, j.State)
	require.NoError(t, rec.Observe(now, cyc))

	rq := storedJob(t, l, requeued)
	assert.Equal(t, accounting.StateRequeued, rq.State)
	assert.Equal(t, t0, rq.Start, "the requeued run's start")
	assert.Equal(t, t1, rq.End, "the requeued run ended at the requeue, not at the next cycle")
	assert.Equal(t, uint32(1), rq.Restarts)
	assert.Equal(t, 20.0, wallSeconds(t, l, "physics", "ann", now), "the run is charged up to the requeue")
	fin := storedJob(t, l, finished)
	assert.Equal(t, accounting.StateCompleted, fin.State)
	assert.Equal(t, t1, fin.End)
	st := storedJob(t, l, started)
	assert.Equal(t, accounting.StateRunning, st.State)
	assert.Equal(t, now, st.Start)

	// Later cycles keep recording, and charge the pending job nothing.
	later := now.Add(2 * time.Minute)
	cyc, err = s.Schedule(later)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(later, cyc))
	assert.Equal(t, 20.0, wallSeconds(t, l, "physics", "ann", later))
	assert.Equal(t, 20.0+120.0, wallSeconds(t, l, "bio", "cy", later), "20 s of the finished job, 120 s of the running one")
	assert.Equal(t, rq, storedJob(t, l, requeued))

	// When it runs again, its new run is recorded and charged.
	for _, n := range []string{"h100-01", "h100-02"} {
		require.NoError(t, s.ResumeNode(later, n))
	}
	again := later.Add(time.Minute)
	cyc, err = s.Schedule(again)
	require.NoError(t, err)
	require.Len(t, cyc.Starts, 1)
	require.NoError(t, rec.Observe(again, cyc))
	end := again.Add(30 * time.Second)
	require.NoError(t, s.Finish(end, requeued, 0))
	cyc, err = s.Schedule(end)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(end, cyc))
	rq = storedJob(t, l, requeued)
	assert.Equal(t, accounting.StateCompleted, rq.State)
	assert.Equal(t, again, rq.Start)
	assert.Equal(t, 50.0, wallSeconds(t, l, "physics", "ann", end), "both runs")
}

var errInjected = errors.New("injected commit failure")

// failingLedger fails the next Update after running its function (the
// transaction is rolled back, as a failed commit would leave it).
type failingLedger struct {
	accounting.Ledger
	fail bool
}

func (f *failingLedger) Update(fn func(accounting.Tx) error) error {
	return f.Ledger.Update(func(tx accounting.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if f.fail {
			f.fail = false
			return errInjected
		}
		return nil
	})
}

// A failed Observe writes nothing and leaves the recorder as it was: the
// same cycle observed again records all that the failed call would have
// (the ended job's final record and charge, the start, the periodic
// charge), once.
func TestFailedObserveLeavesRecorderUnchanged(t *testing.T) {
	fl := &failingLedger{}
	l, s, rec := setupWith(t, accounting.Config{NoDecay: true}, func(l accounting.Ledger) accounting.Ledger {
		fl.Ledger = l
		return fl
	})
	ended, err := s.Submit(t0, scheduler.JobSpec{User: "cy", Account: "bio", CPUsPerTask: 4, TimeLimit: time.Hour})
	require.NoError(t, err)
	_, err = s.Submit(t0, scheduler.JobSpec{User: "cy", Account: "bio", CPUsPerTask: 2, TimeLimit: time.Hour})
	require.NoError(t, err)
	cyc, err := s.Schedule(t0)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(t0, cyc))

	t1 := t0.Add(90 * time.Second)
	require.NoError(t, s.Finish(t1, ended, 0))
	started, err := s.Submit(t1, scheduler.JobSpec{User: "ann", Account: "physics", CPUsPerTask: 2, TimeLimit: time.Hour})
	require.NoError(t, err)
	cyc, err = s.Schedule(t1)
	require.NoError(t, err)
	require.Len(t, cyc.Starts, 1)

	fl.fail = true
	require.ErrorIs(t, rec.Observe(t1, cyc), errInjected)
	assert.Equal(t, accounting.StateRunning, storedJob(t, l, ended).State, "nothing written")
	assert.Zero(t, wallSeconds(t, l, "bio", "cy", t1))

	require.NoError(t, rec.Observe(t1, cyc))
	e := storedJob(t, l, ended)
	assert.Equal(t, accounting.StateCompleted, e.State)
	assert.Equal(t, t1, e.End)
	assert.Equal(t, accounting.StateRunning, storedJob(t, l, started).State)
	assert.Equal(t, 90.0+90.0, wallSeconds(t, l, "bio", "cy", t1), "the ended job to its end, the running one periodically")

	t2 := t1.Add(2 * time.Minute)
	cyc, err = s.Schedule(t2)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(t2, cyc))
	assert.Equal(t, 120.0, wallSeconds(t, l, "physics", "ann", t2), "the start tracked once, charged once")
	assert.Equal(t, 90.0+90.0+120.0, wallSeconds(t, l, "bio", "cy", t2))
}

// A launch failure reported between Schedule and Observe: the cycle's
// start is already requeued when it is observed. Its run is recorded from
// the cycle to the requeue (Observe's time, the latest it can have been).
func TestObserveRecordsStartRequeuedBeforeObserve(t *testing.T) {
	l, s, rec := setupWith(t, accounting.Config{NoDecay: true}, nil)
	id, err := s.Submit(t0, scheduler.JobSpec{User: "ann", Account: "physics", Partition: "h100", GRESPerNode: []gres.Request{{Name: "gpu", Count: 1}}, TimeLimit: time.Hour})
	require.NoError(t, err)
	cyc, err := s.Schedule(t0)
	require.NoError(t, err)
	require.Len(t, cyc.Starts, 1)
	t1 := t0.Add(5 * time.Second)
	require.NoError(t, s.Requeue(t1, id))
	require.NoError(t, rec.Observe(t1, cyc))
	rq := storedJob(t, l, id)
	assert.Equal(t, accounting.StateRequeued, rq.State)
	assert.Equal(t, t0, rq.Start)
	assert.Equal(t, t1, rq.End)
	assert.NotEmpty(t, rq.NodeList, "the run's nodes")
	assert.Equal(t, 5.0, wallSeconds(t, l, "physics", "ann", t1))

	for _, n := range []string{"h100-01", "h100-02"} {
		require.NoError(t, s.DrainNode(t1, n, "launch failed"))
	}
	later := t1.Add(time.Minute)
	cyc, err = s.Schedule(later)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(later, cyc))
	assert.Equal(t, rq, storedJob(t, l, id))
}
