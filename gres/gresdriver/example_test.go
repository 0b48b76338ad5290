package gresdriver_test

import (
	"fmt"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/gres/gresdriver"
)

// CheckHealthEvents is the health-event contract as a plain function: a
// driver's batch must name known devices, give reasons and be sorted.
func ExampleCheckHealthEvents() {
	inv := gpuserver.DGXH100()
	good := []gres.HealthEvent{{Index: 3, UUID: inv.Devices[3].UUID, Reason: "XID 79"}}
	bad := []gres.HealthEvent{{Index: 9, Reason: "XID 79"}, {Index: 2, UUID: inv.Devices[2].UUID}}
	fmt.Println(gresdriver.CheckHealthEvents(inv, good))
	fmt.Println(gresdriver.CheckHealthEvents(inv, bad))
	// Output:
	// <nil>
	// event 0: unknown device 9
	// event 1: device 2 unhealthy without a reason
	// event 1: device 2 not after device 9 (want sorted, one event per device)
}

// CheckSamples is the telemetry contract as a plain function: one valid
// sample per device, in index order, naming each device.
func ExampleCheckSamples() {
	inv := gpuserver.DGXH100()
	var samples []gres.DeviceSample
	for _, d := range inv.Devices[:7] {
		samples = append(samples, gres.DeviceSample{Index: d.Index, UUID: d.UUID, Utilization: 50, MemoryUsedMiB: -1, PowerWatts: 300, EnergyJoules: -1})
	}
	fmt.Println(gresdriver.CheckSamples(inv, samples))
	samples[2].Utilization = 140
	fmt.Println(gresdriver.CheckSamples(inv, samples))
	// Output:
	// 7 samples for 8 devices
	// 7 samples for 8 devices
	// sample 2: invalid device request: sample of device 2: utilization 140 outside [0, 100] (or -1 for unknown)
}
