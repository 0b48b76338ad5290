package topology

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twoLevel builds leaves×per nodes "n0…" under leaf switches "l0…" and one
// spine.
func twoLevel(leaves, per int) Config {
	var cfg Config
	var kids []string
	for l := range leaves {
		name := fmt.Sprintf("l%d", l)
		cfg.Switches = append(cfg.Switches, SwitchConfig{Name: name, Nodes: []string{fmt.Sprintf("n[%d-%d]", l*per, l*per+per-1)}})
		kids = append(kids, name)
	}
	cfg.Switches = append(cfg.Switches, SwitchConfig{Name: "spine", Switches: kids})
	return cfg
}

// freeExcept returns all n nodes but the busy ones.
func freeExcept(n int, busy ...int) NodeSet {
	s := FullNodeSet(n)
	for _, b := range busy {
		s.Remove(b)
	}
	return s
}

type placeCase struct {
	name    string
	free    NodeSet
	n       int
	c       Constraints
	want    string // node names, compressed; "" when an error is expected
	met     bool
	wantErr error
}

func runPlaceCases(t *testing.T, g *Graph, cases []placeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := g.Select(tc.free, tc.n, tc.c)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, g.NodeNames(p.Nodes))
			assert.Equal(t, tc.met, p.Met, "Met")
			assert.Equal(t, tc.n, p.Nodes.Count())
			assert.True(t, p.Nodes.SubsetOf(tc.free))
		})
	}
}

func TestSelectTree(t *testing.T) {
	g := mustGraph(t, twoLevel(4, 4)) // l0 n0-3, l1 n4-7, l2 n8-11, l3 n12-15
	runPlaceCases(t, g, []placeCase{
		{name: "one node fills the partly used leaf", free: freeExcept(16, 5), n: 1, want: "n4", met: true},
		{name: "tightest fitting leaf", free: freeExcept(16, 4), n: 3, want: "n[5-7]", met: true},
		{name: "whole free leaf when it fits exactly", free: freeExcept(16, 0, 4, 8), n: 4, want: "n[12-15]", met: true},
		{name: "spread keeps the whole leaf free", free: freeExcept(16, 0, 1, 4, 8), n: 6, want: "n[5-7,9-11]", met: true},
		{name: "big leaf plus tightest remainder", free: freeExcept(16, 1, 2, 3, 6, 7, 9), n: 6, want: "n[4-5,12-15]", met: true},
		{name: "fewest leaves", free: freeExcept(16, 1, 2, 5, 6, 9), n: 7, want: "n[8,10-15]", met: true},
		{name: "whole cluster", free: FullNodeSet(16), n: 16, want: "n[0-15]", met: true},
		{name: "too many for the cluster", free: FullNodeSet(16), n: 17, wantErr: ErrNeverFits},
		{name: "not enough candidates", free: freeExcept(16, 0, 1, 2, 3, 4, 5, 6, 7, 8), n: 8, wantErr: ErrNoPlacement},
		{name: "switches=1 met", free: freeExcept(16, 0, 4), n: 4, c: Constraints{MaxLeafSwitches: 1}, want: "n[8-11]", met: true},
		{name: "switches=1 not met: best placement returned",
			free: freeExcept(16, 0, 1, 4, 8, 12), n: 6, c: Constraints{MaxLeafSwitches: 1}, want: "n[5-7,9-11]", met: false},
		{name: "switches=2 met", free: freeExcept(16, 0, 1, 4, 8, 12), n: 6, c: Constraints{MaxLeafSwitches: 2}, want: "n[5-7,9-11]", met: true},
		{name: "segments of two per leaf", free: freeExcept(16, 0, 4, 8, 12), n: 6, c: Constraints{Segment: 2},
			want: "n[1-2,5-6,9-10]", met: true},
		{name: "segment within one leaf, not contiguous", free: freeExcept(16, 0, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14), n: 2,
			c: Constraints{Segment: 2}, want: "n[1,3]", met: true},
		{name: "segment needs a leaf with a whole segment", free: freeExcept(16, 0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14), n: 2,
			c: Constraints{Segment: 2}, wantErr: ErrNoPlacement},
		{name: "shorter candidate set is padded", free: NodeSetOf(8, 4, 5, 6), n: 2, want: "n[4-5]", met: true},
	})
}

