// Package vendortest builds one GPU node per vendor, each described by
// what that vendor's driver reports: NVIDIA by the NVML driver over its
// mock (gres/nvml, with cgo) or the inventory it discovers on a DGX H100
// (without), Intel by the sysfs driver over its Max 1550 fixture
// (gres/intel), AMD by the sysfs driver over its MI300X hive fixture
// (gres/amd). Each node comes with a fault injector that makes its
// driver report a health event (an XID, a fatal error counter, a RAS
// uncorrectable count), so that scheduler behaviour can be checked the
// same whichever vendor a node reports (see the tests), and a mixed
// cluster can be shown (examples/mixedvendor).
//
// It imports test fixtures (gres/amd/amdtest, gres/intel/inteltest, and
// gres/nvml/nvmltest with cgo); it is meant for tests and examples.
package vendortest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/amd"
	"github.com/sluicehq/sluice/gres/amd/amdtest"
	"github.com/sluicehq/sluice/gres/gresdriver"
	"github.com/sluicehq/sluice/gres/intel"
	"github.com/sluicehq/sluice/gres/intel/inteltest"
	"github.com/sluicehq/sluice/scheduler"
)

// GiB is one gibibyte in MiB.
const GiB = 1024

// Node is one vendor's GPU node.
type Node struct {
	// Vendor is "nvidia", "amd" or "intel".
	Vendor string
	// Type is the GRES type of the node's GPUs ("h100", "mi300x",
	// "max_1550_tile").
	Type string
	// Config is the node as the scheduler is configured with it; its
	// Devices are what the vendor's driver discovered.
	Config scheduler.NodeConfig
	// Fault makes device index fail and returns the unhealthy event the
	// vendor's driver then reports for it.
	Fault func(index int) (gres.HealthEvent, error)
}

// Vendors are the vendors New builds nodes of, in the order All lists
// them.
var Vendors = []string{"nvidia", "amd", "intel"}

// New returns the node of one vendor (see NVIDIA, AMD, Intel) named name,
// using dir for its driver's recorded trees.
func New(vendor, dir, name string) (Node, error) {
	switch vendor {
	case "nvidia":
		return NVIDIA(filepath.Join(dir, "nvidia"), name)
	case "amd":
		return AMD(filepath.Join(dir, "amd"), name)
	case "intel":
		return Intel(filepath.Join(dir, "intel"), name)
	}
	return Node{}, fmt.Errorf("vendortest: unknown vendor %q (want one of %v)", vendor, Vendors)
}

