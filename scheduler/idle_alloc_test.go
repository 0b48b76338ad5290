package scheduler_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/telemetry"
)

// idleRule is the rule of these tests: below 5 % for 10 minutes.
var idleRule = telemetry.Rule{IdleBelow: 5, IdleAfter: 10 * time.Minute}

// uniform returns samples of the node's 8 devices, all at util.
func uniform(util float64) []gres.DeviceSample {
	u := make([]float64, 8)
	for i := range u {
		u[i] = util
	}
	return devSamples(u, -1)
}

// nodeIdle returns the report's entry for node name.
func nodeIdle(rep scheduler.IdleReport, name string) scheduler.NodeIdleCapacity {
	for _, n := range rep.Nodes {
		if n.Node == name {
			return n
		}
	}
	return scheduler.NodeIdleCapacity{Node: name}
}

// A job whose readings stay below IdleBelow for IdleAfter shows the 8
// GPUs and the CPUs it holds as allocated-idle, not before, and not as
// free; a busy reading takes them out again.
func TestIdleAllocatedFromReadings(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Telemetry.Rule = idleRule
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", TimeLimit: 2 * time.Hour, CPUsPerTask: 16, GRESPerNode: gpus(8)})
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)
	node := j.Alloc.Nodes[0].Name
	before := s.IdleCapacity(t0)
	assert.Zero(t, before.GPUs[scheduler.IdleAllocated])

	// Readings every minute (within the rule's MaxGap).
	last := time.Duration(0)
	report := func(to time.Duration, util float64) scheduler.IdleReport {
		t.Helper()
		for last < to {
			last += time.Minute
			require.NoError(t, noJobs(s.ReportTelemetry(t0.Add(last), scheduler.TelemetryEvent{Node: node, Devices: uniform(util)})))
		}
		return s.IdleCapacity(t0.Add(to))
	}
	// 9 minutes below 5 %: not yet idle by the rule.
	rep := report(9*time.Minute, 1)
	assert.Zero(t, rep.GPUs[scheduler.IdleAllocated], "%s", rep)
	// 10 minutes: allocated but idle.
	rep = report(10*time.Minute, 1)
	assert.Equal(t, int64(8), rep.GPUs[scheduler.IdleAllocated], "%s", rep)
	assert.Equal(t, int64(len(j.Alloc.Nodes[0].CPUs)), rep.CPUs[scheduler.IdleAllocated], "%s", rep)
	ni := nodeIdle(rep, node)
	assert.Equal(t, int64(8), ni.GPUs[scheduler.IdleAllocated])
	assert.Zero(t, ni.GPUs.Free(), "the node's GPUs are allocated, none is free")
	assert.Equal(t, before.GPUs.Free(), rep.GPUs.Free(), "free units keep their classes")
	assert.Equal(t, before.CPUs.Free(), rep.CPUs.Free())
	assert.Equal(t, rep.GPUs.Free()+8, rep.GPUs.Total())
	assert.Contains(t, rep.String(), "allocated-idle")
	assert.Contains(t, rep.String(), "of which free")

	// Idle while the clock runs on, without readings: the evidence stands.
	assert.Equal(t, int64(8), s.IdleCapacity(t0.Add(time.Hour)).GPUs[scheduler.IdleAllocated])

	// One busy reading: no longer idle.
	rep = report(11*time.Minute, 60)
	assert.Zero(t, rep.GPUs[scheduler.IdleAllocated], "%s", rep)
	assert.Zero(t, rep.CPUs[scheduler.IdleAllocated], "%s", rep)
	assert.NotContains(t, rep.String(), "of which free")

	// JSON names the classes.
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	var back scheduler.IdleReport
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, rep, back)
}

// With the rule off (IdleBelow 0) readings are folded but no job is idle:
// the class stays empty.
func TestIdleAllocatedEmptyWithTheRuleOff(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Telemetry.Rule = telemetry.Rule{IdleAfter: time.Minute}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", TimeLimit: 2 * time.Hour, GRESPerNode: gpus(8)})
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	for k := 1; k <= 6; k++ {
		require.NoError(t, noJobs(s.ReportTelemetry(t0.Add(time.Duration(k)*5*time.Minute), scheduler.TelemetryEvent{Node: j.Alloc.Nodes[0].Name, Devices: uniform(0)})))
	}
	j, _ = s.Job(id)
	require.NotNil(t, j.Usage)
	assert.Zero(t, j.Usage.MeanUtilization())
	rep := s.IdleCapacity(t0.Add(30 * time.Minute))
	assert.Zero(t, rep.GPUs[scheduler.IdleAllocated], "%s", rep)
	assert.Zero(t, rep.CPUs[scheduler.IdleAllocated], "%s", rep)
	assert.Equal(t, rep.GPUs.Free(), rep.GPUs.Total())
}

