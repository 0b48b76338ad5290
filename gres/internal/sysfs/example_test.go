package sysfs_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/gres/internal/sysfs"
)

// Read a render node's device number and its GPU's PCI vendor id, as
// the kernel writes them.
func ExampleDevNumber() {
	root, err := os.MkdirTemp("", "sysfs-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)
	dir := filepath.Join(root, "sys/class/drm/renderD128")
	_ = os.MkdirAll(filepath.Join(dir, "device"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "dev"), []byte("226:128\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "device/vendor"), []byte("0x1002\n"), 0o644)

	major, minor, err := sysfs.DevNumber(filepath.Join(dir, "dev"))
	fmt.Println(major, minor, err)
	vendor, err := sysfs.HexID(filepath.Join(dir, "device/vendor"))
	fmt.Printf("%#04x %v\n", vendor, err)
	// Output:
	// 226 128 <nil>
	// 0x1002 <nil>
}
