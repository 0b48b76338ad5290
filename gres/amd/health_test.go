package amd_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/amd"
	"github.com/sluicehq/sluice/gres/amd/amdtest"
	"github.com/sluicehq/sluice/gres/gresdriver"
)

// gpuOf returns the fixture GPU behind inventory device index.
func gpuOf(t testing.TB, d *amd.Driver, m amdtest.Machine, index int) amdtest.GPU {
	t.Helper()
	for _, in := range d.Devices() {
		if in.Index != index {
			continue
		}
		for _, g := range m.GPUs {
			if g.Bus == in.PCIBusID {
				return g
			}
		}
	}
	t.Fatalf("no GPU for device %d", index)
	return amdtest.GPU{}
}

// TestConformance runs the whole gresdriver suite (Discoverer, Telemetry,
// Health) on every fixture machine, injecting faults by raising a GPU's
// uncorrectable UMC error count.
func TestConformance(t *testing.T) {
	for name, m := range map[string]amdtest.Machine{
		"MI300XHive": amdtest.MI300XHive(), "MI250X": amdtest.MI250XNode(), "MI300XCPX": amdtest.MI300XCPX(),
	} {
		t.Run(name, func(t *testing.T) {
			d, root := fixture(t, m)
			ue := uint64(0)
			inject := func(index int) error {
				ue++
				return gpuOf(t, d, m, index).WriteRAS(root, "umc", ue, 0)
			}
			gresdriver.Run(t, gresdriver.Driver{Discoverer: d, Telemetry: d, Health: d,
				HealthConfig: gresdriver.HealthConfig{Inject: inject}})
		})
	}
}

func poll(t *testing.T, d *amd.Driver) []gres.HealthEvent {
	t.Helper()
	evs, err := d.PollHealth(context.Background(), 5*time.Millisecond)
	require.NoError(t, err)
	disc, err := d.Discover(context.Background()) // same node: same inventory, watch state kept by bus
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckHealthEvents(disc.Inventory, evs))
	return evs
}

func TestHealthRAS(t *testing.T) {
	m := amdtest.MI300XHive()
	d, root := fixture(t, m)
	disc := discover(t, d)
	g := m.GPUs[2]
	// Errors counted before the watch starts are history, not a change.
	require.NoError(t, g.WriteRAS(root, "gfx", 5, 9))
	assert.Empty(t, poll(t, d))
	require.NoError(t, g.WriteRAS(root, "umc", 2, 0))
	assert.Equal(t, []gres.HealthEvent{{Index: 2, UUID: disc.Inventory.Devices[2].UUID, Reason: "RAS uncorrectable errors: umc 2"}}, poll(t, d))
	require.NoError(t, g.WriteRAS(root, "umc", 3, 0))
	require.NoError(t, g.WriteRAS(root, "sdma", 1, 0))
	assert.Empty(t, poll(t, d), "an unhealthy device is reported once")
	assert.Empty(t, poll(t, d))
	// Correctable errors do not matter.
	require.NoError(t, m.GPUs[5].WriteRAS(root, "umc", 0, 100))
	assert.Empty(t, poll(t, d))
	// A reset clears the counters: healthy again, once.
	for _, b := range []string{"umc", "gfx", "sdma"} {
		require.NoError(t, g.WriteRAS(root, b, 0, 0))
	}
	assert.Equal(t, []gres.HealthEvent{{Index: 2, UUID: disc.Inventory.Devices[2].UUID, Healthy: true, Reason: "recovered"}}, poll(t, d))
	assert.Empty(t, poll(t, d))
	require.NoError(t, g.WriteRAS(root, "gfx", 1, 0))
	evs := poll(t, d)
	require.Len(t, evs, 1)
	assert.Equal(t, "RAS uncorrectable errors: gfx 1", evs[0].Reason)

	// Garbage in a counter file is skipped, not an error.
	require.NoError(t, os.WriteFile(filepath.Join(root, m.GPUs[6].RASFile("umc")), []byte("ue: many\n"), 0o644))
	assert.Empty(t, poll(t, d))
}

func TestHealthDeviceLost(t *testing.T) {
	m := amdtest.MI300XHive()
	d, root := fixture(t, m)
	discover(t, d)
	assert.Empty(t, poll(t, d))
	link := filepath.Join(root, "sys/bus/pci/devices", m.GPUs[7].Bus)
	target, err := os.Readlink(link)
	require.NoError(t, err)
	require.NoError(t, os.Remove(link))
	evs, err := d.PollHealth(context.Background(), time.Millisecond)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, gres.HealthEvent{Index: 7, UUID: evs[0].UUID, Reason: "device lost"}, evs[0])
	evs, err = d.PollHealth(context.Background(), time.Millisecond)
	require.NoError(t, err)
	assert.Empty(t, evs)
	require.NoError(t, os.Symlink(target, link))
	evs, err = d.PollHealth(context.Background(), time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, []gres.HealthEvent{{Index: 7, UUID: evs[0].UUID, Healthy: true, Reason: "recovered"}}, evs)

	// A render node gone (a partition removed) is lost too.
	require.NoError(t, os.Remove(filepath.Join(root, "sys/class/drm/renderD128")))
	evs, err = d.PollHealth(context.Background(), time.Millisecond)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, 0, evs[0].Index)
	assert.Equal(t, "device lost", evs[0].Reason)
}

