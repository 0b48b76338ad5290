package scheduler_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

var t0 = clustertest.Epoch

func gpus(n int64) []gres.Request { return []gres.Request{{Name: "gpu", Count: n}} }

func typed(t string, n int64) []gres.Request { return []gres.Request{{Name: "gpu", Type: t, Count: n}} }

func newMixed(t *testing.T) *scheduler.Scheduler {
	t.Helper()
	s, err := scheduler.New(clustertest.Mixed4())
	require.NoError(t, err)
	return s
}

func mustSubmit(t *testing.T, s *scheduler.Scheduler, at time.Time, spec scheduler.JobSpec) scheduler.JobID {
	t.Helper()
	id, err := s.Submit(at, spec)
	require.NoError(t, err)
	return id
}

func mustSchedule(t *testing.T, s *scheduler.Scheduler, at time.Time) scheduler.Cycle {
	t.Helper()
	c, err := s.Schedule(at)
	require.NoError(t, err)
	return c
}

func reasonOf(c scheduler.Cycle, id scheduler.JobID) policy.Reason {
	for _, p := range c.Pending {
		if p.Job == id {
			return p.Reason
		}
	}
	return policy.ReasonNone
}

func TestConfigValidate(t *testing.T) {
	good := clustertest.Mixed4
	tests := []struct {
		name   string
		mutate func(*scheduler.Config)
		want   string
	}{
		{"no nodes", func(c *scheduler.Config) { c.Nodes = nil }, "no nodes"},
		{"dup node", func(c *scheduler.Config) { c.Nodes[1].Name = c.Nodes[0].Name }, `node "h100-01": duplicate name`},
		{"zero cpus", func(c *scheduler.Config) { c.Nodes[0].CPUs = 0 }, "CPUs 0 out of range"},
		{"negative mem", func(c *scheduler.Config) { c.Nodes[0].MemoryMiB = -1 }, "MemoryMiB -1"},
		{"no partitions", func(c *scheduler.Config) { c.Partitions = nil }, "no partitions"},
		{"unknown node in partition", func(c *scheduler.Config) { c.Partitions[1].Nodes = []string{"nope"} }, `partition "h100": unknown node "nope"`},
		{"two defaults", func(c *scheduler.Config) { c.Partitions[1].Default = true }, "2 partitions marked Default"},
		{"default over max", func(c *scheduler.Config) { c.Partitions[1].DefaultTime = 5 * time.Hour }, "DefaultTime 5h0m0s exceeds MaxTime 4h0m0s"},
		{"negative max time", func(c *scheduler.Config) { c.Partitions[0].MaxTime = -time.Second }, "MaxTime -1s"},
		{"min over max nodes", func(c *scheduler.Config) { c.Partitions[0].MinNodes, c.Partitions[0].MaxNodes = 3, 2 }, "MinNodes 3 / MaxNodes 2"},
		{"tier too big", func(c *scheduler.Config) { c.Partitions[0].PriorityTier = 70000 }, "PriorityTier 70000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good()
			tc.mutate(&cfg)
			err := cfg.Validate()
			require.Error(t, err)
			assert.ErrorIs(t, err, scheduler.ErrInvalidConfig)
			assert.Contains(t, err.Error(), tc.want)
			_, err = scheduler.New(cfg)
			assert.ErrorIs(t, err, scheduler.ErrInvalidConfig)
		})
	}
	cfg := good()
	require.NoError(t, cfg.Validate())
}

