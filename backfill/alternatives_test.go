package backfill

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
)

// matchingORChooser is the reference for a matching OR (Slurm's
// --constraint="[a|b]": all nodes from one set): at each time the search
// reaches, the lowest n candidates of the first set, in the order listed,
// that has n of them; nil when none has.
func matchingORChooser(alts []topology.NodeSet) NodeChooser {
	return func(F topology.NodeSet, n int) []int {
		for _, a := range alts {
			sub := F.Clone()
			sub.IntersectWith(a)
			if sub.Count() >= n {
				return sub.FirstN(nil, n)
			}
		}
		return nil
	}
}

// randomAlternatives draws 1 to 3 node sets of a profile of n nodes, some
// overlapping, some empty.
func randomAlternatives(rng *rand.Rand, n int) []topology.NodeSet {
	alts := make([]topology.NodeSet, 1+rng.IntN(3))
	for k := range alts {
		alts[k] = topology.NewNodeSet(n)
		for i := range n {
			if rng.IntN(3) == 0 {
				alts[k].Add(i)
			}
		}
	}
	return alts
}

// TestAlternativesMatchChooser compares searches with Alternatives (one
// search per set, the earliest start, the first set on equal starts) with
// searches whose chooser alone makes the matching OR's choice, on random
// profiles with reservations: the same status, start and nodes.
func TestAlternativesMatchChooser(t *testing.T) {
	forEachRandomProfile(t, 300, 60, 734, func(t *testing.T, rng *rand.Rand, p *Profile, m *naive) {
		nextID := JobID(8000)
		for step := range 30 {
			if rng.IntN(3) == 0 {
				p = runOps(t, rng, p, m, 1, &nextID)
			}
			r := randomSearchRequest(rng, p, m, 1+rng.IntN(max(1, p.n/2)))
			if rng.IntN(3) == 0 {
				r.Allowed = topology.NewNodeSet(p.n)
				for i := range p.n {
					if rng.IntN(4) != 0 {
						r.Allowed.Add(i)
					}
				}
			}
			alts := randomAlternatives(rng, p.n)
			r.Chooser = matchingORChooser(alts)
			want, err := p.EarliestFit(r)
			require.NoError(t, err)
			if want.Status != FitFound {
				// The chooser's search cannot tell never from beyond the
				// latest start by the sets' capacity; compare fits only.
				want = Fit{Status: want.Status}
			}
			r.Chooser, r.Alternatives = nil, alts
			got, err := p.EarliestFit(r)
			require.NoError(t, err)
			if want.Status != FitFound {
				require.NotEqual(t, FitFound, got.Status, "step %d: the chooser finds no fit", step)
				continue
			}
			require.Equal(t, want, got, "step %d (%+v)", step, r)
		}
	})
}

// TestPlanAlternatives plans queues whose jobs carry Alternatives and the
// same queues with the reference chooser instead, in both modes, and
// requires the same plan and the same profile after it.
func TestPlanAlternatives(t *testing.T) {
	forEachLargeProfile(t, 80, func(t *testing.T, rng *rand.Rand, p *Profile, res time.Duration) {
		cfg := Config{Mode: Mode(rng.IntN(2)), Reservations: 1 + rng.IntN(4), Resolution: res,
			Window: time.Duration(1+rng.IntN(24)) * time.Hour}
		pl, err := NewPlanner(cfg)
		require.NoError(t, err)
		jobs := largeJobs(rng, p, 60)
		ref := make([]Job, len(jobs))
		for x := range jobs {
			ref[x] = jobs[x]
			if rng.IntN(2) == 0 {
				continue
			}
			alts := randomAlternatives(rng, p.NumNodes())
			jobs[x].Alternatives = alts
			ref[x].Chooser, ref[x].ChooserKey = matchingORChooser(alts), fmt.Sprint("alts", x)
		}
		a, b := p.Clone(), p.Clone()
		got, err := pl.Plan(a, jobs)
		require.NoError(t, err)
		want, err := pl.Plan(b, ref)
		require.NoError(t, err)
		for x := range want.Entries {
			w, g := want.Entries[x], got.Entries[x]
			if w.Status == StatusNeverFits || w.Status == StatusBeyondWindow {
				// Capacity is judged over the whole allowed set with the
				// chooser and over each alternative without it.
				require.Contains(t, []Status{StatusNeverFits, StatusBeyondWindow}, g.Status, "job %d", x)
				continue
			}
			require.Equal(t, w, g, "job %d", x)
		}
		requireSameTimelines(t, b, a, "after the plan: ")
	})
}

