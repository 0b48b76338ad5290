package scheduler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/feature"
	"github.com/sluicehq/sluice/topology"
)

// TestChooseLowestMatchesChooseIn compares the where chooser's one-walk
// choice of the lowest indices (base nil: the ascending walk) with the same
// choice made by chooseIn's set operations around anyChoice, over random
// counted constraints with overlapping groups, required nodes and
// candidate sets: the same nodes, or nil for both.
func TestChooseLowestMatchesChooseIn(t *testing.T) {
	const nodes = 40
	rng := rand.New(rand.NewPCG(23, 5))
	cfg := Config{Partitions: []PartitionConfig{{Name: "p"}}}
	for i := range nodes {
		var f []string
		for _, r := range []string{"ra", "rb", "rc"} {
			if rng.IntN(3) == 0 {
				f = append(f, r)
			}
		}
		cfg.Nodes = append(cfg.Nodes, NodeConfig{Name: fmt.Sprintf("n%02d", i), CPUs: 4, MemoryMiB: 1024, Features: f})
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exprs := []string{"ra*2", "[ra*1&rb*1]", "[ra*2&rb*1&rc*1]", "[rb*1&ra*3]", "[ra*1&(rb|rc)*2]"}
	found := 0
	for iter := range 3000 {
		cons, err := feature.Parse(exprs[rng.IntN(len(exprs))])
		if err != nil {
			t.Fatal(err)
		}
		var required []int
		for range rng.IntN(3) {
			required = append(required, rng.IntN(nodes))
		}
		slices.Sort(required)
		required = slices.Compact(required)
		w := makeWhere(required, cons, false)
		j := &job{where: w}
		cand := topology.NewNodeSet(nodes)
		for i := range nodes {
			if rng.IntN(3) != 0 {
				cand.Add(i)
			}
		}
		for _, i := range required {
			if rng.IntN(4) != 0 {
				cand.Add(i)
			}
		}
		n := w.minNodes() + rng.IntN(4)
		ws := s.setsOf(w)
		got := s.chooseIn(j, ws, cand, n, nil, nil)
		want := s.chooseIn(j, ws, cand, n, s.anyChoice, nil)
		if !slices.Equal(got, want) {
			t.Fatalf("iter %d: %s required %v n=%d cand %v: lowest walk %v, set operations %v", iter, cons, required, n, cand.AppendTo(nil), got, want)
		}
		if got != nil {
			found++
		}
	}
	// The comparison is only worth something if both chose often.
	if found < 300 {
		t.Fatalf("only %d of 3000 random requests had a choice", found)
	}
}
