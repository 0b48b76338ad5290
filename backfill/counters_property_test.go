package backfill

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ctrSpec is a simulated counter: its capacity, and per job the amount.
type ctrSpec struct {
	capacity int64
}

// ctrWorkload is simWorkload with limits: each job belongs to one of three
// users in two accounts, and counts against its user's job limit, its
// user's CPU limit, its account's job limit, a group (QOS) CPU limit, and
// some take licenses of a cluster-wide pool. Every amount is within its
// bound, so every job can run.
func ctrWorkload(rng *rand.Rand, res int64) ([]NodeState, []simJob, []ctrSpec) {
	nodes, jobs := simWorkload(rng, res)
	// Counters: 0-2 user jobs, 3-5 user CPUs, 6-7 account jobs, 8 group
	// CPUs, 9 licenses.
	specs := make([]ctrSpec, 10)
	for u := range 3 {
		specs[u] = ctrSpec{int64(1 + rng.IntN(2))}
		specs[3+u] = ctrSpec{int64(4 + rng.IntN(8))}
	}
	specs[6], specs[7] = ctrSpec{int64(1 + rng.IntN(3))}, ctrSpec{int64(1 + rng.IntN(3))}
	specs[8] = ctrSpec{int64(8 + rng.IntN(16))}
	specs[9] = ctrSpec{int64(1 + rng.IntN(4))}
	for x := range jobs {
		j := &jobs[x].Job
		u := rng.IntN(3)
		cpus := int64(j.Nodes) * j.PerNode[0]
		if rng.IntN(4) == 0 {
			j.Uses = append(j.Uses, Use{Counter: CounterID(u), Amount: 1})
		}
		if rng.IntN(3) == 0 && cpus <= specs[3+u].capacity {
			j.Uses = append(j.Uses, Use{Counter: CounterID(3 + u), Amount: cpus})
		}
		if rng.IntN(3) == 0 {
			j.Uses = append(j.Uses, Use{Counter: CounterID(6 + u%2), Amount: 1})
		}
		if rng.IntN(3) == 0 && cpus <= specs[8].capacity {
			j.Uses = append(j.Uses, Use{Counter: 8, Amount: cpus})
		}
		if rng.IntN(3) == 0 {
			j.Uses = append(j.Uses, Use{Counter: 9, Amount: 1 + rng.Int64N(specs[9].capacity)})
		}
	}
	return nodes, jobs, specs
}

