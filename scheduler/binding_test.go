package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// Under enforce-binding the job's CPUs must be local to its GPUs. On an
// idle node of 3 sockets × 4 CPUs with 3 GPUs per socket, a job of 2 GPUs
// and 5 CPUs fits only with its GPUs on two sockets (8 bound CPUs): the
// choice must take such a pair rather than the best-connected pair on one
// socket (4 bound CPUs) and give up. With and without backfill it starts
// at once; a job needing more CPUs than two sockets hold waits.
func TestEnforceBindingSpansSocketsWhenOneIsTooSmall(t *testing.T) {
	for _, bf := range []bool{false, true} {
		s := socketCluster(t, bf, gpuNode("n0", 3, 4, 3, true))
		id := mustSubmit(t, s, t0, scheduler.JobSpec{CPUsPerTask: 5, GRESPerNode: gpus(2), EnforceBinding: true, TimeLimit: time.Hour})
		cyc := mustSchedule(t, s, t0)
		require.Len(t, cyc.Starts, 1, "bf=%v: pending %+v", bf, cyc.Pending)
		assert.Equal(t, id, cyc.Starts[0].Job)
		na := cyc.Starts[0].Alloc.Nodes[0]
		require.Len(t, na.Devices, 2)
		require.Len(t, na.CPUs, 5)
		sockets := map[int]bool{}
		for _, d := range na.Devices {
			sockets[d/3] = true
		}
		assert.Len(t, sockets, 2, "bf=%v: GPUs %v on two sockets", bf, na.Devices)
		for _, c := range na.CPUs {
			assert.True(t, sockets[c/4], "bf=%v: CPU %d not local to GPUs %v", bf, c, na.Devices)
		}
		assert.False(t, cyc.Starts[0].Backfill, "the main pass starts it")

		// One socket (4 CPUs, 1 GPU) is left: a bound 2-GPU job of 5 CPUs
		// cannot start; nor can one of 9 CPUs on an idle node (2 GPUs
		// bind at most 8).
		wait := mustSubmit(t, s, t0, scheduler.JobSpec{CPUsPerTask: 5, GRESPerNode: gpus(1), EnforceBinding: true, TimeLimit: time.Hour})
		cyc = mustSchedule(t, s, t0)
		assert.Empty(t, cyc.Starts, "bf=%v", bf)
		assert.Equal(t, policy.ReasonResources, reasonOf(cyc, wait))
	}
	s := socketCluster(t, false, gpuNode("n0", 3, 4, 3, true))
	big := mustSubmit(t, s, t0, scheduler.JobSpec{CPUsPerTask: 9, GRESPerNode: gpus(2), EnforceBinding: true, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	assert.Empty(t, cyc.Starts)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, big))
	three := mustSubmit(t, s, t0, scheduler.JobSpec{CPUsPerTask: 9, GRESPerNode: gpus(3), EnforceBinding: true, TimeLimit: time.Hour})
	require.NoError(t, s.Cancel(t0, big))
	cyc = mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, three, cyc.Starts[0].Job)
	assert.Equal(t, []int{0, 3, 6}, cyc.Starts[0].Alloc.Nodes[0].Devices, "one GPU per socket")
}
