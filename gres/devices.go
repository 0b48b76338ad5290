package gres

import (
	"fmt"
	"math/bits"
	"strings"
)

// devMask is a set of device positions (0..MaxDevices-1).
type devMask [MaxDevices / 64]uint64

func (m *devMask) set(p int)      { m[p>>6] |= 1 << (uint(p) & 63) }
func (m *devMask) clear(p int)    { m[p>>6] &^= 1 << (uint(p) & 63) }
func (m *devMask) has(p int) bool { return m[p>>6]&(1<<(uint(p)&63)) != 0 }
func (m devMask) andNot(o devMask) devMask {
	for i := range m {
		m[i] &^= o[i]
	}
	return m
}
func (m devMask) count() int {
	n := 0
	for _, w := range m {
		n += bits.OnesCount64(w)
	}
	return n
}

// appendPositions appends the positions in m, in increasing order.
func (m devMask) appendPositions(dst []uint8) []uint8 {
	for i, w := range m {
		for w != 0 {
			dst = append(dst, uint8(i<<6+bits.TrailingZeros64(w)))
			w &= w - 1
		}
	}
	return dst
}

// Pair weights pack NVLink lanes above host-side closeness so that sums
// compare lexicographically: lanes << nvShift | closeness (0..6). With at
// most MaxDevices devices, closeness sums stay below 1<<affShift and
// affinity counts below 1<<(nvShift-affShift). For AffinityFirst a close
// device's bonus is 1<<affFirstShift instead, above any sum of NVLink
// lanes (at most C(MaxDevices, 2)·MaxNVLinks < 1<<23 lanes, so below
// 1<<(nvShift+23)); MaxDevices such bonuses stay below 1<<62.
const (
	nvShift       = 27
	affShift      = 18
	affFirstShift = nvShift + 23
	lowMask       = 1<<affShift - 1
)

// group is the set of device positions with one name (typ == "") or one
// name and type.
type group struct {
	name, typ string
	mask      devMask
}

// topo is the compiled, immutable form of an Inventory shared by every
// clone of a NodeDevices.
type topo struct {
	inv      Inventory
	n        int
	pos      []int16 // device index -> position, -1 when absent
	w        []int64 // n×n pair weights
	groups   []group
	bestPair int64          // best pairValue over all pairs (for Quality)
	twin     []int16        // position -> lowest position with an identical link row (itself if none)
	shares   []DeviceShares // position -> its shares; nil when no device is shared
	sharable devMask        // positions that offer shares
}

// closeness maps a pair's host-side proximity to 0..6: 0 SYS across
// sockets, 1 SYS within a socket, 2 NODE, 3 PHB, 4 PXB, 5 PIX, 6 board.
func closeness(a, b *Device, l PCIeLevel) int64 {
	if l == PCIeUnknown {
		if a.NUMA >= 0 && a.NUMA == b.NUMA {
			l = PCIeNODE
		} else {
			l = PCIeSYS
		}
	}
	if l == PCIeSYS {
		if a.Socket >= 0 && a.Socket == b.Socket {
			return 1
		}
		return 0
	}
	return int64(l)
}

// pairValue is the human-scale value of a pair used by Quality: 100 per
// NVLink lane plus 10..70 for host-side closeness (go-gpuallocator's scale,
// extended with NVSwitch lanes and sockets).
func pairValue(w int64) int64 { return 100*(w>>nvShift) + 10*(w&lowMask+1) }

func compile(inv Inventory) (*topo, error) {
	if err := inv.Validate(); err != nil {
		return nil, err
	}
	inv = inv.Clone()
	n := len(inv.Devices)
	t := &topo{inv: inv, n: n, w: make([]int64, n*n)}
	maxIdx := -1
	for i := range inv.Devices {
		d := &inv.Devices[i]
		d.Name, d.Type = strings.ToLower(d.Name), strings.ToLower(d.Type)
		maxIdx = max(maxIdx, d.Index)
	}
	t.pos = make([]int16, maxIdx+1)
	for i := range t.pos {
		t.pos[i] = -1
	}
	for i, d := range inv.Devices {
		t.pos[d.Index] = int16(i)
		t.addToGroup(d.Name, "", i)
		if d.Type != "" {
			t.addToGroup(d.Name, d.Type, i)
		}
	}
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			l := inv.Link(i, j)
			w := int64(l.NVLinks)<<nvShift | closeness(&inv.Devices[i], &inv.Devices[j], l.PCIe)
			t.w[i*n+j] = w
			t.bestPair = max(t.bestPair, pairValue(w))
		}
	}
	if len(inv.Shares) > 0 {
		t.shares = make([]DeviceShares, n)
		for _, sh := range inv.Shares {
			t.shares[t.pos[sh.Device]] = sh
			t.sharable.set(int(t.pos[sh.Device]))
		}
	}
	// Twins: devices whose links to every third device are identical (and
	// whose affinity is identical) are interchangeable in any placement.
	t.twin = make([]int16, n)
	for p := range n {
		t.twin[p] = int16(p)
		for q := range p {
			if int(t.twin[q]) == q && t.twins(p, q) {
				t.twin[p] = int16(q)
				break
			}
		}
	}
	return t, nil
}

