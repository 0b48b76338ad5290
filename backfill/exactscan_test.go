package backfill

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
	"github.com/stretchr/testify/require"
)

// The tests in this file check that the per-slot summaries (see summary)
// never change a decision: on clusters of several summary blocks, with
// running jobs, begin times and blocks at arbitrary seconds, the planner
// decides exactly as a plain exact scan of the nodes' timelines does.

// largeSetup builds a random cluster of 65–200 nodes (two to four summary
// blocks) with CPUs, memory and GPUs, running jobs that end at arbitrary
// seconds (some never), and a few blocks, at an origin with arbitrary
// seconds.
func largeSetup(t *testing.T, rng *rand.Rand, res time.Duration) *Profile {
	t.Helper()
	n := 65 + rng.IntN(136)
	now := time.Unix(1_700_000_000+rng.Int64N(7200), 0)
	nodes := make([]NodeState, n)
	for i := range nodes {
		c := make(gres.Vector, 3)
		c[0] = []int64{16, 32, 64}[rng.IntN(3)]
		c[1] = []int64{64, 128}[rng.IntN(2)]
		c[2] = []int64{0, 4, 8}[rng.IntN(3)]
		nodes[i].Capacity = c
	}
	used := make([]gres.Vector, n)
	for i := range used {
		used[i] = make(gres.Vector, 3)
	}
	var running []Running
	for id := JobID(1); id <= JobID(3*n); id++ {
		k := 1
		if rng.IntN(10) == 0 {
			k = 1 + rng.IntN(6)
		}
		var allocs []Alloc
		for range k {
			i := rng.IntN(n)
			if slices.ContainsFunc(allocs, func(al Alloc) bool { return al.Node == i }) {
				continue
			}
			u := make(gres.Vector, 3)
			for j := range u {
				if room := nodes[i].Capacity[j] - used[i][j]; room > 0 {
					u[j] = rng.Int64N(room/2 + 1)
				}
			}
			if rng.IntN(12) == 0 { // the whole rest of the node
				for j := range u {
					u[j] = nodes[i].Capacity[j] - used[i][j]
				}
			}
			for j := range u {
				used[i][j] += u[j]
			}
			allocs = append(allocs, Alloc{Node: i, Use: u})
		}
		end := now.Add(time.Duration(1+rng.Int64N(8*3600)) * time.Second)
		if rng.IntN(40) == 0 {
			end = time.Time{}
		}
		running = append(running, Running{ID: id, End: end, Allocs: allocs})
	}
	p, err := NewProfile(now, nodes, running, ProfileOptions{Resolution: res})
	require.NoError(t, err)
	for b := range rng.IntN(4) {
		s := now.Add(time.Duration(rng.Int64N(6*3600)) * time.Second)
		e := s.Add(time.Duration(1+rng.Int64N(3*3600)) * time.Second)
		var ns []int
		for i := range n {
			if rng.IntN(8) == 0 {
				ns = append(ns, i)
			}
		}
		if len(ns) > 0 {
			require.NoError(t, p.Block(JobID(900_000+b), s, e, ns))
		}
	}
	return p
}

// largeJobs draws a queue of jobs with time limits and begin times at
// arbitrary seconds.
func largeJobs(rng *rand.Rand, p *Profile, count int) []Job {
	jobs := make([]Job, count)
	for x := range jobs {
		j := Job{ID: JobID(1_000_000 + x), Nodes: 1, PerNode: gres.Vector{int64(1 + rng.IntN(16)), int64(rng.IntN(32)), 0},
			TimeLimit: time.Duration(1+rng.Int64N(6*3600)) * time.Second, Priority: float64(count - x),
			User: fmt.Sprint("u", rng.IntN(3)), Partition: fmt.Sprint("p", rng.IntN(2))}
		if rng.IntN(3) == 0 {
			j.PerNode[2] = int64(1 + rng.IntN(4))
		}
		if rng.IntN(4) == 0 {
			j.Nodes = 1 + rng.IntN(12)
		}
		if rng.IntN(5) == 0 {
			j.Exclusive = true
		}
		if rng.IntN(2) == 0 {
			j.Allowed = topology.NewNodeSet(p.NumNodes())
			lo := rng.IntN(p.NumNodes())
			for i := range p.NumNodes() {
				if i >= lo || rng.IntN(3) == 0 {
					j.Allowed.Add(i)
				}
			}
		}
		if rng.IntN(4) == 0 {
			j.Earliest = p.Now().Add(time.Duration(rng.Int64N(4*3600)) * time.Second)
		}
		jobs[x] = j
	}
	return jobs
}

