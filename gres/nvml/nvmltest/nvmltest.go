//go:build cgo

package nvmltest

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
)

// ErrNotRepresentable reports an inventory the mock cannot reproduce.
var ErrNotRepresentable = errors.New("nvmltest: inventory not representable")

// SwitchesPerFabric is the number of NVSwitches each NVSwitch fabric of a
// Server has; a GPU's switch lanes are spread round-robin over them.
const SwitchesPerFabric = 4

// Major numbers WriteProcfs puts in /proc/devices.
const (
	UVMMajor  = 510 // nvidia-uvm
	CapsMajor = 236 // nvidia-caps
)

// Server is a go-nvml mock of one GPU server (an nvml.Interface). Its
// exported mutators are safe for concurrent use with a driver using it.
type Server struct {
	*server.Server
	// Inventory is the inventory the server was built from.
	Inventory gres.Inventory
	// GPUs are the mock devices, in inventory order (NVML index = position).
	GPUs []*server.Device

	model    gpus.Config
	pos      map[*server.Device]int
	lanes    [][]lane // per device, per NVLink
	mu       sync.Mutex
	queue    []nvml.EventData
	waitErr  nvml.Return
	lost     map[int]bool
	remap    map[int]bool
	noP2P    bool
	missing  map[string]bool
	masks    map[int]uint64
	migs     map[int][]*MIGDevice
	freed    int
	eventSet int
	tel      map[int]*Telemetry         // per GPU position; see telemetry.go
	fabric   map[int]nvml.GpuFabricInfo // per GPU position; see SetFabric
}

// lane is one NVLink of a GPU: its far end.
type lane struct {
	typ nvml.IntNvLinkDeviceType
	bus string // NVML form
}

// MIGDevice is a mock MIG slice.
type MIGDevice struct {
	*mock.Device
	UUID     string
	GI, CI   int
	Profile  nvml.GpuInstanceProfileInfo
	Parent   *server.Device
	GIMinor  int64 // capability minors WriteProcfs writes
	CIMinor  int64
	attrs    nvml.DeviceAttributes
	memBytes uint64
}

// nvmlBus turns "0000:1b:00.0" into NVML's "00000000:1B:00.0".
func nvmlBus(sysfs string) string {
	return "0000" + strings.ToUpper(sysfs)
}

func busArray(s string) [32]int8 {
	var a [32]int8
	for i := 0; i < len(s) && i < 31; i++ {
		a[i] = int8(s[i])
	}
	return a
}

// New builds a server whose GPUs are all model (name, memory, MIG
// profiles) with the identities, NUMA nodes, CPU affinity and links of
// inv. inv must be valid, with indices 0..n-1, and its NVSwitch lanes
// must be consistent (a pair's lanes equal the smaller of the two GPUs'
// largest NVSwitch lane counts, as on real fabrics); otherwise New fails
// with ErrNotRepresentable.
func New(inv gres.Inventory, model gpus.Config) (*Server, error) {
	if err := inv.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotRepresentable, err)
	}
	inv = inv.Clone()
	n := len(inv.Devices)
	for i, d := range inv.Devices {
		if d.Index != i {
			return nil, fmt.Errorf("%w: device at position %d has index %d; want indices 0..n-1", ErrNotRepresentable, i, d.Index)
		}
		if inv.Devices[i].PCIBusID == "" {
			inv.Devices[i].PCIBusID = fmt.Sprintf("0000:%02x:00.0", i+1)
		}
		if inv.Devices[i].UUID == "" {
			inv.Devices[i].UUID = fmt.Sprintf("GPU-00000000-0000-4000-8000-%012d", i)
		}
	}
	s := &Server{
		Inventory: inv, model: model, pos: map[*server.Device]int{},
		lost: map[int]bool{}, remap: map[int]bool{}, missing: map[string]bool{},
		masks: map[int]uint64{}, migs: map[int][]*MIGDevice{}, tel: map[int]*Telemetry{},
		fabric: map[int]nvml.GpuFabricInfo{},
	}
	s.Server = server.NewServerWithGPUs("550.54.15", "12.550.54.15", 12040, gpus.Multiple(n, model)...)
	for i := range n {
		d := s.Server.Devices[i].(*server.Device)
		d.UUID = inv.Devices[i].UUID
		d.PciBusID = inv.Devices[i].PCIBusID
		s.GPUs = append(s.GPUs, d)
		s.pos[d] = i
	}
	if err := s.layLanes(); err != nil {
		return nil, err
	}
	for i := range n {
		s.setDeviceFuncs(i)
		s.setTelemetryFuncs(i)
	}
	s.setServerFuncs()
	return s, nil
}

