package scheduler_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/internal/texttest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

func TestSchedulerEnumsTextRoundTrip(t *testing.T) {
	var states []scheduler.JobState
	for s := scheduler.JobPending; s <= scheduler.JobPreempted; s++ {
		states = append(states, s)
	}
	texttest.Values(t, states...)
	texttest.Values(t, scheduler.RequeueDefault, scheduler.RequeueYes, scheduler.RequeueNo)
	texttest.Values(t, scheduler.PartitionUp, scheduler.PartitionDown, scheduler.PartitionDrain, scheduler.PartitionInactive)
	texttest.Values(t, scheduler.NodeIdle, scheduler.NodeMixed, scheduler.NodeAllocated, scheduler.NodeDraining, scheduler.NodeDrained,
		scheduler.NodeDown, scheduler.NodeFailing, scheduler.NodeFail)
	texttest.Values(t, scheduler.BlockerPartition, scheduler.BlockerQueue, scheduler.BlockerTopology)
	texttest.Values(t, scheduler.EstimateNone, scheduler.EstimateReserved, scheduler.EstimateOnDemand)
	texttest.Values(t, scheduler.CounterTimeLimit, scheduler.CounterFairShare)
	texttest.Values(t, scheduler.DecisionStart, scheduler.DecisionBackfillStart, scheduler.DecisionPreempt)
	texttest.Values(t, scheduler.IdleUnhealthy, scheduler.IdleFragmented)
	texttest.Values(t, scheduler.CompareUnknown, scheduler.CompareNotCompeting)
}

func TestJobStateTextAcceptsShortFormsAnyCase(t *testing.T) {
	for in, want := range map[string]scheduler.JobState{"R": scheduler.JobRunning, "pd": scheduler.JobPending,
		"node_fail": scheduler.JobNodeFail, "Cancelled": scheduler.JobCancelled, " TO ": scheduler.JobTimeout, "s": scheduler.JobSuspended} {
		var s scheduler.JobState
		require.NoError(t, s.UnmarshalText([]byte(in)), "%q", in)
		assert.Equal(t, want, s, "%q", in)
	}
	var s scheduler.JobState
	err := s.UnmarshalText([]byte("SLEEPING"))
	require.ErrorIs(t, err, scheduler.ErrUnknownName)
	assert.Contains(t, err.Error(), `JobState "SLEEPING"`)
	_, err = scheduler.JobState(99).MarshalText()
	require.ErrorIs(t, err, scheduler.ErrUnknownName)
	var n scheduler.NodeState
	err = n.UnmarshalText([]byte("busy"))
	require.ErrorIs(t, err, scheduler.ErrUnknownName)
	assert.Contains(t, err.Error(), `NodeState "busy"`)
	var d scheduler.DecisionKind
	assert.Error(t, d.UnmarshalText([]byte("")), "DecisionKind 0 has no name")
}

func TestJobSpecJSONRoundTrip(t *testing.T) {
	spec := scheduler.JobSpec{Name: "train", User: "ann", Account: "ml", Partition: "gpu", QOS: "high", Nodes: 2, Tasks: 8,
		CPUsPerTask: 4, MemPerNodeMiB: 64 << 10, GRESPerNode: []gres.Request{{Name: "gpu", Type: "h100", Count: 4}},
		GRESPerTask: []gres.Request{{Name: "shard", Count: 1}}, CPUsPerGPU: 2, TimeMin: 30 * time.Minute,
		TimeLimit: 36 * time.Hour, BeginTime: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Exclusive: true,
		CheckpointInterval: 1500 * time.Millisecond, Requeue: scheduler.RequeueNo, Switches: 1, SwitchesMaxWait: time.Hour,
		Dependency: "afterok:12", Nice: -5, NVLinkDomain: topology.DomainBalanced}
	j, err := json.Marshal(spec)
	require.NoError(t, err)
	for _, s := range []string{`"TimeLimit":"1-12:00:00"`, `"TimeMin":"00:30:00"`, `"GRESPerNode":["gpu:h100:4"]`,
		`"BeginTime":"2026-12-01T10:00:00Z"`, `"Requeue":"no-requeue"`, `"NVLinkDomain":"balanced"`, `"CheckpointInterval":"1.5s"`,
		`"SwitchesMaxWait":"01:00:00"`} {
		assert.Contains(t, string(j), s)
	}
	var back scheduler.JobSpec
	require.NoError(t, json.Unmarshal(j, &back))
	assert.Equal(t, spec, back)

	j, err = json.Marshal(scheduler.JobSpec{User: "bob"})
	require.NoError(t, err)
	for _, s := range []string{"TimeLimit", "BeginTime", "TimeMin"} {
		assert.NotContains(t, string(j), s, "unset durations and times are left out")
	}
	back = scheduler.JobSpec{}
	require.NoError(t, json.Unmarshal(j, &back))
	assert.Equal(t, scheduler.JobSpec{User: "bob"}, back)

	err = json.Unmarshal([]byte(`{"TimeLimit":"soon"}`), &back)
	require.ErrorIs(t, err, policy.ErrSyntax)
	err = json.Unmarshal([]byte(`{"Requeue":"maybe"}`), &back)
	require.ErrorIs(t, err, scheduler.ErrUnknownName)
}

