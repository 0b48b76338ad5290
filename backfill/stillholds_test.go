package backfill

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/topology"
)

// An answer holds while the pass books only elsewhere: as in
// TestSameQuestionSameAnswer (with a fourth node, idle, that only job 4
// may use), jobs 2 and 3 (7 CPUs on two of nodes 0–2 for 15 min) are
// estimated at +20 on nodes 0 and 1; job 4 (one whole node for 25 min)
// then starts now on node 3, which they did not choose, and job 5,
// asking what they asked, gets their answer without a search. Job 6 (7
// CPUs on one node) starts on node 0, one of the nodes of that answer, so
// job 7, asking it again, is searched: it moves to +25. Every entry is the
// reference planner's.
func TestAnswerHoldsWhileBookingsAreElsewhere(t *testing.T) {
	full := vec(8, 100, 0)
	nodes := cluster(4, full)
	running := []Running{
		{ID: 100, End: t0.Add(mins(20)), Allocs: []Alloc{{Node: 1, Use: full}}},
		{ID: 101, End: t0.Add(mins(40)), Allocs: []Alloc{{Node: 2, Use: full}}},
		{ID: 102, End: t0.Add(mins(30)), Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}},
	}
	first3 := topology.NodeSetOf(4, 0, 1, 2)
	two := Job{Nodes: 2, PerNode: vec(7, 99, 0), TimeLimit: mins(15), Allowed: first3}
	jobs := []Job{
		{ID: 1, Nodes: 4, PerNode: vec(1, 1, 0), TimeLimit: mins(60)},
		two, two,
		{ID: 4, Nodes: 1, PerNode: full, TimeLimit: mins(25), Allowed: topology.NodeSetOf(4, 3)},
		two,
		{ID: 6, Nodes: 1, PerNode: vec(7, 99, 0), TimeLimit: mins(25), Allowed: first3},
		two,
	}
	jobs[1].ID, jobs[2].ID, jobs[4].ID, jobs[6].ID = 2, 3, 5, 7
	pl, err := NewPlanner(Config{Mode: EASY})
	require.NoError(t, err)
	prof, err := pl.NewProfile(t0, nodes, running)
	require.NoError(t, err)
	ref := referencePlan(t, Config{Mode: EASY}, prof.Clone(), jobs)
	plan, err := pl.Plan(prof, jobs)
	require.NoError(t, err)
	for x := range ref {
		assert.Equal(t, ref[x].Status, plan.Entries[x].Status, "job %d", x+1)
		assert.Equal(t, ref[x].Start, plan.Entries[x].Start, "job %d", x+1)
		assert.Equal(t, ref[x].Nodes, plan.Entries[x].Nodes, "job %d", x+1)
	}
	assert.Equal(t, StatusStart, plan.Entries[3].Status, "job 4 starts now")
	assert.Equal(t, []int{3}, plan.Entries[3].Nodes)
	for _, x := range []int{1, 2, 4} {
		assert.Equal(t, StatusEstimated, plan.Entries[x].Status, "job %d", x+1)
		assert.Equal(t, t0.Add(mins(20)), plan.Entries[x].Start, "job %d", x+1)
		assert.Equal(t, []int{0, 1}, plan.Entries[x].Nodes, "job %d", x+1)
	}
	assert.Equal(t, StatusStart, plan.Entries[5].Status, "job 6 starts now")
	assert.Equal(t, []int{0}, plan.Entries[5].Nodes)
	assert.Equal(t, t0.Add(mins(25)), plan.Entries[6].Start, "job 7: after job 6")
	assert.Equal(t, plan.Stats.Tested-2, plan.Stats.Searches, "jobs 3 and 5 were answered without a search")
}