// DGXH100 returns a mock DGX H100 (gpuserver.DGXH100: 8 × H100 SXM5
// on one NVSwitch fabric, 18 lanes each, two sockets).
func DGXH100() *Server { return must(New(gpuserver.DGXH100(), gpus.H100_SXM5_80GB)) }

// DGXA100 returns a mock DGX A100 (8 × A100 SXM4 40 GB, 12 lanes each into
// the NVSwitch fabric, PCIe pairs, two sockets).
func DGXA100() *Server { return must(New(gpuserver.DGXA100(), gpus.A100_SXM4_40GB)) }

// PCIeA100Pairs returns a mock 8 × A100 PCIe server with NVLink bridges
// joining GPUs in pairs (12 direct lanes per pair).
func PCIeA100Pairs() *Server { return must(New(gpuserver.PCIeA100Pairs(), gpus.A100_PCIE_80GB)) }

// GB200 returns a mock GB200 NVL72 compute tray (gpuserver.GB200Node: 4 ×
// GB200 on the rack's NVSwitch fabric, 18 lanes each, two Grace sockets).
func GB200() *Server { return must(New(gpuserver.GB200Node(), GB200Model())) }

// GB200Model returns a GPU model for GB200 (go-nvml has no GB200 mock
// config): name "NVIDIA GB200", 186 GB, no MIG profiles.
func GB200Model() gpus.Config {
	return gpus.Config{Name: "NVIDIA GB200", Architecture: nvml.DEVICE_ARCH_BLACKWELL, MemoryMB: 190464, CudaMajor: 10, PciDeviceId: 0x294110DE}
}

func must(s *Server, err error) *Server {
	if err != nil {
		panic(fmt.Sprintf("nvmltest: fixture: %v", err)) // a bug in this package
	}
	return s
}

// layLanes computes every GPU's NVLinks from the link matrix.
func (s *Server) layLanes() error {
	inv := &s.Inventory
	n := len(inv.Devices)
	// Fabrics: connected components of NVSwitch pairs.
	fabric := make([]int, n)
	for i := range fabric {
		fabric[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for fabric[i] != i {
			fabric[i] = fabric[fabric[i]]
			i = fabric[i]
		}
		return i
	}
	swLanes := make([]int, n)
	for i := range n {
		for j := range n {
			if l := inv.Link(i, j); l.NVSwitch {
				fabric[find(i)] = find(j)
				swLanes[i] = max(swLanes[i], l.NVLinks)
			}
		}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if l := inv.Link(i, j); l.NVSwitch && l.NVLinks != min(swLanes[i], swLanes[j]) {
				return fmt.Errorf("%w: NVSwitch pair %d-%d has %d lanes, want min(%d, %d)", ErrNotRepresentable, i, j, l.NVLinks, swLanes[i], swLanes[j])
			}
			if l := inv.Link(i, j); !l.NVSwitch && l.NVLinks > 0 && swLanes[i] > 0 && swLanes[j] > 0 && find(i) == find(j) {
				return fmt.Errorf("%w: pair %d-%d has direct lanes but shares an NVSwitch fabric", ErrNotRepresentable, i, j)
			}
		}
	}
	s.lanes = make([][]lane, n)
	fabricID := map[int]int{}
	for i := range n {
		var ls []lane
		for j := range n {
			if l := inv.Link(i, j); !l.NVSwitch && l.NVLinks > 0 {
				for range l.NVLinks {
					ls = append(ls, lane{typ: nvml.NVLINK_DEVICE_TYPE_GPU, bus: nvmlBus(inv.Devices[j].PCIBusID)})
				}
			}
		}
		f, ok := fabricID[find(i)]
		if !ok && swLanes[i] > 0 {
			f = len(fabricID)
			fabricID[find(i)] = f
		}
		for k := range swLanes[i] {
			bus := fmt.Sprintf("%08X:%02X:00.0", 0x1000+f, 0xc0+k%SwitchesPerFabric)
			ls = append(ls, lane{typ: nvml.NVLINK_DEVICE_TYPE_SWITCH, bus: bus})
		}
		if len(ls) > nvml.NVLINK_MAX_LINKS {
			return fmt.Errorf("%w: device %d needs %d NVLinks, NVML has %d", ErrNotRepresentable, i, len(ls), nvml.NVLINK_MAX_LINKS)
		}
		s.lanes[i] = ls
	}
	return nil
}

