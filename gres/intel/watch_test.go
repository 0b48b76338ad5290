package intel_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gresdriver"
	"github.com/sluicehq/sluice/gres/intel"
	"github.com/sluicehq/sluice/gres/intel/inteltest"
)

// TestHealthCounters: a fatal counter rising makes its tile unhealthy
// once; correctable counters do not count; counters restarting from zero
// (device reset) bring it back; counts present at start are a baseline.
func TestHealthCounters(t *testing.T) {
	t.Parallel()
	m := inteltest.Max1550Node()
	tree := m.Tree()
	tree.File(m.ErrorCounter(7, 0, "fatal_eu_grf"), "3\n") // before watching: baseline
	root := gresdriver.WriteTree(t, tree)
	d, err := intel.Open(intel.Options{Root: root, PollInterval: time.Millisecond})
	require.NoError(t, err)
	ctx := context.Background()
	poll := func() []gres.HealthEvent {
		evs, err := d.PollHealth(ctx, 2*time.Millisecond)
		require.NoError(t, err)
		return evs
	}
	assert.Empty(t, poll(), "counts present at start are no change")

	write(t, root, m.ErrorCounter(2, 1, "correctable_eu_grf"), "40\n")
	assert.Empty(t, poll(), "correctable errors do not make a device unhealthy")

	write(t, root, m.ErrorCounter(2, 1, "fatal_l3_double"), "1\n")
	assert.Equal(t, []gres.HealthEvent{{Index: 5, Reason: "fatal error counters rose: gt1/fatal_l3_double 0→1"}}, poll())
	assert.Empty(t, poll(), "reported once")
	write(t, root, m.ErrorCounter(2, 1, "fatal_l3_double"), "2\n")
	assert.Empty(t, poll(), "still unhealthy: no new event")

	write(t, root, m.ErrorCounter(2, 1, "fatal_l3_double"), "0\n")
	assert.Equal(t, []gres.HealthEvent{{Index: 5, Healthy: true, Reason: "fatal error counters reset"}}, poll())

	write(t, root, m.ErrorCounter(7, 0, "fatal_eu_grf"), "4\n")
	assert.Equal(t, []gres.HealthEvent{{Index: 14, Reason: "fatal error counters rose: gt0/fatal_eu_grf 3→4"}}, poll())

	// Composite mode: a card sums its tiles.
	c, err := intel.Open(intel.Options{Root: root, Composite: true, PollInterval: time.Millisecond})
	require.NoError(t, err)
	_, err = c.PollHealth(ctx, time.Millisecond)
	require.NoError(t, err)
	write(t, root, m.ErrorCounter(0, 1, "fatal_sram"), "1\n")
	evs, err := c.PollHealth(ctx, 2*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, []gres.HealthEvent{{Index: 0, Reason: "fatal error counters rose: gt1/fatal_sram 0→1"}}, evs)
}

// TestHealthGone: a card leaving sysfs takes its tiles with it; they
// recover when it is back.
func TestHealthGone(t *testing.T) {
	t.Parallel()
	m := inteltest.Max1550Node()
	d, root := open(t, m, intel.Options{})
	ctx := context.Background()
	_, err := d.Discover(ctx)
	require.NoError(t, err)
	link := filepath.Join(root, "sys/class/drm/card4")
	target, err := os.Readlink(link)
	require.NoError(t, err)
	require.NoError(t, os.Remove(link))
	evs, err := d.PollHealth(ctx, 2*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, []gres.HealthEvent{
		{Index: 6, Reason: "device gone: card4 (0000:4b:00.0) tile 0 no longer in sysfs"},
		{Index: 7, Reason: "device gone: card4 (0000:4b:00.0) tile 1 no longer in sysfs"},
	}, evs)
	require.NoError(t, os.Symlink(target, link))
	evs, err = d.PollHealth(ctx, 2*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, []gres.HealthEvent{{Index: 6, Healthy: true, Reason: "device back in sysfs"}, {Index: 7, Healthy: true, Reason: "device back in sysfs"}}, evs)
}

