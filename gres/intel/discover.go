package intel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/internal/driverkit"
	"github.com/sluicehq/sluice/gres/internal/sysfs"
)

// drmMajor is the character major of DRM minors (/dev/dri/*), used when
// a dev attribute cannot be read.
const drmMajor = 226

// card is one Intel GPU (a PCI function with a DRM card minor).
type card struct {
	minor      int    // N of cardN
	dir        string // sys/class/drm/cardN
	pci        string // "0000:29:00.0"
	driver     string // "i915", "xe" or ""
	model      Model
	numa       int
	socket     int
	cores      gres.CoreSet
	memMiB     int64
	lmem       bool // i915 lmem_total_bytes / lmem_avail_bytes present
	xelink     bool // an Intel Accelerator Fabric (Xe Link) device is attached
	hwmon      string
	files      []gres.DeviceFile
	tiles      []tile
	tileLayout string // "gt" (i915), "tile" (xe) or "" (from the model table)
}

// tile is one tile (stack) of a card.
type tile struct {
	id     int
	memMiB int64
	idle   string // idle-residency file (ms): i915 rc6_residency_ms, xe gtidle/idle_residency_ms
	errors string // i915 error_counter directory, "" when absent
}

// devRef places one inventory device: a card and a tile position (-1
// for the whole card).
type devRef struct{ card, tile int }

// snapshot is one discovery. Immutable once built.
type snapshot struct {
	cards []card
	devs  []devRef // by inventory position
	disc  gres.Discovery
}

// Discover reads the node's Intel data-centre GPUs from sysfs:
//
//   - every /sys/class/drm/card<N> whose device (the PCI function the
//     device link points to) has vendor 0x8086 and a device id of the
//     model table is a card; other cards (a BMC's VGA, integrated
//     graphics, other vendors) are skipped;
//   - its PCI address is the device link's target (uevent PCI_SLOT_NAME
//     otherwise), its kernel driver the driver link, NUMA node numa_node
//     (-1: unknown), CPU affinity local_cpulist, socket the
//     physical_package_id of its first local CPU (every socket unknown,
//     with a warning, when that puts one NUMA node on two sockets);
//   - tiles are the i915 driver's card<N>/gt/gt<K> directories or the xe
//     driver's device/tile<K> directories (else the model table's count,
//     with a warning). In the default (flat) mode a card with several
//     tiles is one device per tile, typed <type>_tile; Placements records
//     each tile's card;
//   - memory is xe's tile<K>/physical_vram_size_bytes, or the card's
//     lmem_total_bytes (the i915 backport driver), split evenly among its
//     tiles, else the model table's size with a warning;
//   - device files are /dev/dri/card<N> and the render node whose device
//     link names the same PCI function (its minor read from its dev file,
//     never assumed to be 128+N); a tile needs its card's files (cgroups
//     confine whole DRM minors, not tiles);
//   - links: two tiles of one card are on one board (PCIe level board)
//     and joined by the package's tile interconnect, counted as the
//     card's Xe Link port count, so the device chooser keeps a job's tiles
//     on one card first; two cards that both have an Intel Accelerator
//     Fabric device (the i915 driver's i915.iaf.<K> auxiliary device,
//     which carries Xe Link) are joined by Xe Link with
//     ports/(cards-1) lanes (at least 1): sysfs does not expose the
//     port-level topology, so the all-to-all wiring of Intel's OAM
//     baseboards is assumed and reported as a warning; otherwise a pair has
//     no fabric link. The host-side level of two cards is NODE on one NUMA
//     node and SYS across nodes (unknown when either node is unknown).
//
// Devices are indexed 0..n-1 by DRM card number, then tile. Discovery
// fails (wrapping ErrUnavailable) when Root/sys/class/drm is gone, and
// returns ctx.Err() when ctx ends first.
func (d *Driver) Discover(ctx context.Context) (gres.Discovery, error) {
	snap, err := d.snap.Refresh(ctx, d.discover)
	if err != nil {
		return gres.Discovery{}, err
	}
	return snap.disc.Clone(), nil
}

