package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

// socketNode is a node of sockets × perSocket GPUs, GPU i on socket
// i/perSocket, with CPUs 16 per socket close to that socket's GPUs unless
// noCores.
func socketNode(name string, sockets, perSocket int, noCores bool) scheduler.NodeConfig {
	return gpuNode(name, sockets, 16, perSocket, !noCores)
}

// gpuNode is a node of sockets × cpus CPUs with perSocket GPUs (a100) on
// each socket, GPU i on socket i/perSocket; with affinity each GPU's CPUs
// are its socket's.
func gpuNode(name string, sockets, cpus, perSocket int, affinity bool) scheduler.NodeConfig {
	inv := gres.Inventory{}
	for i := range sockets * perSocket {
		sk := i / perSocket
		d := gres.Device{Index: i, Name: "gpu", Type: "a100", NUMA: sk, Socket: sk}
		if affinity {
			d.Cores, _ = gres.CoreRange(cpus*sk, cpus*sk+cpus-1)
		}
		inv.Devices = append(inv.Devices, d)
	}
	return scheduler.NodeConfig{Name: name, CPUs: cpus * sockets, MemoryMiB: 64 * 1024, Devices: inv}
}

func socketCluster(t *testing.T, bf bool, nodes ...scheduler.NodeConfig) *scheduler.Scheduler {
	t.Helper()
	cfg := scheduler.Config{Nodes: nodes, Partitions: []scheduler.PartitionConfig{{Name: "gpu", Default: true}}}
	if bf {
		cfg.Backfill = &backfill.Config{}
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

// A node is chosen for a --gpus-per-socket job by the same per-socket rule
// that allocates it: a node whose free GPUs sit on too few sockets is
// passed over (the job waits for Resources), never chosen and then found
// unable to host it.
func TestGPUsPerSocketNodeFilterMatchesChoice(t *testing.T) {
	for _, bf := range []bool{false, true} {
		for _, noCores := range []bool{false, true} {
			// Socket 0's four GPUs in use; socket 1's four free.
			s := socketCluster(t, bf, socketNode("n1", 2, 4, noCores))
			hog := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(4), TimeLimit: time.Hour})
			mustSchedule(t, s, t0)
			j, _ := s.Job(hog)
			require.Equal(t, scheduler.JobRunning, j.State)
			require.Equal(t, []int{0, 1, 2, 3}, j.Alloc.Nodes[0].Devices)
			two := mustSubmit(t, s, t0, scheduler.JobSpec{GPUsPerSocket: 1, SocketsPerNode: 2, TimeLimit: time.Hour})
			cyc := mustSchedule(t, s, t0)
			assert.Empty(t, cyc.Starts, "bf=%v noCores=%v", bf, noCores)
			assert.Equal(t, policy.ReasonResources, reasonOf(cyc, two))
			// One socket suffices: it must take socket 1's GPUs.
			one := mustSubmit(t, s, t0, scheduler.JobSpec{GPUsPerSocket: 2, TimeLimit: time.Hour})
			require.NoError(t, s.Cancel(t0, two))
			cyc = mustSchedule(t, s, t0)
			require.Len(t, cyc.Starts, 1)
			assert.Equal(t, one, cyc.Starts[0].Job)
			assert.Equal(t, []int{4, 5}, cyc.Starts[0].Alloc.Nodes[0].Devices)
		}
	}
}

// With one GPU of each socket unhealthy, a node of 2 × 2 GPUs has two free
// GPUs in total but no socket with two: {GPUsPerSocket: 2} waits there
// and starts on a node that can host it.
func TestGPUsPerSocketUnhealthyDevicesNotChosen(t *testing.T) {
	for _, bf := range []bool{false, true} {
		s := socketCluster(t, bf, socketNode("n1", 2, 2, false), socketNode("n2", 2, 2, false))
		for _, d := range []int{0, 2} {
			require.NoError(t, s.SetDeviceHealth(t0, "n1", d, false, "xid 79"))
		}
		id := mustSubmit(t, s, t0, scheduler.JobSpec{GPUsPerSocket: 2, TimeLimit: time.Hour})
		cyc := mustSchedule(t, s, t0)
		require.Len(t, cyc.Starts, 1, "bf=%v", bf)
		assert.Equal(t, id, cyc.Starts[0].Job)
		assert.Equal(t, "n2", cyc.Starts[0].Alloc.Nodes[0].Name)
		// n2's socket 0 is now in use; the next such job fits n2's socket 1
		// only, and a third finds no socket with two healthy free GPUs.
		second := mustSubmit(t, s, t0, scheduler.JobSpec{GPUsPerSocket: 2, TimeLimit: time.Hour})
		third := mustSubmit(t, s, t0, scheduler.JobSpec{GPUsPerSocket: 2, TimeLimit: time.Hour})
		cyc = mustSchedule(t, s, t0)
		require.Len(t, cyc.Starts, 1)
		assert.Equal(t, second, cyc.Starts[0].Job)
		assert.Equal(t, policy.ReasonResources, reasonOf(cyc, third))
	}
}