func TestPartitionAndNodeConfigJSONRoundTrip(t *testing.T) {
	cores, err := gres.CoreSetOf(0, 1, 2, 3)
	require.NoError(t, err)
	inv := gres.Inventory{Devices: []gres.Device{{Index: 0, Name: "gpu", Type: "h100", NUMA: 0, Socket: 0, Cores: cores},
		{Index: 1, Name: "gpu", Type: "h100", NUMA: 0, Socket: 0, Cores: cores}}}
	require.NoError(t, inv.SetLink(0, 1, gres.Link{NVLinks: 18, NVSwitch: true, PCIe: gres.PCIePIX}))
	node := scheduler.NodeConfig{Name: "g1", CPUs: 64, MemoryMiB: 512 << 10, Features: []string{"ib"}, Devices: inv,
		GRES: []gres.Request{{Name: "shard", Count: 8}}}
	j, err := json.Marshal(node)
	require.NoError(t, err)
	for _, s := range []string{`"Cores":"0-3"`, `"PCIe":"PIX"`, `"GRES":["shard:8"]`} {
		assert.Contains(t, string(j), s)
	}
	var nb scheduler.NodeConfig
	require.NoError(t, json.Unmarshal(j, &nb))
	assert.True(t, nb.Devices.Devices[0].Cores.Equal(cores))
	for i := range nb.Devices.Devices {
		nb.Devices.Devices[i].Cores = node.Devices.Devices[i].Cores
	}
	assert.Equal(t, node, nb)

	part := scheduler.PartitionConfig{Name: "gpu", Nodes: []string{"g1"}, Default: true, State: scheduler.PartitionDrain,
		DefaultTime: time.Hour, MaxTime: 7 * 24 * time.Hour, PriorityTier: 2, QOS: "normal", OverSubscribe: policy.OverSubscribeExclusive,
		PreemptMode: policy.PreemptRequeue, GraceTime: 2 * time.Minute}
	j, err = json.Marshal(part)
	require.NoError(t, err)
	for _, s := range []string{`"State":"DRAIN"`, `"MaxTime":"7-00:00:00"`, `"DefaultTime":"01:00:00"`, `"OverSubscribe":"EXCLUSIVE"`,
		`"PreemptMode":"REQUEUE"`, `"GraceTime":"00:02:00"`} {
		assert.Contains(t, string(j), s)
	}
	var pb scheduler.PartitionConfig
	require.NoError(t, json.Unmarshal(j, &pb))
	assert.Equal(t, part, pb)
}

// smallRun runs a two-node GPU cluster through one cycle: job 1 starts on
// 2 GPUs, job 2 waits for resources.
func smallRun(t *testing.T) (*scheduler.Scheduler, scheduler.Cycle, time.Time) {
	t.Helper()
	gpuNode := func(name string) scheduler.NodeConfig {
		var inv gres.Inventory
		for i := range 4 {
			inv.Devices = append(inv.Devices, gres.Device{Index: i, Name: "gpu", Type: "h100", NUMA: -1, Socket: -1})
		}
		return scheduler.NodeConfig{Name: name, CPUs: 32, MemoryMiB: 256 << 10, Devices: inv}
	}
	s, err := scheduler.New(scheduler.Config{
		Nodes:      []scheduler.NodeConfig{gpuNode("n1")},
		Partitions: []scheduler.PartitionConfig{{Name: "gpu", MaxTime: 48 * time.Hour}},
	})
	require.NoError(t, err)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, spec := range []scheduler.JobSpec{
		{User: "ann", CPUsPerTask: 8, MemPerNodeMiB: 16 << 10, GRESPerNode: []gres.Request{{Name: "gpu", Count: 2}}, TimeLimit: 36 * time.Hour},
		{User: "bob", GRESPerNode: []gres.Request{{Name: "gpu", Count: 4}}, TimeLimit: time.Hour},
	} {
		_, err := s.Submit(now, spec)
		require.NoError(t, err)
	}
	cyc, err := s.Schedule(now)
	require.NoError(t, err)
	require.Len(t, cyc.Starts, 1)
	require.Len(t, cyc.Pending, 1)
	return s, cyc, now
}

