package policy

import "fmt"

// Grow raises the node count the reservations span to numNodes, for a
// cluster that gained nodes at run time: later reservations may name the
// new indices; existing ones keep their nodes. Shrinking is refused (a
// removed node keeps its index), and nothing changes on error.
func (b *Reservations) Grow(numNodes int) error {
	if numNodes < b.n {
		return fmt.Errorf("policy: %w: reservations span %d nodes, cannot shrink to %d", ErrInvalidRequest, b.n, numNodes)
	}
	b.n = numNodes
	return nil
}
