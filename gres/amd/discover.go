package amd

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/internal/driverkit"
	"github.com/sluicehq/sluice/gres/internal/sysfs"
)

// AMD's PCI vendor id and the major number of DRM device files.
const (
	vendorAMD = 0x1002
	drmMajor  = 226
)

// maxMinor is the largest Linux minor number (20 bits); a
// drm_render_minor above it (KFD prints -1 as 4294967295) means "none".
const maxMinor = 1<<20 - 1

// snapshot is one discovery: the Discovery handed out plus what health
// and telemetry need to find each device's files again.
type snapshot struct {
	disc  gres.Discovery
	info  []DeviceInfo
	devs  []devPaths // by inventory position
	phys  []physGPU
	links []kfdLinks // by inventory position
}

// devPaths are the sysfs directories of one inventory device.
type devPaths struct {
	phys      int    // index into snapshot.phys
	render    string // sys/class/drm/renderD<minor>
	partition bool   // a compute partition, not a whole GPU
}

// physGPU is one physical GPU (one PCI function) and its KFD nodes.
type physGPU struct {
	bus      string
	pciDir   string // its PCI device directory ("" when not found)
	realPath string // pciDir with symlinks resolved, relative to sys/devices ("" unknown)
	nodes    []int  // inventory positions of its KFD nodes
	numa     int
	socket   int
	cores    gres.CoreSet
	vramMiB  int64
	typ      string // GRES type of the whole GPU
	devID    uint16
	compute  string // current_compute_partition
	memory   string // current_memory_partition
}

// kfdGPU is one GPU node of the KFD topology.
type kfdGPU struct {
	node     int
	gpuID    uint64
	devID    uint16
	bus      string
	minor    int64
	uniqueID uint64
	cus      int
	fbBytes  uint64 // frame-buffer memory banks
}

// kfdLinks are the io_links of one GPU node that lead to other GPUs.
type kfdLinks map[int]int // far KFD node → xGMI links (0: reachable only through other GPUs)

// discover builds a snapshot from sysfs.
func (d *Driver) discover(ctx context.Context) (*snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var warns []string
	warnf := func(format string, args ...any) { warns = append(warns, fmt.Sprintf(format, args...)) }
	dir := d.nodesDir()
	ids, others, err := sysfs.ReadNumbered(dir, "")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	for _, o := range others {
		warnf("kfd topology: %q is not a node number; ignored", o)
	}
	var gpus []kfdGPU
	minors := map[int64]int{} // render minor → KFD node
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		g, ok, err := d.readNode(filepath.Join(dir, strconv.Itoa(id)), id)
		switch {
		case err != nil:
			warnf("kfd node %d: %v; skipped", id, err)
		case !ok:
		case minors[g.minor] != 0:
			warnf("kfd node %d: render minor %d already belongs to kfd node %d; skipped", id, g.minor, minors[g.minor]-1)
		default:
			minors[g.minor] = id + 1
			gpus = append(gpus, g)
		}
	}
	if len(gpus) > gres.MaxDevices {
		return nil, fmt.Errorf("amd: %d GPU nodes in the KFD topology, at most %d", len(gpus), gres.MaxDevices)
	}
	s := &snapshot{}
	d.buildDevices(s, gpus, warnf)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	driverkit.FixSockets(s.disc.Inventory.Devices, warnf)
	d.buildLinks(s, gpus, ids, warnf)
	d.buildFiles(s, gpus, warnf)
	s.disc.Driver = "amdgpu"
	if v, err := sysfs.Line(filepath.Join(d.root, "sys/module/amdgpu/version")); err == nil && v != "" {
		s.disc.Driver += " " + v
	}
	s.disc.Warnings = warns
	if err := s.disc.Validate(); err != nil {
		return nil, fmt.Errorf("amd: discovery does not validate: %w", err)
	}
	return s, nil
}

