package scheduler_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/telemetry"
)

// devSamples returns one sample per device index of the given
// utilisations, with energy counters at energy joules each.
func devSamples(util []float64, energy float64) []gres.DeviceSample {
	out := make([]gres.DeviceSample, len(util))
	for i, u := range util {
		out[i] = gres.DeviceSample{Index: i, Utilization: u, MemoryUsedMiB: 1000, PowerWatts: 100, EnergyJoules: energy}
	}
	return out
}

func TestTelemetryFoldsIntoTheJobHoldingTheDevices(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Telemetry.Rule = telemetry.Rule{IdleBelow: 5, IdleAfter: time.Minute}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	t0 := clustertest.Epoch
	a := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", TimeLimit: time.Hour, GRESPerNode: []gres.Request{{Name: "gpu", Count: 2}}})
	b := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", TimeLimit: time.Hour, GRESPerNode: []gres.Request{{Name: "gpu", Count: 2}}})
	mustSchedule(t, s, t0)
	ja, _ := s.Job(a)
	jb, _ := s.Job(b)
	require.Equal(t, scheduler.JobRunning, ja.State)
	require.Equal(t, ja.Alloc.Nodes[0].Name, jb.Alloc.Nodes[0].Name, "both on one node")
	node := ja.Alloc.Nodes[0].Name
	util := make([]float64, 8)
	for _, d := range ja.Alloc.Nodes[0].Devices {
		util[d] = 90
	}
	for _, d := range jb.Alloc.Nodes[0].Devices {
		util[d] = 1
	}
	for k := 1; k <= 4; k++ {
		now := t0.Add(time.Duration(30*k) * time.Second)
		require.NoError(t, noJobs(s.ReportTelemetry(now, scheduler.TelemetryEvent{Node: node, Devices: devSamples(util, float64(1000*k)),
			Jobs: []scheduler.JobReading{{Job: a, CPUSeconds: float64(10 * k), MemoryPeakBytes: 1 << 30}}})))
	}
	ja, _ = s.Job(a)
	jb, _ = s.Job(b)
	require.NotNil(t, ja.Usage)
	require.NotNil(t, jb.Usage)
	assert.Equal(t, int64(4), ja.Usage.Samples)
	assert.InDelta(t, 90, ja.Usage.MeanUtilization(), 1e-9)
	assert.InDelta(t, 2*120*0.9, ja.Usage.BusyGPUSeconds, 1e-9) // 2 GPUs × 120 s × 90 %
	assert.InDelta(t, 2*3*1000, ja.Usage.EnergyJoules, 1e-9)    // 3 rises of 1000 J on each of 2 devices
	assert.InDelta(t, 40, ja.Usage.CPUSeconds, 1e-9)            // counter 0 (the start)→40
	assert.Equal(t, int64(1<<30), ja.Usage.MemoryPeakBytes)
	assert.Equal(t, int64(2000), ja.Usage.MemoryMaxMiB)
	assert.InDelta(t, 1, jb.Usage.MeanUtilization(), 1e-9)
	assert.InDelta(t, 120, jb.Usage.IdleSeconds, 1e-9)
	assert.True(t, jb.Usage.IsIdle(cfg.Telemetry.Rule))
	assert.False(t, ja.Usage.IsIdle(cfg.Telemetry.Rule))
}