// TestOutputJSONIsReadable checks that json.Marshal of what a real run
// returns — a Job, a Cycle, a NodeInfo, an Explanation — names TRES,
// states and reasons and writes durations as a Slurm user reads them.
func TestOutputJSONIsReadable(t *testing.T) {
	s, cyc, now := smallRun(t)
	job, ok := s.Job(1)
	require.True(t, ok)
	j, err := json.Marshal(job)
	require.NoError(t, err)
	for _, want := range []string{`"State":"RUNNING"`, `"TimeLimit":"1-12:00:00"`, `"PerNode":"cpu=8,mem=16G,node=1,gres/gpu=2"`,
		`"TRES":"cpu=8,mem=16G,node=1,gres/gpu=2`, `"StartTime":"2026-12-01T10:00:00Z"`, `"GRESPerNode":["gpu:2"]`} {
		assert.Contains(t, string(j), want)
	}
	assert.NotContains(t, string(j), `"EndTime"`, "unset times are left out")

	c, err := json.Marshal(cyc)
	require.NoError(t, err)
	for _, want := range []string{`"Reason":"Resources"`, `"TimeLimit":"1-12:00:00"`, "gres/gpu=2", `"Kind":"start"`} {
		assert.Contains(t, string(c), want)
	}
	assert.NotContains(t, string(c), "0001-01-01", "unset times are left out")
	assert.NotContains(t, string(j), "0001-01-01", "unset times are left out")

	ni, ok := s.Node("n1")
	require.True(t, ok)
	n, err := json.Marshal(ni)
	require.NoError(t, err)
	for _, want := range []string{`"State":"mixed"`, `"Capacity":"cpu=32,mem=256G,node=1,gres/gpu=4,gres/gpu:h100=4"`,
		`"Free":"cpu=24,mem=240G,node=1,gres/gpu=2,gres/gpu:h100=2"`} {
		assert.Contains(t, string(n), want)
	}

	ex, err := s.Explain(now, 2, scheduler.ExplainOptions{})
	require.NoError(t, err)
	e, err := json.Marshal(ex)
	require.NoError(t, err)
	for _, want := range []string{`"State":"PENDING"`, `"Reason":"Resources"`, `"Kind":"resources"`, `"Source":"on-demand"`,
		`"PerNode":"cpu=1,gres/gpu=4"`} {
		assert.Contains(t, string(e), want)
	}
	assert.NotContains(t, string(e), "0001-01-01", "unset times are left out")
}

func TestOutputJSONReadsBackWithRegistry(t *testing.T) {
	s, _, _ := smallRun(t)
	reg := s.Registry()
	for _, job := range s.Jobs() {
		j, err := json.Marshal(job)
		require.NoError(t, err)
		back, err := scheduler.ParseJobJSON(reg, j)
		require.NoError(t, err, "%s", j)
		assert.True(t, job.PerNode.Equal(back.PerNode))
		require.Len(t, back.Alloc.Nodes, len(job.Alloc.Nodes))
		for i := range job.Alloc.Nodes {
			assert.True(t, job.Alloc.Nodes[i].TRES.Equal(back.Alloc.Nodes[i].TRES))
			back.Alloc.Nodes[i].TRES = job.Alloc.Nodes[i].TRES
		}
		back.PerNode = job.PerNode
		j2, err := json.Marshal(back)
		require.NoError(t, err)
		assert.JSONEq(t, string(j), string(j2))
		assert.Equal(t, job.Spec, back.Spec)
		assert.Equal(t, job.State, back.State)
		assert.Equal(t, job.TimeLimit, back.TimeLimit)
	}
	ni, ok := s.Node("n1")
	require.True(t, ok)
	b, err := json.Marshal(ni)
	require.NoError(t, err)
	back, err := scheduler.ParseNodeInfoJSON(reg, b)
	require.NoError(t, err)
	assert.True(t, ni.Free.Equal(back.Free))
	assert.True(t, ni.Capacity.Equal(back.Capacity))
	assert.Equal(t, ni.State, back.State)
	_, err = scheduler.ParseNodeInfoJSON(reg, []byte(`{"Capacity":"gres/tpu=1"}`))
	require.ErrorIs(t, err, gres.ErrUnknownTRES)
}

