package topology

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// randomTree builds a random tree of depth 1–3 (sometimes several roots)
// with leaves of 1–10 nodes.
func randomTree(rng *rand.Rand) Config {
	var cfg Config
	node := 0
	var level []string
	for l := range 1 + rng.IntN(14) {
		size := 1 + rng.IntN(10)
		name := fmt.Sprintf("leaf%d", l)
		cfg.Switches = append(cfg.Switches, SwitchConfig{Name: name, Nodes: []string{fmt.Sprintf("n[%d-%d]", node, node+size-1)}})
		node += size
		level = append(level, name)
	}
	for depth := 0; len(level) > 1 && depth < 2; depth++ {
		var next []string
		for i := 0; i < len(level); {
			k := 1 + rng.IntN(4)
			kids := level[i:min(i+k, len(level))]
			i += len(kids)
			name := fmt.Sprintf("sw%d_%d", depth, len(next))
			cfg.Switches = append(cfg.Switches, SwitchConfig{Name: name, Switches: slices.Clone(kids)})
			next = append(next, name)
		}
		level = next
	}
	if len(level) > 1 && rng.IntN(3) > 0 { // usually a single root
		cfg.Switches = append(cfg.Switches, SwitchConfig{Name: "root", Switches: level})
	}
	return cfg
}

func randomCandidates(rng *rand.Rand, n int) NodeSet {
	s := NewNodeSet(n)
	density := rng.Float64()
	for i := range n {
		if rng.Float64() < density {
			s.Add(i)
		}
	}
	return s
}

// oracle computes, by brute force over the Graph's public API, what tree
// placement must achieve.
type treeOracle struct {
	g      *Graph
	counts []int // per switch: candidates (whole segments) in the subtree
	leaves [][]int
}

func newTreeOracle(g *Graph, cand NodeSet, seg int) treeOracle {
	o := treeOracle{g: g, counts: make([]int, g.NumSwitches()), leaves: make([][]int, g.NumSwitches())}
	under := func(l, s int) bool {
		for ; l >= 0; l = swAt(g, l).Parent {
			if l == s {
				return true
			}
		}
		return false
	}
	for s := range g.NumSwitches() {
		for l := range g.NumSwitches() {
			if ls := swAt(g, l); ls.IsLeaf() && under(l, s) {
				c := cand.IntersectionCount(ls.Nodes)
				if seg > 1 {
					c -= c % seg
				}
				o.counts[s] += c
				o.leaves[s] = append(o.leaves[s], c)
			}
		}
		slices.Sort(o.leaves[s])
		slices.Reverse(o.leaves[s])
	}
	return o
}

// minLeaves is the fewest leaves under s holding n, or -1.
func (o treeOracle) minLeaves(s, n int) int {
	sum := 0
	for k, c := range o.leaves[s] {
		if sum += c; sum >= n {
			return k + 1
		}
	}
	return -1
}

