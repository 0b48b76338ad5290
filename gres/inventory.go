package gres

import (
	"fmt"
	"strconv"
)

// MaxDevices is the most devices one node's Inventory may hold.
const MaxDevices = 256

// MaxDeviceIndex is the largest Device.Index accepted.
const MaxDeviceIndex = 1<<16 - 1

// MaxNVLinks is the most fabric lanes (NVLink, XGMI or Xe Link) one Link
// may report.
const MaxNVLinks = 255

// LinkFabric is the device-to-device fabric whose lanes a Link counts.
// The zero value is NVLink, so inventories written before other vendors
// existed keep their meaning.
type LinkFabric uint8

const (
	// FabricNVLink is NVIDIA NVLink (direct or through NVSwitches).
	FabricNVLink LinkFabric = iota
	// FabricXGMI is AMD Infinity Fabric (XGMI) between GPUs of one hive.
	FabricXGMI
	// FabricXeLink is Intel Xe Link between data-centre GPUs.
	FabricXeLink
)

var fabricNames = [...]string{"nvlink", "xgmi", "xelink"}

// String returns "nvlink", "xgmi" or "xelink".
func (f LinkFabric) String() string {
	if int(f) < len(fabricNames) {
		return fabricNames[f]
	}
	return "LinkFabric(" + strconv.Itoa(int(f)) + ")"
}

// MarshalText writes the fabric's name; an unknown fabric is an error.
func (f LinkFabric) MarshalText() ([]byte, error) {
	if int(f) >= len(fabricNames) {
		return nil, fmt.Errorf("%w: unknown link fabric %d", ErrInvalidInventory, f)
	}
	return []byte(fabricNames[f]), nil
}

// UnmarshalText reads a fabric name ("nvlink", "xgmi", "xelink"; "" is
// nvlink). Errors wrap ErrInvalidInventory.
func (f *LinkFabric) UnmarshalText(b []byte) error {
	s := string(b)
	if s == "" {
		*f = FabricNVLink
		return nil
	}
	for i, n := range fabricNames {
		if n == s {
			*f = LinkFabric(i)
			return nil
		}
	}
	return fmt.Errorf("%w: link fabric %q: want nvlink, xgmi or xelink", ErrInvalidInventory, s)
}

// PCIeLevel is how close two devices are on the host side, NVML's
// GetTopologyCommonAncestor levels (nvidia-smi topo -m: PIX, PXB, PHB,
// NODE, SYS) ordered from farthest to closest, so a larger level is closer.
// The zero value, PCIeUnknown, means "not reported": the chooser then infers
// NODE from a shared NUMA node, otherwise treats the pair as SYS.
type PCIeLevel uint8

const (
	// PCIeUnknown: not reported.
	PCIeUnknown PCIeLevel = iota
	// PCIeSYS: the path crosses the inter-socket (SMP) interconnect (NVML TOPOLOGY_SYSTEM).
	PCIeSYS
	// PCIeNODE: same NUMA node, through the interconnect between host bridges (TOPOLOGY_NODE).
	PCIeNODE
	// PCIePHB: same PCIe host bridge (TOPOLOGY_HOSTBRIDGE).
	PCIePHB
	// PCIePXB: several PCIe switches, no host bridge (TOPOLOGY_MULTIPLE).
	PCIePXB
	// PCIePIX: one PCIe switch (TOPOLOGY_SINGLE).
	PCIePIX
	// PCIeBoard: same board, e.g. a dual-GPU card (TOPOLOGY_INTERNAL).
	PCIeBoard
)

var pcieNames = [...]string{"unknown", "SYS", "NODE", "PHB", "PXB", "PIX", "board"}

// String returns nvidia-smi's abbreviation (SYS, NODE, PHB, PXB, PIX),
// "board" or "unknown".
func (l PCIeLevel) String() string {
	if int(l) < len(pcieNames) {
		return pcieNames[l]
	}
	return "PCIeLevel(" + strconv.Itoa(int(l)) + ")"
}

