//go:build cgo

package nvmltest_test

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/sluicehq/sluice/gres/nvml/nvmltest"
)

// A mocked DGX A100 answers the NVLink and topology calls the stock
// go-nvml mock leaves out, with the fixture's stable UUIDs and bus ids.
func ExampleDGXA100() {
	srv := nvmltest.DGXA100()
	var lib nvml.Interface = srv
	lib.Init()
	n, _ := lib.DeviceGetCount()
	gpu0, _ := lib.DeviceGetHandleByIndex(0)
	gpu1, _ := lib.DeviceGetHandleByIndex(1)
	name, _ := gpu0.GetName()
	uuid, _ := gpu0.GetUUID()
	remote, _ := gpu0.GetNvLinkRemoteDeviceType(0)
	level, _ := gpu0.GetTopologyCommonAncestor(gpu1)
	numa, _ := gpu0.GetNumaNodeId()
	fmt.Println(n, name, uuid)
	fmt.Println("link 0 ends at a switch:", remote == nvml.NVLINK_DEVICE_TYPE_SWITCH)
	fmt.Println("GPU 0-1 topology level:", level, "NUMA node:", numa)

	srv.InjectXID(1, 79)
	fmt.Println("queued events:", srv.Pending())
	// Output:
	// 8 Mock NVIDIA A100-SXM4-40GB GPU-a100-0000-4000-8000-000000000000
	// link 0 ends at a switch: true
	// GPU 0-1 topology level: 20 NUMA node: 0
	// queued events: 1
}
