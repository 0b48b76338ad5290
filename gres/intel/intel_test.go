package intel_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gresdriver"
	"github.com/sluicehq/sluice/gres/intel"
	"github.com/sluicehq/sluice/gres/intel/inteltest"
)

// open writes m's tree and opens a driver on it.
func open(t *testing.T, m inteltest.Machine, opts intel.Options) (*intel.Driver, string) {
	t.Helper()
	opts.Root = gresdriver.WriteTree(t, m.Tree())
	if opts.PollInterval == 0 {
		opts.PollInterval = time.Millisecond
	}
	d, err := intel.Open(opts)
	require.NoError(t, err)
	return d, opts.Root
}

// discover opens a driver on m's tree and discovers it.
func discover(t *testing.T, m inteltest.Machine, opts intel.Options) (*intel.Driver, gres.Discovery, string) {
	t.Helper()
	d, root := open(t, m, opts)
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	return d, disc, root
}

// write replaces a file of a written tree.
func write(t *testing.T, root, rel, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(root, rel), []byte(content), 0o644))
}

// TestConformance runs the whole gresdriver suite on every fixture, in
// both device hierarchies; faults are a rising fatal error counter (i915)
// or the card leaving sysfs (xe, which has no counters).
func TestConformance(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		m         inteltest.Machine
		composite bool
	}{
		"Max1550": {m: inteltest.Max1550Node()}, "Max1550/composite": {m: inteltest.Max1550Node(), composite: true},
		"Max1550/xe": {m: inteltest.Max1550NodeXe()}, "Flex170": {m: inteltest.Flex170Node()},
	} {
		t.Run(name, func(t *testing.T) {
			d, root := open(t, tc.m, intel.Options{Composite: tc.composite})
			inject := func(index int) error {
				for _, p := range d.Placements() {
					if p.Index != index {
						continue
					}
					i := p.Card - tc.m.CardMinor(0)
					if tc.m.Driver == "xe" {
						return os.Remove(filepath.Join(root, "sys/class/drm/card"+strconv.Itoa(p.Card)))
					}
					return os.WriteFile(filepath.Join(root, tc.m.ErrorCounter(i, max(p.Tile, 0), "fatal_sram")), []byte("1\n"), 0o644)
				}
				t.Fatalf("no device %d", index)
				return nil
			}
			gresdriver.Run(t, gresdriver.Driver{Discoverer: d, Telemetry: d, Health: d,
				HealthConfig: gresdriver.HealthConfig{Inject: inject, Timeout: 5 * time.Millisecond}})
		})
	}
}