func (d *Driver) discover(ctx context.Context) (*snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	drm := d.sys("class", "drm")
	if !sysfs.Exists(drm) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrUnavailable, drm)
	}
	var warn []string
	warnf := func(format string, args ...any) { warn = append(warn, fmt.Sprintf(format, args...)) }
	renders := d.renderNodes(drm)
	snap := &snapshot{}
	for _, n := range sysfs.Numbered(drm, "card") {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, ok := d.probeCard(n, filepath.Join(drm, "card"+strconv.Itoa(n)), renders, warnf)
		if ok {
			snap.cards = append(snap.cards, c)
		}
	}
	d.inventory(snap, warnf)
	driverkit.FixSockets(snap.disc.Inventory.Devices, warnf)
	snap.disc.Driver = "intel sysfs"
	if drivers := kernelDrivers(snap.cards); drivers != "" {
		snap.disc.Driver += " (" + drivers + ")"
	}
	snap.disc.Warnings = warn
	if err := snap.disc.Validate(); err != nil {
		return nil, fmt.Errorf("intel: discovered inventory does not validate: %w", err)
	}
	return snap, nil
}

// kernelDrivers lists the cards' kernel drivers, e.g. "i915".
func kernelDrivers(cards []card) string {
	var ds []string
	for _, c := range cards {
		if c.driver != "" && !slices.Contains(ds, c.driver) {
			ds = append(ds, c.driver)
		}
	}
	slices.Sort(ds)
	return strings.Join(ds, ", ")
}

// renderNodes maps PCI addresses to their render node's device file.
func (d *Driver) renderNodes(drm string) map[string]gres.DeviceFile {
	out := map[string]gres.DeviceFile{}
	for _, n := range sysfs.Numbered(drm, "renderD") {
		dir := filepath.Join(drm, "renderD"+strconv.Itoa(n))
		pci := pciOf(filepath.Join(dir, "device"))
		if pci == "" {
			continue
		}
		major, minor, err := sysfs.DevNumber(filepath.Join(dir, "dev"))
		if err != nil {
			continue
		}
		out[pci] = gres.DeviceFile{Path: "/dev/dri/renderD" + strconv.Itoa(n), Kind: gres.CharDevice, Major: major, Minor: minor}
	}
	return out
}

// pciOf returns the PCI address of the device a class device's device
// link points to: the link target's name, else the device's uevent
// PCI_SLOT_NAME; "" when neither is a PCI address.
func pciOf(dev string) string {
	if pci, err := sysfs.LinkBase(dev); err == nil && sysfs.ValidPCI(pci) {
		return pci
	}
	if pci := strings.ToLower(sysfs.Uevent(filepath.Join(dev, "uevent"))["PCI_SLOT_NAME"]); sysfs.ValidPCI(pci) {
		return pci
	}
	return ""
}

// probeCard reads one DRM card; ok is false for cards that are not Intel
// data-centre GPUs.
func (d *Driver) probeCard(n int, dir string, renders map[string]gres.DeviceFile, warnf func(string, ...any)) (card, bool) {
	dev := filepath.Join(dir, "device")
	c := card{minor: n, dir: dir, numa: -1, socket: -1}
	if v, err := sysfs.HexID(filepath.Join(dev, "vendor")); err != nil || v != VendorID {
		return c, false
	}
	id, err := sysfs.HexID(filepath.Join(dev, "device"))
	if err != nil {
		warnf("card%d: skipped: %v", n, err)
		return c, false
	}
	m, ok := d.models[id]
	if !ok {
		warnf("card%d: Intel device %#04x is not a known data-centre GPU; skipped (add it to Options.Models to list it)", n, id)
		return c, false
	}
	c.model = m
	ue := sysfs.Uevent(filepath.Join(dev, "uevent"))
	if c.pci = pciOf(dev); c.pci == "" {
		warnf("card%d: skipped: PCI address unknown (device link and uevent PCI_SLOT_NAME unreadable)", n)
		return c, false
	}
	if c.driver, _ = sysfs.LinkBase(filepath.Join(dev, "driver")); c.driver == "" {
		c.driver = ue["DRIVER"]
	}
	if c.numa = sysfs.NUMANode(filepath.Join(dev, "numa_node")); c.numa < 0 {
		warnf("card%d: NUMA node unknown", n)
	}
	switch cs, err := sysfs.CPUList(filepath.Join(dev, "local_cpulist")); {
	case err == nil:
		c.cores = cs
		if first := cs.AppendTo(nil); len(first) > 0 {
			c.socket = sysfs.CPUSocket(d.sys(), first[0])
		}
	case errors.Is(err, sysfs.ErrMalformed):
		warnf("card%d: local_cpulist unreadable: %v", n, err)
	}
	d.probeTiles(&c, warnf)
	d.probeFiles(&c, renders, warnf)
	if hw := sysfs.Numbered(filepath.Join(dev, "hwmon"), "hwmon"); len(hw) > 0 {
		c.hwmon = filepath.Join(dev, "hwmon", "hwmon"+strconv.Itoa(hw[0]))
	}
	c.xelink = d.hasFabric(dev)
	return c, true
}

