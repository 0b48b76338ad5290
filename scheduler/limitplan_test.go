package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// limitCluster is three 16-CPU nodes under a policy with concurrent
// limits: QOS normal allows each user 8 CPUs and 2 running jobs, and the
// QOS 24 CPUs in all; account physics 3 running jobs; user cy's
// association 1.
func limitCluster(t *testing.T, mode backfill.Mode) *scheduler.Scheduler {
	t.Helper()
	var nodes []scheduler.NodeConfig
	for i := range 3 {
		nodes = append(nodes, scheduler.NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 16, MemoryMiB: 64 * 1024})
	}
	reg, err := scheduler.NewRegistry(nodes)
	require.NoError(t, err)
	lim := func(s string) policy.TRESLimits {
		l, err := policy.ParseTRESLimits(reg, s)
		require.NoError(t, err)
		return l
	}
	two, three, one := 2, 3, 1
	s, err := scheduler.New(scheduler.Config{
		Nodes: nodes, Registry: reg,
		Partitions: []scheduler.PartitionConfig{{Name: "batch", MaxTime: 24 * time.Hour}},
		Backfill:   &backfill.Config{Mode: mode, Resolution: time.Second},
		Policy: &policy.Config{
			QOS: []policy.QOS{{Name: "normal", Limits: policy.QOSLimits{MaxTRESPerUser: lim("cpu=8"),
				MaxJobsPerUser: &two, Limits: policy.Limits{GrpTRES: lim("cpu=24")}}}},
			Assocs: []policy.Assoc{
				{Account: "physics", Limits: policy.AssocLimits{Limits: policy.Limits{GrpJobs: &three}}},
				{Account: "bio"},
				{Account: "physics", User: "ann"}, {Account: "physics", User: "bob"},
				{Account: "bio", User: "cy", Limits: policy.AssocLimits{MaxJobs: &one}},
			},
		},
	})
	require.NoError(t, err)
	return s
}

// TestLimitPlanExpectedStartIsAnUpperBound replays random workloads to the
// end, every job running exactly its time limit, on a cluster whose jobs
// are held by per-user, per-account, QOS and association limits as much as
// by nodes: under conservative backfill every job starts no later than the
// first expected start it was given, and every job that does not start at
// once is given one; under EASY no job starts later than the reservation
// it held as the first job waiting. Jobs above a limit outright never
// start and get no expected start.
func TestLimitPlanExpectedStartIsAnUpperBound(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	for _, mode := range []backfill.Mode{backfill.Conservative, backfill.EASY} {
		t.Run(mode.String(), func(t *testing.T) {
			held, exact := 0, 0
			for seed := range uint64(seeds) {
				h, e := runLimitPlan(t, seed, mode)
				held, exact = held+h, exact+e
			}
			require.Positive(t, held, "some jobs were held by a limit")
			if mode == backfill.Conservative {
				require.Positive(t, exact, "some jobs started exactly at their first estimate")
			}
			t.Logf("%d limit-held jobs, %d started exactly at their first estimate", held, exact)
		})
	}
}

// limitReplay steps a random workload through a scheduler for the limit
// plan tests: the jobs whose time limit is up finish, each cycle's starts
// are recorded, and time moves on to the earliest next event.
type limitReplay struct {
	t         *testing.T
	s         *scheduler.Scheduler
	now, next time.Time
	started   map[scheduler.JobID]time.Time // actual start
	ends      map[scheduler.JobID]time.Time // of the running jobs
	pending   map[scheduler.JobID]bool
}

func newLimitReplay(t *testing.T, s *scheduler.Scheduler, now time.Time) *limitReplay {
	return &limitReplay{t: t, s: s, now: now, started: map[scheduler.JobID]time.Time{},
		ends: map[scheduler.JobID]time.Time{}, pending: map[scheduler.JobID]bool{}}
}

// finishDue finishes every running job whose time limit is up.
func (r *limitReplay) finishDue() {
	for id, end := range r.ends {
		if !end.After(r.now) {
			require.NoError(r.t, r.s.Finish(r.now, id, 0))
			delete(r.ends, id)
		}
	}
}

// cycle runs a scheduling cycle at now and records its starts.
func (r *limitReplay) cycle() scheduler.Cycle {
	cyc := mustSchedule(r.t, r.s, r.now)
	for _, st := range cyc.Starts {
		j, _ := r.s.Job(st.Job)
		r.started[st.Job] = r.now
		r.ends[st.Job] = r.now.Add(j.TimeLimit)
		delete(r.pending, st.Job)
	}
	r.next = time.Time{}
	return cyc
}

