package scheduler_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// cpuNodes is a cluster of n nodes of cpus CPUs and 64 GiB each.
func taskNodes(n, cpus int) []scheduler.NodeConfig {
	out := make([]scheduler.NodeConfig, n)
	for i := range out {
		out[i] = scheduler.NodeConfig{Name: "c" + string(rune('0'+i)), CPUs: cpus, MemoryMiB: 64 * 1024}
	}
	return out
}

func tasksCluster(t *testing.T, bf bool, nodes []scheduler.NodeConfig) *scheduler.Scheduler {
	t.Helper()
	cfg := scheduler.Config{Nodes: nodes, Partitions: []scheduler.PartitionConfig{{Name: "p", Default: true}}}
	if bf {
		cfg.Backfill = &backfill.Config{}
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

// cpusPerNode returns the CPU count the allocation holds on each node.
func cpusPerNode(a scheduler.Allocation) []int {
	out := make([]int, len(a.Nodes))
	for k, n := range a.Nodes {
		out[k] = len(n.CPUs)
	}
	return out
}

func seq(lo, hi int) []int {
	var out []int
	for i := lo; i <= hi; i++ {
		out = append(out, i)
	}
	return out
}

// sbatch -n 32 on 16-CPU nodes with no -N: Slurm chooses the node count
// that fits the tasks, 2 nodes of 16 CPUs each (rejected before, as one
// node of 32 CPUs).
func TestTasksWithoutNodeCountChooseNodes(t *testing.T) {
	for _, bf := range []bool{false, true} {
		s := tasksCluster(t, bf, taskNodes(4, 16))
		id := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 32, TimeLimit: time.Hour})
		cyc := mustSchedule(t, s, t0)
		require.Len(t, cyc.Starts, 1, "bf=%v", bf)
		j, _ := s.Job(id)
		require.Len(t, j.Alloc.Nodes, 2)
		for _, n := range j.Alloc.Nodes {
			assert.Equal(t, seq(0, 15), n.CPUs)
		}
		assert.Equal(t, int64(32), j.Alloc.Total().At(gres.CPU))
	}
}

// -N2 -n7: tasks dealt one per node in turn, 4+3 CPUs (not 4+4).
func TestTasksSpreadCyclicallyOverNodes(t *testing.T) {
	for _, bf := range []bool{false, true} {
		s := tasksCluster(t, bf, taskNodes(2, 16))
		id := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 2, Tasks: 7, TimeLimit: time.Hour})
		mustSchedule(t, s, t0)
		j, _ := s.Job(id)
		require.Equal(t, scheduler.JobRunning, j.State)
		assert.Equal(t, []int{4, 3}, cpusPerNode(j.Alloc))
		assert.Equal(t, int64(7), j.Alloc.Total().At(gres.CPU))
	}
}

// -N2 -n5 --gpus-per-task=2 on nodes with 8 and 4 free GPUs runs: the
// 4-GPU node holds two tasks and the other three (3+2), where ceil(5/2)
// = 3 tasks (6 GPUs) per node was refused.
func TestTasksWithGPUsPerTaskFitUnevenNodes(t *testing.T) {
	for _, bf := range []bool{false, true} {
		s := tasksCluster(t, bf, []scheduler.NodeConfig{gpuNode("g0", 2, 16, 4, true), gpuNode("g1", 1, 16, 4, true)})
		id := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 2, Tasks: 5, GRESPerTask: gpus(2), TimeLimit: time.Hour})
		cyc := mustSchedule(t, s, t0)
		require.Len(t, cyc.Starts, 1, "bf=%v", bf)
		j, _ := s.Job(id)
		require.Len(t, j.Alloc.Nodes, 2)
		assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, j.Alloc.Nodes[0].Devices)
		assert.Equal(t, []int{0, 1, 2, 3}, j.Alloc.Nodes[1].Devices)
		assert.Equal(t, []int{3, 2}, cpusPerNode(j.Alloc))
		gpu := s.Registry().MustLookup("gres/gpu")
		assert.Equal(t, int64(10), j.Alloc.Total().At(gpu))
	}
}

// --ntasks-per-node with -n is a maximum per node: -n 10
// --ntasks-per-node=4 needs 3 nodes (4+3+3); --mem-per-cpu gives each
// node memory for its CPUs.
func TestTasksPerNodeBoundsAndMemPerCPU(t *testing.T) {
	s := tasksCluster(t, false, taskNodes(4, 16))
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 10, TasksPerNode: 4, MemPerCPUMiB: 1000, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)
	assert.Equal(t, []int{4, 3, 3}, cpusPerNode(j.Alloc))
	for _, n := range j.Alloc.Nodes {
		assert.Equal(t, int64(len(n.CPUs))*1000, n.MemoryMiB)
	}
	assert.Equal(t, int64(10*1000), j.Alloc.Total().At(gres.Mem))
}

