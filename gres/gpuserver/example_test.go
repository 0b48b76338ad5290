package gpuserver_test

import (
	"fmt"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
)

// A DGX H100's GPUs are all-to-all over NVSwitch, so with GPU 0 taken a
// 4-GPU job gets the untouched socket's four.
func ExampleDGXH100() {
	node, _ := gres.NewNodeDevices(gpuserver.DGXH100())
	_ = node.Allocate([]int{0})
	p, _ := node.Choose(gres.DeviceRequest{Name: "gpu", Count: 4})
	fmt.Println(p.Devices, node.Free("gpu", "h100"))
	// Output: [4 5 6 7] 7
}

// On a PCIe server with NVLink bridge pairs, a 2-GPU job gets a bridged
// pair; asked for the job's socket first (Slurm's order) it stays next to
// its cores instead.
func ExamplePCIeA100Pairs() {
	inv := gpuserver.PCIeA100Pairs()
	fmt.Println(inv.Link(0, 1).NVLinks, inv.Link(1, 2).NVLinks)
	node, _ := gres.NewNodeDevices(inv)
	_ = node.Allocate([]int{0, 2})
	req := gres.DeviceRequest{Name: "gpu", Count: 2, Cores: gpuserver.SocketCores(0)}
	best, _ := node.Choose(req)
	req.Order = gres.AffinityFirst
	near, _ := node.Choose(req)
	fmt.Println(best.Devices, near.Devices)
	// Output:
	// 12 0
	// [4 5] [1 3]
}
