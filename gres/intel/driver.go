package intel

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/internal/driverkit"
	"github.com/sluicehq/sluice/gres/internal/sysfs"
)

// Options configures a Driver. The zero value reads the running system.
type Options struct {
	// Root is the directory holding the sys tree to read ("" or "/": the
	// real one); tests and containers point it at a copy.
	Root string
	// Name is the GRES name of the devices; "" means "gpu".
	Name string
	// Composite lists each card as one device even when it has several
	// tiles, like Level Zero's ZE_FLAT_DEVICE_HIERARCHY=COMPOSITE. By
	// default (FLAT, Level Zero's default) every tile of a multi-tile
	// card is a device of its own, typed <card type>_tile.
	Composite bool
	// Models adds to or overrides the built-in table (Models()) by PCI
	// device id.
	Models map[uint16]Model
	// PollInterval is how often PollHealth rereads the error counters
	// while it waits (sysfs offers no change notification for them); 0
	// means 100ms. Between 1ms and 1h.
	PollInterval time.Duration
	// Clock returns the current time, for the time between two Samples;
	// nil means time.Now.
	Clock func() time.Time
}

// Driver discovers the Intel data-centre GPUs of a node from sysfs and
// watches their health and activity. It implements gres.Discoverer,
// gres.HealthWatcher and gres.TelemetrySampler, needs no vendor library
// and no cgo, and is safe for concurrent use (PollHealth not with
// itself).
type Driver struct {
	root     string
	name     string
	flat     bool
	models   map[uint16]Model
	interval time.Duration
	now      func() time.Time

	snap driverkit.Last[snapshot] // last discovery

	pollMu sync.Mutex
	watch  *watchState

	sampleMu sync.Mutex
	prev     map[string]counterReading // by reading key, for rates
}

var (
	_ gres.Discoverer       = (*Driver)(nil)
	_ gres.HealthWatcher    = (*Driver)(nil)
	_ gres.TelemetrySampler = (*Driver)(nil)
)

// Open returns a Driver for opts. It checks the options and that
// Root/sys/class/drm exists (else the error wraps ErrUnavailable); it
// reads nothing else until Discover.
func Open(opts Options) (*Driver, error) {
	d := &Driver{root: cmp.Or(opts.Root, "/"), name: cmp.Or(opts.Name, "gpu"), flat: !opts.Composite,
		interval: cmp.Or(opts.PollInterval, 100*time.Millisecond), now: opts.Clock, models: Models()}
	if err := gres.ValidateName(d.name, ""); err != nil {
		return nil, fmt.Errorf("%w: Name: %w", ErrInvalidOptions, err)
	}
	if d.interval < time.Millisecond || d.interval > time.Hour {
		return nil, fmt.Errorf("%w: PollInterval %v: want 0 or between 1ms and 1h", ErrInvalidOptions, opts.PollInterval)
	}
	for id, m := range opts.Models {
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("device id %#04x: %w", id, err)
		}
	}
	maps.Copy(d.models, opts.Models)
	if d.now == nil {
		d.now = time.Now
	}
	if !sysfs.Exists(d.sys("class", "drm")) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrUnavailable, d.sys("class", "drm"))
	}
	return d, nil
}

// sys joins path elements under Root/sys.
func (d *Driver) sys(elem ...string) string {
	return filepath.Join(append([]string{d.root, "sys"}, elem...)...)
}

// Placement says where one inventory device sits: its card (and tile).
type Placement struct {
	Index      int    // the device's Index in the inventory
	Card       int    // DRM card number: the N of /dev/dri/cardN
	PCIAddress string // the card's PCI address, "0000:29:00.0"
	// Tile is the tile (stack) the device is, or -1 for a whole card.
	Tile int
	// KernelDriver is the card's driver, "i915" or "xe" ("" if unknown).
	KernelDriver string
}

// Placements returns where each device of the last Discover sits, in
// inventory order (nil before the first Discover): the parent card of
// every tile.
func (d *Driver) Placements() []Placement {
	snap := d.snap.Get()
	if snap == nil {
		return nil
	}
	out := make([]Placement, len(snap.devs))
	for p, r := range snap.devs {
		c := &snap.cards[r.card]
		tile := -1
		if r.tile >= 0 {
			tile = c.tiles[r.tile].id
		}
		out[p] = Placement{Index: snap.disc.Inventory.Devices[p].Index, Card: c.minor, PCIAddress: c.pci, Tile: tile, KernelDriver: c.driver}
	}
	return out
}
