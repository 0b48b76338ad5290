package backfill

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Three 8-CPU nodes, 0 and 1 busy until +10 min, only node 2 has GPUs:
// component A wants 1 CPU on one node, B 8 CPUs and 4 GPUs on one node.
// A on node 0 and B on node 2 start together at +10 min; the search must
// not keep A on node 2 (free now) and push B past A's booking for ever.
func TestCoStartCompetingForTheOnlyGPUNode(t *testing.T) {
	nodes := cluster(3, vec(8, 1000, 0))
	nodes[2].Capacity = vec(8, 1000, 4)
	running := []Running{
		{ID: 100, End: t0.Add(mins(10)), Allocs: []Alloc{{Node: 0, Use: vec(8, 0, 0)}, {Node: 1, Use: vec(8, 0, 0)}}},
	}
	a := Request{Nodes: 1, PerNode: vec(1, 0, 0), Duration: mins(30)}
	b := Request{Nodes: 1, PerNode: vec(8, 0, 4), Duration: mins(30)}
	for _, reqs := range [][]Request{{a, b}, {b, a}} {
		prof, err := NewProfile(t0, nodes, running, ProfileOptions{})
		require.NoError(t, err)
		fits, err := prof.EarliestCoFit([]JobID{1, 2}, reqs)
		require.NoError(t, err)
		for k, f := range fits {
			require.Equal(t, FitFound, f.Status, "request %d", k)
			assert.Equal(t, t0.Add(mins(10)), f.Start, "request %d", k)
			if reqs[k].PerNode[5] > 0 {
				assert.Equal(t, []int{2}, f.Nodes)
			} else {
				assert.NotEqual(t, []int{2}, f.Nodes, "the 1-CPU component leaves the GPU node")
			}
		}
		assert.Zero(t, prof.Len()-1, "nothing stays booked")
	}

	pl, err := NewPlanner(Config{Mode: Conservative})
	require.NoError(t, err)
	prof, err := pl.NewProfile(t0, nodes, running)
	require.NoError(t, err)
	het := Job{ID: 1, Components: []Job{
		{ID: 1, Nodes: 1, PerNode: vec(1, 0, 0), TimeLimit: mins(30)},
		{ID: 2, Nodes: 1, PerNode: vec(8, 0, 4), TimeLimit: mins(30)},
	}}
	plan, err := pl.Plan(prof, []Job{het})
	require.NoError(t, err)
	e := plan.Entries[0]
	require.Equal(t, StatusReserved, e.Status)
	assert.Equal(t, t0.Add(mins(10)), e.Start)
	assert.Equal(t, []int{2}, e.Components[1].Nodes)
	checkNoOverAllocation(t, prof)
}

// The same on 600 nodes, 599 of them busy until +10 min and only the last
// with GPUs: too many nodes for coExact, the search tries the start again
// with the GPU component first.
func TestCoStartCompetingForTheOnlyGPUNodeLarge(t *testing.T) {
	nodes := cluster(600, vec(8, 1000, 0))
	nodes[599].Capacity = vec(8, 1000, 4)
	busy := Running{ID: 100, End: t0.Add(mins(10))}
	for i := range 599 {
		busy.Allocs = append(busy.Allocs, Alloc{Node: i, Use: vec(8, 0, 0)})
	}
	prof, err := NewProfile(t0, nodes, []Running{busy}, ProfileOptions{})
	require.NoError(t, err)
	a := Request{Nodes: 1, PerNode: vec(1, 0, 0), Duration: mins(30)}
	b := Request{Nodes: 1, PerNode: vec(8, 0, 4), Duration: mins(30)}
	fits, err := prof.EarliestCoFit([]JobID{1, 2}, []Request{a, b})
	require.NoError(t, err)
	require.Equal(t, FitFound, fits[0].Status)
	assert.Equal(t, t0.Add(mins(10)), fits[0].Start)
	assert.Equal(t, []int{599}, fits[1].Nodes)
	assert.NotEqual(t, []int{599}, fits[0].Nodes)
}

