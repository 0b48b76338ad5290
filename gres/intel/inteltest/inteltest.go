// Package inteltest describes fixture machines with Intel data-centre
// GPUs as compact Go values and writes their sysfs trees, laid out as the
// kernel documents them (the PCI device directory and its attributes, the
// DRM class devices card<N> and renderD<M> with their dev and device
// attributes, the i915 driver's per-GT directories or the xe driver's
// per-tile directories, the hwmon energy interface, the CPU topology),
// for tests of gres/intel and of anything built on it. Values are made
// up where the ABI leaves them free (PCI addresses, fabric ids); none
// is copied from a real machine.
//
// It imports gres/gresdriver (and so testing); import it only from tests.
package inteltest

import (
	"fmt"
	"path"
	"strconv"

	"github.com/sluicehq/sluice/gres/gresdriver"
)

// Card is one GPU card (one PCI function) of a Machine.
type Card struct {
	DeviceID uint16 // PCI device id, e.g. 0x0BD5 (Max 1550)
	PCI      string // PCI address, "0000:18:00.0"
	NUMA     int    // numa_node; -1 writes -1 (unknown)
	Tiles    int    // tiles (i915 gt/gt<K>, xe tile<K>)
	// TileVRAMBytes is each tile's physical_vram_size_bytes (xe only; 0
	// writes none).
	TileVRAMBytes int64
	// LmemTotalBytes is lmem_total_bytes, with lmem_avail_bytes equal to
	// it (i915 only, as the i915 backport driver exposes them; 0 writes
	// none).
	LmemTotalBytes int64
	// XeLink attaches an Intel Accelerator Fabric auxiliary device
	// (i915.iaf.<N> with iaf_fabric_id and iaf_socket_id).
	XeLink bool
	// ErrorCounters writes the i915 per-GT error_counter directory.
	ErrorCounters bool
}

// Machine is one fixture node.
type Machine struct {
	// Driver is the cards' kernel driver: "i915" or "xe".
	Driver string
	// Sockets × CoresPerSocket × 2 hardware threads make the CPUs; each
	// socket is one NUMA node. CPU c of socket s is s*CoresPerSocket+c,
	// its sibling thread that plus Sockets*CoresPerSocket (Linux's
	// numbering on Intel servers).
	Sockets, CoresPerSocket int
	// BMC puts the baseboard management controller's VGA function
	// (ASPEED 0x1a03:0x2000, ast driver, no render node) first, as card0,
	// so that the GPUs' card and render numbers differ.
	BMC   bool
	Cards []Card
}

// BMCPCI is the PCI address of the BMC's VGA function.
const BMCPCI = "0000:03:00.0"

// Max1550Node is an 8 × Data Center GPU Max 1550 node (two tiles of
// 64 GiB each per card, Xe Link on every card, error counters), i915
// driver, two 52-core sockets, four cards per socket, and a BMC.
func Max1550Node() Machine {
	m := Machine{Driver: "i915", Sockets: 2, CoresPerSocket: 52, BMC: true}
	for i, bus := range []int{0x18, 0x29, 0x3a, 0x4b, 0x9a, 0xab, 0xbc, 0xcd} {
		m.Cards = append(m.Cards, Card{DeviceID: 0x0BD5, PCI: fmt.Sprintf("0000:%02x:00.0", bus), NUMA: i / 4, Tiles: 2,
			LmemTotalBytes: 128 << 30, XeLink: true, ErrorCounters: true})
	}
	return m
}

// Max1550NodeXe is Max1550Node under the xe driver: per-tile
// directories with their VRAM sizes, no Xe Link (xe does not expose
// it), no lmem or error counter files.
func Max1550NodeXe() Machine {
	m := Max1550Node()
	m.Driver = "xe"
	for i := range m.Cards {
		c := &m.Cards[i]
		c.TileVRAMBytes, c.LmemTotalBytes, c.XeLink, c.ErrorCounters = 64<<30, 0, false, false
	}
	return m
}