// TestAlternativesInvalid refuses sets of the wrong length, and
// Alternatives on a heterogeneous job's component.
func TestAlternativesInvalid(t *testing.T) {
	p, err := NewProfile(time.Unix(1_700_000_000, 0), []NodeState{{Capacity: gres.Vector{4}}, {Capacity: gres.Vector{4}}}, nil, ProfileOptions{})
	require.NoError(t, err)
	bad := []topology.NodeSet{topology.NewNodeSet(3)}
	_, err = p.EarliestFit(Request{Nodes: 1, PerNode: gres.Vector{1}, Duration: time.Minute, Alternatives: bad})
	require.ErrorIs(t, err, ErrInvalidRequest)
	pl, err := NewPlanner(Config{Mode: Conservative, Window: time.Hour})
	require.NoError(t, err)
	_, err = pl.Plan(p, []Job{{ID: 1, Nodes: 1, PerNode: gres.Vector{1}, TimeLimit: time.Minute, Alternatives: bad}})
	require.ErrorIs(t, err, ErrInvalidRequest)
	ok := []topology.NodeSet{topology.NodeSetOf(2, 1)}
	_, err = pl.Plan(p, []Job{{ID: 2, Components: []Job{
		{ID: 2, Nodes: 1, PerNode: gres.Vector{1}, TimeLimit: time.Minute, Alternatives: ok},
		{ID: 3, Nodes: 1, PerNode: gres.Vector{1}, TimeLimit: time.Minute},
	}}})
	require.ErrorIs(t, err, ErrInvalidRequest)
	// A valid one plans within its set: node 1.
	plan, err := pl.Plan(p, []Job{{ID: 4, Nodes: 1, PerNode: gres.Vector{1}, TimeLimit: time.Minute, Alternatives: ok}})
	require.NoError(t, err)
	require.Equal(t, StatusStart, plan.Entries[0].Status)
	require.Equal(t, []int{1}, plan.Entries[0].Nodes)
}

// TestPlanAlternativesSearchOnce plans a job with a Spread (whose shape
// the cache does not keep) and a matching OR whose first alternative
// starts now: the winner's search is placed as it is, not searched again.
func TestPlanAlternativesSearchOnce(t *testing.T) {
	p, err := NewProfile(time.Unix(1_700_000_000, 0), []NodeState{{Capacity: gres.Vector{4}}, {Capacity: gres.Vector{4}}}, nil, ProfileOptions{})
	require.NoError(t, err)
	pl, err := NewPlanner(Config{Mode: Conservative, Window: time.Hour})
	require.NoError(t, err)
	alts := []topology.NodeSet{topology.NodeSetOf(2, 1), topology.NodeSetOf(2, 0)}
	plan, err := pl.Plan(p, []Job{{ID: 1, Nodes: 1, PerNode: gres.Vector{1}, Spread: gres.Vector{1}, TimeLimit: time.Minute, Alternatives: alts}})
	require.NoError(t, err)
	require.Equal(t, StatusStart, plan.Entries[0].Status)
	require.Equal(t, []int{1}, plan.Entries[0].Nodes)
	require.Equal(t, 1, plan.Stats.Tested)
	require.Equal(t, 1, plan.Stats.Searches)
}
