package sim_test

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler/sim"
)

// TestSyntheticProfiles checks the profile mix NewSyntheticGenerator
// documents on 20,000 jobs, and pins the profiles of a small workload.
func TestSyntheticProfiles(t *testing.T) {
	jobs, err := sim.Synthetic(sim.SyntheticConfig{Jobs: 20000, Seed: 11, Span: 24 * time.Hour})
	require.NoError(t, err)
	kinds := map[string]int{}
	for _, j := range jobs {
		p := j.Profile
		require.NoError(t, p.Validate())
		require.True(t, p.Known())
		require.LessOrEqual(t, p.StallSeconds, uint32(300))
		u0 := float64(p.Phases[0].Util) / 100
		switch {
		case p.Phases[1] == sim.Phase{}:
			if u0 >= 60 {
				require.LessOrEqual(t, u0, 95.0)
				kinds["compute"]++
			} else {
				require.GreaterOrEqual(t, u0, 15.0)
				require.LessOrEqual(t, u0, 45.0)
				kinds["input"]++
			}
		case p.Phases[1].Util == 0 && p.Phases[0].End <= 2000:
			require.GreaterOrEqual(t, p.Phases[0].End, uint16(500))
			kinds["hung"]++
		default:
			require.GreaterOrEqual(t, p.Phases[0].End, uint16(5000))
			require.LessOrEqual(t, p.Phases[0].End, uint16(9000))
			require.LessOrEqual(t, p.Phases[1].Util, uint16(500))
			kinds["tail"]++
		}
	}
	for k, want := range map[string]float64{"compute": 0.70, "input": 0.20, "tail": 0.07, "hung": 0.03} {
		assert.InDelta(t, want, float64(kinds[k])/float64(len(jobs)), 0.01, k)
	}

	small, err := sim.Synthetic(sim.SyntheticConfig{Jobs: 1000, Seed: 1})
	require.NoError(t, err)
	var b strings.Builder
	for _, j := range small {
		fmt.Fprintf(&b, "%s %v\n", j.Spec.Name, j.Profile)
	}
	sum := sha256.Sum256([]byte(b.String()))
	assert.Equal(t, "d6faaeb4dfb4edb8", fmt.Sprintf("%x", sum[:8]))
}

// TestSyntheticProfilesSource: the source draws the generator's profiles
// for the jobs without one, the same for the same seed, and leaves the
// others alone.
func TestSyntheticProfilesSource(t *testing.T) {
	c := sim.SyntheticConfig{Jobs: 50, Seed: 4}
	jobs, err := sim.Synthetic(c)
	require.NoError(t, err)
	c.NoProfiles = true
	bare, err := sim.Synthetic(c)
	require.NoError(t, err)
	own := sim.ConstantProfile(12)
	bare[7].Profile = own
	read := func(seed uint64) []sim.Job {
		src := sim.SyntheticProfiles(&sim.SliceSource{Jobs: bare}, seed)
		var out []sim.Job
		for {
			j, ok, err := src.Next()
			require.NoError(t, err)
			if !ok {
				return out
			}
			out = append(out, j)
		}
	}
	got := read(4)
	require.Len(t, got, len(bare))
	assert.Equal(t, read(4), got, "same seed, same profiles")
	assert.Equal(t, own, got[7].Profile, "a job's own profile is kept")
	for i, j := range got {
		require.NoError(t, j.Profile.Validate())
		j.Profile = sim.Profile{}
		if i != 7 {
			assert.Equal(t, bare[i], j, "nothing else changes")
		}
	}
	// The generator's stream, in read order (no span: submit order is
	// generation order): job 7 takes no draw, so job 8 gets the profile
	// the generator drew for job 7.
	for i := range 7 {
		assert.Equal(t, jobs[i].Profile, got[i].Profile, "job %d", i)
	}
	assert.Equal(t, jobs[7].Profile, got[8].Profile)
	assert.NotEqual(t, read(5)[0].Profile, got[0].Profile)
}

// TestRunGoodputDeterministic: the same synthetic workload gives the same
// goodput figures bit for bit, and profiles change no other figure.
func TestRunGoodputDeterministic(t *testing.T) {
	cfg, err := sim.SyntheticCluster(64)
	require.NoError(t, err)
	c := sim.SyntheticFor(64, 400, 3)
	jobs, err := sim.Synthetic(c)
	require.NoError(t, err)
	opt := sim.Options{DiscardSeries: true}
	first := run(t, cfg, jobs, opt)
	again := run(t, cfg, jobs, opt)
	assert.Equal(t, first.Summary, again.Summary)
	g := first.Summary.Goodput
	assert.Equal(t, first.Summary.Jobs, g.MeasuredJobs, "every synthetic job has a profile")
	assert.Zero(t, g.UnmeasuredGPUHours)
	assert.InDelta(t, first.Summary.GPUHours, g.AllocatedGPUHours, 1e-6)
	assert.Greater(t, g.Goodput, 0.3)
	assert.Less(t, g.Goodput, g.BusyFraction+1e-12)
	assert.Less(t, g.BusyFraction, 0.95)

	c.NoProfiles = true
	bare, err := sim.Synthetic(c)
	require.NoError(t, err)
	for i := range bare {
		j := jobs[i]
		j.Profile = sim.Profile{}
		require.Equal(t, j, bare[i], "profiles come from their own stream")
	}
	plain := run(t, cfg, bare, opt)
	want := first.Summary
	want.Goodput = sim.Goodput{MeasuredJobs: 0, UnmeasuredJobs: want.Jobs, UnmeasuredGPUHours: plain.Summary.Goodput.UnmeasuredGPUHours,
		IdleEnergyKWh: first.Summary.Goodput.IdleEnergyKWh} // the unallocated GPUs' draw does not depend on profiles
	assert.Equal(t, want, plain.Summary, "profiles change nothing else")
	assert.InDelta(t, first.Summary.GPUHours, plain.Summary.Goodput.UnmeasuredGPUHours, 1e-6)
}
