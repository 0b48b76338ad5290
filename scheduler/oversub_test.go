package scheduler_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// These tests follow Slurm's documented sharing of consumable resources
// (cons_tres_share: OverSubscribe=NO, YES[:n], FORCE[:n]) and of its
// SelectTypeParameters (CR_CPU, CR_Core, CR_Socket), written from the
// documentation rather than from Sluice's code.

// oversubSched is one node of sockets × cores × threads in partition p
// with mode and count, and optional backfill.
func oversubSched(t *testing.T, bf bool, unit scheduler.CRUnit, mode policy.OverSubscribe, count int, nodes ...scheduler.NodeConfig) *scheduler.Scheduler {
	t.Helper()
	cfg := scheduler.Config{Nodes: nodes, SelectTypeParameters: unit,
		Partitions: []scheduler.PartitionConfig{{Name: "p", OverSubscribe: mode, OverSubscribeCount: count}}}
	if bf {
		cfg.Backfill = &backfill.Config{}
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

// startsOf returns the cycle's starts by job.
func startsOf(c scheduler.Cycle) map[scheduler.JobID]scheduler.Allocation {
	out := map[scheduler.JobID]scheduler.Allocation{}
	for _, st := range c.Starts {
		out[st.Job] = st.Alloc
	}
	return out
}

// resourceNeedOf returns the Resources blocker's need in Explain.
func resourceNeedOf(t *testing.T, s *scheduler.Scheduler, at time.Time, id scheduler.JobID) *scheduler.ResourceNeed {
	t.Helper()
	ex, err := s.Explain(at, id, scheduler.ExplainOptions{})
	require.NoError(t, err)
	for _, b := range ex.Blockers {
		if b.Kind == scheduler.BlockerResources {
			return b.Need
		}
	}
	t.Fatalf("job %d: no Resources blocker in %+v", id, ex.Blockers)
	return nil
}

// FORCE:2 on a 4-CPU node: two 4-CPU jobs run at once on the same CPU
// ids, each charged its 4 CPUs (AllocTRES cpu=4); a third waits for
// Resources, and Explain says the sharing was counted. When one ends the
// third shares with the other. With and without backfill.
func TestOverSubscribeForceSharesUpToCount(t *testing.T) {
	for _, bf := range []bool{false, true} {
		s := oversubSched(t, bf, scheduler.CRCPU, policy.OverSubscribeForce, 2, layoutNode("n0", 1, 4, 1))
		spec := scheduler.JobSpec{User: "u", Tasks: 4, MemPerNodeMiB: 1024, TimeLimit: time.Hour}
		a := mustSubmit(t, s, t0, spec)
		b := mustSubmit(t, s, t0, spec)
		c := mustSubmit(t, s, t0, spec)
		cyc := mustSchedule(t, s, t0)
		got := startsOf(cyc)
		require.Len(t, got, 2, "bf=%v: starts %+v", bf, cyc.Starts)
		for _, id := range []scheduler.JobID{a, b} {
			require.Contains(t, got, id, "bf=%v", bf)
			na := got[id].Nodes[0]
			assert.Equal(t, []int{0, 1, 2, 3}, na.CPUs, "bf=%v job %d", bf, id)
			assert.Equal(t, int64(4), na.TRES[gres.CPU], "bf=%v job %d: AllocTRES cpu", bf, id)
			assert.Equal(t, 2, got[id].OverSubscribe, "bf=%v job %d", bf, id)
		}
		assert.Equal(t, policy.ReasonResources, reasonOf(cyc, c), "bf=%v", bf)
		ni, ok := s.Node("n0")
		require.True(t, ok)
		assert.Equal(t, int64(0), ni.Free[gres.CPU], "bf=%v", bf)
		assert.Equal(t, int64(64<<10-2048), ni.Free[gres.Mem], "bf=%v: memory is not shared", bf)

		need := resourceNeedOf(t, s, t0, c)
		assert.Equal(t, 2, need.OverSubscribe, "bf=%v", bf)
		assert.Equal(t, 0, need.FitNow, "bf=%v", bf)
		assert.Contains(t, need.String(), "OverSubscribe", "bf=%v", bf)

		t1 := t0.Add(time.Minute)
		require.NoError(t, s.Finish(t1, a, 0))
		cyc = mustSchedule(t, s, t1)
		got = startsOf(cyc)
		require.Contains(t, got, c, "bf=%v: starts %+v", bf, cyc.Starts)
		assert.Equal(t, []int{0, 1, 2, 3}, got[c].Nodes[0].CPUs, "bf=%v", bf)
		require.NoError(t, s.Finish(t1, b, 0))
		ni, _ = s.Node("n0")
		assert.Equal(t, int64(0), ni.Free[gres.CPU], "bf=%v: c still holds its CPUs", bf)
		require.NoError(t, s.Finish(t1, c, 0))
		ni, _ = s.Node("n0")
		assert.Equal(t, int64(4), ni.Free[gres.CPU], "bf=%v", bf)
		assert.Equal(t, scheduler.NodeIdle, ni.State, "bf=%v", bf)
	}
}

// A job takes free CPUs first and shares only what it still lacks, the
// CPUs with the fewest holders first (FORCE's default count: 4 jobs per
// CPU).
func TestOverSubscribeTakesFreeCPUsFirst(t *testing.T) {
	s := oversubSched(t, false, scheduler.CRCPU, policy.OverSubscribeForce, 0, layoutNode("n0", 1, 4, 1))
	assert.Equal(t, []int{0, 1, 2}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 3}))
	assert.Equal(t, []int{0, 3}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 2}), "CPU 3 free, then CPU 0 shared")
	assert.Equal(t, []int{1}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 1}), "CPU 0 has 2 holders, CPU 1 one")
	assert.Equal(t, []int{2}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 1}))
	assert.Equal(t, []int{0, 1, 2, 3}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 4}))
	assert.Equal(t, []int{3}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 1}), "CPUs 0-2 have 3 holders, CPU 3 two")
	for range 4 {
		startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 1})
	}
	// Every CPU has its 4 holders now (16 in all).
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 1, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, id))
}

