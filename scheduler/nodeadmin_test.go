package scheduler_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
)

// TestAddNodeRunsPendingJobs checks that a node added at run time joins
// the partitions over all nodes and those it names, and that a job no
// node could hold so far waits, then starts on it in the next cycle.
func TestAddNodeRunsPendingJobs(t *testing.T) {
	s := newMixed(t)
	// Both h100 nodes taken whole: the next h100 job waits.
	for range 2 {
		mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", Partition: "h100", GRESPerNode: gpus(8), CPUsPerTask: 8})
	}
	third := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", Partition: "h100", GRESPerNode: gpus(8), CPUsPerTask: 8})
	c := mustSchedule(t, s, t0)
	require.Len(t, c.Starts, 2)
	assert.Equal(t, policy.ReasonResources, reasonOf(c, third))

	at := t0.Add(time.Minute)
	require.NoError(t, s.AddNode(at, clustertest.DGXNode("h100-03"), "h100"))
	ni, ok := s.Node("h100-03")
	require.True(t, ok)
	assert.Equal(t, 4, ni.Index, "a new node takes the next index")
	assert.Equal(t, scheduler.NodeIdle, ni.State)
	nc, ok := s.NodeConfig("h100-03")
	require.True(t, ok)
	assert.Equal(t, 112, nc.CPUs)

	c = mustSchedule(t, s, at)
	require.Len(t, c.Starts, 1)
	assert.Equal(t, third, c.Starts[0].Job)
	assert.Equal(t, "h100-03", c.Starts[0].Alloc.Nodes[0].Name)

	// Errors change nothing: duplicate name, unknown partition, a GRES
	// name the registry does not hold, time going backwards.
	before := s.Nodes()
	err := s.AddNode(at, clustertest.DGXNode("h100-03"))
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig)
	err = s.AddNode(at, clustertest.DGXNode("h100-04"), "nope")
	assert.ErrorIs(t, err, scheduler.ErrUnknownPartition)
	err = s.AddNode(at, scheduler.NodeConfig{Name: "x", CPUs: 4, GRES: []gres.Request{{Name: "fpga", Count: 1}}})
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "gres/fpga is not in the TRES registry")
	err = s.AddNode(at, scheduler.NodeConfig{Name: "y", CPUs: 0})
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig)
	err = s.AddNode(t0, clustertest.DGXNode("h100-05"))
	assert.ErrorIs(t, err, scheduler.ErrTimeWentBackwards)
	assert.Equal(t, before, s.Nodes())
	_, ok = s.Node("h100-04")
	assert.False(t, ok)
}

// TestRemoveNodeRefusedWhileBusy checks that a node running a job cannot
// be removed, that an idle one can (its index stays a tombstone, its name
// is free again), and that jobs then no longer see it.
func TestRemoveNodeRefusedWhileBusy(t *testing.T) {
	s := newMixed(t)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", Partition: "h100", GRESPerNode: gpus(8)})
	c := mustSchedule(t, s, t0)
	require.Len(t, c.Starts, 1)
	busy := c.Starts[0].Alloc.Nodes[0].Name
	err := s.RemoveNode(t0, busy)
	require.ErrorIs(t, err, scheduler.ErrNodeInUse)
	require.NoError(t, s.Finish(t0.Add(time.Minute), id, 0))
	// The h100 partition lists both h100 nodes: removing one leaves it one.
	require.NoError(t, s.RemoveNode(t0.Add(time.Minute), busy))
	_, ok := s.Node(busy)
	assert.False(t, ok)
	assert.Len(t, s.Nodes(), 3)
	for _, n := range s.Nodes() {
		assert.NotEqual(t, 0, n.Index, "the removed node's index is skipped")
	}
	other := "h100-02"
	if busy == other {
		other = "h100-01"
	}
	err = s.RemoveNode(t0.Add(time.Minute), other)
	require.ErrorIs(t, err, scheduler.ErrInvalidConfig, "the last node of partition h100")
	// Two h100 jobs: only one node is left to run them.
	a := mustSubmit(t, s, t0.Add(2*time.Minute), scheduler.JobSpec{User: "u", Partition: "h100", GRESPerNode: gpus(8)})
	b := mustSubmit(t, s, t0.Add(2*time.Minute), scheduler.JobSpec{User: "u", Partition: "h100", GRESPerNode: gpus(8)})
	c = mustSchedule(t, s, t0.Add(2*time.Minute))
	require.Len(t, c.Starts, 1)
	assert.Equal(t, a, c.Starts[0].Job)
	assert.Equal(t, other, c.Starts[0].Alloc.Nodes[0].Name)
	assert.Equal(t, policy.ReasonResources, reasonOf(c, b))
	// The name is free again: a new node with it takes a new index.
	require.NoError(t, s.AddNode(t0.Add(3*time.Minute), clustertest.DGXNode(busy), "h100"))
	ni, _ := s.Node(busy)
	assert.Equal(t, 4, ni.Index)
	c = mustSchedule(t, s, t0.Add(3*time.Minute))
	require.Len(t, c.Starts, 1)
	assert.Equal(t, b, c.Starts[0].Job)
}

