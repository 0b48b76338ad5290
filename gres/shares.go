package gres

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// shareUse counts one device's shares in use.
type shareUse struct{ shards, mps int32 }

func (u *shareUse) of(name string) *int32 {
	if strings.EqualFold(name, MPSName) {
		return &u.mps
	}
	return &u.shards
}

// ShareRequest asks one node for Count shares of the sharing GRES Name
// (ShardName or MPSName).
type ShareRequest struct {
	Name  string
	Count int
	// Spread lets the shares come from several devices (Slurm's
	// SelectTypeParameters=MULTIPLE_SHARING_GRES_PJ). By default, as in
	// Slurm, all of a job's shares on a node come from one device.
	Spread bool
}

// ShareGrant is Count shares of the sharing GRES Name on device Device.
type ShareGrant struct {
	Device int
	Name   string
	Count  int
}

// String returns "shard:2@0": name, count and device index.
func (g ShareGrant) String() string { return fmt.Sprintf("%s:%d@%d", g.Name, g.Count, g.Device) }

// ShareDevices returns the device indices the grants are on, increasing
// and without repeats: the devices whose files a job holding them may
// open (Discovery.FilesFor), like its whole devices.
func ShareDevices(gs []ShareGrant) []int {
	var out []int
	for _, g := range gs {
		if !slices.Contains(out, g.Device) {
			out = append(out, g.Device)
		}
	}
	slices.Sort(out)
	return out
}

// HasShares reports whether some device of the node offers shares of the
// sharing GRES name.
func (s *NodeDevices) HasShares(name string) bool {
	for _, sh := range s.t.shares {
		if sh.count(name) > 0 {
			return true
		}
	}
	return false
}

// ShareCounts returns how many shares of the sharing GRES name the node's
// devices offer in all, and how many are free: on healthy devices not
// allocated whole.
func (s *NodeDevices) ShareCounts(name string) (total, free int) {
	for p, sh := range s.t.shares {
		c := sh.count(name)
		total += c
		if c > 0 && !s.used.has(p) && !s.bad.has(p) {
			free += c - int(*s.use[p].of(name))
		}
	}
	return total, free
}

// MaxFreeShares returns the most free shares of name any one device has
// (on healthy devices not allocated whole): the largest request of it
// ChooseShares can satisfy without Spread.
func (s *NodeDevices) MaxFreeShares(name string) int {
	best := 0
	for p, sh := range s.t.shares {
		if c := sh.count(name); c > 0 && !s.used.has(p) && !s.bad.has(p) {
			best = max(best, c-int(*s.use[p].of(name)))
		}
	}
	return best
}

// IsShared reports whether device index has shares in use.
func (s *NodeDevices) IsShared(index int) bool {
	p, ok := s.t.position(index)
	return ok && s.shared.has(p)
}

// SharesInUse returns how many shares of name are in use on device index
// (0 when unknown or not shared).
func (s *NodeDevices) SharesInUse(index int, name string) int {
	p, ok := s.t.position(index)
	if !ok || s.use == nil {
		return 0
	}
	return int(*s.use[p].of(name))
}

// ChooseShares picks devices for r without allocating: one device holding
// all r.Count free shares (every device when r.Spread), preferring devices
// whose shares are already in use — so whole devices stay free for whole
// requests — then the one with the fewest free shares that suffices, then
// the lowest index. A device allocated whole or unhealthy gives none.
// ErrInsufficientDevices when the node cannot; ErrInvalidRequest for a
// bad name or count.
func (s *NodeDevices) ChooseShares(r ShareRequest) ([]ShareGrant, error) {
	if !IsSharing(r.Name) || r.Count <= 0 || r.Count > MaxShares*MaxDevices {
		return nil, fmt.Errorf("%w: shares %s:%d: want shard or mps and a positive count", ErrInvalidRequest, r.Name, r.Count)
	}
	name := strings.ToLower(r.Name)
	type cand struct{ pos, free int }
	var cs []cand
	for p, sh := range s.t.shares {
		c := sh.count(name)
		if c == 0 || s.used.has(p) || s.bad.has(p) {
			continue
		}
		if f := c - int(*s.use[p].of(name)); f > 0 {
			cs = append(cs, cand{p, f})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		ia, ib := s.shared.has(a.pos), s.shared.has(b.pos)
		if ia != ib {
			if ia {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.free, b.free), cmp.Compare(a.pos, b.pos))
	})
	if !r.Spread {
		for _, c := range cs {
			if c.free >= r.Count {
				return []ShareGrant{{Device: s.t.inv.Devices[c.pos].Index, Name: name, Count: r.Count}}, nil
			}
		}
		return nil, fmt.Errorf("%w: no device has %d free %s", ErrInsufficientDevices, r.Count, name)
	}
	var out []ShareGrant
	left := r.Count
	for _, c := range cs {
		if left == 0 {
			break
		}
		k := min(left, c.free)
		out = append(out, ShareGrant{Device: s.t.inv.Devices[c.pos].Index, Name: name, Count: k})
		left -= k
	}
	if left > 0 {
		return nil, fmt.Errorf("%w: %d free %s on the node, %d wanted", ErrInsufficientDevices, r.Count-left, name, r.Count)
	}
	slices.SortFunc(out, func(a, b ShareGrant) int { return cmp.Compare(a.Device, b.Device) })
	return out, nil
}

