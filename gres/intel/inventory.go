package intel

import (
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/gres"
)

// inventory lays out snap's devices, links and files.
func (d *Driver) inventory(snap *snapshot, warnf func(string, ...any)) {
	inv := &snap.disc.Inventory
	for ci := range snap.cards {
		c := &snap.cards[ci]
		dev := gres.Device{Name: d.name, Type: c.model.Type, MemoryMiB: c.memMiB, PCIBusID: c.pci, NUMA: c.numa, Socket: c.socket, Cores: c.cores}
		if !d.flat || len(c.tiles) < 2 {
			dev.Index = len(inv.Devices)
			inv.Devices = append(inv.Devices, dev)
			snap.devs = append(snap.devs, devRef{card: ci, tile: -1})
			snap.disc.Files = append(snap.disc.Files, slices.Clone(c.files))
			continue
		}
		for ti, t := range c.tiles {
			tdev := dev
			tdev.Index, tdev.Type, tdev.MemoryMiB, tdev.PCIBusID = len(inv.Devices), c.model.Type+"_tile", t.memMiB, ""
			inv.Devices = append(inv.Devices, tdev)
			snap.devs = append(snap.devs, devRef{card: ci, tile: ti})
			snap.disc.Files = append(snap.disc.Files, slices.Clone(c.files))
		}
	}
	if len(inv.Devices) > gres.MaxDevices {
		warnf("%d devices, listing the first %d", len(inv.Devices), gres.MaxDevices)
		inv.Devices, snap.devs, snap.disc.Files = inv.Devices[:gres.MaxDevices], snap.devs[:gres.MaxDevices], snap.disc.Files[:gres.MaxDevices]
	}
	fabric := 0
	for _, c := range snap.cards {
		if c.xelink {
			fabric++
		}
	}
	switch {
	case fabric >= 2:
		warnf("xe link: %d cards carry an Intel Accelerator Fabric device; sysfs does not expose the port topology, so they are taken as wired all-to-all", fabric)
	case len(snap.cards) >= 2:
		warnf("xe link: not exposed by the driver (no i915.iaf device on two or more cards); links are PCIe only")
	}
	if len(inv.Devices) < 2 {
		return
	}
	for i := range inv.Devices {
		for j := i + 1; j < len(inv.Devices); j++ {
			a, b := &snap.cards[snap.devs[i].card], &snap.cards[snap.devs[j].card]
			_ = inv.SetLink(i, j, pairLink(a, b, fabric)) // positions are in range
		}
	}
}

// pairLink is the link between devices on cards a and b (the same card for
// two tiles of one card); fabric counts the cards with Xe Link.
func pairLink(a, b *card, fabric int) gres.Link {
	var l gres.Link
	switch {
	case a == b:
		return gres.Link{NVLinks: max(a.model.XeLinkPorts, 1), Fabric: gres.FabricXeLink, PCIe: gres.PCIeBoard}
	case a.numa < 0 || b.numa < 0:
	case a.numa == b.numa && (a.socket < 0 || b.socket < 0 || a.socket == b.socket):
		l.PCIe = gres.PCIeNODE
	case a.numa != b.numa:
		l.PCIe = gres.PCIeSYS
	}
	if a.xelink && b.xelink && fabric >= 2 {
		ports := min(a.model.XeLinkPorts, b.model.XeLinkPorts)
		l.NVLinks, l.Fabric = max(ports/(fabric-1), 1), gres.FabricXeLink
	}
	return l
}

// deviceName names inventory position p in messages: "card3" or
// "card3 tile1".
func (s *snapshot) deviceName(p int) string {
	r := s.devs[p]
	c := &s.cards[r.card]
	if r.tile < 0 {
		return fmt.Sprintf("card%d (%s)", c.minor, c.pci)
	}
	return fmt.Sprintf("card%d (%s) tile %d", c.minor, c.pci, c.tiles[r.tile].id)
}