func TestSelectMultipleRoots(t *testing.T) {
	g := mustGraph(t, Config{Switches: []SwitchConfig{
		{Name: "a", Nodes: []string{"n[0-3]"}},
		{Name: "b", Nodes: []string{"n[4-7]"}},
	}})
	runPlaceCases(t, g, []placeCase{
		{name: "never spans roots", free: FullNodeSet(8), n: 5, wantErr: ErrNeverFits},
		{name: "two free per root", free: freeExcept(8, 0, 1, 4, 5), n: 3, wantErr: ErrNoPlacement},
		{name: "fits one root", free: freeExcept(8, 0), n: 3, want: "n[1-3]", met: true},
	})
}

func TestSelectDeepTree(t *testing.T) {
	g := mustGraph(t, threeLevel()) // agg0: l0 n0-3, l1 n4-7; agg1: l2 n8-11, l3 n12-15
	runPlaceCases(t, g, []placeCase{
		{name: "lowest common switch", free: freeExcept(16, 0, 1, 12, 13), n: 6, want: "n[2-7]", met: true},
		{name: "under the aggregation switch with fewer candidates",
			free: freeExcept(16, 0, 4, 5), n: 5, want: "n[1-3,6-7]", met: true},
		{name: "fewer leaves beat a lower switch",
			// agg0 offers 3+3 (2 leaves), but l3 alone… cannot hold 6; a
			// 3-leaf placement under agg1 would score worse than 2 under agg0.
			free: freeExcept(16, 0, 4, 8, 9, 12, 13), n: 6, want: "n[1-3,5-7]", met: true},
		{name: "across the top switch", free: freeExcept(16, 0, 1, 2, 8, 9, 10), n: 10, want: "n[3-7,11-15]", met: true},
	})
}

// blocks8 is 8 blocks of 4 nodes with BlockSizes 4,8,32: pairs of blocks
// aggregate at level 1, all eight at level 2.
func blocks8() Config {
	var cfg Config
	for b := range 8 {
		cfg.Blocks = append(cfg.Blocks, BlockConfig{Name: fmt.Sprintf("b%d", b), Nodes: []string{fmt.Sprintf("n[%d-%d]", 4*b, 4*b+3)}})
	}
	cfg.BlockSizes = []int{4, 8, 32}
	return cfg
}

func TestSelectBlock(t *testing.T) {
	g := mustGraph(t, blocks8())
	// Free: b0 3 (n1-3), b1 2 (n6-7), b2 4, b3 4, the rest busy.
	busyFrom := func(busy ...int) NodeSet {
		s := freeExcept(32, busy...)
		for i := 16; i < 32; i++ {
			s.Remove(i)
		}
		return s
	}
	runPlaceCases(t, g, []placeCase{
		{name: "one block", free: busyFrom(0, 4, 5), n: 3, want: "n[1-3]", met: true},
		{name: "within one pair", free: busyFrom(0, 4, 5), n: 6, want: "n[8-13]", met: true},
		{name: "no pair holds 6 though 7 are free", free: busyFrom(0, 4, 5, 8, 9, 12, 13), n: 6, wantErr: ErrNoPlacement},
		// Four blocks needed: the two full ones, then b0 whole and one node
		// of b1 (the largest leaf used is as small as possible each step).
		{name: "level 2 for 12 nodes", free: busyFrom(0, 4, 5), n: 12, want: "n[1-3,6,8-15]", met: true},
		{name: "larger than every block size", free: FullNodeSet(32), n: 33, wantErr: ErrNeverFits},
		{name: "segments may leave the pair", free: busyFrom(0, 1, 4, 5, 8, 9, 12, 13), n: 6, c: Constraints{Segment: 2},
			want: "n[2-3,6-7,10-11]", met: true},
	})
}

