package topology

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// threeLevel is a small three-level tree:
//
//	          top
//	     /           \
//	  agg0           agg1
//	 /    \         /    \
//	l0    l1       l2    l3
//	n0-3  n4-7    n8-11  n12-15
func threeLevel() Config {
	return Config{Switches: []SwitchConfig{
		{Name: "l0", Nodes: []string{"n[0-3]"}},
		{Name: "l1", Nodes: []string{"n[4-7]"}},
		{Name: "l2", Nodes: []string{"n[8-11]"}},
		{Name: "l3", Nodes: []string{"n[12-15]"}},
		{Name: "agg0", Switches: []string{"l[0-1]"}},
		{Name: "agg1", Switches: []string{"l2", "l3"}},
		{Name: "top", Switches: []string{"agg[0-1]"}},
	}}
}

func mustGraph(t testing.TB, cfg Config) *Graph {
	t.Helper()
	g, err := NewGraph(cfg)
	require.NoError(t, err)
	return g
}

func TestGraphTree(t *testing.T) {
	g := mustGraph(t, threeLevel())
	require.Equal(t, 16, g.NumNodes())
	require.Equal(t, 7, g.NumSwitches())
	assert.Equal(t, "n5", g.NodeName(5))
	assert.Equal(t, "", g.NodeName(16))
	i, ok := g.NodeIndex("n12")
	assert.True(t, ok)
	assert.Equal(t, 12, i)
	_, ok = g.NodeIndex("nope")
	assert.False(t, ok)

	top, ok := g.SwitchIndex("top")
	require.True(t, ok)
	assert.Equal(t, []int{top}, g.Roots())
	ts := swAt(g, top)
	assert.Equal(t, 2, ts.Level)
	assert.Equal(t, -1, ts.Parent)
	assert.Equal(t, 16, ts.Nodes.Count())
	assert.False(t, ts.IsLeaf())

	a1, _ := g.SwitchIndex("agg1")
	as := swAt(g, a1)
	assert.Equal(t, 1, as.Level)
	assert.Equal(t, top, as.Parent)
	l2, _ := g.SwitchIndex("l2")
	l3, _ := g.SwitchIndex("l3")
	assert.Equal(t, []int{l2, l3}, as.Children)
	assert.Equal(t, "{8-15}", as.Nodes.String())

	ls := swAt(g, l2)
	assert.True(t, ls.IsLeaf())
	assert.Equal(t, 0, ls.Level)
	assert.Equal(t, a1, ls.Parent)
	assert.Equal(t, l2, g.LeafSwitchOf(9))
	assert.Equal(t, -1, g.LeafSwitchOf(99))

	tests := []struct {
		nodes []int
		want  string
		ok    bool
		span  int
	}{
		{nil, "", false, 0},
		{[]int{0}, "l0", true, 1},
		{[]int{0, 3}, "l0", true, 1},
		{[]int{0, 4}, "agg0", true, 2},
		{[]int{8, 15}, "agg1", true, 2},
		{[]int{0, 15}, "top", true, 2},
		{[]int{0, 1, 5, 9, 13}, "top", true, 4},
	}
	for _, tc := range tests {
		set := NodeSetOf(16, tc.nodes...)
		sw, ok := g.LowestCommonSwitch(set)
		assert.Equal(t, tc.ok, ok, "%v", tc.nodes)
		if ok {
			assert.Equal(t, tc.want, swAt(g, sw).Name, "%v", tc.nodes)
		}
		assert.Equal(t, tc.span, g.LeafSwitchSpan(set), "%v", tc.nodes)
	}
	assert.Equal(t, "n[0-3,8]", g.NodeNames(NodeSetOf(16, 8, 0, 1, 2, 3)))
}

func TestGraphMultipleRoots(t *testing.T) {
	cfg := Config{Switches: []SwitchConfig{
		{Name: "a", Nodes: []string{"n[0-1]"}},
		{Name: "b", Nodes: []string{"n[2-3]"}},
	}}
	g := mustGraph(t, cfg)
	assert.Len(t, g.Roots(), 2)
	_, ok := g.LowestCommonSwitch(NodeSetOf(4, 0, 2))
	assert.False(t, ok, "no common ancestor")
	cfg.SingleRoot = true
	_, err := NewGraph(cfg)
	assert.ErrorIs(t, err, ErrMultipleRoots)
}

func TestGraphExplicitNodes(t *testing.T) {
	cfg := threeLevel()
	// The scheduler's own numbering: reversed.
	for i := 15; i >= 0; i-- {
		cfg.Nodes = append(cfg.Nodes, "n"+itoa(i))
	}
	g := mustGraph(t, cfg)
	assert.Equal(t, "n15", g.NodeName(0))
	l0, _ := g.SwitchIndex("l0")
	assert.Equal(t, "{12-15}", swAt(g, l0).Nodes.String())
}

