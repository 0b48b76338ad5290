// Package amdtest builds synthetic sysfs trees of AMD Instinct machines
// as gresdriver.Tree values (Machine.Tree) and writes them into a
// directory (Machine.Write), for tests of package amd (and of anything
// that schedules on AMD nodes). The trees follow the layout the Linux kernel
// documents for the amdgpu and amdkfd drivers — the KFD topology under
// /sys/class/kfd/kfd/topology (CPU and GPU nodes with their properties,
// memory banks and io_links), the PCI device directories under
// /sys/devices/pci<domain>:<bus>/… with the amdgpu attributes (vendor,
// device, numa_node, local_cpulist, mem_info_vram_*, gpu_busy_percent,
// current/available_compute_partition, current_memory_partition, ras/,
// hwmon/), the DRM render nodes (/sys/class/drm/renderD<minor>, links to
// their devices) and /sys/bus/pci/devices links — so that a reader of
// the documentation, not of package amd, decides what is where.
//
// This package is deliberately independent of package amd: it encodes
// values the way the kernel prints them (decimal KFD properties,
// location_id = bus<<8 | device<<3 | function, hexadecimal PCI ids with a
// 0x prefix, "ue: N" / "ce: N" RAS counters, microwatts in hwmon) and
// shares no code with the parser.
//
// It imports gres/gresdriver (and so testing); import it only from tests
// and test helpers.
package amdtest

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gres/gresdriver"
)

// Vendor is AMD's PCI vendor id.
const Vendor = 0x1002

// KFD io-link types of the CRAT table, as printed in io_links/*/properties.
const (
	IOLinkPCIe = 2  // CRAT_IOLINK_TYPE_PCIEXPRESS
	IOLinkXGMI = 11 // CRAT_IOLINK_TYPE_XGMI
)

// GPU describes one physical AMD GPU (one PCI function; an MI250X
// package is two GPUs, one per GCD).
type GPU struct {
	DeviceID    uint16 // PCI device id, e.g. 0x74a1 (MI300X)
	Bus         string // PCI address "0000:05:00.0"
	NUMA        int    // NUMA node of the PCI device; -1 writes "-1"
	CUs         int    // compute units (KFD simd_count = CUs × 4)
	VRAMBytes   uint64 // mem_info_vram_total
	UniqueID    uint64 // KFD unique_id
	ProductName string // product_name ("" writes no file)
	// RootComplex and Switch place the device on the PCI tree: devices
	// with the same RootComplex share a host bridge (pci<domain>:<bus>
	// directory); devices with the same RootComplex and a Switch >= 0 sit
	// below one PCIe switch (root port → upstream port → one downstream
	// port each).
	RootComplex int
	Switch      int
	// RenderMinors are the DRM render minors of the GPU's KFD nodes: one
	// for an unpartitioned GPU, one per compute partition otherwise (the
	// first on the PCI device, the others on amdgpu_xcp platform devices).
	RenderMinors []int
	// ComputePartition and MemoryPartition are the modes written to
	// current_compute_partition ("SPX", "CPX" …) and
	// current_memory_partition ("NPS1" …); "" writes no file.
	ComputePartition, MemoryPartition string
	// AvailablePartitions is available_compute_partition ("" none).
	AvailablePartitions string
	// BusyPercent, VRAMUsedBytes and PowerMicroWatts are the telemetry
	// files; PowerMicroWatts < 0 writes no hwmon power file. EnergyMicroJoules
	// >= 0 writes hwmon energy1_input.
	BusyPercent       int
	VRAMUsedBytes     uint64
	PowerMicroWatts   int64
	EnergyMicroJoules int64
	// RAS blocks written under ras/ as <block>_err_count ("ue: 0\nce: 0").
	RAS []string
}

// Link is a direct xGMI connection between two GPUs of a Machine (by
// their position in Machine.GPUs), made of Links parallel xGMI links. Two
// GPUs of one hive without a Link are reachable only through other GPUs.
type Link struct {
	A, B, Links int
}

// Machine is a node: sockets, NUMA nodes, CPUs and GPUs.
type Machine struct {
	Sockets       int // CPU packages
	NUMAPerSocket int // NUMA nodes per socket (one KFD CPU node each)
	CPUsPerNUMA   int // logical CPUs per NUMA node, numbered consecutively
	GPUs          []GPU
	// XGMI lists the direct links of the hive. With Hive set every GPU
	// is in that one hive and has an xGMI io_link to every GPU node of
	// another GPU (to a GPU it has no Link with, one whose max_bandwidth
	// is 0); Hive 0 writes no xGMI io_links.
	XGMI []Link
	Hive uint64 // KFD hive_id of the hive
	// LinkMBps is the bandwidth of one xGMI link in MB/s (KFD's
	// min_bandwidth; max_bandwidth is Links × LinkMBps).
	LinkMBps int
	// KFDDev is the /sys/class/kfd/kfd/dev content, e.g. "235:0".
	KFDDev string
}

