package gpuserver_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
)

func TestFixturesAreValidAndShaped(t *testing.T) {
	tests := []struct {
		name    string
		inv     gres.Inventory
		n       int
		typ     string
		nvlinks func(a, b int) int // expected lanes between indices a and b
		switchd bool
	}{
		{"DGXH100", gpuserver.DGXH100(), 8, "h100", func(a, b int) int { return 18 }, true},
		{"DGXA100", gpuserver.DGXA100(), 8, "a100", func(a, b int) int { return 12 }, true},
		{"PCIeA100Pairs", gpuserver.PCIeA100Pairs(), 8, "a100", func(a, b int) int { return pick(a/2 == b/2, 12) }, false},
		{"GB200Node", gpuserver.GB200Node(), 4, "gb200", func(a, b int) int { return 18 }, true},
		{"PCIeTwoNUMA", gpuserver.PCIeTwoNUMA(), 8, "l40s", func(a, b int) int { return 0 }, false},
		{"TwoQuads", gpuserver.TwoQuads(), 8, "a100", func(a, b int) int { return pick(a/4 == b/4, 4) }, false},
		{"DGX2", gpuserver.DGX2(), 16, "v100", func(a, b int) int { return 6 }, true},
		{"NVL72", gpuserver.NVL72(), 72, "gb200", func(a, b int) int { return 18 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.inv.Validate())
			require.Len(t, tt.inv.Devices, tt.n)
			sockets := map[int]bool{}
			for i, d := range tt.inv.Devices {
				assert.Equal(t, i, d.Index)
				assert.Equal(t, "gpu", d.Name)
				assert.Equal(t, tt.typ, d.Type)
				assert.Positive(t, d.MemoryMiB)
				assert.Equal(t, d.Socket, d.NUMA)
				assert.True(t, d.Cores.Equal(gpuserver.SocketCores(d.Socket)))
				sockets[d.Socket] = true
				for j := range tt.inv.Devices {
					if i == j {
						continue
					}
					l := tt.inv.Link(i, j)
					assert.Equal(t, tt.nvlinks(i, j), l.NVLinks, "%d-%d", i, j)
					assert.Equal(t, tt.switchd, l.NVSwitch, "%d-%d", i, j)
					if tt.inv.Devices[j].Socket != d.Socket {
						assert.Equal(t, gres.PCIeSYS, l.PCIe)
					} else {
						assert.GreaterOrEqual(t, l.PCIe, gres.PCIeNODE)
					}
				}
			}
			assert.GreaterOrEqual(t, len(sockets), 2, "every fixture spans two sockets")
			_, err := gres.NewNodeDevices(tt.inv)
			require.NoError(t, err)
		})
	}
	// Fresh copies: modifying one does not affect the next.
	a := gpuserver.DGXH100()
	a.Devices[0].Type = "x"
	a.Links[0][1].NVLinks = 1
	b := gpuserver.DGXH100()
	assert.Equal(t, "h100", b.Devices[0].Type)
	assert.Equal(t, 18, b.Links[0][1].NVLinks)
}

func pick(cond bool, v int) int {
	if cond {
		return v
	}
	return 0
}

func TestPCIeLevelsOfPairsFixture(t *testing.T) {
	inv := gpuserver.PCIeA100Pairs()
	assert.Equal(t, gres.PCIePIX, inv.Link(0, 1).PCIe)
	assert.Equal(t, gres.PCIePXB, inv.Link(0, 2).PCIe)
	assert.Equal(t, gres.PCIeSYS, inv.Link(0, 4).PCIe)
	a := gpuserver.DGXA100()
	assert.Equal(t, gres.PCIePXB, a.Link(2, 3).PCIe)
	assert.Equal(t, gres.PCIeNODE, a.Link(1, 2).PCIe)
	n := gpuserver.PCIeTwoNUMA()
	assert.Equal(t, gres.PCIePIX, n.Link(6, 7).PCIe)
	assert.Equal(t, gres.PCIeNODE, n.Link(5, 6).PCIe)
}

func TestRandomIsValidAndDeterministic(t *testing.T) {
	for seed := range 500 {
		n := 1 + seed%64
		inv := gpuserver.Random(rand.New(rand.NewPCG(uint64(seed), 1)), n, seed%2 == 0)
		require.NoError(t, inv.Validate(), "seed %d", seed)
		require.Len(t, inv.Devices, n)
		again := gpuserver.Random(rand.New(rand.NewPCG(uint64(seed), 1)), n, seed%2 == 0)
		require.Equal(t, inv, again, "seed %d", seed)
	}
	assert.Len(t, gpuserver.Random(rand.New(rand.NewPCG(1, 1)), 500, false).Devices, 64, "clamped")
	assert.Len(t, gpuserver.Random(rand.New(rand.NewPCG(1, 1)), 0, false).Devices, 1, "clamped")
}

func TestSocketCores(t *testing.T) {
	c := gpuserver.SocketCores(1)
	assert.Equal(t, 64, c.Count())
	assert.True(t, c.Has(64) && c.Has(127) && !c.Has(63) && !c.Has(128))
	for _, s := range []int{-1, 1024, 1 << 60} {
		assert.True(t, gpuserver.SocketCores(s).IsEmpty(), "socket %d", s)
	}
	inv := gpuserver.Random(nil, 4, false)
	require.NoError(t, inv.Validate(), "a nil rng draws from a fixed seed")
	assert.Equal(t, inv, gpuserver.Random(nil, 4, false))
}
