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
)

// An exclusive job gets the whole node only where its own request fits
// the node's healthy free resources: once the node's only GPU is
// unhealthy (the node drained, then resumed by an operator), a whole-node
// job asking for that GPU waits for Resources — with --gpus-per-node,
// with --gpus, and under a partition's OverSubscribe=EXCLUSIVE, with or
// without backfill — as a shared job does, instead of starting with no
// GPU. Explain shows the GPU deficit among the idle nodes and no estimate;
// once the device is healthy it starts with it.
func TestExclusiveJobNeedsItsHealthyGPUs(t *testing.T) {
	one := []gres.Request{{Name: "gpu", Count: 1}}
	for _, tc := range []struct {
		name string
		spec scheduler.JobSpec
		part scheduler.PartitionConfig
	}{
		{"exclusive per node", scheduler.JobSpec{Exclusive: true, GRESPerNode: one}, scheduler.PartitionConfig{Name: "p"}},
		{"exclusive per job", scheduler.JobSpec{Exclusive: true, GRESPerJob: one}, scheduler.PartitionConfig{Name: "p"}},
		{"partition exclusive", scheduler.JobSpec{GRESPerNode: one}, scheduler.PartitionConfig{Name: "p", OverSubscribe: policy.OverSubscribeExclusive}},
		{"shared", scheduler.JobSpec{GRESPerNode: one}, scheduler.PartitionConfig{Name: "p"}},
	} {
		for _, bf := range []bool{false, true} {
			cfg := scheduler.Config{Nodes: []scheduler.NodeConfig{gpuNode("n0", 1, 2, 1, true)}, Partitions: []scheduler.PartitionConfig{tc.part}}
			if bf {
				cfg.Backfill = &backfill.Config{}
			}
			s, err := scheduler.New(cfg)
			require.NoError(t, err)
			spec := tc.spec
			spec.TimeLimit = time.Hour
			id := mustSubmit(t, s, t0, spec)
			require.NoError(t, s.SetDeviceHealth(t0, "n0", 0, false, "xid 79"))
			require.NoError(t, s.ResumeNode(t0, "n0"))
			cyc := mustSchedule(t, s, t0)
			require.Empty(t, cyc.Starts, "%s bf=%v: started %+v", tc.name, bf, cyc.Starts)
			assert.Equal(t, policy.ReasonResources, reasonOf(cyc, id), "%s bf=%v", tc.name, bf)
			ex, err := s.Explain(t0, id, scheduler.ExplainOptions{})
			require.NoError(t, err)
			var need *scheduler.ResourceNeed
			for _, b := range ex.Blockers {
				if b.Kind == scheduler.BlockerResources {
					need = b.Need
				}
			}
			require.NotNil(t, need, "%s bf=%v: blockers %+v", tc.name, bf, ex.Blockers)
			assert.Equal(t, 0, need.FitNow, "%s bf=%v", tc.name, bf)
			assert.Contains(t, need.Deficits, scheduler.Deficit{TRES: "gres/gpu", PerNode: 1, Nodes: 0}, "%s bf=%v", tc.name, bf)
			// No start can be promised while the GPU is unhealthy.
			require.NotNil(t, ex.Estimate, "%s bf=%v", tc.name, bf)
			assert.Equal(t, scheduler.EstimateNone, ex.Estimate.Source, "%s bf=%v", tc.name, bf)
			assert.True(t, ex.Estimate.Start.IsZero(), "%s bf=%v: estimate %v", tc.name, bf, ex.Estimate.Start)

			require.NoError(t, s.SetDeviceHealth(t0, "n0", 0, true, ""))
			cyc = mustSchedule(t, s, t0)
			require.Len(t, cyc.Starts, 1, "%s bf=%v", tc.name, bf)
			assert.Equal(t, []int{0}, cyc.Starts[0].Alloc.Nodes[0].Devices, "%s bf=%v", tc.name, bf)
		}
	}
}

// On a node of two GPUs, one unhealthy, an exclusive job asking for both
// cannot run: preemption frees nothing for it (the running standby job
// keeps running), and the healthy GPU left idle is fragmented (no pending
// job can use it), not reserved for that job, also once the node is idle.
func TestExclusiveJobNeedsItsHealthyGPUsPreemptAndIdle(t *testing.T) {
	cfg := scheduler.Config{
		Nodes:      []scheduler.NodeConfig{gpuNode("n0", 1, 4, 2, true)},
		Partitions: []scheduler.PartitionConfig{{Name: "p"}},
		Backfill:   &backfill.Config{},
		Policy: &policy.Config{PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptCancel,
			QOS: []policy.QOS{{Name: "urgent", Priority: 100, Preempt: []string{"standby"}}, {Name: "standby"}}},
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.SetDeviceHealth(t0, "n0", 1, false, "xid 79"))
	victim := mustSubmit(t, s, t0, scheduler.JobSpec{QOS: "standby", CPUsPerTask: 1, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	urgent := mustSubmit(t, s, t0, scheduler.JobSpec{QOS: "urgent", Exclusive: true, GRESPerNode: gpus(2), TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	assert.Empty(t, cyc.Preemptions)
	assert.Empty(t, cyc.Starts)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, urgent))
	jv, _ := s.Job(victim)
	assert.Equal(t, scheduler.JobRunning, jv.State)

	for _, cancel := range []bool{false, true} {
		if cancel { // the node idle: still no place for the job
			require.NoError(t, s.Cancel(t0, victim))
			cyc = mustSchedule(t, s, t0)
			assert.Empty(t, cyc.Starts)
		}
		rep := s.IdleCapacity(t0)
		assert.Equal(t, int64(1), rep.GPUs[scheduler.IdleUnhealthy], "cancel=%v", cancel)
		assert.Equal(t, int64(1), rep.GPUs[scheduler.IdleFragmented], "cancel=%v: GPUs by class %v", cancel, rep.GPUs)
	}
}

// Backfill sees a node with a free unhealthy GPU as whole when the rest of
// it is free: an exclusive job (here asking for no GPU) gets a reservation
// at the running job's end, and a lower job that would delay it does not
// start — as on a node whose devices are all healthy.
func TestExclusiveJobReservedOnNodeWithUnhealthyDevice(t *testing.T) {
	for _, sick := range []bool{false, true} {
		s, err := scheduler.New(scheduler.Config{Nodes: []scheduler.NodeConfig{gpuNode("n0", 1, 4, 2, true)},
			Partitions: []scheduler.PartitionConfig{{Name: "p"}}, Backfill: &backfill.Config{}})
		require.NoError(t, err)
		if sick {
			require.NoError(t, s.SetDeviceHealth(t0, "n0", 1, false, "xid 79"))
		}
		mustSubmit(t, s, t0, scheduler.JobSpec{CPUsPerTask: 2, TimeLimit: time.Hour})
		mustSchedule(t, s, t0)
		whole := mustSubmit(t, s, t0, scheduler.JobSpec{Exclusive: true, TimeLimit: time.Hour})
		late := mustSubmit(t, s, t0, scheduler.JobSpec{CPUsPerTask: 1, TimeLimit: 2 * time.Hour})
		cyc := mustSchedule(t, s, t0)
		assert.Empty(t, cyc.Starts, "sick=%v", sick)
		assert.Equal(t, policy.ReasonResources, reasonOf(cyc, whole), "sick=%v", sick)
		assert.Equal(t, policy.ReasonPriority, reasonOf(cyc, late), "sick=%v", sick)
		j, _ := s.Job(whole)
		assert.Equal(t, t0.Add(time.Hour), j.ExpectedStart, "sick=%v", sick)
	}
}
