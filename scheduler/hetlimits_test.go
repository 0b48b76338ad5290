package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// hetLimitCluster is Mixed4 (two a100 nodes of 8 GPUs in partition gpu)
// under QOS normal with MaxTRESPerUser gres/gpu=gpus, conservative
// backfill, and the license pool lic.
func hetLimitCluster(t *testing.T, gpus string, lic []scheduler.License) *scheduler.Scheduler {
	t.Helper()
	cfg := clustertest.Mixed4()
	reg, err := scheduler.NewRegistry(cfg.Nodes)
	require.NoError(t, err)
	lim, err := policy.ParseTRESLimits(reg, "gres/gpu="+gpus)
	require.NoError(t, err)
	cfg.Registry = reg
	cfg.Licenses = lic
	cfg.Backfill = &backfill.Config{Resolution: time.Second}
	cfg.Policy = &policy.Config{
		QOS:    []policy.QOS{{Name: "normal", Limits: policy.QOSLimits{MaxTRESPerUser: lim}}},
		Assocs: []policy.Assoc{{Account: "a"}, {Account: "a", User: "u"}, {Account: "a", User: "v"}},
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

// gpuJob is user u's job of n a100 GPUs on one node of partition gpu.
func gpuJob(n int64, limit time.Duration) scheduler.JobSpec {
	return scheduler.JobSpec{User: "u", Account: "a", Partition: "gpu", GRESPerNode: typed("a100", n), TimeLimit: limit}
}

// Slurm counts a heterogeneous job's components together against its
// limits: two components of 4 GPUs under MaxTRESPerUser gres/gpu=6 can
// never start, although either alone could (a plain 4-GPU job of the same
// user starts). The job is left out of the plan, each component pending
// on the limit's reason, and Explain says why.
func TestHetJobLimitSumNeverStarts(t *testing.T) {
	s := hetLimitCluster(t, "6", nil)
	ids, err := s.SubmitHet(t0, []scheduler.JobSpec{gpuJob(4, time.Hour), gpuJob(4, time.Hour)})
	require.NoError(t, err)
	cyc := mustSchedule(t, s, t0)
	assert.Empty(t, cyc.Starts)
	for _, id := range ids {
		j := mustJob(t, s, id)
		assert.Equal(t, scheduler.JobPending, j.State)
		assert.Equal(t, policy.ReasonQOSMaxGRESPerUser, j.Reason, j.Label())
		assert.True(t, j.ExpectedStart.IsZero(), "%s: no start can be promised", j.Label())
	}
	ex, err := s.Explain(t0, ids[1], scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.NotNil(t, ex.Het)
	assert.True(t, ex.Het.Never)
	assert.Contains(t, ex.Het.Limit, "gres/gpu=8")
	assert.Contains(t, ex.Het.Limit, "MaxTRESPerUser gres/gpu=6 (user u)")
	require.NotNil(t, ex.Estimate)
	assert.Contains(t, ex.Estimate.Note, "can never start")
	assert.Contains(t, ex.String(), "can never start")
	var limitBlocker bool
	for _, b := range ex.Blockers {
		limitBlocker = limitBlocker || (b.Kind == scheduler.BlockerLimit && b.Reason == policy.ReasonQOSMaxGRESPerUser)
	}
	assert.True(t, limitBlocker, "%+v", ex.Blockers)

	// Either component alone is within the limit.
	one := mustSubmit(t, s, t0, gpuJob(4, time.Hour))
	cyc = mustSchedule(t, s, t0.Add(time.Second))
	_, ok := startOf(cyc, one)
	assert.True(t, ok, "%+v", cyc)
	for _, id := range ids {
		assert.Equal(t, scheduler.JobPending, mustJob(t, s, id).State)
	}
}

// The sum within the limit, but not with what runs now: user u runs 4
// GPUs until t0+1h under gres/gpu=8, so the two 4-GPU components wait on
// the limit (QOSMaxGRESPerUser) although the nodes have room now, and are
// expected to start when that job ends. The expected start is held: a
// later 4-GPU job of u that would still run then is not started before
// them (the limit has room for it now), one that ends by then is; at
// t0+1h both components start, together.
func TestHetJobLimitSumHeldUntilRoom(t *testing.T) {
	s := hetLimitCluster(t, "8", nil)
	running := mustSubmit(t, s, t0, gpuJob(4, time.Hour))
	cyc := mustSchedule(t, s, t0)
	_, ok := startOf(cyc, running)
	require.True(t, ok)
	now := t0.Add(time.Minute)
	ids, err := s.SubmitHet(now, []scheduler.JobSpec{gpuJob(4, 2*time.Hour), gpuJob(4, 2*time.Hour)})
	require.NoError(t, err)
	long := mustSubmit(t, s, now, gpuJob(4, 2*time.Hour))
	short := mustSubmit(t, s, now, gpuJob(4, 30*time.Minute))
	cyc = mustSchedule(t, s, now)
	_, ok = startOf(cyc, short)
	assert.True(t, ok, "the short job ends before the components start: %+v", cyc)
	_, ok = startOf(cyc, long)
	assert.False(t, ok, "the long job would take the limit's room the components need at t0+1h")
	for _, id := range ids {
		j := mustJob(t, s, id)
		assert.Equal(t, scheduler.JobPending, j.State)
		assert.Equal(t, policy.ReasonQOSMaxGRESPerUser, j.Reason, j.Label())
		assert.Equal(t, t0.Add(time.Hour), j.ExpectedStart, j.Label())
	}
	ex, err := s.Explain(now, ids[0], scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.NotNil(t, ex.Het)
	assert.False(t, ex.Het.Never)
	// 4 running and the short job's 4.
	assert.Contains(t, ex.Het.Limit, "ask gres/gpu=8 with 8 in use, above MaxTRESPerUser gres/gpu=8 (user u)")
	assert.Equal(t, -1, ex.Het.Blocking, "no component waits for nodes: the limit holds the job")
	require.NotNil(t, ex.Estimate)
	assert.Equal(t, t0.Add(time.Hour), ex.Estimate.Start)
	assert.Contains(t, ex.Estimate.Limit, "MaxTRESPerUser gres/gpu=8")

	require.NoError(t, s.Finish(now.Add(30*time.Minute), short, 0))
	mustSchedule(t, s, now.Add(30*time.Minute))
	require.NoError(t, s.Finish(t0.Add(time.Hour), running, 0))
	cyc = mustSchedule(t, s, t0.Add(time.Hour))
	for _, id := range ids {
		_, ok := startOf(cyc, id)
		assert.True(t, ok, "component %d starts at its expected start: %+v", id, cyc)
	}
	_, ok = startOf(cyc, long)
	assert.False(t, ok, "the components hold the limit now")
	assert.Equal(t, policy.ReasonQOSMaxGRESPerUser, mustJob(t, s, long).Reason)
}

// Licenses are counted for the whole job too: components asking 2 of a
// pool of 3 never start together; in a pool of 4 with a running job
// holding 2 until t0+1h, they are expected then and start then.
func TestHetJobLicensesSummed(t *testing.T) {
	withLic := func(n int64, limit time.Duration) scheduler.JobSpec {
		sp := gpuJob(n, limit)
		sp.Licenses = []scheduler.License{{Name: "matlab", Count: 2}}
		return sp
	}
	s := hetLimitCluster(t, "64", []scheduler.License{{Name: "matlab", Count: 3}})
	ids, err := s.SubmitHet(t0, []scheduler.JobSpec{withLic(1, time.Hour), withLic(1, time.Hour)})
	require.NoError(t, err)
	cyc := mustSchedule(t, s, t0)
	assert.Empty(t, cyc.Starts)
	for _, id := range ids {
		j := mustJob(t, s, id)
		assert.Equal(t, policy.ReasonLicenses, j.Reason, j.Label())
		assert.True(t, j.ExpectedStart.IsZero())
	}
	ex, err := s.Explain(t0, ids[0], scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.NotNil(t, ex.Het)
	assert.True(t, ex.Het.Never)
	assert.Contains(t, ex.Het.Limit, "license/matlab=4")

	s = hetLimitCluster(t, "64", []scheduler.License{{Name: "matlab", Count: 4}})
	holder := mustSubmit(t, s, t0, withLic(1, time.Hour))
	mustSchedule(t, s, t0)
	now := t0.Add(time.Minute)
	ids, err = s.SubmitHet(now, []scheduler.JobSpec{withLic(1, time.Hour), withLic(1, time.Hour)})
	require.NoError(t, err)
	cyc = mustSchedule(t, s, now)
	assert.Empty(t, cyc.Starts, "2 held + 4 asked > 4")
	for _, id := range ids {
		j := mustJob(t, s, id)
		assert.Equal(t, policy.ReasonLicenses, j.Reason, j.Label())
		assert.Equal(t, t0.Add(time.Hour), j.ExpectedStart, j.Label())
	}
	require.NoError(t, s.Finish(t0.Add(time.Hour), holder, 0))
	cyc = mustSchedule(t, s, t0.Add(time.Hour))
	for _, id := range ids {
		_, ok := startOf(cyc, id)
		assert.True(t, ok, "%+v", cyc)
	}
}

// TestHetJobLimitPlanIsAnUpperBound replays random workloads of plain and
// heterogeneous jobs on limitCluster (per-user CPU and job limits, a QOS
// CPU limit, account and association job limits) to the end, every job
// running exactly its time limit, under conservative backfill: every
// job — each component of a heterogeneous one — starts no later than the
// first expected start it was given, the components of a job start
// together, and a heterogeneous job whose components together exceed a
// limit with nothing else running (above MaxTRESPerUser cpu=8, or three
// components, three jobs above MaxJobsPerUser=2) never starts, gets no
// expected start, and Explain says why. Under EASY, where only the first
// waiting job holds a reservation, no job starts later than one it held.
func TestHetJobLimitPlanIsAnUpperBound(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 8
	}
	for _, mode := range []backfill.Mode{backfill.Conservative, backfill.EASY} {
		t.Run(mode.String(), func(t *testing.T) {
			hets, summed, held := 0, 0, 0
			for seed := range uint64(seeds) {
				h, n, r := runHetLimitPlan(t, seed, mode)
				hets, summed, held = hets+h, summed+n, held+r
			}
			require.Positive(t, hets, "some heterogeneous jobs ran")
			if mode == backfill.EASY {
				require.Positive(t, held, "some jobs held the reservation")
			}
			require.Positive(t, summed, "some never could, by their sum alone")
		})
	}
}

// runHetLimitPlan replays one workload (see
// TestHetJobLimitPlanIsAnUpperBound); under EASY, where only the first
// waiting job is promised its start, every job starts no later than the
// reservations it held as that job.
func runHetLimitPlan(t *testing.T, seed uint64, mode backfill.Mode) (hets, never, reserved int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 41))
	s := limitCluster(t, mode)
	users := []struct{ user, account string }{{"ann", "physics"}, {"bob", "physics"}, {"cy", "bio"}}
	type arrival struct {
		at    time.Time
		specs []scheduler.JobSpec
	}
	now := clustertest.Epoch.Add(17 * time.Second)
	var arrivals []arrival
	at := now
	for range 15 + rng.IntN(10) {
		at = at.Add(time.Duration(rng.IntN(900)) * time.Second)
		u := users[rng.IntN(len(users))]
		spec := func() scheduler.JobSpec {
			return scheduler.JobSpec{User: u.user, Account: u.account, Partition: "batch", CPUsPerTask: 1 + rng.IntN(6),
				Nodes: 1, TimeLimit: time.Duration(60+rng.IntN(7200)) * time.Second}
		}
		a := arrival{at: at, specs: []scheduler.JobSpec{spec()}}
		for k := rng.IntN(5); k > 0 && len(a.specs) < 3; k -= 2 {
			a.specs = append(a.specs, spec())
		}
		arrivals = append(arrivals, a)
	}
	r := newLimitReplay(t, s, now)
	first := map[scheduler.JobID]time.Time{}
	started, pending := r.started, r.pending
	nevers := map[scheduler.JobID]bool{}
	group := map[scheduler.JobID][]scheduler.JobID{}
	resv := map[scheduler.JobID][]time.Time{} // EASY: reservations held
	for guard := 0; guard < 5000; guard++ {
		now := r.now
		r.finishDue()
		for len(arrivals) > 0 && !arrivals[0].at.After(now) {
			a := arrivals[0]
			arrivals = arrivals[1:]
			if len(a.specs) == 1 {
				pending[mustSubmit(t, s, now, a.specs[0])] = true
				continue
			}
			ids, err := s.SubmitHet(now, a.specs)
			require.NoError(t, err)
			cpus := 0
			for _, sp := range a.specs {
				cpus += sp.CPUsPerTask
			}
			for _, id := range ids {
				pending[id] = true
				group[id] = ids
				nevers[id] = cpus > 8 || len(ids) > 2
			}
		}
		cyc := r.cycle()
		soon := r.soon
		firstWaiting := scheduler.JobID(0)
		for _, p := range cyc.Pending {
			where := fmt.Sprintf("seed %d at %v: job %d (%v)", seed, now.Sub(clustertest.Epoch), p.Job, p.Reason)
			if nevers[p.Job] {
				require.True(t, p.ExpectedStart.IsZero(), "%s: never startable, but expected at %v", where, p.ExpectedStart)
				require.True(t, p.Reason.IsLimit(), where)
				ex, err := s.Explain(now, p.Job, scheduler.ExplainOptions{})
				require.NoError(t, err)
				require.Contains(t, ex.String(), "can never start", where)
				continue
			}
			if mode == backfill.EASY {
				if p.ExpectedStart.IsZero() {
					continue
				}
				if g := group[p.Job]; firstWaiting == 0 || (g != nil && group[firstWaiting] != nil && g[0] == group[firstWaiting][0]) {
					firstWaiting = p.Job // the reserved job: each of its components
					resv[p.Job] = append(resv[p.Job], p.ExpectedStart)
				}
				soon(p.ExpectedStart)
				continue
			}
			require.False(t, p.ExpectedStart.IsZero(), "%s: no expected start under conservative backfill", where)
			if _, ok := first[p.Job]; !ok {
				first[p.Job] = p.ExpectedStart
			}
			soon(p.ExpectedStart)
		}
		var arrival time.Time
		if len(arrivals) > 0 {
			arrival = arrivals[0].at
		}
		if !r.advance(arrival) {
			break
		}
	}
	for id := range pending {
		require.True(t, nevers[id], "seed %d: job %d never ran", seed, id)
	}
	for id := range nevers {
		if nevers[id] && id == group[id][0] {
			never++
		}
	}
	for id, st := range started {
		require.False(t, nevers[id], "seed %d: job %d above its limits together started", seed, id)
		if f, ok := first[id]; ok {
			require.False(t, st.After(f), "seed %d: job %d started at %v, after its first expected start %v", seed, id, st, f)
		}
		for _, r := range resv[id] {
			require.False(t, st.After(r), "seed %d EASY: job %d started at %v, after its reservation %v", seed, id, st, r)
		}
		if g := group[id]; g != nil {
			for _, c := range g {
				require.Equal(t, st, started[c], "seed %d: job %d's components start together", seed, id)
			}
			if id == g[0] {
				hets++
			}
		}
	}
	return hets, never, len(resv)
}
