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

// sbatch --mem-per-cpu is memory per usable allocated CPU, and where
// resources are allocated by core or socket a job's allocated CPUs may
// exceed what it asked (sbatch, --mem-per-cpu): under CR_Core on
// two-thread cores, one task asking 1000 MiB per CPU gets a whole core,
// two CPUs and 2000 MiB. --mem per node is not scaled; with
// --hint=nomultithread only one thread per core is usable.
func TestCRCoreMemPerCPUPerAllocatedCPU(t *testing.T) {
	cases := []struct {
		name      string
		unit      scheduler.CRUnit
		spec      scheduler.JobSpec
		cpu, mem  int64
		defMemCPU int64
	}{
		{"CR_Core mem-per-cpu", scheduler.CRCore, scheduler.JobSpec{Tasks: 1, MemPerCPUMiB: 1000}, 2, 2000, 0},
		{"CR_Core 3 tasks", scheduler.CRCore, scheduler.JobSpec{Tasks: 3, MemPerCPUMiB: 1000}, 4, 4000, 0},
		{"CR_CPU mem-per-cpu", scheduler.CRCPU, scheduler.JobSpec{Tasks: 1, MemPerCPUMiB: 1000}, 1, 1000, 0},
		{"CR_Core mem per node", scheduler.CRCore, scheduler.JobSpec{Tasks: 1, MemPerNodeMiB: 1000}, 2, 1000, 0},
		{"CR_Core nomultithread", scheduler.CRCore, scheduler.JobSpec{Tasks: 2, MemPerCPUMiB: 1000, Hint: scheduler.HintNoMultithread}, 4, 2000, 0},
		{"CR_Core DefMemPerCPU", scheduler.CRCore, scheduler.JobSpec{Tasks: 1}, 2, 1000, 500},
		{"CR_Socket mem-per-cpu", scheduler.CRSocket, scheduler.JobSpec{Tasks: 1, MemPerCPUMiB: 100}, 4, 400, 0},
	}
	for _, c := range cases {
		cfg := scheduler.Config{Nodes: []scheduler.NodeConfig{layoutNode("n0", 2, 2, 2)}, SelectTypeParameters: c.unit,
			Partitions: []scheduler.PartitionConfig{{Name: "p", DefMemPerCPU: c.defMemCPU}}}
		s, err := scheduler.New(cfg)
		require.NoError(t, err, c.name)
		c.spec.TimeLimit = time.Hour
		id := mustSubmit(t, s, t0, c.spec)
		st, ok := startsOf(mustSchedule(t, s, t0))[id]
		require.True(t, ok, c.name)
		assert.Equal(t, c.cpu, st.Nodes[0].TRES[gres.CPU], "%s: AllocTRES cpu", c.name)
		assert.Equal(t, c.mem, st.Nodes[0].TRES[gres.Mem], "%s: AllocTRES mem", c.name)
		require.NoError(t, s.Finish(t0, id, 0), c.name)
		ni, _ := s.Node("n0")
		assert.Equal(t, ni.Capacity, ni.Free, "%s: all back", c.name)
	}
}

// The rounded memory must fit: a node of 1500 MiB cannot host a task of
// 1000 MiB per CPU under CR_Core (a whole core, 2000 MiB), and the
// backfill plan counts the rounded memory (no promise before the job
// holding the memory ends).
func TestCRCoreMemPerCPUMustFit(t *testing.T) {
	for _, bf := range []bool{false, true} {
		n := layoutNode("n0", 1, 2, 2)
		n.MemoryMiB = 1500
		cfg := scheduler.Config{Nodes: []scheduler.NodeConfig{n}, SelectTypeParameters: scheduler.CRCore,
			Partitions: []scheduler.PartitionConfig{{Name: "p"}}}
		if bf {
			cfg.Backfill = &backfill.Config{}
		}
		s, err := scheduler.New(cfg)
		require.NoError(t, err)
		id := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 1, MemPerCPUMiB: 1000, TimeLimit: time.Hour})
		cyc := mustSchedule(t, s, t0)
		assert.Empty(t, cyc.Starts, "bf=%v", bf)
		assert.NotEqual(t, policy.ReasonNone, reasonOf(cyc, id), "bf=%v", bf)
		if bf {
			j, _ := s.Job(id)
			assert.True(t, j.ExpectedStart.IsZero(), "bf=%v: never fits, no expected start (got %v)", bf, j.ExpectedStart)
		}
	}
}