func TestSelectTreeProperties(t *testing.T) {
	placed, failed, scored := 0, 0, 0
	defer func() {
		t.Logf("placed %d, refused %d, score-compared %d", placed, failed, scored)
		require.Greater(t, placed, 1600, "too few placements exercised")
		require.Greater(t, failed, 300, "too few refusals exercised")
		require.Greater(t, scored, 800, "too few score comparisons")
	}()
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 99))
		g := mustGraph(t, randomTree(rng))
		total := g.NumNodes()
		full := newTreeOracle(g, FullNodeSet(total), 1)
		for trial := range 12 {
			cand := randomCandidates(rng, total)
			n := 1 + rng.IntN(total+2)
			var c Constraints
			switch rng.IntN(4) {
			case 0:
				c.Segment = 2 + rng.IntN(2)
				n = max(c.Segment, n-n%c.Segment)
			case 1:
				c.MaxLeafSwitches = 1 + rng.IntN(3)
			}
			ctx := fmt.Sprintf("seed %d trial %d n=%d %+v cand=%v", seed, trial, n, c, cand)
			o := newTreeOracle(g, cand, c.Segment)
			fits := -1 // some switch that can hold n
			for s, cnt := range o.counts {
				if cnt >= n {
					fits = s
				}
			}
			p, err := g.Select(cand, n, c)
			if fits < 0 {
				require.Error(t, err, ctx)
				structural := newTreeOracle(g, FullNodeSet(total), c.Segment)
				neverFits := !slices.ContainsFunc(structural.counts, func(x int) bool { return x >= n })
				require.Equal(t, neverFits, errors.Is(err, ErrNeverFits), "%s: %v", ctx, err)
				require.Equal(t, !neverFits, errors.Is(err, ErrNoPlacement), "%s: %v", ctx, err)
				failed++
				continue
			}
			require.NoError(t, err, ctx)
			placed++
			require.Equal(t, n, p.Nodes.Count(), ctx)
			require.True(t, p.Nodes.SubsetOf(cand), ctx)
			lca, ok := g.LowestCommonSwitch(p.Nodes)
			require.True(t, ok, "%s: placement spans roots", ctx)
			units := g.LeafSwitchSpan(p.Nodes)
			require.Equal(t, units, p.Quality.Units, ctx)
			require.Equal(t, o.minLeaves(lca, n), units, "%s: more leaves than needed under %s", ctx, swAt(g, lca).Name)
			for s := range g.NumSwitches() {
				if swAt(g, s).IsLeaf() && o.counts[s] >= n {
					require.Equal(t, 1, units, "%s: a single leaf fits but %d used", ctx, units)
				}
			}
			if c.Segment > 1 {
				for s := range g.NumSwitches() {
					if sw := swAt(g, s); sw.IsLeaf() {
						require.Zero(t, p.Nodes.IntersectionCount(sw.Nodes)%c.Segment, "%s: partial segment on %s", ctx, sw.Name)
					}
				}
			}
			if c.MaxLeafSwitches > 0 {
				if p.Met {
					require.LessOrEqual(t, units, c.MaxLeafSwitches, ctx)
				} else {
					for s, cnt := range o.counts {
						if cnt >= n {
							require.Greater(t, o.minLeaves(s, n), c.MaxLeafSwitches, "%s: %s meets the limit", ctx, swAt(g, s).Name)
						}
					}
				}
			} else {
				require.True(t, p.Met, ctx)
			}
			// Determinism, also on an equal but distinct candidate set.
			p2, err := g.Select(cand.Clone(), n, c)
			require.NoError(t, err)
			require.True(t, p.Nodes.Equal(p2.Nodes), ctx)
			require.Equal(t, p.Quality, p2.Quality)

			if c.Segment > 1 || c.MaxLeafSwitches > 0 {
				continue
			}
			scored++
			// Never worse than the best any switch could offer…
			minU, minL := full.minLeavesOverall(n), full.minLevel(g, n)
			for s, cnt := range o.counts {
				if cnt >= n {
					best := groupScore(minU, minL, o.minLeaves(s, n), swAt(g, s).Level)
					require.GreaterOrEqual(t, p.Quality.Score, best-1e-12, "%s: switch %s scores %v", ctx, swAt(g, s).Name, best)
				}
			}
			// …nor than random valid subsets.
			for range 5 {
				sub := randomSubsetUnder(rng, g, cand, n)
				if sub.Len() == 0 {
					break
				}
				q := g.Quality(sub, DomainAny)
				require.GreaterOrEqual(t, p.Quality.Score, q.Score-1e-12, "%s: random %v scores %+v vs %+v", ctx, sub, q, p.Quality)
			}
		}
	}
}

func (o treeOracle) minLeavesOverall(n int) int {
	var sizes []int
	for s := range o.g.NumSwitches() {
		if sw := swAt(o.g, s); sw.IsLeaf() {
			sizes = append(sizes, sw.Nodes.Count())
		}
	}
	k, _ := fewestToCover(sizes, n)
	return max(k, 1)
}

// fewestToCover returns how many of the largest sizes it takes to reach n
// (all of them when they cannot), and their sum.
func fewestToCover(sizes []int, n int) (k, sum int) {
	sorted := slices.Clone(sizes)
	slices.Sort(sorted)
	slices.Reverse(sorted)
	for _, x := range sorted {
		if sum >= n {
			break
		}
		sum += x
		k++
	}
	return k, sum
}

func (o treeOracle) minLevel(g *Graph, n int) int {
	best := -1
	for s := range g.NumSwitches() {
		if sw := swAt(g, s); sw.Nodes.Count() >= n && (best < 0 || sw.Level < best) {
			best = sw.Level
		}
	}
	if best < 0 {
		for s := range g.NumSwitches() {
			best = max(best, swAt(g, s).Level+1)
		}
	}
	return best
}

