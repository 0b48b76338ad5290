//go:build cgo

package nvml

import (
	"cmp"
	"context"
	"fmt"
	"math/bits"
	"path/filepath"
	"slices"
	"strconv"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/internal/driverkit"
)

// nvidiaMajor is the character major of /dev/nvidiaN and /dev/nvidiactl.
const nvidiaMajor = 195

// nvidiactlMinor is the minor of /dev/nvidiactl.
const nvidiactlMinor = 255

// physGPU is one physical GPU as NVML enumerates it.
type physGPU struct {
	nvmlIndex int
	h         gonvml.Device
	uuid      string
	name, typ string
	bus       string // sysfs form, "" if unknown
	minor     int
	memMiB    int64
	numa      int
	socket    int
	cores     gres.CoreSet
	mig       bool      // in MIG mode: only its slices are devices
	migs      []migDev  // MIG slices, by (gi, ci)
	pos       int       // inventory position of the whole GPU; -1 in MIG mode
	link      *linkInfo // NVLink lanes; nil in MIG mode
}

// migDev is one MIG slice (a compute instance inside a GPU instance).
type migDev struct {
	h       gonvml.Device // its NVML handle (telemetry reads its memory)
	uuid    string
	gi, ci  int
	memMiB  int64
	typ     string
	profile string // "1g.10gb"; "mig" when unknown
	pos     int    // inventory position
}

// linkInfo counts one GPU's active NVLink lanes by far end.
type linkInfo struct {
	direct   map[int]int    // peer GPU (slot in snapshot.gpus) → lanes
	switches map[string]int // NVSwitch bus id ("" when unknown) → lanes
	total    int            // lanes to switches
}

// snapshot is one discovery: the physical GPUs with their NVML handles
// and the Discovery built from them. Immutable once built.
type snapshot struct {
	gpus []physGPU
	disc gres.Discovery
}

// Discover enumerates the node's GPUs through NVML and returns their
// inventory:
//
//   - every GPU not in MIG mode is a device with Index = its NVML index
//     (CUDA's PCI-bus order), Name Options.Name ("gpu"), Type from its
//     product name (NormalizeType: "h100"), UUID, memory, PCI bus id,
//     NUMA node, CPU affinity (cores) and socket;
//   - every MIG slice of a GPU in MIG mode is a device of its own, typed
//     "<gpu type>_<profile>" ("a100_3g.20gb"), indexed after all physical
//     GPUs (DeviceGetCount + ordinal, by parent, GPU instance, compute
//     instance); the parent itself is not listed;
//   - links: NVLink lanes counted per pair from each link's far end (a
//     peer GPU, or NVSwitches both GPUs reach: Link.NVSwitch), dropped
//     when NVML reports NVLink P2P unavailable (e.g. no fabric manager);
//     the host-side level from GetTopologyCommonAncestor (PIX, PXB, PHB,
//     NODE, SYS); MIG slices have no NVLink, slices of one GPU are
//     PCIeBoard;
//   - Files: /dev/nvidia<minor> (char 195) per GPU; for a MIG slice its
//     parent's file plus its GPU- and compute-instance capability files
//     (/dev/nvidia-caps/nvidia-cap<N>, minors from
//     /proc/driver/nvidia/capabilities); CommonFiles: /dev/nvidiactl and,
//     when loaded, /dev/nvidia-uvm and /dev/nvidia-uvm-tools.
//
// A GPU whose handle, UUID or minor number cannot be read is skipped;
// values NVML cannot give come from sysfs or stay unknown. Both are
// listed in Discovery.Warnings. NUMA levels that contradict the NUMA
// nodes are corrected (with a warning) so the inventory validates.
func (d *Driver) Discover(ctx context.Context) (gres.Discovery, error) {
	if err := d.begin(ctx); err != nil {
		return gres.Discovery{}, err
	}
	defer d.mu.RUnlock()
	snap, err := d.snap.Refresh(ctx, d.discover)
	if err != nil {
		return gres.Discovery{}, err
	}
	return snap.disc.Clone(), nil
}

