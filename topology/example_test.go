package topology_test

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/topology"
)

// A two-level tree: four leaf switches of four nodes under one spine.
// Some nodes are busy; a 6-node job takes the two leaves with three free
// nodes each, leaving the fully free leaf whole for a later job.
func Example() {
	cfg, err := topology.ParseTopologyConf(strings.NewReader(`
SwitchName=leaf0 Nodes=tux[00-03]
SwitchName=leaf1 Nodes=tux[04-07]
SwitchName=leaf2 Nodes=tux[08-11]
SwitchName=leaf3 Nodes=tux[12-15]
SwitchName=spine Switches=leaf[0-3]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := topology.NewGraph(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	free := topology.FullNodeSet(g.NumNodes())
	for _, busy := range []int{0, 1, 4, 8} { // tux00, tux01, tux04, tux08
		free.Remove(busy)
	}
	p, err := g.Select(free, 6, topology.Constraints{})
	if err != nil {
		fmt.Println(err)
		return
	}
	q := p.Quality
	fmt.Println("nodes:", g.NodeNames(p.Nodes))
	fmt.Printf("leaf switches %d (ideal %d), level %d, score %.2f\n", q.Units, q.MinUnits, q.Level, q.Score)
	// Output:
	// nodes: tux[05-07,09-11]
	// leaf switches 2 (ideal 2), level 1, score 1.00
}

func ExampleExpandHostlist() {
	names, _ := topology.ExpandHostlist("tux[08-10,12],gpu1")
	fmt.Println(names)
	s, _ := topology.CompressHostlist(names)
	fmt.Println(s)
	// Output:
	// [tux08 tux09 tux10 tux12 gpu1]
	// gpu1,tux[08-10,12]
}

// Two GB200 NVL72 racks, each one NVLink domain of 18 nodes × 4 GPUs. A
// 96-GPU job (24 nodes) asks for balanced slices: 12 nodes in each rack.
// A 16-node job that needs one domain gets the tighter rack.
func ExampleGraph_Select() {
	g, err := topology.NewGraph(topology.Config{
		Domains: []topology.DomainConfig{
			{Name: "rack0", Nodes: []string{"gb[000-017]"}},
			{Name: "rack1", Nodes: []string{"gb[018-035]"}},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	free := topology.FullNodeSet(g.NumNodes())
	p, err := g.Select(free, 24, topology.Constraints{Domains: topology.DomainBalanced})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(g.NodeNames(p.Nodes), "met:", p.Met, "domains:", p.Quality.Domains)

	free.Remove(20) // rack1 now has 17 free nodes
	p, err = g.Select(free, 16, topology.Constraints{Domains: topology.DomainOne})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(g.NodeNames(p.Nodes), "score:", p.Quality.Score)

	_, err = g.Select(free, 19, topology.Constraints{Domains: topology.DomainOne})
	fmt.Println(err)
	// Output:
	// gb[000-011,018-029] met: true domains: 2
	// gb[018-019,021-034] score: 1
	// 19 nodes in one NVLink domain, the largest has 18: request can never be satisfied by this topology
}