// randomSubsetUnder picks n random candidates under a random switch that
// has at least n; a zero NodeSet when there is none.
func randomSubsetUnder(rng *rand.Rand, g *Graph, cand NodeSet, n int) NodeSet {
	var ok []int
	for s := range g.NumSwitches() {
		if cand.IntersectionCount(swAt(g, s).Nodes) >= n {
			ok = append(ok, s)
		}
	}
	if len(ok) == 0 {
		return NodeSet{}
	}
	pool := cand.And(swAt(g, ok[rng.IntN(len(ok))]).Nodes).AppendTo(nil)
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	return NodeSetOf(g.NumNodes(), pool[:n]...)
}

func TestSelectBlockProperties(t *testing.T) {
	placed, failed := 0, 0
	defer func() {
		t.Logf("placed %d, refused %d", placed, failed)
		require.Greater(t, placed, 1000, "too few placements exercised")
		require.Greater(t, failed, 300, "too few refusals exercised")
	}()
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		base := 2 + rng.IntN(3)
		var cfg Config
		node := 0
		nb := 1 + rng.IntN(12)
		for b := range nb {
			size := base + rng.IntN(3)
			cfg.Blocks = append(cfg.Blocks, BlockConfig{Name: fmt.Sprintf("b%d", b), Nodes: []string{fmt.Sprintf("n[%d-%d]", node, node+size-1)}})
			node += size
		}
		cfg.BlockSizes = []int{base}
		for range rng.IntN(4) {
			cfg.BlockSizes = append(cfg.BlockSizes, cfg.BlockSizes[len(cfg.BlockSizes)-1]*(1<<(1+rng.IntN(2))))
		}
		g := mustGraph(t, cfg)
		for trial := range 10 {
			cand := randomCandidates(rng, node)
			n := 1 + rng.IntN(node+1)
			var c Constraints
			if rng.IntN(4) == 0 {
				c.Segment = 2
				n = max(2, n-n%2)
			}
			ctx := fmt.Sprintf("seed %d trial %d sizes %v n=%d %+v", seed, trial, cfg.BlockSizes, n, c)
			// Enforced group size in base blocks (0: whole system).
			per := 0
			if c.Segment <= 1 {
				for _, s := range cfg.BlockSizes {
					if n <= s {
						per = s / base
						break
					}
				}
			}
			groupOf := func(b int) int {
				if per == 0 {
					return 0
				}
				return b / per
			}
			counts := map[int]int{}
			for b := range nb {
				cnt := cand.IntersectionCount(blkAt(g, b).Nodes)
				if c.Segment > 1 {
					cnt -= cnt % c.Segment
				}
				counts[groupOf(b)] += cnt
			}
			fits := false
			for _, cnt := range counts {
				fits = fits || cnt >= n
			}
			p, err := g.Select(cand, n, c)
			if !fits {
				require.Error(t, err, ctx)
				require.True(t, errors.Is(err, ErrNoPlacement) || errors.Is(err, ErrNeverFits), ctx)
				failed++
				continue
			}
			require.NoError(t, err, ctx)
			placed++
			require.Equal(t, n, p.Nodes.Count(), ctx)
			require.True(t, p.Nodes.SubsetOf(cand), ctx)
			groups := map[int]bool{}
			for i := range p.Nodes.All() {
				groups[groupOf(g.BlockOf(i))] = true
			}
			require.Len(t, groups, 1, "%s: placement crosses aggregated blocks", ctx)
			if c.Segment > 1 {
				for b := range nb {
					require.Zero(t, p.Nodes.IntersectionCount(blkAt(g, b).Nodes)%c.Segment, ctx)
				}
			}
			if c.Segment > 1 {
				continue
			}
			for b := range nb {
				if cand.IntersectionCount(blkAt(g, b).Nodes) >= n {
					require.Equal(t, 1, p.Quality.Units, "%s: one block fits", ctx)
				}
			}
			// Never worse than n random candidates of an enforced group.
			for grp, cnt := range counts {
				if cnt < n {
					continue
				}
				var pool []int
				for b := range nb {
					if groupOf(b) == grp {
						pool = cand.And(blkAt(g, b).Nodes).AppendTo(pool)
					}
				}
				rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
				q := g.Quality(NodeSetOf(node, pool[:n]...), DomainAny)
				require.GreaterOrEqual(t, p.Quality.Score, q.Score-1e-12, "%s: %+v vs %+v", ctx, q, p.Quality)
			}
		}
	}
}

