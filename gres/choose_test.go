package gres_test

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// chooseCase is one hand-checked expectation: on fixture inv, with used
// allocated and bad unhealthy, a request for k GPUs (optionally bound to a
// socket's cores) returns want.
type chooseCase struct {
	name    string
	used    []int
	bad     []int
	k       int
	socket  int // -1: no cores
	enforce bool
	want    []int // nil: ErrInsufficientDevices
}

func runChooseCases(t *testing.T, inv gres.Inventory, cases []chooseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := gres.NewNodeDevices(inv)
			require.NoError(t, err)
			require.NoError(t, s.Allocate(tc.used))
			for _, b := range tc.bad {
				require.NoError(t, s.SetHealthy(b, false))
			}
			req := gres.DeviceRequest{Name: "gpu", Count: tc.k, EnforceBinding: tc.enforce}
			if tc.socket >= 0 {
				req.Cores = gpuserver.SocketCores(tc.socket)
			}
			p, err := s.Choose(req)
			if tc.want == nil {
				require.ErrorIs(t, err, gres.ErrInsufficientDevices)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, p.Devices, "score %+v", p.Score)
			require.NoError(t, s.Allocate(p.Devices), "a choice is always allocatable")
		})
	}
}

// DGX-H100: every pair has 18 NVSwitch lanes, so host locality (socket /
// NUMA), CPU affinity and what is left behind decide.
func TestChooseGoldenDGXH100(t *testing.T) {
	runChooseCases(t, gpuserver.DGXH100(), []chooseCase{
		{"idle k=1 lowest index", nil, nil, 1, -1, false, []int{0}},
		{"idle k=2 same NUMA", nil, nil, 2, -1, false, []int{0, 1}},
		{"idle k=4 one socket", nil, nil, 4, -1, false, []int{0, 1, 2, 3}},
		{"idle k=8 whole node", nil, nil, 8, -1, false, []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"k=4 takes the untouched socket", []int{0}, nil, 4, -1, false, []int{4, 5, 6, 7}},
		{"k=1 packs the used socket", []int{0}, nil, 1, -1, false, []int{1}},
		{"k=2 takes the orphans", []int{0, 2}, nil, 2, -1, false, []int{1, 3}},
		{"k=2 near the job's cores", nil, nil, 2, 1, false, []int{4, 5}},
		{"k=6 all close ones plus a same-NUMA pair", nil, nil, 6, 1, false, []int{0, 1, 4, 5, 6, 7}},
		{"enforce binding k=4", nil, nil, 4, 1, true, []int{4, 5, 6, 7}},
		{"enforce binding k=5 cannot fit", nil, nil, 5, 1, true, nil},
		{"enforce binding skips unhealthy", nil, []int{5}, 3, 1, true, []int{4, 6, 7}},
		{"unhealthy and used leave too few", []int{0, 1, 2}, []int{4, 5}, 4, -1, false, nil},
	})
}

// DGX-A100: NVSwitch all-to-all (12 lanes); PCIe pairs (0,1), (2,3)…
// share a switch tree (PXB).
func TestChooseGoldenDGXA100(t *testing.T) {
	runChooseCases(t, gpuserver.DGXA100(), []chooseCase{
		{"idle k=2 PCIe pair", nil, nil, 2, -1, false, []int{0, 1}},
		{"k=2 a whole PXB pair, not 1+2", []int{0}, nil, 2, -1, false, []int{2, 3}},
		{"k=1 the used GPU's partner", []int{0}, nil, 1, -1, false, []int{1}},
		{"k=2 PXB pair beats same-NUMA orphans", []int{0, 2}, nil, 2, -1, false, []int{4, 5}},
		{"k=2 among four orphans: same NUMA", []int{1, 2, 5, 6}, nil, 2, -1, false, []int{0, 3}},
		{"idle k=3", nil, nil, 3, -1, false, []int{0, 1, 2}},
		{"k=4 near cores", nil, nil, 4, 1, false, []int{4, 5, 6, 7}},
	})
}