// discover builds a snapshot. The caller holds d.mu for reading.
func (d *Driver) discover(ctx context.Context) (*snapshot, error) {
	n, ret := d.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return nil, fmt.Errorf("nvml: DeviceGetCount: %w", ret)
	}
	if n < 0 || n > gres.MaxDevices {
		return nil, fmt.Errorf("nvml: DeviceGetCount returned %d, want [0, %d]", n, gres.MaxDevices)
	}
	var warn []string
	warnf := func(format string, args ...any) { warn = append(warn, fmt.Sprintf(format, args...)) }
	snap := &snapshot{}
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h, ret := d.lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			warnf("gpu %d: skipped: DeviceGetHandleByIndex: %v", i, ret)
			continue
		}
		g, err := d.probeGPU(i, h, warnf)
		if err != nil {
			warnf("gpu %d: skipped: %v", i, err)
			continue
		}
		snap.gpus = append(snap.gpus, g)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.assignPositions(snap, n)
	if len(snap.disc.Inventory.Devices) > gres.MaxDevices {
		return nil, fmt.Errorf("nvml: %d devices (GPUs and MIG slices), at most %d", len(snap.disc.Inventory.Devices), gres.MaxDevices)
	}
	driverkit.FixSockets(snap.disc.Inventory.Devices, warnf)
	d.links(ctx, snap, warnf)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.files(snap, warnf)
	d.fabric(snap, warnf)
	snap.disc.Driver = d.version
	snap.disc.Warnings = warn
	if err := snap.disc.Validate(); err != nil {
		return nil, fmt.Errorf("nvml: discovered inventory does not validate: %w", err)
	}
	return snap, nil
}

// probeGPU reads one physical GPU.
func (d *Driver) probeGPU(idx int, h gonvml.Device, warnf func(string, ...any)) (physGPU, error) {
	g := physGPU{nvmlIndex: idx, h: h, numa: -1, socket: -1, pos: -1}
	var ret gonvml.Return
	if g.uuid, ret = h.GetUUID(); ret != gonvml.SUCCESS || g.uuid == "" {
		return g, fmt.Errorf("GetUUID: %w", ret)
	}
	if g.minor, ret = h.GetMinorNumber(); ret != gonvml.SUCCESS || g.minor < 0 || g.minor >= nvidiactlMinor-1 {
		return g, fmt.Errorf("GetMinorNumber: %d, %w", g.minor, ret)
	}
	if g.name, ret = h.GetName(); ret != gonvml.SUCCESS {
		warnf("gpu %d: GetName: %v; device left untyped", idx, ret)
	} else if g.typ = d.typeOf(g.name); g.typ != "" && !validType(g.typ) {
		warnf("gpu %d: type %q for %q is not a valid GRES type; device left untyped", idx, g.typ, g.name)
		g.typ = ""
	}
	if m, ret := h.GetMemoryInfo(); ret == gonvml.SUCCESS {
		g.memMiB = int64(m.Total >> 20)
	} else {
		warnf("gpu %d: GetMemoryInfo: %v", idx, ret)
	}
	if p, ret := h.GetPciInfo(); ret == gonvml.SUCCESS {
		g.bus = NormalizeBusID(cString(p.BusId[:]))
		if g.bus == "" {
			g.bus = NormalizeBusID(cString(p.BusIdLegacy[:]))
		}
	}
	if g.bus == "" {
		warnf("gpu %d: PCI bus id unknown", idx)
	}
	if d.has["nvmlDeviceGetNumaNodeId"] {
		if n, ret := h.GetNumaNodeId(); ret == gonvml.SUCCESS && n >= 0 && n <= gres.MaxNUMANode {
			g.numa = n
		}
	}
	if g.numa < 0 {
		g.numa = d.host.pciNUMANode(g.bus)
	}
	if words, ret := h.GetCpuAffinity(d.maxCPUs); ret == gonvml.SUCCESS {
		g.cores = coresFromMask(words, d.maxCPUs)
	}
	if g.cores.IsEmpty() {
		if c, ok := d.host.pciLocalCPUs(g.bus); ok {
			g.cores = c
		} else if g.numa >= 0 {
			g.cores, _ = d.host.nodeCPUs(g.numa)
		}
	}
	if g.numa < 0 {
		warnf("gpu %d: NUMA node unknown", idx)
	}
	if g.cores.IsEmpty() {
		warnf("gpu %d: CPU affinity unknown", idx)
	}
	g.socket = d.host.socketOf(g.cores, g.numa)
	if d.has["nvmlDeviceGetMigMode"] {
		if cur, _, ret := h.GetMigMode(); ret == gonvml.SUCCESS && cur == gonvml.DEVICE_MIG_ENABLE {
			g.mig = true
			d.probeMIG(&g, warnf)
		}
	}
	return g, nil
}

