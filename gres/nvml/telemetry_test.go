//go:build cgo

package nvml

import (
	"context"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxb200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gresdriver"
	"github.com/sluicehq/sluice/gres/nvml/nvmltest"
)

// TestSampleReadings checks the unit conversions NVML documents: power in
// milliwatts, energy in millijoules since driver load, memory in bytes,
// utilisation in percent.
func TestSampleReadings(t *testing.T) {
	srv := nvmltest.DGXH100()
	srv.SetTelemetry(3, nvmltest.Telemetry{GPUPercent: 87, MemoryUsedBytes: 40 << 30, PowerMilliwatts: 612_500, EnergyMillijoules: 9_876_543})
	d := newDriver(t, srv, Options{})
	s, err := d.Sample(context.Background()) // before any Discover: discovers
	require.NoError(t, err)
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckSamples(disc.Inventory, s))
	assert.Equal(t, gres.DeviceSample{Index: 3, UUID: disc.Inventory.Devices[3].UUID, Utilization: 87, MemoryUsedMiB: 40 << 10, PowerWatts: 612.5, EnergyJoules: 9876.543}, s[3])
	assert.Equal(t, gres.DeviceSample{Index: 0, UUID: disc.Inventory.Devices[0].UUID}, s[0], "idle GPU: zeros, not unknowns")
}

// TestSampleUnknowns: NOT_SUPPORTED readings and a lost GPU's readings
// are -1; any other NVML failure fails the sample, naming the device.
func TestSampleUnknowns(t *testing.T) {
	srv := nvmltest.DGXH100()
	srv.SetTelemetry(1, nvmltest.Telemetry{GPUPercent: 50, PowerMilliwatts: 100_000,
		Unsupported: map[string]bool{nvmltest.FuncUtilization: true, nvmltest.FuncEnergy: true}})
	d := newDriver(t, srv, Options{})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	srv.SetLost(5, true)
	s, err := d.Sample(context.Background())
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckSamples(disc.Inventory, s))
	assert.Equal(t, gres.DeviceSample{Index: 1, UUID: disc.Inventory.Devices[1].UUID, Utilization: -1, MemoryUsedMiB: 0, PowerWatts: 100, EnergyJoules: -1}, s[1])
	assert.Equal(t, gres.DeviceSample{Index: 5, UUID: disc.Inventory.Devices[5].UUID, Utilization: -1, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1}, s[5])

	srv.GPUs[6].GetPowerUsageFunc = func() (uint32, gonvml.Return) { return 0, gonvml.ERROR_UNKNOWN }
	_, err = d.Sample(context.Background())
	require.ErrorIs(t, err, gonvml.ERROR_UNKNOWN)
	assert.ErrorContains(t, err, "gpu 6")
	assert.ErrorContains(t, err, "GetPowerUsage")
}

// TestSampleMIG: a MIG slice reports its own memory use and -1 for what
// NVML reports only per physical GPU.
func TestSampleMIG(t *testing.T) {
	srv := nvmltest.DGXA100()
	migs, err := srv.EnableMIG(0, gonvml.GPU_INSTANCE_PROFILE_3_SLICE)
	require.NoError(t, err)
	used := uint64(3 << 30)
	migs[0].GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) {
		return gonvml.Memory{Total: 20 << 30, Used: used, Free: 20<<30 - used}, gonvml.SUCCESS
	}
	d := newDriver(t, srv, Options{})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	s, err := d.Sample(context.Background())
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckSamples(disc.Inventory, s))
	last := s[len(s)-1]
	assert.Equal(t, migs[0].UUID, last.UUID)
	assert.Equal(t, gres.DeviceSample{Index: last.Index, UUID: migs[0].UUID, Utilization: -1, MemoryUsedMiB: 3 << 10, PowerWatts: -1, EnergyJoules: -1}, last)
}

func TestSampleNotInitialized(t *testing.T) {
	var d *Driver
	_, err := d.Sample(context.Background())
	require.ErrorIs(t, err, ErrNotInitialized)
}