// Tree returns the machine's sysfs tree (paths under the root:
// "sys/class/kfd/…"), or an error naming what makes the machine
// impossible.
func (m Machine) Tree() (gresdriver.Tree, error) {
	var t gresdriver.Tree
	if err := m.write(&t); err != nil {
		return gresdriver.Tree{}, err
	}
	return t, nil
}

// Write writes the machine's sysfs tree below root (root/sys/...).
func (m Machine) Write(root string) error {
	t, err := m.Tree()
	if err != nil {
		return err
	}
	return t.Write(root)
}

// props formats KFD "key value" lines.
func props(kv ...any) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, "%s %v\n", kv[i], kv[i+1])
	}
	return b.String()
}

const kfdTopo = "sys/class/kfd/kfd/topology"

// parseBus splits "dddd:bb:dd.f" into its hexadecimal fields.
func parseBus(s string) (dom, bus, dev, fn uint64, ok bool) {
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == ':' || r == '.' })
	if len(parts) != 4 {
		return 0, 0, 0, 0, false
	}
	vals := make([]uint64, 4)
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 16, 32)
		if err != nil {
			return 0, 0, 0, 0, false
		}
		vals[i] = v
	}
	return vals[0], vals[1], vals[2], vals[3], vals[1] <= 0xff && vals[2] <= 0x1f && vals[3] <= 7
}

// PCIDir returns the sysfs directory of g's PCI device relative to the
// tree root (sys/devices/pci…/…/<bus>).
func (g GPU) PCIDir() string {
	dom, b, _, _, _ := parseBus(g.Bus)
	base := uint64(g.RootComplex) * 0x20
	rc := fmt.Sprintf("pci%04x:%02x", dom, base)
	if g.Switch < 0 {
		return path.Join("sys/devices", rc, fmt.Sprintf("%04x:%02x:%02x.1", dom, base, 1), g.Bus)
	}
	sw := uint64(g.Switch)
	rp := fmt.Sprintf("%04x:%02x:%02x.1", dom, base, 2+sw)
	usp := fmt.Sprintf("%04x:%02x:00.0", dom, base+1+2*sw)
	dsp := fmt.Sprintf("%04x:%02x:%02x.0", dom, base+2+2*sw, b&0x1f)
	return path.Join("sys/devices", rc, rp, usp, dsp, g.Bus)
}

// RASFile returns the path, relative to the tree root, of g's RAS error
// counter file of block (e.g. "umc").
func (g GPU) RASFile(block string) string {
	return path.Join(g.PCIDir(), "ras", block+"_err_count")
}

// WriteRAS rewrites g's RAS counter of block below root with ue
// uncorrectable and ce correctable errors (fault injection).
func (g GPU) WriteRAS(root, block string, ue, ce uint64) error {
	return os.WriteFile(filepath.Join(root, filepath.FromSlash(g.RASFile(block))), fmt.Appendf(nil, "ue: %d\nce: %d\n", ue, ce), 0o644)
}

func (m Machine) numaNodes() int { return m.Sockets * m.NUMAPerSocket }

func (m Machine) numaCPUs(n int) (lo, hi int) {
	return n * m.CPUsPerNUMA, n*m.CPUsPerNUMA + m.CPUsPerNUMA - 1
}