func TestSubmitRejectsBadJobs(t *testing.T) {
	tests := []struct {
		name string
		spec scheduler.JobSpec
		is   error
		want string
	}{
		{"unknown partition", scheduler.JobSpec{Partition: "nope"}, scheduler.ErrUnknownPartition, `unknown partition "nope"`},
		{"negative nodes", scheduler.JobSpec{Nodes: -1}, scheduler.ErrInvalidJob, "Nodes -1"},
		{"huge nodes", scheduler.JobSpec{Nodes: 1 << 40}, scheduler.ErrInvalidJob, "out of range"},
		{"negative time", scheduler.JobSpec{TimeLimit: -time.Minute}, scheduler.ErrInvalidJob, "TimeLimit -1m0s"},
		{"negative mem", scheduler.JobSpec{MemPerNodeMiB: -5}, scheduler.ErrInvalidJob, "MemPerNodeMiB -5"},
		{"tasks below nodes", scheduler.JobSpec{Nodes: 3, Tasks: 2}, scheduler.ErrInvalidJob, "Tasks 2 fewer than Nodes 3"},
		{"unknown gpu type", scheduler.JobSpec{GRESPerNode: typed("v100", 1)}, scheduler.ErrUnsatisfiable, `GRES "gpu:v100"`},
		{"too many gpus per node", scheduler.JobSpec{GRESPerNode: gpus(9)}, scheduler.ErrUnsatisfiable, "only 0 exist"},
		{"too many nodes", scheduler.JobSpec{Nodes: 5}, scheduler.ErrUnsatisfiable, "needs 5 node(s)"},
		{"h100 partition has no a100", scheduler.JobSpec{Partition: "h100", GRESPerNode: typed("a100", 1)}, scheduler.ErrUnsatisfiable, `partition "h100"`},
		{"too much memory", scheduler.JobSpec{MemPerNodeMiB: 3000 * clustertest.GiB}, scheduler.ErrUnsatisfiable, "mem="},
		{"negative gres", scheduler.JobSpec{GRESPerNode: gpus(-1)}, scheduler.ErrInvalidJob, "count -1"},
		{"gpus per task overflow", scheduler.JobSpec{Tasks: 1 << 22, GRESPerTask: gpus(1 << 40)}, scheduler.ErrInvalidJob, "overflows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newMixed(t)
			_, err := s.Submit(t0, tc.spec)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.is)
			assert.Contains(t, err.Error(), tc.want)
			p, r := s.Counts()
			assert.Zero(t, p+r, "a rejected job must not be queued")
			assert.Empty(t, s.Jobs())
		})
	}
}

func TestTimeGoesForwardOnly(t *testing.T) {
	s := newMixed(t)
	mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{})
	_, err := s.Submit(t0, scheduler.JobSpec{})
	assert.ErrorIs(t, err, scheduler.ErrTimeWentBackwards)
	_, err = s.Schedule(t0)
	assert.ErrorIs(t, err, scheduler.ErrTimeWentBackwards)
	p, _ := s.Counts()
	assert.Equal(t, 1, p)
}

func TestFCFSPlacesGPUsByIndex(t *testing.T) {
	s := newMixed(t)
	a := mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", GRESPerNode: gpus(4), CPUsPerTask: 8})
	b := mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", GRESPerNode: typed("a100", 2)})
	c := mustSubmit(t, s, t0, scheduler.JobSpec{User: "cat", GRESPerNode: gpus(4)})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 3)
	assert.Empty(t, cyc.Pending)

	ja, _ := s.Job(a)
	jb, _ := s.Job(b)
	jc, _ := s.Job(c)
	require.Len(t, ja.Alloc.Nodes, 1)
	assert.Equal(t, "h100-01", ja.Alloc.Nodes[0].Name)
	assert.Len(t, ja.Alloc.Nodes[0].Devices, 4)
	assert.Len(t, ja.Alloc.Nodes[0].CPUs, 8)
	assert.Equal(t, "a100-01", jb.Alloc.Nodes[0].Name, "typed a100 request goes to the first a100 node")
	assert.Len(t, jb.Alloc.Nodes[0].Devices, 2)
	assert.Equal(t, "h100-01", jc.Alloc.Nodes[0].Name, "first fit packs the second 4-GPU job on the same node")
	assert.Empty(t, intersect(ja.Alloc.Nodes[0].Devices, jc.Alloc.Nodes[0].Devices), "no GPU index given twice")

	n, _ := s.Node("h100-01")
	assert.Equal(t, scheduler.NodeMixed, n.State)
	id := s.Registry().MustLookup("gres/gpu")
	assert.Zero(t, n.Free.At(id))
	h100 := s.Registry().MustLookup("gres/gpu:h100")
	assert.Zero(t, n.Free.At(h100))
}

