package topology

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// DomainMode says how a request relates to multi-node NVLink domains.
type DomainMode uint8

const (
	// DomainAny (the zero value) does not constrain placement to domains.
	// Domains still guide fragmentation: inside a leaf switch, nodes outside
	// any domain and nodes of already broken domains are taken before nodes
	// of a whole free domain, and on a graph with only domains, small jobs
	// go to loose nodes and the tightest domain first.
	DomainAny DomainMode = iota
	// DomainOne places every node in a single NVLink domain (the tightest
	// one that fits). A request larger than every domain is ErrNeverFits.
	DomainOne
	// DomainBalanced places the nodes in the fewest NVLink domains that can
	// hold them, in slices whose sizes differ by at most one node (e.g. 24
	// nodes → 12 + 12). When no such balanced split exists on the current
	// candidates, the most balanced split over the same number of domains is
	// returned with Placement.Met false.
	DomainBalanced
)

// String returns "any", "one" or "balanced".
func (m DomainMode) String() string {
	switch m {
	case DomainAny:
		return "any"
	case DomainOne:
		return "one"
	case DomainBalanced:
		return "balanced"
	}
	return fmt.Sprintf("DomainMode(%d)", uint8(m))
}

// Constraints are the optional parts of a placement request. The zero value
// asks for the least-spread placement with no further constraint.
type Constraints struct {
	// MaxLeafSwitches is the count of Slurm's --switches=count@max-wait:
	// the most leaf switches (base blocks under block topology) the job
	// wants. 0 means no limit. Placement prefers a placement within the
	// limit; when none exists it returns the best placement with
	// Placement.Met false, and the caller decides whether to keep waiting
	// (until max-wait) or to accept it.
	MaxLeafSwitches int
	// Segment is Slurm's --segment: the nodes come in segments of Segment
	// nodes, each inside one leaf switch or base block. The node count must
	// be a multiple of it. Under block topology, segments may lie in
	// different aggregated blocks (the level limit of BlockSizes does not
	// apply), but the lowest common aggregate is still preferred.
	// 0 or 1 means no segmentation.
	Segment int
	// Domains constrains the placement to NVLink domains.
	Domains DomainMode
}