// SocketsPerNode beyond what any node has (counting every GPU, in use or
// not) can never be satisfied: Submit rejects it, naming the request.
func TestSubmitRejectsMoreSocketsThanNodesHave(t *testing.T) {
	s := socketCluster(t, false, socketNode("n1", 1, 4, false))
	_, err := s.Submit(t0, scheduler.JobSpec{GPUsPerSocket: 1, SocketsPerNode: 2})
	require.ErrorIs(t, err, scheduler.ErrInvalidJob)
	assert.ErrorIs(t, err, scheduler.ErrUnsatisfiable)
	assert.Contains(t, err.Error(), "SocketsPerNode 2")
	_, err = s.Submit(t0, scheduler.JobSpec{GPUsPerSocket: 5})
	assert.ErrorIs(t, err, scheduler.ErrUnsatisfiable, "no socket has 5 GPUs")
	_, err = s.Submit(t0, scheduler.JobSpec{GPUsPerSocket: 4})
	assert.NoError(t, err)
	pending, _ := s.Counts()
	assert.Equal(t, 1, pending, "the rejected jobs left no trace")
}

// Submit rejects the time limits a cycle cannot plan (negative, or under
// one second), naming the field, and New rejects such partition limits;
// before, the backfill planner refused them in every later Schedule.
func TestSubmitRejectsSubSecondTimes(t *testing.T) {
	s := socketCluster(t, true, socketNode("n1", 2, 4, false))
	for _, c := range []struct {
		spec  scheduler.JobSpec
		field string
	}{
		{scheduler.JobSpec{TimeLimit: 500 * time.Millisecond}, "TimeLimit"},
		{scheduler.JobSpec{TimeLimit: -time.Second}, "TimeLimit"},
		{scheduler.JobSpec{TimeLimit: time.Hour, TimeMin: 999 * time.Millisecond}, "TimeMin"},
		{scheduler.JobSpec{TimeLimit: time.Hour, TimeMin: -time.Second}, "TimeMin"},
		{scheduler.JobSpec{TimeLimit: time.Minute, TimeMin: time.Hour}, "TimeMin"},
	} {
		_, err := s.Submit(t0, c.spec)
		require.ErrorIs(t, err, scheduler.ErrInvalidJob, "%+v", c.spec)
		assert.Contains(t, err.Error(), c.field)
	}
	pending, _ := s.Counts()
	assert.Zero(t, pending)
	mustSubmit(t, s, t0, scheduler.JobSpec{TimeLimit: time.Second, TimeMin: time.Second})
	mustSchedule(t, s, t0)

	for _, p := range []scheduler.PartitionConfig{
		{Name: "gpu", MaxTime: time.Millisecond},
		{Name: "gpu", DefaultTime: 10 * time.Millisecond},
	} {
		_, err := scheduler.New(scheduler.Config{Nodes: []scheduler.NodeConfig{socketNode("n1", 1, 1, false)},
			Partitions: []scheduler.PartitionConfig{p}})
		assert.ErrorIs(t, err, scheduler.ErrInvalidConfig, "%+v", p)
	}
	// TimeMin is checked against the limit the job gets: the partition's
	// default when it gives none.
	s2, err := scheduler.New(scheduler.Config{Nodes: []scheduler.NodeConfig{socketNode("n1", 1, 1, false)},
		Partitions: []scheduler.PartitionConfig{{Name: "gpu", DefaultTime: time.Minute, MaxTime: time.Hour}}})
	require.NoError(t, err)
	_, err = s2.Submit(t0, scheduler.JobSpec{TimeMin: 2 * time.Minute})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob)
}