func levelOf(l gres.PCIeLevel) (nvml.GpuTopologyLevel, bool) {
	switch l {
	case gres.PCIeBoard:
		return nvml.TOPOLOGY_INTERNAL, true
	case gres.PCIePIX:
		return nvml.TOPOLOGY_SINGLE, true
	case gres.PCIePXB:
		return nvml.TOPOLOGY_MULTIPLE, true
	case gres.PCIePHB:
		return nvml.TOPOLOGY_HOSTBRIDGE, true
	case gres.PCIeNODE:
		return nvml.TOPOLOGY_NODE, true
	case gres.PCIeSYS:
		return nvml.TOPOLOGY_SYSTEM, true
	}
	return 0, false
}

func maskOf(c gres.CoreSet, numCPUs int) []uint {
	words := make([]uint, max(1, (numCPUs+bits.UintSize-1)/bits.UintSize))
	for _, id := range c.AppendTo(nil) {
		if w := id / bits.UintSize; w < len(words) {
			words[w] |= 1 << (uint(id) % bits.UintSize)
		}
	}
	return words
}

func (s *Server) setDeviceFuncs(i int) {
	d := s.GPUs[i]
	dev := s.Inventory.Devices[i]
	d.GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		f, ok := s.fabric[i]
		if !ok {
			return nvml.GpuFabricInfo{}, nvml.ERROR_NOT_SUPPORTED
		}
		return f, nvml.SUCCESS
	}
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		return nvml.PciInfo{PciDeviceId: d.Config.PciDeviceId, BusId: busArray(nvmlBus(d.PciBusID))}, nvml.SUCCESS
	}
	d.GetNumaNodeIdFunc = func() (int, nvml.Return) {
		if dev.NUMA < 0 {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		return dev.NUMA, nvml.SUCCESS
	}
	d.GetCpuAffinityFunc = func(numCPUs int) ([]uint, nvml.Return) {
		if dev.Cores.IsEmpty() {
			return nil, nvml.ERROR_NOT_SUPPORTED
		}
		return maskOf(dev.Cores, numCPUs), nvml.SUCCESS
	}
	d.GetCpuAffinityWithinScopeFunc = func(numCPUs int, _ nvml.AffinityScope) ([]uint, nvml.Return) {
		return d.GetCpuAffinityFunc(numCPUs)
	}
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		if s.isLost(i) {
			return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST
		}
		return d.MemoryInfo, nvml.SUCCESS
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch {
		case s.lost[i]:
			return 0, 0, false, false, nvml.ERROR_GPU_IS_LOST
		case s.remap[i]:
			return 0, 1, false, true, nvml.SUCCESS
		}
		return 0, 0, false, false, nvml.SUCCESS
	}
	d.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
		switch {
		case len(s.lanes[i]) == 0:
			return nvml.FEATURE_DISABLED, nvml.ERROR_NOT_SUPPORTED
		case link < 0 || link >= len(s.lanes[i]):
			return nvml.FEATURE_DISABLED, nvml.ERROR_INVALID_ARGUMENT
		}
		return nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	d.GetNvLinkRemoteDeviceTypeFunc = func(link int) (nvml.IntNvLinkDeviceType, nvml.Return) {
		if link < 0 || link >= len(s.lanes[i]) {
			return nvml.NVLINK_DEVICE_TYPE_UNKNOWN, nvml.ERROR_INVALID_ARGUMENT
		}
		return s.lanes[i][link].typ, nvml.SUCCESS
	}
	d.GetNvLinkRemotePciInfoFunc = func(link int) (nvml.PciInfo, nvml.Return) {
		if link < 0 || link >= len(s.lanes[i]) {
			return nvml.PciInfo{}, nvml.ERROR_INVALID_ARGUMENT
		}
		return nvml.PciInfo{BusId: busArray(s.lanes[i][link].bus)}, nvml.SUCCESS
	}
	d.GetTopologyCommonAncestorFunc = func(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
		j, ok := s.indexOf(other)
		if !ok || j == i {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		lv, ok := levelOf(s.Inventory.Link(i, j).PCIe)
		if !ok {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		return lv, nvml.SUCCESS
	}
	d.GetP2PStatusFunc = func(other nvml.Device, idx nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
		j, ok := s.indexOf(other)
		if !ok || j == i {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		if idx == nvml.P2P_CAPS_INDEX_NVLINK {
			s.mu.Lock()
			broken := s.noP2P
			s.mu.Unlock()
			if broken || s.Inventory.Link(i, j).NVLinks == 0 {
				return nvml.P2P_STATUS_NOT_SUPPORTED, nvml.SUCCESS
			}
		}
		return nvml.P2P_STATUS_OK, nvml.SUCCESS
	}
	d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) {
		return nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError | nvml.EventTypeSingleBitEccError, nvml.SUCCESS
	}
	d.RegisterEventsFunc = func(mask uint64, _ nvml.EventSet) nvml.Return {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.masks[i] |= mask
		return nvml.SUCCESS
	}
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) {
		d.RLock()
		mode := d.MigMode
		d.RUnlock()
		if mode != nvml.DEVICE_MIG_ENABLE {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		return 7, nvml.SUCCESS
	}
	d.GetMigDeviceHandleByIndexFunc = func(k int) (nvml.Device, nvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if k < 0 || k >= 7 {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		if k >= len(s.migs[i]) {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return s.migs[i][k], nvml.SUCCESS
	}
}

func (s *Server) setServerFuncs() {
	s.Server.LookupSymbolFunc = func(symbol string) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.missing[symbol] {
			return fmt.Errorf("nvmltest: symbol %s removed", symbol)
		}
		return nil
	}
	s.Server.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		s.mu.Lock()
		s.eventSet++
		s.mu.Unlock()
		return &mock.EventSet{
			WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
				s.mu.Lock()
				defer s.mu.Unlock()
				if s.waitErr != nvml.SUCCESS {
					return nvml.EventData{}, s.waitErr
				}
				if len(s.queue) == 0 {
					return nvml.EventData{}, nvml.ERROR_TIMEOUT
				}
				e := s.queue[0]
				s.queue = s.queue[1:]
				return e, nvml.SUCCESS
			},
			FreeFunc: func() nvml.Return {
				s.mu.Lock()
				defer s.mu.Unlock()
				s.freed++
				return nvml.SUCCESS
			},
		}, nvml.SUCCESS
	}
}