// All returns one node of each of Vendors, named "<vendor>-01", using
// dir for the drivers' recorded trees.
func All(dir string) ([]Node, error) {
	var out []Node
	for _, v := range Vendors {
		n, err := New(v, dir, v+"-01")
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// Intel writes the 8 × Max 1550 fixture (inteltest.Max1550Node) under
// dir, discovers it with the gres/intel driver in its default flat mode
// (16 tiles, Xe Link) and returns the node: 2 × 52 cores with two threads
// each, 1 TiB. Fault raises a fatal error counter of the device's tile
// and polls the driver until it reports the device.
func Intel(dir, name string) (Node, error) {
	m := inteltest.Max1550Node()
	d, inv, err := watch(dir, m.Tree(), func(root string) (*intel.Driver, error) {
		return intel.Open(intel.Options{Root: root, PollInterval: time.Millisecond})
	})
	if err != nil {
		return Node{}, err
	}
	ctx := context.Background()
	fault := func(index int) (gres.HealthEvent, error) {
		for _, p := range d.Placements() {
			if p.Index != index {
				continue
			}
			f := filepath.Join(dir, m.ErrorCounter(p.Card-m.CardMinor(0), max(p.Tile, 0), "fatal_sram"))
			if err := os.WriteFile(f, []byte("1\n"), 0o644); err != nil {
				return gres.HealthEvent{}, err
			}
			return await(ctx, d, index)
		}
		return gres.HealthEvent{}, fmt.Errorf("vendortest: intel: no device %d: %w", index, gres.ErrUnknownDevice)
	}
	return Node{Vendor: "intel", Type: "max_1550_tile", Fault: fault,
		Config: scheduler.NodeConfig{Name: name, CPUs: 208, MemoryMiB: 1024 * GiB, Devices: inv}}, nil
}

// sysfsDriver is a driver reading a sysfs tree.
type sysfsDriver interface {
	gres.Discoverer
	gres.HealthWatcher
}

// watch writes tree under dir, opens a driver on it, discovers the node
// and takes the health counters' baseline (a first quiet poll), so that
// a fault injected next is a change.
func watch[D sysfsDriver](dir string, tree gresdriver.Tree, open func(root string) (D, error)) (D, gres.Inventory, error) {
	var none D
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return none, gres.Inventory{}, err
	}
	if err := tree.Write(dir); err != nil {
		return none, gres.Inventory{}, err
	}
	d, err := open(dir)
	if err != nil {
		return none, gres.Inventory{}, err
	}
	ctx := context.Background()
	disc, err := d.Discover(ctx)
	if err != nil {
		return none, gres.Inventory{}, err
	}
	if _, err := d.PollHealth(ctx, 0); err != nil {
		return none, gres.Inventory{}, err
	}
	return d, disc.Inventory, nil
}

// await polls w until it reports device index unhealthy.
func await(ctx context.Context, w gres.HealthWatcher, index int) (gres.HealthEvent, error) {
	for range 100 {
		evs, err := w.PollHealth(ctx, 10*time.Millisecond)
		if err != nil {
			return gres.HealthEvent{}, err
		}
		for _, ev := range evs {
			if ev.Index == index && !ev.Healthy {
				return ev, nil
			}
		}
	}
	return gres.HealthEvent{}, fmt.Errorf("vendortest: no unhealthy event for device %d", index)
}

// AMD writes the 8 × MI300X fixture (amdtest.MI300XHive: one xGMI hive,
// one link between every pair, GPUs 0-3 on NUMA node 0 and 4-7 on node 1)
// under dir, discovers it with the gres/amd driver and returns the node:
// 2 × 64 CPUs and 512 GiB, as the fixture's two KFD CPU nodes report.
// Fault raises the uncorrectable count of the UMC RAS block of the
// device's GPU and polls the driver until it reports the device.
func AMD(dir, name string) (Node, error) {
	m := amdtest.MI300XHive()
	tree, err := m.Tree()
	if err != nil {
		return Node{}, err
	}
	d, inv, err := watch(dir, tree, func(root string) (*amd.Driver, error) {
		return amd.Open(amd.Options{Root: root, PollInterval: time.Millisecond})
	})
	if err != nil {
		return Node{}, err
	}
	ctx := context.Background()
	ue := map[string]uint64{} // uncorrectable UMC errors injected, by PCI address
	fault := func(index int) (gres.HealthEvent, error) {
		for _, in := range d.Devices() {
			if in.Index != index {
				continue
			}
			for _, g := range m.GPUs {
				if g.Bus != in.PCIBusID {
					continue
				}
				ue[g.Bus]++
				if err := g.WriteRAS(dir, "umc", ue[g.Bus], 0); err != nil {
					return gres.HealthEvent{}, err
				}
				return await(ctx, d, index)
			}
		}
		return gres.HealthEvent{}, fmt.Errorf("vendortest: amd: no device %d: %w", index, gres.ErrUnknownDevice)
	}
	cpus := m.Sockets * m.NUMAPerSocket * m.CPUsPerNUMA
	return Node{Vendor: "amd", Type: "mi300x", Fault: fault,
		Config: scheduler.NodeConfig{Name: name, CPUs: cpus, MemoryMiB: 512 * GiB, Devices: inv}}, nil
}