// TestMax1550Flat checks discovery of the 8 × Max 1550 node against the
// fixture's layout: 16 tiles with their cards, NUMA nodes, CPUs, memory,
// device files and links.
func TestMax1550Flat(t *testing.T) {
	t.Parallel()
	m := inteltest.Max1550Node()
	d, disc, _ := discover(t, m, intel.Options{})
	inv := disc.Inventory
	require.Len(t, inv.Devices, 16)
	socket0, _ := gres.ParseCoreSet("0-51,104-155")
	socket1, _ := gres.ParseCoreSet("52-103,156-207")
	pl := d.Placements()
	require.Len(t, pl, 16)
	for p, dv := range inv.Devices {
		card := p / 2
		assert.Equal(t, p, dv.Index)
		assert.Equal(t, "gpu", dv.Name)
		assert.Equal(t, "max_1550_tile", dv.Type)
		assert.Equal(t, int64(64<<10), dv.MemoryMiB, "lmem_total_bytes split over two tiles")
		assert.Equal(t, card/4, dv.NUMA)
		assert.Equal(t, card/4, dv.Socket)
		assert.True(t, dv.Cores.Equal([]gres.CoreSet{socket0, socket1}[card/4]), "device %d cores %v", p, dv.Cores)
		assert.Empty(t, dv.PCIBusID, "tiles share their card's PCI function")
		assert.Equal(t, intel.Placement{Index: p, Card: card + 1, PCIAddress: m.Cards[card].PCI, Tile: p % 2, KernelDriver: "i915"}, pl[p])
		// card0 is the BMC, so GPU card N has render node 127+N: read
		// from the render node's device link, not computed.
		assert.Equal(t, []gres.DeviceFile{
			{Path: "/dev/dri/card" + strconv.Itoa(card+1), Kind: gres.CharDevice, Major: 226, Minor: int64(card + 1)},
			{Path: "/dev/dri/renderD" + strconv.Itoa(128+card), Kind: gres.CharDevice, Major: 226, Minor: int64(128 + card)},
		}, disc.Files[p])
	}
	assert.Empty(t, disc.CommonFiles)
	assert.Equal(t, "intel sysfs (i915)", disc.Driver)
	for i := range 16 {
		for j := range 16 {
			l := inv.Link(i, j)
			switch {
			case i == j:
				assert.Equal(t, gres.Link{}, l)
			case i/2 == j/2:
				assert.Equal(t, gres.Link{NVLinks: 16, Fabric: gres.FabricXeLink, PCIe: gres.PCIeBoard}, l, "tiles %d, %d of one card", i, j)
			case i/8 == j/8:
				assert.Equal(t, gres.Link{NVLinks: 2, Fabric: gres.FabricXeLink, PCIe: gres.PCIeNODE}, l, "16 ports over 7 peers, one NUMA node")
			default:
				assert.Equal(t, gres.Link{NVLinks: 2, Fabric: gres.FabricXeLink, PCIe: gres.PCIeSYS}, l)
			}
		}
	}
	assert.Contains(t, disc.Warnings, "xe link: 8 cards carry an Intel Accelerator Fabric device; sysfs does not expose the port topology, so they are taken as wired all-to-all")

	// Best-connected choice: tiles of one card first, then cards of one
	// NUMA node.
	node, err := gres.NewNodeDevices(inv)
	require.NoError(t, err)
	two, err := node.Choose(gres.DeviceRequest{Name: "gpu", Count: 2, Cores: socket1})
	require.NoError(t, err)
	assert.Equal(t, two.Devices[0]/2, two.Devices[1]/2, "two tiles of one card: %v", two.Devices)
	assert.GreaterOrEqual(t, two.Devices[0], 8, "near socket 1")
	four, err := node.Choose(gres.DeviceRequest{Name: "gpu", Count: 4, Type: "max_1550_tile"})
	require.NoError(t, err)
	assert.Equal(t, four.Devices[0]/2, four.Devices[1]/2)
	assert.Equal(t, four.Devices[2]/2, four.Devices[3]/2)
	assert.Equal(t, four.Devices[0]/8, four.Devices[3]/8, "two whole cards on one NUMA node: %v", four.Devices)
}

// TestMax1550Composite lists whole cards.
func TestMax1550Composite(t *testing.T) {
	t.Parallel()
	m := inteltest.Max1550Node()
	d, disc, _ := discover(t, m, intel.Options{Composite: true})
	require.Len(t, disc.Inventory.Devices, 8)
	for i, dv := range disc.Inventory.Devices {
		assert.Equal(t, "max_1550", dv.Type)
		assert.Equal(t, int64(128<<10), dv.MemoryMiB)
		assert.Equal(t, m.Cards[i].PCI, dv.PCIBusID)
		assert.Equal(t, -1, d.Placements()[i].Tile)
	}
	assert.Equal(t, gres.Link{NVLinks: 2, Fabric: gres.FabricXeLink, PCIe: gres.PCIeNODE}, disc.Inventory.Link(0, 3))
	assert.Equal(t, gres.Link{NVLinks: 2, Fabric: gres.FabricXeLink, PCIe: gres.PCIeSYS}, disc.Inventory.Link(3, 4))
}