// -N 2-4 gets as many nodes as it can within the range: 4 idle nodes,
// 4 nodes; with two busy, the 2 left.
func TestNodeRangeTakesAsManyAsFree(t *testing.T) {
	s := tasksCluster(t, false, taskNodes(4, 16))
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 2, NodesMax: 4, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	assert.Len(t, j.Alloc.Nodes, 4)

	s = tasksCluster(t, false, taskNodes(4, 16))
	mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 2, Tasks: 32, TimeLimit: time.Hour})
	id = mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 2, NodesMax: 4, Tasks: 8, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	j, _ = s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)
	assert.Equal(t, []string{"c2", "c3"}, j.Alloc.NodeNames())
	assert.Equal(t, []int{4, 4}, cpusPerNode(j.Alloc))
}

// A task job whose tasks fit only on more nodes than are free waits for
// Resources, and starts once enough room frees.
func TestTasksWaitForRoom(t *testing.T) {
	s := tasksCluster(t, true, taskNodes(2, 16))
	a := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 20, TimeLimit: time.Hour})
	b := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 16, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	ja, _ := s.Job(a)
	jb, _ := s.Job(b)
	require.Equal(t, scheduler.JobRunning, ja.State)
	assert.Equal(t, []int{10, 10}, cpusPerNode(ja.Alloc), "fewest nodes: 2, dealt 10+10")
	require.Equal(t, scheduler.JobPending, jb.State)
	assert.Equal(t, "Resources", jb.Reason.String())
	require.NoError(t, s.Finish(t0.Add(time.Minute), a, 0))
	mustSchedule(t, s, t0.Add(time.Minute))
	jb, _ = s.Job(b)
	require.Equal(t, scheduler.JobRunning, jb.State)
	assert.Equal(t, []int{16}, cpusPerNode(jb.Alloc))
}

func TestSubmitRejectsBadTaskRequests(t *testing.T) {
	s := tasksCluster(t, false, taskNodes(2, 16))
	for name, spec := range map[string]scheduler.JobSpec{
		"max below min":       {Nodes: 3, NodesMax: 2},
		"negative per node":   {Tasks: 2, TasksPerNode: -1},
		"negative per socket": {TasksPerSocket: -1},
		"mem-per-cpu and mem": {MemPerCPUMiB: 10, MemPerNodeMiB: 100},
		"mem-per-cpu and gpu": {MemPerCPUMiB: 10, MemPerGPUMiB: 100},
		"per node too few":    {Nodes: 2, Tasks: 9, TasksPerNode: 4},
		"fewer tasks":         {Nodes: 2, Tasks: 1},
	} {
		_, err := s.Submit(t0, spec)
		assert.ErrorIs(t, err, scheduler.ErrInvalidJob, name)
	}
	// More tasks than the partition's nodes could ever hold.
	_, err := s.Submit(t0, scheduler.JobSpec{Tasks: 33, TimeLimit: time.Hour})
	require.ErrorIs(t, err, scheduler.ErrUnsatisfiable)
	// Within a range too small for them.
	_, err = s.Submit(t0, scheduler.JobSpec{Tasks: 32, NodesMax: 1, TimeLimit: time.Hour})
	require.True(t, errors.Is(err, scheduler.ErrUnsatisfiable), "%v", err)
}

func TestParseNodeCount(t *testing.T) {
	for in, want := range map[string][2]int{"4": {4, 4}, "2-4": {2, 4}, " 1 - 3 ": {1, 3}, "5-5": {5, 5}} {
		lo, hi, err := scheduler.ParseNodeCount(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, [2]int{lo, hi}, in)
		lo2, hi2, err := scheduler.ParseNodeCount(scheduler.FormatNodeCount(lo, hi))
		require.NoError(t, err)
		assert.Equal(t, [2]int{lo, hi}, [2]int{lo2, hi2})
	}
	for _, in := range []string{"", "0", "-1", "4-2", "a", "2-", "1-2-3", "99999999999"} {
		_, _, err := scheduler.ParseNodeCount(in)
		assert.ErrorIs(t, err, scheduler.ErrInvalidJob, in)
	}
}

func FuzzParseNodeCount(f *testing.F) {
	for _, s := range []string{"4", "2-4", "0", "4-2", " 3 ", "1-1048576", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lo, hi, err := scheduler.ParseNodeCount(s)
		if err != nil {
			return
		}
		if lo < 1 || hi < lo || hi > scheduler.MaxNodesPerJob {
			t.Fatalf("%q: %d-%d", s, lo, hi)
		}
		lo2, hi2, err := scheduler.ParseNodeCount(scheduler.FormatNodeCount(lo, hi))
		if err != nil || lo2 != lo || hi2 != hi {
			t.Fatalf("%q: round trip %d-%d → %d-%d (%v)", s, lo, hi, lo2, hi2, err)
		}
	})
}

