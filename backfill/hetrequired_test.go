package backfill

import (
	"testing"

	"github.com/sluicehq/sluice/topology"

	"github.com/stretchr/testify/require"
)

// A component's required nodes (-w) bind the co-start search's exact
// part too: when the components placed in turn do not fit, coExact must
// not move a component with Required off its required node.
func TestCoExactKeepsRequiredNodes(t *testing.T) {
	nodes := cluster(3, vec(8, 1000, 0))
	only0 := topology.NewNodeSet(3)
	only0.Add(0)
	// A takes 1 CPU and must include node 0; B takes the whole of node 0,
	// the only node it may use. They never fit together.
	a := Request{Nodes: 1, PerNode: vec(1, 0, 0), Duration: mins(30), Required: []int{0}}
	b := Request{Nodes: 1, PerNode: vec(8, 0, 0), Duration: mins(30), Allowed: only0}
	for _, reqs := range [][]Request{{a, b}, {b, a}} {
		prof, err := NewProfile(t0, nodes, nil, ProfileOptions{})
		require.NoError(t, err)
		fits, err := prof.EarliestCoFit([]JobID{1, 2}, reqs)
		require.NoError(t, err)
		for k, f := range fits {
			if f.Status != FitFound {
				continue
			}
			if len(reqs[k].Required) > 0 {
				require.Contains(t, f.Nodes, 0, "request %d keeps its required node: %+v", k, fits)
			}
		}
		require.NotEqual(t, FitFound, fits[0].Status, "the two never fit together: %+v", fits)
	}
}
