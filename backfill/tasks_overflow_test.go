package backfill

import (
	"math"
	"math/rand/v2"
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

// dealPlanesNaive deals total tasks in blocks of plane, one block per
// node in turn, each cut to the node's room left (the reference).
func dealPlanesNaive(total, plane int64, room []int64) ([]int64, bool) {
	out := make([]int64, len(room))
	left := total
	for left > 0 {
		moved := false
		for x, r := range room {
			c := min(plane, r-out[x], left)
			if c > 0 {
				out[x] += c
				left -= c
				moved = true
			}
		}
		if !moved {
			return out, false
		}
	}
	for _, c := range out {
		if c < 1 {
			return out, false
		}
	}
	return out, true
}

// DealPlanes and DealTasks on rooms whose sum overflows int64 (many nodes
// of MaxCount-sized rooms, the planner's PerTask of one unit), a huge
// plane and a total near MaxInt64 still deal the few tasks asked, as on
// small rooms; on small random inputs DealPlanes is the block-by-block
// deal.
func TestDealHugeRooms(t *testing.T) {
	huge := make([]int64, 16)
	for x := range huge {
		huge[x] = math.MaxInt64 / 8
	}
	out := make([]int64, len(huge))
	require.True(t, DealPlanes(40, 2, huge, out), "plane deal on huge rooms")
	require.Equal(t, []int64{4, 4, 4, 4, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, out)
	require.True(t, DealTasks(20, huge, out), "cyclic deal on huge rooms")
	require.Equal(t, []int64{2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, out)
	require.True(t, DealPlanes(16, math.MaxInt64, huge, out) == false, "one block for 16 nodes")
	two := []int64{math.MaxInt64, math.MaxInt64}
	require.True(t, DealPlanes(math.MaxInt64, math.MaxInt64/2+1, two, out[:2]))
	require.Equal(t, []int64{math.MaxInt64/2 + 1, math.MaxInt64 / 2}, out[:2])
	require.False(t, DealPlanes(5, 2, []int64{3, 3}, out[:1]), "out shorter than room")
	require.False(t, DealTasks(5, []int64{3, 3}, out[:1]), "out shorter than room")

	rng := rand.New(rand.NewPCG(17, 3))
	for range 2000 {
		n := 1 + rng.IntN(5)
		room := make([]int64, n)
		for x := range room {
			room[x] = rng.Int64N(12)
		}
		total, plane := rng.Int64N(30), 1+rng.Int64N(6)
		want, wok := dealPlanesNaive(total, plane, room)
		got := make([]int64, n)
		ok := DealPlanes(total, plane, room, got)
		require.Equal(t, wok, ok, "DealPlanes(%d, %d, %v)", total, plane, room)
		if ok {
			require.Equal(t, want, got, "DealPlanes(%d, %d, %v)", total, plane, room)
		}
	}
}

// Slurm refuses fewer plane blocks than nodes: -N4 -n4 -m plane=4 is one
// block for four nodes, so the request is invalid rather than searched
// for a start it can never have.
func TestTasksRequestTooFewPlanes(t *testing.T) {
	p, err := NewProfile(t0, gpuNodes(0, 0, 0, 0), nil, ProfileOptions{})
	require.NoError(t, err)
	req := Request{Nodes: 4, PerNode: vec(1, 0, 0), Tasks: 4, PerTask: vec(1, 0, 0), PlaneSize: 4, Duration: mins(10)}
	_, err = p.EarliestFit(req)
	require.ErrorIs(t, err, ErrInvalidRequest)
	req.Tasks = 13 // four blocks: 4+4+4+1
	fit, err := p.EarliestFit(req)
	require.NoError(t, err)
	require.Equal(t, FitFound, fit.Status)
	require.Equal(t, []int{4, 4, 4, 1}, fit.Tasks)
}

// The block count of a huge plane request does not overflow.
func TestTasksRequestHugePlane(t *testing.T) {
	p, err := NewProfile(t0, gpuNodes(0, 0), nil, ProfileOptions{})
	require.NoError(t, err)
	req := Request{Nodes: 2, PerNode: vec(1, 0, 0), Tasks: math.MaxInt, PerTask: vec(1, 0, 0), PlaneSize: math.MaxInt, Duration: mins(10)}
	_, err = p.EarliestFit(req)
	require.ErrorIs(t, err, ErrInvalidRequest) // one block for two nodes
	req.PlaneSize = math.MaxInt/2 + 1
	fit, err := p.EarliestFit(req)
	require.NoError(t, err)
	require.NotEqual(t, FitFound, fit.Status) // two blocks, far more tasks than CPUs
}