// probeTiles reads the tiles and memory of c.
func (d *Driver) probeTiles(c *card, warnf func(string, ...any)) {
	dev := filepath.Join(c.dir, "device")
	if ids := sysfs.Numbered(filepath.Join(dev), "tile"); len(ids) > 0 { // xe
		c.tileLayout = "tile"
		for _, k := range ids {
			tdir := filepath.Join(dev, "tile"+strconv.Itoa(k))
			t := tile{id: k}
			if v, err := sysfs.Size(filepath.Join(tdir, "physical_vram_size_bytes")); err == nil && v >= 0 {
				t.memMiB = v >> 20
			}
			if gts := sysfs.Numbered(tdir, "gt"); len(gts) > 0 {
				t.idle = filepath.Join(tdir, "gt"+strconv.Itoa(gts[0]), "gtidle", "idle_residency_ms")
			}
			c.tiles = append(c.tiles, t)
		}
	} else if ids := sysfs.Numbered(filepath.Join(c.dir, "gt"), "gt"); len(ids) > 0 { // i915
		c.tileLayout = "gt"
		for _, k := range ids {
			gdir := filepath.Join(c.dir, "gt", "gt"+strconv.Itoa(k))
			t := tile{id: k, idle: filepath.Join(gdir, "rc6_residency_ms")}
			if sysfs.Exists(filepath.Join(gdir, "error_counter")) {
				t.errors = filepath.Join(gdir, "error_counter")
			}
			c.tiles = append(c.tiles, t)
		}
	} else {
		warnf("card%d: no tiles in sysfs (neither gt/gt<K> nor device/tile<K>); %d from the model table", c.minor, c.model.Tiles)
		for k := range c.model.Tiles {
			c.tiles = append(c.tiles, tile{id: k})
		}
	}
	if len(c.tiles) > maxTiles {
		warnf("card%d: %d tiles, listing the first %d", c.minor, len(c.tiles), maxTiles)
		c.tiles = c.tiles[:maxTiles]
	}
	var sum int64
	known := true
	for _, t := range c.tiles {
		sum += t.memMiB
		known = known && t.memMiB > 0
	}
	switch total, err := sysfs.Int(filepath.Join(c.dir, "lmem_total_bytes")); {
	case known:
		c.memMiB = sum
	case err == nil && total > 0:
		c.memMiB, c.lmem = total>>20, true
	default:
		c.memMiB = c.model.MemoryMiB
		warnf("card%d: device memory not exposed; %d MiB from the %s table entry", c.minor, c.memMiB, c.model.Product)
	}
	if !known {
		for k := range c.tiles {
			c.tiles[k].memMiB = c.memMiB / int64(len(c.tiles))
		}
	}
}

// probeFiles reads the device files of c.
func (d *Driver) probeFiles(c *card, renders map[string]gres.DeviceFile, warnf func(string, ...any)) {
	f := gres.DeviceFile{Path: "/dev/dri/card" + strconv.Itoa(c.minor), Kind: gres.CharDevice, Major: drmMajor, Minor: int64(c.minor)}
	if major, minor, err := sysfs.DevNumber(filepath.Join(c.dir, "dev")); err == nil {
		f.Major, f.Minor = major, minor
	} else {
		warnf("card%d: %v; assuming %d:%d", c.minor, err, f.Major, f.Minor)
	}
	c.files = append(c.files, f)
	if r, ok := renders[c.pci]; ok {
		c.files = append(c.files, r)
	} else {
		warnf("card%d: no render node for %s; compute jobs need one", c.minor, c.pci)
	}
}

// hasFabric reports whether the PCI device dev has an Intel Accelerator
// Fabric auxiliary device (i915.iaf.<K> with an iaf_fabric_id).
func (d *Driver) hasFabric(dev string) bool {
	ents, err := os.ReadDir(dev)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".iaf.") && sysfs.Exists(filepath.Join(dev, e.Name(), "iaf_fabric_id")) {
			return true
		}
	}
	return false
}
