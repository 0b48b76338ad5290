//go:build cgo

package nvml

import (
	"context"
	"encoding/binary"
	"math"
	"sync"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres/gresdriver"
	"github.com/sluicehq/sluice/gres/nvml/nvmltest"
)

func utilSamples(startMicros uint64, percents ...uint32) []nvmltest.UtilizationSample {
	out := make([]nvmltest.UtilizationSample, len(percents))
	for k, p := range percents {
		out[k] = nvmltest.UtilizationSample{Micros: startMicros + uint64(k)*1000, Percent: p}
	}
	return out
}

// TestSampleIntervalUtilization: Utilization is the mean of the samples
// NVML buffered since the previous Sample (all of them the first time);
// with none new it is the instant rate; samples over 100% count as 100.
func TestSampleIntervalUtilization(t *testing.T) {
	srv := nvmltest.DGXH100()
	tel := nvmltest.Telemetry{GPUPercent: 77, UtilizationSamples: utilSamples(1000, 10, 20, 30, 40, 50)}
	srv.SetTelemetry(2, tel)
	d := newDriver(t, srv, Options{})
	ctx := context.Background()

	s, w, err := d.SampleWindows(ctx)
	require.NoError(t, err)
	require.Len(t, w, len(s))
	assert.Equal(t, 30.0, s[2].Utilization, "mean of the whole buffer on the first Sample")
	assert.Equal(t, UtilizationWindow{Source: UtilizationInterval, Samples: 5, First: time.UnixMicro(1000), Last: time.UnixMicro(5000)}, w[2])
	assert.Equal(t, UtilizationInstant, w[0].Source, "a GPU with an empty buffer (NOT_FOUND) falls back")
	assert.Equal(t, 0.0, s[0].Utilization)

	s, w, err = d.SampleWindows(ctx)
	require.NoError(t, err)
	assert.Equal(t, 77.0, s[2].Utilization, "nothing new since the last Sample: the instant rate")
	assert.Equal(t, UtilizationWindow{Source: UtilizationInstant}, w[2])

	tel.UtilizationSamples = append(tel.UtilizationSamples, utilSamples(6000, 90, 250)...)
	srv.SetTelemetry(2, tel)
	s, w, err = d.SampleWindows(ctx)
	require.NoError(t, err)
	assert.Equal(t, 95.0, s[2].Utilization, "only the two new samples, 250%% clamped to 100")
	assert.Equal(t, UtilizationWindow{Source: UtilizationInterval, Samples: 2, First: time.UnixMicro(6000), Last: time.UnixMicro(7000)}, w[2])

	plain, err := d.Sample(ctx) // Sample shares the interval state
	require.NoError(t, err)
	assert.Equal(t, 77.0, plain[2].Utilization)

	// A restarted driver starts from the whole buffer again.
	require.NoError(t, d.Shutdown())
	require.NoError(t, d.Init())
	s, err = d.Sample(ctx)
	require.NoError(t, err)
	assert.InDelta(t, (10+20+30+40+50+90+100)/7.0, s[2].Utilization, 1e-9)
}

// TestSampleIntervalFallbacks: a GPU without a sample buffer
// (NOT_SUPPORTED) uses the instant rate; a lost GPU has no reading; any
// other GetSamples failure fails the sample, naming the GPU and query.
func TestSampleIntervalFallbacks(t *testing.T) {
	srv := nvmltest.DGXH100()
	srv.SetTelemetry(1, nvmltest.Telemetry{GPUPercent: 42, UtilizationSamples: utilSamples(10, 99),
		Unsupported: map[string]bool{nvmltest.FuncSamples: true}})
	srv.SetTelemetry(3, nvmltest.Telemetry{GPUPercent: 42, UtilizationSamples: utilSamples(10, 99),
		Unsupported: map[string]bool{nvmltest.FuncSamples: true, nvmltest.FuncUtilization: true}})
	srv.SetTelemetry(5, nvmltest.Telemetry{UtilizationSamples: utilSamples(10, 99)})
	d := newDriver(t, srv, Options{})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	srv.SetLost(5, true)
	s, w, err := d.SampleWindows(context.Background())
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckSamples(disc.Inventory, s))
	assert.Equal(t, 42.0, s[1].Utilization)
	assert.Equal(t, UtilizationInstant, w[1].Source)
	assert.Equal(t, -1.0, s[3].Utilization, "neither query supported")
	assert.Equal(t, UtilizationUnknown, w[3].Source)
	assert.Equal(t, -1.0, s[5].Utilization, "lost")
	assert.Equal(t, UtilizationUnknown, w[5].Source)

	srv.SetLost(5, false)
	srv.SetTelemetry(0, nvmltest.Telemetry{UtilizationSamples: utilSamples(10, 20, 40)})
	saved := srv.GPUs[6].GetSamplesFunc
	srv.GPUs[6].GetSamplesFunc = func(gonvml.SamplingType, uint64) (gonvml.ValueType, []gonvml.Sample, gonvml.Return) {
		return 0, nil, gonvml.ERROR_UNKNOWN
	}
	_, _, err = d.SampleWindows(context.Background())
	require.ErrorIs(t, err, gonvml.ERROR_UNKNOWN)
	assert.ErrorContains(t, err, "gpu 6")
	assert.ErrorContains(t, err, "GetSamples(GPU_UTILIZATION_SAMPLES)")

	// The failed call moved no interval on: GPU 0's samples, read by it,
	// are averaged by the next call, and so are GPU 5's, unread while lost.
	srv.GPUs[6].GetSamplesFunc = saved
	s, w, err = d.SampleWindows(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 30.0, s[0].Utilization)
	assert.Equal(t, 2, w[0].Samples)
	assert.Equal(t, 99.0, s[5].Utilization)
	assert.Equal(t, UtilizationInterval, w[5].Source)
}

