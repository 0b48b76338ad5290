package topology

import (
	"fmt"
	"slices"
	"strings"
)

// MaxNodes bounds the number of nodes a Graph may hold.
const MaxNodes = 1 << 22

// Config describes a cluster's topology as plain data. The zero value is a
// flat cluster with no nodes; fields left empty mean "no such topology".
//
// Every entry of a Nodes or Switches list may be a single name or a Slurm
// hostlist expression ("tux[0-31]", "s[0-3]"), expanded with
// ExpandHostlist.
//
// At most one of Switches (topology/tree) and Blocks (topology/block) may
// be set, as Slurm runs one topology plugin at a time. Domains (multi-node
// NVLink domains) may accompany either, or stand alone.
type Config struct {
	// Nodes lists the node names in index order: node i of every NodeSet
	// is Nodes[i]. When empty, the nodes are numbered in order of first
	// appearance in Switches, then Blocks, then Domains.
	Nodes []string

	// Switches is the switch tree (Slurm topology/tree). Leaf switches list
	// Nodes, others list Switches; a switch may not list both. Every node
	// must be under exactly one leaf switch, every switch under at most one
	// parent, and the parent links may not form a cycle.
	Switches []SwitchConfig
	// SingleRoot, when set, rejects a tree with more than one root switch
	// (ErrMultipleRoots). Slurm's default (false) accepts several roots, but
	// a job never spans switches without a common ancestor.
	SingleRoot bool

	// Blocks are the base blocks of Slurm's topology/block, in the order
	// that defines which blocks aggregate together.
	Blocks []BlockConfig
	// BlockSizes are the block sizes, in nodes, that placement enforces:
	// BlockSizes[0] is the base block size (every block must hold at least
	// that many nodes) and each further size is a power-of-two multiple of
	// the previous one; an aggregated block of size BlockSizes[i] is
	// BlockSizes[i]/BlockSizes[0] consecutive base blocks. When empty, the
	// base size is the smallest block's node count and the further sizes
	// double it for as long as the aggregate spans no more than all blocks.
	BlockSizes []int

	// Domains are multi-node NVLink domains (GB200/GB300 NVL72-style racks,
	// e.g. 18 nodes × 4 GPUs on one NVLink fabric). They need not cover
	// every node; a node is in at most one domain.
	Domains []DomainConfig
}

// SwitchConfig is one switch of a tree topology (a SwitchName line of
// Slurm's topology.conf).
type SwitchConfig struct {
	Name     string   // switch name, unique
	Nodes    []string // child nodes (leaf switch); hostlist expressions allowed
	Switches []string // child switches; hostlist expressions allowed
	Line     int      // source line for error messages; 0 when not from a file
}

// BlockConfig is one base block of a block topology (a BlockName line of
// Slurm's topology.conf).
type BlockConfig struct {
	Name  string   // block name, unique
	Nodes []string // nodes of the block; hostlist expressions allowed
	Line  int      // source line for error messages; 0 when not from a file
}

// DomainConfig is one multi-node NVLink domain.
type DomainConfig struct {
	Name  string   // domain name, unique
	Nodes []string // nodes of the domain; hostlist expressions allowed
}

// Validate reports whether NewGraph would accept the configuration.
func (c Config) Validate() error {
	_, err := NewGraph(c)
	return err
}

// Switch is one switch of a Graph's tree, as returned by Graph.Switch. Its
// slices and NodeSet alias the graph's read-only data: do not modify them
// (Clone the NodeSet to get a copy).
type Switch struct {
	Name     string
	Level    int     // 0 for a leaf switch, 1 + the highest child level otherwise (Slurm's convention)
	Parent   int     // index of the parent switch, -1 for a root
	Children []int   // indices of the child switches, in configuration order
	Nodes    NodeSet // every node below the switch
}

// IsLeaf reports whether the switch connects nodes rather than switches.
func (s Switch) IsLeaf() bool { return len(s.Children) == 0 }