// shareKey is a device position and a sharing GRES (0 shard, 1 mps).
type shareKey struct{ pos, kind int }

// grantTotals validates grants against the inventory (known shared
// devices, sharing names, counts in [1, MaxShares], so that their sums
// cannot overflow) and sums them per device and name.
func (s *NodeDevices) grantTotals(op string, gs []ShareGrant) (map[shareKey]int, error) {
	tot := make(map[shareKey]int, len(gs))
	for _, g := range gs {
		p, ok := s.t.position(g.Device)
		switch {
		case !ok:
			return nil, fmt.Errorf("%s %s: %w", op, g, ErrUnknownDevice)
		case !IsSharing(g.Name) || g.Count <= 0 || g.Count > MaxShares:
			return nil, fmt.Errorf("%s %s: want shard or mps and a count in [1, %d]: %w", op, g, MaxShares, ErrInvalidRequest)
		case s.t.shares == nil || s.t.shares[p].count(g.Name) == 0:
			return nil, fmt.Errorf("%s %s: device %d offers no %s: %w", op, g, g.Device, g.Name, ErrInvalidRequest)
		}
		tot[s.keyOf(g)] += g.Count
	}
	return tot, nil
}

// keyOf returns the shareKey of a grant whose device is known.
func (s *NodeDevices) keyOf(g ShareGrant) shareKey {
	p, _ := s.t.position(g.Device)
	k := shareKey{pos: p}
	if strings.EqualFold(g.Name, MPSName) {
		k.kind = 1
	}
	return k
}

// AllocateShares marks the grants' shares in use. It fails, changing
// nothing, when a device is unknown or offers no such shares, is
// allocated whole (ErrDeviceInUse), is unhealthy (ErrDeviceUnhealthy), or
// has fewer free shares than granted (ErrInsufficientDevices).
func (s *NodeDevices) AllocateShares(gs []ShareGrant) error {
	tot, err := s.grantTotals("allocate", gs)
	if err != nil {
		return err
	}
	for _, g := range gs {
		k := s.keyOf(g)
		inUse, capacity := int(*s.use[k.pos].of(g.Name)), s.t.shares[k.pos].count(g.Name)
		switch {
		case s.used.has(k.pos):
			return fmt.Errorf("allocate %s: device allocated whole: %w", g, ErrDeviceInUse)
		case s.bad.has(k.pos):
			return fmt.Errorf("allocate %s: %w", g, ErrDeviceUnhealthy)
		case inUse+tot[k] > capacity:
			return fmt.Errorf("allocate %s: %d of %d in use: %w", g, inUse, capacity, ErrInsufficientDevices)
		}
	}
	for _, g := range gs {
		k := s.keyOf(g)
		*s.use[k.pos].of(g.Name) += int32(g.Count)
		s.shared.set(k.pos)
	}
	return nil
}

// ReleaseShares frees the grants' shares. It fails, changing nothing,
// when a device is unknown or has fewer shares in use than released
// (ErrDeviceNotInUse).
func (s *NodeDevices) ReleaseShares(gs []ShareGrant) error {
	tot, err := s.grantTotals("release", gs)
	if err != nil {
		return err
	}
	for _, g := range gs {
		k := s.keyOf(g)
		if inUse := int(*s.use[k.pos].of(g.Name)); inUse < tot[k] {
			return fmt.Errorf("release %s: only %d in use: %w", g, inUse, ErrDeviceNotInUse)
		}
	}
	for _, g := range gs {
		k := s.keyOf(g)
		*s.use[k.pos].of(g.Name) -= int32(g.Count)
		if s.use[k.pos] == (shareUse{}) {
			s.shared.clear(k.pos)
		}
	}
	return nil
}