func intersect(a, b []int) []int {
	var out []int
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
			}
		}
	}
	return out
}

func TestFCFSBlocksPartitionBehindResources(t *testing.T) {
	s := newMixed(t)
	// Fill all four nodes with whole-node jobs.
	var fill []scheduler.JobID
	for range 4 {
		fill = append(fill, mustSubmit(t, s, t0, scheduler.JobSpec{Exclusive: true}))
	}
	big := mustSubmit(t, s, t0.Add(time.Second), scheduler.JobSpec{Nodes: 2, Exclusive: true})
	small := mustSubmit(t, s, t0.Add(2*time.Second), scheduler.JobSpec{GRESPerNode: gpus(1)})
	cyc := mustSchedule(t, s, t0.Add(3*time.Second))
	assert.Len(t, cyc.Starts, 4)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, big))
	assert.Equal(t, policy.ReasonPriority, reasonOf(cyc, small))

	// One node frees: the small job fits there but must not overtake the
	// 2-node job (strict FCFS, no backfill yet).
	require.NoError(t, s.Finish(t0.Add(time.Minute), fill[0], 0))
	cyc = mustSchedule(t, s, t0.Add(time.Minute))
	assert.Empty(t, cyc.Starts)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, big))
	assert.Equal(t, policy.ReasonPriority, reasonOf(cyc, small))

	require.NoError(t, s.Finish(t0.Add(2*time.Minute), fill[1], 0))
	cyc = mustSchedule(t, s, t0.Add(2*time.Minute))
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, big, cyc.Starts[0].Job)
	assert.Equal(t, []string{"h100-01", "h100-02"}, cyc.Starts[0].Alloc.NodeNames())
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, small))
}

func TestHigherTierPartitionGoesFirst(t *testing.T) {
	s := newMixed(t)
	low := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "gpu", Nodes: 4, Exclusive: true})
	high := mustSubmit(t, s, t0.Add(time.Second), scheduler.JobSpec{Partition: "h100", GRESPerNode: gpus(8)})
	cyc := mustSchedule(t, s, t0.Add(time.Second))
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, high, cyc.Starts[0].Job, "tier 2 partition is evaluated before tier 1")
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, low))
}

func TestPendingReasons(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Partitions = append(cfg.Partitions,
		scheduler.PartitionConfig{Name: "down", State: scheduler.PartitionDown},
		scheduler.PartitionConfig{Name: "small", MaxNodes: 1, MinNodes: 1, MaxTime: time.Hour},
	)
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	begin := mustSubmit(t, s, t0, scheduler.JobSpec{BeginTime: t0.Add(time.Hour)})
	down := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "down"})
	tooLong := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "small", TimeLimit: 2 * time.Hour})
	tooWide := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "small", Nodes: 2})
	h100 := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: typed("h100", 1)})
	require.NoError(t, s.DrainNode(t0, "h100-01", "maintenance"))
	_, err = s.DownNode(t0, "h100-02", "psu")
	require.NoError(t, err)

	cyc := mustSchedule(t, s, t0)
	assert.Empty(t, cyc.Starts)
	assert.Equal(t, policy.ReasonBeginTime, reasonOf(cyc, begin))
	assert.Equal(t, policy.ReasonPartitionDown, reasonOf(cyc, down))
	assert.Equal(t, policy.ReasonPartitionTimeLimit, reasonOf(cyc, tooLong))
	assert.Equal(t, policy.ReasonPartitionNodeLimit, reasonOf(cyc, tooWide))
	assert.Equal(t, policy.ReasonReqNodeNotAvail, reasonOf(cyc, h100))

	// Begin time reached and an h100 node back: both start.
	require.NoError(t, s.ResumeNode(t0.Add(time.Hour), "h100-01"))
	cyc = mustSchedule(t, s, t0.Add(time.Hour))
	started := map[scheduler.JobID]bool{}
	for _, st := range cyc.Starts {
		started[st.Job] = true
	}
	assert.True(t, started[begin])
	assert.True(t, started[h100])
	j, _ := s.Job(h100)
	assert.Equal(t, "h100-01", j.Alloc.Nodes[0].Name)
}