// Link describes the connection between two devices of a node.
type Link struct {
	// NVLinks is the number of device-to-device fabric lanes the pair can
	// use between them, on the fabric Fabric names: NVLink lanes — direct
	// (e.g. 4 on an A100 PCIe NVLink bridge pair) or, for two GPUs on one
	// NVSwitch fabric, the lane count of the less-connected GPU (18 on H100
	// SXM, 12 on A100 SXM) — or XGMI / Xe Link links (one per x16 link).
	// The device chooser ranks pairs by this count whatever the fabric, so
	// one node's links must all count lanes of comparable bandwidth.
	// 0 means no fabric link.
	NVLinks int
	// Fabric names the fabric NVLinks counts (zero: NVLink).
	Fabric LinkFabric
	// NVSwitch reports that both devices sit on one NVSwitch fabric (their
	// NVLinks go through switches, not directly to each other); only with
	// FabricNVLink.
	NVSwitch bool
	// PCIe is the host-side (PCIe / NUMA / socket) level of the pair.
	PCIe PCIeLevel
}

// Device is one device of a node, typically a GPU.
type Device struct {
	Index     int     // device index: the N of /dev/nvidiaN, CUDA/NVML order
	Name      string  // GRES name: "gpu" (MIG slices are gpus with their own Type)
	Type      string  // GRES type: "h100", "a100", "a100_3g.20gb"; "" if untyped
	UUID      string  // "GPU-…" or "MIG-…"; optional, unique when set
	MemoryMiB int64   // device memory
	PCIBusID  string  // "0000:18:00.0"; optional, unique when set
	NUMA      int     // NUMA node; -1 if unknown
	Socket    int     // CPU socket; -1 if unknown
	Cores     CoreSet // logical CPUs close to the device (its affinity); empty if unknown
}

// Inventory is the device inventory of one node: its devices and the link
// matrix between them. It is plain data: fill it, call Validate (or
// NewNodeDevices, which validates), and do not modify it afterwards.
type Inventory struct {
	// Devices in strictly increasing Index order.
	Devices []Device
	// Links is nil (no link information) or a len(Devices)×len(Devices)
	// matrix: Links[i][j] is the link from Devices[i] to Devices[j] (by
	// position, as in gres.conf Links=). It must be symmetric, with zero
	// Links on the diagonal. SetLink fills both directions.
	Links [][]Link
	// Shares lists the devices that are shared between jobs (Slurm's
	// gres/shard and gres/mps, gres.conf Name=shard / Name=mps with a
	// File=): how many shards and MPS shares each offers, in increasing
	// Device order. See DeviceShares.
	Shares []DeviceShares `json:",omitempty"`
	// MIG describes the devices that are MIG instances (their parent GPU
	// and profile), in increasing Device order; nil when none is.
	MIG []MIGInstance `json:",omitempty"`
	// Fabric is the multi-node NVLink domain the node's GPUs belong to
	// (NVML's GPU fabric cluster UUID and clique ID); zero when none.
	Fabric NVLinkFabric `json:",omitzero"`
}

// SetLink sets the link between the devices at positions i and j in both
// directions, allocating the matrix when it is nil.
func (inv *Inventory) SetLink(i, j int, l Link) error {
	n := len(inv.Devices)
	if i < 0 || j < 0 || i >= n || j >= n || i == j {
		return fmt.Errorf("%w: link between positions %d and %d of %d devices", ErrInvalidInventory, i, j, n)
	}
	inv.allocLinks()
	if len(inv.Links) != n || len(inv.Links[i]) != n || len(inv.Links[j]) != n {
		return fmt.Errorf("%w: link matrix is not %d×%d", ErrInvalidInventory, n, n)
	}
	inv.Links[i][j], inv.Links[j][i] = l, l
	return nil
}

// allocLinks allocates an all-zero link matrix when there is none.
func (inv *Inventory) allocLinks() {
	if inv.Links != nil {
		return
	}
	n := len(inv.Devices)
	inv.Links = make([][]Link, n)
	for k := range inv.Links {
		inv.Links[k] = make([]Link, n)
	}
}