// 8 × A100 PCIe with NVLink bridges in pairs: only the pairs have NVLink.
func TestChooseGoldenPCIePairs(t *testing.T) {
	runChooseCases(t, gpuserver.PCIeA100Pairs(), []chooseCase{
		{"idle k=2 a bridged pair", nil, nil, 2, -1, false, []int{0, 1}},
		{"k=2 a bridged pair, not two orphans", []int{0, 2}, nil, 2, -1, false, []int{4, 5}},
		{"k=1 an orphan, keeping pairs whole", []int{0, 2}, nil, 1, -1, false, []int{1}},
		{"k=1 the used GPU's partner", []int{0}, nil, 1, -1, false, []int{1}},
		{"k=2 the only intact pair", []int{1, 2, 4}, nil, 2, -1, false, []int{6, 7}},
		{"k=3 a pair plus its switch-tree neighbour", []int{0, 2}, nil, 3, -1, false, []int{4, 5, 6}},
		{"k=4 near cores", nil, nil, 4, 1, false, []int{4, 5, 6, 7}},
		{"k=2 bridged pair on the job's socket", []int{6}, nil, 2, 1, false, []int{4, 5}},
		{"unhealthy GPU breaks its pair", nil, []int{1}, 2, -1, false, []int{2, 3}},
	})
}

// 8 × L40S with no NVLink, two NUMA domains: PCIe switch pairs and CPU
// affinity decide.
func TestChooseGoldenTwoNUMA(t *testing.T) {
	runChooseCases(t, gpuserver.PCIeTwoNUMA(), []chooseCase{
		{"idle k=2 same switch", nil, nil, 2, -1, false, []int{0, 1}},
		{"idle k=2 on the job's socket", nil, nil, 2, 1, false, []int{4, 5}},
		{"idle k=4 one NUMA node", nil, nil, 4, -1, false, []int{0, 1, 2, 3}},
		{"k=2 an intact switch pair", []int{0}, nil, 2, -1, false, []int{2, 3}},
		{"k=1 the orphan", []int{0}, nil, 1, -1, false, []int{1}},
		{"enforce binding: socket 0 exhausted", []int{0, 1, 2}, nil, 2, 0, true, nil},
		{"affinity first: the last close GPU plus one", []int{0, 1, 2}, nil, 2, 0, false, []int{3, 4}},
		{"k=4 two intact switch pairs beat three on one socket", []int{0, 4}, nil, 4, -1, false, []int{2, 3, 6, 7}},
	})
}

// Two 4-GPU NVLink islands: a small job must not strand an island.
func TestChooseGoldenTwoQuads(t *testing.T) {
	runChooseCases(t, gpuserver.TwoQuads(), []chooseCase{
		{"k=2 finishes the broken island", []int{4, 5}, nil, 2, -1, false, []int{6, 7}},
		{"k=2 again: the broken island, not a fresh one", []int{0, 1}, nil, 2, -1, false, []int{2, 3}},
		{"k=1 the used GPU's switch partner", []int{4}, nil, 1, -1, false, []int{5}},
		{"k=3 the broken island's rest", []int{4}, nil, 3, -1, false, []int{5, 6, 7}},
		{"k=4 the intact island", []int{4}, nil, 4, -1, false, []int{0, 1, 2, 3}},
		{"k=4 with one GPU per island used: NVLink over leftovers", []int{0, 4}, nil, 4, -1, false, []int{1, 2, 3, 5}},
	})
}

func TestChooseGoldenGB200(t *testing.T) {
	runChooseCases(t, gpuserver.GB200Node(), []chooseCase{
		{"idle k=2 one Grace", nil, nil, 2, -1, false, []int{0, 1}},
		{"idle k=2 on the job's Grace", nil, nil, 2, 1, false, []int{2, 3}},
		{"k=2 the intact Grace", []int{0}, nil, 2, -1, false, []int{2, 3}},
		{"k=1 the orphan", []int{0}, nil, 1, -1, false, []int{1}},
		{"k=4 whole tray", nil, nil, 4, -1, false, []int{0, 1, 2, 3}},
	})
}

