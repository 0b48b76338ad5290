package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestProfileBusyWindows integrates parts of the work of the profile of
// TestProfileMean (1000 s: stall 0–100, 80 % 100–550, 40 % 550–1000).
func TestProfileBusyWindows(t *testing.T) {
	p := Profile{StallSeconds: 100, Phases: [MaxPhases]Phase{PhaseOf(0.5, 80), PhaseOf(1, 40)}}
	s := func(v int) time.Duration { return time.Duration(v) * time.Second }
	w := s(1000)
	for _, tc := range []struct {
		a, b int
		want float64
	}{
		{0, 100, 0},
		{0, 1000, 540},
		{50, 150, 40},   // 50 s stall, 50 s at 80 %
		{500, 600, 60},  // 50 × 0.8 + 50 × 0.4
		{900, 1200, 40}, // cut to the work: 100 s at 40 %
		{-10, 0, 0},
		{600, 600, 0},
		{700, 600, 0},
	} {
		assert.InDelta(t, tc.want, p.busy(w, s(tc.a), s(tc.b)), 1e-9, "[%d, %d)", tc.a, tc.b)
	}
}

// BenchmarkProfileBusy is the simulator's cost of a profile per run that
// ends: one integration over the part of the work the run covered.
func BenchmarkProfileBusy(b *testing.B) {
	p := Profile{StallSeconds: 120, Phases: [MaxPhases]Phase{PhaseOf(0.25, 90), PhaseOf(0.5, 10), PhaseOf(0.75, 90), PhaseOf(1, 0)}}
	w := 40 * time.Minute
	sum := 0.0
	for i := 0; b.Loop(); i++ {
		sum += p.busy(w, time.Duration(i%60)*time.Second, w)
	}
	if sum < 0 {
		b.Fatal(sum)
	}
}
