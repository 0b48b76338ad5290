package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// TestExplainIndirectOvertaker is the traced break of a promise (seed 67
// of the shared variant, job 17 of EASY at 200 seeds), made small: job x
// (gpu:h100:8, waiting on a dependency) cannot use the explained job j's
// a100 nodes, but once released it takes an h100 node that job y (gpu:8
// on 2 nodes, ahead of j) was planned on, and y moves onto j's nodes. The
// plan promised j +2h; it starts later. Explain must label j's start an
// estimate and name x as an indirect overtaker, under EASY (with two
// reservations, so that j holds one) and under conservative backfill.
func TestExplainIndirectOvertaker(t *testing.T) {
	for _, cfgB := range []backfill.Config{
		{Mode: backfill.EASY, Reservations: 2, Resolution: time.Second},
		{Mode: backfill.Conservative, Resolution: time.Second},
	} {
		t.Run(cfgB.Mode.String(), func(t *testing.T) {
			cfg := clustertest.Mixed4()
			cfg.Backfill = &cfgB
			s, err := scheduler.New(cfg)
			require.NoError(t, err)
			t0 := clustertest.Epoch
			gpus := func(typ string, n int, limit time.Duration) scheduler.JobSpec {
				return scheduler.JobSpec{Nodes: n, TimeLimit: limit,
					GRESPerNode: []gres.Request{{Name: "gpu", Type: typ, Count: 8}}}
			}
			r1 := mustSubmit(t, s, t0, gpus("h100", 2, time.Hour))
			r2 := mustSubmit(t, s, t0, gpus("a100", 2, 2*time.Hour))
			mustSchedule(t, s, t0)
			xs := gpus("h100", 1, 4*time.Hour)
			xs.Dependency = fmt.Sprintf("afterany:%d", r1)
			x := mustSubmit(t, s, t0, xs)
			y := mustSubmit(t, s, t0, gpus("", 2, 3*time.Hour))
			j := mustSubmit(t, s, t0, gpus("a100", 2, time.Hour))
			mustSchedule(t, s, t0)

			ex, err := s.Explain(t0, j, scheduler.ExplainOptions{})
			require.NoError(t, err)
			est := ex.Estimate
			require.Equal(t, t0.Add(2*time.Hour), est.Start, "j planned when r2 ends (y takes the h100 nodes at +1h)")
			assert.False(t, est.Bound, "x may displace y onto j's nodes: no promise")
			require.Len(t, est.Overtakers, 1)
			assert.Equal(t, scheduler.Overtaker{Job: x, Reason: policy.ReasonDependency, Indirect: true}, est.Overtakers[0])
			assert.Contains(t, ex.String(), fmt.Sprintf("%d (Dependency, through a job ahead)", x))

			// y itself: x is ahead of it and can use its nodes, a direct
			// overtaker.
			exy, err := s.Explain(t0, y, scheduler.ExplainOptions{})
			require.NoError(t, err)
			require.Len(t, exy.Estimate.Overtakers, 1)
			assert.False(t, exy.Estimate.Overtakers[0].Indirect)

			// The break the label guards against: under exact run times j
			// does not start at +2h.
			for _, step := range []struct {
				at  time.Duration
				end scheduler.JobID
			}{{time.Hour, r1}, {2 * time.Hour, r2}} {
				now := t0.Add(step.at)
				require.NoError(t, s.Finish(now, step.end, 0))
				mustSchedule(t, s, now)
			}
			for _, info := range s.Jobs() {
				if info.ID == j {
					assert.Equal(t, scheduler.JobPending, info.State, "j started at its old promise: the scenario no longer shows the break")
				}
			}
		})
	}
}

// TestExplainOvertakerBehindUnreserved: under EASY, a job ahead of the
// explained job j planned later without a reservation (QOS NoReserve)
// leaves room a released job behind j may take; replanned ahead of j, the
// job without a reservation may then take j's nodes. Explain must name
// the job behind j, waiting on a dependency, as an indirect overtaker,
// and no job ahead of j or j itself.
func TestExplainOvertakerBehindUnreserved(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Backfill = &backfill.Config{Mode: backfill.EASY, Reservations: 2, Resolution: time.Second}
	cfg.Policy = &policy.Config{QOS: []policy.QOS{{Name: "normal"}, {Name: "standby", Flags: policy.QOSNoReserve}}}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	t0 := clustertest.Epoch
	gpus := func(typ string, n int, limit time.Duration) scheduler.JobSpec {
		return scheduler.JobSpec{Nodes: n, TimeLimit: limit,
			GRESPerNode: []gres.Request{{Name: "gpu", Type: typ, Count: 8}}}
	}
	r1 := mustSubmit(t, s, t0, gpus("h100", 2, time.Hour))
	mustSubmit(t, s, t0, gpus("a100", 2, 2*time.Hour))
	mustSchedule(t, s, t0)
	as := gpus("h100", 2, time.Hour)
	as.QOS = "standby"
	a := mustSubmit(t, s, t0, as)
	j := mustSubmit(t, s, t0, gpus("a100", 2, time.Hour))
	bs := gpus("", 1, time.Hour)
	bs.Dependency = fmt.Sprintf("afterany:%d", r1)
	b := mustSubmit(t, s, t0, bs)
	mustSchedule(t, s, t0)

	ex, err := s.Explain(t0, j, scheduler.ExplainOptions{})
	require.NoError(t, err)
	est := ex.Estimate
	require.Equal(t, t0.Add(2*time.Hour), est.Start, "j planned when the a100 job ends")
	assert.False(t, est.Bound, "b may take a's room, and a j's nodes: no promise")
	require.Len(t, est.Overtakers, 1, "overtakers %v (a is %d)", est.Overtakers, a)
	assert.Equal(t, scheduler.Overtaker{Job: b, Reason: policy.ReasonDependency, Indirect: true}, est.Overtakers[0])
}
