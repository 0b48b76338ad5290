package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// newPowered returns Mixed4 with power saving: nodes idle 10 minutes are
// powered down (Slurm's default SuspendTimeout and ResumeTimeout), never
// a100-02; with bf, EASY backfill at a one-second resolution.
func newPowered(t *testing.T, bf bool) *scheduler.Scheduler {
	t.Helper()
	cfg := clustertest.Mixed4()
	cfg.Power = &scheduler.PowerConfig{SuspendTime: 10 * time.Minute, SuspendExcNodes: []string{"a100-02"}}
	if bf {
		cfg.Backfill = &backfill.Config{Mode: backfill.EASY, Resolution: time.Second}
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

// powerOf returns the named node's power state.
func powerOf(t *testing.T, s *scheduler.Scheduler, name string) scheduler.PowerState {
	t.Helper()
	n, ok := s.Node(name)
	require.True(t, ok, name)
	return n.Power
}

// powerDownIdle runs the cycles that power down every idle node that may
// be: the first sees them idle at t0, SuspendTime later they go
// POWERING_DOWN, SuspendTimeout later POWERED_DOWN. It returns the time
// of the last cycle.
func powerDownIdle(t *testing.T, s *scheduler.Scheduler) time.Time {
	t.Helper()
	c := mustSchedule(t, s, t0)
	assert.Empty(t, c.PowerDown)
	c = mustSchedule(t, s, t0.Add(9*time.Minute))
	assert.Empty(t, c.PowerDown, "idle for less than SuspendTime")
	c = mustSchedule(t, s, t0.Add(10*time.Minute))
	assert.Equal(t, []string{"h100-01", "h100-02", "a100-01"}, c.PowerDown, "a100-02 is in SuspendExcNodes")
	assert.Equal(t, scheduler.PowerPoweringDown, powerOf(t, s, "h100-01"))
	assert.Equal(t, "%", powerOf(t, s, "h100-01").Suffix())
	at := t0.Add(10*time.Minute + scheduler.DefaultSuspendTimeout)
	mustSchedule(t, s, at)
	assert.Equal(t, scheduler.PowerPoweredDown, powerOf(t, s, "h100-01"))
	assert.Equal(t, scheduler.PowerOn, powerOf(t, s, "a100-02"))
	return at
}

// TestPowerSavingSuspendsIdleAndResumesOnDemand checks Slurm's cycle of
// power saving without backfill: idle nodes are powered down after
// SuspendTime, a job that needs one powers exactly one up (and waits,
// not starting on a booting node, nor waking more while it boots), and
// starts once the node is reported up.
func TestPowerSavingSuspendsIdleAndResumesOnDemand(t *testing.T) {
	s := newPowered(t, false)
	now := powerDownIdle(t, s)

	now = now.Add(time.Minute)
	id := mustSubmit(t, s, now, scheduler.JobSpec{User: "u", Partition: "h100", GRESPerNode: gpus(8)})
	c := mustSchedule(t, s, now)
	require.Equal(t, []scheduler.PowerUp{{Node: "h100-01", Job: id}}, c.PowerUp)
	assert.Empty(t, c.Starts, "never started on a node that is not up")
	assert.Equal(t, policy.ReasonResources, reasonOf(c, id))
	assert.Equal(t, scheduler.PowerPoweringUp, powerOf(t, s, "h100-01"))

	c = mustSchedule(t, s, now.Add(10*time.Second))
	assert.Empty(t, c.PowerUp, "the node it waits for is booting: nothing more is woken")
	assert.Empty(t, c.Starts)

	require.NoError(t, s.NodePoweredUp(now.Add(20*time.Second), "h100-01"))
	c = mustSchedule(t, s, now.Add(20*time.Second))
	require.Len(t, c.Starts, 1)
	assert.Equal(t, id, c.Starts[0].Job)
	assert.Equal(t, "h100-01", c.Starts[0].Alloc.Nodes[0].Name)
}

// TestResumeTimeoutMarksNodeDown checks that a node not reported up
// within ResumeTimeout is marked DOWN, as Slurm does, and that the job
// then wakes another node.
func TestResumeTimeoutMarksNodeDown(t *testing.T) {
	s := newPowered(t, false)
	now := powerDownIdle(t, s).Add(time.Minute)
	id := mustSubmit(t, s, now, scheduler.JobSpec{User: "u", Partition: "h100", GRESPerNode: gpus(8)})
	c := mustSchedule(t, s, now)
	require.Len(t, c.PowerUp, 1)

	later := now.Add(scheduler.DefaultResumeTimeout)
	c = mustSchedule(t, s, later)
	assert.Equal(t, []string{"h100-01"}, c.ResumeTimedOut)
	n, _ := s.Node("h100-01")
	assert.Equal(t, scheduler.NodeDown, n.State)
	assert.Equal(t, "ResumeTimeout reached", n.Reason)
	assert.Equal(t, scheduler.PowerPoweredDown, n.Power)
	assert.Equal(t, []scheduler.PowerUp{{Node: "h100-02", Job: id}}, c.PowerUp)

	// A late registration powers it on but leaves it DOWN until resumed.
	require.NoError(t, s.NodePoweredUp(later, "h100-01"))
	n, _ = s.Node("h100-01")
	assert.Equal(t, scheduler.NodeDown, n.State)
	assert.Equal(t, scheduler.PowerOn, n.Power)
}

// TestBackfillPlansOntoPoweredDownNodes checks that the backfill plan
// counts a powered-down node as free once it could have booted: the top
// job's expected start is now + ResumeTimeout, and its node is woken.
func TestBackfillPlansOntoPoweredDownNodes(t *testing.T) {
	s := newPowered(t, true)
	now := powerDownIdle(t, s).Add(time.Minute)
	id := mustSubmit(t, s, now, scheduler.JobSpec{User: "u", Partition: "h100", GRESPerNode: gpus(8), TimeLimit: time.Hour})
	c := mustSchedule(t, s, now)
	assert.Empty(t, c.Starts)
	require.Len(t, c.PowerUp, 1)
	assert.Equal(t, id, c.PowerUp[0].Job)
	j, _ := s.Job(id)
	assert.Equal(t, now.Add(scheduler.DefaultResumeTimeout), j.ExpectedStart)
	assert.Equal(t, []string{c.PowerUp[0].Node}, j.PlannedNodes)

	require.NoError(t, s.NodePoweredUp(now.Add(30*time.Second), c.PowerUp[0].Node))
	c = mustSchedule(t, s, now.Add(30*time.Second))
	require.Len(t, c.Starts, 1)
	assert.Equal(t, id, c.Starts[0].Job)
}

// TestPowerEventsValidated checks the explicit power events (scontrol
// power_down / power_up) and that a refused one changes nothing.
func TestPowerEventsValidated(t *testing.T) {
	s := newPowered(t, false)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", Partition: "h100", GRESPerNode: gpus(8)})
	c := mustSchedule(t, s, t0)
	require.Len(t, c.Starts, 1)
	busy := c.Starts[0].Alloc.Nodes[0].Name
	require.ErrorIs(t, s.PowerDownNode(t0, busy), scheduler.ErrNodeInUse)
	require.ErrorIs(t, s.PowerUpNode(t0, "a100-01"), scheduler.ErrPowerState, "already on")
	require.ErrorIs(t, s.NodePoweredUp(t0, "a100-01"), scheduler.ErrPowerState, "not booting")
	require.ErrorIs(t, s.PowerDownNode(t0, "nope"), scheduler.ErrUnknownNode)

	require.NoError(t, s.PowerDownNode(t0, "a100-01"))
	assert.Equal(t, scheduler.PowerPoweringDown, powerOf(t, s, "a100-01"))
	require.ErrorIs(t, s.PowerUpNode(t0, "a100-01"), scheduler.ErrPowerState, "still powering down")
	mustSchedule(t, s, t0.Add(scheduler.DefaultSuspendTimeout))
	assert.Equal(t, scheduler.PowerPoweredDown, powerOf(t, s, "a100-01"))
	require.NoError(t, s.PowerUpNode(t0.Add(time.Minute), "a100-01"))
	assert.Equal(t, scheduler.PowerPoweringUp, powerOf(t, s, "a100-01"))
	require.NoError(t, s.Finish(t0.Add(time.Minute), id, 0))

	plain := newMixed(t)
	require.ErrorIs(t, plain.PowerDownNode(t0, "a100-01"), scheduler.ErrPowerState, "power saving off")

	cfg := clustertest.Mixed4()
	cfg.Power = &scheduler.PowerConfig{}
	_, err := scheduler.New(cfg)
	require.ErrorIs(t, err, scheduler.ErrInvalidConfig, "SuspendTime is required")
	cfg.Power = &scheduler.PowerConfig{SuspendTime: time.Minute, SuspendExcParts: []string{"nope"}}
	_, err = scheduler.New(cfg)
	require.ErrorIs(t, err, scheduler.ErrUnknownPartition)
}

// TestAddNodePoweredDown checks a cloud node added powered down: it is
// woken for the first job that needs it.
func TestAddNodePoweredDown(t *testing.T) {
	s := newPowered(t, false)
	_, err := s.Apply(t0, scheduler.AddNodeEvent{Node: clustertest.DGXNode("cloud-01"), Partitions: []string{"h100"}, PoweredDown: true})
	require.NoError(t, err)
	assert.Equal(t, scheduler.PowerPoweredDown, powerOf(t, s, "cloud-01"))
	for range 3 {
		mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", Partition: "h100", GRESPerNode: gpus(8)})
	}
	c := mustSchedule(t, s, t0)
	assert.Len(t, c.Starts, 2)
	require.Len(t, c.PowerUp, 1)
	assert.Equal(t, "cloud-01", c.PowerUp[0].Node)
}

// TestReadsAfterAddingPoweredDownNode: between an AddNode that leaves the
// kept backfill profile stale (a node added powered down) and the next
// cycle, Explain and IdleCapacity answer (on demand) instead of failing
// on a profile that lacks the node.
func TestReadsAfterAddingPoweredDownNode(t *testing.T) {
	s := newPowered(t, true)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", Partition: "h100", Nodes: 2, GRESPerNode: gpus(8), TimeLimit: time.Hour})
	wait := mustSubmit(t, s, t0, scheduler.JobSpec{User: "u", Partition: "h100", Nodes: 2, GRESPerNode: gpus(8), TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	_, err := s.Apply(t0, scheduler.AddNodeEvent{Node: clustertest.DGXNode("cloud-01"), Partitions: []string{"h100"}, PoweredDown: true})
	require.NoError(t, err)
	for _, j := range []scheduler.JobID{id, wait} {
		_, err := s.Explain(t0, j, scheduler.ExplainOptions{Counterfactuals: true})
		require.NoError(t, err, "job %d", j)
	}
	rep := s.IdleCapacity(t0)
	require.NotEmpty(t, rep.String())
	mustSchedule(t, s, t0.Add(time.Minute))
	_, err = s.Explain(t0.Add(time.Minute), wait, scheduler.ExplainOptions{})
	require.NoError(t, err)
}

// TestBlockedPartitionHoldsItsPoweredDownNodes checks that, as a job
// waiting for resources holds back its partition's nodes from the rest
// of the main pass, it holds back the partition's powered-down nodes: a
// lower-tier job may not wake them.
func TestBlockedPartitionHoldsItsPoweredDownNodes(t *testing.T) {
	s := newPowered(t, false)
	now := powerDownIdle(t, s).Add(time.Minute)
	require.NoError(t, s.NodePoweredUp(now, "h100-01"))
	mustSubmit(t, s, now, scheduler.JobSpec{User: "u", Partition: "h100", GRESPerNode: gpus(8)})
	c := mustSchedule(t, s, now)
	require.Len(t, c.Starts, 1)
	require.Empty(t, c.PowerUp)

	// Two whole h100 nodes: one runs a job, so this waits even with
	// h100-02 booted, and holds the h100 partition.
	a := mustSubmit(t, s, now, scheduler.JobSpec{User: "u", Partition: "h100", Nodes: 2, GRESPerNode: gpus(8)})
	b := mustSubmit(t, s, now, scheduler.JobSpec{User: "v", Partition: "gpu", GRESPerNode: typed("h100", 8)})
	c = mustSchedule(t, s, now.Add(time.Second))
	assert.Equal(t, policy.ReasonResources, reasonOf(c, a))
	assert.Equal(t, policy.ReasonResources, reasonOf(c, b))
	assert.Empty(t, c.PowerUp, "h100-02 is held for the blocked h100 queue")
}