// simulateCounters is simulate with counters: each cycle builds the
// counter set from the running jobs (in use now, released at their ends)
// as a scheduler does, plans, and starts what the plan says; every job
// runs exactly its time limit. It checks that no counter is ever over its
// capacity in the simulated cluster.
func simulateCounters(t *testing.T, cfg Config, nodes []NodeState, jobs []simJob, specs []ctrSpec) (actual map[JobID]int64, given map[JobID][]givenResv, first map[JobID]int64) {
	t.Helper()
	pl, err := NewPlanner(cfg)
	require.NoError(t, err)
	base := int64(1_750_000_000/3600*3600 + 17)
	actual, given, first = map[JobID]int64{}, map[JobID][]givenResv{}, map[JobID]int64{}
	type ran struct {
		simRun
		uses []Use
	}
	var running []ran
	var pending []simJob
	submitted := 0
	sorted := slices.Clone(jobs)
	slices.SortFunc(sorted, func(a, b simJob) int { return cmp.Or(cmp.Compare(a.submit, b.submit), cmp.Compare(a.ID, b.ID)) })
	now := sorted[0].submit
	for guard := 0; guard < 10_000; guard++ {
		running = slices.DeleteFunc(running, func(r ran) bool { return r.end <= now })
		for ; submitted < len(sorted) && sorted[submitted].submit <= now; submitted++ {
			pending = append(pending, sorted[submitted])
		}
		next := int64(posInf)
		if len(pending) > 0 {
			rs := make([]Running, len(running))
			inUse := make([]int64, len(specs))
			for x, r := range running {
				rs[x] = Running{ID: r.id, End: time.Unix(base+r.end, 0), Allocs: r.allocs}
				for _, u := range r.uses {
					inUse[u.Counter] += u.Amount
				}
			}
			for c, sp := range specs {
				require.LessOrEqual(t, inUse[c], sp.capacity, "counter %d over its capacity", c)
			}
			prof, err := pl.NewProfile(time.Unix(base+now, 0), nodes, rs)
			require.NoError(t, err)
			ctr := NewCounters()
			for c, sp := range specs {
				id, err := ctr.Add(sp.capacity, inUse[c])
				require.NoError(t, err)
				require.Equal(t, CounterID(c), id)
			}
			for _, r := range running {
				for _, u := range r.uses {
					require.NoError(t, ctr.Release(u.Counter, u.Amount, time.Unix(base+r.end, 0)))
				}
			}
			prof.SetCounters(ctr)
			in := make([]Job, len(pending))
			for x := range pending {
				in[x] = pending[x].Job
			}
			plan, err := pl.Plan(prof, in)
			require.NoError(t, err)
			var still []simJob
			for x, e := range plan.Entries {
				j := pending[x]
				switch e.Status {
				case StatusStart:
					allocs := jobAllocs(e.Nodes, j.PerNode, j.Exclusive, capacities(nodes))
					running = append(running, ran{simRun{id: j.ID, end: now + int64(e.TimeLimit/time.Second), allocs: allocs}, j.Uses})
					actual[j.ID] = now
					if _, ok := first[j.ID]; !ok {
						first[j.ID] = now
					}
					continue
				case StatusReserved:
					s := e.Start.Unix() - base
					given[j.ID] = append(given[j.ID], givenResv{at: now, start: s})
					if _, ok := first[j.ID]; !ok {
						first[j.ID] = s
					}
					next = min(next, s)
				case StatusEstimated:
					next = min(next, e.Start.Unix()-base)
				case StatusNeverFits:
					t.Fatalf("job %d never fits (%v), but every amount is within its bound", j.ID, e.Reason)
				}
				still = append(still, j)
			}
			pending = still
			rr := make([]simRun, len(running))
			for x := range running {
				rr[x] = running[x].simRun
			}
			checkActualUsage(t, nodes, rr)
		}
		for _, r := range running {
			next = min(next, r.end)
		}
		if submitted < len(sorted) {
			next = min(next, sorted[submitted].submit)
		}
		if next >= posInf {
			break
		}
		require.Greater(t, next, now)
		now = next
	}
	require.Empty(t, pending, "every job ran")
	return actual, given, first
}

// TestCounterGuarantee is TestBackfillGuarantee with limits and licenses:
// over random workloads whose jobs count against per-user, per-account
// and group limits and a license pool, with every job running exactly its
// time limit, under conservative backfill (1 s grid) no job starts later
// than the first start it was given, and under EASY no job starts later
// than a reservation it held. No counter is ever over its capacity.
func TestCounterGuarantee(t *testing.T) {
	iters := 800
	if testing.Short() {
		iters = 150
	}
	cfgs := []Config{
		{Window: 30 * 24 * time.Hour, Resolution: time.Second},
		{Mode: EASY, Window: 30 * 24 * time.Hour},
		{Mode: EASY, Reservations: 2, Window: 30 * 24 * time.Hour, Resolution: time.Second},
	}
	exact, delayed := 0, 0
	for seed := range iters {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		cfg := cfgs[seed%len(cfgs)]
		res := int64(cfg.withDefaults().Resolution / time.Second)
		if res == 1 {
			res = 1 + rng.Int64N(90)
		}
		nodes, jobs, specs := ctrWorkload(rng, res)
		if len(jobs) == 0 {
			continue
		}
		actual, given, first := simulateCounters(t, cfg, nodes, jobs, specs)
		for _, j := range jobs {
			a := actual[j.ID]
			if cfg.Mode == Conservative {
				f, ok := first[j.ID]
				require.True(t, ok, "seed %d: job %d got a start time when first planned", seed, j.ID)
				require.LessOrEqual(t, a, f, "seed %d: job %d started after the first start it was given", seed, j.ID)
				if a == f {
					exact++
				}
			}
			for _, g := range given[j.ID] {
				require.LessOrEqual(t, a, g.start, "seed %d %v: job %d started after its reservation (given at %d)", seed, cfg.Mode, j.ID, g.at)
			}
			if len(j.Uses) > 0 && a > j.submit {
				delayed++
			}
		}
	}
	require.Positive(t, exact)
	require.Positive(t, delayed, "some limited jobs waited")
	t.Logf("%d conservative starts exactly at their first estimate; %d limited jobs waited", exact, delayed)
}
