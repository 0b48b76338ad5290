package gres

import (
	"fmt"
	"math/bits"
)

// binding is a request's CPU requirement under enforce-binding
// (DeviceRequest.CPUs): how many CPUs of the request's Cores a set of
// devices binds, and whether that is enough. A device binds the CPUs of
// Cores in its own Cores; one whose affinity is unknown binds none of its
// own, and a set (with the request's BoundCores) in which no device has
// a known affinity binds every CPU of Cores — the job is then not bound.
type binding struct {
	need  int
	all   int      // |Cores|
	w     int      // words per row
	rows  []uint64 // position p's row at p*w: its Cores ∩ the request's
	known devMask  // positions whose affinity is known
	base  []uint64 // BoundCores ∩ Cores
	// baseKnown: BoundCores is not empty (the job is bound already).
	baseKnown bool
	acc       []uint64 // scratch union
}

// newBinding returns the requirement of req on the candidates c, or nil
// when req has none (no EnforceBinding, no CPUs or no Cores).
func (s *NodeDevices) newBinding(req DeviceRequest, c devMask) *binding {
	if !req.EnforceBinding || req.CPUs <= 0 || req.Cores.IsEmpty() {
		return nil
	}
	cw := req.Cores.words
	b := &binding{need: req.CPUs, all: req.Cores.Count(), w: len(cw), baseKnown: !req.BoundCores.IsEmpty()}
	b.rows = make([]uint64, s.t.n*b.w)
	b.acc = make([]uint64, b.w)
	b.base = make([]uint64, b.w)
	for i, x := range req.BoundCores.words[:min(len(req.BoundCores.words), b.w)] {
		b.base[i] = x & cw[i]
	}
	var buf [MaxDevices]uint8
	for _, p := range c.appendPositions(buf[:0]) {
		dc := s.t.inv.Devices[p].Cores
		if dc.IsEmpty() {
			continue
		}
		b.known.set(int(p))
		row := b.rows[int(p)*b.w : int(p)*b.w+b.w]
		for i, x := range dc.words[:min(len(dc.words), b.w)] {
			row[i] = x & cw[i]
		}
	}
	return b
}

// start begins a union with the request's BoundCores; add adds position
// p; bound then counts the CPUs bound.
func (b *binding) start() bool {
	copy(b.acc, b.base)
	return b.baseKnown
}

func (b *binding) add(p int, known bool) bool {
	if !b.known.has(p) {
		return known
	}
	row := b.rows[p*b.w : p*b.w+b.w]
	for i, x := range row {
		b.acc[i] |= x
	}
	return true
}

func (b *binding) bound(known bool) int {
	if !known {
		return b.all
	}
	n := 0
	for _, x := range b.acc {
		n += bits.OnesCount64(x)
	}
	return n
}

// most bounds what any set of the candidates cand binds: the union of
// all, unless a set of unknown affinity alone (k of them) binds all of
// Cores.
func (b *binding) most(cand []uint8, k int) int {
	unknown := 0
	for _, p := range cand {
		if !b.known.has(int(p)) {
			unknown++
		}
	}
	if !b.baseKnown && unknown >= k {
		return b.all
	}
	return b.covers(cand)
}

// covers counts the CPUs bound by the devices at positions ps.
func (b *binding) covers(ps []uint8) int {
	known := b.start()
	for _, p := range ps {
		known = b.add(int(p), known)
	}
	return b.bound(known)
}

// okLeaf reports whether the devices at positions ps and p bind enough
// CPUs. A nil binding is always satisfied.
func (b *binding) okLeaf(ps []int, p int) bool {
	if b == nil {
		return true
	}
	known := b.add(p, b.start())
	for _, q := range ps {
		known = b.add(q, known)
	}
	return b.bound(known) >= b.need
}

// okIn reports whether the candidates marked in (indices into cand),
// with candidate out taken out and candidate into added (-1: none), bind
// enough CPUs. A nil binding is always satisfied.
func (b *binding) okIn(cand []uint8, in []bool, out, into int) bool {
	return b == nil || b.coverIn(cand, in, out, into) >= b.need
}

// coverIn counts the CPUs okIn's set binds.
func (b *binding) coverIn(cand []uint8, in []bool, out, into int) int {
	known := b.start()
	for i, on := range in {
		if on && i != out || i == into {
			known = b.add(int(cand[i]), known)
		}
	}
	return b.bound(known)
}

// shortErr is Choose's error when no set of k candidates was found that
// binds enough CPUs (most: what the candidates could bind at best).
func (b *binding) shortErr(k int, req DeviceRequest, most int) error {
	return fmt.Errorf("%w: want %d %s binding %d of %d CPUs, none found (the eligible devices bind at most %d)",
		ErrInsufficientDevices, k, reqLabel(req), b.need, b.all, most)
}
