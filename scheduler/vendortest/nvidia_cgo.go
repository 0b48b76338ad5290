//go:build cgo

package vendortest

import (
	"context"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/nvml"
	"github.com/sluicehq/sluice/gres/nvml/nvmltest"
	"github.com/sluicehq/sluice/scheduler"
)

// NVIDIA discovers a DGX H100 through the gres/nvml driver over its mock
// (nvmltest.DGXH100, sysfs and procfs written under dir) and returns the
// node: 8 × h100 on NVSwitch, 2 × 56 cores, 2 TiB. Fault queues XID 79
// (GPU fallen off the bus) on the GPU and polls the driver until it
// reports it.
func NVIDIA(dir, name string) (Node, error) {
	srv := nvmltest.DGXH100()
	sys, proc := dir+"/sys", dir+"/proc"
	for _, p := range []string{sys, proc} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return Node{}, err
		}
	}
	if err := srv.WriteSysfs(sys); err != nil {
		return Node{}, err
	}
	if err := srv.WriteProcfs(proc); err != nil {
		return Node{}, err
	}
	d, err := nvml.New(srv, nvml.Options{SysfsRoot: sys, ProcRoot: proc})
	if err != nil {
		return Node{}, err
	}
	if err := d.Init(); err != nil {
		return Node{}, err
	}
	ctx := context.Background()
	disc, err := d.Discover(ctx)
	if err != nil {
		return Node{}, err
	}
	fault := func(index int) (gres.HealthEvent, error) {
		if index < 0 || index >= len(srv.GPUs) {
			return gres.HealthEvent{}, fmt.Errorf("vendortest: nvidia: no device %d: %w", index, gres.ErrUnknownDevice)
		}
		srv.InjectXID(index, 79)
		return await(ctx, d, index)
	}
	return Node{Vendor: "nvidia", Type: "h100", Fault: fault,
		Config: scheduler.NodeConfig{Name: name, CPUs: 112, MemoryMiB: 2048 * GiB, Devices: disc.Inventory}}, nil
}