// twins reports whether positions p and q have identical link rows
// (ignoring their link to each other) and identical CPU affinity.
func (t *topo) twins(p, q int) bool {
	if !t.inv.Devices[p].Cores.Equal(t.inv.Devices[q].Cores) {
		return false
	}
	rp, rq := t.w[p*t.n:p*t.n+t.n], t.w[q*t.n:q*t.n+t.n]
	for x := range t.n {
		if x != p && x != q && rp[x] != rq[x] {
			return false
		}
	}
	return true
}

func (t *topo) addToGroup(name, typ string, p int) {
	for i := range t.groups {
		if t.groups[i].name == name && t.groups[i].typ == typ {
			t.groups[i].mask.set(p)
			return
		}
	}
	g := group{name: name, typ: typ}
	g.mask.set(p)
	t.groups = append(t.groups, g)
}

// group returns the mask of devices named name with type typ ("" = any).
func (t *topo) group(name, typ string) (devMask, bool) {
	for i := range t.groups {
		if g := &t.groups[i]; g.name == name && g.typ == typ {
			return g.mask, true
		}
	}
	for i := range t.groups {
		if g := &t.groups[i]; strings.EqualFold(g.name, name) && strings.EqualFold(g.typ, typ) {
			return g.mask, true
		}
	}
	return devMask{}, false
}

func (t *topo) position(index int) (int, bool) {
	if index < 0 || index >= len(t.pos) || t.pos[index] < 0 {
		return 0, false
	}
	return int(t.pos[index]), true
}

// NodeDevices is the allocation state of one node's devices: which device
// indices are allocated and which are unhealthy, over an immutable compiled
// inventory. It answers free counts, chooses the best-connected devices for
// a request, and allocates and releases specific indices.
//
// Not safe for concurrent mutation; read-only methods (Free, Counts,
// Choose, Evaluate …) may run concurrently with each other. Clone is cheap
// (the inventory is shared) and suits what-if planning.
type NodeDevices struct {
	t         *topo
	used, bad devMask // allocated; unhealthy
	// shared marks the devices with shares (shards, MPS) in use, which
	// are not given whole; use counts them by position (nil when the
	// inventory shares no device). See shares.go.
	shared devMask
	use    []shareUse
}

// NewNodeDevices validates inv and returns its state with every device
// free and healthy. The inventory is copied; later changes to inv have no
// effect. Names and types are compared case-insensitively.
func NewNodeDevices(inv Inventory) (*NodeDevices, error) {
	t, err := compile(inv)
	if err != nil {
		return nil, err
	}
	s := &NodeDevices{t: t}
	if t.shares != nil {
		s.use = make([]shareUse, t.n)
	}
	return s, nil
}

// Clone returns an independent copy of the state sharing the inventory.
func (s *NodeDevices) Clone() *NodeDevices {
	c := *s
	if s.use != nil {
		c.use = append([]shareUse(nil), s.use...)
	}
	return &c
}

// Copy returns an independent copy of the state by value (for saving it
// and restoring it with *s = saved); like Clone it shares the inventory.
func (s *NodeDevices) Copy() NodeDevices {
	c := *s
	if s.use != nil {
		c.use = append([]shareUse(nil), s.use...)
	}
	return c
}

// Inventory returns the node's inventory (with names and types in lower
// case). It is shared: do not modify it.
func (s *NodeDevices) Inventory() *Inventory { return &s.t.inv }

// Len returns the number of devices in the inventory.
func (s *NodeDevices) Len() int { return s.t.n }

// Free returns how many devices named name with type typ ("" = any type)
// are neither allocated nor unhealthy. It does not allocate.
func (s *NodeDevices) Free(name, typ string) int {
	g, ok := s.t.group(name, typ)
	if !ok {
		return 0
	}
	return s.freeIn(g).count()
}