// nvlCluster is 40 nodes: NVLink domains nvl0 = c0-17 and nvl1 = c18-35,
// and four loose nodes c36-39.
func nvlCluster() Config {
	return Config{
		Nodes: []string{"c[0-39]"},
		Domains: []DomainConfig{
			{Name: "nvl0", Nodes: []string{"c[0-17]"}},
			{Name: "nvl1", Nodes: []string{"c[18-35]"}},
		},
	}
}

func TestSelectDomains(t *testing.T) {
	g := mustGraph(t, nvlCluster())
	runPlaceCases(t, g, []placeCase{
		{name: "one domain: the tightest", free: freeExcept(40, 0, 1, 2, 3, 4, 5), n: 10,
			c: Constraints{Domains: DomainOne}, want: "c[6-15]", met: true},
		{name: "one domain: never larger than a domain", free: FullNodeSet(40), n: 19, c: Constraints{Domains: DomainOne}, wantErr: ErrNeverFits},
		{name: "one domain: none holds it now", free: freeExcept(40, 0, 1, 2, 3, 4, 5, 18, 19, 20, 21), n: 15,
			c: Constraints{Domains: DomainOne}, wantErr: ErrNoPlacement},
		{name: "balanced 24 = 12 + 12", free: FullNodeSet(40), n: 24, c: Constraints{Domains: DomainBalanced},
			want: "c[0-11,18-29]", met: true},
		{name: "balanced 25 = 13 + 12", free: FullNodeSet(40), n: 25, c: Constraints{Domains: DomainBalanced},
			want: "c[0-11,18-30]", met: true},
		{name: "balanced fits one domain", free: freeExcept(40, 0), n: 17, c: Constraints{Domains: DomainBalanced},
			want: "c[1-17]", met: true},
		{name: "balanced impossible now: most balanced, not met",
			free: freeExcept(40, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29), n: 24, c: Constraints{Domains: DomainBalanced},
			want: "c[0-17,30-35]", met: false},
		{name: "balanced more than all domains", free: FullNodeSet(40), n: 37, c: Constraints{Domains: DomainBalanced}, wantErr: ErrNeverFits},
		{name: "any: a loose node before any domain", free: FullNodeSet(40), n: 1, want: "c36", met: true},
		{name: "any: a broken domain before a whole one", free: freeExcept(40, 36, 37, 38, 39, 20), n: 1, want: "c18", met: true},
		{name: "any: one domain when it fits", free: freeExcept(40, 0), n: 6, want: "c[1-6]", met: true},
		{name: "one domain with segments", free: freeExcept(40, 0), n: 6, c: Constraints{Domains: DomainOne, Segment: 3},
			want: "c[1-6]", met: true},
	})
}

// TestSelectDomainsInTree: a GB200 rack (18 nodes, one NVLink domain)
// shares leaf switches with ordinary nodes.
func TestSelectDomainsInTree(t *testing.T) {
	cfg := twoLevel(4, 8) // n0-31
	cfg.Domains = []DomainConfig{{Name: "rack", Nodes: []string{"n[4-21]"}}}
	g := mustGraph(t, cfg)
	runPlaceCases(t, g, []placeCase{
		// Leaf l2 (n16-23: rack n16-21, loose n22-23) is the tightest leaf;
		// inside it loose nodes come before the rack's nodes.
		{name: "loose node before the rack", free: freeExcept(32, 16), n: 1, want: "n22", met: true},
		{name: "rack nodes last inside a leaf", free: freeExcept(32, 16), n: 3, want: "n[17,22-23]", met: true},
		{name: "without the rack: lowest index", free: freeExcept(32, 8), n: 1, want: "n9", met: true},
		{name: "one domain picks inside the rack, fewest leaves", free: freeExcept(32, 4, 5, 6, 7), n: 8,
			c: Constraints{Domains: DomainOne}, want: "n[8-15]", met: true},
		{name: "one domain, switches constraint passes through", free: freeExcept(32, 4, 5, 6, 8), n: 8,
			c: Constraints{Domains: DomainOne, MaxLeafSwitches: 1}, want: "n[7,9-15]", met: false},
	})
}