// Block is one base block of a block topology. Its NodeSet is read-only.
type Block struct {
	Name  string
	Nodes NodeSet
}

// Domain is one multi-node NVLink domain. Its NodeSet is read-only.
type Domain struct {
	Name  string
	Nodes NodeSet
}

// Graph is a validated, immutable cluster topology: node names and indices,
// a switch tree or blocks, and NVLink domains. Build one with NewGraph. All
// methods are safe for concurrent use because nothing mutates a Graph after
// construction.
type Graph struct {
	names []string
	index map[string]int

	switches []Switch
	swIndex  map[string]int
	roots    []int
	leafOf   []int32 // node → leaf switch, -1 without a tree

	blocks     []Block
	blockSizes []int
	blockOf    []int32 // node → block, -1 when none

	domains  []Domain
	domainOf []int32 // node → domain, -1 when none

	tree  *hier // nil without switches
	block *hier // nil without blocks
	dom   *hier // nil without domains; loose nodes are singleton leaves
}

// errAt wraps err in a LineError when the configuration came from a file.
func errAt(line int, err error) error {
	if line > 0 {
		return &LineError{Line: line, Err: err}
	}
	return err
}

func where(line int) string {
	if line > 0 {
		return fmt.Sprintf(" (line %d)", line)
	}
	return ""
}

// expandAll expands a list of hostlist expressions.
func expandAll(list []string) ([]string, error) {
	var out []string
	for _, e := range list {
		names, err := ExpandHostlist(e)
		if err != nil {
			return nil, err
		}
		out = append(out, names...)
		if len(out) > MaxNodes {
			return nil, fmt.Errorf("more than %d names: %w", MaxNodes, ErrTooLarge)
		}
	}
	return out, nil
}

