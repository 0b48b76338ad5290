package gres

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randomTopo builds a random but structured inventory (sockets, PCIe
// switches, NVLink islands or NVSwitch) without importing gpuserver (which
// imports this package).
func randomTopo(t testing.TB, rng *rand.Rand, n int) *NodeDevices {
	t.Helper()
	devs := make([]Device, n)
	sockets := 1 + rng.IntN(2)
	sw := make([]int, n)
	swSize := 1 + rng.IntN(4)
	island := make([]int, n)
	islSize := 1 + rng.IntN(4)
	for i := range devs {
		s := i * sockets / n
		devs[i] = Device{Index: i, Name: "gpu", Type: "x", NUMA: s, Socket: s}
		sw[i] = s*1000 + (i % (n/sockets + 1) / swSize)
		island[i] = i / islSize
	}
	layout := rng.IntN(3)
	inv := Inventory{Devices: devs}
	for i := range n {
		for j := i + 1; j < n; j++ {
			l := Link{PCIe: PCIeNODE}
			if devs[i].Socket != devs[j].Socket {
				l.PCIe = PCIeSYS
			} else if sw[i] == sw[j] {
				l.PCIe = PCIePIX
			}
			switch layout {
			case 1:
				if island[i] == island[j] {
					l.NVLinks = 4
				}
			case 2:
				l.NVLinks, l.NVSwitch = 12, true
			}
			if rng.IntN(6) == 0 && !l.NVSwitch {
				l.NVLinks += 1 + rng.IntN(3)
			}
			require.NoError(t, inv.SetLink(i, j, l))
		}
	}
	s, err := NewNodeDevices(inv)
	require.NoError(t, err)
	for i := range n {
		if rng.IntN(4) == 0 {
			require.NoError(t, s.Allocate([]int{i}))
		}
	}
	return s
}

// freeCandidates returns the positions of s's unallocated devices.
func freeCandidates(s *NodeDevices) []uint8 {
	var free devMask
	for p := range s.t.n {
		if !s.used.has(p) {
			free.set(p)
		}
	}
	return free.appendPositions(nil)
}

// negDegrees returns, for each candidate, minus its total pair weight to
// the candidates.
func negDegrees(s *NodeDevices, cand []uint8) []int64 {
	n := s.t.n
	out := make([]int64, len(cand))
	for i, p := range cand {
		for _, q := range cand {
			out[i] -= s.t.w[int(p)*n+int(q)]
		}
	}
	return out
}

// noTwins is a twin table for m candidates that disables twin pruning.
func noTwins(m int) []int8 {
	prev := make([]int8, m)
	for i := range prev {
		prev[i] = -1
	}
	return prev
}

// objective evaluates (primary, secondary) for a set of local indices.
func objective(w []int64, n int, cand []uint8, pri1, sec1 []int64, set []uint8) (int64, int64) {
	var p, s int64
	for a, i := range set {
		p += pri1[i]
		s += sec1[i]
		for _, j := range set[a+1:] {
			x := w[int(cand[i])*n+int(cand[j])]
			p += x
			s += x
		}
	}
	return p, s
}

// TestGreedyVersusExact runs both searches on random instances small
// enough for exact search, with both DeviceOrders' affinity bonuses, and
// checks that greedy is never better than
// exact (exact is optimal) and matches its primary objective in the vast
// majority of cases. The observed agreement is logged.
func TestGreedyVersusExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	trials, samePrimary, sameBoth := 0, 0, 0
	for trial := range 400 {
		n := 6 + rng.IntN(10)
		s := randomTopo(t, rng, n)
		cand := freeCandidates(s)
		m := len(cand)
		if m < 3 {
			continue
		}
		k := 2 + rng.IntN(m-2)
		pri1, sec1 := make([]int64, m), negDegrees(s, cand)
		for i := range cand {
			if rng.IntN(3) == 0 {
				pri1[i] = 1 << affShift
				if trial%2 == 1 { // AffinityFirst's bonus
					pri1[i] = 1 << affFirstShift
				}
			}
		}
		exact, greedy := make([]uint8, k), make([]uint8, k)
		exactSearch(s.t.w, n, cand, pri1, sec1, noTwins(m), exact, nil) // plain exhaustive search
		greedySearch(s.t.w, n, cand, pri1, sec1, greedy, nil)
		ep, es := objective(s.t.w, n, cand, pri1, sec1, exact)
		gp, gs := objective(s.t.w, n, cand, pri1, sec1, greedy)
		trials++
		require.True(t, gp < ep || gp == ep && gs <= es, "exact must be optimal")
		if gp == ep {
			samePrimary++
			if gs == es {
				sameBoth++
			}
		}
	}
	t.Logf("greedy matched exact: primary %d/%d, primary+secondary %d/%d", samePrimary, trials, sameBoth, trials)
	assert.GreaterOrEqual(t, float64(samePrimary)/float64(trials), 0.95)
}

// TestTwinPruningIsExact checks that symmetry breaking never changes the
// exact result.
func TestTwinPruningIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		n := 4 + rng.IntN(10)
		s := randomTopo(t, rng, n)
		cand := freeCandidates(s)
		m := len(cand)
		if m < 2 {
			continue
		}
		k := 1 + rng.IntN(m-1)
		pri1, sec1 := make([]int64, m), negDegrees(s, cand)
		var prevBuf [64]int8
		require.True(t, s.exactFeasible(cand, k, &prevBuf))
		pruned, plain := make([]uint8, k), make([]uint8, k)
		exactSearch(s.t.w, n, cand, pri1, sec1, prevBuf[:m], pruned, nil)
		exactSearch(s.t.w, n, cand, pri1, sec1, noTwins(m), plain, nil)
		require.Equal(t, plain, pruned)
	}
}

func TestExactFeasibleCounts(t *testing.T) {
	// 8 devices that are all twins: one canonical subset per size.
	inv := Inventory{}
	for i := range 8 {
		inv.Devices = append(inv.Devices, Device{Index: i, Name: "gpu", NUMA: -1, Socket: -1})
	}
	s, err := NewNodeDevices(inv)
	require.NoError(t, err)
	cand := devMask{0xff}.appendPositions(nil)
	var prev [64]int8
	require.True(t, s.exactFeasible(cand, 4, &prev))
	assert.Equal(t, []int8{-1, 0, 1, 2, 3, 4, 5, 6}, prev[:8])
}
