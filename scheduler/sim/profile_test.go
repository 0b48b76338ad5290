package sim_test

import (
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler/sim"
)

func TestProfileValidate(t *testing.T) {
	good := []sim.Profile{
		{},
		sim.ConstantProfile(0),
		sim.ConstantProfile(100),
		sim.ConstantProfile(37.25),
		{StallSeconds: 600, Phases: [sim.MaxPhases]sim.Phase{sim.PhaseOf(0.25, 90), sim.PhaseOf(0.5, 10), sim.PhaseOf(0.75, 90), sim.PhaseOf(1, 0)}},
	}
	for _, p := range good {
		assert.NoError(t, p.Validate(), "%+v", p)
	}
	bad := map[string]sim.Profile{
		"stall only":        {StallSeconds: 10},
		"util over 100":     sim.ConstantProfile(100.01),
		"negative util":     sim.ConstantProfile(-1),
		"NaN util":          sim.ConstantProfile(math.NaN()),
		"zero end":          {Phases: [sim.MaxPhases]sim.Phase{{End: 0, Util: 5000}}},
		"not ending at 1":   {Phases: [sim.MaxPhases]sim.Phase{sim.PhaseOf(0.5, 50)}},
		"decreasing ends":   {Phases: [sim.MaxPhases]sim.Phase{sim.PhaseOf(0.5, 50), sim.PhaseOf(0.4, 50), sim.PhaseOf(1, 50)}},
		"equal ends":        {Phases: [sim.MaxPhases]sim.Phase{sim.PhaseOf(0.5, 50), sim.PhaseOf(0.5, 50), sim.PhaseOf(1, 50)}},
		"end past 1":        {Phases: [sim.MaxPhases]sim.Phase{sim.PhaseOf(1.5, 50)}},
		"phase after 1":     {Phases: [sim.MaxPhases]sim.Phase{sim.PhaseOf(1, 50), {Util: 1}}},
		"raw end past 1":    {Phases: [sim.MaxPhases]sim.Phase{{End: sim.ProfileScale + 1, Util: 1}}},
		"raw util past 100": {Phases: [sim.MaxPhases]sim.Phase{{End: sim.ProfileScale, Util: sim.ProfileScale + 1}}},
	}
	for name, p := range bad {
		assert.ErrorIs(t, p.Validate(), sim.ErrInvalidProfile, name)
	}
}

// TestProfileMean: a 1000 s job with a 100 s stall, then 80 % for half
// the remaining 900 s and 40 % for the other half: (450×0.8 + 450×0.4) /
// 1000 = 54 %. A stall longer than the work leaves it all at 0 %.
func TestProfileMean(t *testing.T) {
	p := sim.Profile{StallSeconds: 100, Phases: [sim.MaxPhases]sim.Phase{sim.PhaseOf(0.5, 80), sim.PhaseOf(1, 40)}}
	require.NoError(t, p.Validate())
	assert.InDelta(t, 54, p.Mean(1000*time.Second), 1e-9)
	assert.InDelta(t, 0, p.Mean(50*time.Second), 1e-9)
	assert.InDelta(t, 37.25, sim.ConstantProfile(37.25).Mean(time.Hour), 1e-9)
	assert.Zero(t, sim.Profile{}.Mean(time.Hour))
	assert.Zero(t, p.Mean(0))
	assert.False(t, sim.Profile{}.Known())
	assert.True(t, sim.ConstantProfile(0).Known(), "measured at 0 % is not unknown")
}

// TestProfileAt reads the profile of TestProfileMean point by point.
func TestProfileAt(t *testing.T) {
	p := sim.Profile{StallSeconds: 100, Phases: [sim.MaxPhases]sim.Phase{sim.PhaseOf(0.5, 80), sim.PhaseOf(1, 40)}}
	w := 1000 * time.Second
	for pos, want := range map[int]float64{-1: 0, 0: 0, 99: 0, 100: 80, 549: 80, 550: 40, 999: 40, 1000: 0, 5000: 0} {
		assert.Equal(t, want, p.At(w, time.Duration(pos)*time.Second), "at %d s", pos)
	}
	assert.Zero(t, sim.Profile{}.At(w, 500*time.Second))
	assert.Equal(t, 0.0, p.At(50*time.Second, 10*time.Second), "all stall")
}

func TestPowerModel(t *testing.T) {
	m := sim.DefaultPowerModel()
	require.NoError(t, m.Validate())
	assert.Equal(t, sim.PowerModel{IdleWatts: 70, MaxWatts: 700}, m)
	// One GPU for an hour at 50 %: 70 W + 0.5 × 630 W = 385 Wh.
	assert.InDelta(t, 0.385, m.EnergyKWh(3600, 1800), 1e-12)
	for _, bad := range []sim.PowerModel{{IdleWatts: -1, MaxWatts: 1}, {IdleWatts: 2, MaxWatts: 1}, {MaxWatts: math.Inf(1)}, {IdleWatts: math.NaN(), MaxWatts: 1}, {}} {
		assert.ErrorIs(t, bad.Validate(), sim.ErrInvalidProfile, "%+v", bad)
	}
}

// TestProfileSize: the profile stays a small value without pointers (the
// simulator holds one per job read and per job result).
func TestProfileSize(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(sim.Profile{}), uintptr(20))
}
