//go:build cgo

package nvmltest

import (
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
)

// SetTelemetry makes GPU i (inventory position) report tel from now on.
// A lost GPU (SetLost) answers ERROR_GPU_IS_LOST whatever tel says.
func (s *Server) SetTelemetry(i int, tel Telemetry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := tel
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
}