// YES:2 shares only among jobs that ask --oversubscribe; NO never shares,
// whatever the job asks.
func TestOverSubscribeYesOnlyForJobsThatAsk(t *testing.T) {
	s := oversubSched(t, false, scheduler.CRCPU, policy.OverSubscribeYes, 2, layoutNode("n0", 1, 4, 1))
	ask := scheduler.JobSpec{Tasks: 4, OverSubscribe: true, TimeLimit: time.Hour}
	plain := scheduler.JobSpec{Tasks: 4, TimeLimit: time.Hour}
	a := mustSubmit(t, s, t0, ask)
	b := mustSubmit(t, s, t0, plain)
	cyc := mustSchedule(t, s, t0)
	assert.Contains(t, startsOf(cyc), a)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, b), "a job that did not ask does not share")
	assert.Zero(t, resourceNeedOf(t, s, t0, b).OverSubscribe)
	require.NoError(t, s.Cancel(t0, b))
	c := mustSubmit(t, s, t0, ask)
	cyc = mustSchedule(t, s, t0)
	require.Contains(t, startsOf(cyc), c, "two jobs that asked share")
	assert.Equal(t, []int{0, 1, 2, 3}, startsOf(cyc)[c].Nodes[0].CPUs)

	// A job that did not ask does not get CPUs a sharer holds, nor does a
	// sharer get the CPUs of a job that did not ask.
	s = oversubSched(t, false, scheduler.CRCPU, policy.OverSubscribeYes, 2, layoutNode("n0", 1, 4, 1))
	mustSubmit(t, s, t0, plain)
	d := mustSubmit(t, s, t0, ask)
	cyc = mustSchedule(t, s, t0)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, d))

	s = oversubSched(t, false, scheduler.CRCPU, policy.OverSubscribeNo, 0, layoutNode("n0", 1, 4, 1))
	mustSubmit(t, s, t0, ask)
	e := mustSubmit(t, s, t0, ask)
	cyc = mustSchedule(t, s, t0)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, e), "NO never shares")
}

