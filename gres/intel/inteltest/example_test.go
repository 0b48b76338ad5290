package inteltest_test

import (
	"fmt"

	"github.com/sluicehq/sluice/gres/intel/inteltest"
)

// A fixture is plain data; its Tree is the sysfs files the kernel would
// show for it.
func ExampleMachine_Tree() {
	m := inteltest.Flex170Node()
	tree := m.Tree()
	fmt.Print(tree.Files[inteltest.PCIDir(m.Cards[0].PCI)+"/device"])
	fmt.Println(tree.Links["sys/class/drm/card1"])
	fmt.Println(tree.Links[m.CardDir(0)+"/device"])
	fmt.Print(tree.Files[inteltest.PCIDir(m.Cards[0].PCI)+"/drm/renderD128/dev"])
	// Output:
	// 0x56c0
	// ../../devices/pci0000:4c/0000:4c:01.0/0000:4d:00.0/drm/card1
	// ../../../0000:4d:00.0
	// 226:128
}
