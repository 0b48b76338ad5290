package backfill

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
)

// narrowJobs is largeJobs with most allowed sets cut to a few nodes (a
// rack, a node list), the requests the narrow sweep is for.
func narrowJobs(rng *rand.Rand, p *Profile, count int) []Job {
	jobs := largeJobs(rng, p, count)
	n := p.NumNodes()
	for x := range jobs {
		if rng.IntN(4) == 0 {
			continue
		}
		set := topology.NewNodeSet(n)
		lo, w := rng.IntN(n), 1+rng.IntN(16)
		for i := lo; i < min(n, lo+w); i++ {
			set.Add(i)
		}
		for range rng.IntN(3) {
			set.Add(rng.IntN(n))
		}
		jobs[x].Allowed = set
	}
	return jobs
}

// TestPlanSameWithNarrowSweep plans random queues of narrowly allowed
// jobs in both modes with the narrow sweep forced wherever a job has an
// allowed set and with it off, and requires the same plan and the same
// profile after it; it then asks EarliestFit the same requests with
// random latest starts (FitBeyondLatest against FitNever decided by
// change points the narrow sweep does not visit) on both.
func TestPlanSameWithNarrowSweep(t *testing.T) {
	forEachLargeProfile(t, 79, func(t *testing.T, rng *rand.Rand, p *Profile, res time.Duration) {
		cfg := Config{Mode: Mode(rng.IntN(2)), Reservations: 1 + rng.IntN(4), Resolution: res,
			Window: time.Duration(1+rng.IntN(24)) * time.Hour, BusyNodes: rng.IntN(2) == 0}
		pl, err := NewPlanner(cfg)
		require.NoError(t, err)
		jobs := narrowJobs(rng, p, 80)
		narrow, walk := p.Clone(), p.Clone()
		narrow.sweep, walk.sweep = 1, -1
		for x := range 5 {
			r := Request{Nodes: 1, PerNode: jobs[x].PerNode, Allowed: jobs[x].Allowed, Duration: jobs[x].TimeLimit}
			if h := rng.IntN(3); h > 0 {
				r.Latest = p.Now().Add(time.Duration(h) * time.Hour)
			}
			f, err := narrow.EarliestFit(r)
			require.NoError(t, err)
			w, err := walk.EarliestFit(r)
			require.NoError(t, err)
			require.Equal(t, w, f, "EarliestFit %d", x)
		}
		got, err := pl.Plan(narrow, jobs)
		require.NoError(t, err)
		want, err := pl.Plan(walk, jobs)
		require.NoError(t, err)
		require.Equal(t, want.Entries, got.Entries, "plan (%v, %d reservations)", cfg.Mode, cfg.Reservations)
		require.Equal(t, want.Starts, got.Starts)
		requireSameTimelines(t, walk, narrow, "after the plan: ")
		// The next cycle's plan: the first job's reservation stays and its
		// search looks through it (the ghost's own times are visited).
		for _, q := range []*Profile{narrow, walk} {
			q.ReleaseReservationsExcept(jobs[0].ID)
		}
		got2, err := pl.Plan(narrow, jobs)
		require.NoError(t, err)
		want2, err := pl.Plan(walk, jobs)
		require.NoError(t, err)
		require.Equal(t, want2.Entries, got2.Entries, "plan with the first reservation kept")
	})
}

// TestNarrowSweepBeyondLatest checks the narrow sweep's answer when the
// allowed nodes stop changing before the latest start without a fit
// while other nodes change after it: the walk reaches such a change
// point and answers beyond the latest start, and so must the narrow
// sweep, not never (a chooser that refuses every choice keeps the
// allowed nodes from fitting).
func TestNarrowSweepBeyondLatest(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	nodes := make([]NodeState, 4)
	for i := range nodes {
		nodes[i] = NodeState{Capacity: gres.Vector{4}}
	}
	running := []Running{
		{ID: 1, End: now.Add(time.Hour), Allocs: []Alloc{{Node: 0, Use: gres.Vector{4}}}},
		{ID: 2, End: now.Add(5 * time.Hour), Allocs: []Alloc{{Node: 3, Use: gres.Vector{4}}}},
	}
	p, err := NewProfile(now, nodes, running, ProfileOptions{})
	require.NoError(t, err)
	allowed := topology.NewNodeSet(4)
	allowed.Add(0)
	allowed.Add(1)
	r := Request{Nodes: 1, PerNode: gres.Vector{1}, Allowed: allowed, Duration: 30 * time.Minute,
		Latest: now.Add(2 * time.Hour), Chooser: func(topology.NodeSet, int) []int { return nil }}
	narrow, walk := p.Clone(), p.Clone()
	narrow.sweep, walk.sweep = 1, -1
	w, err := walk.EarliestFit(r)
	require.NoError(t, err)
	require.Equal(t, FitBeyondLatest, w.Status, "the walk reaches the change point at +5h")
	f, err := narrow.EarliestFit(r)
	require.NoError(t, err)
	require.Equal(t, w, f)
}
