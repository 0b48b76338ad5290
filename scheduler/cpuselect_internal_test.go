package scheduler

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/gres"
)

// Properties of the per-node CPU selection over random layouts, used
// CPUs and requests: it returns min(count, what is eligible) CPU ids,
// sorted, distinct, free, within prefer when only is set, on distinct
// cores with one thread per core; block takes the lowest free ids; and
// (threads as CPUs) it takes as many preferred CPUs as it can.
func TestSelectCPUsProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 2))
	for iter := range 3000 {
		l := cpuLayout{sockets: 1 + rng.IntN(4), cores: 1 + rng.IntN(6), threads: 1 + rng.IntN(3)}
		cpus := l.sockets * l.cores * l.threads
		n := &node{cfg: &NodeConfig{Name: "n", CPUs: cpus}, lay: l, cpuUsed: make([]uint64, (cpus+63)/64)}
		for c := range cpus {
			if rng.IntN(3) == 0 {
				n.markCPUs([]int{c})
			}
		}
		var pref []int
		for c := range cpus {
			if rng.IntN(4) == 0 {
				pref = append(pref, c)
			}
		}
		prefer, err := gres.CoreSetOf(pref...)
		if err != nil {
			t.Fatal(err)
		}
		r := cpuRequest{count: 1 + rng.IntN(cpus), tasks: rng.IntN(cpus + 1), dist: DistMethod(rng.IntN(4)),
			oneThread: rng.IntN(2) == 0, prefer: prefer, only: rng.IntN(3) == 0}
		got := n.selectCPUs(nil, r)
		// What is eligible: free CPUs (in prefer with only), one per core
		// with oneThread.
		eligible, cores := 0, map[int]bool{}
		for c := range cpus {
			free := n.cpuUsed[c>>6]&(1<<uint(c&63)) == 0
			if !free || (r.only && !prefer.IsEmpty() && !prefer.Has(c)) {
				continue
			}
			if r.oneThread && l.threads > 1 {
				if cores[l.coreOf(c)] {
					continue
				}
				cores[l.coreOf(c)] = true
			}
			eligible++
		}
		// With only and one thread per core, a core's preferred thread
		// may be used while another is not: count cores, as above.
		if want := min(r.count, eligible); len(got) != want {
			t.Fatalf("iter %d: layout %+v request %+v: got %v (%d), want %d CPUs", iter, l, r, got, len(got), want)
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("iter %d: %v not sorted and distinct", iter, got)
		}
		seen := map[int]bool{}
		for _, c := range got {
			if c < 0 || c >= cpus || n.cpuUsed[c>>6]&(1<<uint(c&63)) != 0 {
				t.Fatalf("iter %d: CPU %d not free", iter, c)
			}
			if r.only && !prefer.IsEmpty() && !prefer.Has(c) {
				t.Fatalf("iter %d: CPU %d outside prefer %v with only", iter, c, prefer)
			}
			if r.oneThread && l.threads > 1 {
				if seen[l.coreOf(c)] {
					t.Fatalf("iter %d: %v: two threads of core %d with one thread per core", iter, got, l.coreOf(c))
				}
				seen[l.coreOf(c)] = true
			}
		}
		if !r.oneThread && !prefer.IsEmpty() {
			free, in := 0, 0
			for _, c := range pref {
				if n.cpuUsed[c>>6]&(1<<uint(c&63)) == 0 {
					free++
				}
			}
			for _, c := range got {
				if prefer.Has(c) {
					in++
				}
			}
			if in != min(r.count, free) {
				t.Fatalf("iter %d: %v holds %d preferred CPUs of %d free in %v, want %d", iter, got, in, free, prefer, min(r.count, free))
			}
		}
		if !r.oneThread && r.dist == DistBlock && prefer.IsEmpty() {
			want := n.freeCPUs(r.count, gres.CoreSet{}, false)
			if !slices.Equal(got, want) {
				t.Fatalf("iter %d: block %v, want the lowest free %v", iter, got, want)
			}
		}
	}
}
