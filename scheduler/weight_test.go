package scheduler_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

// weighted is four 4-CPU nodes of weights 30, 10, 20, 10 (n0…n3): Slurm
// allocates n1, n3 (weight 10, by index), then n2, then n0.
func weighted(t *testing.T, bf bool) *scheduler.Scheduler {
	t.Helper()
	cfg := scheduler.Config{Partitions: []scheduler.PartitionConfig{{Name: "p", Default: true}},
		Policy: &policy.Config{}}
	for i, w := range []int64{30, 10, 20, 10} {
		cfg.Nodes = append(cfg.Nodes, scheduler.NodeConfig{Name: []string{"n0", "n1", "n2", "n3"}[i], CPUs: 4, MemoryMiB: 1024, Weight: w})
	}
	if bf {
		cfg.Backfill = &backfill.Config{Mode: backfill.EASY, Resolution: time.Second}
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

var wholeNode = scheduler.JobSpec{User: "u", Account: "a", CPUsPerTask: 4, TimeLimit: time.Hour}

func TestNodeWeightLightestFirst(t *testing.T) {
	s := weighted(t, false)
	var got []string
	for range 4 {
		id := mustSubmit(t, s, t0, wholeNode)
		mustSchedule(t, s, t0)
		j, _ := s.Job(id)
		require.Equal(t, scheduler.JobRunning, j.State)
		got = append(got, j.Alloc.NodeNames()...)
	}
	assert.Equal(t, []string{"n1", "n3", "n2", "n0"}, got)

	// A two-node job takes the two lightest.
	s = weighted(t, false)
	two := wholeNode
	two.Nodes = 2
	id := mustSubmit(t, s, t0, two)
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	assert.Equal(t, []string{"n1", "n3"}, j.Alloc.NodeNames())
}

func TestNodeWeightBackfillPlansLightest(t *testing.T) {
	s := weighted(t, true)
	for range 4 {
		mustSubmit(t, s, t0, wholeNode)
	}
	mustSchedule(t, s, t0)
	two := wholeNode
	two.Nodes = 2
	id := mustSubmit(t, s, t0, two)
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	assert.Equal(t, t0.Add(time.Hour), j.ExpectedStart)
	assert.ElementsMatch(t, []string{"n1", "n3"}, j.PlannedNodes)
}

func TestUpdateNodeWeightReorders(t *testing.T) {
	s := weighted(t, false)
	nc, ok := s.NodeConfig("n2")
	require.True(t, ok)
	nc.Weight = 1
	require.NoError(t, s.UpdateNode(t0, nc))
	id := mustSubmit(t, s, t0, wholeNode)
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	assert.Equal(t, []string{"n2"}, j.Alloc.NodeNames())

	// Kept by a snapshot: the restored scheduler allocates the same way.
	var b bytes.Buffer
	require.NoError(t, s.Snapshot(&b))
	r, err := scheduler.Restore(&b, scheduler.RestoreOptions{})
	require.NoError(t, err)
	rc, _ := r.NodeConfig("n2")
	assert.Equal(t, int64(1), rc.Weight)
	a, c := mustSubmit(t, s, t0, wholeNode), mustSubmit(t, r, t0, wholeNode)
	mustSchedule(t, s, t0)
	mustSchedule(t, r, t0)
	ja, _ := s.Job(a)
	jc, _ := r.Job(c)
	assert.Equal(t, []string{"n1"}, ja.Alloc.NodeNames())
	assert.Equal(t, ja.Alloc.NodeNames(), jc.Alloc.NodeNames())
}

func TestNodeWeightReservationNodes(t *testing.T) {
	s := weighted(t, false)
	require.NoError(t, s.AddReservation(t0, policy.Reservation{Name: "r", Start: t0.Add(time.Hour), Duration: time.Hour,
		NodeCount: 3, Users: []string{"u"}}))
	rs := s.Reservations()
	require.Len(t, rs, 1)
	assert.True(t, rs[0].Nodes.Equal(topology.NodeSetOf(4, 1, 2, 3)), "got %v", rs[0].Nodes)
}

func TestNodeWeightValidated(t *testing.T) {
	for _, w := range []int64{-1, scheduler.MaxNodeWeight + 1} {
		_, err := scheduler.New(scheduler.Config{
			Nodes:      []scheduler.NodeConfig{{Name: "n0", CPUs: 1, Weight: w}},
			Partitions: []scheduler.PartitionConfig{{Name: "p", Default: true}},
		})
		require.ErrorIs(t, err, scheduler.ErrInvalidConfig, "weight %d", w)
		require.ErrorContains(t, err, "Weight")
	}
}