// TestSampleStockMocks runs the telemetry contract on go-nvml's own DGX
// servers (A100, H100, H200, B200). They implement none of the activity
// queries, so the test fills in what discovery and sampling call, as a
// third party would: GPU i is i*10% busy and draws 100+i W, and keeps no
// utilisation sample buffer (so Sample falls back to the instant rate).
func TestSampleStockMocks(t *testing.T) {
	for name, srv := range map[string]*server.Server{
		"dgxa100": dgxa100.New(), "dgxh100": dgxh100.New(), "dgxh200": dgxh200.New(), "dgxb200": dgxb200.New(),
	} {
		t.Run(name, func(t *testing.T) {
			for i := range srv.Devices {
				dv := fillStockMock(srv, i)
				dv.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
					return gonvml.Utilization{Gpu: uint32(10 * i)}, gonvml.SUCCESS
				}
				dv.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return uint32(100_000 + 1000*i), gonvml.SUCCESS }
				dv.GetTotalEnergyConsumptionFunc = func() (uint64, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
				dv.GetSamplesFunc = func(gonvml.SamplingType, uint64) (gonvml.ValueType, []gonvml.Sample, gonvml.Return) {
					return 0, nil, gonvml.ERROR_NOT_SUPPORTED
				}
			}
			d, err := New(srv, Options{SysfsRoot: t.TempDir(), ProcRoot: t.TempDir()})
			require.NoError(t, err)
			require.NoError(t, d.Init())
			defer d.Shutdown()
			gresdriver.TestTelemetrySampler(t, d, d)
			s, err := d.Sample(context.Background())
			require.NoError(t, err)
			require.Len(t, s, 8)
			for i, x := range s {
				assert.Equal(t, float64(10*i), x.Utilization)
				assert.Equal(t, float64(100+i), x.PowerWatts)
				assert.Equal(t, -1.0, x.EnergyJoules)
				assert.Equal(t, int64(0), x.MemoryUsedMiB)
			}
		})
	}
}

// BenchmarkSample is one telemetry sample of a mock DGX H100 (8 GPUs,
// four NVML queries each).
func BenchmarkSample(b *testing.B) {
	srv := nvmltest.DGXH100()
	d, err := New(srv, Options{SysfsRoot: b.TempDir(), ProcRoot: b.TempDir()})
	require.NoError(b, err)
	require.NoError(b, d.Init())
	defer d.Shutdown()
	ctx := context.Background()
	_, err = d.Discover(ctx)
	require.NoError(b, err)
	for b.Loop() {
		if _, err := d.Sample(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDriver returns an initialised driver over srv, discovered.
func benchDriver(b *testing.B, srv *nvmltest.Server) *Driver {
	d, err := New(srv, Options{SysfsRoot: b.TempDir(), ProcRoot: b.TempDir()})
	require.NoError(b, err)
	require.NoError(b, d.Init())
	b.Cleanup(func() { _ = d.Shutdown() })
	_, err = d.Discover(context.Background())
	require.NoError(b, err)
	return d
}

// BenchmarkSampleInterval is one Sample of a mock DGX H100 whose GPUs
// each have 6 new utilisation samples per call (1 s of NVML's fastest
// sampling): the interval path, per node; divide by 8 per device.
func BenchmarkSampleInterval(b *testing.B) {
	srv := nvmltest.DGXH100()
	d := benchDriver(b, srv)
	ctx := context.Background()
	for i := range srv.GPUs {
		srv.GPUs[i].GetSamplesFunc = func(_ gonvml.SamplingType, seen uint64) (gonvml.ValueType, []gonvml.Sample, gonvml.Return) {
			out := make([]gonvml.Sample, 6)
			for k := range out {
				out[k] = gonvml.Sample{TimeStamp: seen + uint64(k+1), SampleValue: [8]byte{byte(10 * k)}}
			}
			return gonvml.VALUE_TYPE_UNSIGNED_INT, out, gonvml.SUCCESS
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, w, err := d.SampleWindows(ctx); err != nil || w[0].Source != UtilizationInterval {
			b.Fatal(err, w[0])
		}
	}
}

// BenchmarkSampleProcesses is one SampleProcesses of a mock DGX H100
// whose GPUs each run 4 processes: per node; divide by 8 per device.
func BenchmarkSampleProcesses(b *testing.B) {
	srv := nvmltest.DGXH100()
	for i := range srv.GPUs {
		var ps []gonvml.ProcessUtilizationSample
		for k := range 4 {
			ps = append(ps, gonvml.ProcessUtilizationSample{Pid: uint32(1000*i + k + 1), TimeStamp: 10, SmUtil: 20, MemUtil: 5})
		}
		srv.SetTelemetry(i, nvmltest.Telemetry{Processes: ps})
	}
	d := benchDriver(b, srv)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if p, err := d.SampleProcesses(ctx, time.Time{}); err != nil || len(p[0].Processes) != 4 {
			b.Fatal(err)
		}
	}
}
