package scheduler_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// sharedDGX is one DGX H100 whose GPUs 0-1 are split into 4 shards each
// and whose GPU 2 offers 100 MPS shares (gres.conf sharing lines).
func sharedDGX(t *testing.T) scheduler.Config {
	t.Helper()
	cfg := clustertest.DGX()
	inv := gpuserver.DGXH100()
	shards, err := gres.ParseSharesConf("Name=shard Count=8 File=/dev/nvidia[0-1]")
	require.NoError(t, err)
	mps, err := gres.ParseSharesConf("Name=mps Count=100 File=/dev/nvidia2")
	require.NoError(t, err)
	inv.Shares = append(shards, mps...)
	cfg.Nodes[0].Devices = inv
	return cfg
}

func req(t *testing.T, s string) []gres.Request {
	t.Helper()
	r, err := gres.ParseGRES(s)
	require.NoError(t, err)
	return r
}

// TestSharedGPUsEndToEnd follows Slurm's documented gres/shard and
// gres/mps behaviour through submit, cycle, allocation, blocking reason,
// Explain and snapshot: a job's shards come from one GPU, several jobs
// share a GPU, a GPU with shares in use is not allocated whole as
// gres/gpu, and mps:N takes N of one GPU's MPS count.
func TestSharedGPUsEndToEnd(t *testing.T) {
	s, err := scheduler.New(sharedDGX(t))
	require.NoError(t, err)
	info, _ := s.Node("dgx01")
	reg := s.Registry()
	shardID, mpsID := reg.MustLookup("gres/shard"), reg.MustLookup("gres/mps")
	assert.Equal(t, int64(8), info.Capacity[shardID])
	assert.Equal(t, int64(100), info.Capacity[mpsID])

	a := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: req(t, "shard:2"), CPUsPerTask: 1})
	b := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: req(t, "shard:3"), CPUsPerTask: 1})
	c := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: req(t, "shard:2"), CPUsPerTask: 1})
	m := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: req(t, "mps:60"), CPUsPerTask: 1})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 4)
	shares := func(id scheduler.JobID) []gres.ShareGrant {
		j, _ := s.Job(id)
		require.Len(t, j.Alloc.Nodes, 1)
		assert.Empty(t, j.Alloc.Nodes[0].Devices, "shares leave the device shared, not allocated whole")
		return j.Alloc.Nodes[0].Shares
	}
	assert.Equal(t, []gres.ShareGrant{{Device: 0, Name: "shard", Count: 2}}, shares(a))
	// 2 shards left on GPU 0 do not hold shard:3: it takes GPU 1 whole
	// rather than spanning GPUs (Slurm without MULTIPLE_SHARING_GRES_PJ).
	assert.Equal(t, []gres.ShareGrant{{Device: 1, Name: "shard", Count: 3}}, shares(b))
	// The next job packs onto GPU 0, already shared: two jobs on one GPU.
	assert.Equal(t, []gres.ShareGrant{{Device: 0, Name: "shard", Count: 2}}, shares(c))
	assert.Equal(t, []gres.ShareGrant{{Device: 2, Name: "mps", Count: 60}}, shares(m))
	ja, _ := s.Job(a)
	assert.Equal(t, int64(2), ja.Alloc.Nodes[0].TRES[shardID], "shards are TRES")

	// GPUs 0-2 are shared: 5 whole GPUs remain though gres/gpu counts 8,
	// and 2 shards remain (1 on GPU 1) but none holds shard:2.
	five := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(5), CPUsPerTask: 1})
	whole := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(6), CPUsPerTask: 1})
	more := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: req(t, "shard:2"), CPUsPerTask: 1})
	mps50 := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: req(t, "mps:50"), CPUsPerTask: 1})
	cyc = mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, five, cyc.Starts[0].Job)
	jf, _ := s.Job(five)
	assert.Equal(t, []int{3, 4, 5, 6, 7}, jf.Alloc.Nodes[0].Devices)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, whole))
	ex, err := s.Explain(t0, more, scheduler.ExplainOptions{})
	require.NoError(t, err)
	assert.Contains(t, deficitsOf(ex), scheduler.Deficit{TRES: "gres/shard", PerNode: 2, Nodes: 0})
	ex, err = s.Explain(t0, mps50, scheduler.ExplainOptions{})
	require.NoError(t, err)
	assert.Contains(t, deficitsOf(ex), scheduler.Deficit{TRES: "gres/mps", PerNode: 50, Nodes: 0})

	// Snapshot and restore: the shares stay where they were.
	var buf bytes.Buffer
	require.NoError(t, s.Snapshot(&buf))
	r, err := scheduler.Restore(&buf, scheduler.RestoreOptions{})
	require.NoError(t, err)
	jr, _ := r.Job(c)
	assert.Equal(t, []gres.ShareGrant{{Device: 0, Name: "shard", Count: 2}}, jr.Alloc.Nodes[0].Shares)
	ri, _ := r.Node("dgx01")
	assert.Equal(t, sharedDGX(t).Nodes[0].Devices.Shares, func() []gres.DeviceShares {
		n, ok := r.NodeConfig("dgx01")
		require.True(t, ok)
		return n.Devices.Shares
	}())
	assert.Equal(t, info.Capacity, ri.Capacity)

	// Jobs a and c end, so GPU 0 is whole again, and the 5-GPU job ends:
	// six whole GPUs (0, 3-7) hold the 6-GPU job, which is ahead of
	// shard:2 and takes GPU 0 whole, so shard:2 (1 shard left on GPU 1)
	// waits.
	for _, sch := range []*scheduler.Scheduler{s, r} {
		t1 := t0.Add(time.Minute)
		for _, id := range []scheduler.JobID{a, c, five} {
			require.NoError(t, sch.Finish(t1, id, 0))
		}
		cyc = mustSchedule(t, sch, t1)
		started := map[scheduler.JobID]bool{}
		for _, st := range cyc.Starts {
			started[st.Job] = true
		}
		assert.True(t, started[whole], "GPU 0 is no longer shared")
		assert.False(t, started[more], "GPU 0 went whole to the job ahead")
		jw, _ := sch.Job(whole)
		assert.Equal(t, []int{0, 3, 4, 5, 6, 7}, jw.Alloc.Nodes[0].Devices)
		assert.NotEqual(t, policy.ReasonNone, reasonOf(cyc, more))
	}
}

