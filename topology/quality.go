package topology

import "fmt"

// Kind names the topology a Quality is measured on.
type Kind uint8

const (
	// KindFlat: the graph has no topology (or only NVLink domains that the
	// request ignored); every placement is ideal.
	KindFlat Kind = iota
	// KindTree: units are leaf switches, levels are switch levels.
	KindTree
	// KindBlock: units are base blocks, levels are BlockSizes levels (the
	// level above the largest size is the whole system).
	KindBlock
	// KindDomain: units are NVLink domains (a node outside every domain
	// counts as a domain of its own); level 0 is one domain, 1 several.
	KindDomain
)

// String returns "flat", "tree", "block" or "domain".
func (k Kind) String() string {
	switch k {
	case KindFlat:
		return "flat"
	case KindTree:
		return "tree"
	case KindBlock:
		return "block"
	case KindDomain:
		return "domain"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Quality measures how spread a set of nodes is over the topology a
// request was placed on. Simulations can average Score over allocations;
// the raw fields say why.
type Quality struct {
	Kind  Kind
	Nodes int // nodes in the set
	// Units is the number of leaf switches, base blocks or NVLink domains
	// the set spans; MinUnits is the fewest that Nodes nodes could span on
	// this graph with every node free.
	Units, MinUnits int
	// Level is the level of the lowest switch or aggregated block holding
	// the whole set (0: a single leaf switch, base block or domain); when
	// the set has no common ancestor it is one more than the highest level.
	// MinLevel is the lowest level of any group with at least Nodes nodes.
	Level, MinLevel int
	// Domains is the number of distinct NVLink domains the set touches,
	// whatever the Kind (0 when the graph has none).
	Domains int
	// Score is in (0, 1], 1 being ideal:
	// 0.5·MinUnits/Units + 0.5·(MinLevel+1)/(Level+1).
	// It is 1 for KindFlat and 0 for an empty set.
	Score float64
}

// Quality measures set on the topology a request with the given domain
// mode is placed on: NVLink domains for DomainOne and DomainBalanced;
// otherwise the block topology, the tree, or the domains, whichever the
// graph has (in that order). Select returns this value for its placement,
// so arbitrary sets (another scheduler's choices, a random subset) can be
// compared with it.
func (g *Graph) Quality(set NodeSet, mode DomainMode) Quality {
	q := Quality{Nodes: set.Count()}
	if g.dom != nil {
		seen := make([]bool, len(g.domains))
		for i := range set.All() {
			if i >= len(g.domainOf) {
				break
			}
			if d := g.domainOf[i]; d >= 0 && !seen[d] {
				seen[d] = true
				q.Domains++
			}
		}
	}
	var h *hier
	switch {
	case mode != DomainAny && g.dom != nil:
		h, q.Kind = g.dom, KindDomain
	case g.block != nil:
		h, q.Kind = g.block, KindBlock
	case g.tree != nil:
		h, q.Kind = g.tree, KindTree
	case g.dom != nil:
		h, q.Kind = g.dom, KindDomain
	}
	if q.Nodes == 0 {
		return q
	}
	if h == nil {
		q.Score = 1
		return q
	}
	q.Units, q.Level = h.spread(set)
	q.MinUnits, q.MinLevel = h.minUnits(q.Nodes), h.minLevel(q.Nodes)
	if q.Units == 0 { // members outside the graph only
		return q
	}
	q.Score = groupScore(q.MinUnits, q.MinLevel, q.Units, q.Level)
	return q
}
