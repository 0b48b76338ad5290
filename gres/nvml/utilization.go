//go:build cgo

package nvml

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/sluicehq/sluice/gres"
)

// UtilizationSource says which NVML query gave a sample's Utilization.
type UtilizationSource uint8

const (
	// UtilizationUnknown: no reading (the sample's Utilization is -1: a
	// MIG slice, a lost GPU, or neither query supported).
	UtilizationUnknown UtilizationSource = iota
	// UtilizationInstant: DeviceGetUtilizationRates, the driver's last
	// sample period (1/6 s to 1 s depending on the product) — used when
	// the GPU keeps no sample buffer or took no sample since the previous
	// Sample.
	UtilizationInstant
	// UtilizationInterval: the mean of DeviceGetSamples'
	// GPU_UTILIZATION_SAMPLES taken since the previous Sample.
	UtilizationInterval
)

// String returns "unknown", "instant" or "interval".
func (s UtilizationSource) String() string {
	switch s {
	case UtilizationUnknown:
		return "unknown"
	case UtilizationInstant:
		return "instant"
	case UtilizationInterval:
		return "interval"
	}
	return fmt.Sprintf("UtilizationSource(%d)", uint8(s))
}

// UtilizationWindow says how one sample's Utilization was measured.
type UtilizationWindow struct {
	Source UtilizationSource
	// Samples is the number of NVML samples averaged (UtilizationInterval
	// only; 0 otherwise).
	Samples int
	// First and Last are the timestamps of the oldest and newest samples
	// averaged, on the host's clock (UtilizationInterval only; zero
	// otherwise). The mean covers about Last - First plus one NVML sample
	// period.
	First, Last time.Time
}

// intervalUtilization sets s.Utilization to the mean of g's utilisation
// samples after seen (the newest one the previous Sample averaged) and
// fills w, when NVML has any. It leaves both untouched (for the instant
// query) when the GPU keeps no buffer (NOT_SUPPORTED), is lost, or took no
// sample since (NOT_FOUND, or none readable), and fails on any other NVML
// error.
func intervalUtilization(g *physGPU, seen uint64, s *gres.DeviceSample, w *UtilizationWindow) error {
	typ, samples, ret := g.h.GetSamples(gonvml.GPU_UTILIZATION_SAMPLES, seen)
	if ret == gonvml.ERROR_NOT_FOUND {
		return nil
	}
	if ret != gonvml.SUCCESS {
		return reading(ret, "GetSamples(GPU_UTILIZATION_SAMPLES)")
	}
	var sum float64
	var n int
	var first, last uint64
	for _, smp := range samples {
		v, ok := sampleValue(typ, smp.SampleValue)
		if !ok || smp.TimeStamp <= seen {
			continue // unreadable, or not after lastSeen as asked
		}
		sum += min(v, 100)
		if n == 0 || smp.TimeStamp < first {
			first = smp.TimeStamp
		}
		last = max(last, smp.TimeStamp)
		n++
	}
	if n == 0 {
		return nil
	}
	s.Utilization = sum / float64(n)
	*w = UtilizationWindow{Source: UtilizationInterval, Samples: n, First: micros(first), Last: micros(last)}
	return nil
}

// micros turns an NVML CPU timestamp (microseconds since the epoch) into
// a time.Time.
func micros(us uint64) time.Time {
	return time.UnixMicro(int64(min(us, math.MaxInt64)))
}

// sampleValue decodes an NVML sample value of type typ (nvmlValue_t, a
// C union in host byte order); false for an unknown type, a negative
// value or a NaN.
func sampleValue(typ gonvml.ValueType, v [8]byte) (float64, bool) {
	e := binary.NativeEndian
	var f float64
	switch typ {
	case gonvml.VALUE_TYPE_DOUBLE:
		f = math.Float64frombits(e.Uint64(v[:]))
	case gonvml.VALUE_TYPE_UNSIGNED_INT:
		f = float64(e.Uint32(v[:4]))
	case gonvml.VALUE_TYPE_UNSIGNED_LONG, gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		f = float64(e.Uint64(v[:]))
	case gonvml.VALUE_TYPE_SIGNED_LONG_LONG:
		f = float64(int64(e.Uint64(v[:])))
	case gonvml.VALUE_TYPE_SIGNED_INT:
		f = float64(int32(e.Uint32(v[:4])))
	case gonvml.VALUE_TYPE_UNSIGNED_SHORT:
		f = float64(e.Uint16(v[:2]))
	default:
		return 0, false
	}
	if !(f >= 0) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}