// Flex170Node is a 4 × Data Center GPU Flex 170 node (one 16 GiB tile
// per card, no Xe Link), xe driver, two 32-core sockets, two cards per
// socket, and a BMC.
func Flex170Node() Machine {
	m := Machine{Driver: "xe", Sockets: 2, CoresPerSocket: 32, BMC: true}
	for i, bus := range []int{0x4d, 0x66, 0xca, 0xe3} {
		m.Cards = append(m.Cards, Card{DeviceID: 0x56C0, PCI: fmt.Sprintf("0000:%02x:00.0", bus), NUMA: i / 2, Tiles: 1, TileVRAMBytes: 16 << 30})
	}
	return m
}

// CardMinor is the DRM card number of Cards[i] (card<N>).
func (m Machine) CardMinor(i int) int {
	if m.BMC {
		return i + 1
	}
	return i
}

// RenderMinor is the render node minor of Cards[i] (renderD<M>): 128,
// 129 … for the GPUs in card order (the BMC's ast driver has no render
// node, so these differ from 128 + the card number).
func (m Machine) RenderMinor(i int) int { return 128 + i }

// PCIDir is the relative path of a PCI function's sysfs directory.
func PCIDir(pci string) string {
	bus, _ := strconv.ParseUint(pci[5:7], 16, 8)
	parent := fmt.Sprintf("%02x", max(bus, 1)-1)
	return path.Join("sys/devices", "pci0000:"+parent, "0000:"+parent+":01.0", pci)
}

// CardDir is the relative path of Cards[i]'s DRM card directory (the
// target of sys/class/drm/card<N>).
func (m Machine) CardDir(i int) string {
	return path.Join(PCIDir(m.Cards[i].PCI), "drm", "card"+strconv.Itoa(m.CardMinor(i)))
}

// ErrorCounter is the relative path of one of tile t's i915 error
// counters, e.g. name "fatal_eu_grf".
func (m Machine) ErrorCounter(i, t int, name string) string {
	return path.Join(m.CardDir(i), "gt", "gt"+strconv.Itoa(t), "error_counter", name)
}

// IdleResidency is the relative path of tile t's idle residency counter
// (ms): i915 gt/gt<K>/rc6_residency_ms, xe tile<K>/gt<K>/gtidle/idle_residency_ms.
func (m Machine) IdleResidency(i, t int) string {
	if m.Driver == "xe" {
		return path.Join(PCIDir(m.Cards[i].PCI), "tile"+strconv.Itoa(t), "gt"+strconv.Itoa(t), "gtidle", "idle_residency_ms")
	}
	return path.Join(m.CardDir(i), "gt", "gt"+strconv.Itoa(t), "rc6_residency_ms")
}

// Hwmon is the relative path of Cards[i]'s hwmon directory.
func (m Machine) Hwmon(i int) string {
	return path.Join(PCIDir(m.Cards[i].PCI), "hwmon", "hwmon"+strconv.Itoa(2+i))
}

// Tree returns the machine's sysfs tree (paths under the root, so
// "sys/class/drm/card1" …).
func (m Machine) Tree() gresdriver.Tree {
	var t gresdriver.Tree
	nthreads := 2 * m.Sockets * m.CoresPerSocket
	for cpu := range nthreads {
		socket := cpu % (m.Sockets * m.CoresPerSocket) / m.CoresPerSocket
		t.File(fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu), fmt.Sprintf("%d\n", socket))
	}
	if m.BMC {
		dir := PCIDir(BMCPCI)
		pciFunction(&t, dir, BMCPCI, 0x1a03, 0x2000, "ast", 0, m.cpuList(0))
		drmMinor(&t, dir, "card0", 0)
	}
	for i, c := range m.Cards {
		m.card(&t, i, c)
	}
	return t
}

// cpuList is socket s's CPUs in local_cpulist form.
func (m Machine) cpuList(s int) string {
	n := m.Sockets * m.CoresPerSocket
	a := s * m.CoresPerSocket
	return fmt.Sprintf("%d-%d,%d-%d", a, a+m.CoresPerSocket-1, n+a, n+a+m.CoresPerSocket-1)
}

