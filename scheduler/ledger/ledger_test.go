package ledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/ledger"
)

var t0 = clustertest.Epoch

func setup(t *testing.T) (accounting.Ledger, *scheduler.Scheduler, *ledger.Recorder) {
	t.Helper()
	return setupWith(t, accounting.Config{}, nil)
}

// setupWith is setup with the ledger's usage policy acfg, the recorder
// writing through wrap(ledger) when wrap is not nil (the returned ledger
// is the unwrapped one).
func setupWith(t *testing.T, acfg accounting.Config, wrap func(accounting.Ledger) accounting.Ledger) (accounting.Ledger, *scheduler.Scheduler, *ledger.Recorder) {
	t.Helper()
	l, err := accounting.NewMemory(acfg)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		for _, a := range []accounting.Assoc{
			{AssocKey: accounting.AssocKey{Cluster: "c", Account: "physics"}},
			{AssocKey: accounting.AssocKey{Cluster: "c", Account: "bio"}},
			{AssocKey: accounting.AssocKey{Cluster: "c", Account: "physics", User: "ann"}},
			{AssocKey: accounting.AssocKey{Cluster: "c", Account: "bio", User: "cy"}},
		} {
			if _, err := tx.PutAssoc(t0, a); err != nil {
				return err
			}
		}
		return nil
	}))
	cfg := clustertest.Mixed4()
	cfg.Priority = &scheduler.PriorityConfig{
		Engine:     priority.Config{Weights: priority.Weights{FairShare: 10000}},
		FairShare:  ledger.FairShare(l, "c"),
		CalcPeriod: time.Minute,
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	var w accounting.Ledger = l
	if wrap != nil {
		w = wrap(l)
	}
	rec, err := ledger.NewRecorder(t0, w, "c", s, ledger.Options{ChargePeriod: time.Minute})
	require.NoError(t, err)
	return l, s, rec
}

func TestRecorderWritesJobsAndUsageFeedsFairShare(t *testing.T) {
	l, s, rec := setup(t)
	gpus := []gres.Request{{Name: "gpu", Count: 8}}
	ann, err := s.Submit(t0, scheduler.JobSpec{Name: "big", User: "ann", Account: "physics", GRESPerNode: gpus, TimeLimit: 4 * time.Hour})
	require.NoError(t, err)
	cyc, err := s.Schedule(t0)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(t0, cyc))

	end := t0.Add(2 * time.Hour)
	require.NoError(t, s.Finish(end, ann, 0))
	cyc, err = s.Schedule(end)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(end, cyc))

	require.NoError(t, l.View(func(tx accounting.Tx) error {
		j, err := tx.Job(accounting.JobID(ann))
		require.NoError(t, err)
		assert.Equal(t, accounting.StateCompleted, j.State)
		assert.Equal(t, t0, j.Start)
		assert.Equal(t, end, j.End)
		assert.Equal(t, int64(8), j.AllocTRES["gres/gpu"])
		assert.Equal(t, []string{"SchedMain"}, j.Flags)
		a, err := tx.LookupAssoc(accounting.AssocKey{Cluster: "c", Account: "physics"})
		require.NoError(t, err)
		u, err := tx.Usage(a.ID, end)
		require.NoError(t, err)
		assert.Greater(t, u.Raw, 0.0, "physics was charged")
		return nil
	}))

	// physics used the cluster, bio did not: bio's job goes first now.
	later := end.Add(time.Minute)
	whole := scheduler.JobSpec{Nodes: 4, Exclusive: true, TimeLimit: time.Hour}
	a2 := whole
	a2.User, a2.Account = "ann", "physics"
	c1 := whole
	c1.User, c1.Account = "cy", "bio"
	blocker, err := s.Submit(later, whole)
	require.NoError(t, err)
	_, err = s.Schedule(later)
	require.NoError(t, err)
	ida, err := s.Submit(later, a2)
	require.NoError(t, err)
	idc, err := s.Submit(later, c1)
	require.NoError(t, err)
	cyc, err = s.Schedule(later.Add(time.Minute))
	require.NoError(t, err)
	require.Len(t, cyc.Pending, 2)
	assert.Equal(t, idc, cyc.Pending[0].Job, "bio is under its share and ranks first")
	assert.Equal(t, ida, cyc.Pending[1].Job)
	_ = blocker
}