// TestChooseGoldenFile pins every choice on every fixture for a grid of
// allocation patterns in testdata/choose.golden (rewrite with -update after
// an intended change, and review the diff).
func TestChooseGoldenFile(t *testing.T) {
	fixtures := []struct {
		name string
		inv  gres.Inventory
	}{
		{"DGXH100", gpuserver.DGXH100()}, {"DGXA100", gpuserver.DGXA100()},
		{"PCIeA100Pairs", gpuserver.PCIeA100Pairs()}, {"PCIeTwoNUMA", gpuserver.PCIeTwoNUMA()},
		{"TwoQuads", gpuserver.TwoQuads()}, {"GB200Node", gpuserver.GB200Node()}, {"DGX2", gpuserver.DGX2()},
	}
	usedPatterns := [][]int{nil, {0}, {1}, {0, 2}, {0, 5}, {1, 2, 4}, {0, 1, 2}, {3, 4, 7}}
	var b strings.Builder
	b.WriteString("# fixture used=<indices> cores=<socket|-> k=<n> -> devices | NVLink Affinity PCIe LeftoverNVLink LeftoverPCIe | quality\n")
	for _, fx := range fixtures {
		for _, used := range usedPatterns {
			for _, sock := range []int{-1, 1} {
				for k := 1; k <= len(fx.inv.Devices); k++ {
					s, err := gres.NewNodeDevices(fx.inv)
					require.NoError(t, err)
					if s.Allocate(used) != nil {
						continue
					}
					req := gres.DeviceRequest{Name: "gpu", Count: k}
					cores := "-"
					if sock >= 0 {
						req.Cores, cores = gpuserver.SocketCores(sock), fmt.Sprint(sock)
					}
					p, err := s.Choose(req)
					if err != nil {
						continue
					}
					fmt.Fprintf(&b, "%s used=%v cores=%s k=%d -> %v | %d %d %d %d %d | %.3f\n", fx.name, used, cores, k,
						p.Devices, p.Score.NVLink, p.Score.Affinity, p.Score.PCIe, p.Score.LeftoverNVLink, p.Score.LeftoverPCIe, p.Quality)
				}
			}
		}
	}
	path := filepath.Join("testdata", "choose.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./gres -run TestChooseGoldenFile -update")
	assert.Equal(t, string(want), b.String())
}

// TestChooseIsOptimalOnFixtures checks every choice on the 8-GPU fixtures,
// in both DeviceOrders, against every subset of eligible devices: no subset
// scores better in that order, and
// an equal one never has lower indices.
func TestChooseIsOptimalOnFixtures(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, inv := range []gres.Inventory{gpuserver.DGXH100(), gpuserver.DGXA100(), gpuserver.PCIeA100Pairs(),
		gpuserver.PCIeTwoNUMA(), gpuserver.TwoQuads(), gpuserver.GB200Node()} {
		n := len(inv.Devices)
		for trial := range 40 {
			s, err := gres.NewNodeDevices(inv)
			require.NoError(t, err)
			var used []int
			for i := range n {
				if rng.IntN(3) == 0 {
					used = append(used, i)
				}
			}
			require.NoError(t, s.Allocate(used))
			req := gres.DeviceRequest{Name: "gpu", Count: 1 + rng.IntN(n)}
			if trial%2 == 1 {
				req.Cores = gpuserver.SocketCores(rng.IntN(2))
			}
			req.Order = gres.DeviceOrder(trial / 2 % 2) // both orders, with and without cores
			p, err := s.Choose(req)
			if err != nil {
				require.ErrorIs(t, err, gres.ErrInsufficientDevices)
				continue
			}
			free := s.AppendFree(nil, "gpu", "")
			for mask := 0; mask < 1<<len(free); mask++ {
				var set []int
				for i, d := range free {
					if mask&(1<<i) != 0 {
						set = append(set, d)
					}
				}
				if len(set) != req.Count {
					continue
				}
				q, err := s.Evaluate(set, req)
				require.NoError(t, err)
				c := p.Score.CompareIn(q.Score, req.Order)
				require.GreaterOrEqual(t, c, 0, "used=%v req=%d chose %v %+v, but %v scores %+v", used, req.Count, p.Devices, p.Score, set, q.Score)
				if c == 0 {
					require.LessOrEqual(t, slices.Compare(p.Devices, set), 0, "ties go to the lowest indices")
				}
			}
		}
	}
}