// EarliestCoFit against a brute force on random small clusters of two
// node kinds (some with GPUs) with running jobs only: the earliest common
// start is the first of the origin and the running jobs' ends at which
// some choice of nodes holds every component at once (all of them run
// from it, so the free resources at that instant decide), searched over
// every node set of every component.
func TestCoFitBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 41))
	contested := 0
	for iter := range 600 {
		n := 2 + rng.IntN(4)
		nodes := cluster(n, vec(8, 1000, 0))
		for i := range nodes {
			if rng.IntN(3) == 0 {
				nodes[i].Capacity = vec(8, 1000, 4)
			}
		}
		var running []Running
		for i := range n {
			if rng.IntN(3) > 0 {
				running = append(running, Running{ID: JobID(1000 + i), End: t0.Add(time.Duration(1+rng.IntN(60)) * time.Minute),
					Allocs: []Alloc{{Node: i, Use: vec(int64(1+rng.IntN(8)), 0, nodes[i].Capacity[5]*int64(rng.IntN(2)))}}})
			}
		}
		prof, err := NewProfile(t0, nodes, running, ProfileOptions{Resolution: time.Second})
		require.NoError(t, err)
		k := 2 + rng.IntN(2)
		reqs := make([]Request, k)
		ids := make([]JobID, k)
		for c := range reqs {
			ids[c] = JobID(c + 1)
			gpu := int64(0)
			if rng.IntN(3) == 0 {
				gpu = int64(1 + rng.IntN(4))
			}
			reqs[c] = Request{Nodes: 1 + rng.IntN(2), PerNode: vec(int64(1+rng.IntN(8)), 0, gpu),
				Duration: time.Duration(1+rng.IntN(60)) * time.Minute}
		}
		// free(i, at): capacity less what runs at at.
		free := func(i int, at time.Time) []int64 {
			f := []int64{nodes[i].Capacity[0], nodes[i].Capacity[5]}
			for _, r := range running {
				if r.End.After(at) && r.Allocs[0].Node == i {
					f[0] -= r.Allocs[0].Use[0]
					f[1] -= r.Allocs[0].Use[5]
				}
			}
			return f
		}
		var place func(c int, f [][]int64) bool
		place = func(c int, f [][]int64) bool {
			if c == k {
				return true
			}
			r := reqs[c]
			var rec func(from, left int) bool
			rec = func(from, left int) bool {
				if left == 0 {
					return place(c+1, f)
				}
				for i := from; i < n; i++ {
					if f[i][0] < r.PerNode[0] || f[i][1] < r.PerNode[5] {
						continue
					}
					f[i][0] -= r.PerNode[0]
					f[i][1] -= r.PerNode[5]
					ok := rec(i+1, left-1)
					f[i][0] += r.PerNode[0]
					f[i][1] += r.PerNode[5]
					if ok {
						return true
					}
				}
				return false
			}
			return rec(0, r.Nodes)
		}
		points := []time.Time{t0}
		for _, r := range running {
			points = append(points, r.End)
		}
		slices.SortFunc(points, func(x, y time.Time) int { return x.Compare(y) })
		var want time.Time
		for _, at := range points {
			f := make([][]int64, n)
			for i := range f {
				f[i] = free(i, at)
			}
			if place(0, f) {
				want = at
				break
			}
		}
		before := prof.Len()
		fits, err := prof.EarliestCoFit(ids, reqs)
		require.NoError(t, err)
		require.Equal(t, before, prof.Len(), "iter %d: nothing stays booked", iter)
		if want.IsZero() {
			require.NotEqual(t, FitFound, fits[0].Status, "iter %d: no choice of nodes ever holds them", iter)
			continue
		}
		require.Equal(t, FitFound, fits[0].Status, "iter %d: they fit at %v", iter, want)
		require.Equal(t, want, fits[0].Start, "iter %d: the earliest common start", iter)
		// Cases where the components in turn would not find it.
		seq, err := prof.Clone().EarliestFit(reqs[0])
		require.NoError(t, err)
		if seq.Start.Before(want) {
			contested++
		}
		for c := range fits {
			require.NoError(t, prof.ReserveFit(ids[c], reqs[c], fits[c]), "iter %d: component %d fits with the others", iter, c)
		}
		checkNoOverAllocation(t, prof)
	}
	require.Positive(t, contested)
}