func TestHealthPartitions(t *testing.T) {
	m := amdtest.MI300XCPX()
	d, root := fixture(t, m)
	discover(t, d)
	assert.Empty(t, poll(t, d))
	require.NoError(t, m.GPUs[0].WriteRAS(root, "xgmi_wafl", 1, 0))
	evs := poll(t, d)
	require.Len(t, evs, 8, "every partition of the GPU")
	for i, ev := range evs {
		assert.Equal(t, gres.HealthEvent{Index: i, Reason: "RAS uncorrectable errors: xgmi_wafl 1"}, ev)
	}
}

func TestHealthContext(t *testing.T) {
	m := amdtest.MI250XNode()
	d, root := fixture(t, m)
	// PollHealth discovers on its own when nothing was discovered yet.
	evs, err := d.PollHealth(context.Background(), time.Millisecond)
	require.NoError(t, err)
	assert.Empty(t, evs)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err = d.PollHealth(ctx, time.Hour)
	require.ErrorIs(t, err, context.Canceled)

	// A change seen while canceled is reported by the next call.
	require.NoError(t, m.GPUs[1].WriteRAS(root, "umc", 1, 0))
	_, err = d.PollHealth(ctx, time.Hour)
	require.ErrorIs(t, err, context.Canceled)
	evs, err = d.PollHealth(context.Background(), time.Millisecond)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, 1, evs[0].Index)

	// A change during the wait ends it early.
	done := make(chan []gres.HealthEvent)
	go func() {
		evs, _ := d.PollHealth(context.Background(), time.Hour)
		done <- evs
	}()
	require.NoError(t, m.GPUs[4].WriteRAS(root, "umc", 1, 0))
	evs = <-done
	require.Len(t, evs, 1)
	assert.Equal(t, 4, evs[0].Index)
}

func TestSample(t *testing.T) {
	m := amdtest.MI300XHive()
	d, root := fixture(t, m)
	samples, err := d.Sample(context.Background())
	require.NoError(t, err)
	disc := discover(t, d)
	require.Len(t, samples, 8)
	for i, s := range samples {
		assert.Equal(t, gres.DeviceSample{Index: i, UUID: disc.Inventory.Devices[i].UUID, Utilization: float64(10 * i),
			MemoryUsedMiB: int64(i) << 10, PowerWatts: 150 + float64(i), EnergyJoules: -1}, s)
	}
	// Energy where hwmon has it; power1_input when there is no average;
	// out-of-range busy percentages are unknown.
	hw := filepath.Join(m.GPUs[1].PCIDir(), "hwmon/hwmon3")
	writeFile(t, root, filepath.Join(hw, "energy1_input"), "123456789\n")
	require.NoError(t, os.Remove(filepath.Join(root, hw, "power1_average")))
	writeFile(t, root, filepath.Join(hw, "power1_input"), "201500000\n")
	writeFile(t, root, filepath.Join(m.GPUs[1].PCIDir(), "gpu_busy_percent"), "140\n")
	require.NoError(t, os.Remove(filepath.Join(root, m.GPUs[2].PCIDir(), "mem_info_vram_used")))
	samples, err = d.Sample(context.Background())
	require.NoError(t, err)
	assert.Equal(t, gres.DeviceSample{Index: 1, UUID: disc.Inventory.Devices[1].UUID, Utilization: -1, MemoryUsedMiB: 1 << 10,
		PowerWatts: 201.5, EnergyJoules: 123.456789}, samples[1])
	assert.Equal(t, int64(-1), samples[2].MemoryUsedMiB)
}

func TestSamplePartitions(t *testing.T) {
	d, _ := fixture(t, amdtest.MI300XCPX())
	samples, err := d.Sample(context.Background())
	require.NoError(t, err)
	require.Len(t, samples, 9)
	for i, s := range samples[:8] {
		assert.Equal(t, gres.DeviceSample{Index: i, Utilization: -1, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1}, s)
	}
	assert.Equal(t, 10.0, samples[8].Utilization)
}

func TestParseRASCount(t *testing.T) {
	n, err := amd.ParseRASCount("ue: 12\nce: 3\n")
	require.NoError(t, err)
	assert.Equal(t, uint64(12), n)
	for _, s := range []string{"", "ce: 3\n", "ue: -1\n", "ue: x", "ue: 99999999999999999999999"} {
		_, err := amd.ParseRASCount(s)
		assert.ErrorIs(t, err, amd.ErrMalformed, "%q", s)
	}
}

// TestConcurrentUse runs Discover, PollHealth and Sample at once (run
// with -race): the driver's documented concurrency.
func TestConcurrentUse(t *testing.T) {
	m := amdtest.MI300XCPX()
	d, root := fixture(t, m)
	ctx := context.Background()
	done := make(chan error, 3)
	go func() {
		for range 20 {
			if _, err := d.Discover(ctx); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	go func() {
		for range 20 {
			if _, err := d.PollHealth(ctx, time.Millisecond); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	go func() {
		for range 20 {
			if _, err := d.Sample(ctx); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	require.NoError(t, m.GPUs[1].WriteRAS(root, "umc", 1, 0))
	for range 3 {
		require.NoError(t, <-done)
	}
}