// NewGraph validates cfg and builds its Graph. Errors wrap the sentinel
// that names the problem (ErrDuplicateName, ErrUnknownNode,
// ErrUnknownSwitch, ErrCycle, ErrMultipleParents, ErrOverlap,
// ErrMultipleRoots, ErrUnattached, ErrInvalidConfig, ErrSyntax,
// ErrTooLarge) and say which switch, block, domain or node is at fault.
func NewGraph(cfg Config) (*Graph, error) {
	if len(cfg.Switches) > 0 && len(cfg.Blocks) > 0 {
		return nil, fmt.Errorf("config has both switches and blocks; choose tree or block topology: %w", ErrInvalidConfig)
	}
	if len(cfg.BlockSizes) > 0 && len(cfg.Blocks) == 0 {
		return nil, fmt.Errorf("BlockSizes without any block: %w", ErrInvalidConfig)
	}
	g := &Graph{index: make(map[string]int)}
	explicit := len(cfg.Nodes) > 0
	if explicit {
		names, err := expandAll(cfg.Nodes)
		if err != nil {
			return nil, fmt.Errorf("Nodes: %w", err)
		}
		for _, n := range names {
			if _, dup := g.index[n]; dup {
				return nil, fmt.Errorf("Nodes: node %q listed twice: %w", n, ErrDuplicateName)
			}
			g.index[n] = len(g.names)
			g.names = append(g.names, n)
		}
	}
	resolve := func(name string) (int, error) {
		if i, ok := g.index[name]; ok {
			return i, nil
		}
		if explicit {
			return 0, fmt.Errorf("node %q: %w", name, ErrUnknownNode)
		}
		if len(g.names) >= MaxNodes {
			return 0, fmt.Errorf("more than %d nodes: %w", MaxNodes, ErrTooLarge)
		}
		g.index[name] = len(g.names)
		g.names = append(g.names, name)
		return len(g.names) - 1, nil
	}

	// Resolve every node list first so that the node count is final before
	// any NodeSet is sized.
	// resolveAll resolves the node list of one switch, block or domain
	// (kind), named name, from source line line (0: none).
	resolveAll := func(list []string, line int, kind, name string) ([]int32, error) {
		names, err := expandAll(list)
		if err != nil {
			return nil, errAt(line, fmt.Errorf("%s %q: Nodes: %w", kind, name, err))
		}
		var out []int32
		for _, n := range names {
			idx, err := resolve(n)
			if err != nil {
				return nil, errAt(line, fmt.Errorf("%s %q: %w", kind, name, err))
			}
			out = append(out, int32(idx))
		}
		return out, nil
	}
	swNodes := make([][]int32, len(cfg.Switches))
	for i, sc := range cfg.Switches {
		var err error
		if swNodes[i], err = resolveAll(sc.Nodes, sc.Line, "switch", sc.Name); err != nil {
			return nil, err
		}
	}
	blNodes := make([][]int32, len(cfg.Blocks))
	for i, bc := range cfg.Blocks {
		var err error
		if blNodes[i], err = resolveAll(bc.Nodes, bc.Line, "block", bc.Name); err != nil {
			return nil, err
		}
	}
	dmNodes := make([][]int32, len(cfg.Domains))
	for i, dc := range cfg.Domains {
		var err error
		if dmNodes[i], err = resolveAll(dc.Nodes, 0, "domain", dc.Name); err != nil {
			return nil, err
		}
	}

	n := len(g.names)
	g.leafOf = filled(n, -1)
	g.blockOf = filled(n, -1)
	g.domainOf = filled(n, -1)
	if len(cfg.Switches) > 0 {
		if err := g.buildTree(cfg, swNodes); err != nil {
			return nil, err
		}
	}
	if len(cfg.Blocks) > 0 {
		if err := g.buildBlocks(cfg, blNodes); err != nil {
			return nil, err
		}
	}
	if len(cfg.Domains) > 0 {
		if err := g.buildDomains(cfg, dmNodes); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func filled(n int, v int32) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func (g *Graph) buildTree(cfg Config, swNodes [][]int32) error {
	ns := len(cfg.Switches)
	g.swIndex = make(map[string]int, ns)
	for i, sc := range cfg.Switches {
		if sc.Name == "" || strings.ContainsAny(sc.Name, "[], \t\r\n") {
			return errAt(sc.Line, fmt.Errorf("switch #%d: invalid switch name %q: %w", i, sc.Name, ErrInvalidConfig))
		}
		if j, dup := g.swIndex[sc.Name]; dup {
			return errAt(sc.Line, fmt.Errorf("switch %q: already defined%s: %w", sc.Name, where(cfg.Switches[j].Line), ErrDuplicateName))
		}
		g.swIndex[sc.Name] = i
	}
	parent := filled(ns, -1)
	children := make([][]int32, ns)
	for i, sc := range cfg.Switches {
		if len(sc.Nodes) > 0 && len(sc.Switches) > 0 {
			return errAt(sc.Line, fmt.Errorf("switch %q: lists both Nodes and Switches: %w", sc.Name, ErrInvalidConfig))
		}
		kids, err := expandAll(sc.Switches)
		if err != nil {
			return errAt(sc.Line, fmt.Errorf("switch %q: Switches: %w", sc.Name, err))
		}
		for _, k := range kids {
			j, ok := g.swIndex[k]
			switch {
			case !ok:
				return errAt(sc.Line, fmt.Errorf("switch %q: child switch %q: %w", sc.Name, k, ErrUnknownSwitch))
			case j == i:
				return errAt(sc.Line, fmt.Errorf("switch %q: lists itself as a child: %w", sc.Name, ErrCycle))
			case parent[j] == int32(i):
				continue // listed twice under the same parent
			case parent[j] >= 0:
				return errAt(sc.Line, fmt.Errorf("switch %q: under both %q%s and %q: %w", k,
					cfg.Switches[parent[j]].Name, where(cfg.Switches[parent[j]].Line), sc.Name, ErrMultipleParents))
			}
			parent[j] = int32(i)
			children[i] = append(children[i], int32(j))
		}
		for _, nd := range swNodes[i] {
			switch prev := g.leafOf[nd]; {
			case prev == int32(i):
				continue
			case prev >= 0:
				return errAt(sc.Line, fmt.Errorf("node %q: under leaf switches %q%s and %q: %w", g.names[nd],
					cfg.Switches[prev].Name, where(cfg.Switches[prev].Line), sc.Name, ErrOverlap))
			}
			g.leafOf[nd] = int32(i)
		}
	}
	// Every switch must be reachable from a root; the rest sit on cycles
	// (each switch has at most one parent, so a cycle has no root above it).
	var roots []int32
	for i := range ns {
		if parent[i] < 0 {
			roots = append(roots, int32(i))
		}
	}
	seen := make([]bool, ns)
	stack := slices.Clone(roots)
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		seen[s] = true
		stack = append(stack, children[s]...)
	}
	for i := range ns {
		if seen[i] {
			continue
		}
		// Walk up until a switch repeats; the loop from there is the cycle.
		pos := map[int32]int{}
		var walk []int32
		sw := int32(i)
		for {
			if _, ok := pos[sw]; ok {
				break
			}
			pos[sw] = len(walk)
			walk = append(walk, sw)
			sw = parent[sw]
		}
		cycle := walk[pos[sw]:]
		slices.Reverse(cycle) // parent → child order
		first := slices.Index(cycle, slices.Min(cycle))
		cycle = slices.Concat(cycle[first:], cycle[:first])
		names := make([]string, 0, len(cycle)+1)
		for _, c := range cycle {
			names = append(names, cfg.Switches[c].Name)
		}
		names = append(names, names[0])
		return errAt(cfg.Switches[cycle[0]].Line, fmt.Errorf("switches %s: %w", strings.Join(names, " → "), ErrCycle))
	}
	if cfg.SingleRoot && len(roots) > 1 {
		a, b := cfg.Switches[roots[0]], cfg.Switches[roots[1]]
		return errAt(b.Line, fmt.Errorf("switches %q%s and %q have no common ancestor (%d roots): %w",
			a.Name, where(a.Line), b.Name, len(roots), ErrMultipleRoots))
	}
	if err := g.checkAttached(g.leafOf, "leaf switch"); err != nil {
		return err
	}
	leafNodes := make([][]int32, ns)
	for nd, s := range g.leafOf {
		leafNodes[s] = append(leafNodes[s], int32(nd))
	}
	g.tree = newHier(len(g.names), parent, children, leafNodes, roots)
	g.switches = make([]Switch, ns)
	for i, sc := range cfg.Switches {
		kids := make([]int, len(children[i]))
		for k, c := range children[i] {
			kids[k] = int(c)
		}
		g.switches[i] = Switch{Name: sc.Name, Level: int(g.tree.level[i]), Parent: int(parent[i]), Children: kids,
			Nodes: NodeSetOf(len(g.names))}
		for _, nd := range leafNodes[i] {
			g.switches[i].Nodes.Add(int(nd))
		}
	}
	for _, s := range g.tree.byLevel {
		if p := parent[s]; p >= 0 {
			g.switches[p].Nodes.UnionWith(g.switches[s].Nodes)
		}
	}
	for _, r := range roots {
		g.roots = append(g.roots, int(r))
	}
	return nil
}

func (g *Graph) checkAttached(of []int32, what string) error {
	missing := 0
	first := -1
	for nd, s := range of {
		if s < 0 {
			if first < 0 {
				first = nd
			}
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("node %q (and %d more) in no %s: %w", g.names[first], missing-1, what, ErrUnattached)
	}
	return nil
}

func (g *Graph) buildBlocks(cfg Config, blNodes [][]int32) error {
	nb := len(cfg.Blocks)
	names := make(map[string]int, nb)
	minSize := -1
	for i, bc := range cfg.Blocks {
		if bc.Name == "" || strings.ContainsAny(bc.Name, "[], \t\r\n") {
			return errAt(bc.Line, fmt.Errorf("block #%d: invalid block name %q: %w", i, bc.Name, ErrInvalidConfig))
		}
		if j, dup := names[bc.Name]; dup {
			return errAt(bc.Line, fmt.Errorf("block %q: already defined%s: %w", bc.Name, where(cfg.Blocks[j].Line), ErrDuplicateName))
		}
		names[bc.Name] = i
		count := 0
		for _, nd := range blNodes[i] {
			switch prev := g.blockOf[nd]; {
			case prev == int32(i):
				continue
			case prev >= 0:
				return errAt(bc.Line, fmt.Errorf("node %q: in blocks %q%s and %q: %w", g.names[nd],
					cfg.Blocks[prev].Name, where(cfg.Blocks[prev].Line), bc.Name, ErrOverlap))
			}
			g.blockOf[nd] = int32(i)
			count++
		}
		if count == 0 {
			return errAt(bc.Line, fmt.Errorf("block %q: has no nodes: %w", bc.Name, ErrInvalidConfig))
		}
		if minSize < 0 || count < minSize {
			minSize = count
		}
	}
	if err := g.checkAttached(g.blockOf, "block"); err != nil {
		return err
	}
	bs := slices.Clone(cfg.BlockSizes)
	if len(bs) == 0 {
		for f := 1; f <= nb; f *= 2 {
			bs = append(bs, minSize*f)
		}
	}
	for i, s := range bs {
		switch {
		case s <= 0:
			return fmt.Errorf("BlockSizes[%d] = %d: must be positive: %w", i, s, ErrInvalidConfig)
		case i == 0 && s > minSize:
			for j := range cfg.Blocks {
				if c := countOf(g.blockOf, int32(j)); c < s {
					return errAt(cfg.Blocks[j].Line, fmt.Errorf("block %q: has %d nodes, fewer than the base block size BlockSizes[0] = %d: %w",
						cfg.Blocks[j].Name, c, s, ErrInvalidConfig))
				}
			}
		case i > 0:
			r := s / bs[i-1]
			if s <= bs[i-1] || s%bs[i-1] != 0 || r&(r-1) != 0 {
				return fmt.Errorf("BlockSizes[%d] = %d: must be a power-of-two multiple of %d: %w", i, s, bs[i-1], ErrInvalidConfig)
			}
		}
	}
	g.blockSizes = bs
	g.blocks = make([]Block, nb)
	leafNodes := make([][]int32, nb)
	for nd, b := range g.blockOf {
		leafNodes[b] = append(leafNodes[b], int32(nd))
	}
	for i, bc := range cfg.Blocks {
		g.blocks[i] = Block{Name: bc.Name, Nodes: NodeSetOf(len(g.names))}
		for _, nd := range leafNodes[i] {
			g.blocks[i].Nodes.Add(int(nd))
		}
	}
	// Aggregated blocks: level i groups bs[i]/bs[0] consecutive base blocks.
	parent := filled(nb, -1)
	var children [][]int32 = make([][]int32, nb)
	prevFirst, prevCount, prevFactor := 0, nb, 1
	for i := 1; i < len(bs); i++ {
		f := bs[i] / bs[0]
		cnt := (nb + f - 1) / f
		first := len(parent)
		for range cnt {
			parent = append(parent, -1)
			children = append(children, nil)
		}
		for x := range prevCount {
			p := int32(first + x*prevFactor/f)
			parent[prevFirst+x] = p
			children[p] = append(children[p], int32(prevFirst+x))
		}
		prevFirst, prevCount, prevFactor = first, cnt, f
	}
	if prevCount > 1 { // a system-wide root above the top aggregates
		root := int32(len(parent))
		parent = append(parent, -1)
		children = append(children, nil)
		for x := range prevCount {
			parent[prevFirst+x] = root
			children[root] = append(children[root], int32(prevFirst+x))
		}
	}
	var roots []int32
	for i, p := range parent {
		if p < 0 {
			roots = append(roots, int32(i))
		}
	}
	for len(leafNodes) < len(parent) {
		leafNodes = append(leafNodes, nil)
	}
	g.block = newHier(len(g.names), parent, children, leafNodes, roots)
	return nil
}

func countOf(of []int32, v int32) int {
	c := 0
	for _, x := range of {
		if x == v {
			c++
		}
	}
	return c
}

func (g *Graph) buildDomains(cfg Config, dmNodes [][]int32) error {
	nd := len(cfg.Domains)
	names := make(map[string]int, nd)
	for i, dc := range cfg.Domains {
		if dc.Name == "" {
			return fmt.Errorf("domain #%d: empty name: %w", i, ErrInvalidConfig)
		}
		if _, dup := names[dc.Name]; dup {
			return fmt.Errorf("domain %q: already defined: %w", dc.Name, ErrDuplicateName)
		}
		names[dc.Name] = i
		count := 0
		for _, node := range dmNodes[i] {
			switch prev := g.domainOf[node]; {
			case prev == int32(i):
				continue
			case prev >= 0:
				return fmt.Errorf("node %q: in NVLink domains %q and %q: %w", g.names[node], cfg.Domains[prev].Name, dc.Name, ErrOverlap)
			}
			g.domainOf[node] = int32(i)
			count++
		}
		if count == 0 {
			return fmt.Errorf("domain %q: has no nodes: %w", dc.Name, ErrInvalidConfig)
		}
	}
	// Hierarchy: one leaf per domain, one singleton leaf per node outside
	// every domain, all under one root; leaves ordered by smallest node.
	leafNodes := make([][]int32, nd)
	g.domains = make([]Domain, nd)
	for i, dc := range cfg.Domains {
		g.domains[i] = Domain{Name: dc.Name, Nodes: NodeSetOf(len(g.names))}
	}
	type leaf struct{ first, group int32 }
	var order []leaf
	for node, d := range g.domainOf {
		if d < 0 {
			order = append(order, leaf{int32(node), int32(len(leafNodes))})
			leafNodes = append(leafNodes, []int32{int32(node)})
			continue
		}
		if len(leafNodes[d]) == 0 {
			order = append(order, leaf{int32(node), d})
		}
		leafNodes[d] = append(leafNodes[d], int32(node))
		g.domains[d].Nodes.Add(node)
	}
	parent := filled(len(leafNodes), -1)
	children := make([][]int32, len(leafNodes))
	roots := []int32{}
	if len(leafNodes) > 1 {
		root := int32(len(leafNodes))
		for _, l := range order {
			parent[l.group] = root
		}
		parent = append(parent, -1)
		kids := make([]int32, len(order))
		for i, l := range order {
			kids[i] = l.group
		}
		children = append(children, kids)
		leafNodes = append(leafNodes, nil)
		roots = append(roots, root)
	} else {
		roots = append(roots, 0)
	}
	g.dom = newHier(len(g.names), parent, children, leafNodes, roots)
	return nil
}

// NumNodes returns the number of nodes; NodeSets for this graph have this
// length.
func (g *Graph) NumNodes() int { return len(g.names) }

// NodeName returns the name of node i ("" when out of range).
func (g *Graph) NodeName(i int) string {
	if i < 0 || i >= len(g.names) {
		return ""
	}
	return g.names[i]
}

// NodeIndex returns the index of the named node.
func (g *Graph) NodeIndex(name string) (int, bool) {
	i, ok := g.index[name]
	return i, ok
}

// NodeNames formats the members of set as a compressed Slurm hostlist
// ("tux[0-3,8]"); indices outside the graph are ignored.
func (g *Graph) NodeNames(set NodeSet) string {
	var names []string
	for i := range set.All() {
		if i < len(g.names) {
			names = append(names, g.names[i])
		}
	}
	s, _ := CompressHostlist(names) // names were validated as hostlist-safe
	return s
}

// NumSwitches returns the number of switches (0 without a tree).
func (g *Graph) NumSwitches() int { return len(g.switches) }

// Switch returns switch i (configuration order); ok is false when i is out
// of range.
func (g *Graph) Switch(i int) (sw Switch, ok bool) {
	if i < 0 || i >= len(g.switches) {
		return Switch{Parent: -1}, false
	}
	return g.switches[i], true
}

// SwitchIndex returns the index of the named switch.
func (g *Graph) SwitchIndex(name string) (int, bool) {
	i, ok := g.swIndex[name]
	return i, ok
}

// Roots returns the indices of the root switches in configuration order.
// The returned slice is a copy.
func (g *Graph) Roots() []int { return slices.Clone(g.roots) }

// LeafSwitchOf returns the leaf switch of node i, or -1 without a tree or
// when i is out of range.
func (g *Graph) LeafSwitchOf(i int) int {
	if i < 0 || i >= len(g.leafOf) {
		return -1
	}
	return int(g.leafOf[i])
}

// LowestCommonSwitch returns the lowest switch whose subtree holds every
// member of set. ok is false when the graph has no tree, the set is empty,
// or its members have no common ancestor (several roots).
func (g *Graph) LowestCommonSwitch(set NodeSet) (sw int, ok bool) {
	if g.tree == nil {
		return -1, false
	}
	lca := int32(-1)
	var last int32 = -1
	for i := range set.All() {
		if i >= len(g.leafOf) {
			break
		}
		leaf := g.leafOf[i]
		if leaf == last {
			continue
		}
		last = leaf
		if lca < 0 {
			lca = leaf
			continue
		}
		if lca = g.tree.lca(lca, leaf); lca < 0 {
			return -1, false
		}
	}
	return int(lca), lca >= 0
}

// LeafSwitchSpan returns the number of distinct leaf switches the members of
// set are under (0 without a tree).
func (g *Graph) LeafSwitchSpan(set NodeSet) int {
	if g.tree == nil {
		return 0
	}
	units, _ := g.tree.spread(set)
	return units
}

// NumBlocks returns the number of base blocks (0 without block topology).
func (g *Graph) NumBlocks() int { return len(g.blocks) }

// Block returns base block i (configuration order); ok is false when i is
// out of range.
func (g *Graph) Block(i int) (b Block, ok bool) {
	if i < 0 || i >= len(g.blocks) {
		return Block{}, false
	}
	return g.blocks[i], true
}

// BlockSizes returns the enforced block sizes (a copy), BlockSizes[0] being
// the base block size; nil without block topology.
func (g *Graph) BlockSizes() []int { return slices.Clone(g.blockSizes) }

// BlockOf returns the base block of node i, or -1.
func (g *Graph) BlockOf(i int) int {
	if i < 0 || i >= len(g.blockOf) {
		return -1
	}
	return int(g.blockOf[i])
}

// NumDomains returns the number of NVLink domains.
func (g *Graph) NumDomains() int { return len(g.domains) }

// Domain returns NVLink domain i (configuration order); ok is false when i
// is out of range.
func (g *Graph) Domain(i int) (d Domain, ok bool) {
	if i < 0 || i >= len(g.domains) {
		return Domain{}, false
	}
	return g.domains[i], true
}

// DomainOf returns the NVLink domain of node i, or -1 when the node is in
// none.
func (g *Graph) DomainOf(i int) int {
	if i < 0 || i >= len(g.domainOf) {
		return -1
	}
	return int(g.domainOf[i])
}
