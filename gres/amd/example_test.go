package amd_test

import (
	"context"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/amd"
	"github.com/sluicehq/sluice/gres/amd/amdtest"
)

// Discover a 4× MI250X node (from a sysfs tree written by amdtest; on a
// real node leave Root empty) and choose GPUs for a 2-GPU job: the two
// GCDs of one MI250X, which share four xGMI links.
func ExampleDriver_Discover() {
	root, err := os.MkdirTemp("", "amd-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)
	if err := amdtest.MI250XNode().Write(root); err != nil {
		fmt.Println(err)
		return
	}
	d, err := amd.Open(amd.Options{Root: root})
	if err != nil {
		fmt.Println(err)
		return
	}
	disc, err := d.Discover(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, dev := range disc.Inventory.Devices[:2] {
		fmt.Printf("%s %d %s %s NUMA %d CPUs %s\n", dev.Name, dev.Index, dev.Type, dev.PCIBusID, dev.NUMA, dev.Cores)
	}
	fmt.Println("link 0-1:", disc.Inventory.Link(0, 1).NVLinks, disc.Inventory.Link(0, 1).Fabric, disc.Inventory.Link(0, 1).PCIe)
	files, _ := disc.FilesFor([]int{0})
	fmt.Println("files of gpu 0:", files)

	s, err := gres.NewNodeDevices(disc.Inventory)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = s.Allocate([]int{1}) // GCD 1 is busy: GCD 0's package is broken up
	p, err := s.Choose(gres.DeviceRequest{Name: "gpu", Type: "mi250x", Count: 2})
	fmt.Println("2-GPU job:", p.Devices, err)
	// Output:
	// gpu 0 mi250x 0000:03:00.0 NUMA 0 CPUs 0-15
	// gpu 1 mi250x 0000:04:00.0 NUMA 0 CPUs 0-15
	// link 0-1: 4 xgmi PIX
	// files of gpu 0: [c 226:128 /dev/dri/renderD128 c 236:0 /dev/kfd]
	// 2-GPU job: [2 3] <nil>
}