// Counts returns, for devices named name with type typ ("" = any type),
// how many exist, how many are healthy and how many are free (healthy and
// not allocated). A scheduler drains a node whose healthy count drops to 0.
func (s *NodeDevices) Counts(name, typ string) (total, healthy, free int) {
	g, ok := s.t.group(name, typ)
	if !ok {
		return 0, 0, 0
	}
	return g.count(), g.andNot(s.bad).count(), s.freeIn(g).count()
}

// InUse reports whether device index is allocated, whole or through
// shares (shards, MPS) in use; false when unknown.
func (s *NodeDevices) InUse(index int) bool {
	p, ok := s.t.position(index)
	return ok && (s.used.has(p) || s.shared.has(p))
}

// IsHealthy reports whether device index exists and is healthy.
func (s *NodeDevices) IsHealthy(index int) bool {
	p, ok := s.t.position(index)
	return ok && !s.bad.has(p)
}

// AppendUsed appends the allocated device indices, in increasing order.
func (s *NodeDevices) AppendUsed(dst []int) []int {
	return s.appendIndices(dst, s.used)
}

// AppendFree appends the free (healthy, unallocated) device indices named
// name with type typ ("" = any type), in increasing order.
func (s *NodeDevices) AppendFree(dst []int, name, typ string) []int {
	g, ok := s.t.group(name, typ)
	if !ok {
		return dst
	}
	return s.appendIndices(dst, s.freeIn(g))
}

// freeIn returns the devices of g that are neither allocated nor
// unhealthy.
func (s *NodeDevices) freeIn(g devMask) devMask {
	return g.andNot(s.used).andNot(s.bad).andNot(s.shared)
}

func (s *NodeDevices) appendIndices(dst []int, m devMask) []int {
	for i, w := range m {
		for w != 0 {
			dst = append(dst, s.t.inv.Devices[i<<6+bits.TrailingZeros64(w)].Index)
			w &= w - 1
		}
	}
	return dst
}

// maskOf converts device indices into a position mask, failing on an
// unknown or repeated index.
func (s *NodeDevices) maskOf(op string, indices []int) (devMask, error) {
	var m devMask
	for _, idx := range indices {
		p, ok := s.t.position(idx)
		if !ok {
			return m, fmt.Errorf("%s device %d: %w", op, idx, ErrUnknownDevice)
		}
		if m.has(p) {
			return m, fmt.Errorf("%s device %d: listed twice: %w", op, idx, ErrInvalidRequest)
		}
		m.set(p)
	}
	return m, nil
}

// Allocate marks the given device indices allocated. It fails, changing
// nothing, when an index is unknown (ErrUnknownDevice), repeated
// (ErrInvalidRequest), already allocated (ErrDeviceInUse) or unhealthy
// (ErrDeviceUnhealthy). It does not allocate memory on success.
func (s *NodeDevices) Allocate(indices []int) error {
	m, err := s.maskOf("allocate", indices)
	if err != nil {
		return err
	}
	for _, idx := range indices {
		p, _ := s.t.position(idx)
		if s.used.has(p) {
			return fmt.Errorf("allocate device %d: %w", idx, ErrDeviceInUse)
		}
		if s.shared.has(p) {
			return fmt.Errorf("allocate device %d: its shares are in use: %w", idx, ErrDeviceInUse)
		}
		if s.bad.has(p) {
			return fmt.Errorf("allocate device %d: %w", idx, ErrDeviceUnhealthy)
		}
	}
	for i := range m {
		s.used[i] |= m[i]
	}
	return nil
}

// Release marks the given device indices free again. It fails, changing
// nothing, when an index is unknown, repeated or not allocated
// (ErrDeviceNotInUse). Releasing an unhealthy device keeps it unhealthy
// (and so unallocatable).
func (s *NodeDevices) Release(indices []int) error {
	m, err := s.maskOf("release", indices)
	if err != nil {
		return err
	}
	for _, idx := range indices {
		if p, _ := s.t.position(idx); !s.used.has(p) {
			return fmt.Errorf("release device %d: %w", idx, ErrDeviceNotInUse)
		}
	}
	for i := range m {
		s.used[i] &^= m[i]
	}
	return nil
}

// SetHealthy marks device index healthy or unhealthy. An unhealthy device
// is never chosen or allocated; if it is allocated it stays so until
// released (the job using it decides what to do). Other devices of the
// node stay usable.
func (s *NodeDevices) SetHealthy(index int, healthy bool) error {
	p, ok := s.t.position(index)
	if !ok {
		return fmt.Errorf("set health of device %d: %w", index, ErrUnknownDevice)
	}
	if healthy {
		s.bad.clear(p)
	} else {
		s.bad.set(p)
	}
	return nil
}