func TestOutputJSONWithoutRegistryNeverFails(t *testing.T) {
	job := scheduler.Job{ID: 3, State: scheduler.JobRunning, PerNode: gres.Vector{4, 1024, 0, 1, 0, 2},
		Alloc: scheduler.Allocation{Nodes: []scheduler.NodeAlloc{{Name: "x", TRES: gres.Vector{4, 1024, 0, 1, 0, 2}}}}}
	j, err := json.Marshal(job)
	require.NoError(t, err)
	assert.Contains(t, string(j), `"PerNode":"cpu=4,mem=1G,node=1,tres5=2"`)
	var back scheduler.Job
	require.NoError(t, json.Unmarshal(j, &back))
	assert.True(t, job.PerNode.Equal(back.PerNode))
	ni := scheduler.NodeInfo{Name: "x", Capacity: gres.Vector{1}}
	b, err := json.Marshal(ni)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"Capacity":"cpu=1"`)
}

func FuzzJobStateText(f *testing.F) {
	for _, s := range []string{"RUNNING", "r", "PD", "node_fail", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { texttest.Fuzz[scheduler.JobState](t, s) })
}

func FuzzJobSpecJSON(f *testing.F) {
	for _, s := range []string{
		`{"User":"ann","TimeLimit":"1-12:00:00","GRESPerNode":["gpu:h100:2"],"Requeue":"requeue"}`,
		`{"Nodes":2,"TimeMin":"1.5s","BeginTime":"2026-12-01T10:00:00Z","NVLinkDomain":"one"}`,
		`{"GRESPerJob":["GPU:-1"],"SwitchesMaxWait":"UNLIMITED","Nice":-3}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var spec scheduler.JobSpec
		if json.Unmarshal([]byte(s), &spec) != nil {
			return
		}
		j, err := json.Marshal(spec)
		if err != nil {
			// Requests whose names hold ':' or ',' have no text form.
			var bad bool
			for _, l := range [][]gres.Request{spec.GRESPerNode, spec.GRESPerTask, spec.GRESPerJob} {
				for _, q := range l {
					bad = bad || q.Name == "" || strings.ContainsAny(q.Name+q.Type, ":,= \t\n")
				}
			}
			require.True(t, bad && errors.Is(err, gres.ErrInvalidGRES), "%q decoded to %+v, which does not encode: %v", s, spec, err)
			return
		}
		var back scheduler.JobSpec
		require.NoError(t, json.Unmarshal(j, &back), "%s", j)
		require.True(t, spec.BeginTime.Equal(back.BeginTime))
		spec.BeginTime, back.BeginTime = time.Time{}, time.Time{}
		require.Equal(t, spec, back, "%s", j)
	})
}

// TestEntryJSONIsReadableAndExact checks the journal form of the events
// that carry structs: a submit with durations and GRES, a reservation with
// nodes, TRES and flags. Both read as Slurm's strings and decode to the
// same event.
func TestEntryJSONIsReadableAndExact(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	reg, err := gres.NewRegistry("gres/gpu:h100")
	require.NoError(t, err)
	tres, err := reg.ParseTRES("cpu=8,gres/gpu=2")
	require.NoError(t, err)
	for _, c := range []struct {
		ev   scheduler.Event
		want []string
	}{
		{scheduler.SubmitEvent{Spec: scheduler.JobSpec{User: "ann", TimeLimit: 90 * time.Minute,
			GRESPerNode: []gres.Request{{Name: "gpu", Type: "h100", Count: 2}}, Requeue: scheduler.RequeueYes}, Array: "0-3%2"},
			[]string{`"kind":"submit"`, `"TimeLimit":"01:30:00"`, `"GRESPerNode":["gpu:h100:2"]`, `"Requeue":"requeue"`}},
		{scheduler.AddReservationEvent{Reservation: policy.Reservation{Name: "maint", Start: at, Duration: 4 * time.Hour,
			Nodes: topology.NodeSetOf(8, 0, 1, 2), TRES: tres, Users: []string{"root"}, Flags: policy.ResvMaint}},
			[]string{`"kind":"add_reservation"`, `"Duration":"04:00:00"`, `"Nodes":"8:{0-2}"`, `"Flags":"MAINT"`, `"TRES":"cpu=8,tres5=2"`}},
	} {
		b, err := json.Marshal(scheduler.Entry{At: at, Event: c.ev})
		require.NoError(t, err)
		for _, w := range c.want {
			assert.Contains(t, string(b), w)
		}
		var back scheduler.Entry
		require.NoError(t, json.Unmarshal(b, &back), "%s", b)
		b2, err := json.Marshal(back)
		require.NoError(t, err)
		assert.JSONEq(t, string(b), string(b2))
		if sub, ok := c.ev.(scheduler.SubmitEvent); ok {
			assert.Equal(t, sub, back.Event)
		}
	}
}

