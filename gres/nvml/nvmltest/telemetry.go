//go:build cgo

package nvmltest

import (
	"encoding/binary"
	"slices"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Telemetry is what one mock GPU reports to NVML's activity queries
// (go-nvml's mock server implements none of them). The zero value reports
// an idle GPU: 0% busy, no memory used, 0 W, no energy.
type Telemetry struct {
	GPUPercent        uint32 // DeviceGetUtilizationRates().Gpu
	MemoryPercent     uint32 // DeviceGetUtilizationRates().Memory
	MemoryUsedBytes   uint64 // DeviceGetMemoryInfo().Used (Free = Total - Used)
	PowerMilliwatts   uint32 // DeviceGetPowerUsage
	EnergyMillijoules uint64 // DeviceGetTotalEnergyConsumption
	// UtilizationSamples is the driver's buffer of GPU utilisation
	// samples: DeviceGetSamples(GPU_UTILIZATION_SAMPLES, lastSeen)
	// answers those with a TimeStamp after lastSeen, as
	// VALUE_TYPE_UNSIGNED_INT, or ERROR_NOT_FOUND when there are none
	// (as NVML does; so the zero value answers ERROR_NOT_FOUND).
	UtilizationSamples []UtilizationSample
	// Processes is the driver's per-process utilisation:
	// DeviceGetProcessUtilization(lastSeen) answers the entries with a
	// TimeStamp after lastSeen, or ERROR_NOT_FOUND when there are none.
	Processes []nvml.ProcessUtilizationSample
	// Unsupported lists the queries that answer ERROR_NOT_SUPPORTED, by
	// NVML function name ("nvmlDeviceGetPowerUsage", …).
	Unsupported map[string]bool
}

// Telemetry query names for Telemetry.Unsupported.
const (
	FuncUtilization = "nvmlDeviceGetUtilizationRates"
	FuncMemoryInfo  = "nvmlDeviceGetMemoryInfo"
	FuncPower       = "nvmlDeviceGetPowerUsage"
	FuncEnergy      = "nvmlDeviceGetTotalEnergyConsumption"
	// FuncSamples is DeviceGetSamples (every sampling type).
	FuncSamples = "nvmlDeviceGetSamples"
	// FuncProcessUtilization is DeviceGetProcessUtilization.
	FuncProcessUtilization = "nvmlDeviceGetProcessUtilization"
)

// UtilizationSample is one entry of a mock GPU's utilisation sample
// buffer.
type UtilizationSample struct {
	Micros  uint64 // CPU timestamp in microseconds (NVML's TimeStamp)
	Percent uint32 // percent of the sample period a kernel ran
}

// toNVML returns the NVML sample of u: its value encoded as
// an unsigned int, the type NVML documents for utilisation samples.
func (u UtilizationSample) toNVML() nvml.Sample {
	var v [8]byte
	binary.NativeEndian.PutUint32(v[:4], u.Percent)
	return nvml.Sample{TimeStamp: u.Micros, SampleValue: v}
}

// SetTelemetry makes GPU i (inventory position) report tel from now on.
// A lost GPU (SetLost) answers ERROR_GPU_IS_LOST whatever tel says; a GPU
// in MIG mode (EnableMIG), like its MIG devices, answers
// ERROR_NOT_SUPPORTED to DeviceGetSamples and
// DeviceGetProcessUtilization, as NVML documents.
func (s *Server) SetTelemetry(i int, tel Telemetry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := tel
	c.UtilizationSamples = slices.Clone(tel.UtilizationSamples)
	c.Processes = slices.Clone(tel.Processes)
	c.Unsupported = make(map[string]bool, len(tel.Unsupported))
	for k, v := range tel.Unsupported {
		c.Unsupported[k] = v
	}
	s.tel[i] = &c
}

// telemetry returns GPU i's readings for fn, or the NVML error it answers.
func (s *Server) telemetry(i int, fn string) (Telemetry, nvml.Return) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t Telemetry
	if p := s.tel[i]; p != nil {
		t = *p
	}
	switch {
	case s.lost[i]:
		return t, nvml.ERROR_GPU_IS_LOST
	case len(s.migs[i]) > 0 && (fn == FuncSamples || fn == FuncProcessUtilization):
		return t, nvml.ERROR_NOT_SUPPORTED // not on a MIG-enabled GPU (NVML's note)
	case t.Unsupported[fn]:
		return t, nvml.ERROR_NOT_SUPPORTED
	}
	return t, nvml.SUCCESS
}

// setTelemetryFuncs fills in the activity queries of GPU i's mock.
func (s *Server) setTelemetryFuncs(i int) {
	d := s.GPUs[i]
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		t, ret := s.telemetry(i, FuncUtilization)
		return nvml.Utilization{Gpu: t.GPUPercent, Memory: t.MemoryPercent}, ret
	}
	total := d.GetMemoryInfoFunc
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		m, ret := total()
		if ret != nvml.SUCCESS {
			return m, ret
		}
		t, ret := s.telemetry(i, FuncMemoryInfo)
		m.Used = min(t.MemoryUsedBytes, m.Total)
		m.Free = m.Total - m.Used
		return m, ret
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) {
		t, ret := s.telemetry(i, FuncPower)
		return t.PowerMilliwatts, ret
	}
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) {
		t, ret := s.telemetry(i, FuncEnergy)
		return t.EnergyMillijoules, ret
	}
	d.GetSamplesFunc = func(typ nvml.SamplingType, lastSeen uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) {
		t, ret := s.telemetry(i, FuncSamples)
		if ret != nvml.SUCCESS {
			return 0, nil, ret
		}
		if typ != nvml.GPU_UTILIZATION_SAMPLES {
			return 0, nil, nvml.ERROR_NOT_SUPPORTED // the mock buffers only GPU utilisation
		}
		var out []nvml.Sample
		for _, u := range t.UtilizationSamples {
			if u.Micros > lastSeen {
				out = append(out, u.toNVML())
			}
		}
		if len(out) == 0 {
			return nvml.VALUE_TYPE_UNSIGNED_INT, nil, nvml.ERROR_NOT_FOUND
		}
		return nvml.VALUE_TYPE_UNSIGNED_INT, out, nvml.SUCCESS
	}
	d.GetProcessUtilizationFunc = func(lastSeen uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
		t, ret := s.telemetry(i, FuncProcessUtilization)
		if ret != nvml.SUCCESS {
			return nil, ret
		}
		var out []nvml.ProcessUtilizationSample
		for _, p := range t.Processes {
			if p.TimeStamp > lastSeen {
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return out, nvml.SUCCESS
	}
}