// TestSampleIntervalIgnoresStale: samples NVML returns at or before the
// lastSeen asked for, or with a value type it does not document, are not
// averaged.
func TestSampleIntervalIgnoresStale(t *testing.T) {
	srv := nvmltest.DGXH100()
	d := newDriver(t, srv, Options{})
	var calls []uint64
	srv.GPUs[0].GetSamplesFunc = func(typ gonvml.SamplingType, seen uint64) (gonvml.ValueType, []gonvml.Sample, gonvml.Return) {
		require.Equal(t, gonvml.GPU_UTILIZATION_SAMPLES, typ)
		calls = append(calls, seen)
		var v, neg [8]byte
		binary.NativeEndian.PutUint64(v[:], math.Float64bits(60))
		binary.NativeEndian.PutUint64(neg[:], math.Float64bits(-5))
		return gonvml.VALUE_TYPE_DOUBLE, []gonvml.Sample{{TimeStamp: 500, SampleValue: v}, {TimeStamp: 900, SampleValue: neg}}, gonvml.SUCCESS
	}
	s, w, err := d.SampleWindows(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 60.0, s[0].Utilization)
	assert.Equal(t, UtilizationWindow{Source: UtilizationInterval, Samples: 1, First: time.UnixMicro(500), Last: time.UnixMicro(500)}, w[0])
	s, w, err = d.SampleWindows(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []uint64{0, 500}, calls, "the second call asks after the newest sample averaged")
	assert.Equal(t, UtilizationInstant, w[0].Source, "the sample at 500 is not after lastSeen 500")
	assert.Equal(t, 0.0, s[0].Utilization)
}

// TestSampleIntervalMIG: MIG slices have no utilisation and say so; the
// other GPUs still average their buffers.
func TestSampleIntervalMIG(t *testing.T) {
	srv := nvmltest.DGXA100()
	_, err := srv.EnableMIG(0, gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.GPU_INSTANCE_PROFILE_1_SLICE)
	require.NoError(t, err)
	srv.SetTelemetry(0, nvmltest.Telemetry{GPUPercent: 12, UtilizationSamples: utilSamples(100, 70)})
	srv.SetTelemetry(1, nvmltest.Telemetry{UtilizationSamples: utilSamples(100, 70, 80)})
	d := newDriver(t, srv, Options{})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	s, w, err := d.SampleWindows(context.Background())
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckSamples(disc.Inventory, s))
	n := len(s)
	for _, k := range []int{n - 2, n - 1} {
		assert.Equal(t, -1.0, s[k].Utilization, "MIG slice %d", k)
		assert.Equal(t, UtilizationWindow{}, w[k])
	}
	assert.Equal(t, 75.0, s[0].Utilization, "GPU 1 is the first whole GPU")
	assert.Equal(t, UtilizationInterval, w[0].Source)
}

