package intel

import "fmt"

// VendorID is Intel's PCI vendor id, the content of a PCI device's
// vendor file ("0x8086").
const VendorID = 0x8086

// Model describes one Intel data-centre GPU product, keyed by PCI device
// id in Models and Options.Models.
type Model struct {
	// Product is the marketing name, e.g. "Intel Data Center GPU Max 1550".
	Product string
	// Type is the GRES type of a whole card ("max_1550"); a tile listed
	// as its own device is typed Type+"_tile".
	Type string
	// Tiles is the number of tiles (stacks) of one card; the count read
	// from sysfs wins when sysfs exposes the tiles.
	Tiles int
	// MemoryMiB is the card's device memory, used when sysfs exposes no
	// size (the driver then warns).
	MemoryMiB int64
	// XeLinkPorts is the card's Xe Link port count (0: no Xe Link or
	// unknown); it sets the lanes of Xe Link pairs (see Driver.Discover).
	XeLinkPorts int
}

// Validate checks the model: a valid GRES type, at least one tile, a
// non-negative memory size and port count.
func (m Model) Validate() error {
	switch {
	case !validType(m.Type) || !validType(m.Type+"_tile"):
		return fmt.Errorf("%w: model %q: type %q: want 1-59 characters from [A-Za-z0-9_.-], not a count", ErrInvalidOptions, m.Product, m.Type)
	case m.Tiles < 1 || m.Tiles > maxTiles:
		return fmt.Errorf("%w: model %q: %d tiles, want 1..%d", ErrInvalidOptions, m.Product, m.Tiles, maxTiles)
	case m.MemoryMiB < 0:
		return fmt.Errorf("%w: model %q: negative memory %d MiB", ErrInvalidOptions, m.Product, m.MemoryMiB)
	case m.XeLinkPorts < 0 || m.XeLinkPorts > 255:
		return fmt.Errorf("%w: model %q: %d Xe Link ports, want 0..255", ErrInvalidOptions, m.Product, m.XeLinkPorts)
	}
	return nil
}

// maxTiles bounds the tiles of one card the driver accepts.
const maxTiles = 8

// Models returns the built-in table of PCI device ids the driver lists
// (a fresh map on every call): the Data Center GPU Max series (Ponte
// Vecchio: the 1550 with two tiles of 64 GiB HBM2e and 16 Xe Link ports,
// the single-tile 48 GiB 1100) and the Flex series (one GPU of 16 GiB
// GDDR6 per Flex 170 card; the Flex 140 card carries two GPUs, each its
// own PCI device with 6 GiB). Integrated and client GPUs are not in the
// table and are skipped.
func Models() map[uint16]Model {
	return map[uint16]Model{
		0x0BD5: {Product: "Intel Data Center GPU Max 1550", Type: "max_1550", Tiles: 2, MemoryMiB: 128 << 10, XeLinkPorts: 16},
		0x0BDA: {Product: "Intel Data Center GPU Max 1100", Type: "max_1100", Tiles: 1, MemoryMiB: 48 << 10},
		0x56C0: {Product: "Intel Data Center GPU Flex 170", Type: "flex_170", Tiles: 1, MemoryMiB: 16 << 10},
		0x56C1: {Product: "Intel Data Center GPU Flex 140", Type: "flex_140", Tiles: 1, MemoryMiB: 6 << 10},
	}
}