// GPUs are never shared, memory is not (tracked as a consumable
// resource), and a job asking --exclusive still gets a whole idle node;
// CPUs are shared beside the GPUs.
func TestOverSubscribeNeverSharesGPUsMemoryOrExclusive(t *testing.T) {
	node := gpuNode("n0", 1, 4, 2, false)
	node.MemoryMiB = 1000
	s := oversubSched(t, false, scheduler.CRCPU, policy.OverSubscribeForce, 4, node)
	gpu := []gres.Request{{Name: "gpu", Count: 2}}
	a := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 4, GRESPerNode: gpu, MemPerNodeMiB: 600, TimeLimit: time.Hour})
	e := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 4, MemPerNodeMiB: 100, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	got := startsOf(cyc)
	require.Contains(t, got, a)
	require.Contains(t, got, e, "CPUs are shared: %+v", cyc.Pending)
	assert.Equal(t, []int{0, 1, 2, 3}, got[e].Nodes[0].CPUs)
	assert.Empty(t, got[e].Nodes[0].Devices)
	assert.Equal(t, int64(4), got[e].Nodes[0].TRES[gres.CPU])

	for _, tc := range []struct {
		why  string
		spec scheduler.JobSpec
	}{
		{"GPUs are never shared", scheduler.JobSpec{Tasks: 1, GRESPerNode: []gres.Request{{Name: "gpu", Count: 1}}, MemPerNodeMiB: 10}},
		{"memory is not shared", scheduler.JobSpec{Tasks: 1, MemPerNodeMiB: 600}},
		{"--exclusive needs an idle node", scheduler.JobSpec{Tasks: 1, Exclusive: true}},
	} {
		tc.spec.TimeLimit = time.Hour
		id := mustSubmit(t, s, t0, tc.spec)
		cyc = mustSchedule(t, s, t0)
		assert.Equal(t, policy.ReasonResources, reasonOf(cyc, id), tc.why)
		require.NoError(t, s.Cancel(t0, id))
	}
}

// Jobs of two partitions over the same node do not share a CPU, even
// when both partitions are FORCE (Sluice's conservative reading: sharing
// is per partition).
func TestOverSubscribeNotAcrossPartitions(t *testing.T) {
	s, err := scheduler.New(scheduler.Config{Nodes: []scheduler.NodeConfig{layoutNode("n0", 1, 4, 1)},
		Partitions: []scheduler.PartitionConfig{
			{Name: "p", OverSubscribe: policy.OverSubscribeForce},
			{Name: "q", OverSubscribe: policy.OverSubscribeForce},
		}})
	require.NoError(t, err)
	a := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "p", Tasks: 4, TimeLimit: time.Hour})
	c := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "p", Tasks: 4, TimeLimit: time.Hour})
	b := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "q", Tasks: 4, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	got := startsOf(cyc)
	assert.Contains(t, got, a)
	assert.NotContains(t, got, b)
	assert.Contains(t, got, c, "the same partition shares")
}

// A snapshot taken while two jobs share CPUs restores them sharing; when
// one ends the other keeps its CPUs; sharing goes on after the restore.
func TestOverSubscribeSnapshotRestore(t *testing.T) {
	s := oversubSched(t, true, scheduler.CRCore, policy.OverSubscribeForce, 2, layoutNode("n0", 1, 2, 2))
	a := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 4, TimeLimit: time.Hour})
	b := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 4, TimeLimit: 2 * time.Hour})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 2)
	var buf bytes.Buffer
	require.NoError(t, s.Snapshot(&buf))
	r, err := scheduler.Restore(&buf, scheduler.RestoreOptions{})
	require.NoError(t, err)
	ja, ok := r.Job(a)
	require.True(t, ok)
	assert.Equal(t, 2, ja.Alloc.OverSubscribe)
	t1 := t0.Add(time.Minute)
	require.NoError(t, r.Finish(t1, a, 0))
	ni, _ := r.Node("n0")
	assert.Equal(t, int64(0), ni.Free[gres.CPU], "b still holds the shared CPUs")
	c := mustSubmit(t, r, t1, scheduler.JobSpec{Tasks: 1, TimeLimit: time.Hour})
	cyc = mustSchedule(t, r, t1)
	require.Contains(t, startsOf(cyc), c)
	assert.Equal(t, []int{0, 1}, startsOf(cyc)[c].Nodes[0].CPUs, "a whole shared core (CR_Core)")
	require.NoError(t, r.Finish(t1, b, 0))
	require.NoError(t, r.Finish(t1, c, 0))
	ni, _ = r.Node("n0")
	assert.Equal(t, int64(4), ni.Free[gres.CPU])
}

// The backfill plan counts a shared CPU once, busy until its last holder
// ends, and plans pending jobs on free CPUs only: the expected start of
// a job that waits behind two sharers is the later one's end.
func TestOverSubscribeBackfillEstimate(t *testing.T) {
	s := oversubSched(t, true, scheduler.CRCPU, policy.OverSubscribeForce, 2, layoutNode("n0", 1, 4, 1))
	mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 4, TimeLimit: time.Hour})
	mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 4, TimeLimit: 3 * time.Hour})
	c := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 4, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	j, ok := s.Job(c)
	require.True(t, ok)
	assert.Equal(t, t0.Add(3*time.Hour), j.ExpectedStart)
}

