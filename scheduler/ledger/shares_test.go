package ledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/ledger"
)

// TestRecorderSharedAndMIGTRES: accounting records shards and MPS shares
// as TRES gres/shard and gres/mps with the shared GPU's index, and a MIG
// instance as gres/gpu plus its typed TRES (gres/gpu:h100_1g.10gb), as
// Slurm's sacct AllocTRES shows them.
func TestRecorderSharedAndMIGTRES(t *testing.T) {
	l, err := accounting.NewMemory(accounting.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	putAssocs(t, l, t0, accounting.Assoc{AssocKey: key("physics", "")}, accounting.Assoc{AssocKey: key("physics", "ann")})
	cfg := clustertest.Mixed4()
	cfg.Nodes[0].Devices.Shares = []gres.DeviceShares{{Device: 0, Shards: 4}, {Device: 1, MPS: 100}}
	inv := &cfg.Nodes[1].Devices
	inv.Devices[7].Type = "h100_1g.10gb"
	inv.MIG = []gres.MIGInstance{{Device: 7, Parent: 7, Profile: "1g.10gb", GPUInstance: 9}}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	rec, err := ledger.NewRecorder(t0, l, "c", s, ledger.Options{ChargePeriod: time.Minute})
	require.NoError(t, err)
	parse := func(str string) []gres.Request {
		r, err := gres.ParseGRES(str)
		require.NoError(t, err)
		return r
	}
	shard, err := s.Submit(t0, scheduler.JobSpec{User: "ann", Account: "physics", GRESPerNode: parse("shard:2"), TimeLimit: time.Hour})
	require.NoError(t, err)
	mps, err := s.Submit(t0, scheduler.JobSpec{User: "ann", Account: "physics", GRESPerNode: parse("mps:50"), TimeLimit: time.Hour})
	require.NoError(t, err)
	mig, err := s.Submit(t0, scheduler.JobSpec{User: "ann", Account: "physics", GRESPerNode: parse("gpu:h100_1g.10gb:1"), TimeLimit: time.Hour})
	require.NoError(t, err)
	cyc, err := s.Schedule(t0)
	require.NoError(t, err)
	require.Len(t, cyc.Starts, 3)
	require.NoError(t, rec.Observe(t0, cyc))
	end := t0.Add(time.Hour)
	for _, id := range []scheduler.JobID{shard, mps, mig} {
		require.NoError(t, s.Finish(end, id, 0))
	}
	cyc, err = s.Schedule(end)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(end, cyc))

	js := storedJob(t, l, shard)
	assert.Equal(t, int64(2), js.AllocTRES["gres/shard"])
	assert.Zero(t, js.AllocTRES["gres/gpu"])
	assert.Equal(t, []accounting.NodeGPUs{{Node: "h100-01", Indices: []int{0}}}, js.GPUs)
	jm := storedJob(t, l, mps)
	assert.Equal(t, int64(50), jm.AllocTRES["gres/mps"])
	assert.Equal(t, []accounting.NodeGPUs{{Node: "h100-01", Indices: []int{1}}}, jm.GPUs)
	jg := storedJob(t, l, mig)
	assert.Equal(t, int64(1), jg.AllocTRES["gres/gpu:h100_1g.10gb"])
	assert.Equal(t, int64(1), jg.AllocTRES["gres/gpu"])
	assert.Equal(t, []accounting.NodeGPUs{{Node: "h100-02", Indices: []int{7}}}, jg.GPUs)
}