func TestSampleWindowsErrors(t *testing.T) {
	var nilDriver *Driver
	_, _, err := nilDriver.SampleWindows(context.Background())
	require.ErrorIs(t, err, ErrNotInitialized)
	d := newDriver(t, nvmltest.DGXH100(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = d.SampleWindows(ctx)
	require.ErrorIs(t, err, context.Canceled)
}

func TestSampleValue(t *testing.T) {
	enc := func(f func(b []byte)) [8]byte {
		var v [8]byte
		f(v[:])
		return v
	}
	e := binary.NativeEndian
	for name, tc := range map[string]struct {
		typ  gonvml.ValueType
		v    [8]byte
		want float64
		ok   bool
	}{
		"uint":         {gonvml.VALUE_TYPE_UNSIGNED_INT, enc(func(b []byte) { e.PutUint32(b, 42) }), 42, true},
		"ulong":        {gonvml.VALUE_TYPE_UNSIGNED_LONG, enc(func(b []byte) { e.PutUint64(b, 1<<40) }), 1 << 40, true},
		"ulonglong":    {gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG, enc(func(b []byte) { e.PutUint64(b, 7) }), 7, true},
		"slonglong":    {gonvml.VALUE_TYPE_SIGNED_LONG_LONG, enc(func(b []byte) { e.PutUint64(b, 9) }), 9, true},
		"sint":         {gonvml.VALUE_TYPE_SIGNED_INT, enc(func(b []byte) { e.PutUint32(b, 3) }), 3, true},
		"ushort":       {gonvml.VALUE_TYPE_UNSIGNED_SHORT, enc(func(b []byte) { e.PutUint16(b, 65535) }), 65535, true},
		"double":       {gonvml.VALUE_TYPE_DOUBLE, enc(func(b []byte) { e.PutUint64(b, math.Float64bits(12.5)) }), 12.5, true},
		"negative int": {gonvml.VALUE_TYPE_SIGNED_INT, enc(func(b []byte) { e.PutUint32(b, uint32(0xFFFFFFFF)) }), 0, false},
		"negative ll":  {gonvml.VALUE_TYPE_SIGNED_LONG_LONG, enc(func(b []byte) { e.PutUint64(b, 1<<63) }), 0, false},
		"nan":          {gonvml.VALUE_TYPE_DOUBLE, enc(func(b []byte) { e.PutUint64(b, math.Float64bits(math.NaN())) }), 0, false},
		"inf":          {gonvml.VALUE_TYPE_DOUBLE, enc(func(b []byte) { e.PutUint64(b, math.Float64bits(math.Inf(1))) }), 0, false},
		"unknown":      {gonvml.VALUE_TYPE_COUNT, [8]byte{1}, 0, false},
	} {
		got, ok := sampleValue(tc.typ, tc.v)
		assert.Equal(t, tc.ok, ok, name)
		assert.Equal(t, tc.want, got, name)
	}
}

func TestUtilizationSourceString(t *testing.T) {
	assert.Equal(t, "unknown", UtilizationUnknown.String())
	assert.Equal(t, "instant", UtilizationInstant.String())
	assert.Equal(t, "interval", UtilizationInterval.String())
	assert.Equal(t, "UtilizationSource(9)", UtilizationSource(9).String())
}

// TestSampleConcurrent: concurrent SampleWindows and SampleProcesses
// calls, while the GPU buffers new samples and the
// driver rediscovers, share the per-GPU interval state without a race
// (run with -race) and average each buffered sample exactly once between
// them.
func TestSampleConcurrent(t *testing.T) {
	srv := nvmltest.DGXH100()
	d := newDriver(t, srv, Options{})
	ctx := context.Background()
	var wg sync.WaitGroup
	done := make(chan struct{})
	counted := make([]int, 4)
	for g := range counted {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				_, w, err := d.SampleWindows(ctx)
				if !assert.NoError(t, err) {
					return
				}
				counted[g] += w[4].Samples
				if g == 0 {
					_, err = d.SampleProcesses(ctx, time.Time{})
					assert.NoError(t, err)
				}
			}
		}()
	}
	var buf []nvmltest.UtilizationSample
	for k := range 100 {
		buf = append(buf, utilSamples(uint64(1000+k*10000), 1, 2, 3)...)
		srv.SetTelemetry(4, nvmltest.Telemetry{UtilizationSamples: buf})
		if k%10 == 0 {
			_, err := d.Discover(ctx)
			require.NoError(t, err)
		}
		time.Sleep(100 * time.Microsecond)
	}
	close(done)
	wg.Wait()
	_, w, err := d.SampleWindows(ctx) // what no worker read
	require.NoError(t, err)
	total := w[4].Samples
	for _, c := range counted {
		total += c
	}
	assert.Equal(t, len(buf), total, "each sample averaged by exactly one call")
}
