package topology

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// stdTreeConfig is the standard-scale fabric of DESIGN.md: 10,000 nodes
// under a two-level switch tree with 32 nodes per leaf switch (313 leaves,
// the last one with 16 nodes). With nvl72, the nodes also form NVLink
// domains of 18 consecutive nodes (555 domains, 10 loose nodes): every rack
// a GB200 NVL72, the hardest case for domain placement.
func stdTreeConfig(nvl72 bool) Config {
	const nodes, perLeaf = 10000, 32
	cfg := Config{Nodes: []string{fmt.Sprintf("node[0-%d]", nodes-1)}}
	var leaves []string
	for l := 0; l*perLeaf < nodes; l++ {
		name := fmt.Sprintf("leaf%d", l)
		cfg.Switches = append(cfg.Switches, SwitchConfig{Name: name,
			Nodes: []string{fmt.Sprintf("node[%d-%d]", l*perLeaf, min(l*perLeaf+perLeaf-1, nodes-1))}})
		leaves = append(leaves, name)
	}
	cfg.Switches = append(cfg.Switches, SwitchConfig{Name: "spine", Switches: leaves})
	if nvl72 {
		for d := 0; (d+1)*18 <= nodes; d++ {
			cfg.Domains = append(cfg.Domains, DomainConfig{Name: fmt.Sprintf("nvl%d", d),
				Nodes: []string{fmt.Sprintf("node[%d-%d]", d*18, d*18+17)}})
		}
	}
	return cfg
}

// loadedCandidates marks each node free with probability free (seeded).
func loadedCandidates(n int, free float64, seed uint64) NodeSet {
	rng := rand.New(rand.NewPCG(seed, 42))
	s := NewNodeSet(n)
	for i := range n {
		if rng.Float64() < free {
			s.Add(i)
		}
	}
	return s
}

// BenchmarkSelectTree64 chooses 64 nodes under the standard two-level tree
// of 10,000 nodes (32 per leaf): on an empty cluster (two whole leaves) and
// on one where 40% of the nodes are busy at random (no leaf has 32 free, so
// the choice spans ~3 leaves out of 313).
func BenchmarkSelectTree64(b *testing.B) {
	g := mustGraph(b, stdTreeConfig(false))
	for _, bc := range []struct {
		name string
		cand NodeSet
	}{
		{"empty", FullNodeSet(g.NumNodes())},
		{"loaded60", loadedCandidates(g.NumNodes(), 0.6, 1)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Select(bc.cand, 64, Constraints{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("switches2", func(b *testing.B) {
		cand := loadedCandidates(g.NumNodes(), 0.6, 1)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := g.Select(cand, 64, Constraints{MaxLeafSwitches: 2}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSelectNVLinkDomain places a request in NVLink domains at 10,000
// nodes, every rack an NVL72 domain of 18 nodes (555 domains) under the
// standard tree, 30% of the nodes busy at random: one domain for 16 nodes
// (a 64-GPU job), and 36 nodes in balanced slices over two domains.
func BenchmarkSelectNVLinkDomain(b *testing.B) {
	g := mustGraph(b, stdTreeConfig(true))
	cand := loadedCandidates(g.NumNodes(), 0.7, 2)
	for _, bc := range []struct {
		name string
		n    int
		mode DomainMode
	}{
		{"one16", 16, DomainOne},
		{"balanced24", 24, DomainBalanced},
		{"any1", 1, DomainAny},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Select(cand, bc.n, Constraints{Domains: bc.mode}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNewGraph builds the standard 10,000-node graph from its config
// and from topology.conf text.
func BenchmarkNewGraph(b *testing.B) {
	cfg := stdTreeConfig(false)
	b.Run("config", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := NewGraph(cfg); err != nil {
				b.Fatal(err)
			}
		}
	})
	var text strings.Builder
	for _, s := range cfg.Switches {
		if len(s.Nodes) > 0 {
			fmt.Fprintf(&text, "SwitchName=%s Nodes=%s\n", s.Name, s.Nodes[0])
		}
	}
	fmt.Fprintf(&text, "SwitchName=spine Switches=leaf[0-%d]\n", len(cfg.Switches)-2)
	b.Run("topology.conf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseTopologyConf(strings.NewReader(text.String())); err != nil {
				b.Fatal(err)
			}
		}
	})
}