func (s *Server) indexOf(d nvml.Device) (int, bool) {
	sd, ok := d.(*server.Device)
	if !ok {
		return 0, false
	}
	i, ok := s.pos[sd]
	return i, ok
}

func (s *Server) isLost(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost[i]
}

// InjectXID queues a critical-XID event on GPU i (all its instances).
func (s *Server) InjectXID(i int, xid uint64) {
	s.InjectEvent(nvml.EventData{Device: s.GPUs[i], EventType: nvml.EventTypeXidCriticalError, EventData: xid,
		GpuInstanceId: 0xFFFFFFFF, ComputeInstanceId: 0xFFFFFFFF})
}

// InjectEvent queues an arbitrary event.
func (s *Server) InjectEvent(e nvml.EventData) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, e)
}

// Pending returns the number of queued events not yet waited for.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// SetWaitError makes every EventSet.Wait return ret (nvml.SUCCESS
// restores normal behaviour).
func (s *Server) SetWaitError(ret nvml.Return) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waitErr = ret
}

// SetLost makes GPU i answer ERROR_GPU_IS_LOST (memory info, remapped
// rows) or recovers it.
func (s *Server) SetLost(i int, lost bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost[i] = lost
}

// SetRemapFailure makes GPU i report a failed row remapping, or not.
func (s *Server) SetRemapFailure(i int, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remap[i] = failed
}

// SetNVLinkP2P makes NVLink P2P available (the default) or unavailable
// between every pair, as when the NVSwitch fabric manager is not running.
func (s *Server) SetNVLinkP2P(ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noP2P = !ok
}

