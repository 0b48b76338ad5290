package backfill

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/stretchr/testify/require"
)

// addNodeOp appends a random node to p and to the model: a capacity over
// the profile's dimensions, its whole capacity free or (sometimes) a
// given Free below it. Sometimes a clone taken before must still match
// the model as it was, without the node.
func addNodeOp(t *testing.T, rng *rand.Rand, p *Profile, m *naive) {
	t.Helper()
	capI := make([]int64, p.a)
	for x := range capI {
		capI[x] = int64(rng.IntN(5))
	}
	free := slices.Clone(capI)
	ns := NodeState{Capacity: expandTo(p, capI)}
	if rng.IntN(3) == 0 {
		for x := range free {
			free[x] = rng.Int64N(capI[x] + 1)
		}
		ns.Free = expandTo(p, free)
	}
	if rng.IntN(4) == 0 { // trailing zero TRES widen the vectors only
		ns.Capacity = append(ns.Capacity, 0, 0)
	}
	var before *Profile
	var snap *naive
	if rng.IntN(3) == 0 {
		before, snap = p.Clone(), m.clone()
	}
	n := p.NumNodes()
	require.NoError(t, p.AddNode(ns))
	require.Equal(t, n+1, p.NumNodes())
	m.caps = append(slices.Clip(m.caps), capI)
	m.base = append(slices.Clip(m.base), free)
	if before != nil {
		require.Equal(t, n, before.NumNodes(), "a clone taken before does not see the node")
		checkProfile(t, before, snap)
		_, err := before.FreeAt(n, before.Now())
		require.ErrorIs(t, err, ErrInvalidNode)
	}
	got, err := p.FreeAt(n, p.Now().Add(time.Duration(rng.Int64N(1e6))*time.Second))
	require.NoError(t, err)
	require.Equal(t, expandTo(p, free), got)
}

// TestAddNodeMatchesFresh grows random profiles node by node amid
// running jobs, plans, starts and advances, and after each added node
// compares the profile with the reference model and with a profile built
// by NewProfile with the node from the start (timelines, entries, change
// points, earliest fits and whole plans); the summaries stay valid
// (checkProfile) and clones taken before an added node never see it.
func TestAddNodeMatchesFresh(t *testing.T) {
	forEachRandomProfile(t, 250, 40, 61, func(t *testing.T, rng *rand.Rand, p *Profile, m *naive) {
		nextID := JobID(1000)
		for range 30 {
			if rng.IntN(5) != 0 {
				keptOp(t, rng, p, m, &nextID)
			} else {
				addNodeOp(t, rng, p, m)
				checkProfile(t, p, m)
				compareWithFresh(t, rng, p, m)
			}
			checkProfile(t, p, m)
		}
	})
}

// TestAddNodeMatchesFreshManyBlocks adds nodes across summary blocks (64
// nodes each) to a profile with running jobs and reservations, so that
// new blocks start, and compares it with one built with all the nodes.
func TestAddNodeMatchesFreshManyBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 62))
	now := time.Unix(1_700_000_000, 0)
	caps := func() gres.Vector { return gres.Vector{0, int64(1 + rng.IntN(8)), int64(rng.IntN(3))} }
	var nodes []NodeState
	for range 60 {
		nodes = append(nodes, NodeState{Capacity: caps()})
	}
	var running []Running
	for i := range nodes {
		if rng.IntN(2) == 0 {
			running = append(running, Running{ID: JobID(i + 1), End: now.Add(time.Duration(1+rng.IntN(5000)) * time.Second),
				Allocs: []Alloc{{Node: i, Use: gres.Vector{0, 1}}}})
		}
	}
	p, err := NewProfile(now, nodes, running, ProfileOptions{})
	require.NoError(t, err)
	for range 80 {
		ns := NodeState{Capacity: caps()}
		nodes = append(nodes, ns)
		require.NoError(t, p.AddNode(ns))
	}
	fresh, err := NewProfile(now, nodes, running, ProfileOptions{})
	require.NoError(t, err)
	checkProfile(t, p, nil)
	requireSameTimelines(t, fresh, p, "timeline: ")
	id := JobID(1 << 40)
	for range 20 {
		requireSameRandomPlan(t, rng, fresh, p, &id)
	}
}

// TestAddNodeRefusesUntrackedResource checks that a node with a resource
// no node of the profile has, or with Free above Capacity, is refused and
// leaves the profile as it was.
func TestAddNodeRefusesUntrackedResource(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	p, err := NewProfile(now, []NodeState{{Capacity: gres.Vector{0, 4, 0}}}, nil, ProfileOptions{})
	require.NoError(t, err)
	for _, ns := range []NodeState{
		{Capacity: gres.Vector{0, 4, 2}},
		{Capacity: gres.Vector{0, 4}, Free: gres.Vector{0, 5}},
		{Capacity: gres.Vector{0, -1}},
		{Capacity: gres.Vector{0, 4}, Free: gres.Vector{0, 1, 1}},
	} {
		require.ErrorIs(t, p.AddNode(ns), ErrInvalidNode, "%+v", ns)
		require.Equal(t, 1, p.NumNodes())
		checkProfile(t, p, nil)
	}
	require.NoError(t, p.AddNode(NodeState{Capacity: gres.Vector{0, 2}}))
	f, err := p.FreeAt(1, now)
	require.NoError(t, err)
	require.Equal(t, gres.Vector{0, 2, 0}, f)
}