// coresFromMask converts NVML's CPU bitmask (words of bits.UintSize) into
// a CoreSet, ignoring CPUs at or above maxCPUs.
func coresFromMask(words []uint, maxCPUs int) gres.CoreSet {
	var ids []int
	for w, word := range words {
		for word != 0 {
			b := bits.TrailingZeros(word)
			word &= word - 1
			if id := w*bits.UintSize + b; id < maxCPUs && id <= gres.MaxCoreID {
				ids = append(ids, id)
			}
		}
	}
	c, _ := gres.CoreSetOf(ids...) // ids are in range
	return c
}

// probeMIG reads the MIG slices of a GPU in MIG mode.
func (d *Driver) probeMIG(g *physGPU, warnf func(string, ...any)) {
	maxN, ret := g.h.GetMaxMigDeviceCount()
	if ret != gonvml.SUCCESS {
		warnf("gpu %d: MIG mode but GetMaxMigDeviceCount: %v; no slices listed", g.nvmlIndex, ret)
		return
	}
	for k := range maxN {
		m, ret := g.h.GetMigDeviceHandleByIndex(k)
		if ret == gonvml.ERROR_NOT_FOUND || ret == gonvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if ret != gonvml.SUCCESS {
			warnf("gpu %d: MIG device %d: GetMigDeviceHandleByIndex: %v", g.nvmlIndex, k, ret)
			continue
		}
		s := migDev{h: m, pos: -1}
		var ret1, ret2, ret3 gonvml.Return
		s.uuid, ret1 = m.GetUUID()
		s.gi, ret2 = m.GetGpuInstanceId()
		s.ci, ret3 = m.GetComputeInstanceId()
		if ret1 != gonvml.SUCCESS || ret2 != gonvml.SUCCESS || ret3 != gonvml.SUCCESS || s.uuid == "" {
			warnf("gpu %d: MIG device %d: skipped: UUID/instance ids unreadable (%v, %v, %v)", g.nvmlIndex, k, ret1, ret2, ret3)
			continue
		}
		if mem, ret := m.GetMemoryInfo(); ret == gonvml.SUCCESS {
			s.memMiB = int64(mem.Total >> 20)
		}
		profile := ""
		if a, ret := m.GetAttributes(); ret == gonvml.SUCCESS {
			profile = MIGProfile(a.GpuInstanceSliceCount, a.ComputeInstanceSliceCount, a.MemorySizeMB)
			if s.memMiB == 0 {
				s.memMiB = int64(a.MemorySizeMB)
			}
		}
		if profile == "" {
			warnf("gpu %d: MIG device %s: profile unknown; typed %q", g.nvmlIndex, s.uuid, MIGType(g.typ, "mig"))
			profile = "mig"
		}
		s.typ, s.profile = MIGType(g.typ, profile), profile
		if !validType(s.typ) {
			s.typ = ""
		}
		g.migs = append(g.migs, s)
	}
	slices.SortFunc(g.migs, func(a, b migDev) int { return cmp.Or(cmp.Compare(a.gi, b.gi), cmp.Compare(a.ci, b.ci)) })
	if len(g.migs) == 0 {
		warnf("gpu %d: MIG mode with no MIG devices; nothing allocatable on it", g.nvmlIndex)
	}
}