// exactEarliest is a plain exact scan: at the earliest start and at every
// later time some node's timeline changes, up to latest, the nodes that
// hold the request over the whole interval it would book (exact for a
// start at the origin, else its end rounded up to the grid), by reading
// every allowed node's timeline; the lowest n of them at the first time
// there are n.
func exactEarliest(t *testing.T, p *Profile, j *Job, latest int64) (int64, []int, bool) {
	t.Helper()
	a := p.a
	req := make([]int64, a)
	ok, err := p.project(j.PerNode, req)
	require.NoError(t, err)
	require.True(t, ok)
	t0 := p.origin
	if !j.Earliest.IsZero() {
		t0 = max(t0, j.Earliest.Unix())
	}
	times := []int64{t0}
	for i := range p.n {
		for _, tt := range p.tls[i].times {
			if tt > t0 {
				times = append(times, tt)
			}
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	d := int64(j.TimeLimit / time.Second)
	res := int64(p.Resolution() / time.Second)
	for _, st := range times {
		if st > latest {
			break
		}
		end := st + d
		if st > p.origin {
			end = ceilTo(end, res)
		}
		var feas []int
		for i := range p.n {
			if j.Allowed.Len() > 0 && !j.Allowed.Has(i) {
				continue
			}
			capI := p.caps[i*a : (i+1)*a]
			tl := p.tls[i]
			good := true
			for k := range tl.times {
				if next := k + 1; next < len(tl.times) && tl.times[next] <= st {
					continue
				}
				if tl.times[k] >= end {
					break
				}
				f := tl.free[k*a : (k+1)*a]
				if j.Exclusive && !equalVec(f, capI) || !j.Exclusive && !holds(f, req) {
					good = false
					break
				}
			}
			if good && fitsIn(capI, req) {
				feas = append(feas, i)
			}
		}
		if len(feas) >= j.Nodes {
			return st, feas[:j.Nodes], true
		}
	}
	return 0, nil, false
}

// TestConservativePlanMatchesExactScan plans random queues conservatively
// (every job reserved at its earliest fit, in order) and checks each
// job's start and nodes against a plain exact scan of a copy of the
// profile that books the same reservations.
func TestConservativePlanMatchesExactScan(t *testing.T) {
	forEachLargeProfile(t, 77, func(t *testing.T, rng *rand.Rand, p *Profile, res time.Duration) {
		ref := p.Clone()
		window := 12 * time.Hour
		pl, err := NewPlanner(Config{Mode: Conservative, Window: window, Resolution: res})
		require.NoError(t, err)
		jobs := largeJobs(rng, p, 60)
		plan, err := pl.Plan(p, jobs)
		require.NoError(t, err)
		latest := p.Now().Add(window).Unix()
		for x := range jobs {
			j, e := &jobs[x], &plan.Entries[x]
			require.Equal(t, j.ID, e.ID)
			st, nodes, found := exactEarliest(t, ref, j, latest)
			if !found {
				require.NotContains(t, []Status{StatusStart, StatusReserved}, e.Status, "job %d: the exact scan finds no start", x)
				continue
			}
			require.Contains(t, []Status{StatusStart, StatusReserved}, e.Status, "job %d: the exact scan starts it at %d", x, st-ref.origin)
			require.Equal(t, st, e.Start.Unix(), "job %d start", x)
			require.Equal(t, nodes, e.Nodes, "job %d nodes", x)
			require.Equal(t, st == ref.origin, e.Status == StatusStart, "job %d starts now", x)
			allocs := make([]Alloc, len(nodes))
			for y, i := range nodes {
				allocs[y] = Alloc{Node: i, Use: j.PerNode}
				if j.Exclusive {
					allocs[y].Use = ref.expand(ref.caps[i*ref.a : (i+1)*ref.a])
				}
			}
			require.NoError(t, ref.Reserve(Reservation{ID: j.ID, Start: e.Start, End: e.Start.Add(j.TimeLimit), Allocs: allocs}))
		}
	})
}

// TestPlanSameWithoutSummaries plans random queues in both modes, with
// random reservation counts, busy-node preference, test limits, time
// minimums and no-reserve jobs, once as the planner does and once with
// searches that ignore the summaries (a plain exact scan of the
// timelines), and requires the same plan and the same profile after it.
func TestPlanSameWithoutSummaries(t *testing.T) {
	forEachLargeProfile(t, 78, func(t *testing.T, rng *rand.Rand, p *Profile, res time.Duration) {
		cfg := Config{Mode: Mode(rng.IntN(2)), Reservations: rng.IntN(4), Resolution: res,
			Window: time.Duration(1+rng.IntN(24)) * time.Hour, BusyNodes: rng.IntN(2) == 0}
		if rng.IntN(4) == 0 {
			cfg.MaxJobTest = 10 + rng.IntN(40)
		}
		pl, err := NewPlanner(cfg)
		require.NoError(t, err)
		jobs := largeJobs(rng, p, 80)
		for x := range jobs {
			if rng.IntN(5) == 0 {
				jobs[x].TimeMin = time.Duration(1+rng.Int64N(int64(jobs[x].TimeLimit/time.Second))) * time.Second
			}
			jobs[x].NoReserve = rng.IntN(8) == 0
		}
		plain := p.Clone()
		plain.plainScan = true
		got, err := pl.Plan(p, jobs)
		require.NoError(t, err)
		want, err := pl.Plan(plain, jobs)
		require.NoError(t, err)
		require.Equal(t, want.Entries, got.Entries, "plan (%v, %d reservations)", cfg.Mode, cfg.Reservations)
		require.Equal(t, want.Starts, got.Starts)
		requireSameTimelines(t, plain, p, "after the plan: ")
		checkSummaries(t, p)
	})
}

// forEachLargeProfile runs body on 40 random large profiles (8 with
// -short), with resolutions of 1 min, 1 s and 5 min in turn.
func forEachLargeProfile(t *testing.T, stream uint64, body func(t *testing.T, rng *rand.Rand, p *Profile, res time.Duration)) {
	iters := 40
	if testing.Short() {
		iters = 8
	}
	for seed := range iters {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), stream))
			res := []time.Duration{time.Minute, time.Second, 5 * time.Minute}[seed%3]
			body(t, rng, largeSetup(t, rng, res), res)
		})
	}
}