// A GPU shared through shards or MPS is counted once, as allocated-idle
// only when every job sharing it is idle; the free count does not count
// it again.
func TestIdleAllocatedSharedGPUCountedOncePerDevice(t *testing.T) {
	cfg := sharedDGX(t)
	cfg.Telemetry.Rule = idleRule
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	a := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: req(t, "shard:2"), CPUsPerTask: 1, TimeLimit: time.Hour})
	b := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: req(t, "shard:3"), CPUsPerTask: 1, TimeLimit: time.Hour})
	c := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: req(t, "shard:2"), CPUsPerTask: 1, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	dev := func(id scheduler.JobID) int {
		j, _ := s.Job(id)
		require.Equal(t, scheduler.JobRunning, j.State)
		require.Len(t, j.Alloc.Nodes[0].Shares, 1)
		return j.Alloc.Nodes[0].Shares[0].Device
	}
	require.Equal(t, dev(a), dev(c), "a and c share a GPU")
	require.NotEqual(t, dev(a), dev(b))
	total := s.IdleCapacity(t0).GPUs.Total()

	for k := 1; k <= 10; k++ {
		require.NoError(t, noJobs(s.ReportTelemetry(t0.Add(time.Duration(k)*time.Minute), scheduler.TelemetryEvent{Node: "dgx01", Devices: uniform(1)})))
	}
	rep := s.IdleCapacity(t0.Add(10 * time.Minute))
	assert.Equal(t, int64(2), rep.GPUs[scheduler.IdleAllocated], "two shared GPUs, each once: %s", rep)
	assert.Equal(t, int64(3), rep.CPUs[scheduler.IdleAllocated], "%s", rep)
	assert.Equal(t, total, rep.GPUs.Total(), "no device counted twice: %s", rep)

	// c works on the shared GPU (its own process utilisation): the GPU
	// is in use by c, so it is not allocated-idle though a idles on it.
	own := []scheduler.JobReading{{Job: c, CPUSeconds: -1, MemoryPeakBytes: -1, GPUs: []scheduler.JobGPUReading{{Index: dev(c), Utilization: 80}}}}
	require.NoError(t, noJobs(s.ReportTelemetry(t0.Add(11*time.Minute), scheduler.TelemetryEvent{Node: "dgx01", Devices: uniform(1), Jobs: own})))
	rep = s.IdleCapacity(t0.Add(11 * time.Minute))
	assert.Equal(t, int64(1), rep.GPUs[scheduler.IdleAllocated], "only b's GPU: %s", rep)
	assert.Equal(t, int64(2), rep.CPUs[scheduler.IdleAllocated], "a's and b's CPUs: %s", rep)
	assert.Equal(t, total, rep.GPUs.Total(), "%s", rep)
}

// CPUs shared by oversubscription (OverSubscribe=FORCE:2) are counted
// once, as allocated-idle only when every job holding them is idle.
func TestIdleAllocatedSharedCPUsCountedOnce(t *testing.T) {
	s, err := scheduler.New(scheduler.Config{Nodes: []scheduler.NodeConfig{gpuNode("n0", 1, 4, 2, false)},
		Partitions: []scheduler.PartitionConfig{{Name: "p", OverSubscribe: policy.OverSubscribeForce, OverSubscribeCount: 2}},
		Telemetry:  scheduler.TelemetryConfig{Rule: idleRule}})
	require.NoError(t, err)
	a := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 4, GRESPerNode: gpus(1), MemPerNodeMiB: 100, TimeLimit: time.Hour})
	b := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 4, GRESPerNode: gpus(1), MemPerNodeMiB: 100, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	ja, _ := s.Job(a)
	jb, _ := s.Job(b)
	require.Equal(t, scheduler.JobRunning, ja.State)
	require.Equal(t, scheduler.JobRunning, jb.State)
	require.Equal(t, ja.Alloc.Nodes[0].CPUs, jb.Alloc.Nodes[0].CPUs, "the two jobs share the 4 CPUs")
	util := make([]float64, 2)
	util[ja.Alloc.Nodes[0].Devices[0]] = 1
	util[jb.Alloc.Nodes[0].Devices[0]] = 70
	read := func(from, to int) {
		for k := from; k <= to; k++ {
			require.NoError(t, noJobs(s.ReportTelemetry(t0.Add(time.Duration(k)*time.Minute), scheduler.TelemetryEvent{Node: "n0", Devices: devSamples(util, -1)})))
		}
	}
	read(1, 10)
	rep := s.IdleCapacity(t0.Add(10 * time.Minute))
	assert.Equal(t, int64(1), rep.GPUs[scheduler.IdleAllocated], "a's GPU: %s", rep)
	assert.Zero(t, rep.CPUs[scheduler.IdleAllocated], "the CPUs are b's too, and b works: %s", rep)

	util[jb.Alloc.Nodes[0].Devices[0]] = 1
	read(11, 21)
	rep = s.IdleCapacity(t0.Add(21 * time.Minute))
	assert.Equal(t, int64(2), rep.GPUs[scheduler.IdleAllocated], "%s", rep)
	assert.Equal(t, int64(4), rep.CPUs[scheduler.IdleAllocated], "4 CPUs, once each: %s", rep)
}