// TestHealthWaits: a change arriving while PollHealth waits ends the wait
// early; a canceled context ends it with the context's error.
func TestHealthWaits(t *testing.T) {
	t.Parallel()
	m := inteltest.Max1550Node()
	d, root := open(t, m, intel.Options{})
	ctx := context.Background()
	_, err := d.PollHealth(ctx, time.Millisecond)
	require.NoError(t, err)
	done := make(chan []gres.HealthEvent)
	go func() {
		evs, _ := d.PollHealth(ctx, time.Hour)
		done <- evs
	}()
	write(t, root, m.ErrorCounter(0, 0, "fatal_sram"), "1\n")
	assert.Equal(t, []gres.HealthEvent{{Index: 0, Reason: "fatal error counters rose: gt0/fatal_sram 0→1"}}, <-done)
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(5 * time.Millisecond); cancel() }()
	_, err = d.PollHealth(cctx, time.Hour)
	require.ErrorIs(t, err, context.Canceled)
}

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// TestSample checks the readings against the documented units: idle
// residency in ms, energy1_input in µJ, power1_input in µW, lmem in bytes.
func TestSample(t *testing.T) {
	t.Parallel()
	m := inteltest.Max1550Node()
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	root := gresdriver.WriteTree(t, m.Tree())
	ctx := context.Background()
	flat, err := intel.Open(intel.Options{Root: root, Clock: clk.now})
	require.NoError(t, err)
	comp, err := intel.Open(intel.Options{Root: root, Clock: clk.now, Composite: true})
	require.NoError(t, err)
	first, err := flat.Sample(ctx)
	require.NoError(t, err)
	assert.Equal(t, gres.DeviceSample{Index: 3, Utilization: -1, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1}, first[3], "no interval yet; tiles have no per-card readings")
	c0, err := comp.Sample(ctx)
	require.NoError(t, err)
	assert.Equal(t, gres.DeviceSample{Index: 1, Utilization: -1, MemoryUsedMiB: 0, PowerWatts: -1, EnergyJoules: 0}, c0[1])

	clk.t = clk.t.Add(2 * time.Second)
	write(t, root, m.IdleResidency(1, 0), "500\n")  // idle 0.5 s of 2 s: 75% busy
	write(t, root, m.IdleResidency(1, 1), "1500\n") // 25% busy
	write(t, root, m.Hwmon(1)+"/energy1_input", "900000000\n")
	write(t, root, m.CardDir(1)+"/lmem_avail_bytes", "103079215104\n") // 96 GiB free of 128
	s, err := flat.Sample(ctx)
	require.NoError(t, err)
	assert.Equal(t, gres.DeviceSample{Index: 2, Utilization: 75, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1}, s[2])
	assert.Equal(t, gres.DeviceSample{Index: 3, Utilization: 25, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1}, s[3])
	assert.Equal(t, 100.0, s[0].Utilization, "never idle")
	c1, err := comp.Sample(ctx)
	require.NoError(t, err)
	assert.Equal(t, gres.DeviceSample{Index: 1, Utilization: 50, MemoryUsedMiB: 32 << 10, PowerWatts: 450, EnergyJoules: 900}, c1[1])

	write(t, root, m.Hwmon(1)+"/power1_input", "612000000\n")
	write(t, root, m.IdleResidency(1, 0), "100\n") // went backwards: reset
	clk.t = clk.t.Add(time.Second)
	c2, err := comp.Sample(ctx)
	require.NoError(t, err)
	assert.Equal(t, gres.DeviceSample{Index: 1, Utilization: -1, MemoryUsedMiB: 32 << 10, PowerWatts: 612, EnergyJoules: 900}, c2[1])

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = comp.Sample(cctx)
	require.ErrorIs(t, err, context.Canceled)
}

// TestConcurrent runs Discover, Sample and PollHealth at once (run with
// -race): the driver's documented concurrency.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	d, root := open(t, inteltest.Max1550Node(), intel.Options{})
	m := inteltest.Max1550Node()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Go(func() {
		for range 10 {
			if _, err := d.Discover(ctx); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Go(func() {
		for range 10 {
			if _, err := d.Sample(ctx); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Go(func() {
		for range 10 {
			if _, err := d.PollHealth(ctx, time.Millisecond); err != nil {
				errs <- err
				return
			}
		}
	})
	write(t, root, m.ErrorCounter(3, 0, "fatal_sram"), "1\n")
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