// TestMax1550Xe reads the xe driver's per-tile layout: VRAM size per tile
// (hexadecimal), no Xe Link.
func TestMax1550Xe(t *testing.T) {
	t.Parallel()
	d, disc, _ := discover(t, inteltest.Max1550NodeXe(), intel.Options{})
	require.Len(t, disc.Inventory.Devices, 16)
	assert.Equal(t, int64(64<<10), disc.Inventory.Devices[5].MemoryMiB)
	assert.Equal(t, "xe", d.Placements()[5].KernelDriver)
	assert.Equal(t, gres.Link{NVLinks: 16, Fabric: gres.FabricXeLink, PCIe: gres.PCIeBoard}, disc.Inventory.Link(4, 5))
	assert.Equal(t, gres.Link{PCIe: gres.PCIeNODE}, disc.Inventory.Link(0, 2))
	assert.Contains(t, disc.Warnings, "xe link: not exposed by the driver (no i915.iaf device on two or more cards); links are PCIe only")
}

// TestFlex170 discovers the single-tile Flex node.
func TestFlex170(t *testing.T) {
	t.Parallel()
	m := inteltest.Flex170Node()
	_, disc, _ := discover(t, m, intel.Options{})
	inv := disc.Inventory
	require.Len(t, inv.Devices, 4)
	for i, dv := range inv.Devices {
		assert.Equal(t, "flex_170", dv.Type)
		assert.Equal(t, int64(16<<10), dv.MemoryMiB)
		assert.Equal(t, m.Cards[i].PCI, dv.PCIBusID)
		assert.Equal(t, i/2, dv.NUMA)
	}
	assert.Equal(t, gres.Link{PCIe: gres.PCIeNODE}, inv.Link(0, 1))
	assert.Equal(t, gres.Link{PCIe: gres.PCIeSYS}, inv.Link(1, 2))
	assert.Equal(t, "intel sysfs (xe)", disc.Driver)
}

// TestDiscoverDegrades: unknown device ids are skipped unless added to
// Options.Models; unknown NUMA, missing memory files and missing tiles
// degrade with warnings.
func TestDiscoverDegrades(t *testing.T) {
	t.Parallel()
	m := inteltest.Flex170Node()
	m.Cards[1].DeviceID = 0x56C5
	m.Cards[2].NUMA = -1
	m.Cards[3].TileVRAMBytes = 0
	d, disc, root := discover(t, m, intel.Options{})
	require.Len(t, disc.Inventory.Devices, 3)
	assert.Contains(t, disc.Warnings, "card2: Intel device 0x56c5 is not a known data-centre GPU; skipped (add it to Options.Models to list it)")
	assert.Contains(t, disc.Warnings, "card3: NUMA node unknown")
	assert.Contains(t, disc.Warnings, "card4: device memory not exposed; 16384 MiB from the Intel Data Center GPU Flex 170 table entry")
	assert.Equal(t, -1, disc.Inventory.Devices[1].NUMA)
	assert.Equal(t, gres.Link{}, disc.Inventory.Link(0, 1), "unknown NUMA: unknown level")

	d2, err := intel.Open(intel.Options{Root: root, Models: map[uint16]intel.Model{0x56C5: {Product: "test part", Type: "flex_test", Tiles: 1, MemoryMiB: 4096}}})
	require.NoError(t, err)
	disc, err = d2.Discover(context.Background())
	require.NoError(t, err)
	require.Len(t, disc.Inventory.Devices, 4)
	assert.Equal(t, "flex_test", disc.Inventory.Devices[1].Type)

	require.NoError(t, os.RemoveAll(filepath.Join(root, inteltest.PCIDir(m.Cards[0].PCI), "tile0")))
	disc, err = d.Discover(context.Background())
	require.NoError(t, err)
	assert.Contains(t, disc.Warnings, "card1: no tiles in sysfs (neither gt/gt<K> nor device/tile<K>); 1 from the model table")
}