// The task fields are part of the spec's JSON form.
func TestTaskFieldsJSONRoundTrip(t *testing.T) {
	spec := scheduler.JobSpec{Nodes: 2, NodesMax: 4, Tasks: 10, TasksPerNode: 4, TasksPerSocket: 2, MemPerCPUMiB: 2048, CPUsPerTask: 2}
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	for _, s := range []string{`"NodesMax":4`, `"TasksPerNode":4`, `"TasksPerSocket":2`, `"MemPerCPUMiB":2048`} {
		assert.Contains(t, string(b), s)
	}
	var back scheduler.JobSpec
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, spec, back)
	b, err = json.Marshal(scheduler.JobSpec{Tasks: 3})
	require.NoError(t, err)
	assert.NotContains(t, string(b), "NodesMax", "unset task fields are left out")
}

// A task job blocked for room says how many of its tasks fit: -n 40 on
// two 16-CPU nodes with 8 CPUs busy holds 24 of its tasks now — and it
// asks more than the nodes have at all, so Submit refuses it outright;
// -n 24 with 16 CPUs busy (16 fit) waits.
func TestExplainTasksShort(t *testing.T) {
	s := tasksCluster(t, false, taskNodes(2, 16))
	mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 16, NodesMax: 1, TimeLimit: time.Hour})
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 24, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	require.Equal(t, scheduler.JobPending, j.State)
	ex, err := s.Explain(t0, id, scheduler.ExplainOptions{})
	require.NoError(t, err)
	var need *scheduler.ResourceNeed
	for _, b := range ex.Blockers {
		if b.Need != nil {
			need = b.Need
		}
	}
	require.NotNil(t, need, "%+v", ex)
	assert.Equal(t, 24, need.Tasks)
	assert.Equal(t, 2, need.Nodes, "the fewest nodes that hold it")
	assert.Equal(t, 16, need.TaskRoom, "one free node's 16 CPUs")
	assert.Contains(t, need.String(), "for 24 task(s) on 2-24 node(s), 16 of them fit now")
}

// Preemption frees room for every task, by placement's rule: -n 40 on
// two 32-CPU nodes full of 8-CPU standby jobs preempts five of them (40
// CPUs), not the one per node that a single task would need.
func TestPreemptionForTasksFreesEveryTask(t *testing.T) {
	s := perJobPreemptCluster(t, policy.PreemptOrderLeastLostWork, false)
	for range 8 {
		mustSubmit(t, s, t0, scheduler.JobSpec{QOS: "standby", CPUsPerTask: 8, TimeLimit: 10 * time.Hour})
	}
	require.Len(t, mustSchedule(t, s, t0).Starts, 8)
	urgent := mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{QOS: "urgent", Tasks: 40, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0.Add(time.Minute))
	assert.Len(t, cyc.Preemptions, 5, "victims until every task fits")
	require.Len(t, cyc.Starts, 1, "%+v", cyc.Pending)
	assert.Equal(t, urgent, cyc.Starts[0].Job)
	assert.Equal(t, int64(40), cyc.Starts[0].Alloc.Total().At(gres.CPU))
}

// The accounting view: -n 20 -c 2 --mem-per-cpu=100 on 16-CPU nodes asks
// 40 CPUs and 4000 MiB on 3 nodes (sacct's ReqTRES: 8 tasks fit a node),
// and holds exactly that once it runs (AllocTRES), 7+7+6 tasks dealt in
// turn: 14+14+12 CPUs.
func TestTasksRequestedAndAllocatedTRES(t *testing.T) {
	s := tasksCluster(t, false, taskNodes(4, 16))
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 20, CPUsPerTask: 2, MemPerCPUMiB: 100, TimeLimit: time.Hour})
	req, ok := s.RequestedTRES(id)
	require.True(t, ok)
	assert.Equal(t, int64(40), req.At(gres.CPU))
	assert.Equal(t, int64(4000), req.At(gres.Mem))
	assert.Equal(t, int64(3), req.At(gres.Node), "the fewest 16-CPU nodes for 20 tasks of 2 CPUs")
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)
	assert.Equal(t, []int{14, 14, 12}, cpusPerNode(j.Alloc))
	tot := j.Alloc.Total()
	assert.Equal(t, int64(40), tot.At(gres.CPU))
	assert.Equal(t, int64(4000), tot.At(gres.Mem))
	_, ok = s.RequestedTRES(999)
	assert.False(t, ok)
}

// A partition's MaxNodes bounds the node count the scheduler chooses:
// with MaxNodes=2, -n 20 on 16-CPU nodes where each has 8 CPUs free
// (which would take 3 nodes) waits rather than spreading over three.
func TestTasksNodeCountWithinPartitionMaxNodes(t *testing.T) {
	s, err := scheduler.New(scheduler.Config{Nodes: taskNodes(3, 16),
		Partitions: []scheduler.PartitionConfig{{Name: "p", Default: true, MaxNodes: 2}}})
	require.NoError(t, err)
	names := []string{"c0", "c1", "c2"}
	for k := range names {
		others := slices.Delete(slices.Clone(names), k, k+1)
		mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 1, Tasks: 8, Exclude: others, TimeLimit: time.Hour})
	}
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 20, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	assert.Equal(t, scheduler.JobPending, j.State, "%v", j.Alloc.NodeNames())
}
