//go:build cgo

package nvml

import (
	"fmt"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/sluicehq/sluice/gres/gresdriver"
	"github.com/sluicehq/sluice/gres/nvml/nvmltest"
)

// TestConformance runs the gresdriver suite (discovery, telemetry,
// per-process telemetry, health) against the driver over mocked servers, MIG included.
func TestConformance(t *testing.T) {
	mig := nvmltest.DGXA100()
	if _, err := mig.EnableMIG(7, gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.GPU_INSTANCE_PROFILE_2_SLICE, gonvml.GPU_INSTANCE_PROFILE_1_SLICE); err != nil {
		t.Fatal(err)
	}
	for name, srv := range map[string]*nvmltest.Server{
		"DGXH100": nvmltest.DGXH100(), "DGXA100+MIG": mig, "PCIeA100Pairs": nvmltest.PCIeA100Pairs(), "GB200": nvmltest.GB200(),
	} {
		t.Run(name, func(t *testing.T) {
			srv.SetTelemetry(0, nvmltest.Telemetry{
				UtilizationSamples: []nvmltest.UtilizationSample{{Micros: 100, Percent: 30}, {Micros: 200, Percent: 50}},
				Processes: []gonvml.ProcessUtilizationSample{
					{Pid: 41, TimeStamp: 150, SmUtil: 20, MemUtil: 3}, {Pid: 42, TimeStamp: 250, SmUtil: 10},
				},
			})
			d := newDriver(t, srv, Options{})
			gresdriver.TestDiscoverer(t, d)
			gresdriver.TestTelemetrySampler(t, d, d)
			gresdriver.TestProcessSampler(t, d, d)
			inject := func(index int) error {
				for i, g := range srv.GPUs {
					if uuid, _ := g.GetUUID(); d.indexOf(uuid) == index {
						srv.InjectXID(i, 79)
						return nil
					}
				}
				for i, g := range srv.GPUs {
					for _, m := range srv.MIGDevices(i) {
						if d.indexOf(m.UUID) == index {
							srv.InjectEvent(gonvml.EventData{Device: g, EventType: gonvml.EventTypeXidCriticalError, EventData: 79,
								GpuInstanceId: uint32(m.GI), ComputeInstanceId: uint32(m.CI)})
							return nil
						}
					}
				}
				return fmt.Errorf("no device %d", index)
			}
			gresdriver.TestHealthWatcher(t, d, d, gresdriver.HealthConfig{Inject: inject})
		})
	}
}

// indexOf returns the inventory index of the device with uuid (-1 if none).
func (d *Driver) indexOf(uuid string) int {
	snap := d.snap.Get()
	if snap == nil {
		return -1
	}
	for _, dv := range snap.disc.Inventory.Devices {
		if dv.UUID == uuid {
			return dv.Index
		}
	}
	return -1
}