// TestChooseProperties drives random inventories through random sequences
// of choose/allocate/release/health events and checks the invariants: no
// device is ever allocated twice, no unhealthy device is ever chosen or
// allocated, binding is honoured, types match, the choice's score is never
// worse than a random valid set's, and choices are deterministic.
func TestChooseProperties(t *testing.T) {
	sequences := 300
	if testing.Short() {
		sequences = 60
	}
	for seed := range sequences {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		n := 1 + rng.IntN(16)
		if seed%10 == 9 {
			n = 17 + rng.IntN(48) // large: greedy path too
		}
		inv := gpuserver.Random(rng, n, seed%3 == 0)
		s, err := gres.NewNodeDevices(inv)
		require.NoError(t, err)
		owner := map[int]int{} // device -> job
		sick := map[int]bool{}
		jobs := map[int][]int{}
		for step := range 60 {
			switch op := rng.IntN(10); {
			case op < 5:
				req := gres.DeviceRequest{Name: "gpu", Count: 1 + rng.IntN(max(1, n/2))}
				if seed%3 == 0 && rng.IntN(2) == 0 {
					req.Type = []string{"a100", "h100"}[rng.IntN(2)]
				}
				if rng.IntN(2) == 0 {
					req.Cores = gpuserver.SocketCores(rng.IntN(2))
					req.EnforceBinding = rng.IntN(2) == 0
				}
				p, err := s.Choose(req)
				eligible := eligibleDevices(s, req)
				if len(eligible) < req.Count {
					require.ErrorIs(t, err, gres.ErrInsufficientDevices, "seed %d step %d", seed, step)
					continue
				}
				require.NoError(t, err, "seed %d step %d", seed, step)
				require.Len(t, p.Devices, req.Count)
				require.True(t, slices.IsSorted(p.Devices))
				for _, d := range p.Devices {
					require.Contains(t, eligible, d, "seed %d: chose ineligible device %d (unhealthy, used, wrong type or unbound)", seed, d)
				}
				again, err := s.Clone().Choose(req)
				require.NoError(t, err)
				require.Equal(t, p, again, "deterministic")
				for range 3 {
					perm := rng.Perm(len(eligible))[:req.Count]
					set := make([]int, req.Count)
					for i, x := range perm {
						set[i] = eligible[x]
					}
					q, err := s.Evaluate(set, req)
					require.NoError(t, err)
					require.GreaterOrEqual(t, p.Score.Compare(q.Score), 0,
						"seed %d: chosen %v %+v worse than random %v %+v", seed, p.Devices, p.Score, set, q.Score)
				}
				require.NoError(t, s.Allocate(p.Devices))
				for _, d := range p.Devices {
					_, taken := owner[d]
					require.False(t, taken, "device %d allocated twice", d)
					owner[d] = step
				}
				jobs[step] = p.Devices
			case op < 8:
				if len(jobs) > 0 { // release the oldest job (map order is random)
					id := slices.Min(slices.Collect(maps.Keys(jobs)))
					devs := jobs[id]
					require.NoError(t, s.Release(devs))
					for _, d := range devs {
						delete(owner, d)
					}
					delete(jobs, id)
				}
			default:
				d := inv.Devices[rng.IntN(n)].Index
				healthy := rng.IntN(2) == 0
				require.NoError(t, s.SetHealthy(d, healthy))
				sick[d] = !healthy
			}
			// The state agrees with the model.
			for _, dev := range inv.Devices {
				_, used := owner[dev.Index]
				require.Equal(t, used, s.InUse(dev.Index))
				require.Equal(t, !sick[dev.Index], s.IsHealthy(dev.Index))
				if used {
					require.ErrorIs(t, s.Allocate([]int{dev.Index}), gres.ErrDeviceInUse)
				} else if sick[dev.Index] {
					require.ErrorIs(t, s.Allocate([]int{dev.Index}), gres.ErrDeviceUnhealthy)
				}
			}
		}
	}
}

