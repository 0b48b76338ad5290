package amdtest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/gres/amd/amdtest"
)

// Write an 8× MI300X node and look at what the kernel would show for its
// first GPU: KFD node 2 (nodes 0 and 1 are the two sockets' CPUs), its
// xGMI io_link to the next GPU, and its render node.
func ExampleMachine_Write() {
	root, err := os.MkdirTemp("", "amdtest-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)
	if err := amdtest.MI300XHive().Write(root); err != nil {
		fmt.Println(err)
		return
	}
	show := func(rel string, keys ...string) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, _, _ := strings.Cut(line, " ")
			for _, want := range keys {
				if k == want {
					fmt.Println(line)
				}
			}
		}
	}
	node := "sys/class/kfd/kfd/topology/nodes/2"
	show(node+"/properties", "simd_count", "vendor_id", "device_id", "location_id", "domain", "drm_render_minor")
	show(node+"/io_links/1/properties", "type", "node_from", "node_to", "min_bandwidth", "max_bandwidth")
	dev, _ := os.ReadFile(filepath.Join(root, "sys/class/drm/renderD128/dev"))
	fmt.Print("renderD128 ", string(dev))
	// Output:
	// simd_count 1216
	// vendor_id 4098
	// device_id 29857
	// location_id 1280
	// domain 0
	// drm_render_minor 128
	// type 11
	// node_from 2
	// node_to 3
	// min_bandwidth 64000
	// max_bandwidth 64000
	// renderD128 226:128
}
