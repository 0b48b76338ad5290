//go:build cgo

package nvml

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gresdriver"
)

// TestHardware runs the driver on real NVIDIA GPUs and logs what it saw
// (run with -v). It skips cleanly without /dev/nvidia0 or when NVML does
// not initialise (no driver, or no permission).
func TestHardware(t *testing.T) {
	if _, err := os.Stat("/dev/nvidia0"); err != nil {
		t.Skipf("no NVIDIA GPU here (/dev/nvidia0: %v)", err)
	}
	d, err := Open(Options{})
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("NVML unavailable: %v", err)
	}
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Shutdown()) }()

	ctx := context.Background()
	disc, err := d.Discover(ctx)
	require.NoError(t, err)
	t.Logf("%s: %d devices", disc.Driver, len(disc.Inventory.Devices))
	for i, dev := range disc.Inventory.Devices {
		t.Logf("  device %d: %s:%s uuid=%s mem=%dMiB bus=%s numa=%d socket=%d cores=%s files=%v",
			dev.Index, dev.Name, dev.Type, dev.UUID, dev.MemoryMiB, dev.PCIBusID, dev.NUMA, dev.Socket, dev.Cores, disc.Files[i])
	}
	for i := range disc.Inventory.Devices {
		for j := i + 1; j < len(disc.Inventory.Devices); j++ {
			l := disc.Inventory.Link(i, j)
			t.Logf("  link %d-%d: nvlinks=%d nvswitch=%v pcie=%v", disc.Inventory.Devices[i].Index, disc.Inventory.Devices[j].Index, l.NVLinks, l.NVSwitch, l.PCIe)
		}
	}
	t.Logf("  common files: %v", disc.CommonFiles)
	for _, w := range disc.Warnings {
		t.Logf("  warning: %s", w)
	}
	if len(disc.Inventory.Devices) > 0 {
		nd, err := gres.NewNodeDevices(disc.Inventory)
		require.NoError(t, err)
		k := len(disc.Inventory.Devices)
		if k > 2 {
			k = 2
		}
		p, err := nd.Choose(gres.DeviceRequest{Name: "gpu", Count: k})
		require.NoError(t, err)
		t.Logf("  best %d: %v (quality %.2f)", k, p.Devices, p.Quality)
	}

	evs, err := d.PollHealth(ctx, 200*time.Millisecond)
	require.NoError(t, err)
	t.Logf("  health after 200ms: %v", evs)
	require.NoError(t, gresdriver.CheckHealthEvents(disc.Inventory, evs))
	samples, err := d.Sample(ctx)
	require.NoError(t, err)
	t.Logf("  telemetry: %+v", samples)
	since := time.Now()
	time.Sleep(300 * time.Millisecond) // let NVML take a few utilisation samples
	samples, wins, err := d.SampleWindows(ctx)
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckSamples(disc.Inventory, samples))
	for k, w := range wins {
		t.Logf("  utilisation of device %d: %.1f%% (%s, %d samples, %v..%v)", samples[k].Index, samples[k].Utilization, w.Source, w.Samples, w.First, w.Last)
	}
	procs, err := d.SampleProcesses(ctx, time.Time{})
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckProcesses(disc.Inventory, time.Time{}, procs))
	t.Logf("  processes (whole buffer): %+v", procs)
	procs, err = d.SampleProcesses(ctx, since)
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckProcesses(disc.Inventory, since, procs))
	t.Logf("  processes since %v: %+v", since, procs)
	gresdriver.TestDiscoverer(t, d)
	gresdriver.TestTelemetrySampler(t, d, d)
	gresdriver.TestProcessSampler(t, d, d)
}