// RemoveSymbol makes Extensions().LookupSymbol fail for name, and makes
// the matching device method panic if called (as a missing symbol would
// end the process). Call it before the driver's Init. Supported names: nvmlDeviceGetNumaNodeId,
// nvmlDeviceGetNvLinkRemoteDeviceType, nvmlDeviceGetRemappedRows,
// nvmlDeviceGetP2PStatus, nvmlDeviceGetMigMode, nvmlDeviceGetGpuFabricInfo.
func (s *Server) RemoveSymbol(name string) {
	s.mu.Lock()
	s.missing[name] = true
	s.mu.Unlock()
	for _, d := range s.GPUs {
		switch name {
		case "nvmlDeviceGetNumaNodeId":
			d.GetNumaNodeIdFunc = nil
		case "nvmlDeviceGetNvLinkRemoteDeviceType":
			d.GetNvLinkRemoteDeviceTypeFunc = nil
		case "nvmlDeviceGetRemappedRows":
			d.GetRemappedRowsFunc = nil
		case "nvmlDeviceGetP2PStatus":
			d.GetP2PStatusFunc = nil
		case "nvmlDeviceGetMigMode":
			d.GetMigModeFunc = nil
		case "nvmlDeviceGetGpuFabricInfo":
			d.GetGpuFabricInfoFunc = nil
		}
	}
}

// SetFabric makes GPU i report info from nvmlDeviceGetGpuFabricInfo
// (a multi-node NVLink fabric's cluster UUID, clique ID and registration
// state). Without it the GPU answers NOT_SUPPORTED, as one outside any
// multi-node fabric does.
func (s *Server) SetFabric(i int, info nvml.GpuFabricInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fabric[i] = info
}

// SetFabricAll makes every GPU report a completed registration in the
// clique of the cluster (see SetFabric).
func (s *Server) SetFabricAll(cluster [16]uint8, clique uint32) {
	for i := range s.GPUs {
		s.SetFabric(i, nvml.GpuFabricInfo{ClusterUuid: cluster, CliqueId: clique, State: nvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(nvml.SUCCESS)})
	}
}

// EventMask returns the event types registered on GPU i.
func (s *Server) EventMask(i int) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.masks[i]
}

// EventSets returns how many event sets were created and freed.
func (s *Server) EventSets() (created, freed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eventSet, s.freed
}

// EnableMIG puts GPU i in MIG mode with one GPU instance per given
// profile id (nvml.GPU_INSTANCE_PROFILE_*), each holding one compute
// instance spanning it. GPU instance ids are 1, 2, … in order (compute
// instance ids 0), UUIDs "MIG-<gpu uuid suffix>-<gi>".
func (s *Server) EnableMIG(i int, profiles ...int) ([]*MIGDevice, error) {
	if i < 0 || i >= len(s.GPUs) {
		return nil, fmt.Errorf("nvmltest: EnableMIG: no GPU %d", i)
	}
	d := s.GPUs[i]
	var out []*MIGDevice
	for k, p := range profiles {
		info, ok := s.model.MIGProfiles.GpuInstanceProfiles[p]
		if !ok {
			return nil, fmt.Errorf("nvmltest: EnableMIG: GPU %d: model %q has no MIG profile %d", i, s.model.Name, p)
		}
		m := &MIGDevice{Device: &mock.Device{}, UUID: fmt.Sprintf("MIG-%s-%d", strings.TrimPrefix(d.UUID, "GPU-"), k+1),
			GI: k + 1, CI: 0, Profile: info, Parent: d,
			GIMinor: int64(3 + i*100 + (k+1)*10), CIMinor: int64(4 + i*100 + (k+1)*10),
			attrs: nvml.DeviceAttributes{GpuInstanceSliceCount: info.SliceCount, ComputeInstanceSliceCount: info.SliceCount,
				MultiprocessorCount: info.MultiprocessorCount, MemorySizeMB: info.MemorySizeMB},
			memBytes: info.MemorySizeMB << 20,
		}
		m.GetUUIDFunc = func() (string, nvml.Return) { return m.UUID, nvml.SUCCESS }
		m.GetGpuInstanceIdFunc = func() (int, nvml.Return) { return m.GI, nvml.SUCCESS }
		m.GetComputeInstanceIdFunc = func() (int, nvml.Return) { return m.CI, nvml.SUCCESS }
		m.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: m.memBytes}, nvml.SUCCESS }
		m.GetAttributesFunc = func() (nvml.DeviceAttributes, nvml.Return) { return m.attrs, nvml.SUCCESS }
		m.IsMigDeviceHandleFunc = func() (bool, nvml.Return) { return true, nvml.SUCCESS }
		m.GetDeviceHandleFromMigDeviceHandleFunc = func() (nvml.Device, nvml.Return) { return d, nvml.SUCCESS }
		// NVML does not sample utilisation, per GPU or per process, on MIG devices.
		m.GetSamplesFunc = func(nvml.SamplingType, uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) {
			return 0, nil, nvml.ERROR_NOT_SUPPORTED
		}
		m.GetProcessUtilizationFunc = func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
			return nil, nvml.ERROR_NOT_SUPPORTED
		}
		out = append(out, m)
	}
	d.Lock()
	d.MigMode = nvml.DEVICE_MIG_ENABLE
	d.Unlock()
	s.mu.Lock()
	s.migs[i] = out
	s.mu.Unlock()
	return slices.Clone(out), nil
}