// String formats the constraints the way Slurm options read, e.g.
// "switches=2 segment=4 domains=one", or "none".
func (c Constraints) String() string {
	var parts []string
	if c.MaxLeafSwitches != 0 {
		parts = append(parts, fmt.Sprintf("switches=%d", c.MaxLeafSwitches))
	}
	if c.Segment != 0 {
		parts = append(parts, fmt.Sprintf("segment=%d", c.Segment))
	}
	if c.Domains != DomainAny {
		parts = append(parts, "domains="+c.Domains.String())
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// Placement is the outcome of Graph.Select.
type Placement struct {
	// Nodes holds exactly the requested number of nodes, all candidates.
	Nodes NodeSet
	// Met reports whether every soft constraint was satisfied: the leaf
	// switch limit of Constraints.MaxLeafSwitches and the balanced slices
	// of DomainBalanced. It is always true without such constraints.
	Met bool
	// Quality scores the placement (see Quality).
	Quality Quality
}

// Select chooses n nodes among cand (the nodes that can take the job's
// per-node request now; the caller computes it) with the least spread over
// the graph's topology.
//
// Tree topology: placement happens under one switch: the one whose best
// placement has the highest Quality score — fewest leaf switches relative to
// the ideal and the lowest level, which on a two-level tree is Slurm's
// "lowest switch that can hold the job" — then the tighter switch (fewer
// candidates), then configuration order. A single leaf is always chosen
// when one holds n candidates (the tightest such leaf, so a small job fills
// a partly used leaf rather than break into a free one). Below the chosen
// switch, leaves are chosen best-fit: the fewest leaf switches possible
// and, among such choices, the one whose largest leaf is smallest (then
// the next largest, …): every leaf but one is taken whole, the remainder
// comes from the tightest leaf that fits it, and large free leaves stay
// intact. On deeper trees, among leaves with equal counts the one closest
// to the leaves already chosen wins. Switches without a common ancestor are
// never spanned. With Constraints.MaxLeafSwitches, the best switch whose
// placement stays within the limit wins; when there is none, the overall
// best placement is returned with Met false.
//
// Block topology: the job lies within one aggregated block of the smallest
// BlockSizes entry that holds n nodes (any level when n exceeds the largest
// size), chosen and filled as for a tree.
//
// NVLink domains: see DomainMode. Inside each chosen domain, nodes are
// chosen by the tree or block rules when the graph has them.
//
// Without any topology the n lowest-numbered candidates are taken, and
// MaxLeafSwitches has nothing to limit (Met is true).
//
// Per-group candidate counts are computed once per call with one
// AND+popcount per bitset word of each leaf, and whole switches are then
// accepted or pruned by their counts; no node is examined one by one except
// in the partly taken leaves.
//
// Errors: ErrBadRequest for invalid arguments, ErrNeverFits when no set of
// nodes of this graph could ever satisfy the request, ErrNoPlacement when
// the current candidates cannot. The result is deterministic.
func (g *Graph) Select(cand NodeSet, n int, c Constraints) (Placement, error) {
	if err := g.checkRequest(cand, n, c); err != nil {
		return Placement{}, err
	}
	if cand.Len() < len(g.names) { // pad to the graph's length
		full := NewNodeSet(len(g.names))
		full.CopyFrom(cand)
		cand = full
	}
	var (
		set NodeSet
		met bool
		err error
	)
	switch {
	case c.Domains != DomainAny:
		set, met, err = g.selectDomains(cand, n, c)
	default:
		if h, levelCap := g.placementHier(n, c.Segment); h != nil {
			set, met, err = g.selectHier(h, cand, n, c, levelCap)
		} else {
			set, met, err = g.selectFlat(cand, n)
		}
	}
	if err != nil {
		return Placement{}, err
	}
	return Placement{Nodes: set, Met: met, Quality: g.Quality(set, c.Domains)}, nil
}

// Feasible reports whether a request of n nodes with constraints c could
// ever be placed on this graph, that is on an empty cluster: nil, or an
// error wrapping ErrBadRequest or ErrNeverFits. Schedulers call it at
// submit time so that an impossible job is rejected instead of pending
// forever.
func (g *Graph) Feasible(n int, c Constraints) error {
	if err := g.checkRequest(NodeSet{}, n, c); err != nil {
		return err
	}
	return g.neverFits(n, c)
}

func (g *Graph) checkRequest(cand NodeSet, n int, c Constraints) error {
	switch {
	case n < 1:
		return fmt.Errorf("node count %d: must be at least 1: %w", n, ErrBadRequest)
	case cand.Len() > len(g.names):
		return fmt.Errorf("candidate set of length %d for a graph of %d nodes: %w", cand.Len(), len(g.names), ErrBadRequest)
	case c.MaxLeafSwitches < 0:
		return fmt.Errorf("MaxLeafSwitches %d: must not be negative: %w", c.MaxLeafSwitches, ErrBadRequest)
	case c.Segment < 0:
		return fmt.Errorf("Segment %d: must not be negative: %w", c.Segment, ErrBadRequest)
	case c.Segment > 1 && n%c.Segment != 0:
		return fmt.Errorf("node count %d: not a multiple of Segment %d: %w", n, c.Segment, ErrBadRequest)
	case c.Domains > DomainBalanced:
		return fmt.Errorf("Domains %v: unknown mode: %w", c.Domains, ErrBadRequest)
	case c.Domains != DomainAny && len(g.domains) == 0:
		return fmt.Errorf("Domains %v: the graph has no NVLink domains: %w", c.Domains, ErrBadRequest)
	case c.Domains == DomainBalanced && c.Segment > 1:
		return fmt.Errorf("Segment %d with Domains %v: segments of balanced domain slices are not supported: %w", c.Segment, c.Domains, ErrBadRequest)
	}
	return nil
}

// blockCap is the highest block level a placement of n nodes may use: the
// smallest enforced block size holding n, or the whole system when n is
// larger than every size or the request is segmented.
func (g *Graph) blockCap(n, seg int) int32 {
	if seg <= 1 {
		for i, s := range g.blockSizes {
			if n <= s {
				return int32(i)
			}
		}
	}
	return g.block.maxLevel
}

// placementHier returns the hierarchy a request of n nodes in segments
// of seg that ignores NVLink domains is placed on — blocks, else the tree,
// else the domains — and the highest level it may use; nil without any
// topology.
func (g *Graph) placementHier(n, seg int) (*hier, int32) {
	switch {
	case g.block != nil:
		return g.block, g.blockCap(n, seg)
	case g.tree != nil:
		return g.tree, g.tree.maxLevel
	case g.dom != nil:
		return g.dom, g.dom.maxLevel
	}
	return nil, 0
}

// neverFits returns ErrNeverFits when the request fails even with every
// node free, otherwise nil.
func (g *Graph) neverFits(n int, c Constraints) error {
	if n > len(g.names) {
		return fmt.Errorf("%d nodes requested, the graph has %d: %w", n, len(g.names), ErrNeverFits)
	}
	if c.Domains != DomainAny {
		largest, total := 0, 0
		for _, d := range g.domains {
			k := d.Nodes.Count()
			largest = max(largest, k)
			total += k
		}
		switch {
		case c.Domains == DomainOne && n > largest:
			return fmt.Errorf("%d nodes in one NVLink domain, the largest has %d: %w", n, largest, ErrNeverFits)
		case n > total:
			return fmt.Errorf("%d nodes in NVLink domains, which hold %d: %w", n, total, ErrNeverFits)
		}
		if c.Domains == DomainOne && c.Segment > 1 && g.inner() != nil {
			// Every segment must also fit a leaf of the domain's tree/blocks.
			for _, d := range g.domains {
				if _, _, err := g.selectIn(g.inner(), d.Nodes, n, c, g.inner().maxLevel); err == nil {
					return nil
				}
			}
			return fmt.Errorf("%d nodes in segments of %d in one NVLink domain: %w", n, c.Segment, ErrNeverFits)
		}
		return nil
	}
	h, cap := g.placementHier(n, c.Segment)
	if h == nil {
		return nil
	}
	p := newPlacer(h)
	h.structural(c.Segment, p.counts)
	if _, _, _, ok := p.choose(n, cap, 0); !ok {
		what := "under one root switch"
		switch h {
		case g.block:
			what = fmt.Sprintf("within one aggregated block of level %d", cap)
		case g.dom:
			what = "in NVLink domains"
		}
		if c.Segment > 1 {
			what += fmt.Sprintf(" in segments of %d nodes", c.Segment)
		}
		return fmt.Errorf("%d nodes %s: %w", n, what, ErrNeverFits)
	}
	return nil
}

// inner is the hierarchy used inside NVLink domains: blocks or tree.
func (g *Graph) inner() *hier {
	if g.block != nil {
		return g.block
	}
	return g.tree
}

func (g *Graph) noPlacement(n int, c Constraints, avail int) error {
	if err := g.neverFits(n, c); err != nil {
		return err
	}
	return fmt.Errorf("%d nodes (constraints: %v) among %d candidates: %w", n, c, avail, ErrNoPlacement)
}

func (g *Graph) selectFlat(cand NodeSet, n int) (NodeSet, bool, error) {
	if cand.Count() < n {
		return NodeSet{}, false, g.noPlacement(n, Constraints{}, cand.Count())
	}
	return g.firstN(cand, n), true, nil
}

// firstN returns the k lowest-numbered members of s (all when s has
// fewer).
func (g *Graph) firstN(s NodeSet, k int) NodeSet {
	set := NewNodeSet(len(g.names))
	for _, i := range s.FirstN(make([]int, 0, k), k) {
		set.Add(i)
	}
	return set
}

func (g *Graph) selectHier(h *hier, cand NodeSet, n int, c Constraints, levelCap int32) (NodeSet, bool, error) {
	set, met, err := g.selectIn(h, cand, n, c, levelCap)
	if err != nil {
		return NodeSet{}, false, g.noPlacement(n, c, cand.Count())
	}
	return set, met, nil
}

// selectIn places n nodes of cand on hierarchy h; err is non-nil (without
// detail) when no group within levelCap holds them.
func (g *Graph) selectIn(h *hier, cand NodeSet, n int, c Constraints, levelCap int32) (NodeSet, bool, error) {
	p := newPlacer(h)
	h.count(cand, c.Segment, p.counts)
	grp, k, met, ok := p.choose(n, levelCap, c.MaxLeafSwitches)
	if !ok {
		return NodeSet{}, false, ErrNoPlacement
	}
	picks := p.fill(grp, n, k)
	set := NewNodeSet(len(g.names))
	var domCount []int32
	for _, pk := range picks {
		raw := h.leafCount(cand, pk.leaf)
		if pk.take == raw {
			for q := h.maskOff[pk.leaf]; q < h.maskOff[pk.leaf+1]; q++ {
				w := h.maskWord[q]
				set.words[w] |= cand.words[w] & h.maskBits[q]
			}
			continue
		}
		if h != g.dom && g.dom != nil && domCount == nil {
			domCount = g.domainCounts(cand)
		}
		g.takeFromLeaf(h, cand, pk, set, domCount)
	}
	return set, met, nil
}

// domainCounts returns the candidate count of every NVLink domain.
func (g *Graph) domainCounts(cand NodeSet) []int32 {
	dc := make([]int32, len(g.domains))
	for d := range g.domains {
		dc[d] = g.dom.leafCount(cand, int32(d))
	}
	return dc
}

// takeFromLeaf adds pk.take candidates of leaf pk.leaf to set: the lowest
// numbered ones, except that with NVLink domains, nodes outside any domain
// come first, then nodes of the domains with the fewest candidates, so a
// whole free domain is broken last.
func (g *Graph) takeFromLeaf(h *hier, cand NodeSet, pk pick, set NodeSet, domCount []int32) {
	type nodeKey struct {
		node int
		key  int32
	}
	var nodes []nodeKey
	for q := h.maskOff[pk.leaf]; q < h.maskOff[pk.leaf+1]; q++ {
		w := int(h.maskWord[q])
		for b := cand.words[w] & h.maskBits[q]; b != 0; b &= b - 1 {
			nd := w<<6 + bits.TrailingZeros64(b)
			key := int32(0)
			if domCount != nil {
				if d := g.domainOf[nd]; d >= 0 {
					key = domCount[d]
				}
			}
			nodes = append(nodes, nodeKey{nd, key})
		}
	}
	if domCount != nil {
		slices.SortStableFunc(nodes, func(a, b nodeKey) int { return int(a.key - b.key) })
	}
	for _, nk := range nodes[:pk.take] {
		set.Add(nk.node)
	}
}

// selectDomains implements DomainOne and DomainBalanced.
func (g *Graph) selectDomains(cand NodeSet, n int, c Constraints) (NodeSet, bool, error) {
	counts := g.domainCounts(cand)
	nd := len(counts)
	if c.Domains == DomainOne {
		// The tightest domain that holds n (and whose leaves hold the
		// segments, when segmented); a linear scan per try, no sort.
		tried := make([]bool, nd)
		for {
			best := -1
			for d, cnt := range counts {
				if !tried[d] && int(cnt) >= n && (best < 0 || cnt < counts[best]) {
					best = d
				}
			}
			if best < 0 {
				return NodeSet{}, false, g.noPlacement(n, c, cand.Count())
			}
			if set, subMet, err := g.sliceOf(cand, best, n, c); err == nil {
				return set, subMet, nil
			}
			tried[best] = true
		}
	}
	order := make([]int, nd) // domains by ascending candidates, then index
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if counts[a] != counts[b] {
			return int(counts[a] - counts[b])
		}
		return a - b
	})

	type slice struct{ dom, nodes int }
	var parts []slice
	met := true
	// Fewest domains that can hold n.
	k, sum := 0, 0
	for i := nd - 1; i >= 0 && sum < n; i-- {
		sum += int(counts[order[i]])
		k++
	}
	if sum >= n {
		q, r := n/k, n%k
		// Balanced: k-r domains with ≥ q and r more with ≥ q+1, the
		// tightest such domains first.
		used := make([]bool, nd)
		for _, d := range order {
			if len(parts) < k-r && int(counts[d]) >= q {
				parts = append(parts, slice{d, q})
				used[d] = true
			}
		}
		for _, d := range order {
			if len(parts) < k && !used[d] && int(counts[d]) >= q+1 {
				parts = append(parts, slice{d, q + 1})
				used[d] = true
			}
		}
		if len(parts) < k {
			// Most balanced split over the k largest domains: water-fill.
			met = false
			parts = parts[:0]
			big := slices.Clone(order[nd-k:])
			slices.Reverse(big) // largest first
			give := waterFill(counts, big, n)
			for i, d := range big {
				parts = append(parts, slice{d, give[i]})
			}
		}
	}
	if len(parts) == 0 {
		return NodeSet{}, false, g.noPlacement(n, c, cand.Count())
	}
	set := NewNodeSet(len(g.names))
	for _, s := range parts {
		sub, subMet, err := g.sliceOf(cand, s.dom, s.nodes, c)
		if err != nil {
			return NodeSet{}, false, g.noPlacement(n, c, cand.Count())
		}
		met = met && subMet
		set.UnionWith(sub)
	}
	if c.MaxLeafSwitches > 0 && g.tree != nil {
		met = met && g.LeafSwitchSpan(set) <= c.MaxLeafSwitches
	}
	return set, met, nil
}

