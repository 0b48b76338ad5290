package amd_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/amd/amdtest"
	"github.com/sluicehq/sluice/gres/gpuserver"
)

// bestByExhaustion scores every k-subset of the free devices with
// Evaluate and returns the best score in req's order: the definition of
// an optimal choice, computed without the chooser's search.
func bestByExhaustion(t *testing.T, s *gres.NodeDevices, req gres.DeviceRequest) (gres.Score, bool) {
	t.Helper()
	free := s.AppendFree(nil, req.Name, req.Type)
	var best gres.Score
	found := false
	pick := make([]int, 0, req.Count)
	var rec func(from int)
	rec = func(from int) {
		if len(pick) == req.Count {
			p, err := s.Evaluate(pick, req)
			require.NoError(t, err)
			if !found || p.Score.CompareIn(best, req.Order) > 0 {
				best, found = p.Score, true
			}
			return
		}
		for i := from; i <= len(free)-(req.Count-len(pick)); i++ {
			pick = append(pick, free[i])
			rec(i + 1)
			pick = pick[:len(pick)-1]
		}
	}
	rec(0)
	return best, found
}

// checkOptimal compares Choose with exhaustive search for every count,
// with and without CPU affinity, in both orders, on the node free and
// after some allocations and a failure.
func checkOptimal(t *testing.T, inv gres.Inventory) {
	t.Helper()
	states := [][]int{nil, {0}, {0, 3}, {1, 2, 5}}
	for _, used := range states {
		for _, sick := range [][]int{nil, {4}} {
			s, err := gres.NewNodeDevices(inv)
			require.NoError(t, err)
			require.NoError(t, s.Allocate(used))
			for _, x := range sick {
				require.NoError(t, s.SetHealthy(x, false))
			}
			for _, cores := range []gres.CoreSet{{}, inv.Devices[len(inv.Devices)-1].Cores} {
				for _, order := range []gres.DeviceOrder{gres.NVLinkFirst, gres.AffinityFirst} {
					for k := 1; k <= s.Free("gpu", ""); k++ {
						req := gres.DeviceRequest{Name: "gpu", Count: k, Cores: cores, Order: order}
						p, err := s.Choose(req)
						require.NoError(t, err)
						want, ok := bestByExhaustion(t, s, req)
						require.True(t, ok)
						assert.Zero(t, p.Score.CompareIn(want, order), "used %v sick %v cores %v %v k=%d: chose %v %+v, best %+v",
							used, sick, cores, order, k, p.Devices, p.Score, want)
					}
				}
			}
		}
	}
}

// TestChooseOptimal shows the same optimality of the best-connected
// choice on AMD hives (xGMI links) as on NVIDIA DGX nodes (NVLink).
func TestChooseOptimal(t *testing.T) {
	for name, m := range map[string]amdtest.Machine{
		"MI300XHive": amdtest.MI300XHive(), "MI250X": amdtest.MI250XNode(), "MI300XCPX": amdtest.MI300XCPX(),
	} {
		t.Run(name, func(t *testing.T) {
			d, _ := fixture(t, m)
			checkOptimal(t, discover(t, d).Inventory)
		})
	}
	t.Run("DGXH100", func(t *testing.T) { checkOptimal(t, gpuserver.DGXH100()) })
	t.Run("DGXA100", func(t *testing.T) { checkOptimal(t, gpuserver.DGXA100()) })
}

// TestChoosePlacements checks what the optimal choices are on the AMD
// machines.
func TestChoosePlacements(t *testing.T) {
	invs := map[string]gres.Inventory{}
	for name, m := range map[string]amdtest.Machine{"MI300XHive": amdtest.MI300XHive(), "MI250X": amdtest.MI250XNode(), "MI300XCPX": amdtest.MI300XCPX()} {
		d, _ := fixture(t, m)
		invs[name] = discover(t, d).Inventory
	}
	choose := func(t *testing.T, name string, used []int, k int) []int {
		t.Helper()
		s, err := gres.NewNodeDevices(invs[name])
		require.NoError(t, err)
		require.NoError(t, s.Allocate(used))
		p, err := s.Choose(gres.DeviceRequest{Name: "gpu", Count: k})
		require.NoError(t, err)
		return p.Devices
	}
	for _, used := range [][]int{nil, {0, 1}, {1, 2, 3}, {0, 2, 4}, {0, 3, 4, 7}} {
		wholeFree := false
		for p := range 4 {
			wholeFree = wholeFree || !slices.Contains(used, 2*p) && !slices.Contains(used, 2*p+1)
		}
		got := choose(t, "MI250X", used, 2)
		require.Len(t, got, 2)
		if wholeFree {
			assert.Equal(t, got[0]/2, got[1]/2, "used %v: a 2-GCD job takes both GCDs of one MI250X, got %v", used, got)
		} else {
			assert.Equal(t, 2, link(invs["MI250X"], got[0], got[1]), "used %v: no package free, a double link, got %v", used, got)
		}
	}
	// Four GCDs: two neighbouring packages (4+4+2+1 links).
	assert.Equal(t, []int{0, 1, 2, 3}, choose(t, "MI250X", nil, 4))
	// MI300X hive: all pairs have one link; the host side decides.
	got := choose(t, "MI300XHive", nil, 4)
	assert.True(t, got[0]/4 == got[3]/4, "four GPUs of one NUMA node, got %v", got)
	// CPX: partitions of one GPU before the other GPU.
	assert.Equal(t, []int{0, 1}, choose(t, "MI300XCPX", nil, 2))
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7}, choose(t, "MI300XCPX", []int{0}, 7))
}

func link(inv gres.Inventory, i, j int) int { return inv.Link(i, j).NVLinks }