func TestSelectDomainProperties(t *testing.T) {
	placed := map[DomainMode]int{}
	defer func() {
		t.Logf("placed %v", placed)
		for _, m := range []DomainMode{DomainAny, DomainOne, DomainBalanced} {
			require.Greater(t, placed[m], 300, "too few %v placements", m)
		}
	}()
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 3))
		var cfg Config
		node := 0
		for d := range 1 + rng.IntN(6) {
			if rng.IntN(3) == 0 { // loose nodes between domains
				node += 1 + rng.IntN(3)
			}
			size := 2 + rng.IntN(17)
			cfg.Domains = append(cfg.Domains, DomainConfig{Name: fmt.Sprintf("d%d", d), Nodes: []string{fmt.Sprintf("c[%d-%d]", node, node+size-1)}})
			node += size
		}
		node += rng.IntN(4)
		cfg.Nodes = []string{fmt.Sprintf("c[0-%d]", node-1)}
		if rng.IntN(2) == 0 { // a tree over everything, 8 per leaf
			var kids []string
			for l := 0; l*8 < node; l++ {
				name := fmt.Sprintf("l%d", l)
				cfg.Switches = append(cfg.Switches, SwitchConfig{Name: name, Nodes: []string{fmt.Sprintf("c[%d-%d]", l*8, min(l*8+7, node-1))}})
				kids = append(kids, name)
			}
			cfg.Switches = append(cfg.Switches, SwitchConfig{Name: "top", Switches: kids})
		}
		g := mustGraph(t, cfg)
		for trial := range 12 {
			cand := randomCandidates(rng, node)
			n := 1 + rng.IntN(24)
			mode := []DomainMode{DomainAny, DomainOne, DomainBalanced}[rng.IntN(3)]
			ctx := fmt.Sprintf("seed %d trial %d n=%d %v", seed, trial, n, mode)
			var counts []int
			for d := range g.NumDomains() {
				counts = append(counts, cand.IntersectionCount(domAt(g, d).Nodes))
			}
			p, err := g.Select(cand, n, Constraints{Domains: mode})
			switch mode {
			case DomainOne:
				if slices.Max(counts) < n {
					require.Error(t, err, ctx)
					continue
				}
				require.NoError(t, err, ctx)
				require.Equal(t, 1, p.Quality.Domains, ctx)
				require.Equal(t, 1, p.Quality.Units, ctx)
				// The tightest domain that fits.
				d := g.DomainOf(p.Nodes.Next(0))
				for e, cnt := range counts {
					if cnt >= n {
						require.LessOrEqual(t, counts[d], cnt, "%s: domain %d is tighter than %d", ctx, e, d)
					}
				}
			case DomainBalanced:
				k, sum := fewestToCover(counts, n)
				if sum < n {
					require.Error(t, err, ctx)
					continue
				}
				require.NoError(t, err, ctx)
				require.Equal(t, k, p.Quality.Domains, "%s: fewest domains", ctx)
				var slice []int
				for d := range g.NumDomains() {
					if x := p.Nodes.IntersectionCount(domAt(g, d).Nodes); x > 0 {
						slice = append(slice, x)
					}
				}
				if p.Met {
					require.LessOrEqual(t, slices.Max(slice)-slices.Min(slice), 1, "%s: slices %v", ctx, slice)
				}
			case DomainAny:
				if cand.Count() < n {
					require.Error(t, err, ctx)
					continue
				}
				if g.NumSwitches() > 0 {
					continue // tree placement: covered by the tree properties
				}
				require.NoError(t, err, ctx)
				for range 5 {
					pool := cand.AppendTo(nil)
					rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
					q := g.Quality(NodeSetOf(node, pool[:n]...), DomainAny)
					require.GreaterOrEqual(t, p.Quality.Score, q.Score-1e-12, "%s: %+v vs %+v", ctx, q, p.Quality)
				}
			}
			placed[mode]++
			require.Equal(t, n, p.Nodes.Count(), ctx)
			require.True(t, p.Nodes.SubsetOf(cand), ctx)
			if mode != DomainAny {
				for i := range p.Nodes.All() {
					require.GreaterOrEqual(t, g.DomainOf(i), 0, "%s: node outside domains", ctx)
				}
			}
		}
	}
}