// readNode reads one KFD node; ok is false for a CPU node.
func (d *Driver) readNode(dir string, id int) (kfdGPU, bool, error) {
	p, err := readProps(filepath.Join(dir, "properties"))
	if err != nil {
		return kfdGPU{}, false, err
	}
	simd, ok := p.get("simd_count")
	switch {
	case !ok:
		return kfdGPU{}, false, fmt.Errorf("%w: no simd_count", ErrMalformed)
	case simd == 0:
		return kfdGPU{}, false, nil // a CPU node
	}
	g := kfdGPU{node: id}
	vendor, err := p.bounded("vendor_id", 0xffff)
	if err != nil {
		return g, false, err
	}
	if vendor != vendorAMD {
		return g, false, fmt.Errorf("vendor_id 0x%04x is not AMD (0x1002)", vendor)
	}
	dev, err := p.bounded("device_id", 0xffff)
	if err != nil {
		return g, false, err
	}
	g.devID = uint16(dev)
	dom, err := p.bounded("domain", 0xffff)
	if err != nil {
		return g, false, err
	}
	loc, err := p.bounded("location_id", 0xffff)
	if err != nil {
		return g, false, err
	}
	g.bus = fmt.Sprintf("%04x:%02x:%02x.%x", dom, loc>>8, loc>>3&0x1f, loc&7)
	minor, ok := p.get("drm_render_minor")
	if !ok || minor > maxMinor {
		return g, false, fmt.Errorf("no DRM render node (drm_render_minor %d)", minor)
	}
	g.minor = int64(minor)
	g.uniqueID, _ = p.get("unique_id")
	if per, ok := p.get("simd_per_cu"); ok && per > 0 && simd/per <= 1<<20 {
		g.cus = int(simd / per)
	}
	if id, err := sysfs.Uint(filepath.Join(dir, "gpu_id")); err == nil {
		g.gpuID = id
	}
	banks := sysfs.Numbered(filepath.Join(dir, "mem_banks"), "")
	for _, b := range banks {
		bp, err := readProps(filepath.Join(dir, "mem_banks", strconv.Itoa(b), "properties"))
		if err != nil {
			continue
		}
		if h, _ := bp.get("heap_type"); h == 1 || h == 2 { // frame buffer, public or private
			sz, _ := bp.get("size_in_bytes")
			g.fbBytes += min(sz, 1<<60)
		}
	}
	return g, true, nil
}

// buildDevices groups KFD nodes by physical GPU and lays out the
// inventory in KFD node order.
func (d *Driver) buildDevices(s *snapshot, gpus []kfdGPU, warnf func(string, ...any)) {
	byBus := map[string]int{}
	for _, g := range gpus {
		if _, ok := byBus[g.bus]; !ok {
			byBus[g.bus] = len(s.phys)
			s.phys = append(s.phys, d.readPhys(g, warnf))
		}
	}
	uuids := map[uint64]int{}
	for _, g := range gpus {
		if g.uniqueID != 0 {
			uuids[g.uniqueID]++
		}
	}
	for pos, g := range gpus {
		pi := byBus[g.bus]
		ph := &s.phys[pi]
		ph.nodes = append(ph.nodes, pos)
		dev := gres.Device{Index: pos, Name: d.name, Type: ph.typ, NUMA: ph.numa, Socket: ph.socket, Cores: ph.cores, MemoryMiB: ph.vramMiB}
		if g.uniqueID != 0 && uuids[g.uniqueID] == 1 {
			dev.UUID = fmt.Sprintf("GPU-%016x", g.uniqueID)
		}
		s.disc.Inventory.Devices = append(s.disc.Inventory.Devices, dev)
		s.info = append(s.info, DeviceInfo{Index: pos, Node: g.node, GPUID: g.gpuID, RenderMinor: g.minor, PCIBusID: g.bus,
			DeviceID: g.devID, ComputePartition: ph.compute, MemoryPartition: ph.memory})
		s.devs = append(s.devs, devPaths{phys: pi, render: filepath.Join(d.root, "sys/class/drm", "renderD"+strconv.FormatInt(g.minor, 10))})
	}
	for pi := range s.phys {
		ph := &s.phys[pi]
		n := len(ph.nodes)
		partitioned := n > 1 || ph.compute != "" && ph.compute != "SPX"
		for k, pos := range ph.nodes {
			s.info[pos].Partition, s.info[pos].Partitions = k, n
			dev := &s.disc.Inventory.Devices[pos]
			if !partitioned {
				dev.PCIBusID = ph.bus
				continue
			}
			s.devs[pos].partition = true
			mode := ph.compute
			if !partitionModes[mode] || mode == "SPX" {
				warnf("gpu %s: %d KFD nodes but compute partition mode %q; partitions typed %q", ph.bus, n, mode, partitionType(ph.typ, "xcp"))
				mode = "xcp"
			}
			dev.Type = partitionType(ph.typ, mode)
			if fb := gpus[pos].fbBytes; fb > 0 {
				dev.MemoryMiB = int64(fb >> 20)
			} else {
				dev.MemoryMiB = ph.vramMiB / int64(n)
			}
		}
		if partitioned {
			if u := gpus[ph.nodes[0]].uniqueID; u != 0 && uuids[u] > 1 {
				warnf("gpu %s: %d partitions share unique_id %016x; they have no UUID", ph.bus, n, u)
			}
			warnf("gpu %s: compute partition mode %s, memory partition mode %s: devices %s are its partitions",
				ph.bus, ph.compute, ph.memory, indexList(s.disc.Inventory.Devices, ph.nodes))
		}
	}
	for _, u := range slices.Sorted(maps.Keys(uuids)) {
		if c := uuids[u]; c > 1 && !sharedByOneGPU(gpus, u) {
			warnf("unique_id %016x shared by %d KFD nodes of different PCI devices; they have no UUID", u, c)
		}
	}
}

// sharedByOneGPU reports whether every node with unique id u belongs to
// one physical GPU.
func sharedByOneGPU(gpus []kfdGPU, u uint64) bool {
	bus := ""
	for _, g := range gpus {
		if g.uniqueID == u {
			if bus != "" && g.bus != bus {
				return false
			}
			bus = g.bus
		}
	}
	return true
}

