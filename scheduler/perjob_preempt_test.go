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

// perJobPreemptCluster is two nodes of 4 GPUs (n1, n2; a1, a2 and b1, b2
// under two leaf switches with a topology), QOS urgent preempting standby
// (CANCEL), normal preempting nothing.
func perJobPreemptCluster(t *testing.T, order policy.PreemptOrder, topo bool) *scheduler.Scheduler {
	t.Helper()
	names := []string{"n1", "n2"}
	if topo {
		names = []string{"a1", "a2", "b1", "b2"}
	}
	var nodes []scheduler.NodeConfig
	for _, n := range names {
		nodes = append(nodes, socketNode(n, 2, 2, false))
	}
	cfg := scheduler.Config{
		Nodes:      nodes,
		Partitions: []scheduler.PartitionConfig{{Name: "gpu", Default: true}},
		Policy: &policy.Config{PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptCancel, PreemptOrder: order,
			QOS: []policy.QOS{{Name: "urgent", Priority: 100, Preempt: []string{"standby"}}, {Name: "standby"}, {Name: "normal"}}},
	}
	if topo {
		cfg.Topology = &topology.Config{Switches: []topology.SwitchConfig{
			{Name: "sa", Nodes: []string{"a1", "a2"}}, {Name: "sb", Nodes: []string{"b1", "b2"}},
			{Name: "spine", Switches: []string{"sa", "sb"}},
		}}
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

// Preemption decides for a GRESPerJob (--gpus) preemptor by the rule
// placement uses — the job's total spread over its nodes — not by one GPU
// per node: with both nodes' 4 GPUs held by 1-GPU standby jobs, an
// -N2 --gpus=6 preemptor takes victims until the total fits (six, as
// Slurm preempts until the preemptor fits) and starts in the same cycle.
// Freeing one GPU per node, which the minimum alone asks, would lose two
// victims for a job that then cannot start.
func TestPreemptionForGRESPerJobFreesTheTotal(t *testing.T) {
	for _, order := range []policy.PreemptOrder{policy.PreemptOrderLeastLostWork, policy.PreemptOrderSlurm} {
		for _, topo := range []bool{false, true} {
			t.Run(fmt.Sprintf("order=%v/topology=%v", order, topo), func(t *testing.T) {
				s := perJobPreemptCluster(t, order, topo)
				n := 8
				if topo {
					n = 16
				}
				for range n {
					mustSubmit(t, s, t0, scheduler.JobSpec{QOS: "standby", GRESPerNode: gpus(1), TimeLimit: 10 * time.Hour})
				}
				require.Len(t, mustSchedule(t, s, t0).Starts, n)
				urgent := mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{QOS: "urgent", Nodes: 2, GRESPerJob: gpus(6), TimeLimit: time.Hour})
				cyc := mustSchedule(t, s, t0.Add(time.Minute))
				assert.Len(t, cyc.Preemptions, 6, "victims until the total fits, no more")
				require.Len(t, cyc.Starts, 1, "the preemptor starts: %+v", cyc.Pending)
				assert.Equal(t, urgent, cyc.Starts[0].Job)
				got := 0
				for _, c := range gpusOf(cyc.Starts[0].Alloc) {
					got += c
				}
				assert.Equal(t, 6, got)
			})
		}
	}
}

// When freeing every preemptable job cannot give a GRESPerJob preemptor
// its total, nothing is preempted: n1 keeps 3 GPUs for a job that may
// not be preempted (the first, on n1 by first fit), so n1 and n2 can hold 1 + 4 = 5 GPUs at most for an
// -N2 --gpus=6 job, though one per node could be freed on each.
func TestPreemptionForGRESPerJobPreemptsNothingWhenTotalCannotFit(t *testing.T) {
	for _, order := range []policy.PreemptOrder{policy.PreemptOrderLeastLostWork, policy.PreemptOrderSlurm} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			s := perJobPreemptCluster(t, order, false)
			mustSubmit(t, s, t0, scheduler.JobSpec{QOS: "normal", GRESPerNode: gpus(3), TimeLimit: 10 * time.Hour})
			var standby []scheduler.JobID
			for range 5 {
				standby = append(standby, mustSubmit(t, s, t0, scheduler.JobSpec{QOS: "standby", GRESPerNode: gpus(1), TimeLimit: 10 * time.Hour}))
			}
			require.Len(t, mustSchedule(t, s, t0).Starts, 6)
			urgent := mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{QOS: "urgent", Nodes: 2, GRESPerJob: gpus(6), TimeLimit: time.Hour})
			cyc := mustSchedule(t, s, t0.Add(time.Minute))
			assert.Empty(t, cyc.Preemptions, "no victim lost for a job that cannot start")
			assert.Empty(t, cyc.Starts)
			assert.Equal(t, policy.ReasonResources, reasonOf(cyc, urgent))
			for _, id := range standby {
				j, _ := s.Job(id)
				assert.Equal(t, scheduler.JobRunning, j.State, "job %d", id)
			}
		})
	}
}