// TestDiscoverInconsistentSockets: a card whose local CPUs sit on the
// other socket than its NUMA node's other cards would put one NUMA node
// on two sockets, which an inventory may not; sockets are dropped with a
// warning instead of failing discovery.
func TestDiscoverInconsistentSockets(t *testing.T) {
	t.Parallel()
	m := inteltest.Flex170Node() // cards 0 and 1 on NUMA node 0 (socket 0)
	tree := m.Tree()
	tree.File(inteltest.PCIDir(m.Cards[1].PCI)+"/local_cpulist", "32-63,96-127\n") // socket 1's CPUs
	d, err := intel.Open(intel.Options{Root: gresdriver.WriteTree(t, tree)})
	require.NoError(t, err)
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckDiscovery(disc))
	assert.Contains(t, disc.Warnings, "NUMA node 0 reported on sockets 0 and 1; sockets ignored")
	for _, dv := range disc.Inventory.Devices {
		assert.Equal(t, -1, dv.Socket, "device %d", dv.Index)
	}
	assert.Equal(t, gres.PCIeUnknown, disc.Inventory.Link(0, 1).PCIe, "one NUMA node, sockets said to differ: no level")
	assert.Equal(t, gres.PCIeSYS, disc.Inventory.Link(0, 2).PCIe)
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	_, err := intel.Open(intel.Options{Root: t.TempDir()})
	require.ErrorIs(t, err, intel.ErrUnavailable)
	root := gresdriver.WriteTree(t, inteltest.Flex170Node().Tree())
	for name, o := range map[string]intel.Options{
		"name":     {Name: "9gpu"},
		"interval": {PollInterval: time.Microsecond},
		"model":    {Models: map[uint16]intel.Model{1: {Type: "x", Tiles: 0}}},
		"type":     {Models: map[uint16]intel.Model{1: {Type: "a b", Tiles: 1}}},
	} {
		o.Root = root
		_, err := intel.Open(o)
		require.ErrorIs(t, err, intel.ErrInvalidOptions, name)
	}
	d, err := intel.Open(intel.Options{Root: root})
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(root, "sys")))
	_, err = d.Discover(context.Background())
	require.ErrorIs(t, err, intel.ErrUnavailable)
	_, err = d.Sample(context.Background())
	require.ErrorIs(t, err, intel.ErrUnavailable)
}

// TestUpstreamI915 reads a Max 1550 under the upstream i915 driver, which
// exposes neither lmem sizes, error counters nor the fabric device:
// memory from the model table (warned), tiles still paired on their card,
// no Xe Link between cards; and a PCI address from uevent when the device
// link's target is not named by the address.
func TestUpstreamI915(t *testing.T) {
	t.Parallel()
	m := inteltest.Max1550Node()
	for i := range m.Cards {
		m.Cards[i].LmemTotalBytes, m.Cards[i].ErrorCounters, m.Cards[i].XeLink = 0, false, false
	}
	tree := m.Tree()
	dir := inteltest.PCIDir(m.Cards[0].PCI)
	tree.Link(m.CardDir(0)+"/device", "../../../gpu-alias")
	tree.Link(filepath.Dir(m.CardDir(0))+"/renderD128/device", "../../../gpu-alias")
	tree.Link(filepath.Dir(dir)+"/gpu-alias", filepath.Base(dir))
	root := gresdriver.WriteTree(t, tree)
	d, err := intel.Open(intel.Options{Root: root})
	require.NoError(t, err)
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	require.Len(t, disc.Inventory.Devices, 16)
	assert.Equal(t, int64(64<<10), disc.Inventory.Devices[0].MemoryMiB)
	assert.Contains(t, disc.Warnings, "card1: device memory not exposed; 131072 MiB from the Intel Data Center GPU Max 1550 table entry")
	assert.Equal(t, gres.Link{NVLinks: 16, Fabric: gres.FabricXeLink, PCIe: gres.PCIeBoard}, disc.Inventory.Link(0, 1))
	assert.Equal(t, gres.Link{PCIe: gres.PCIeNODE}, disc.Inventory.Link(0, 2))
	assert.Equal(t, m.Cards[0].PCI, d.Placements()[0].PCIAddress, "from uevent PCI_SLOT_NAME")
	assert.Equal(t, "/dev/dri/renderD128", disc.Files[0][1].Path, "render node matched through uevent's address")
	evs, err := d.PollHealth(context.Background(), time.Millisecond)
	require.NoError(t, err)
	assert.Empty(t, evs)
}