func TestSelectFlat(t *testing.T) {
	g := mustGraph(t, Config{Nodes: []string{"h[0-9]"}})
	runPlaceCases(t, g, []placeCase{
		{name: "lowest indices", free: freeExcept(10, 0, 2), n: 3, want: "h[1,3-4]", met: true},
		{name: "not enough", free: freeExcept(10, 0, 2), n: 9, wantErr: ErrNoPlacement},
		{name: "never", free: FullNodeSet(10), n: 11, wantErr: ErrNeverFits},
	})
}

func TestSelectBadRequests(t *testing.T) {
	g := mustGraph(t, twoLevel(2, 4))
	tests := []struct {
		name    string
		cand    NodeSet
		n       int
		c       Constraints
		mention string
	}{
		{"zero nodes", FullNodeSet(8), 0, Constraints{}, "node count 0"},
		{"negative switches", FullNodeSet(8), 1, Constraints{MaxLeafSwitches: -1}, "MaxLeafSwitches -1"},
		{"negative segment", FullNodeSet(8), 1, Constraints{Segment: -2}, "Segment -2"},
		{"segment does not divide", FullNodeSet(8), 3, Constraints{Segment: 2}, "not a multiple of Segment 2"},
		{"candidates longer than graph", FullNodeSet(9), 1, Constraints{}, "length 9"},
		{"domains without domains", FullNodeSet(8), 1, Constraints{Domains: DomainOne}, "no NVLink domains"},
		{"unknown domain mode", FullNodeSet(8), 1, Constraints{Domains: 9}, "DomainMode(9)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := g.Select(tc.cand, tc.n, tc.c)
			require.ErrorIs(t, err, ErrBadRequest)
			assert.Contains(t, err.Error(), tc.mention)
		})
	}
	gd := mustGraph(t, nvlCluster())
	_, err := gd.Select(FullNodeSet(40), 4, Constraints{Domains: DomainBalanced, Segment: 2})
	assert.ErrorIs(t, err, ErrBadRequest)
}

func TestConstraintsString(t *testing.T) {
	assert.Equal(t, "none", Constraints{}.String())
	assert.Equal(t, "switches=2 segment=4 domains=one", Constraints{MaxLeafSwitches: 2, Segment: 4, Domains: DomainOne}.String())
	g := mustGraph(t, twoLevel(2, 4))
	_, err := g.Select(NodeSetOf(8, 0, 4), 3, Constraints{MaxLeafSwitches: 1})
	require.ErrorIs(t, err, ErrNoPlacement)
	assert.EqualError(t, err, "3 nodes (constraints: switches=1) among 2 candidates: no placement among the candidates")
}

func TestFeasible(t *testing.T) {
	tree := mustGraph(t, twoLevel(4, 4))
	assert.NoError(t, tree.Feasible(16, Constraints{}))
	assert.ErrorIs(t, tree.Feasible(17, Constraints{}), ErrNeverFits)
	assert.ErrorIs(t, tree.Feasible(0, Constraints{}), ErrBadRequest)
	assert.NoError(t, tree.Feasible(16, Constraints{Segment: 4}))
	assert.ErrorIs(t, tree.Feasible(8, Constraints{Segment: 8}), ErrNeverFits, "a segment larger than any leaf")

	blocks := mustGraph(t, blocks8())
	assert.NoError(t, blocks.Feasible(32, Constraints{}))
	assert.ErrorIs(t, blocks.Feasible(33, Constraints{}), ErrNeverFits)

	dom := mustGraph(t, nvlCluster())
	assert.NoError(t, dom.Feasible(18, Constraints{Domains: DomainOne}))
	assert.ErrorIs(t, dom.Feasible(19, Constraints{Domains: DomainOne}), ErrNeverFits)
	assert.NoError(t, dom.Feasible(36, Constraints{Domains: DomainBalanced}))
	assert.ErrorIs(t, dom.Feasible(37, Constraints{Domains: DomainBalanced}), ErrNeverFits)
	assert.NoError(t, dom.Feasible(40, Constraints{}))
	assert.NoError(t, dom.Feasible(4, Constraints{Domains: DomainOne, Segment: 4}))
}