// TestUpdateNodeNeverBelowRunningJobs checks that a node's resources
// cannot drop below what its running jobs hold, that a change that keeps
// them is taken, and that new starts see the new size.
func TestUpdateNodeNeverBelowRunningJobs(t *testing.T) {
	s := newMixed(t)
	mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", Partition: "h100", Nodes: 1, CPUsPerTask: 100, GRESPerNode: gpus(2)})
	c := mustSchedule(t, s, t0)
	require.Len(t, c.Starts, 1)
	name := c.Starts[0].Alloc.Nodes[0].Name
	nc, _ := s.NodeConfig(name)
	before, _ := s.Node(name)

	small := nc
	small.CPUs = 64
	err := s.UpdateNode(t0, small)
	require.ErrorIs(t, err, scheduler.ErrNodeInUse)
	fewer := nc
	fewer.Devices = gres.Inventory{}
	err = s.UpdateNode(t0, fewer)
	require.ErrorIs(t, err, scheduler.ErrNodeInUse)
	after, _ := s.Node(name)
	assert.Equal(t, before, after, "a refused update changes nothing")

	// More memory, fewer CPUs but still above what the job holds.
	bigger := nc
	bigger.CPUs = 104
	bigger.MemoryMiB *= 2
	bigger.Features = []string{"new"}
	require.NoError(t, s.UpdateNode(t0.Add(time.Second), bigger))
	after, _ = s.Node(name)
	assert.Equal(t, int64(104), after.Capacity[gres.CPU])
	assert.Equal(t, int64(4), after.Free[gres.CPU])
	assert.Equal(t, 2*before.Capacity[gres.Mem], after.Capacity[gres.Mem])
	got, _ := s.NodeConfig(name)
	assert.Equal(t, []string{"new"}, got.Features)
	// A job needing 5 CPUs with 6 GPUs does not fit there now.
	j := mustSubmit(t, s, t0.Add(time.Second), scheduler.JobSpec{User: "u", Partition: "h100", CPUsPerTask: 5, GRESPerNode: gpus(6)})
	c = mustSchedule(t, s, t0.Add(time.Second))
	require.Len(t, c.Starts, 1)
	assert.Equal(t, j, c.Starts[0].Job)
	assert.NotEqual(t, name, c.Starts[0].Alloc.Nodes[0].Name)
}

