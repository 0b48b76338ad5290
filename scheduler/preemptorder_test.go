package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// TestPreemptOrderSlurmChoosesLowestQOSVictim runs the same cluster under
// both victim orders: two whole-node jobs run, "lo" (QOS priority 10, an
// hour of work since it started) and "mid" (QOS priority 20, checkpointed
// a minute ago); a "hi" job needs one node. By default the scheduler
// preempts "mid", which loses least; with policy.PreemptOrderSlurm it
// preempts "lo", as Slurm's preempt/qos does.
func TestPreemptOrderSlurmChoosesLowestQOSVictim(t *testing.T) {
	victim := func(order policy.PreemptOrder) (lo, mid, got scheduler.JobID) {
		cfg := scheduler.Config{Nodes: cpuNodes(2), Partitions: []scheduler.PartitionConfig{{Name: "batch", Default: true}}}
		cfg.Policy = &policy.Config{
			PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptCancel, PreemptOrder: order,
			QOS: []policy.QOS{
				{Name: "hi", Priority: 100, Preempt: []string{"lo", "mid"}},
				{Name: "lo", Priority: 10},
				{Name: "mid", Priority: 20},
			},
		}
		s, err := scheduler.New(cfg)
		require.NoError(t, err)
		lo = mustSubmit(t, s, t0, scheduler.JobSpec{QOS: "lo", Exclusive: true, TimeLimit: 10 * time.Hour})
		mid = mustSubmit(t, s, t0, scheduler.JobSpec{QOS: "mid", Exclusive: true, TimeLimit: 10 * time.Hour})
		require.Len(t, mustSchedule(t, s, t0).Starts, 2)
		at := t0.Add(time.Hour)
		require.NoError(t, s.Checkpoint(at.Add(-time.Minute), mid))
		hi := mustSubmit(t, s, at, scheduler.JobSpec{QOS: "hi", Exclusive: true, TimeLimit: time.Hour})
		cyc := mustSchedule(t, s, at)
		require.Len(t, cyc.Preemptions, 1)
		assert.Equal(t, hi, cyc.Preemptions[0].Preemptor)
		return lo, mid, cyc.Preemptions[0].Victim
	}
	_, mid, got := victim(policy.PreemptOrderLeastLostWork)
	assert.Equal(t, mid, got, "default: least lost work")
	lo, _, got := victim(policy.PreemptOrderSlurm)
	assert.Equal(t, lo, got, "Slurm's order: lowest QOS priority")
}