// pciFunction writes a PCI function's directory.
func pciFunction(t *gresdriver.Tree, dir, pci string, vendor, device uint16, driver string, numa int, cpus string) {
	t.File(dir+"/vendor", fmt.Sprintf("0x%04x\n", vendor))
	t.File(dir+"/device", fmt.Sprintf("0x%04x\n", device))
	t.File(dir+"/class", "0x038000\n")
	t.File(dir+"/numa_node", fmt.Sprintf("%d\n", numa))
	t.File(dir+"/local_cpulist", cpus+"\n")
	t.File(dir+"/uevent", fmt.Sprintf("DRIVER=%s\nPCI_CLASS=38000\nPCI_ID=%04X:%04X\nPCI_SUBSYS_ID=%04X:0000\nPCI_SLOT_NAME=%s\nMODALIAS=pci:v%08Xd%08Xsv%08Xsd00000000bc03sc80i00\n",
		driver, vendor, device, vendor, pci, vendor, device, vendor))
	t.Link(dir+"/driver", "../../../../bus/pci/drivers/"+driver)
}

// drmMinor writes a DRM class device (name "card1", "renderD128") under
// PCI directory dir, with its class link.
func drmMinor(t *gresdriver.Tree, dir, name string, minor int) {
	d := dir + "/drm/" + name
	t.File(d+"/dev", fmt.Sprintf("226:%d\n", minor))
	t.File(d+"/uevent", fmt.Sprintf("MAJOR=226\nMINOR=%d\nDEVNAME=dri/%s\nDEVTYPE=drm_minor\n", minor, name))
	t.Link(d+"/device", "../../../"+path.Base(dir))
	t.Link("sys/class/drm/"+name, "../../"+d[len("sys/"):])
}

// card writes Cards[i].
func (m Machine) card(t *gresdriver.Tree, i int, c Card) {
	dir := PCIDir(c.PCI)
	numa := c.NUMA
	cpus := ""
	if numa >= 0 {
		cpus = m.cpuList(numa)
	} else {
		cpus = m.cpuList(0) + "," + m.cpuList(m.Sockets-1)
	}
	pciFunction(t, dir, c.PCI, 0x8086, c.DeviceID, m.Driver, numa, cpus)
	drmMinor(t, dir, "card"+strconv.Itoa(m.CardMinor(i)), m.CardMinor(i))
	drmMinor(t, dir, "renderD"+strconv.Itoa(m.RenderMinor(i)), m.RenderMinor(i))
	cardDir := m.CardDir(i)
	for k := range c.Tiles {
		if m.Driver == "xe" {
			td := path.Join(dir, "tile"+strconv.Itoa(k))
			if c.TileVRAMBytes > 0 {
				t.File(td+"/physical_vram_size_bytes", fmt.Sprintf("0x%x\n", c.TileVRAMBytes))
			}
			t.File(m.IdleResidency(i, k), "0\n")
			t.File(path.Join(td, "gt"+strconv.Itoa(k), "gtidle", "name"), fmt.Sprintf("gt%d-rc\n", k))
			continue
		}
		gd := path.Join(cardDir, "gt", "gt"+strconv.Itoa(k))
		t.File(gd+"/id", fmt.Sprintf("%d\n", k))
		t.File(m.IdleResidency(i, k), "0\n")
		t.File(gd+"/rps_max_freq_mhz", "1600\n")
		if c.ErrorCounters {
			for _, name := range []string{"correctable_eu_grf", "correctable_l3_sng", "fatal_eu_grf", "fatal_l3_double", "fatal_sram"} {
				t.File(m.ErrorCounter(i, k, name), "0\n")
			}
		}
	}
	if c.LmemTotalBytes > 0 {
		t.File(cardDir+"/lmem_total_bytes", fmt.Sprintf("%d\n", c.LmemTotalBytes))
		t.File(cardDir+"/lmem_avail_bytes", fmt.Sprintf("%d\n", c.LmemTotalBytes))
	}
	hw := m.Hwmon(i)
	t.File(hw+"/name", m.Driver+"\n")
	t.File(hw+"/energy1_input", "0\n")
	t.File(hw+"/power1_max", "600000000\n")
	if c.XeLink {
		iaf := path.Join(dir, fmt.Sprintf("i915.iaf.%d", i))
		t.File(iaf+"/iaf_fabric_id", fmt.Sprintf("0x%x\n", 0x1000000+i))
		t.File(iaf+"/iaf_socket_id", fmt.Sprintf("%d\n", i))
	}
}