// TestSetNodePartitions checks partition membership changes from the
// node's side.
func TestSetNodePartitions(t *testing.T) {
	s := newMixed(t)
	_, err := s.Submit(t0, scheduler.JobSpec{User: "u", Partition: "h100", CPUsPerTask: 8, GRESPerNode: typed("a100", 1)})
	require.ErrorIs(t, err, scheduler.ErrUnsatisfiable, "no a100 node in h100")
	require.NoError(t, s.SetNodePartitions(t0, "a100-01", "h100"))
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", Partition: "h100", CPUsPerTask: 8, GRESPerNode: typed("a100", 1)})
	c := mustSchedule(t, s, t0)
	require.Len(t, c.Starts, 1)
	assert.Equal(t, id, c.Starts[0].Job)
	assert.Equal(t, "a100-01", c.Starts[0].Alloc.Nodes[0].Name)
	err = s.SetNodePartitions(t0, "a100-01", "nope")
	require.ErrorIs(t, err, scheduler.ErrUnknownPartition)
}

// TestAddedNodeDecidesAsConfigured checks that a scheduler that gained a
// node at run time decides as one configured with it from the start: the
// same starts, the same priorities (the job-size factor and partition
// totals count the new node) and the same backfill estimates.
func TestAddedNodeDecidesAsConfigured(t *testing.T) {
	withPrio := func(c *scheduler.Config) {
		c.Priority = &scheduler.PriorityConfig{
			Engine: priority.Config{Weights: priority.Weights{Age: 1000, JobSize: 5000, Partition: 1000},
				TRESWeights: map[string]float64{"cpu": 2000, "gres/gpu": 3000}},
			CalcPeriod: time.Minute,
		}
		c.Backfill = &backfill.Config{Mode: backfill.EASY, Resolution: time.Second}
	}
	grown := clustertest.Mixed4()
	withPrio(&grown)
	a, err := scheduler.New(grown)
	require.NoError(t, err)
	require.NoError(t, a.AddNode(t0, clustertest.DGXNode("h100-03"), "h100"))

	full := clustertest.Mixed4()
	withPrio(&full)
	full.Nodes = append(full.Nodes, clustertest.DGXNode("h100-03"))
	full.Partitions[1].Nodes = append(full.Partitions[1].Nodes, "h100-03")
	b, err := scheduler.New(full)
	require.NoError(t, err)

	specs := []scheduler.JobSpec{
		{User: "u", Partition: "h100", Nodes: 2, GRESPerNode: gpus(8), TimeLimit: 2 * time.Hour},
		{User: "v", Partition: "h100", Nodes: 2, GRESPerNode: gpus(4), TimeLimit: time.Hour},
		{User: "u", Nodes: 1, CPUsPerTask: 16, GRESPerNode: gpus(2), TimeLimit: 30 * time.Minute},
		{User: "w", Partition: "h100", Nodes: 3, GRESPerNode: gpus(1), TimeLimit: time.Hour},
		{User: "v", Nodes: 4, GRESPerNode: gpus(8), TimeLimit: 3 * time.Hour},
	}
	for k, sp := range specs {
		at := t0.Add(time.Duration(k) * time.Second)
		mustSubmit(t, a, at, sp)
		mustSubmit(t, b, at, sp)
	}
	for k := range 3 {
		at := t0.Add(time.Duration(k) * 2 * time.Minute).Add(10 * time.Second)
		ca, cb := mustSchedule(t, a, at), mustSchedule(t, b, at)
		assert.Equal(t, cb.Starts, ca.Starts, "cycle %d", k)
		assert.Equal(t, cb.Pending, ca.Pending, "cycle %d", k)
	}
	assert.Equal(t, b.Sprio(priority.SprioFormat{}), a.Sprio(priority.SprioFormat{}))
}

