//go:build !cgo

package vendortest

import (
	"fmt"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/scheduler"
)

// NVIDIA returns a DGX H100 node (8 × h100 on NVSwitch, 2 × 56 cores,
// 2 TiB) with the inventory the gres/nvml driver discovers on one
// (gpuserver.DGXH100; the driver needs cgo, which this build lacks). dir
// is unused. Fault returns the event the driver reports for XID 79.
func NVIDIA(dir, name string) (Node, error) {
	_ = dir
	fault := func(index int) (gres.HealthEvent, error) {
		inv := gpuserver.DGXH100()
		if index < 0 || index >= len(inv.Devices) {
			return gres.HealthEvent{}, fmt.Errorf("vendortest: nvidia: no device %d: %w", index, gres.ErrUnknownDevice)
		}
		return gres.HealthEvent{Index: index, UUID: inv.Devices[index].UUID, Reason: "XID 79"}, nil
	}
	return Node{Vendor: "nvidia", Type: "h100", Fault: fault,
		Config: scheduler.NodeConfig{Name: name, CPUs: 112, MemoryMiB: 2048 * 1024, Devices: gpuserver.DGXH100()}}, nil
}