// Under PreemptMode=REQUEUE a job that says nothing about requeueing is
// requeued, as Slurm's JobRequeue=1 default makes it; --no-requeue
// (RequeueNo) or a cluster JobRequeue=0 makes it cancelled instead, and a
// job's own --requeue overrides JobRequeue=0.
func TestPreemptRequeueUsesJobRequeueDefault(t *testing.T) {
	for _, c := range []struct {
		cluster, job scheduler.RequeueMode
		want         policy.PreemptAction
	}{
		{scheduler.RequeueDefault, scheduler.RequeueDefault, policy.ActionRequeue},
		{scheduler.RequeueDefault, scheduler.RequeueNo, policy.ActionCancel},
		{scheduler.RequeueNo, scheduler.RequeueDefault, policy.ActionCancel},
		{scheduler.RequeueNo, scheduler.RequeueYes, policy.ActionRequeue},
		{scheduler.RequeueYes, scheduler.RequeueDefault, policy.ActionRequeue},
	} {
		cfg := scheduler.Config{
			Nodes:      []scheduler.NodeConfig{socketNode("n1", 1, 4, false)},
			Partitions: []scheduler.PartitionConfig{{Name: "gpu"}},
			JobRequeue: c.cluster,
			Policy: &policy.Config{PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptRequeue,
				QOS: []policy.QOS{{Name: "urgent", Priority: 100, Preempt: []string{"standby"}}, {Name: "standby"}}},
		}
		s, err := scheduler.New(cfg)
		require.NoError(t, err)
		victim := mustSubmit(t, s, t0, scheduler.JobSpec{QOS: "standby", Exclusive: true, TimeLimit: time.Hour, Requeue: c.job})
		mustSchedule(t, s, t0)
		mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{QOS: "urgent", Exclusive: true, TimeLimit: time.Hour})
		cyc := mustSchedule(t, s, t0.Add(time.Minute))
		require.Len(t, cyc.Preemptions, 1, "%+v", c)
		assert.Equal(t, victim, cyc.Preemptions[0].Victim)
		assert.Equal(t, c.want, cyc.Preemptions[0].Action, "cluster %v, job %v", c.cluster, c.job)
	}
	_, err := scheduler.New(scheduler.Config{Nodes: []scheduler.NodeConfig{socketNode("n1", 1, 1, false)},
		Partitions: []scheduler.PartitionConfig{{Name: "gpu"}}, JobRequeue: 7})
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig)
}

// A node failure requeues a job that says nothing (JobRequeue=1) and ends
// a --no-requeue job in NODE_FAIL.
func TestDownNodeRequeuesByDefault(t *testing.T) {
	s := socketCluster(t, false, socketNode("n1", 1, 4, false))
	plain := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(1), TimeLimit: time.Hour})
	no := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(1), TimeLimit: time.Hour, Requeue: scheduler.RequeueNo})
	mustSchedule(t, s, t0)
	_, err := s.DownNode(t0.Add(time.Minute), "n1", "dead")
	require.NoError(t, err)
	j, _ := s.Job(plain)
	assert.Equal(t, scheduler.JobPending, j.State)
	assert.Equal(t, 1, j.Restarts)
	j, _ = s.Job(no)
	assert.Equal(t, scheduler.JobNodeFail, j.State)
	_, err = s.Submit(t0.Add(time.Minute), scheduler.JobSpec{Requeue: 9})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob)
}

// gpusOf sums the GPU counts of an allocation per node.
func gpusOf(a scheduler.Allocation) []int {
	out := make([]int, len(a.Nodes))
	for k, na := range a.Nodes {
		out[k] = len(na.Devices)
	}
	return out
}

// GRESPerJob (sbatch --gpus) is the job's total, spread over its nodes as
// they can hold it, each taking at least one: -N2 --gpus=5 takes and is
// charged 5 GPUs, not 2 × ceil(5/2) = 6.
func TestGRESPerJobTakesTheTotal(t *testing.T) {
	for _, bf := range []bool{false, true} {
		s := socketCluster(t, bf, socketNode("n1", 2, 4, false), socketNode("n2", 2, 4, false))
		id := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 2, GRESPerJob: gpus(5), TimeLimit: time.Hour})
		cyc := mustSchedule(t, s, t0)
		require.Len(t, cyc.Starts, 1, "bf=%v", bf)
		j, _ := s.Job(id)
		gpu := s.Registry().MustLookup("gres/gpu")
		assert.Equal(t, int64(5), j.Alloc.Total().At(gpu))
		n := 0
		for _, c := range gpusOf(j.Alloc) {
			assert.Positive(t, c, "every node takes at least one")
			n += c
		}
		assert.Equal(t, 5, n)
		var free int64
		for _, ni := range s.Nodes() {
			free += ni.Free.At(gpu)
		}
		assert.Equal(t, int64(16-5), free, "charged what it holds")
	}
}

// -N4 --gpus=8 fits nodes with 5, 1, 1 and 1 free GPUs: the total fits
// though ceil(8/4) = 2 per node does not.
func TestGRESPerJobFitsUnevenNodes(t *testing.T) {
	for _, bf := range []bool{false, true} {
		var nodes []scheduler.NodeConfig
		for _, n := range []string{"n1", "n2", "n3", "n4"} {
			nodes = append(nodes, socketNode(n, 2, 4, false))
		}
		s := socketCluster(t, bf, nodes...)
		for _, use := range []int64{3, 7, 7, 7} {
			mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(use), TimeLimit: 10 * time.Hour})
		}
		cyc := mustSchedule(t, s, t0)
		require.Len(t, cyc.Starts, 4)
		id := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 4, GRESPerJob: gpus(8), TimeLimit: time.Hour})
		cyc = mustSchedule(t, s, t0)
		require.Len(t, cyc.Starts, 1, "bf=%v: %+v", bf, cyc.Pending)
		assert.Equal(t, id, cyc.Starts[0].Job)
		assert.Equal(t, []int{5, 1, 1, 1}, gpusOf(cyc.Starts[0].Alloc))
		// A second such job finds no GPU left: it waits.
		next := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 4, GRESPerJob: gpus(4), TimeLimit: time.Hour})
		cyc = mustSchedule(t, s, t0)
		assert.Empty(t, cyc.Starts)
		assert.Equal(t, policy.ReasonResources, reasonOf(cyc, next))
	}
}