func TestQuality(t *testing.T) {
	g := mustGraph(t, threeLevel())
	tests := []struct {
		nodes []int
		want  Quality
	}{
		{nil, Quality{Kind: KindTree}},
		{[]int{0}, Quality{Kind: KindTree, Nodes: 1, Units: 1, MinUnits: 1, Level: 0, MinLevel: 0, Score: 1}},
		{[]int{0, 4}, Quality{Kind: KindTree, Nodes: 2, Units: 2, MinUnits: 1, Level: 1, MinLevel: 0, Score: 0.5*0.5 + 0.5*0.5}},
		{[]int{0, 1, 2, 3, 4, 5, 6, 7}, Quality{Kind: KindTree, Nodes: 8, Units: 2, MinUnits: 2, Level: 1, MinLevel: 1, Score: 1}},
		{[]int{0, 1, 2, 3, 4, 5, 6, 8}, Quality{Kind: KindTree, Nodes: 8, Units: 3, MinUnits: 2, Level: 2, MinLevel: 1,
			Score: 0.5*2.0/3 + 0.5*2.0/3}},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, g.Quality(NodeSetOf(16, tc.nodes...), DomainAny), "%v", tc.nodes)
	}
	flat := mustGraph(t, Config{Nodes: []string{"h[0-3]"}})
	assert.Equal(t, Quality{Kind: KindFlat, Nodes: 2, Score: 1}, flat.Quality(NodeSetOf(4, 1, 2), DomainAny))

	d := mustGraph(t, nvlCluster())
	q := d.Quality(NodeSetOf(40, 0, 1, 36), DomainOne)
	assert.Equal(t, Quality{Kind: KindDomain, Nodes: 3, Units: 2, MinUnits: 1, Level: 1, MinLevel: 0, Domains: 1,
		Score: 0.5*0.5 + 0.5*0.5}, q)
	assert.Equal(t, "domain", q.Kind.String())
	assert.Equal(t, "balanced", DomainBalanced.String())
	for _, k := range []Kind{KindFlat, KindTree, KindBlock, KindDomain, 7} {
		assert.NotEmpty(t, k.String())
	}
}

// TestSelectDeepTreeCloseness: among leaves with equal counts, the one
// under the same aggregation switch as the leaves already chosen wins,
// even when a farther one comes first in configuration order.
func TestSelectDeepTreeCloseness(t *testing.T) {
	cfg := Config{}
	for l := range 6 {
		cfg.Switches = append(cfg.Switches, SwitchConfig{Name: fmt.Sprintf("l%d", l), Nodes: []string{fmt.Sprintf("n[%d-%d]", 4*l, 4*l+3)}})
	}
	cfg.Switches = append(cfg.Switches,
		SwitchConfig{Name: "agg0", Switches: []string{"l[0-2]"}},
		SwitchConfig{Name: "agg1", Switches: []string{"l[3-5]"}},
		SwitchConfig{Name: "top", Switches: []string{"agg[0-1]"}})
	g := mustGraph(t, cfg)
	// Free: l0 n0, l1 n4, l3 n12-14, l4 n16. Five nodes need the top
	// switch and three leaves: l3, then l4 (closer than l0), then l0.
	runPlaceCases(t, g, []placeCase{
		{name: "closest equal leaf", free: NodeSetOf(24, 0, 4, 12, 13, 14, 16), n: 5, want: "n[0,12-14,16]", met: true},
	})
}