func TestRecorderChargesRunningJobsPeriodically(t *testing.T) {
	l, s, rec := setup(t)
	_, err := s.Submit(t0, scheduler.JobSpec{User: "cy", Account: "bio", CPUsPerTask: 10, TimeLimit: 10 * time.Hour})
	require.NoError(t, err)
	cyc, err := s.Schedule(t0)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(t0, cyc))
	var before float64
	for i := 1; i <= 3; i++ {
		now := t0.Add(time.Duration(i) * 10 * time.Minute)
		cyc, err := s.Schedule(now)
		require.NoError(t, err)
		require.NoError(t, rec.Observe(now, cyc))
		require.NoError(t, l.View(func(tx accounting.Tx) error {
			a, _ := tx.LookupAssoc(accounting.AssocKey{Cluster: "c", Account: "bio"})
			u, err := tx.Usage(a.ID, now)
			require.NoError(t, err)
			assert.Greater(t, u.Raw, before, "usage grows while the job runs")
			before = u.Raw
			return nil
		}))
	}
}

func TestDecisionsRoundTripThroughTheLedger(t *testing.T) {
	l, s, rec := setup(t)
	id, err := s.Submit(t0, scheduler.JobSpec{User: "ann", Account: "physics", GRESPerNode: []gres.Request{{Name: "gpu", Count: 2}}})
	require.NoError(t, err)
	cyc, err := s.Schedule(t0)
	require.NoError(t, err)
	require.NotEmpty(t, cyc.Decisions)
	require.NoError(t, rec.Observe(t0, cyc))
	ds, err := ledger.Decisions(l).JobDecisions(id)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	assert.Equal(t, scheduler.DecisionStart, ds[0].Kind)
	assert.Equal(t, id, ds[0].Job)
	ex, err := s.Explain(t0.Add(time.Minute), id, scheduler.ExplainOptions{Records: ledger.Decisions(l)})
	require.NoError(t, err)
	assert.Contains(t, ex.String(), "Started")
}

func TestRequeueIsAudited(t *testing.T) {
	l, s, rec := setup(t)
	id, err := s.Submit(t0, scheduler.JobSpec{User: "ann", Account: "physics", GRESPerNode: []gres.Request{{Name: "gpu", Count: 2}}})
	require.NoError(t, err)
	cyc, err := s.Schedule(t0)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(t0, cyc))
	require.NoError(t, s.Requeue(t0.Add(time.Minute), id))
	cyc, err = s.Schedule(t0.Add(time.Minute))
	require.NoError(t, err)
	require.NoError(t, rec.Observe(t0.Add(time.Minute), cyc))
	ds, err := ledger.Decisions(l).JobDecisions(id)
	require.NoError(t, err)
	kinds := []scheduler.DecisionKind{}
	for _, d := range ds {
		kinds = append(kinds, d.Kind)
	}
	assert.Contains(t, kinds, scheduler.DecisionRequeue)
}

// TestRecorderReqNodesFromNodeListAndConstraint: sacct's ReqNodes (and
// ReqTRES node=) is the node count the job requires, which a NodeList or
// a counted Constraint raises above Nodes (or its default of one).
func TestRecorderReqNodesFromNodeListAndConstraint(t *testing.T) {
	l, s, rec := setup(t)
	for _, c := range []struct {
		spec scheduler.JobSpec
		want int64
	}{
		{scheduler.JobSpec{User: "cy", Account: "bio", NodeList: "a100-01,a100-02,h100-01", CPUsPerTask: 1, TimeLimit: time.Hour}, 3},
		{scheduler.JobSpec{User: "cy", Account: "bio", Nodes: 1, NodeList: "a100-[01-02]", CPUsPerTask: 1, TimeLimit: time.Hour}, 2},
	} {
		id, err := s.Submit(t0, c.spec)
		require.NoError(t, err)
		cyc, err := s.Schedule(t0)
		require.NoError(t, err)
		require.Len(t, cyc.Starts, 1)
		require.NoError(t, rec.Observe(t0, cyc))
		require.NoError(t, l.View(func(tx accounting.Tx) error {
			j, err := tx.Job(accounting.JobID(id))
			require.NoError(t, err)
			assert.Equal(t, c.want, j.ReqTRES["node"], "ReqTRES %v", j.ReqTRES)
			assert.Equal(t, c.want, j.AllocTRES["node"])
			return nil
		}))
		require.NoError(t, s.Finish(t0, id, 0))
	}
}