// Link returns the link between the devices at positions i and j (the zero
// Link when there is no matrix or i == j).
func (inv *Inventory) Link(i, j int) Link {
	if i == j || i < 0 || j < 0 || i >= len(inv.Links) || j >= len(inv.Links[i]) {
		return Link{}
	}
	return inv.Links[i][j]
}

// Validate checks the inventory: at most MaxDevices devices; indices in
// [0, MaxDeviceIndex] and strictly increasing (so never duplicated); names
// and types well-formed; UUIDs and PCI bus ids unique when set; memory,
// NUMA and socket not below their minimum (0, -1, -1); every NUMA node on
// one socket; a square, symmetric link matrix with a zero diagonal,
// NVLinks in [0, MaxNVLinks], a known Fabric, NVSwitch only with NVLink
// lanes, known PCIe levels,
// and PCIe levels that agree with NUMA and socket (PIX … NODE need one NUMA
// node and socket, SYS needs two NUMA nodes). Errors wrap
// ErrInvalidInventory and name the device.
func (inv *Inventory) Validate() error {
	n := len(inv.Devices)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidInventory}, args...)...)
	}
	if n > MaxDevices {
		return bad("%d devices, at most %d", n, MaxDevices)
	}
	uuids := make(map[string]int, n)
	buses := make(map[string]int, n)
	numaSocket := make(map[int]int)
	for i, d := range inv.Devices {
		if err := ValidateName(d.Name, d.Type); err != nil {
			return bad("device %d: %w", d.Index, err)
		}
		switch {
		case d.Index < 0 || d.Index > MaxDeviceIndex:
			return bad("device %d: index %d outside [0, %d]", i, d.Index, MaxDeviceIndex)
		case i > 0 && d.Index == inv.Devices[i-1].Index:
			return bad("device %d: duplicate index %d", i, d.Index)
		case i > 0 && d.Index < inv.Devices[i-1].Index:
			return bad("device %d: index %d after %d; devices must be in increasing index order", i, d.Index, inv.Devices[i-1].Index)
		case d.MemoryMiB < 0:
			return bad("device %d: negative memory %d", d.Index, d.MemoryMiB)
		case d.NUMA < -1:
			return bad("device %d: NUMA node %d (use -1 for unknown)", d.Index, d.NUMA)
		case d.Socket < -1:
			return bad("device %d: socket %d (use -1 for unknown)", d.Index, d.Socket)
		}
		if d.UUID != "" {
			if j, dup := uuids[d.UUID]; dup {
				return bad("device %d: UUID %q duplicates device %d", d.Index, d.UUID, j)
			}
			uuids[d.UUID] = d.Index
		}
		if d.PCIBusID != "" {
			if j, dup := buses[d.PCIBusID]; dup {
				return bad("device %d: PCI bus id %q duplicates device %d", d.Index, d.PCIBusID, j)
			}
			buses[d.PCIBusID] = d.Index
		}
		if d.NUMA >= 0 && d.Socket >= 0 {
			if s, seen := numaSocket[d.NUMA]; seen && s != d.Socket {
				return bad("device %d: NUMA node %d on socket %d, but another device puts it on socket %d", d.Index, d.NUMA, d.Socket, s)
			}
			numaSocket[d.NUMA] = d.Socket
		}
	}
	if err := inv.validateSharing(); err != nil {
		return err
	}
	if inv.Links == nil {
		return nil
	}
	if len(inv.Links) != n {
		return bad("link matrix has %d rows for %d devices", len(inv.Links), n)
	}
	for i, row := range inv.Links {
		if len(row) != n {
			return bad("device %d: link row has %d entries for %d devices", inv.Devices[i].Index, len(row), n)
		}
	}
	for i := range n {
		a := &inv.Devices[i]
		if inv.Links[i][i] != (Link{}) {
			return bad("device %d: non-zero link to itself", a.Index)
		}
		for j := i + 1; j < n; j++ {
			b := &inv.Devices[j]
			l := inv.Links[i][j]
			if l != inv.Links[j][i] {
				return bad("devices %d and %d: asymmetric links %+v and %+v", a.Index, b.Index, l, inv.Links[j][i])
			}
			switch {
			case l.NVLinks < 0 || l.NVLinks > MaxNVLinks:
				return bad("devices %d and %d: %d NVLinks outside [0, %d]", a.Index, b.Index, l.NVLinks, MaxNVLinks)
			case int(l.Fabric) >= len(fabricNames):
				return bad("devices %d and %d: unknown link fabric %d", a.Index, b.Index, l.Fabric)
			case l.NVSwitch && (l.NVLinks == 0 || l.Fabric != FabricNVLink):
				return bad("devices %d and %d: NVSwitch link without NVLink lanes", a.Index, b.Index)
			case l.PCIe > PCIeBoard:
				return bad("devices %d and %d: unknown PCIe level %d", a.Index, b.Index, l.PCIe)
			}
			if l.PCIe >= PCIeNODE {
				if a.NUMA >= 0 && b.NUMA >= 0 && a.NUMA != b.NUMA {
					return bad("devices %d and %d: PCIe level %v but NUMA nodes %d and %d", a.Index, b.Index, l.PCIe, a.NUMA, b.NUMA)
				}
				if a.Socket >= 0 && b.Socket >= 0 && a.Socket != b.Socket {
					return bad("devices %d and %d: PCIe level %v but sockets %d and %d", a.Index, b.Index, l.PCIe, a.Socket, b.Socket)
				}
			}
			if l.PCIe == PCIeSYS && a.NUMA >= 0 && a.NUMA == b.NUMA {
				return bad("devices %d and %d: PCIe level SYS but both on NUMA node %d", a.Index, b.Index, a.NUMA)
			}
		}
	}
	return nil
}

