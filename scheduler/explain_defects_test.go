package scheduler_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

// Regression tests for Explain's answers (issue 19): each case failed
// before its fix.

func h100(n int64) []gres.Request { return []gres.Request{{Name: "gpu", Type: "h100", Count: n}} }

// A job that can never start (its time limit exceeds its partition's
// MaxTime) but waits on a begin time first must hold no reservation in
// the plan: the smaller job behind it starts when the running job ends,
// and Explain says so, and says why the first one never starts.
func TestExplainNeverStartableJobTakesNoReservation(t *testing.T) {
	for _, mode := range []backfill.Mode{backfill.Conservative, backfill.EASY} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg := clustertest.Mixed4()
			cfg.Backfill = &backfill.Config{Mode: mode, Resolution: time.Second}
			s, err := scheduler.New(cfg)
			require.NoError(t, err)
			now := clustertest.Epoch
			_, err = s.Submit(now, scheduler.JobSpec{Partition: "h100", Nodes: 2, GRESPerNode: h100(8), TimeLimit: 90 * time.Minute})
			require.NoError(t, err)
			_, err = s.Schedule(now)
			require.NoError(t, err)
			free := now.Add(90 * time.Minute)
			// 8 GPUs on 2 nodes for 6 h in a partition of MaxTime 4 h,
			// beginning when the running job ends.
			never, err := s.Submit(now, scheduler.JobSpec{Partition: "h100", Nodes: 2, GRESPerNode: h100(8), TimeLimit: 6 * time.Hour,
				BeginTime: free})
			require.NoError(t, err)
			small, err := s.Submit(now, scheduler.JobSpec{Partition: "h100", GRESPerNode: h100(8), TimeLimit: time.Hour})
			require.NoError(t, err)
			cyc, err := s.Schedule(now)
			require.NoError(t, err)
			for _, p := range cyc.Pending {
				if p.Job == never {
					assert.True(t, p.ExpectedStart.IsZero(), "the never-startable job has an expected start %s", p.ExpectedStart)
				}
			}

			ex, err := s.Explain(now, never, scheduler.ExplainOptions{})
			require.NoError(t, err)
			require.NotNil(t, ex.Estimate)
			assert.Equal(t, scheduler.EstimateNone, ex.Estimate.Source, "%s", ex)
			assert.Contains(t, ex.Estimate.Note, "never", "%s", ex)
			assert.Contains(t, ex.Estimate.Note, "MaxTime", "%s", ex)

			ex, err = s.Explain(now, small, scheduler.ExplainOptions{})
			require.NoError(t, err)
			require.NotNil(t, ex.Estimate)
			assert.Equal(t, free, ex.Estimate.Start, "%s", ex)
			for _, b := range ex.Blockers {
				for _, a := range b.Ahead {
					assert.NotEqual(t, never, a.Job, "the never-startable job is listed as a blocker:\n%s", ex)
				}
			}
			// And so it is.
			cyc, err = s.Schedule(free)
			require.NoError(t, err)
			var started []scheduler.JobID
			for _, st := range cyc.Starts {
				started = append(started, st.Job)
			}
			assert.Contains(t, started, small)
		})
	}
}