func TestTelemetryRejectsMalformedSamplesAndChangesNothing(t *testing.T) {
	s, err := scheduler.New(clustertest.Mixed4())
	require.NoError(t, err)
	t0 := clustertest.Epoch
	a := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", TimeLimit: time.Hour, GRESPerNode: []gres.Request{{Name: "gpu", Count: 8}}})
	mustSchedule(t, s, t0)
	ja, _ := s.Job(a)
	node := ja.Alloc.Nodes[0].Name
	good := devSamples(make([]float64, 8), 5)
	for name, ev := range map[string]scheduler.TelemetryEvent{
		"unknown node":  {Node: "nope", Devices: good},
		"device beyond": {Node: node, Devices: append(devSamples(make([]float64, 8), 5), gres.DeviceSample{Index: 8, Utilization: -1, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1})},
		"twice":         {Node: node, Devices: append(devSamples(make([]float64, 8), 5), good[3])},
		"utilisation":   {Node: node, Devices: []gres.DeviceSample{{Index: 0, Utilization: 140, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1}}},
		"cpu":           {Node: node, Jobs: []scheduler.JobReading{{Job: a, CPUSeconds: -3, MemoryPeakBytes: -1}}},
		"cpu inf":       {Node: node, Jobs: []scheduler.JobReading{{Job: a, CPUSeconds: math.Inf(1), MemoryPeakBytes: -1}}},
		"cpu NaN":       {Node: node, Jobs: []scheduler.JobReading{{Job: a, CPUSeconds: math.NaN(), MemoryPeakBytes: -1}}},
		"memory peak":   {Node: node, Jobs: []scheduler.JobReading{{Job: a, CPUSeconds: -1, MemoryPeakBytes: -2}}},
		"job gpu":       {Node: node, Jobs: []scheduler.JobReading{{Job: a, CPUSeconds: -1, MemoryPeakBytes: -1, GPUs: []scheduler.JobGPUReading{{Index: 9, Utilization: 3}}}}},
		// Infinite power or energy would make the usage unencodable (JSON)
		// and the node's counters unrestorable; a memory beyond an exbibyte
		// would overflow the sum over the job's devices.
		"power inf":  {Node: node, Devices: []gres.DeviceSample{{Index: 0, Utilization: 5, MemoryUsedMiB: -1, PowerWatts: math.Inf(1), EnergyJoules: -1}}},
		"energy inf": {Node: node, Devices: []gres.DeviceSample{{Index: 0, Utilization: 5, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: math.Inf(1)}}},
		"memory":     {Node: node, Devices: []gres.DeviceSample{{Index: 0, Utilization: 5, MemoryUsedMiB: math.MaxInt64, PowerWatts: -1, EnergyJoules: -1}}},
	} {
		_, err := s.ReportTelemetry(t0.Add(time.Minute), ev)
		if name == "unknown node" {
			assert.ErrorIs(t, err, scheduler.ErrUnknownNode)
		} else {
			assert.ErrorIs(t, err, scheduler.ErrInvalidEvent, name)
		}
		ja, _ = s.Job(a)
		assert.Nil(t, ja.Usage, "%s changed the job", name)
	}
}

// noJobs drops ReportTelemetry's jobs, for tests that expect no idle
// action.
func noJobs(_ []scheduler.JobID, err error) error { return err }

// An event with more than MaxReadings job readings is refused (a hostile
// event costs a bounded amount); one at the bound is read.
func TestTelemetryReadingsAreBounded(t *testing.T) {
	s, err := scheduler.New(clustertest.Mixed4())
	require.NoError(t, err)
	node := clustertest.Mixed4().Nodes[0].Name
	rs := make([]scheduler.JobReading, scheduler.MaxReadings+1)
	for k := range rs {
		rs[k] = scheduler.JobReading{Job: scheduler.JobID(k + 1), CPUSeconds: -1, MemoryPeakBytes: -1}
	}
	_, err = s.ReportTelemetry(clustertest.Epoch, scheduler.TelemetryEvent{Node: node, Jobs: rs})
	require.ErrorIs(t, err, scheduler.ErrInvalidEvent)
	_, err = s.ReportTelemetry(clustertest.Epoch, scheduler.TelemetryEvent{Node: node, Jobs: rs[:scheduler.MaxReadings]})
	require.NoError(t, err)
	rs[scheduler.MaxReadings-1].Job = 1 // the first reading's job, far apart
	_, err = s.ReportTelemetry(clustertest.Epoch, scheduler.TelemetryEvent{Node: node, Jobs: rs[:scheduler.MaxReadings]})
	require.ErrorIs(t, err, scheduler.ErrInvalidEvent)
	assert.Contains(t, err.Error(), "reading 64999: job 1 read twice")
}