// eligibleDevices lists, independently of the chooser, the devices a
// request may take.
func eligibleDevices(s *gres.NodeDevices, req gres.DeviceRequest) []int {
	var out []int
	for _, d := range s.Inventory().Devices {
		if s.InUse(d.Index) || !s.IsHealthy(d.Index) || (req.Type != "" && d.Type != req.Type) {
			continue
		}
		if req.EnforceBinding && !req.Cores.IsEmpty() && !d.Cores.IsEmpty() && !d.Cores.Intersects(req.Cores) {
			continue
		}
		out = append(out, d.Index)
	}
	return out
}

func TestChooseRequestErrors(t *testing.T) {
	s, err := gres.NewNodeDevices(gpuserver.DGXH100())
	require.NoError(t, err)
	_, err = s.Choose(gres.DeviceRequest{Name: "gpu", Count: -1})
	assert.ErrorIs(t, err, gres.ErrInvalidRequest)
	_, err = s.Choose(gres.DeviceRequest{Count: 1})
	assert.ErrorIs(t, err, gres.ErrInvalidRequest)
	p, err := s.Choose(gres.DeviceRequest{Name: "gpu"})
	require.NoError(t, err)
	assert.Empty(t, p.Devices)
	_, err = s.Choose(gres.DeviceRequest{Name: "gpu", Type: "a100", Count: 1})
	assert.ErrorIs(t, err, gres.ErrInsufficientDevices)
	assert.ErrorContains(t, err, "gpu:a100")
	_, err = s.Choose(gres.DeviceRequest{Name: "nic", Count: 1})
	assert.ErrorIs(t, err, gres.ErrInsufficientDevices)
	_, err = s.Choose(gres.DeviceRequest{Name: "gpu", Count: 9})
	assert.ErrorIs(t, err, gres.ErrInsufficientDevices)
	_, err = s.Choose(gres.DeviceRequest{Name: "gpu", Count: 1, Order: gres.AffinityFirst + 1})
	assert.ErrorIs(t, err, gres.ErrInvalidRequest, "unknown order")
	_, err = s.Evaluate([]int{0, 0}, gres.DeviceRequest{Name: "gpu"})
	assert.ErrorIs(t, err, gres.ErrInvalidRequest)
	_, err = s.Evaluate([]int{9}, gres.DeviceRequest{Name: "gpu"})
	assert.ErrorIs(t, err, gres.ErrUnknownDevice)
}