// Without backfill, a job whose dependency can never be satisfied gets
// no expected start, and says why.
func TestExplainNeverSatisfiedDependencyHasNoEstimate(t *testing.T) {
	cfg := clustertest.Mixed4()
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	now := clustertest.Epoch
	first, err := s.Submit(now, scheduler.JobSpec{GRESPerNode: gpus(1), TimeLimit: time.Hour})
	require.NoError(t, err)
	_, err = s.Schedule(now)
	require.NoError(t, err)
	now = now.Add(time.Minute)
	require.NoError(t, s.Finish(now, first, 1)) // failed: afterok can never hold
	dep, err := s.Submit(now, scheduler.JobSpec{GRESPerNode: gpus(1), TimeLimit: time.Hour, Dependency: "afterok:1"})
	require.NoError(t, err)
	_, err = s.Schedule(now)
	require.NoError(t, err)
	j, _ := s.Job(dep)
	require.Equal(t, policy.ReasonDependencyNeverSatisfied, j.Reason)

	ex, err := s.Explain(now, dep, scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.NotNil(t, ex.Estimate)
	assert.Equal(t, scheduler.EstimateNone, ex.Estimate.Source, "%s", ex)
	assert.True(t, ex.Estimate.Start.IsZero(), "%s", ex)
	assert.Contains(t, ex.Estimate.Note, "never", "%s", ex)
}

// resvCluster is Mixed4 with a reservation "demo" on h100-02, open now
// for 4 h for user cy, and h100-02 draining.
func resvCluster(t *testing.T) (*scheduler.Scheduler, time.Time) {
	cfg := clustertest.Mixed4()
	cfg.Backfill = &backfill.Config{Mode: backfill.Conservative, Resolution: time.Second}
	cfg.Policy = &policy.Config{}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	now := clustertest.Epoch
	ni, ok := s.Node("h100-02")
	require.True(t, ok)
	nodes := topology.NewNodeSet(len(s.Nodes()))
	nodes.Add(ni.Index)
	require.NoError(t, s.AddReservation(now, policy.Reservation{Name: "demo", Start: now, Duration: 4 * time.Hour, Nodes: nodes,
		Users: []string{"cy"}}))
	require.NoError(t, s.DrainNode(now, "h100-02", "bad fan"))
	return s, now
}

// nodeBlocker returns the explanation's nodes blocker naming node, if any.
func nodeBlocker(ex scheduler.Explanation, node string) (scheduler.Blocker, bool) {
	for _, b := range ex.Blockers {
		if b.Kind == scheduler.BlockerNodes {
			for _, n := range b.Nodes {
				if n == node {
					return b, true
				}
			}
		}
	}
	return scheduler.Blocker{}, false
}

// A job in a reservation whose only node is draining waits for that
// node: Explain names it, with its state, as a blocker.
func TestExplainReservationJobNamesItsDrainingNode(t *testing.T) {
	s, now := resvCluster(t)
	id, err := s.Submit(now, scheduler.JobSpec{User: "cy", GRESPerNode: gpus(1), TimeLimit: time.Hour, Reservation: "demo"})
	require.NoError(t, err)
	_, err = s.Schedule(now)
	require.NoError(t, err)
	ex, err := s.Explain(now, id, scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.Equal(t, scheduler.JobPending, ex.State)
	b, ok := nodeBlocker(ex, "h100-02")
	require.True(t, ok, "no blocker names the draining node:\n%s", ex)
	assert.Contains(t, b.Detail, "h100-02 drained (bad fan)", "%s", ex)
	assert.Contains(t, b.Detail, "demo", "%s", ex)
}

// A job in a reservation that also waits on a dependency lists both: the
// dependency and the draining node.
func TestExplainReservationAndDependencyJobNamesItsDrainingNode(t *testing.T) {
	s, now := resvCluster(t)
	first, err := s.Submit(now, scheduler.JobSpec{User: "cy", GRESPerNode: gpus(1), TimeLimit: time.Hour})
	require.NoError(t, err)
	_, err = s.Schedule(now)
	require.NoError(t, err)
	id, err := s.Submit(now, scheduler.JobSpec{User: "cy", GRESPerNode: gpus(1), TimeLimit: time.Hour, Reservation: "demo",
		Dependency: fmt.Sprintf("afterok:%d", first)})
	require.NoError(t, err)
	_, err = s.Schedule(now)
	require.NoError(t, err)
	ex, err := s.Explain(now, id, scheduler.ExplainOptions{})
	require.NoError(t, err)
	var dep bool
	for _, b := range ex.Blockers {
		dep = dep || b.Kind == scheduler.BlockerDependency
	}
	assert.True(t, dep, "no dependency blocker:\n%s", ex)
	_, ok := nodeBlocker(ex, "h100-02")
	assert.True(t, ok, "no blocker names the draining node:\n%s", ex)
}

// A time limit over the partition's MaxTime is one blocker, not two (the
// partition check and the policy's partition limit say the same).
func TestExplainMaxTimeViolationListedOnce(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Backfill = &backfill.Config{Mode: backfill.Conservative, Resolution: time.Second}
	cfg.Policy = &policy.Config{}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	now := clustertest.Epoch
	id, err := s.Submit(now, scheduler.JobSpec{Partition: "h100", GRESPerNode: gpus(1), TimeLimit: 6 * time.Hour})
	require.NoError(t, err)
	_, err = s.Schedule(now)
	require.NoError(t, err)
	ex, err := s.Explain(now, id, scheduler.ExplainOptions{})
	require.NoError(t, err)
	n := 0
	for _, b := range ex.Blockers {
		if b.Reason == policy.ReasonPartitionTimeLimit {
			n++
		}
	}
	assert.Equal(t, 1, n, "%s", ex)
	lines := 0
	for _, l := range strings.Split(ex.String(), "\n") {
		if strings.HasPrefix(l, "    - ") && strings.Contains(l, "MaxTime") {
			lines++
		}
	}
	assert.Equal(t, 1, lines, "%s", ex)
}

// A job with a future begin time that also waits on a dependency is not
// planned: it reports BeginTime, but it is not eligible until its
// dependency is satisfied.
func TestExplainBeginTimeAndDependencyIsNotPlanned(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Backfill = &backfill.Config{Mode: backfill.Conservative, Resolution: time.Second}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	now := clustertest.Epoch
	// Job 1 waits on a begin time far away; job 2 depends on it and
	// begins sooner.
	_, err = s.Submit(now, scheduler.JobSpec{GRESPerNode: gpus(1), TimeLimit: time.Hour, BeginTime: now.Add(10 * time.Hour)})
	require.NoError(t, err)
	dep, err := s.Submit(now, scheduler.JobSpec{GRESPerNode: gpus(1), TimeLimit: time.Hour, BeginTime: now.Add(time.Hour),
		Dependency: "afterok:1"})
	require.NoError(t, err)
	cyc, err := s.Schedule(now)
	require.NoError(t, err)
	for _, p := range cyc.Pending {
		if p.Job == dep {
			assert.Equal(t, policy.ReasonBeginTime, p.Reason)
			assert.True(t, p.ExpectedStart.IsZero(), "planned at %s before its dependency is met", p.ExpectedStart)
		}
	}
	ex, err := s.Explain(now, dep, scheduler.ExplainOptions{})
	require.NoError(t, err)
	assert.Equal(t, scheduler.EstimateNone, ex.Estimate.Source, "%s", ex)
	assert.Contains(t, ex.Estimate.Note, "dependency", "%s", ex)
}

// A job waiting on its begin time does not block its partition, but the
// main pass keeps off the nodes the plan reserved for it: a
// lower-priority job that would overlap the reservation does not start
// there when the nodes free up before the begin time, and the promised
// start holds.
func TestMainPassKeepsOffBeginTimeReservation(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Backfill = &backfill.Config{Mode: backfill.Conservative, Resolution: time.Second}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	now := clustertest.Epoch
	for _, d := range []time.Duration{time.Hour, 10 * time.Hour, 10 * time.Hour, 10 * time.Hour} {
		_, err := s.Submit(now, scheduler.JobSpec{GRESPerNode: gpus(8), TimeLimit: d})
		require.NoError(t, err)
	}
	_, err = s.Schedule(now)
	require.NoError(t, err)
	begin := now.Add(80 * time.Minute)
	first, err := s.Submit(now, scheduler.JobSpec{GRESPerNode: gpus(8), TimeLimit: 3 * time.Hour, BeginTime: begin})
	require.NoError(t, err)
	second, err := s.Submit(now, scheduler.JobSpec{GRESPerNode: gpus(4), TimeLimit: 4 * time.Hour})
	require.NoError(t, err)
	_, err = s.Schedule(now)
	require.NoError(t, err)
	ex, err := s.Explain(now, first, scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.Equal(t, begin, ex.Estimate.Start, "%s", ex)
	require.True(t, ex.Estimate.Bound, "%s", ex)

	free := now.Add(time.Hour)
	require.NoError(t, s.Finish(free, 1, 0))
	cyc, err := s.Schedule(free)
	require.NoError(t, err)
	for _, st := range cyc.Starts {
		assert.NotEqual(t, second, st.Job, "the lower-priority job took the begin-time job's reserved node")
	}
	cyc, err = s.Schedule(begin)
	require.NoError(t, err)
	var started []scheduler.JobID
	for _, st := range cyc.Starts {
		started = append(started, st.Job)
	}
	assert.Contains(t, started, first)
}