// Submit rejects a GRESPerJob smaller than the node count (each node
// takes at least one) or larger than the job's nodes could ever hold.
func TestSubmitRejectsGRESPerJobNoNodesHold(t *testing.T) {
	s := socketCluster(t, false, socketNode("n1", 2, 4, false), socketNode("n2", 2, 4, false))
	_, err := s.Submit(t0, scheduler.JobSpec{Nodes: 2, GRESPerJob: gpus(1)})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob)
	_, err = s.Submit(t0, scheduler.JobSpec{Nodes: 2, GRESPerJob: gpus(17)})
	assert.ErrorIs(t, err, scheduler.ErrUnsatisfiable)
	_, err = s.Submit(t0, scheduler.JobSpec{Nodes: 2, GRESPerJob: gpus(16)})
	assert.NoError(t, err)
}

// With a topology, when the least-spread nodes cannot hold a GRESPerJob
// total, the job goes to nodes that can.
func TestGRESPerJobWithTopologyTakesNodesThatHoldIt(t *testing.T) {
	var nodes []scheduler.NodeConfig
	for _, n := range []string{"a1", "a2", "b1", "b2"} {
		nodes = append(nodes, socketNode(n, 2, 4, false))
	}
	s, err := scheduler.New(scheduler.Config{
		Nodes:      nodes,
		Partitions: []scheduler.PartitionConfig{{Name: "gpu"}},
		Topology: &topology.Config{Switches: []topology.SwitchConfig{
			{Name: "sa", Nodes: []string{"a1", "a2"}}, {Name: "sb", Nodes: []string{"b1", "b2"}},
			{Name: "spine", Switches: []string{"sa", "sb"}},
		}},
	})
	require.NoError(t, err)
	for _, use := range []int64{7, 7} { // a1 and a2 keep one GPU free each
		mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(use), TimeLimit: 10 * time.Hour})
	}
	require.Len(t, mustSchedule(t, s, t0).Starts, 2)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 2, GRESPerJob: gpus(6), TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, id, cyc.Starts[0].Job)
	assert.Equal(t, []string{"b1", "b2"}, cyc.Starts[0].Alloc.NodeNames())
	assert.Equal(t, []int{5, 1}, gpusOf(cyc.Starts[0].Alloc))
}

// Preemption judges a --gpus-per-socket preemptor by the same per-socket
// choice: a victim whose GPUs would not give it the sockets it needs is
// not preempted for nothing.
func TestPreemptionUsesPerSocketChoice(t *testing.T) {
	cfg := scheduler.Config{
		Nodes:      []scheduler.NodeConfig{socketNode("n1", 2, 2, false)},
		Partitions: []scheduler.PartitionConfig{{Name: "gpu"}},
		Policy: &policy.Config{PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptCancel,
			QOS: []policy.QOS{{Name: "urgent", Priority: 100, Preempt: []string{"standby"}}, {Name: "standby"}, {Name: "normal"}}},
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	victim := mustSubmit(t, s, t0, scheduler.JobSpec{QOS: "standby", GRESPerNode: gpus(1), TimeLimit: time.Hour})
	keeper := mustSubmit(t, s, t0, scheduler.JobSpec{QOS: "normal", GPUsPerSocket: 2, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 2)
	jv, _ := s.Job(victim)
	jk, _ := s.Job(keeper)
	require.Equal(t, []int{0}, jv.Alloc.Nodes[0].Devices)
	require.Equal(t, []int{2, 3}, jk.Alloc.Nodes[0].Devices)
	// Socket 1 is the keeper's: freeing GPU 0 gives no second socket.
	urgent := mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{QOS: "urgent", GPUsPerSocket: 1, SocketsPerNode: 2, TimeLimit: time.Hour})
	cyc = mustSchedule(t, s, t0.Add(time.Minute))
	assert.Empty(t, cyc.Preemptions)
	assert.Empty(t, cyc.Starts)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, urgent))
	jv, _ = s.Job(victim)
	assert.Equal(t, scheduler.JobRunning, jv.State)
}