func TestSubmitToDrainedPartitionRejected(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Partitions[1].State = scheduler.PartitionDrain
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	_, err = s.Submit(t0, scheduler.JobSpec{Partition: "h100"})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob)
	assert.Contains(t, err.Error(), "DRAIN")
}

func TestLifecycleEventsAndErrors(t *testing.T) {
	s := newMixed(t)
	a := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(8), TimeLimit: time.Hour})
	b := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(1)})

	err := s.Finish(t0, a, 0)
	assert.ErrorIs(t, err, scheduler.ErrJobState, "finishing a pending job")
	assert.ErrorIs(t, s.Finish(t0, 999, 0), scheduler.ErrUnknownJob)
	assert.ErrorIs(t, s.Cancel(t0, 999), scheduler.ErrUnknownJob)
	assert.ErrorIs(t, s.Requeue(t0, a), scheduler.ErrJobState)
	assert.ErrorIs(t, s.DrainNode(t0, "nope", ""), scheduler.ErrUnknownNode)

	mustSchedule(t, s, t0)
	require.NoError(t, s.Cancel(t0.Add(time.Minute), b))
	jb, _ := s.Job(b)
	assert.Equal(t, scheduler.JobCancelled, jb.State)
	assert.ErrorIs(t, s.Cancel(t0.Add(time.Minute), b), scheduler.ErrJobState, "cancel twice")

	// a runs into its time limit.
	cyc := mustSchedule(t, s, t0.Add(2*time.Hour))
	require.Len(t, cyc.Ended, 1)
	assert.Equal(t, scheduler.Ended{Job: a, State: scheduler.JobTimeout, Reason: policy.ReasonTimeLimit}, cyc.Ended[0])
	ja, _ := s.Job(a)
	assert.Equal(t, t0.Add(time.Hour), ja.EndTime, "a timed-out job ends at its deadline")
	for _, n := range s.Nodes() {
		assert.Equal(t, scheduler.NodeIdle, n.State, n.Name)
		assert.True(t, n.Free.Equal(n.Capacity), n.Name)
	}
}

func TestFinishStates(t *testing.T) {
	s := newMixed(t)
	ok := mustSubmit(t, s, t0, scheduler.JobSpec{})
	bad := mustSubmit(t, s, t0, scheduler.JobSpec{})
	mustSchedule(t, s, t0)
	require.NoError(t, s.Finish(t0.Add(time.Minute), ok, 0))
	require.NoError(t, s.Finish(t0.Add(time.Minute), bad, 3))
	j, _ := s.Job(ok)
	assert.Equal(t, scheduler.JobCompleted, j.State)
	j, _ = s.Job(bad)
	assert.Equal(t, scheduler.JobFailed, j.State)
	assert.Equal(t, 3, j.ExitCode)
}

func TestDownNodeFailsOrRequeues(t *testing.T) {
	s := newMixed(t)
	plain := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", Nodes: 2, GRESPerNode: gpus(2), Requeue: scheduler.RequeueNo})
	requeue := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", GRESPerNode: gpus(2), Requeue: scheduler.RequeueYes})
	mustSchedule(t, s, t0)
	affected, err := s.DownNode(t0.Add(time.Minute), "h100-01", "gpu fell off the bus")
	require.NoError(t, err)
	assert.ElementsMatch(t, []scheduler.JobID{plain, requeue}, affected)
	jp, _ := s.Job(plain)
	assert.Equal(t, scheduler.JobNodeFail, jp.State)
	jr, _ := s.Job(requeue)
	assert.Equal(t, scheduler.JobPending, jr.State)
	assert.Equal(t, 1, jr.Restarts)
	n2, _ := s.Node("h100-02")
	assert.Equal(t, scheduler.NodeIdle, n2.State, "the failed job's other node is freed too")
	n1, _ := s.Node("h100-01")
	assert.Equal(t, scheduler.NodeDown, n1.State)
	assert.Equal(t, "gpu fell off the bus", n1.Reason)

	cyc := mustSchedule(t, s, t0.Add(2*time.Minute))
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, "h100-02", cyc.Starts[0].Alloc.Nodes[0].Name)
}

