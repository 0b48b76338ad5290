package gpuserver

import (
	"math/rand/v2"

	"github.com/sluicehq/sluice/gres"
)

// Random returns a random valid inventory of n GPUs (1 ≤ n ≤ 64) drawn from
// rng: one or two sockets, PCIe switches of 1-4 GPUs under switch trees,
// and one of four NVLink layouts (none, bridged pairs, direct-link islands
// of 2-4 GPUs, NVSwitch all-to-all) plus occasional extra random links.
// About one GPU in eight has unknown CPU affinity, and types are drawn from
// "a100" and "h100" when mixed is true. n outside [1, 64] is clamped; a
// nil rng draws from a fixed seed.
func Random(rng *rand.Rand, n int, mixed bool) gres.Inventory {
	if rng == nil {
		rng = rand.New(rand.NewPCG(0, 0))
	}
	n = max(1, min(n, 64))
	sockets := 1 + rng.IntN(2)
	devs := make([]gres.Device, n)
	sw := make([]int, n)
	tree := make([]int, n)
	island := make([]int, n)
	swID, treeID, islID := 0, 0, 0
	left, tleft, ileft := 0, 0, 0
	islandSize := 2 + rng.IntN(3)
	for i := range devs {
		s := i * sockets / n
		if i > 0 && s != devs[i-1].Socket {
			left, tleft, ileft = 0, 0, 0
		}
		if left == 0 {
			swID++
			left = 1 + rng.IntN(4)
		}
		if tleft == 0 {
			treeID++
			tleft = 2 + rng.IntN(6)
		}
		if ileft == 0 {
			islID++
			ileft = islandSize
		}
		left--
		tleft--
		ileft--
		sw[i], tree[i], island[i] = swID, treeID, islID
		model := "a100"
		if mixed && rng.IntN(2) == 0 {
			model = "h100"
		}
		devs[i] = gpu(i, model, 81920, "", s)
		if rng.IntN(8) == 0 {
			devs[i].Cores = gres.CoreSet{}
		}
	}
	layout := rng.IntN(4)
	lanes := 1 + rng.IntN(12)
	extra := make(map[[2]int]int)
	if rng.IntN(2) == 0 {
		for range n {
			a, b := rng.IntN(n), rng.IntN(n)
			if a != b {
				extra[[2]int{min(a, b), max(a, b)}] = 1 + rng.IntN(4)
			}
		}
	}
	return build(devs, func(a, b *gres.Device) gres.Link {
		i, j := a.Index, b.Index
		l := gres.Link{PCIe: hostLevel(a, b, func(x int) int { return sw[x] }, func(x int) int { return tree[x] })}
		switch layout {
		case 1:
			if i/2 == j/2 {
				l.NVLinks = lanes
			}
		case 2:
			if island[i] == island[j] {
				l.NVLinks = lanes
			}
		case 3:
			l.NVLinks, l.NVSwitch = lanes, true
		}
		if x, ok := extra[[2]int{i, j}]; ok && !l.NVSwitch {
			l.NVLinks += x
		}
		return l
	})
}