func indexList(devs []gres.Device, pos []int) string {
	var b strings.Builder
	for k, p := range pos {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(devs[p].Index))
	}
	return b.String()
}

// readPhys reads the PCI device attributes of the GPU of KFD node g.
func (d *Driver) readPhys(g kfdGPU, warnf func(string, ...any)) physGPU {
	ph := physGPU{bus: g.bus, numa: -1, socket: -1, devID: g.devID}
	for _, dir := range []string{
		filepath.Join(d.root, "sys/bus/pci/devices", g.bus),
		filepath.Join(d.root, "sys/class/drm", "renderD"+strconv.FormatInt(g.minor, 10), "device"),
	} {
		if v, err := sysfs.HexID(filepath.Join(dir, "vendor")); err == nil && v == vendorAMD {
			ph.pciDir = dir
			break
		}
	}
	name := ""
	if ph.pciDir == "" {
		warnf("gpu %s: PCI device not found in sysfs; NUMA node, CPUs, memory and partition mode unknown", g.bus)
	} else {
		if id, err := sysfs.HexID(filepath.Join(ph.pciDir, "device")); err == nil && id != g.devID {
			warnf("gpu %s: PCI device id 0x%04x but KFD device_id 0x%04x; using KFD's", g.bus, id, g.devID)
		}
		ph.numa = sysfs.NUMANode(filepath.Join(ph.pciDir, "numa_node"))
		if c, ok := sysfs.CPUs(filepath.Join(ph.pciDir, "local_cpulist")); ok {
			ph.cores = c
		}
		if b, err := sysfs.Uint(filepath.Join(ph.pciDir, "mem_info_vram_total")); err == nil {
			ph.vramMiB = int64(min(b, 1<<62) >> 20)
		}
		ph.compute, _ = sysfs.Line(filepath.Join(ph.pciDir, "current_compute_partition"))
		ph.memory, _ = sysfs.Line(filepath.Join(ph.pciDir, "current_memory_partition"))
		ph.compute, ph.memory = strings.ToUpper(sysfs.Clip(ph.compute)), strings.ToUpper(sysfs.Clip(ph.memory))
		name, _ = sysfs.Line(filepath.Join(ph.pciDir, "product_name"))
		if r, err := filepath.EvalSymlinks(ph.pciDir); err == nil {
			if base, err := filepath.EvalSymlinks(filepath.Join(d.root, "sys/devices")); err == nil {
				if rel, err := filepath.Rel(base, r); err == nil && !strings.HasPrefix(rel, "..") {
					ph.realPath = rel
				}
			}
		}
	}
	if ph.vramMiB == 0 {
		ph.vramMiB = int64(g.fbBytes >> 20) // the KFD node's frame-buffer banks
	}
	if ids := ph.cores.AppendTo(nil); len(ids) > 0 {
		ph.socket = sysfs.CPUSocket(filepath.Join(d.root, "sys"), ids[0])
	}
	typ, known := TypeOf(g.devID, g.cus, name)
	if !known {
		warnf("gpu %s: unknown AMD device id 0x%04x (%q); typed %q", g.bus, g.devID, sysfs.Clip(name), typ)
	}
	ph.typ = typ
	return ph
}

// buildFiles sets the device files: each device's render node, and
// /dev/kfd for all.
func (d *Driver) buildFiles(s *snapshot, gpus []kfdGPU, warnf func(string, ...any)) {
	s.disc.Files = make([][]gres.DeviceFile, len(gpus))
	for pos, g := range gpus {
		f := gres.DeviceFile{Path: "/dev/dri/renderD" + strconv.FormatInt(g.minor, 10), Kind: gres.CharDevice, Major: drmMajor, Minor: g.minor}
		if ma, mi, err := sysfs.DevNumber(filepath.Join(s.devs[pos].render, "dev")); err == nil {
			if ma != drmMajor || mi != g.minor {
				warnf("gpu %d: %s is %d:%d, not %d:%d; using the dev file's numbers", pos, f.Path, ma, mi, drmMajor, g.minor)
			}
			f.Major, f.Minor = ma, mi
		} else if !os.IsNotExist(err) {
			warnf("gpu %d: %v; assuming %d:%d", pos, err, drmMajor, g.minor)
		}
		s.disc.Files[pos] = []gres.DeviceFile{f}
	}
	if len(gpus) == 0 {
		return
	}
	ma, mi, err := sysfs.DevNumber(filepath.Join(d.root, "sys/class/kfd/kfd/dev"))
	if err != nil {
		warnf("/dev/kfd: device number unknown (%v); not among the common files, though every GPU job needs it", err)
		return
	}
	s.disc.CommonFiles = []gres.DeviceFile{{Path: "/dev/kfd", Kind: gres.CharDevice, Major: ma, Minor: mi}}
}