func TestDrainingNodeKeepsJobs(t *testing.T) {
	s := newMixed(t)
	a := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", GRESPerNode: gpus(1)})
	mustSchedule(t, s, t0)
	require.NoError(t, s.DrainNode(t0, "h100-01", "update"))
	n, _ := s.Node("h100-01")
	assert.Equal(t, scheduler.NodeDraining, n.State)
	b := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", GRESPerNode: gpus(1)})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, b, cyc.Starts[0].Job)
	assert.Equal(t, "h100-02", cyc.Starts[0].Alloc.Nodes[0].Name)
	require.NoError(t, s.Finish(t0.Add(time.Minute), a, 0))
	n, _ = s.Node("h100-01")
	assert.Equal(t, scheduler.NodeDrained, n.State)
}

func TestGRESPerTaskAndPerJob(t *testing.T) {
	s := newMixed(t)
	perTask := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", Tasks: 3, GRESPerTask: gpus(2)})
	perJob := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", Nodes: 2, GRESPerJob: gpus(4)})
	mustSchedule(t, s, t0)
	j, _ := s.Job(perTask)
	assert.Len(t, j.Alloc.Nodes[0].Devices, 6)
	assert.Len(t, j.Alloc.Nodes[0].CPUs, 3)
	j, _ = s.Job(perJob)
	require.Len(t, j.Alloc.Nodes, 2)
	for _, na := range j.Alloc.Nodes {
		assert.Len(t, na.Devices, 2)
	}
	total := j.Alloc.Total()
	assert.Equal(t, int64(4), total.At(s.Registry().MustLookup("gres/gpu")))
	assert.Equal(t, int64(4), total.At(s.Registry().MustLookup("gres/gpu:h100")), "typed TRES counted too")
}

// TestStartAllocationIsCallerOwned checks that a start's allocation is
// the caller's: writing into it, or appending to one node's slices, changes
// neither the scheduler's record of the job nor the start's other nodes.
func TestStartAllocationIsCallerOwned(t *testing.T) {
	s, err := scheduler.New(clustertest.Mixed4())
	require.NoError(t, err)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Name: "two", User: "ann", Partition: "h100", Nodes: 2, Tasks: 4,
		CPUsPerTask: 2, GRESPerNode: []gres.Request{{Name: "gpu", Count: 2}}, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 1)
	got := cyc.Starts[0].Alloc
	require.Len(t, got.Nodes, 2)
	want, ok := s.Job(id)
	require.True(t, ok)
	require.Equal(t, want.Alloc, got)
	second := scheduler.NodeAlloc{Node: got.Nodes[1].Node, Name: got.Nodes[1].Name, MemoryMiB: got.Nodes[1].MemoryMiB,
		DeviceQuality: got.Nodes[1].DeviceQuality, CPUs: slices.Clone(got.Nodes[1].CPUs),
		Devices: slices.Clone(got.Nodes[1].Devices), TRES: got.Nodes[1].TRES.Clone()}

	first := &got.Nodes[0]
	first.CPUs = append(first.CPUs, -1, -1, -1, -1)
	first.Devices = append(first.Devices, -1, -1)
	first.TRES = append(first.TRES, 7, 7, 7)
	for k := range first.CPUs {
		first.CPUs[k] = -2
	}
	clear(first.TRES)
	assert.Equal(t, second, got.Nodes[1], "appending to one node's slices must not write into the next node's")
	now, ok := s.Job(id)
	require.True(t, ok)
	assert.Equal(t, want.Alloc, now.Alloc, "the scheduler's record must not change")
}