// TestChooseAffinityFirstPrefersJobSocket checks the two DeviceOrders on
// PCIeA100Pairs with GPUs 0 and 2 in use, for a 2-GPU job on socket 0's
// cores: NVLinkFirst (the default) takes the bridged pair 4,5 on socket 1;
// AffinityFirst, Slurm's order, takes 1 and 3 next to the job's cores
// though no NVLink joins them. With EnforceBinding both orders agree.
func TestChooseAffinityFirstPrefersJobSocket(t *testing.T) {
	s, err := gres.NewNodeDevices(gpuserver.PCIeA100Pairs())
	require.NoError(t, err)
	require.NoError(t, s.Allocate([]int{0, 2}))
	req := gres.DeviceRequest{Name: "gpu", Count: 2, Cores: gpuserver.SocketCores(0)}
	def, err := s.Choose(req)
	require.NoError(t, err)
	assert.Equal(t, []int{4, 5}, def.Devices, "NVLink first")
	req.Order = gres.AffinityFirst
	slurm, err := s.Choose(req)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 3}, slurm.Devices, "the job's socket first")
	assert.Positive(t, def.Score.Compare(slurm.Score))
	assert.Positive(t, slurm.Score.CompareIn(def.Score, gres.AffinityFirst))
	req.EnforceBinding = true
	for _, o := range []gres.DeviceOrder{gres.NVLinkFirst, gres.AffinityFirst} {
		req.Order = o
		p, err := s.Choose(req)
		require.NoError(t, err)
		assert.Equal(t, []int{1, 3}, p.Devices, "%v with enforce-binding", o)
	}
	assert.Equal(t, "nvlink-first", gres.NVLinkFirst.String())
	assert.Equal(t, "affinity-first", gres.AffinityFirst.String())
}

func TestPlacementQuality(t *testing.T) {
	s, err := gres.NewNodeDevices(gpuserver.PCIeA100Pairs())
	require.NoError(t, err)
	best, err := s.Evaluate([]int{0, 1}, gres.DeviceRequest{Name: "gpu"})
	require.NoError(t, err)
	assert.InDelta(t, 1.0, best.Quality, 1e-12, "the best pair of the node")
	worst, err := s.Evaluate([]int{0, 4}, gres.DeviceRequest{Name: "gpu"})
	require.NoError(t, err)
	assert.InDelta(t, 10.0/1260, worst.Quality, 1e-12, "cross-socket, no NVLink: 10 of 1200+60")
	one, err := s.Evaluate([]int{3}, gres.DeviceRequest{Name: "gpu"})
	require.NoError(t, err)
	assert.Equal(t, 1.0, one.Quality)
	assert.Equal(t, 1, worst.Score.Compare(gres.Score{}))
	assert.Equal(t, -1, gres.Score{LeftoverPCIe: 1}.Compare(gres.Score{NVLink: 1}))
}

// TestChooseLargeDomains checks the greedy path on the 72-GPU NVL72 domain:
// whole trays for 4-GPU jobs, affinity honoured, and every choice at least
// as good as many random sets.
func TestChooseLargeDomains(t *testing.T) {
	s, err := gres.NewNodeDevices(gpuserver.NVL72())
	require.NoError(t, err)
	p, err := s.Choose(gres.DeviceRequest{Name: "gpu", Count: 4})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2, 3}, p.Devices, "one tray")
	require.NoError(t, s.Allocate([]int{0, 5, 9}))
	p, err = s.Choose(gres.DeviceRequest{Name: "gpu", Count: 4})
	require.NoError(t, err)
	assert.Equal(t, []int{2, 3, 6, 7}, p.Devices, "two intact socket pairs (the lowest such)")
	p, err = s.Choose(gres.DeviceRequest{Name: "gpu", Count: 2, Cores: gpuserver.SocketCores(20)})
	require.NoError(t, err)
	assert.Equal(t, []int{40, 41}, p.Devices, "the GPUs of the job's socket")
	p, err = s.Choose(gres.DeviceRequest{Name: "gpu", Count: 1})
	require.NoError(t, err)
	assert.Equal(t, []int{1}, p.Devices, "an orphan whose socket partner is used")
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{3, 8, 20, 36} {
		req := gres.DeviceRequest{Name: "gpu", Count: k}
		p, err := s.Choose(req)
		require.NoError(t, err)
		free := s.AppendFree(nil, "gpu", "")
		for range 50 {
			perm := rng.Perm(len(free))[:k]
			set := make([]int, k)
			for i, x := range perm {
				set[i] = free[x]
			}
			q, err := s.Evaluate(set, req)
			require.NoError(t, err)
			require.GreaterOrEqual(t, p.Score.Compare(q.Score), 0)
		}
	}
}