// MIGDevices returns the MIG slices enabled on GPU i.
func (s *Server) MIGDevices(i int) []*MIGDevice {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.migs[i])
}

func writeFile(root, rel, content string) error {
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644)
}

// WriteSysfs writes, below root, the sysfs files a driver reads for the
// inventory: each NUMA node's cpulist, each GPU's PCI numa_node and
// local_cpulist, and physical_package_id (the device's socket) of the
// lowest CPU of every device's affinity and of every NUMA node.
func (s *Server) WriteSysfs(root string) error {
	nodes := map[int]gres.CoreSet{}
	sockets := map[int]int{} // cpu → socket
	for _, d := range s.Inventory.Devices {
		if ids := d.Cores.AppendTo(nil); len(ids) > 0 && d.Socket >= 0 {
			// The lowest CPU of each affinity set; a driver reads only
			// that one (writing one file per CPU is slow on busy disks).
			sockets[ids[0]] = d.Socket
		}
		if d.NUMA >= 0 {
			nodes[d.NUMA] = nodes[d.NUMA].Union(d.Cores)
		}
		pci := "bus/pci/devices/" + d.PCIBusID + "/"
		if err := writeFile(root, pci+"numa_node", strconv.Itoa(d.NUMA)+"\n"); err != nil {
			return err
		}
		if err := writeFile(root, pci+"local_cpulist", d.Cores.String()+"\n"); err != nil {
			return err
		}
	}
	for n, c := range nodes {
		if err := writeFile(root, fmt.Sprintf("devices/system/node/node%d/cpulist", n), c.String()+"\n"); err != nil {
			return err
		}
		if ids := c.AppendTo(nil); len(ids) > 0 {
			for _, d := range s.Inventory.Devices {
				if d.NUMA == n && d.Socket >= 0 {
					sockets[ids[0]] = d.Socket
				}
			}
		}
	}
	for cpu, sock := range sockets {
		if err := writeFile(root, fmt.Sprintf("devices/system/cpu/cpu%d/topology/physical_package_id", cpu), strconv.Itoa(sock)+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// WriteProcfs writes, below root, /proc/devices (nvidia-frontend 195,
// nvidia-uvm UVMMajor, nvidia-caps CapsMajor) and the MIG capability
// access files of every MIG slice enabled so far.
func (s *Server) WriteProcfs(root string) error {
	devs := "Character devices:\n  1 mem\n  5 /dev/tty\n195 nvidia-frontend\n" +
		strconv.Itoa(CapsMajor) + " nvidia-caps\n" + strconv.Itoa(UVMMajor) + " nvidia-uvm\n\nBlock devices:\n  8 sd\n"
	if err := writeFile(root, "devices", devs); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, ms := range s.migs {
		minor := s.GPUs[i].Minor
		for _, m := range ms {
			gi := fmt.Sprintf("driver/nvidia/capabilities/gpu%d/mig/gi%d/", minor, m.GI)
			if err := writeFile(root, gi+"access", fmt.Sprintf("DeviceFileMinor: %d\nDeviceFileMode: 292\nDeviceFileModify: 1\n", m.GIMinor)); err != nil {
				return err
			}
			if err := writeFile(root, fmt.Sprintf("%sci%d/access", gi, m.CI), fmt.Sprintf("DeviceFileMinor: %d\nDeviceFileMode: 292\nDeviceFileModify: 1\n", m.CIMinor)); err != nil {
				return err
			}
		}
	}
	return nil
}