// TestConfigJSONRoundTrip encodes a cluster configuration with topology,
// policy, multifactor priority and backfill, decodes it, and checks that
// the decoded configuration encodes the same and schedules the same jobs
// the same way. Hooks are code: they are left out.
func TestConfigJSONRoundTrip(t *testing.T) {
	cfg := clustertest.Mixed4()
	reg, err := scheduler.NewRegistry(cfg.Nodes)
	require.NoError(t, err)
	perUser, err := policy.ParseTRESLimits(reg, "gres/gpu=8")
	require.NoError(t, err)
	cfg.Registry = reg
	cfg.Policy = &policy.Config{QOS: []policy.QOS{{Name: "normal", Limits: policy.QOSLimits{MaxTRESPerUser: perUser}}}}
	cfg.Topology = &topology.Config{Switches: []topology.SwitchConfig{{Name: "s1", Nodes: []string{"h100-01", "h100-02"}},
		{Name: "s2", Nodes: []string{"a100-01", "a100-02"}}, {Name: "top", Switches: []string{"s1", "s2"}}}}
	cfg.Priority = &scheduler.PriorityConfig{Engine: priority.Config{Weights: priority.Weights{Age: 1000, FairShare: 5000},
		MaxAge: 7 * 24 * time.Hour, Flags: priority.AccrueAlways, Site: priority.SiteFactorFunc(func(time.Time, *priority.Job) int64 { return 0 })},
		CalcPeriod: time.Minute}
	cfg.Backfill = &backfill.Config{Mode: backfill.EASY, Reservations: 1, Window: 24 * time.Hour, Resolution: time.Minute}
	cfg.MinJobAge = 5 * time.Minute
	cfg.RequeueDelay = scheduler.DefaultRequeueDelay
	j, err := json.Marshal(cfg)
	require.NoError(t, err)
	for _, want := range []string{`"MinJobAge":"00:05:00"`, `"RequeueDelay":"00:02:00"`, `"Window":"1-00:00:00"`, `"Mode":"easy"`, `"MaxAge":"7-00:00:00"`,
		`"Flags":"ACCRUE_ALWAYS"`, `"CalcPeriod":"00:01:00"`, `"MaxTRESPerUser":"gres/gpu=8"`, `"Registry":"cpu,mem,energy,node,billing,gres/gpu`} {
		assert.Contains(t, string(j), want)
	}
	assert.NotContains(t, string(j), `"Site"`, "hooks are not data")
	var back scheduler.Config
	require.NoError(t, json.Unmarshal(j, &back), "%s", j)
	assert.Nil(t, back.Priority.Engine.Site)
	j2, err := json.Marshal(back)
	require.NoError(t, err)
	assert.JSONEq(t, string(j), string(j2))

	run := func(c scheduler.Config) string {
		s, err := scheduler.New(c)
		require.NoError(t, err)
		now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		for i := range 6 {
			_, err := s.Submit(now, scheduler.JobSpec{User: []string{"ann", "bob"}[i%2], QOS: "normal", Nodes: 1 + i%2,
				GRESPerNode: []gres.Request{{Name: "gpu", Count: int64(2 + 2*(i%3))}}, TimeLimit: time.Duration(1+i) * time.Hour})
			require.NoError(t, err)
		}
		cyc, err := s.Schedule(now)
		require.NoError(t, err)
		b, err := json.Marshal(cyc)
		require.NoError(t, err)
		return string(b)
	}
	cfg.Priority.Engine.Site = nil // the hook is part of PolicyVersion
	assert.Equal(t, run(cfg), run(back), "the decoded configuration decides the same, under the same PolicyVersion")
}

// BenchmarkEntryJSON measures encoding and decoding one journal entry of
// a typical submit (the journal's per-event cost).
func BenchmarkEntryJSON(b *testing.B) {
	e := scheduler.Entry{At: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Event: scheduler.SubmitEvent{Spec: scheduler.JobSpec{
		Name: "train", User: "ann", Account: "ml", Partition: "gpu", Nodes: 2, CPUsPerTask: 8, MemPerNodeMiB: 64 << 10,
		GRESPerNode: []gres.Request{{Name: "gpu", Type: "h100", Count: 4}}, TimeLimit: 12 * time.Hour}}}
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	j, err := json.Marshal(e)
	require.NoError(b, err)
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			var back scheduler.Entry
			if err := json.Unmarshal(j, &back); err != nil {
				b.Fatal(err)
			}
		}
	})
}