func itoa(i int) string { return string(appendPadded(nil, int64(i), 0)) }

func TestGraphErrors(t *testing.T) {
	sw := func(name string, nodes, kids []string) SwitchConfig {
		return SwitchConfig{Name: name, Nodes: nodes, Switches: kids}
	}
	tests := []struct {
		name    string
		cfg     Config
		want    error
		mention string
	}{
		{"cycle", Config{Switches: []SwitchConfig{
			sw("l", []string{"n0"}, nil), sw("a", nil, []string{"b", "l"}), sw("b", nil, []string{"c"}), sw("c", nil, []string{"a"}),
		}}, ErrCycle, "a → b → c → a"},
		{"self cycle", Config{Switches: []SwitchConfig{sw("a", nil, []string{"a"})}}, ErrCycle, `"a"`},
		{"unknown switch", Config{Switches: []SwitchConfig{sw("l", []string{"n0"}, nil), sw("t", nil, []string{"l", "x"})}},
			ErrUnknownSwitch, `"x"`},
		{"unknown node", Config{Nodes: []string{"n0"}, Switches: []SwitchConfig{sw("l", []string{"n[0-1]"}, nil)}},
			ErrUnknownNode, `"n1"`},
		{"node under two leaves", Config{Switches: []SwitchConfig{sw("a", []string{"n[0-1]"}, nil), sw("b", []string{"n1"}, nil)}},
			ErrOverlap, `node "n1": under leaf switches "a" and "b"`},
		{"two parents", Config{Switches: []SwitchConfig{
			sw("l", []string{"n0"}, nil), sw("a", nil, []string{"l"}), sw("b", nil, []string{"l"}),
		}}, ErrMultipleParents, `"l": under both "a" and "b"`},
		{"multiple roots", Config{SingleRoot: true, Switches: []SwitchConfig{sw("a", []string{"n0"}, nil), sw("b", []string{"n1"}, nil)}},
			ErrMultipleRoots, `"a" and "b"`},
		{"nodes and switches", Config{Switches: []SwitchConfig{sw("l", []string{"n0"}, nil), sw("a", []string{"n1"}, []string{"l"})}},
			ErrInvalidConfig, "both Nodes and Switches"},
		{"duplicate switch", Config{Switches: []SwitchConfig{sw("a", []string{"n0"}, nil), sw("a", []string{"n1"}, nil)}},
			ErrDuplicateName, `"a"`},
		{"empty switch name", Config{Switches: []SwitchConfig{sw("", []string{"n0"}, nil)}}, ErrInvalidConfig, "invalid switch name"},
		{"duplicate node", Config{Nodes: []string{"n0", "n[0-1]"}}, ErrDuplicateName, `"n0"`},
		{"unattached", Config{Nodes: []string{"n[0-2]"}, Switches: []SwitchConfig{sw("a", []string{"n0"}, nil)}},
			ErrUnattached, `"n1" (and 1 more)`},
		{"bad hostlist", Config{Switches: []SwitchConfig{sw("a", []string{"n[0-"}, nil)}}, ErrSyntax, `switch "a"`},
		{"tree and blocks", Config{Switches: []SwitchConfig{sw("a", []string{"n0"}, nil)}, Blocks: []BlockConfig{{Name: "b", Nodes: []string{"n0"}}}},
			ErrInvalidConfig, "both switches and blocks"},
		{"block overlap", Config{Blocks: []BlockConfig{{Name: "b0", Nodes: []string{"n[0-1]"}}, {Name: "b1", Nodes: []string{"n[1-2]"}}}},
			ErrOverlap, `"b0" and "b1"`},
		{"block too small", Config{BlockSizes: []int{4}, Blocks: []BlockConfig{{Name: "b0", Nodes: []string{"n[0-3]"}}, {Name: "b1", Nodes: []string{"n[4-6]"}}}},
			ErrInvalidConfig, `block "b1": has 3 nodes`},
		{"block sizes not power of two", Config{BlockSizes: []int{4, 12}, Blocks: []BlockConfig{{Name: "b0", Nodes: []string{"n[0-3]"}}}},
			ErrInvalidConfig, "BlockSizes[1] = 12"},
		{"block sizes decreasing", Config{BlockSizes: []int{4, 2}, Blocks: []BlockConfig{{Name: "b0", Nodes: []string{"n[0-3]"}}}},
			ErrInvalidConfig, "BlockSizes[1] = 2"},
		{"block size zero", Config{BlockSizes: []int{0}, Blocks: []BlockConfig{{Name: "b0", Nodes: []string{"n[0-3]"}}}},
			ErrInvalidConfig, "BlockSizes[0] = 0"},
		{"block sizes without blocks", Config{BlockSizes: []int{4}}, ErrInvalidConfig, "BlockSizes without"},
		{"duplicate block", Config{Blocks: []BlockConfig{{Name: "b", Nodes: []string{"n0"}}, {Name: "b", Nodes: []string{"n1"}}}},
			ErrDuplicateName, `block "b"`},
		{"empty block", Config{Blocks: []BlockConfig{{Name: "b"}}}, ErrInvalidConfig, "no nodes"},
		{"unattached block node", Config{Nodes: []string{"n[0-1]"}, Blocks: []BlockConfig{{Name: "b", Nodes: []string{"n0"}}}},
			ErrUnattached, `"n1"`},
		{"domain overlap", Config{Domains: []DomainConfig{{Name: "d0", Nodes: []string{"n[0-1]"}}, {Name: "d1", Nodes: []string{"n1"}}}},
			ErrOverlap, `"d0" and "d1"`},
		{"empty domain", Config{Domains: []DomainConfig{{Name: "d0"}}}, ErrInvalidConfig, "no nodes"},
		{"duplicate domain", Config{Domains: []DomainConfig{{Name: "d", Nodes: []string{"n0"}}, {Name: "d", Nodes: []string{"n1"}}}},
			ErrDuplicateName, `domain "d"`},
		{"unknown domain node", Config{Nodes: []string{"n0"}, Domains: []DomainConfig{{Name: "d", Nodes: []string{"m0"}}}},
			ErrUnknownNode, `"m0"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGraph(tc.cfg)
			require.Error(t, err)
			assert.Nil(t, g)
			assert.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), tc.mention)
			assert.ErrorIs(t, tc.cfg.Validate(), tc.want)
			var le *LineError
			assert.False(t, errors.As(err, &le), "no line numbers without Line fields")
		})
	}
}

func TestGraphBlocks(t *testing.T) {
	var blocks []BlockConfig
	for b := range 8 {
		blocks = append(blocks, BlockConfig{Name: "b" + itoa(b), Nodes: []string{"n[" + itoa(4*b) + "-" + itoa(4*b+3) + "]"}})
	}
	g := mustGraph(t, Config{Blocks: blocks, BlockSizes: []int{4, 8, 32}})
	assert.Equal(t, 8, g.NumBlocks())
	assert.Equal(t, []int{4, 8, 32}, g.BlockSizes())
	assert.Equal(t, "b2", blkAt(g, 2).Name)
	assert.Equal(t, "{8-11}", blkAt(g, 2).Nodes.String())
	assert.Equal(t, 2, g.BlockOf(9))
	assert.Equal(t, -1, g.BlockOf(32))
	// Levels: base blocks 0, pairs 1, one group of all 8 at level 2.
	assert.Equal(t, int32(2), g.block.maxLevel)

	// Default sizes: base = smallest block, doubling up to all blocks.
	g2 := mustGraph(t, Config{Blocks: blocks[:5]})
	assert.Equal(t, []int{4, 8, 16}, g2.BlockSizes())
	assert.Equal(t, int32(3), g2.block.maxLevel, "a system root above two top aggregates")
}

func TestGraphDomains(t *testing.T) {
	g := mustGraph(t, Config{
		Nodes: []string{"c[0-39]"},
		Domains: []DomainConfig{
			{Name: "nvl0", Nodes: []string{"c[0-17]"}},
			{Name: "nvl1", Nodes: []string{"c[18-35]"}},
		},
	})
	assert.Equal(t, 2, g.NumDomains())
	assert.Equal(t, "nvl1", domAt(g, 1).Name)
	assert.Equal(t, 18, domAt(g, 1).Nodes.Count())
	assert.Equal(t, 1, g.DomainOf(20))
	assert.Equal(t, -1, g.DomainOf(37))
	assert.Equal(t, -1, g.DomainOf(-1))
	assert.Equal(t, 0, g.NumSwitches())
	assert.Equal(t, 0, g.LeafSwitchSpan(FullNodeSet(40)))
	_, ok := g.LowestCommonSwitch(FullNodeSet(40))
	assert.False(t, ok)
}

func swAt(g *Graph, i int) Switch  { s, _ := g.Switch(i); return s }
func blkAt(g *Graph, i int) Block  { b, _ := g.Block(i); return b }
func domAt(g *Graph, i int) Domain { d, _ := g.Domain(i); return d }

func TestGraphAccessorsOutOfRange(t *testing.T) {
	g := mustGraph(t, threeLevel())
	for _, i := range []int{-1, 7, 1 << 40} {
		_, ok := g.Switch(i)
		assert.False(t, ok, "switch %d", i)
		_, ok = g.Block(i)
		assert.False(t, ok)
		_, ok = g.Domain(i)
		assert.False(t, ok)
		assert.Equal(t, -1, g.BlockOf(i))
	}
	_, ok := g.Switch(6)
	assert.True(t, ok)
}
