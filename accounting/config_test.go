package accounting

import (
	"math"
	"testing"
	"time"
	_ "time/tzdata" // America/New_York in tests without system zoneinfo

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResetBoundaries(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	utc := func(y int, m time.Month, d, h, mi int) time.Time { return time.Date(y, m, d, h, mi, 0, 0, time.UTC) }
	tests := []struct {
		p          ResetPeriod
		loc        *time.Location
		at         time.Time
		last, next time.Time
	}{
		{ResetDaily, nil, utc(2024, 3, 14, 15, 4), utc(2024, 3, 14, 0, 0), utc(2024, 3, 15, 0, 0)},
		{ResetDaily, nil, utc(2024, 3, 14, 0, 0), utc(2024, 3, 14, 0, 0), utc(2024, 3, 15, 0, 0)},
		// 2024-03-14 is a Thursday; the week starts on Sunday the 10th.
		{ResetWeekly, nil, utc(2024, 3, 14, 15, 4), utc(2024, 3, 10, 0, 0), utc(2024, 3, 17, 0, 0)},
		{ResetWeekly, nil, utc(2024, 3, 10, 0, 0), utc(2024, 3, 10, 0, 0), utc(2024, 3, 17, 0, 0)},
		{ResetMonthly, nil, utc(2024, 2, 29, 23, 59), utc(2024, 2, 1, 0, 0), utc(2024, 3, 1, 0, 0)},
		{ResetMonthly, nil, utc(2024, 12, 31, 1, 0), utc(2024, 12, 1, 0, 0), utc(2025, 1, 1, 0, 0)},
		{ResetQuarterly, nil, utc(2024, 3, 31, 23, 0), utc(2024, 1, 1, 0, 0), utc(2024, 4, 1, 0, 0)},
		{ResetQuarterly, nil, utc(2024, 8, 15, 0, 0), utc(2024, 7, 1, 0, 0), utc(2024, 10, 1, 0, 0)},
		{ResetQuarterly, nil, utc(2024, 12, 15, 0, 0), utc(2024, 10, 1, 0, 0), utc(2025, 1, 1, 0, 0)},
		{ResetYearly, nil, utc(2024, 7, 4, 12, 0), utc(2024, 1, 1, 0, 0), utc(2025, 1, 1, 0, 0)},
		// In New York, 1 April 00:00 EDT is 04:00 UTC; at 03:00 UTC it is
		// still March there.
		{ResetMonthly, ny, utc(2024, 4, 1, 3, 0), time.Date(2024, 3, 1, 0, 0, 0, 0, ny), time.Date(2024, 4, 1, 0, 0, 0, 0, ny)},
		{ResetMonthly, ny, utc(2024, 4, 1, 4, 0), time.Date(2024, 4, 1, 0, 0, 0, 0, ny), time.Date(2024, 5, 1, 0, 0, 0, 0, ny)},
		// The day of the spring DST change is 23 hours long.
		{ResetDaily, ny, time.Date(2024, 3, 10, 12, 0, 0, 0, ny), time.Date(2024, 3, 10, 0, 0, 0, 0, ny), time.Date(2024, 3, 11, 0, 0, 0, 0, ny)},
	}
	for _, tc := range tests {
		last, ok := tc.p.LastBoundary(tc.at, tc.loc)
		require.True(t, ok)
		assert.True(t, tc.last.Equal(last), "%v last boundary of %v: %v, want %v", tc.p, tc.at, last, tc.last)
		next, ok := tc.p.NextBoundary(tc.at, tc.loc)
		require.True(t, ok)
		assert.True(t, tc.next.Equal(next), "%v next boundary of %v: %v, want %v", tc.p, tc.at, next, tc.next)
		assert.False(t, last.After(tc.at))
		assert.True(t, next.After(tc.at))
	}
	for _, p := range []ResetPeriod{ResetNone, ResetNow} {
		_, ok := p.LastBoundary(utc(2024, 1, 1, 0, 0), nil)
		assert.False(t, ok, p.String())
		_, ok = p.NextBoundary(utc(2024, 1, 1, 0, 0), nil)
		assert.False(t, ok, p.String())
	}
}

func TestParseResetPeriod(t *testing.T) {
	for i, n := range []string{"NONE", "now", "Daily", "WEEKLY", "monthly", "QUARTERLY", "yearly"} {
		p, err := ParseResetPeriod(n)
		require.NoError(t, err)
		assert.Equal(t, ResetPeriod(i), p)
	}
	_, err := ParseResetPeriod("hourly")
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestConfigValidate(t *testing.T) {
	assert.NoError(t, Config{}.Validate())
	for _, c := range []Config{{HalfLife: -1}, {HalfLife: time.Millisecond}, {CalcPeriod: -time.Second},
		{CalcPeriod: time.Millisecond}, {Decay: 7}, {ResetPeriod: 42}} {
		assert.ErrorIs(t, c.Validate(), ErrInvalidConfig, "%+v", c)
	}
}

// TestDecayTwoHalfLives is the brief's check: two half-lives leave about
// a quarter, in both modes, and the modes differ as documented.
func TestDecayTwoHalfLives(t *testing.T) {
	a := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	b := a.Add(2 * DefaultHalfLife)
	exact := Config{Decay: DecayExact}.DecayBetween(a, b)
	slurm := Config{}.DecayBetween(a, b)
	assert.InDelta(t, 0.25, exact, 1e-12)
	assert.InDelta(t, 0.25, slurm, 0.0002)
	// df^(2hl) with df = 1-0.693/hl: about 0.25007 (0.693 < ln 2).
	assert.InDelta(t, math.Pow(1-0.693/DefaultHalfLife.Seconds(), 2*DefaultHalfLife.Seconds()), slurm, 1e-15)
	assert.Greater(t, slurm, exact)
	assert.Equal(t, 1.0, Config{NoDecay: true}.DecayBetween(a, b))
	assert.Equal(t, 1.0, Config{}.DecayBetween(b, a), "no growth backwards")
	// Slurm mode steps at calc-period boundaries.
	c := Config{CalcPeriod: 5 * time.Minute}
	assert.Equal(t, 1.0, c.DecayBetween(a.Add(time.Minute), a.Add(4*time.Minute)))
	assert.Less(t, c.DecayBetween(a.Add(4*time.Minute), a.Add(6*time.Minute)), 1.0)
	assert.InDelta(t, math.Pow(c.SlurmDecayFactor(), 300), c.DecayBetween(a.Add(4*time.Minute), a.Add(6*time.Minute)), 1e-15)
	// Exact mode composes: decay(a→m)·decay(m→b) = decay(a→b).
	e := Config{Decay: DecayExact, HalfLife: time.Hour}
	m := a.Add(17 * time.Minute)
	assert.InDelta(t, e.DecayBetween(a, b), e.DecayBetween(a, m)*e.DecayBetween(m, b), 1e-15)
	// Chunk weights: Slurm's Δ·df^Δ and the exact integral, both ≈ Δ for a
	// short chunk.
	assert.InDelta(t, 300*math.Pow(Config{}.SlurmDecayFactor(), 300), Config{}.chunkWeight(300), 1e-9)
	assert.InDelta(t, 300, Config{Decay: DecayExact}.chunkWeight(300), 0.1)
	assert.Equal(t, 300.0, Config{NoDecay: true}.chunkWeight(300))
}

func TestEnumsText(t *testing.T) {
	for s := JobState(0); s < numJobStates; s++ {
		b, err := s.MarshalText()
		require.NoError(t, err)
		var back JobState
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, s, back)
	}
	for _, c := range []struct {
		in   string
		want JobState
	}{{"CANCELLED by 1000", StateCancelled}, {"cd", StateCompleted}, {"OOM", StateOutOfMemory}, {" running ", StateRunning}, {"RUNNING+", StateRunning}} {
		got, err := ParseJobState(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
	_, err := ParseJobState("DONE")
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = JobState(200).MarshalText()
	assert.ErrorIs(t, err, ErrInvalid)
	assert.True(t, StateRequeued.Finished())
	assert.False(t, StateRunning.Finished())
	for k := DecisionStart; k < numDecisionKinds; k++ {
		got, err := ParseDecisionKind(k.String())
		require.NoError(t, err)
		assert.Equal(t, k, got)
	}
	_, err = ParseDecisionKind("")
	assert.ErrorIs(t, err, ErrInvalid)
	var ns NodeState
	require.NoError(t, ns.UnmarshalText([]byte("planned_down")))
	assert.Equal(t, NodePlannedDown, ns)
	assert.Error(t, ns.UnmarshalText([]byte("up")))
}

func FuzzParseJobState(f *testing.F) {
	for _, s := range []string{"COMPLETED", "CANCELLED by 0", "PD", "", "+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseJobState(s)
		if err != nil {
			return
		}
		again, err := ParseJobState(st.String())
		require.NoError(t, err)
		require.Equal(t, st, again)
	})
}

func FuzzParseResetPeriod(f *testing.F) {
	for _, s := range []string{"NONE", "weekly", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseResetPeriod(s)
		if err != nil {
			return
		}
		again, err := ParseResetPeriod(p.String())
		require.NoError(t, err)
		require.Equal(t, p, again)
	})
}

func FuzzParseEnums(f *testing.F) {
	for _, s := range []string{"start", "preempt", "csv", "parsable2", "planned_down", "down", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if k, err := ParseDecisionKind(s); err == nil {
			again, err := ParseDecisionKind(k.String())
			require.NoError(t, err)
			require.Equal(t, k, again)
		}
		if e, err := ParseExportFormat(s); err == nil {
			require.LessOrEqual(t, e, FormatJSON)
		}
		var ns NodeState
		if ns.UnmarshalText([]byte(s)) == nil {
			b, err := ns.MarshalText()
			require.NoError(t, err)
			require.Equal(t, s, string(b))
		}
	})
}