// Clone returns a deep copy of the inventory (CoreSets are immutable and
// shared).
func (inv *Inventory) Clone() Inventory {
	out := Inventory{Devices: append([]Device(nil), inv.Devices...), Fabric: inv.Fabric}
	if inv.Shares != nil {
		out.Shares = append([]DeviceShares(nil), inv.Shares...)
	}
	if inv.MIG != nil {
		out.MIG = append([]MIGInstance(nil), inv.MIG...)
	}
	if inv.Links != nil {
		out.Links = make([][]Link, len(inv.Links))
		for i, row := range inv.Links {
			out.Links[i] = append([]Link(nil), row...)
		}
	}
	return out
}

// RegisterInventory registers the GRES TRES an inventory offers:
// gres/<name> for every device and gres/<name>:<type> for every typed one
// (so requests for them pass RequestVector). Call it with each node's
// inventory while building the cluster's registry.
func (r *Registry) RegisterInventory(inv *Inventory) error {
	for _, d := range inv.Devices {
		name := Request{Name: d.Name, Type: d.Type}.TRESName()
		if _, err := r.Register(name); err != nil { // a typed name registers its parent too
			return fmt.Errorf("device %d: %w", d.Index, err)
		}
	}
	return nil
}

// TRES returns the inventory's devices as a TRES vector of length r.Len(),
// counted like RequestVector counts requests: every device adds 1 to
// gres/<name>, and a typed one also to gres/<name>:<type>. Every name must
// be registered (see RegisterInventory), else the error wraps
// ErrUnknownTRES.
func (inv *Inventory) TRES(r *Registry) (Vector, error) {
	v := r.NewVector()
	for _, d := range inv.Devices {
		q := Request{Name: d.Name, Type: d.Type, Count: 1}
		for _, name := range []string{"gres/" + d.Name, q.TRESName()} {
			id, ok := r.Lookup(name)
			if !ok {
				return nil, fmt.Errorf("%w: device %d: %q is not registered", ErrUnknownTRES, d.Index, name)
			}
			v[id]++
			if d.Type == "" {
				break
			}
		}
	}
	return v, nil
}
