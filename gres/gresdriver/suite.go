package gresdriver

import (
	"testing"

	"github.com/sluicehq/sluice/gres"
)

// Driver is one node driver under test, whatever its vendor: the seams it
// implements. Run drives the whole suite from it, so every driver (NVML
// over its mocks, sysfs drivers over recorded trees) is held to the same
// contracts by one call.
type Driver struct {
	// Discoverer is required.
	Discoverer gres.Discoverer
	// Health, when set, is run through TestHealthWatcher with HealthConfig.
	Health       gres.HealthWatcher
	HealthConfig HealthConfig
	// Telemetry, when set, is run through TestTelemetrySampler.
	Telemetry gres.TelemetrySampler
	// Processes, when set, is run through TestProcessSampler.
	Processes gres.ProcessSampler
}

// Run runs TestDiscoverer, then TestTelemetrySampler, TestProcessSampler
// and TestHealthWatcher for the seams drv has, as subtests "Discoverer",
// "Telemetry", "Processes" and "Health" (telemetry and processes first,
// so that the health subtests' injected faults do not disturb the
// samples). A seam drv lacks is reported as a skipped subtest, so a
// missing seam is visible in the test output.
func Run(t *testing.T, drv Driver) {
	t.Helper()
	if drv.Discoverer == nil {
		t.Fatal("gresdriver.Run: nil Discoverer")
	}
	t.Run("Discoverer", func(t *testing.T) { TestDiscoverer(t, drv.Discoverer) })
	t.Run("Telemetry", func(t *testing.T) {
		if drv.Telemetry == nil {
			t.Skip("driver has no TelemetrySampler")
		}
		TestTelemetrySampler(t, drv.Discoverer, drv.Telemetry)
	})
	t.Run("Processes", func(t *testing.T) {
		if drv.Processes == nil {
			t.Skip("driver has no ProcessSampler")
		}
		TestProcessSampler(t, drv.Discoverer, drv.Processes)
	})
	t.Run("Health", func(t *testing.T) {
		if drv.Health == nil {
			t.Skip("driver has no HealthWatcher")
		}
		TestHealthWatcher(t, drv.Discoverer, drv.Health, drv.HealthConfig)
	})
}
