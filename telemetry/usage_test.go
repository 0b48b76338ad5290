package telemetry

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func gpu(sec, devices int, util float64) GPUReading {
	return GPUReading{Time: at(sec), Devices: devices, UtilizationSum: util * float64(devices), MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1}
}

func TestAddGPUIntegratesIntervals(t *testing.T) {
	var u Usage
	rule := Rule{}
	u.AddGPU(gpu(30, 2, 50), t0, rule)  // covers 0..30 on 2 devices
	u.AddGPU(gpu(60, 2, 100), t0, rule) // 30..60
	assert.Equal(t, int64(2), u.Samples)
	assert.InDelta(t, 60, u.CoveredSeconds, 1e-9)
	assert.InDelta(t, 120, u.GPUSeconds, 1e-9)
	assert.InDelta(t, 30+60, u.BusyGPUSeconds, 1e-9) // 30 s × 2 × 0.5 + 30 s × 2 × 1
	assert.InDelta(t, 75, u.MeanUtilization(), 1e-9)
	assert.Equal(t, 100.0, u.UtilizationMax)
	assert.Equal(t, at(30), u.First)
	assert.Equal(t, at(60), u.Last)
}

func TestAddGPUMaxGapCapsAStalledAgent(t *testing.T) {
	var u Usage
	rule := Rule{MaxGap: 10 * time.Second}
	u.AddGPU(gpu(3600, 1, 100), t0, rule) // an hour after start: only 10 s count
	assert.InDelta(t, 10, u.CoveredSeconds, 1e-9)
	u.AddGPU(gpu(3605, 1, 100), t0, rule)
	assert.InDelta(t, 15, u.CoveredSeconds, 1e-9)
	// Default gap when none is named.
	var d Usage
	d.AddGPU(gpu(3600, 1, 100), t0, Rule{})
	assert.InDelta(t, DefaultMaxGap.Seconds(), d.CoveredSeconds, 1e-9)
}

func TestAddGPUOutOfOrderCoversNothing(t *testing.T) {
	var u Usage
	u.AddGPU(gpu(60, 1, 10), t0, Rule{})
	u.AddGPU(gpu(30, 1, 90), t0, Rule{}) // late: counts its max, covers no time
	assert.InDelta(t, 60, u.CoveredSeconds, 1e-9)
	assert.Equal(t, 90.0, u.UtilizationMax)
	assert.Equal(t, at(60), u.Last)
	assert.InDelta(t, 10, u.MeanUtilization(), 1e-9)
}

func TestUnknownUtilizationIsNoEvidence(t *testing.T) {
	var u Usage
	rule := Rule{IdleBelow: 5}
	u.AddGPU(gpu(30, 1, 0), t0, rule)
	require.True(t, u.IsIdle(rule))
	u.AddGPU(GPUReading{Time: at(60), MemoryUsedMiB: 100, PowerWatts: -1, EnergyJoules: -1}, t0, rule)
	assert.True(t, u.IsIdle(rule), "a reading without utilisation neither breaks nor extends the idle run's evidence")
	assert.InDelta(t, 30, u.GPUSeconds, 1e-9)
	assert.InDelta(t, 60, u.CoveredSeconds, 1e-9)
	assert.Equal(t, int64(100), u.MemoryMaxMiB)
}

func TestIdleRun(t *testing.T) {
	rule := Rule{IdleBelow: 5, IdleAfter: time.Minute}
	var u Usage
	u.AddGPU(gpu(30, 4, 80), t0, rule)
	assert.False(t, u.IsIdle(rule))
	u.AddGPU(gpu(60, 4, 1), t0, rule) // idle from 30
	assert.Equal(t, at(30), u.IdleSince)
	assert.Equal(t, 30*time.Second, u.IdleFor())
	assert.False(t, u.IsIdle(rule))
	u.AddGPU(gpu(90, 4, 4.9), t0, rule)
	assert.True(t, u.IsIdle(rule), "below 5 %% from 30 s to 90 s")
	u.AddGPU(gpu(120, 4, 5), t0, rule) // at the threshold: busy
	assert.False(t, u.IsIdle(rule))
	assert.True(t, u.IdleSince.IsZero())
	assert.InDelta(t, 60, u.IdleSeconds, 1e-9)
	// Detection off.
	assert.False(t, u.IsIdle(Rule{}))
}

func TestEnergyPowerMemory(t *testing.T) {
	var u Usage
	u.AddGPU(GPUReading{Time: at(10), Devices: 1, UtilizationSum: 50, MemoryUsedMiB: 1000, PowerWatts: 300, EnergyJoules: 3000}, t0, Rule{})
	u.AddGPU(GPUReading{Time: at(20), Devices: 1, UtilizationSum: 50, MemoryUsedMiB: 3000, PowerWatts: 200, EnergyJoules: 2000}, t0, Rule{})
	assert.Equal(t, 5000.0, u.EnergyJoules)
	assert.Equal(t, 300.0, u.PowerMaxWatts)
	assert.Equal(t, int64(3000), u.MemoryMaxMiB)
	assert.InDelta(t, 2000, u.MeanMemoryMiB(), 1e-9)
}