// sliceOf chooses k candidates of domain d, by the tree or block rules when
// the graph has them.
func (g *Graph) sliceOf(cand NodeSet, d, k int, c Constraints) (NodeSet, bool, error) {
	sub := cand.And(g.domains[d].Nodes)
	if h := g.inner(); h != nil {
		cc := c
		if c.Domains == DomainBalanced {
			cc.MaxLeafSwitches = 0
		}
		return g.selectIn(h, sub, k, cc, h.maxLevel)
	}
	if c.Segment > 1 && k%c.Segment != 0 {
		return NodeSet{}, false, ErrNoPlacement
	}
	return g.firstN(sub, k), true, nil
}

// waterFill splits n over the domains doms (capacities counts[d], which sum
// to at least n) as evenly as the capacities allow, in doms order.
func waterFill(counts []int32, doms []int, n int) []int {
	give := make([]int, len(doms))
	left := n
	open := len(doms)
	for left > 0 && open > 0 {
		share := max(left/open, 1)
		open = 0
		for i, d := range doms {
			room := int(counts[d]) - give[i]
			if room <= 0 || left == 0 {
				continue
			}
			t := min(room, share, left)
			give[i] += t
			left -= t
			if int(counts[d]) > give[i] {
				open++
			}
		}
	}
	return give
}
