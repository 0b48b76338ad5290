package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
)

// TestKeptLookThroughOffAfterError plans a job whose kept reservation the
// search looks through and whose chooser fails: the plan's error leaves
// the look-through off (no node still marked as the kept reservation's),
// as it does after a search that succeeds.
func TestKeptLookThroughOffAfterError(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	nodes := make([]NodeState, 4)
	var busy []Alloc
	for i := range nodes {
		nodes[i] = NodeState{Capacity: gres.Vector{4}}
		busy = append(busy, Alloc{Node: i, Use: gres.Vector{4}})
	}
	p, err := NewProfile(now, nodes, []Running{{ID: 9, End: now.Add(time.Hour), Allocs: busy}}, ProfileOptions{})
	require.NoError(t, err)
	pl, err := NewPlanner(Config{Mode: Conservative, Window: 4 * time.Hour})
	require.NoError(t, err)
	job := Job{ID: 1, Nodes: 2, PerNode: gres.Vector{1}, TimeLimit: time.Hour}
	plan, err := pl.Plan(p, []Job{job})
	require.NoError(t, err)
	require.Equal(t, StatusReserved, plan.Entries[0].Status)
	p.ReleaseReservationsExcept(job.ID)

	job.Chooser = func(topology.NodeSet, int) []int { return []int{0} } // one node of two
	job.ChooserKey = "bad"
	_, err = pl.Plan(p, []Job{job})
	require.ErrorIs(t, err, ErrInvalidRequest)
	for i, x := range p.scratch().ghost.pos {
		require.Equal(t, int32(-1), x, "node %d still marked as the kept reservation's", i)
	}
}