func TestHostAndMerge(t *testing.T) {
	var a, b Usage
	a.AddHost(HostReading{CPUSeconds: 12, MemoryPeakBytes: 1 << 30})
	a.AddHost(HostReading{CPUSeconds: -1, MemoryPeakBytes: -1})
	a.AddGPU(gpu(30, 1, 20), t0, Rule{IdleBelow: 50})
	b.AddHost(HostReading{CPUSeconds: 3, MemoryPeakBytes: 2 << 30})
	b.AddGPU(gpu(100, 1, 90), at(90), Rule{IdleBelow: 50})
	m := a
	m.Merge(b)
	assert.Equal(t, int64(3), m.HostSamples)
	assert.Equal(t, 15.0, m.CPUSeconds)
	assert.Equal(t, int64(2<<30), m.MemoryPeakBytes)
	assert.Equal(t, at(30), m.First)
	assert.Equal(t, at(100), m.Last)
	assert.True(t, m.IdleSince.IsZero(), "the later run's busy reading ends the idle run")
	assert.InDelta(t, 40, m.CoveredSeconds, 1e-9)
	assert.InDelta(t, (30*20+10*90)/40.0, m.MeanUtilization(), 1e-9)
	var z Usage
	z.Merge(a)
	assert.Equal(t, a, z)
}

func TestValidate(t *testing.T) {
	ok := gpu(1, 2, 50)
	require.NoError(t, ok.Validate())
	bad := []GPUReading{
		{Devices: 1, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1},
		{Time: at(1), Devices: -1, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1},
		{Time: at(1), Devices: 1, UtilizationSum: 101, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1},
		{Time: at(1), Devices: 0, UtilizationSum: 1, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1},
		{Time: at(1), Devices: 1, MemoryUsedMiB: -2, PowerWatts: -1, EnergyJoules: -1},
		{Time: at(1), Devices: 1, MemoryUsedMiB: -1, PowerWatts: -0.5, EnergyJoules: -1},
		{Time: at(1), Devices: 1, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -3},
	}
	for i, g := range bad {
		assert.ErrorIs(t, g.Validate(), ErrInvalid, "reading %d", i)
	}
	assert.ErrorIs(t, HostReading{CPUSeconds: -2}.Validate(), ErrInvalid)
	assert.ErrorIs(t, HostReading{MemoryPeakBytes: -5}.Validate(), ErrInvalid)
	require.NoError(t, HostReading{CPUSeconds: -1, MemoryPeakBytes: -1}.Validate())
	assert.ErrorIs(t, Rule{IdleBelow: 101}.Validate(), ErrInvalid)
	assert.ErrorIs(t, Rule{IdleAfter: -1}.Validate(), ErrInvalid)
	assert.ErrorIs(t, Rule{MaxGap: -1}.Validate(), ErrInvalid)
	require.NoError(t, Rule{IdleBelow: 5, IdleAfter: time.Hour}.Validate())
}

func BenchmarkAddGPU(b *testing.B) {
	var u Usage
	rule := Rule{IdleBelow: 5, IdleAfter: time.Minute}
	g := GPUReading{Devices: 8, UtilizationSum: 400, MemoryUsedMiB: 80000, PowerWatts: 5000, EnergyJoules: 150000}
	for i := 0; b.Loop(); i++ {
		g.Time = t0.Add(time.Duration(i) * 30 * time.Second)
		u.AddGPU(g, t0, rule)
	}
}

// A stall longer than MaxGap breaks an idle streak: the time no reading
// covers is not idle time, so one idle reading after hours of silence
// does not make the job idle for hours (as it does not cover them).
func TestIdleStreakBrokenByAStall(t *testing.T) {
	var u Usage
	rule := Rule{IdleBelow: 5, IdleAfter: 30 * time.Minute, MaxGap: time.Minute}
	for s := 30; s <= 300; s += 30 { // five minutes of idle readings
		u.AddGPU(gpu(s, 1, 1), t0, rule)
	}
	require.Equal(t, 5*time.Minute, u.IdleFor())
	u.AddGPU(gpu(300+2*3600, 1, 1), t0, rule) // the agent was silent for two hours
	assert.Equal(t, time.Minute, u.IdleFor(), "the streak restarts at the one gap-capped minute the reading covers")
	assert.False(t, u.IsIdle(rule))
	assert.InDelta(t, 300+60, u.IdleSeconds, 1e-9)
	u.AddGPU(gpu(300+2*3600+30, 1, 1), t0, rule)
	assert.Equal(t, 90*time.Second, u.IdleFor(), "and grows again with readings")
}

// TestSumsSaturate: readings each finite whose sums overflow leave the
// usage at the largest float, never at +Inf (which no encoding carries).
func TestSumsSaturate(t *testing.T) {
	var u Usage
	big := GPUReading{Time: at(1), Devices: 1, UtilizationSum: 50, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: math.MaxFloat64}
	u.AddGPU(big, t0, Rule{})
	big.Time = at(2)
	u.AddGPU(big, t0, Rule{})
	u.AddHost(HostReading{CPUSeconds: math.MaxFloat64, MemoryPeakBytes: -1})
	u.AddHost(HostReading{CPUSeconds: math.MaxFloat64, MemoryPeakBytes: -1})
	assert.Equal(t, math.MaxFloat64, u.EnergyJoules)
	assert.Equal(t, math.MaxFloat64, u.CPUSeconds)
	m := u
	m.Merge(u)
	assert.Equal(t, math.MaxFloat64, m.EnergyJoules)
	assert.Equal(t, math.MaxFloat64, m.CPUSeconds)
}
