package scheduler

import (
	"slices"

	"github.com/sluicehq/sluice/gres"
)

// Device inventories are most of a large configuration (a GPU node's
// devices and their link matrix) and repeat from node to node, so the
// value codec writes gres.Inventory by hand: an inventory equal to the
// last one written in the section is a back-reference. inventoryFields,
// deviceFields and linkFields are the field counts the encoding knows; a
// test fails when a type grows without it.
const (
	inventoryFields = 5
	deviceFields    = 9
	linkFields      = 4
)

// inventory writes inv: 0 for the same as the last inventory written,
// else 1 and the inventory.
func (e *senc) inventory(inv *gres.Inventory) {
	if e.lastInv != nil && sameInventory(e.lastInv, inv) {
		e.byte(0)
		return
	}
	e.lastInv = inv
	ext := len(inv.Shares) > 0 || len(inv.MIG) > 0 || !inv.Fabric.IsZero()
	if ext {
		e.byte(2) // minor 2: the sharing extension follows the links
	} else {
		e.byte(1)
	}
	defer func() {
		if ext {
			e.inventoryExt(inv)
		}
	}()
	e.uvarint(uint64(len(inv.Devices)))
	for k := range inv.Devices {
		d := &inv.Devices[k]
		e.int(d.Index)
		e.sym(d.Name)
		e.sym(d.Type)
		e.str(d.UUID)
		e.varint(d.MemoryMiB)
		e.str(d.PCIBusID)
		e.int(d.NUMA)
		e.int(d.Socket)
		e.cores = d.Cores.AppendTo(e.cores[:0])
		e.ints(e.cores)
	}
	if inv.Links == nil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(len(inv.Links)) + 1)
	for _, row := range inv.Links {
		e.uvarint(uint64(len(row)))
		for _, l := range row {
			e.int(l.NVLinks)
			e.bool(l.NVSwitch)
			e.uvarint(uint64(l.PCIe) | uint64(l.Fabric)<<8)
		}
	}
}

// sameInventory reports whether two inventories are equal.
func sameInventory(a, b *gres.Inventory) bool {
	return slices.EqualFunc(a.Devices, b.Devices, func(x, y gres.Device) bool {
		return x.Index == y.Index && x.Name == y.Name && x.Type == y.Type && x.UUID == y.UUID && x.MemoryMiB == y.MemoryMiB &&
			x.PCIBusID == y.PCIBusID && x.NUMA == y.NUMA && x.Socket == y.Socket && x.Cores.Equal(y.Cores)
	}) && (a.Links == nil) == (b.Links == nil) && slices.EqualFunc(a.Links, b.Links, slices.Equal[[]gres.Link]) &&
		slices.Equal(a.Shares, b.Shares) && slices.Equal(a.MIG, b.MIG) && a.Fabric == b.Fabric
}

// inventory reads what senc.inventory wrote. A back-reference is a deep
// copy of the last inventory read, so that no two nodes share slices.
func (d *sdec) inventory() gres.Inventory {
	tag := d.byte()
	switch tag {
	case 0:
		if d.lastInv == nil {
			d.fail("inventory refers back to none")
			return gres.Inventory{}
		}
		return cloneInventory(d.lastInv)
	case 1, 2:
	default:
		d.fail("bad inventory tag")
		return gres.Inventory{}
	}
	var inv gres.Inventory
	if n := d.count(); n > 0 {
		inv.Devices = make([]gres.Device, n)
		for k := range inv.Devices {
			dv := &inv.Devices[k]
			dv.Index = d.int()
			dv.Name = d.sym()
			dv.Type = d.sym()
			dv.UUID = d.str()
			dv.MemoryMiB = d.varint()
			dv.PCIBusID = d.str()
			dv.NUMA = d.int()
			dv.Socket = d.int()
			if ids := d.ints(); len(ids) > 0 && d.err == nil {
				cs, err := gres.CoreSetOf(ids...)
				if err != nil {
					d.fail("device %d cores: %v", dv.Index, err)
				}
				dv.Cores = cs
			}
		}
	}
	if n := d.count1(); n > 0 && d.err == nil {
		inv.Links = make([][]gres.Link, n-1)
		for i := range inv.Links {
			m := d.count()
			if d.err != nil {
				break
			}
			inv.Links[i] = make([]gres.Link, m)
			for k := range inv.Links[i] {
				l := &inv.Links[i][k]
				l.NVLinks = d.int()
				l.NVSwitch = d.bool()
				v := d.uvarint()
				l.PCIe, l.Fabric = gres.PCIeLevel(v&0xff), gres.LinkFabric(v>>8)
			}
		}
	}
	if tag == 2 {
		d.inventoryExt(&inv)
	}
	d.lastInv = &inv
	return inv
}

// cloneInventory returns a deep copy of inv.
func cloneInventory(inv *gres.Inventory) gres.Inventory {
	out := gres.Inventory{Devices: slices.Clone(inv.Devices), Shares: slices.Clone(inv.Shares), MIG: slices.Clone(inv.MIG), Fabric: inv.Fabric}
	if inv.Links != nil {
		out.Links = make([][]gres.Link, len(inv.Links))
		for i := range inv.Links {
			out.Links[i] = slices.Clone(inv.Links[i])
		}
	}
	return out
}

// inventoryExt writes the parts of an inventory added in snapshot minor
// 2: device shares, MIG instances and the NVLink fabric.
func (e *senc) inventoryExt(inv *gres.Inventory) {
	e.uvarint(uint64(len(inv.Shares)))
	for _, sh := range inv.Shares {
		e.int(sh.Device)
		e.int(sh.Shards)
		e.int(sh.MPS)
	}
	e.uvarint(uint64(len(inv.MIG)))
	for _, m := range inv.MIG {
		e.int(m.Device)
		e.int(m.Parent)
		e.str(m.ParentUUID)
		e.sym(m.Profile)
		e.int(m.GPUInstance)
		e.int(m.ComputeInstance)
	}
	e.str(inv.Fabric.ClusterUUID)
	e.uvarint(uint64(inv.Fabric.CliqueID))
}

// inventoryExt reads what senc.inventoryExt wrote.
func (d *sdec) inventoryExt(inv *gres.Inventory) {
	if n := d.count(); n > 0 && d.err == nil {
		inv.Shares = make([]gres.DeviceShares, n)
		for k := range inv.Shares {
			inv.Shares[k] = gres.DeviceShares{Device: d.int(), Shards: d.int(), MPS: d.int()}
		}
	}
	if n := d.count(); n > 0 && d.err == nil {
		inv.MIG = make([]gres.MIGInstance, n)
		for k := range inv.MIG {
			inv.MIG[k] = gres.MIGInstance{Device: d.int(), Parent: d.int(), ParentUUID: d.str(), Profile: d.sym(), GPUInstance: d.int(), ComputeInstance: d.int()}
		}
	}
	inv.Fabric.ClusterUUID = d.str()
	if c := d.uvarint(); c > 1<<32-1 {
		d.fail("NVLink clique %d out of range", c)
	} else {
		inv.Fabric.CliqueID = uint32(c)
	}
}