// assignPositions lays out the inventory devices: whole GPUs by NVML
// index, then MIG slices numbered from count.
func (d *Driver) assignPositions(snap *snapshot, count int) {
	inv := &snap.disc.Inventory
	for i := range snap.gpus {
		g := &snap.gpus[i]
		if g.mig {
			continue
		}
		g.pos = len(inv.Devices)
		inv.Devices = append(inv.Devices, gres.Device{
			Index: g.nvmlIndex, Name: d.name, Type: g.typ, UUID: g.uuid, MemoryMiB: g.memMiB,
			PCIBusID: g.bus, NUMA: g.numa, Socket: g.socket, Cores: g.cores,
		})
	}
	next := count
	for i := range snap.gpus {
		g := &snap.gpus[i]
		for k := range g.migs {
			s := &g.migs[k]
			s.pos = len(inv.Devices)
			inv.Devices = append(inv.Devices, gres.Device{
				Index: next, Name: d.name, Type: s.typ, UUID: s.uuid, MemoryMiB: s.memMiB,
				NUMA: g.numa, Socket: g.socket, Cores: g.cores,
			})
			inv.MIG = append(inv.MIG, gres.MIGInstance{Device: next, Parent: g.nvmlIndex, ParentUUID: g.uuid,
				Profile: s.profile, GPUInstance: s.gi, ComputeInstance: s.ci})
			next++
		}
	}
}

// pcieLevel maps NVML's topology level onto gres.PCIeLevel.
func pcieLevel(l gonvml.GpuTopologyLevel) gres.PCIeLevel {
	switch l {
	case gonvml.TOPOLOGY_INTERNAL:
		return gres.PCIeBoard
	case gonvml.TOPOLOGY_SINGLE:
		return gres.PCIePIX
	case gonvml.TOPOLOGY_MULTIPLE:
		return gres.PCIePXB
	case gonvml.TOPOLOGY_HOSTBRIDGE:
		return gres.PCIePHB
	case gonvml.TOPOLOGY_NODE:
		return gres.PCIeNODE
	case gonvml.TOPOLOGY_SYSTEM:
		return gres.PCIeSYS
	}
	return gres.PCIeUnknown
}

// nvlinks counts g's enabled NVLink lanes by far end.
func (d *Driver) nvlinks(g *physGPU, byBus map[string]int, warnf func(string, ...any)) *linkInfo {
	li := &linkInfo{direct: map[int]int{}, switches: map[string]int{}}
	unknown := 0
	for l := range gonvml.NVLINK_MAX_LINKS {
		st, ret := g.h.GetNvLinkState(l)
		if ret != gonvml.SUCCESS || st != gonvml.FEATURE_ENABLED {
			continue
		}
		remote := ""
		if p, ret := g.h.GetNvLinkRemotePciInfo(l); ret == gonvml.SUCCESS {
			remote = NormalizeBusID(cString(p.BusId[:]))
		}
		typ, tret := gonvml.NVLINK_DEVICE_TYPE_UNKNOWN, gonvml.ERROR_FUNCTION_NOT_FOUND
		if d.has["nvmlDeviceGetNvLinkRemoteDeviceType"] {
			typ, tret = g.h.GetNvLinkRemoteDeviceType(l)
		}
		peer, isGPU := byBus[remote]
		isGPU = isGPU && remote != ""
		switch {
		case tret == gonvml.SUCCESS && typ == gonvml.NVLINK_DEVICE_TYPE_SWITCH:
			li.switches[remote]++
			li.total++
		case isGPU && (tret != gonvml.SUCCESS || typ == gonvml.NVLINK_DEVICE_TYPE_GPU):
			li.direct[peer]++
		case tret != gonvml.SUCCESS:
			unknown++
		}
	}
	if unknown > 0 {
		warnf("gpu %d: %d NVLink lanes to an unknown far end ignored", g.nvmlIndex, unknown)
	}
	return li
}