// soon makes x the next event when it is after now and before the
// earliest so far.
func (r *limitReplay) soon(x time.Time) {
	if x.After(r.now) && (r.next.IsZero() || x.Before(r.next)) {
		r.next = x
	}
}

// advance moves now on to the next event: the earliest of those soon was
// given, the running jobs' ends and arrival (zero: none); false when
// there is none.
func (r *limitReplay) advance(arrival time.Time) bool {
	for _, e := range r.ends {
		r.soon(e)
	}
	r.soon(arrival)
	if r.next.IsZero() {
		return false
	}
	r.now = r.next
	return true
}

func runLimitPlan(t *testing.T, seed uint64, mode backfill.Mode) (held, exact int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 19))
	s := limitCluster(t, mode)
	users := []struct{ user, account string }{{"ann", "physics"}, {"bob", "physics"}, {"cy", "bio"}}
	type arrival struct {
		at   time.Time
		spec scheduler.JobSpec
	}
	now := clustertest.Epoch.Add(17 * time.Second)
	var arrivals []arrival
	at := now
	for range 20 + rng.IntN(15) {
		at = at.Add(time.Duration(rng.IntN(900)) * time.Second)
		u := users[rng.IntN(len(users))]
		spec := scheduler.JobSpec{User: u.user, Account: u.account, Partition: "batch", CPUsPerTask: 1 + rng.IntN(8),
			Nodes: 1, TimeLimit: time.Duration(60+rng.IntN(7200)) * time.Second}
		if rng.IntN(12) == 0 {
			spec.CPUsPerTask = 12 // above MaxTRESPerUser cpu=8: never
		}
		arrivals = append(arrivals, arrival{at, spec})
	}
	r := newLimitReplay(t, s, now)
	first := map[scheduler.JobID]time.Time{} // first expected start given
	started, pending := r.started, r.pending
	resv := map[scheduler.JobID][]time.Time{} // EASY: reservations held
	never := map[scheduler.JobID]bool{}
	for guard := 0; guard < 5000; guard++ {
		now := r.now
		r.finishDue()
		for len(arrivals) > 0 && !arrivals[0].at.After(now) {
			id := mustSubmit(t, s, now, arrivals[0].spec)
			pending[id] = true
			if arrivals[0].spec.CPUsPerTask > 8 {
				never[id] = true
			}
			arrivals = arrivals[1:]
		}
		cyc := r.cycle()
		soon := r.soon
		firstWaiting := true
		for _, p := range cyc.Pending {
			where := fmt.Sprintf("seed %d %v at %v: job %d (%v)", seed, mode, now.Sub(clustertest.Epoch), p.Job, p.Reason)
			if never[p.Job] {
				require.True(t, p.ExpectedStart.IsZero(), "%s: never startable, but expected at %v", where, p.ExpectedStart)
				ex, err := s.Explain(now, p.Job, scheduler.ExplainOptions{})
				require.NoError(t, err)
				require.Contains(t, ex.String(), "can never start", where)
				continue
			}
			if p.ExpectedStart.IsZero() {
				require.NotEqual(t, backfill.Conservative, mode, "%s: no expected start under conservative backfill", where)
				continue
			}
			if _, ok := first[p.Job]; !ok {
				first[p.Job] = p.ExpectedStart
			}
			if mode == backfill.EASY && firstWaiting {
				resv[p.Job] = append(resv[p.Job], p.ExpectedStart)
			}
			firstWaiting = false
			if strings.Contains(p.Reason.String(), "Limit") || strings.Contains(p.Reason.String(), "Max") || strings.Contains(p.Reason.String(), "Grp") {
				held++
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
		require.True(t, never[id], "seed %d: job %d never ran", seed, id)
	}
	for id, st := range started {
		require.False(t, never[id], "seed %d: job %d above its limit started", seed, id)
		if f, ok := first[id]; ok {
			if mode == backfill.Conservative {
				require.False(t, st.After(f), "seed %d: job %d started at %v, after its first expected start %v", seed, id, st, f)
				if st.Equal(f) {
					exact++
				}
			}
		}
		for _, r := range resv[id] {
			require.False(t, st.After(r), "seed %d EASY: job %d started at %v, after its reservation %v", seed, id, st, r)
		}
	}
	return held, exact
}