// TestUpdateNodeKeepsDeviceHealth checks that device health survives an
// update for the devices that remain, and that the drain the scheduler
// made because every device failed lifts once the update leaves none
// failed.
func TestUpdateNodeKeepsDeviceHealth(t *testing.T) {
	s := newMixed(t)
	for d := range 8 {
		require.NoError(t, s.SetDeviceHealth(t0, "a100-01", d, false, "xid 79"))
	}
	n, _ := s.Node("a100-01")
	require.Equal(t, scheduler.NodeDrained, n.State)
	nc, _ := s.NodeConfig("a100-01")
	nc.MemoryMiB /= 2
	require.NoError(t, s.UpdateNode(t0, nc))
	n, _ = s.Node("a100-01")
	assert.Equal(t, scheduler.NodeDrained, n.State, "the same devices, still unhealthy")
	assert.Len(t, n.UnhealthyDevices, 8)
	assert.Empty(t, n.FreeDevices)

	nc.Devices = gres.Inventory{Devices: nc.Devices.Devices[:4]}
	nc.Devices.Links = nil
	nc.Devices = nc.Devices.Clone()
	require.NoError(t, s.UpdateNode(t0, nc))
	n, _ = s.Node("a100-01")
	assert.Equal(t, scheduler.NodeDrained, n.State)
	assert.Len(t, n.UnhealthyDevices, 4)

	nc.Devices = gres.Inventory{}
	require.NoError(t, s.UpdateNode(t0, nc))
	n, _ = s.Node("a100-01")
	assert.Equal(t, scheduler.NodeIdle, n.State, "no device left to fail: the automatic drain lifts")
	assert.Empty(t, n.UnhealthyDevices)
}

// TestNodeEventsRoundTripJSON checks that every node event survives its
// journal encoding (Entry JSON) unchanged.
func TestNodeEventsRoundTripJSON(t *testing.T) {
	node := scheduler.NodeConfig{Name: "cpu-09", CPUs: 64, MemoryMiB: 256 * clustertest.GiB, Features: []string{"avx512", "flat"},
		ChangeableFeatures: []string{"flat", "cache"}, GRES: []gres.Request{{Name: "shard", Count: 8}}}
	for _, ev := range []scheduler.Event{
		scheduler.AddNodeEvent{Node: node, Partitions: []string{"gpu"}, PoweredDown: true},
		scheduler.RemoveNodeEvent{Node: "cpu-09"},
		scheduler.UpdateNodeEvent{Node: node, SetPartitions: true, Partitions: []string{"h100"}},
		scheduler.PowerDownNodeEvent{Node: "cpu-09"},
		scheduler.PowerUpNodeEvent{Node: "cpu-09"},
		scheduler.NodePoweredUpEvent{Node: "cpu-09"},
		scheduler.RebootNodeEvent{Node: "cpu-09"},
		scheduler.RebootNodeEvent{Node: "cpu-09", Features: []string{"cache", "a\"b,c"}},
		scheduler.NodeRebootedEvent{Node: "cpu-09"},
	} {
		b, err := json.Marshal(scheduler.Entry{At: t0, Event: ev})
		require.NoError(t, err)
		var e scheduler.Entry
		require.NoError(t, json.Unmarshal(b, &e), string(b))
		assert.Equal(t, ev, e.Event, string(b))
	}
}

// TestSnapshotKeepsExclusionOfRemovedNode: a pending job excluding a node
// that was removed since — its name then reused by a new node — restores
// excluding the removed node only, as the original does.
func TestSnapshotKeepsExclusionOfRemovedNode(t *testing.T) {
	s := weighted(t, false)
	spec := wholeNode
	spec.Exclude = []string{"n1"}
	spec.BeginTime = t0.Add(time.Hour)
	id := mustSubmit(t, s, t0, spec)
	require.NoError(t, s.RemoveNode(t0, "n1"))
	require.NoError(t, s.AddNode(t0, scheduler.NodeConfig{Name: "n1", CPUs: 4, MemoryMiB: 1024, Weight: 1}))
	var b bytes.Buffer
	require.NoError(t, s.Snapshot(&b))
	r, err := scheduler.Restore(&b, scheduler.RestoreOptions{})
	require.NoError(t, err)
	later := t0.Add(2 * time.Hour)
	mustSchedule(t, s, later)
	mustSchedule(t, r, later)
	a, _ := s.Job(id)
	c, _ := r.Job(id)
	require.Equal(t, scheduler.JobRunning, a.State)
	assert.Equal(t, a.Alloc.NodeNames(), c.Alloc.NodeNames())
}