// switchLanes is the number of NVLink lanes two GPUs can use through the
// NVSwitches they share: per common switch the smaller lane count; when a
// switch's bus id is unknown, the smaller total.
func switchLanes(a, b *linkInfo) int {
	if a.total == 0 || b.total == 0 {
		return 0
	}
	_, ua := a.switches[""]
	_, ub := b.switches[""]
	if ua || ub {
		return min(a.total, b.total)
	}
	sum := 0
	for s, la := range a.switches {
		sum += min(la, b.switches[s])
	}
	return sum
}

// links fills the inventory's link matrix.
func (d *Driver) links(ctx context.Context, snap *snapshot, warnf func(string, ...any)) {
	inv := &snap.disc.Inventory
	n := len(inv.Devices)
	if n < 2 {
		return
	}
	byBus := map[string]int{}
	for i, g := range snap.gpus {
		if g.bus != "" {
			byBus[g.bus] = i
		}
	}
	for i := range snap.gpus {
		if g := &snap.gpus[i]; !g.mig {
			g.link = d.nvlinks(g, byBus, warnf)
		}
	}
	// Host-side level of every pair of physical GPUs.
	ng := len(snap.gpus)
	level := make([]gres.PCIeLevel, ng*ng)
	for a := range ng {
		if ctx.Err() != nil {
			return
		}
		for b := a + 1; b < ng; b++ {
			l := gres.PCIeUnknown
			if t, ret := snap.gpus[a].h.GetTopologyCommonAncestor(snap.gpus[b].h); ret == gonvml.SUCCESS {
				l = pcieLevel(t)
			}
			level[a*ng+b], level[b*ng+a] = l, l
		}
	}
	// devGPU maps an inventory position to its physical GPU slot.
	devGPU := make([]int, n)
	for i, g := range snap.gpus {
		if g.pos >= 0 {
			devGPU[g.pos] = i
		}
		for _, s := range g.migs {
			devGPU[s.pos] = i
		}
	}
	p2pWarned := false
	for p := range n {
		for q := p + 1; q < n; q++ {
			a, b := devGPU[p], devGPU[q]
			var l gres.Link
			if a == b {
				l.PCIe = gres.PCIeBoard // two slices of one GPU
			} else {
				l.PCIe = level[a*ng+b]
			}
			ga, gb := &snap.gpus[a], &snap.gpus[b]
			if ga.link != nil && gb.link != nil && a != b {
				direct := min(ga.link.direct[b], gb.link.direct[a])
				if ga.link.direct[b] != gb.link.direct[a] {
					warnf("gpus %d and %d: asymmetric NVLink counts %d and %d; using %d", ga.nvmlIndex, gb.nvmlIndex, ga.link.direct[b], gb.link.direct[a], direct)
				}
				sw := switchLanes(ga.link, gb.link)
				if direct+sw > 0 && d.has["nvmlDeviceGetP2PStatus"] {
					if st, ret := ga.h.GetP2PStatus(gb.h, gonvml.P2P_CAPS_INDEX_NVLINK); ret == gonvml.SUCCESS && st != gonvml.P2P_STATUS_OK {
						if !p2pWarned {
							warnf("gpus %d and %d: NVLink up but NVLink P2P unavailable (status %d; is the fabric manager running?); treating as no NVLink", ga.nvmlIndex, gb.nvmlIndex, st)
							p2pWarned = true
						}
						direct, sw = 0, 0
					}
				}
				l.NVLinks = min(direct+sw, gres.MaxNVLinks)
				l.NVSwitch = sw > 0
			}
			l.PCIe = consistentLevel(l.PCIe, &inv.Devices[p], &inv.Devices[q], warnf)
			if l != (gres.Link{}) {
				_ = inv.SetLink(p, q, l) // positions are in range
			}
		}
	}
}

