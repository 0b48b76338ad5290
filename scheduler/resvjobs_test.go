package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

// newTwoNodeResv builds two 8-CPU nodes with a policy (reservations only)
// and starts one whole-node job with a 1 h limit, returning the node it
// runs on.
func newTwoNodeResv(t *testing.T) (*scheduler.Scheduler, int) {
	t.Helper()
	cfg := scheduler.Config{Policy: &policy.Config{}}
	cfg.Nodes = cpuNodes(2)
	cfg.Partitions = []scheduler.PartitionConfig{{Name: "batch", Default: true}}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", Exclusive: true, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 1)
	require.Equal(t, id, cyc.Starts[0].Job)
	return s, cyc.Starts[0].Alloc.Nodes[0].Node
}

// TestReservationOnNodeListRefusedOverRunningJob checks Slurm's rule for
// a reservation on named nodes: refused when a job runs there past the
// window's start, unless IGNORE_JOBS; the same rule a reservation by node
// count follows when its nodes are chosen.
func TestReservationOnNodeListRefusedOverRunningJob(t *testing.T) {
	s, busy := newTwoNodeResv(t)
	at := t0.Add(time.Minute)
	on := topology.NodeSetOf(2, busy)
	err := s.AddReservation(at, policy.Reservation{Name: "r", Start: at.Add(10 * time.Minute), Duration: time.Hour, Nodes: on, Users: []string{"bob"}})
	require.ErrorIs(t, err, policy.ErrNodesBusy, "a job runs on the node until t0+1h")
	assert.Contains(t, err.Error(), fmt.Sprintf("n%d", busy))
	assert.Empty(t, s.Reservations(), "a refused reservation leaves nothing behind")

	// The same window by node count: only the idle node qualifies.
	err = s.AddReservation(at, policy.Reservation{Name: "r", Start: at.Add(10 * time.Minute), Duration: time.Hour, NodeCount: 2, Users: []string{"bob"}})
	require.ErrorIs(t, err, policy.ErrNoNodes)

	// A window that opens after the job's limit does not overlap it, on either path.
	late := t0.Add(time.Hour)
	require.NoError(t, s.AddReservation(at, policy.Reservation{Name: "late", Start: late, Duration: time.Hour, Nodes: on, Users: []string{"bob"}}))
	require.NoError(t, s.AddReservation(at, policy.Reservation{Name: "late2", Start: late.Add(time.Hour), Duration: time.Hour, NodeCount: 2, Users: []string{"bob"}}))

	// IGNORE_JOBS takes the busy node anyway.
	require.NoError(t, s.AddReservation(at, policy.Reservation{Name: "ij", Start: at, Duration: 10 * time.Minute, Nodes: on,
		Users: []string{"bob"}, Flags: policy.ResvIgnoreJobs}))
}
