//go:build cgo

package nvml

import (
	"context"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gresdriver"
	"github.com/sluicehq/sluice/gres/nvml/nvmltest"
)

// TestSampleProcesses: one entry per process, by PID, averaged when NVML
// lists a process twice, from the samples after since; a GPU with no
// sample in the window (NOT_FOUND) is known and idle.
func TestSampleProcesses(t *testing.T) {
	srv := nvmltest.DGXH100()
	srv.SetTelemetry(1, nvmltest.Telemetry{Processes: []gonvml.ProcessUtilizationSample{
		{Pid: 300, TimeStamp: 2000, SmUtil: 40, MemUtil: 5},
		{Pid: 100, TimeStamp: 1500, SmUtil: 20},
		{Pid: 300, TimeStamp: 3000, SmUtil: 60, MemUtil: 15},
		{Pid: 0, TimeStamp: 3000, SmUtil: 99}, // an unused entry
		{Pid: 400, TimeStamp: 3500, SmUtil: 250, MemUtil: 101},
	}})
	d := newDriver(t, srv, Options{})
	ctx := context.Background()
	got, err := d.SampleProcesses(ctx, time.Time{}) // before any Discover: discovers
	require.NoError(t, err)
	disc, err := d.Discover(ctx)
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckProcesses(disc.Inventory, time.Time{}, got))
	assert.Equal(t, gres.DeviceProcesses{Index: 1, UUID: disc.Inventory.Devices[1].UUID, Known: true, Processes: []gres.ProcessSample{
		{PID: 100, SMUtil: 20, MemUtil: 0, Time: time.UnixMicro(1500)},
		{PID: 300, SMUtil: 50, MemUtil: 10, Time: time.UnixMicro(3000)},
		{PID: 400, SMUtil: 100, MemUtil: 100, Time: time.UnixMicro(3500)},
	}}, got[1])
	assert.Equal(t, gres.DeviceProcesses{Index: 0, UUID: disc.Inventory.Devices[0].UUID, Known: true}, got[0])

	since := time.UnixMicro(2500)
	got, err = d.SampleProcesses(ctx, since)
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckProcesses(disc.Inventory, since, got))
	assert.Equal(t, []gres.ProcessSample{
		{PID: 300, SMUtil: 60, MemUtil: 15, Time: time.UnixMicro(3000)},
		{PID: 400, SMUtil: 100, MemUtil: 100, Time: time.UnixMicro(3500)},
	}, got[1].Processes)

	got, err = d.SampleProcesses(ctx, time.Unix(-5, 0)) // before the epoch: everything
	require.NoError(t, err)
	assert.Len(t, got[1].Processes, 3)
}

// TestSampleProcessesUnknowns: NOT_SUPPORTED and a lost GPU are not
// Known; any other failure fails the call, naming the GPU; processes
// starting between NVML's size query and its read are retried.
func TestSampleProcessesUnknowns(t *testing.T) {
	srv := nvmltest.DGXH100()
	busy := []gonvml.ProcessUtilizationSample{{Pid: 7, TimeStamp: 10, SmUtil: 30}}
	srv.SetTelemetry(2, nvmltest.Telemetry{Processes: busy, Unsupported: map[string]bool{nvmltest.FuncProcessUtilization: true}})
	srv.SetTelemetry(5, nvmltest.Telemetry{Processes: busy})
	d := newDriver(t, srv, Options{})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	srv.SetLost(5, true)
	tries := 0
	srv.GPUs[3].GetProcessUtilizationFunc = func(uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
		if tries++; tries < processRetries {
			return nil, gonvml.ERROR_INSUFFICIENT_SIZE
		}
		return busy, gonvml.SUCCESS
	}
	got, err := d.SampleProcesses(context.Background(), time.Time{})
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckProcesses(disc.Inventory, time.Time{}, got))
	assert.False(t, got[2].Known, "not supported")
	assert.Empty(t, got[2].Processes)
	assert.False(t, got[5].Known, "lost")
	assert.True(t, got[3].Known)
	assert.Equal(t, []gres.ProcessSample{{PID: 7, SMUtil: 30, MemUtil: 0, Time: time.UnixMicro(10)}}, got[3].Processes)

	srv.GPUs[4].GetProcessUtilizationFunc = func(uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
		return []gonvml.ProcessUtilizationSample{}, gonvml.ERROR_INSUFFICIENT_SIZE // go-nvml: the size query counted none
	}
	tries = 0
	got, err = d.SampleProcesses(context.Background(), time.Time{})
	require.NoError(t, err)
	assert.Equal(t, gres.DeviceProcesses{Index: 4, UUID: disc.Inventory.Devices[4].UUID, Known: true}, got[4])

	tries = -100 // never enough room
	_, err = d.SampleProcesses(context.Background(), time.Time{})
	require.ErrorIs(t, err, gonvml.ERROR_INSUFFICIENT_SIZE)
	assert.ErrorContains(t, err, "gpu 3")
	srv.GPUs[3].GetProcessUtilizationFunc = func(uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
		return nil, gonvml.ERROR_UNKNOWN
	}
	_, err = d.SampleProcesses(context.Background(), time.Time{})
	require.ErrorIs(t, err, gonvml.ERROR_UNKNOWN)
	assert.ErrorContains(t, err, "gpu 3")
	assert.ErrorContains(t, err, "GetProcessUtilization")
}