// JobSpec.OverSubscribe is part of the job's JSON encoding.
func TestOverSubscribeJSON(t *testing.T) {
	b, err := json.Marshal(scheduler.JobSpec{Tasks: 1, OverSubscribe: true})
	require.NoError(t, err)
	assert.Contains(t, string(b), `"OverSubscribe":true`)
	var back scheduler.JobSpec
	require.NoError(t, json.Unmarshal(b, &back))
	assert.True(t, back.OverSubscribe)
}

// CR_Core on a node of two threads per core: a one-CPU job gets both
// threads of one core and is charged 2 CPUs; CR_CPU (Sluice's default)
// hands out single threads.
func TestCRCoreWholeCores(t *testing.T) {
	s := oversubSched(t, false, scheduler.CRCore, policy.OverSubscribeNo, 0, layoutNode("n0", 2, 2, 2))
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 1, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	al := startsOf(cyc)[id]
	require.Len(t, al.Nodes, 1)
	assert.Equal(t, []int{0, 1}, al.Nodes[0].CPUs)
	assert.Equal(t, int64(2), al.Nodes[0].TRES[gres.CPU], "AllocTRES cpu counts the whole core")
	assert.Equal(t, float64(2), al.Billing)
	// Three CPUs take two cores, kept on one socket (one task): socket 1,
	// the one with two whole cores free.
	assert.Equal(t, []int{4, 5, 6, 7}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 1, CPUsPerTask: 3}))
	// One core is left: a 3-CPU job cannot start, a 2-CPU one can.
	big := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 3, TimeLimit: time.Hour})
	cyc = mustSchedule(t, s, t0)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, big))
	need := resourceNeedOf(t, s, t0, big)
	assert.Equal(t, "CR_Core_Memory", need.CPUUnit)
	require.NoError(t, s.Cancel(t0, big))
	assert.Equal(t, []int{2, 3}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 2}))

	s = oversubSched(t, false, scheduler.CRCPU, policy.OverSubscribeNo, 0, layoutNode("n0", 2, 2, 2))
	assert.Equal(t, []int{0}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 1}))
}

// CR_Core with --hint=nomultithread: one core per task, and the cores'
// other threads go to the job too.
func TestCRCoreNoMultithread(t *testing.T) {
	s := oversubSched(t, false, scheduler.CRCore, policy.OverSubscribeNo, 0, layoutNode("n0", 1, 4, 2))
	got := startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 2, Hint: scheduler.HintNoMultithread})
	assert.Equal(t, []int{0, 1, 2, 3}, got)
	// Two cores are left: 3 tasks, one core each, cannot start.
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 3, Hint: scheduler.HintNoMultithread, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, id))
}

// CR_Socket gives whole sockets.
func TestCRSocketWholeSockets(t *testing.T) {
	s := oversubSched(t, false, scheduler.CRSocket, policy.OverSubscribeNo, 0, layoutNode("n0", 2, 2, 2))
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 1, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	al := startsOf(cyc)[id]
	assert.Equal(t, []int{0, 1, 2, 3}, al.Nodes[0].CPUs)
	assert.Equal(t, int64(4), al.Nodes[0].TRES[gres.CPU])
	assert.Equal(t, []int{4, 5, 6, 7}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 1}))
	late := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 1, TimeLimit: time.Hour})
	cyc = mustSchedule(t, s, t0)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, late))
}

// On nodes of one thread per core, CR_CPU and CR_Core allocate alike
// (the same CPU ids for the same jobs, distributions included).
func TestCRCoreEqualsCRCPUWithOneThread(t *testing.T) {
	specs := []scheduler.JobSpec{{Tasks: 4}, {Tasks: 3, Distribution: dist(t, "block:block")}, {Tasks: 2, CPUsPerTask: 3}, {Tasks: 1}}
	var got [2][][]int
	for k, u := range []scheduler.CRUnit{scheduler.CRCPU, scheduler.CRCore} {
		s := oversubSched(t, false, u, policy.OverSubscribeNo, 0, layoutNode("n0", 2, 8, 1))
		for _, sp := range specs {
			got[k] = append(got[k], startedCPUs(t, s, t0, sp))
		}
	}
	assert.Equal(t, got[0], got[1])
}

