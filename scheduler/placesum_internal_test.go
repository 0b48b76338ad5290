package scheduler

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/gres"
)

// refFreeCPUs is freeCPUsInto without a preference as it was written
// before the word-at-a-time walk: every CPU in turn, lowest first.
func refFreeCPUs(n *node, k int) []int {
	var out []int
	for c := 0; c < n.cfg.CPUs && len(out) < k; c++ {
		if n.cpuUsed[c>>6]&(1<<uint(c&63)) == 0 {
			out = append(out, c)
		}
	}
	return out
}

// TestLowestFreeCPUs: without a preference, freeCPUsInto lists the same
// CPUs as the CPU-by-CPU walk, for random CPU counts (word edges
// included), used masks (empty, full, sparse, whole words) and counts.
func TestLowestFreeCPUs(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 3))
	for iter := range 5000 {
		cpus := 1 + rng.IntN(300)
		if iter%4 == 0 {
			cpus = 64 * (1 + rng.IntN(4))
		}
		n := &node{cfg: &NodeConfig{Name: "n", CPUs: cpus}, cpuUsed: make([]uint64, (cpus+63)/64)}
		switch density := rng.IntN(4); density {
		case 0: // all free
		case 1:
			for w := range n.cpuUsed {
				if rng.IntN(2) == 0 {
					n.cpuUsed[w] = ^uint64(0)
				}
			}
		default:
			for c := range cpus {
				if rng.IntN(density+1) == 0 {
					n.markCPUs([]int{c})
				}
			}
		}
		k := rng.IntN(cpus + 2)
		if iter%3 == 0 {
			k = cpus
		}
		want := refFreeCPUs(n, k)
		var buf []int
		if rng.IntN(2) == 0 {
			buf = make([]int, 0, k) // room for k (allocBuf's slices)
		}
		got := n.freeCPUsInto(buf, k, gres.CoreSet{}, rng.IntN(2) == 0)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("iter %d: %d CPUs, k=%d, used %x: got %v, want %v", iter, cpus, k, n.cpuUsed, got, want)
		}
	}
}
