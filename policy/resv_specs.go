package policy

import (
	"fmt"
	"slices"
)

// Specs returns every reservation as it was added — NodeCount and TRES as
// given, the window as Start and Duration — with the nodes it holds,
// sorted by name. RestoreSpecs takes them back: together they carry a set
// of reservations over exactly (a scheduler snapshot), where All and Add
// would lose how the nodes were asked for (which Update's node keeping
// reads).
func (b *Reservations) Specs() []Reservation {
	out := make([]Reservation, len(b.rs))
	for i, r := range b.rs {
		x := r.Reservation
		x.Nodes = r.Nodes.Clone()
		x.Users, x.Accounts, x.TRES = slices.Clone(r.Users), slices.Clone(r.Accounts), slices.Clone(r.TRES)
		out[i] = x
	}
	return out
}

// RestoreSpecs fills an empty set with reservations Specs returned,
// validated as Add validates them (overlaps included), each keeping the
// nodes it holds. On error the set stays empty.
func (b *Reservations) RestoreSpecs(rs []Reservation) error {
	if len(b.rs) > 0 {
		return fmt.Errorf("%w: RestoreSpecs on a set holding %d reservations", ErrInvalidConfig, len(b.rs))
	}
	for _, r := range rs {
		count := r.NodeCount
		r.NodeCount = 0 // the nodes it holds are given
		c, err := b.compile(r)
		if err == nil && c.Nodes.Len() == 0 {
			err = fmt.Errorf("%w: reservation %q: no nodes", ErrInvalidConfig, r.Name)
		}
		if err == nil {
			if _, dup := b.find(c.Name); dup {
				err = fmt.Errorf("%w: reservation %q given twice", ErrInvalidConfig, c.Name)
			}
		}
		if err == nil {
			err = b.checkOverlap(c)
		}
		if err != nil {
			b.rs = nil
			return err
		}
		c.NodeCount = count
		i, _ := b.find(c.Name)
		b.rs = slices.Insert(b.rs, i, c)
	}
	return nil
}