// FORCE:2 under CR_Core shares whole cores.
func TestOverSubscribeCRCoreSharesCores(t *testing.T) {
	s := oversubSched(t, false, scheduler.CRCore, policy.OverSubscribeForce, 2, layoutNode("n0", 1, 2, 2))
	assert.Equal(t, []int{0, 1, 2, 3}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 4}))
	assert.Equal(t, []int{0, 1}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 1}))
	assert.Equal(t, []int{2, 3}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 2}))
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 1, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, id), "every core has 2 holders")
}

// ParseSelectTypeParameters reads Slurm's six cons_tres values and
// refuses the others; the config's JSON keeps the unit, Validate refuses
// an unknown one.
func TestParseSelectTypeParameters(t *testing.T) {
	for s, want := range map[string]scheduler.CRUnit{
		"CR_CPU": scheduler.CRCPU, "CR_CPU_Memory": scheduler.CRCPU, "CR_Core": scheduler.CRCore,
		"cr_core_memory": scheduler.CRCore, "CR_Socket": scheduler.CRSocket, "CR_Socket_Memory": scheduler.CRSocket, "": scheduler.CRCPU,
	} {
		got, err := scheduler.ParseSelectTypeParameters(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got, s)
	}
	for _, s := range []string{"CR_Board", "CR_Memory", "CR_LLN", "CR_Core_Memory,CR_ONE_TASK_PER_CORE", "_Memory", "Core"} {
		_, err := scheduler.ParseSelectTypeParameters(s)
		assert.ErrorIs(t, err, scheduler.ErrInvalidConfig, s)
	}
	cfg := scheduler.Config{Nodes: []scheduler.NodeConfig{layoutNode("n0", 1, 2, 2)}, Partitions: []scheduler.PartitionConfig{{Name: "p"}},
		SelectTypeParameters: scheduler.CRSocket}
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(b), `"SelectTypeParameters":"CR_Socket_Memory"`), string(b))
	var back scheduler.Config
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, scheduler.CRSocket, back.SelectTypeParameters)
	cfg.SelectTypeParameters = 9
	assert.ErrorIs(t, cfg.Validate(), scheduler.ErrInvalidConfig)
}

// FuzzParseSelectTypeParameters: whatever parses writes back a value that
// parses to the same unit; the rest is refused with ErrInvalidConfig.
func FuzzParseSelectTypeParameters(f *testing.F) {
	for _, s := range []string{"CR_CPU", "CR_Core_Memory", "cr_socket", "CR_Board", "_Memory", "CR_Core_Memory_Memory", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := scheduler.ParseSelectTypeParameters(s)
		if err != nil {
			require.ErrorIs(t, err, scheduler.ErrInvalidConfig)
			return
		}
		b, err := u.MarshalText()
		require.NoError(t, err)
		var back scheduler.CRUnit
		require.NoError(t, back.UnmarshalText(b))
		require.Equal(t, u, back)
	})
}

// A job suspended by SuspendJob keeps its CPUs (scontrol suspend), shared
// ones included: when the sharer still running ends, the CPUs stay held,
// so the backfill plan must not promise them to a pending job at that
// end (with and without the kept profile).
func TestOverSubscribeSuspendedSharerKeepsSharedCPUsInPlan(t *testing.T) {
	for _, fresh := range []bool{false, true} {
		s := oversubSched(t, true, scheduler.CRCPU, policy.OverSubscribeForce, 2, layoutNode("n0", 1, 4, 1))
		if fresh {
			scheduler.RebuildProfileEveryCycle(s)
		}
		a := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 4, TimeLimit: time.Hour})
		mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 4, TimeLimit: 2 * time.Hour})
		require.Len(t, mustSchedule(t, s, t0).Starts, 2)
		require.NoError(t, s.SuspendJob(t0, a))
		c := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 1, TimeLimit: time.Hour})
		t1 := t0.Add(time.Second)
		mustSchedule(t, s, t1)
		j, _ := s.Job(c)
		assert.True(t, j.ExpectedStart.IsZero(), "fresh=%v: a holds CPUs 0-3 until resumed, no start at b's end (got %v)", fresh, j.ExpectedStart)
		assert.Empty(t, scheduler.KeptProfileMismatch(s, t1), "fresh=%v", fresh)
	}
}