func deficitsOf(ex scheduler.Explanation) []scheduler.Deficit {
	var out []scheduler.Deficit
	for _, b := range ex.Blockers {
		if b.Need != nil {
			out = append(out, b.Need.Deficits...)
		}
	}
	return out
}

// TestSharedGPUsConfigAndJSON: a node may not count shards (GRES) and
// share devices under the same name; NodeAlloc.Shares has a JSON form.
func TestSharedGPUsConfigAndJSON(t *testing.T) {
	cfg := sharedDGX(t)
	cfg.Nodes[0].GRES = []gres.Request{{Name: "shard", Count: 8}}
	_, err := scheduler.New(cfg)
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig)
	assert.ErrorContains(t, err, `GRES "shard" is both counted`)

	cfg = sharedDGX(t)
	cfg.Nodes[0].Devices.Shares[0].Device = 42
	_, err = scheduler.New(cfg)
	assert.ErrorIs(t, err, gres.ErrInvalidInventory)

	na := scheduler.NodeAlloc{Node: 0, Name: "dgx01", Shares: []gres.ShareGrant{{Device: 1, Name: "mps", Count: 50}}}
	b, err := json.Marshal(na)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"Shares":[{"Device":1,"Name":"mps","Count":50}]`)
	var back scheduler.NodeAlloc
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, na.Shares, back.Shares)
}

// TestSharedGPUsNodeChoiceSeesWholeUse: a node whose shared GPU is
// allocated whole still counts its shards as free TRES, but cannot give
// them; the cycle must pick the other node, not stall on the first.
func TestSharedGPUsNodeChoiceSeesWholeUse(t *testing.T) {
	node := func(name string) scheduler.NodeConfig {
		inv := gres.Inventory{Devices: []gres.Device{{Index: 0, Name: "gpu", NUMA: -1, Socket: -1}, {Index: 1, Name: "gpu", NUMA: -1, Socket: -1}},
			Shares: []gres.DeviceShares{{Device: 0, Shards: 4}}}
		return scheduler.NodeConfig{Name: name, CPUs: 8, MemoryMiB: 1024, Devices: inv}
	}
	cfg := scheduler.Config{Nodes: []scheduler.NodeConfig{node("a"), node("b")},
		Partitions: []scheduler.PartitionConfig{{Name: "p", Default: true}}}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	w := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(2), CPUsPerTask: 1})
	sh := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: req(t, "shard:1"), CPUsPerTask: 1})
	// A whole-GPU job may not take a shared GPU: gres/gpu counts 2 free
	// on node b, but one of them has a shard in use.
	g2 := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(2), CPUsPerTask: 1})
	cyc := mustSchedule(t, s, t0)
	jw, _ := s.Job(w)
	assert.Equal(t, []string{"a"}, jw.Alloc.NodeNames())
	js, _ := s.Job(sh)
	require.Equal(t, scheduler.JobRunning, js.State)
	assert.Equal(t, []string{"b"}, js.Alloc.NodeNames())
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, g2))
	ex, err := s.Explain(t0, g2, scheduler.ExplainOptions{})
	require.NoError(t, err)
	assert.Contains(t, deficitsOf(ex), scheduler.Deficit{TRES: "gres/gpu", PerNode: 2, Nodes: 0})
}
