package intel_test

import (
	"context"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/intel"
	"github.com/sluicehq/sluice/gres/intel/inteltest"
)

// Discovering an 8 × Max 1550 node from a recorded sysfs tree: sixteen
// tiles, the best pair of which are two tiles of one card.
func ExampleDriver_Discover() {
	root, _ := os.MkdirTemp("", "intel-example")
	defer os.RemoveAll(root)
	if err := inteltest.Max1550Node().Tree().Write(root); err != nil {
		fmt.Println(err)
		return
	}
	d, err := intel.Open(intel.Options{Root: root})
	if err != nil {
		fmt.Println(err)
		return
	}
	disc, err := d.Discover(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	dev := disc.Inventory.Devices[3]
	fmt.Println(len(disc.Inventory.Devices), "devices; device 3:", dev.Type, dev.MemoryMiB, "MiB, NUMA", dev.NUMA)
	p := d.Placements()[3]
	fmt.Printf("device 3 is tile %d of card%d (%s)\n", p.Tile, p.Card, p.PCIAddress)
	fmt.Println(disc.Files[3])
	fmt.Printf("%+v\n", disc.Inventory.Link(2, 3))
	node, _ := gres.NewNodeDevices(disc.Inventory)
	pick, _ := node.Choose(gres.DeviceRequest{Name: "gpu", Type: "max_1550_tile", Count: 2})
	fmt.Println("best pair:", pick.Devices)
	// Output:
	// 16 devices; device 3: max_1550_tile 65536 MiB, NUMA 0
	// device 3 is tile 1 of card2 (0000:29:00.0)
	// [c 226:2 /dev/dri/card2 c 226:129 /dev/dri/renderD129]
	// {NVLinks:16 Fabric:xelink NVSwitch:false PCIe:board}
	// best pair: [0 1]
}