func (m Machine) write(w *gresdriver.Tree) error {
	if m.Sockets <= 0 || m.NUMAPerSocket <= 0 || m.CPUsPerNUMA <= 0 {
		return errors.New("amdtest: machine needs sockets, NUMA nodes and CPUs")
	}
	for _, g := range m.GPUs {
		if _, _, _, _, ok := parseBus(g.Bus); !ok {
			return fmt.Errorf("amdtest: GPU bus id %q: want dddd:bb:dd.f", g.Bus)
		}
		if len(g.RenderMinors) == 0 {
			return fmt.Errorf("amdtest: GPU %s: no render minors", g.Bus)
		}
	}
	// CPUs and NUMA nodes.
	for n := range m.numaNodes() {
		lo, hi := m.numaCPUs(n)
		w.File(fmt.Sprintf("sys/devices/system/node/node%d/cpulist", n), fmt.Sprintf("%d-%d\n", lo, hi))
		for c := lo; c <= hi; c++ {
			w.File(fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/physical_package_id", c), fmt.Sprintf("%d\n", n/m.NUMAPerSocket))
		}
	}
	w.File("sys/class/kfd/kfd/dev", m.KFDDev+"\n")
	w.File(kfdTopo+"/generation_id", "1\n")
	w.File(kfdTopo+"/system_properties", props("platform_oem", 0, "platform_id", 0, "platform_rev", 0))

	// KFD node numbering: CPU nodes first (one per NUMA node), then one
	// node per GPU render device, GPUs in order.
	node := 0
	for n := range m.numaNodes() {
		lo, _ := m.numaCPUs(n)
		dir := fmt.Sprintf("%s/nodes/%d", kfdTopo, node)
		w.File(dir+"/gpu_id", "0\n")
		w.File(dir+"/name", "\n")
		w.File(dir+"/properties", props("cpu_cores_count", m.CPUsPerNUMA, "simd_count", 0, "mem_banks_count", 1,
			"caches_count", 0, "io_links_count", 0, "p2p_links_count", 0, "cpu_core_id_base", lo, "simd_id_base", 0,
			"max_waves_per_simd", 0, "lds_size_in_kb", 0, "gds_size_in_kb", 0, "num_gws", 0, "wave_front_size", 0,
			"array_count", 0, "simd_arrays_per_engine", 0, "cu_per_simd_array", 0, "simd_per_cu", 0,
			"max_slots_scratch_cu", 0, "gfx_target_version", 0, "vendor_id", 0, "device_id", 0, "location_id", 0,
			"domain", 0, "drm_render_minor", 0, "hive_id", 0, "num_sdma_engines", 0, "num_sdma_xgmi_engines", 0,
			"num_sdma_queues_per_engine", 0, "num_cp_queues", 0, "max_engine_clk_ccompute", 3700))
		w.File(dir+"/mem_banks/0/properties", props("heap_type", 0, "size_in_bytes", uint64(256)<<30, "flags", 0, "width", 64, "mem_clk_max", 4800))
		node++
	}
	type gnode struct {
		gpu, part, node, minor int
	}
	var gnodes []gnode
	for gi, g := range m.GPUs {
		for p, minor := range g.RenderMinors {
			gnodes = append(gnodes, gnode{gi, p, node, minor})
			node++
		}
	}
	links := map[[2]int]int{}
	for _, l := range m.XGMI {
		links[[2]int{l.A, l.B}], links[[2]int{l.B, l.A}] = l.Links, l.Links
	}
	xcp := 0
	for _, gn := range gnodes {
		g := m.GPUs[gn.gpu]
		dom, bus, dev, fn, _ := parseBus(g.Bus) // checked above
		dir := fmt.Sprintf("%s/nodes/%d", kfdTopo, gn.node)
		parts := len(g.RenderMinors)
		w.File(dir+"/gpu_id", fmt.Sprintf("%d\n", 40000+gn.node*1117))
		w.File(dir+"/name", "gfx942\n")
		w.File(dir+"/properties", props("cpu_cores_count", 0, "simd_count", g.CUs*4/parts, "mem_banks_count", 1,
			"caches_count", 0, "io_links_count", 0, "p2p_links_count", 0, "cpu_core_id_base", 0,
			"simd_id_base", 2147487744+gn.node*1000, "max_waves_per_simd", 8, "lds_size_in_kb", 64, "gds_size_in_kb", 0,
			"num_gws", 64, "wave_front_size", 64, "array_count", 4, "simd_arrays_per_engine", 1,
			"cu_per_simd_array", 10, "simd_per_cu", 4, "max_slots_scratch_cu", 32, "gfx_target_version", 90402,
			"vendor_id", Vendor, "device_id", g.DeviceID, "location_id", bus<<8|dev<<3|fn, "domain", dom,
			"drm_render_minor", gn.minor, "hive_id", m.Hive, "num_sdma_engines", 2, "num_sdma_xgmi_engines", 6,
			"num_sdma_queues_per_engine", 8, "num_cp_queues", 24, "max_engine_clk_fcompute", 2100,
			"local_mem_size", 0, "fw_version", 177, "capability", 746332800, "debug_prop", 1495, "sdma_fw_version", 22,
			"unique_id", g.UniqueID, "num_xcc", 8/parts, "max_engine_clk_ccompute", 3700))
		w.File(dir+"/mem_banks/0/properties", props("heap_type", 1, "size_in_bytes", g.VRAMBytes/uint64(parts), "flags", 0, "width", 8192, "mem_clk_max", 1300))
		// io_links: first the PCIe link to the CPU node of its NUMA node,
		// then xGMI links to every other GPU node of the hive.
		k := 0
		cpuNode := max(g.NUMA, 0)
		w.File(fmt.Sprintf("%s/io_links/%d/properties", dir, k), props("type", IOLinkPCIe, "version_major", 0, "version_minor", 0,
			"node_from", gn.node, "node_to", cpuNode, "weight", 20, "min_latency", 0, "max_latency", 0,
			"min_bandwidth", 312, "max_bandwidth", 64000, "recommended_transfer_size", 0, "recommended_sdma_engine_id_mask", 0, "flags", 1))
		k++
		if m.Hive != 0 {
			for _, peer := range gnodes {
				if peer.gpu == gn.gpu {
					continue // partitions of one GPU: no io_link between them
				}
				n := links[[2]int{gn.gpu, peer.gpu}]
				hops, maxBW := 1, n*m.LinkMBps
				if n == 0 {
					hops = 2
				}
				w.File(fmt.Sprintf("%s/io_links/%d/properties", dir, k), props("type", IOLinkXGMI, "version_major", 0, "version_minor", 0,
					"node_from", gn.node, "node_to", peer.node, "weight", 15*hops, "min_latency", 0, "max_latency", 0,
					"min_bandwidth", m.LinkMBps, "max_bandwidth", maxBW, "recommended_transfer_size", 0,
					"recommended_sdma_engine_id_mask", 0, "flags", 1))
				k++
			}
		}
		// DRM render node.
		var devDir string
		if gn.part == 0 {
			devDir = g.PCIDir()
		} else {
			devDir = fmt.Sprintf("sys/devices/platform/amdgpu_xcp.%d", xcp)
			xcp++
			w.File(devDir+"/uevent", "DRIVER=amdgpu_xcp\n") // a platform device: no PCI attributes
		}
		rd := fmt.Sprintf("%s/drm/renderD%d", devDir, gn.minor)
		w.File(rd+"/dev", fmt.Sprintf("226:%d\n", gn.minor))
		w.Link(rd+"/device", "../..")
		rel, _ := filepath.Rel("sys/class/drm", rd)
		w.Link(fmt.Sprintf("sys/class/drm/renderD%d", gn.minor), filepath.ToSlash(rel))
	}
	for gi, g := range m.GPUs {
		d := g.PCIDir()
		w.File(d+"/vendor", fmt.Sprintf("0x%04x\n", Vendor))
		w.File(d+"/device", fmt.Sprintf("0x%04x\n", g.DeviceID))
		w.File(d+"/class", "0x120000\n")
		w.File(d+"/numa_node", fmt.Sprintf("%d\n", g.NUMA))
		cpus := "0-" + strconv.Itoa(m.numaNodes()*m.CPUsPerNUMA-1)
		if g.NUMA >= 0 {
			lo, hi := m.numaCPUs(g.NUMA)
			cpus = fmt.Sprintf("%d-%d", lo, hi)
		}
		w.File(d+"/local_cpulist", cpus+"\n")
		w.File(d+"/mem_info_vram_total", fmt.Sprintf("%d\n", g.VRAMBytes))
		w.File(d+"/mem_info_vram_used", fmt.Sprintf("%d\n", g.VRAMUsedBytes))
		w.File(d+"/gpu_busy_percent", fmt.Sprintf("%d\n", g.BusyPercent))
		if g.ProductName != "" {
			w.File(d+"/product_name", g.ProductName+"\n")
		}
		if g.ComputePartition != "" {
			w.File(d+"/current_compute_partition", g.ComputePartition+"\n")
		}
		if g.AvailablePartitions != "" {
			w.File(d+"/available_compute_partition", g.AvailablePartitions+"\n")
		}
		if g.MemoryPartition != "" {
			w.File(d+"/current_memory_partition", g.MemoryPartition+"\n")
		}
		for _, b := range g.RAS {
			w.File(g.RASFile(b), "ue: 0\nce: 0\n")
		}
		w.File(d+"/ras/features", "feature mask: 0x3fff\n")
		hw := fmt.Sprintf("%s/hwmon/hwmon%d", d, gi+2)
		w.File(hw+"/name", "amdgpu\n")
		if g.PowerMicroWatts >= 0 {
			w.File(hw+"/power1_average", fmt.Sprintf("%d\n", g.PowerMicroWatts))
		}
		if g.EnergyMicroJoules >= 0 {
			w.File(hw+"/energy1_input", fmt.Sprintf("%d\n", g.EnergyMicroJoules))
		}
		rel, _ := filepath.Rel("sys/bus/pci/devices", d)
		w.Link("sys/bus/pci/devices/"+g.Bus, filepath.ToSlash(rel))
	}
	return nil
}
