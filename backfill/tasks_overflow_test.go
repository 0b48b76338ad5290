package backfill

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Tasks that need nothing beyond a node's first, without
// --ntasks-per-node, fit any node count: five nodes take 12 tasks.
func TestTasksRequestZeroPerTaskManyNodes(t *testing.T) {
	p, err := NewProfile(t0, gpuNodes(0, 0, 0, 0, 0), nil, ProfileOptions{})
	require.NoError(t, err)
	fit, err := p.EarliestFit(Request{Nodes: 5, PerNode: vec(1, 0, 0), Tasks: 12, Duration: mins(10)})
	require.NoError(t, err)
	require.Equal(t, FitFound, fit.Status)
	require.Equal(t, []int{3, 3, 2, 2, 2}, fit.Tasks)
}
