package scheduler_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
)

// TestMaxTRESBillsLargestWeightedTRES checks PriorityFlags=MAX_TRES
// billing (Slurm's tres.html): on a 16-CPU/64 GiB node with
// TRESBillingWeights=CPU=1.0,Mem=0.25G, a job with 1 CPU and 60 GiB bills
// max(1, 15) = 15 under MAX_TRES, 1 + 15 = 16 under the default sum,
// whether the mode comes from Config.BillingMode or from PriorityFlags.
func TestMaxTRESBillsLargestWeightedTRES(t *testing.T) {
	build := func(mode gres.BillingMode, flags priority.Flags) (*scheduler.Scheduler, error) {
		cfg := scheduler.Config{
			Nodes:       []scheduler.NodeConfig{{Name: "n1", CPUs: 16, MemoryMiB: 64 * clustertest.GiB}},
			Partitions:  []scheduler.PartitionConfig{{Name: "p", TRESBillingWeights: "CPU=1.0,Mem=0.25G"}},
			BillingMode: mode,
		}
		if flags != 0 {
			cfg.Priority = &scheduler.PriorityConfig{Engine: priority.Config{Flags: flags, Weights: priority.Weights{Age: 1}}}
		}
		return scheduler.New(cfg)
	}
	for _, tt := range []struct {
		name  string
		mode  gres.BillingMode
		flags priority.Flags
		want  float64
	}{
		{"sum by default", gres.BillingSum, 0, 16},
		{"BillingMode MAX_TRES", gres.BillingMaxTRES, 0, 15},
		{"PriorityFlags MAX_TRES", gres.BillingSum, priority.MaxTRES, 15},
		{"both MAX_TRES", gres.BillingMaxTRES, priority.MaxTRES, 15},
		{"MAX_TRES_GRES", gres.BillingMaxTRESGRES, 0, 15},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := build(tt.mode, tt.flags)
			require.NoError(t, err)
			id := mustSubmit(t, s, t0, scheduler.JobSpec{MemPerNodeMiB: 60 * clustertest.GiB})
			mustSchedule(t, s, t0)
			j, _ := s.Job(id)
			require.Equal(t, scheduler.JobRunning, j.State)
			assert.InDelta(t, tt.want, j.Alloc.Billing, 1e-9)
		})
	}
	_, err := build(gres.BillingMaxTRESGRES, priority.MaxTRES)
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig, "BillingMode disagreeing with PriorityFlags")
	_, err = build(gres.BillingMode(9), 0)
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig, "unknown BillingMode")
}
