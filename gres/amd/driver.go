package amd

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/internal/driverkit"
)

// Options configures a Driver. The zero value reads the host's /sys.
type Options struct {
	// Root is the directory holding the sysfs tree as "sys/…" ("" or "/":
	// the host). Tests and containers with the host's /sys mounted
	// elsewhere set it. Device file paths are reported as on the host
	// (/dev/dri/renderD128, /dev/kfd) whatever Root is.
	Root string
	// Name is the GRES name of the devices; "" means "gpu".
	Name string
	// PollInterval is how often PollHealth rereads sysfs while it waits;
	// 0 means one second. Between 1ms and 1h.
	PollInterval time.Duration
}

// Validate checks the options. Errors wrap ErrInvalidOptions.
func (o *Options) Validate() error {
	switch {
	case o.Root != "" && !filepath.IsAbs(o.Root):
		return fmt.Errorf("%w: Root %q: want an absolute path", ErrInvalidOptions, o.Root)
	case o.Name != "" && gres.ValidateName(o.Name, "") != nil:
		return fmt.Errorf("%w: Name %q: want a letter then up to 63 letters, digits, '_', '-' or '.'", ErrInvalidOptions, o.Name)
	case o.PollInterval < 0 || o.PollInterval > 0 && o.PollInterval < time.Millisecond || o.PollInterval > time.Hour:
		return fmt.Errorf("%w: PollInterval %v: want 0 or between 1ms and 1h", ErrInvalidOptions, o.PollInterval)
	}
	return nil
}

// DeviceInfo is what the driver knows about one inventory device beyond
// gres.Device: where it sits in the KFD topology and, for a compute
// partition, which physical GPU it belongs to.
type DeviceInfo struct {
	Index       int    // the device's gres.Device.Index
	Node        int    // KFD topology node number
	GPUID       uint64 // KFD gpu_id
	RenderMinor int64  // N of /dev/dri/renderDN
	// PCIBusID is the PCI address of the physical GPU; the compute
	// partitions of one GPU share it (their gres.Device.PCIBusID is "",
	// since bus ids are unique in an inventory).
	PCIBusID string
	DeviceID uint16 // PCI device id
	// ComputePartition and MemoryPartition are the GPU's modes ("SPX",
	// "CPX"; "NPS1", "NPS4"), "" when the GPU does not report them.
	ComputePartition, MemoryPartition string
	// Partition is the device's ordinal among the KFD nodes of its GPU
	// (0 for an unpartitioned GPU); Partitions is how many the GPU has.
	Partition, Partitions int
}

// Driver discovers a node's AMD GPUs from sysfs and watches their health
// and activity there. It implements gres.Discoverer, gres.HealthWatcher
// and gres.TelemetrySampler. It is pure Go and holds no open files
// between calls. Discover, PollHealth and Sample may run concurrently.
type Driver struct {
	root     string
	name     string
	interval time.Duration

	snap driverkit.Last[snapshot]

	pollMu sync.Mutex // serialises PollHealth
	watch  *watchState
}

// New returns a Driver for opts without touching the filesystem.
func New(opts Options) (*Driver, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Driver{root: cmp.Or(opts.Root, "/"), name: cmp.Or(opts.Name, "gpu"), interval: cmp.Or(opts.PollInterval, time.Second)}, nil
}

// Open returns a Driver for opts after checking that the KFD topology
// exists below opts.Root (else the error wraps ErrUnavailable).
func Open(opts Options) (*Driver, error) {
	d, err := New(opts)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(d.nodesDir()); err != nil {
		return nil, fmt.Errorf("%w: %w (is the amdgpu driver loaded?)", ErrUnavailable, err)
	}
	return d, nil
}

func (d *Driver) nodesDir() string { return filepath.Join(d.root, "sys/class/kfd/kfd/topology/nodes") }

// Devices returns what the last Discover found about each device, in
// inventory order (nil before the first Discover).
func (d *Driver) Devices() []DeviceInfo {
	if s := d.snap.Get(); s != nil {
		return slices.Clone(s.info)
	}
	return nil
}

// Discover reads the node's AMD GPUs from sysfs; see the package
// documentation for what it reads and how it builds the inventory.
func (d *Driver) Discover(ctx context.Context) (gres.Discovery, error) {
	s, err := d.snap.Refresh(ctx, d.discover)
	if err != nil {
		return gres.Discovery{}, err
	}
	return s.disc.Clone(), nil
}

var (
	_ gres.Discoverer       = (*Driver)(nil)
	_ gres.HealthWatcher    = (*Driver)(nil)
	_ gres.TelemetrySampler = (*Driver)(nil)
)