// TestSampleProcessesMIG: MIG slices are not Known (NVML does not sample
// processes on MIG-enabled GPUs); whole GPUs still are.
func TestSampleProcessesMIG(t *testing.T) {
	srv := nvmltest.DGXA100()
	migs, err := srv.EnableMIG(0, gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.GPU_INSTANCE_PROFILE_2_SLICE)
	require.NoError(t, err)
	srv.SetTelemetry(0, nvmltest.Telemetry{Processes: []gonvml.ProcessUtilizationSample{{Pid: 9, TimeStamp: 1, SmUtil: 50}}})
	srv.SetTelemetry(1, nvmltest.Telemetry{Processes: []gonvml.ProcessUtilizationSample{{Pid: 11, TimeStamp: 1, SmUtil: 50}}})
	d := newDriver(t, srv, Options{})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	got, err := d.SampleProcesses(context.Background(), time.Time{})
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckProcesses(disc.Inventory, time.Time{}, got))
	slices := map[string]bool{migs[0].UUID: true, migs[1].UUID: true}
	seen := 0
	for _, p := range got {
		if slices[p.UUID] {
			seen++
			assert.False(t, p.Known, "MIG slice %s", p.UUID)
			assert.Empty(t, p.Processes)
		}
	}
	assert.Equal(t, 2, seen)
	assert.Equal(t, []gres.ProcessSample{{PID: 11, SMUtil: 50, MemUtil: 0, Time: time.UnixMicro(1)}}, got[0].Processes)
}

func TestSampleProcessesErrors(t *testing.T) {
	var nilDriver *Driver
	_, err := nilDriver.SampleProcesses(context.Background(), time.Time{})
	require.ErrorIs(t, err, ErrNotInitialized)
	srv := nvmltest.DGXH100()
	d := newDriver(t, srv, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = d.SampleProcesses(ctx, time.Time{})
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, d.Shutdown())
	_, err = d.SampleProcesses(context.Background(), time.Time{})
	require.ErrorIs(t, err, ErrNotInitialized)
}

// TestSampleProcessesSizeRace: go-nvml slices its buffer past its
// capacity when NVML's second call asks for more room (a process started
// between the size query and the read); that panic is retried as the
// ERROR_INSUFFICIENT_SIZE it is, and other panics are not swallowed.
func TestSampleProcessesSizeRace(t *testing.T) {
	srv := nvmltest.DGXH100()
	d := newDriver(t, srv, Options{})
	busy := []gonvml.ProcessUtilizationSample{{Pid: 7, TimeStamp: 10, SmUtil: 30}}
	tries := 0
	srv.GPUs[3].GetProcessUtilizationFunc = func(uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
		if tries++; tries == 1 {
			buf, count := make([]gonvml.ProcessUtilizationSample, 1), 2 // NVML: "2 needed"
			return buf[:count], gonvml.ERROR_INSUFFICIENT_SIZE          // go-nvml's utilization[:processSamplesCount]
		}
		return busy, gonvml.SUCCESS
	}
	got, err := d.SampleProcesses(context.Background(), time.Time{})
	require.NoError(t, err)
	assert.Equal(t, 2, tries)
	assert.Equal(t, []gres.ProcessSample{{PID: 7, SMUtil: 30, Time: time.UnixMicro(10)}}, got[3].Processes)

	srv.GPUs[3].GetProcessUtilizationFunc = func(uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
		panic("not a runtime error")
	}
	assert.PanicsWithValue(t, "not a runtime error", func() { _, _ = d.SampleProcesses(context.Background(), time.Time{}) })
}

// TestSampleProcessesDropsStale: an entry NVML returns although it is not
// after lastSeen is not reported (CheckProcesses: nothing read twice).
func TestSampleProcessesDropsStale(t *testing.T) {
	srv := nvmltest.DGXH100()
	d := newDriver(t, srv, Options{})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	srv.GPUs[1].GetProcessUtilizationFunc = func(uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
		return []gonvml.ProcessUtilizationSample{
			{Pid: 5, TimeStamp: 1000, SmUtil: 90},
			{Pid: 5, TimeStamp: 3000, SmUtil: 10},
			{Pid: 6, TimeStamp: 2000, SmUtil: 50},
		}, gonvml.SUCCESS
	}
	since := time.UnixMicro(2000)
	got, err := d.SampleProcesses(context.Background(), since)
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckProcesses(disc.Inventory, since, got))
	assert.Equal(t, []gres.ProcessSample{{PID: 5, SMUtil: 10, Time: time.UnixMicro(3000)}}, got[1].Processes)
}
