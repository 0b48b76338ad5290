package scheduler_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
)

// TestJobReqNodes: Job.ReqNodes is the node count the job requires
// (sacct's ReqNodes): -N, raised by a -w node list or a counted
// --constraint to the nodes they need, and kept by snapshots.
func TestJobReqNodes(t *testing.T) {
	s := featured(t, false)
	one := whole(1)
	one.CPUsPerTask = 1
	list := one
	list.Nodes = 0
	list.NodeList = "n0,n2,n5"
	counted := one
	counted.Constraint = "[rack1*1&rack2*2]"
	ids := []scheduler.JobID{mustSubmit(t, s, t0, one), mustSubmit(t, s, t0, list), mustSubmit(t, s, t0, counted)}
	want := []int{1, 3, 3}
	check := func(s *scheduler.Scheduler) {
		for k, id := range ids {
			j, ok := s.Job(id)
			require.True(t, ok)
			assert.Equal(t, want[k], j.ReqNodes, "job %d", id)
			req, ok := s.RequestedTRES(id)
			require.True(t, ok)
			assert.Equal(t, int64(want[k]), req[gres.Node], "ReqTRES node= of job %d", id)
		}
	}
	check(s)
	var buf bytes.Buffer
	require.NoError(t, s.Snapshot(&buf))
	r, err := scheduler.Restore(&buf, scheduler.RestoreOptions{})
	require.NoError(t, err)
	check(r)
}
