package gresdriver_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/gres/gresdriver"
)

// Sample makes staticDriver a TelemetrySampler: device i is 10*i% busy
// and has used 100*i J.
func (d *staticDriver) Sample(ctx context.Context) ([]gres.DeviceSample, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []gres.DeviceSample
	for _, dv := range d.disc.Inventory.Devices {
		out = append(out, gres.DeviceSample{Index: dv.Index, UUID: dv.UUID, Utilization: float64(10 * dv.Index),
			MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: float64(100 * dv.Index)})
	}
	return out, nil
}

// SampleProcesses makes staticDriver a ProcessSampler: device i ran
// process 1000+i at 10*i% SM utilisation, read at Unix second 100+i;
// odd devices cannot attribute.
func (d *staticDriver) SampleProcesses(ctx context.Context, since time.Time) ([]gres.DeviceProcesses, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []gres.DeviceProcesses
	for _, dv := range d.disc.Inventory.Devices {
		p := gres.DeviceProcesses{Index: dv.Index, UUID: dv.UUID, Known: dv.Index%2 == 0}
		if at := time.Unix(int64(100+dv.Index), 0); p.Known && at.After(since) {
			p.Processes = []gres.ProcessSample{{PID: 1000 + dv.Index, SMUtil: float64(10 * dv.Index), MemUtil: -1, Time: at}}
		}
		out = append(out, p)
	}
	return out, nil
}

func TestRunOnReferenceDriver(t *testing.T) {
	d := newStatic()
	gresdriver.Run(t, gresdriver.Driver{Discoverer: d, Health: d, HealthConfig: gresdriver.HealthConfig{Inject: d.inject}, Telemetry: d, Processes: d})
}

func TestCheckProcessesCatches(t *testing.T) {
	inv := gpuserver.DGXH100()
	since := time.Unix(500, 0)
	good := func() []gres.DeviceProcesses {
		var out []gres.DeviceProcesses
		for _, dv := range inv.Devices {
			out = append(out, gres.DeviceProcesses{Index: dv.Index, UUID: dv.UUID, Known: true,
				Processes: []gres.ProcessSample{{PID: 7, SMUtil: 5, MemUtil: 1, Time: since.Add(time.Second)}}})
		}
		return out
	}
	require.NoError(t, gresdriver.CheckProcesses(inv, since, good()))
	for name, mutate := range map[string]func([]gres.DeviceProcesses) []gres.DeviceProcesses{
		"missing":      func(s []gres.DeviceProcesses) []gres.DeviceProcesses { return s[:7] },
		"extra":        func(s []gres.DeviceProcesses) []gres.DeviceProcesses { return append(s, s[0]) },
		"out of order": func(s []gres.DeviceProcesses) []gres.DeviceProcesses { s[1], s[2] = s[2], s[1]; return s },
		"wrong UUID":   func(s []gres.DeviceProcesses) []gres.DeviceProcesses { s[3].UUID = inv.Devices[4].UUID; return s },
		"read twice":   func(s []gres.DeviceProcesses) []gres.DeviceProcesses { s[2].Processes[0].Time = since; return s },
		"invalid":      func(s []gres.DeviceProcesses) []gres.DeviceProcesses { s[4].Processes[0].SMUtil = 120; return s },
		"not known":    func(s []gres.DeviceProcesses) []gres.DeviceProcesses { s[5].Known = false; return s },
	} {
		assert.Error(t, gresdriver.CheckProcesses(inv, since, mutate(good())), name)
	}
}

func TestCheckSamplesCatches(t *testing.T) {
	inv := gpuserver.DGXH100()
	good := func() []gres.DeviceSample {
		var out []gres.DeviceSample
		for _, dv := range inv.Devices {
			out = append(out, gres.DeviceSample{Index: dv.Index, UUID: dv.UUID, Utilization: -1, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1})
		}
		return out
	}
	require.NoError(t, gresdriver.CheckSamples(inv, good()))
	for name, mutate := range map[string]func([]gres.DeviceSample) []gres.DeviceSample{
		"missing":      func(s []gres.DeviceSample) []gres.DeviceSample { return s[:7] },
		"extra":        func(s []gres.DeviceSample) []gres.DeviceSample { return append(s, s[0]) },
		"out of order": func(s []gres.DeviceSample) []gres.DeviceSample { s[1], s[2] = s[2], s[1]; return s },
		"wrong UUID":   func(s []gres.DeviceSample) []gres.DeviceSample { s[3].UUID = inv.Devices[4].UUID; return s },
		"no UUID":      func(s []gres.DeviceSample) []gres.DeviceSample { s[3].UUID = ""; return s },
		"busy > 100":   func(s []gres.DeviceSample) []gres.DeviceSample { s[0].Utilization = 101; return s },
		"power -2":     func(s []gres.DeviceSample) []gres.DeviceSample { s[5].PowerWatts = -2; return s },
		"memory -5":    func(s []gres.DeviceSample) []gres.DeviceSample { s[5].MemoryUsedMiB = -5; return s },
	} {
		assert.Error(t, gresdriver.CheckSamples(inv, mutate(good())), name)
	}
}

func TestTreeWrite(t *testing.T) {
	var tree gresdriver.Tree
	tree.File("sys/devices/pci0000:00/0000:00:01.0/vendor", "0x8086\n")
	tree.Link("sys/class/x/dev0", "../../devices/pci0000:00/0000:00:01.0")
	root := gresdriver.WriteTree(t, tree)
	b, err := os.ReadFile(filepath.Join(root, "sys/class/x/dev0/vendor"))
	require.NoError(t, err)
	assert.Equal(t, "0x8086\n", string(b))
	for _, bad := range []string{"/abs", "../up", "a/../../b", "a//b", ""} {
		assert.Error(t, gresdriver.Tree{Files: map[string]string{bad: ""}}.Write(t.TempDir()), "%q", bad)
		assert.Error(t, gresdriver.Tree{Links: map[string]string{bad: "x"}}.Write(t.TempDir()), "%q", bad)
	}
	assert.Error(t, gresdriver.Tree{Files: map[string]string{"a": ""}, Links: map[string]string{"a": "b"}}.Write(t.TempDir()))
}