// consistentLevel corrects a host-side level that contradicts the NUMA
// nodes or sockets of the two devices (which the inventory rejects).
func consistentLevel(l gres.PCIeLevel, a, b *gres.Device, warnf func(string, ...any)) gres.PCIeLevel {
	diff := a.NUMA >= 0 && b.NUMA >= 0 && a.NUMA != b.NUMA || a.Socket >= 0 && b.Socket >= 0 && a.Socket != b.Socket
	switch {
	case l >= gres.PCIeNODE && diff:
		warnf("devices %d and %d: topology %v across NUMA nodes %d and %d; using SYS", a.Index, b.Index, l, a.NUMA, b.NUMA)
		return gres.PCIeSYS
	case l == gres.PCIeSYS && a.NUMA >= 0 && a.NUMA == b.NUMA:
		warnf("devices %d and %d: topology SYS within NUMA node %d; using NODE", a.Index, b.Index, a.NUMA)
		return gres.PCIeNODE
	}
	return l
}

// files fills the device files.
func (d *Driver) files(snap *snapshot, warnf func(string, ...any)) {
	inv := &snap.disc.Inventory
	if len(inv.Devices) == 0 {
		return
	}
	dev := func(name string) string { return filepath.Join(cmp.Or(d.opts.DevRoot, "/dev"), name) }
	snap.disc.Files = make([][]gres.DeviceFile, len(inv.Devices))
	majors, err := d.host.charMajors()
	if err != nil {
		warnf("reading %s: %v; nvidia-uvm and MIG capability files unknown", filepath.Join(d.host.procfs, "devices"), err)
	}
	for _, g := range snap.gpus {
		gf := gres.DeviceFile{Path: dev("nvidia" + strconv.Itoa(g.minor)), Kind: gres.CharDevice, Major: nvidiaMajor, Minor: int64(g.minor)}
		if g.pos >= 0 {
			snap.disc.Files[g.pos] = []gres.DeviceFile{gf}
		}
		for _, s := range g.migs {
			fs := []gres.DeviceFile{gf}
			capMajor, ok := majors["nvidia-caps"]
			if !ok {
				warnf("MIG device %s: nvidia-caps major unknown; only %s listed", s.uuid, gf.Path)
			} else {
				for _, ci := range []int{-1, s.ci} {
					m, err := d.host.capabilityMinor(g.minor, s.gi, ci)
					if err != nil {
						warnf("MIG device %s: capability file: %v", s.uuid, err)
						continue
					}
					fs = append(fs, gres.DeviceFile{Path: dev("nvidia-caps/nvidia-cap" + strconv.FormatInt(m, 10)), Kind: gres.CharDevice, Major: capMajor, Minor: m})
				}
			}
			snap.disc.Files[s.pos] = fs
		}
	}
	snap.disc.CommonFiles = []gres.DeviceFile{{Path: dev("nvidiactl"), Kind: gres.CharDevice, Major: nvidiaMajor, Minor: nvidiactlMinor}}
	if m, ok := majors["nvidia-uvm"]; ok {
		snap.disc.CommonFiles = append(snap.disc.CommonFiles,
			gres.DeviceFile{Path: dev("nvidia-uvm"), Kind: gres.CharDevice, Major: m, Minor: 0},
			gres.DeviceFile{Path: dev("nvidia-uvm-tools"), Kind: gres.CharDevice, Major: m, Minor: 1})
	} else if err == nil {
		warnf("nvidia-uvm not loaded (not in /proc/devices); CUDA jobs need it")
	}
}
