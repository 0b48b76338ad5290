package gres_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
)

func TestInventoryValidate(t *testing.T) {
	base := func() gres.Inventory { return gpuserver.PCIeA100Pairs() }
	tests := []struct {
		name   string
		mutate func(inv *gres.Inventory)
		msg    string
	}{
		{"duplicate index", func(inv *gres.Inventory) { inv.Devices[3].Index = 2 }, "duplicate index 2"},
		{"unsorted", func(inv *gres.Inventory) { inv.Devices[3].Index = 1 }, "increasing index order"},
		{"negative index", func(inv *gres.Inventory) { inv.Devices[0].Index = -1 }, "index -1"},
		{"huge index", func(inv *gres.Inventory) { inv.Devices[7].Index = gres.MaxDeviceIndex + 1 }, "index 65536"},
		{"bad name", func(inv *gres.Inventory) { inv.Devices[1].Name = "g pu" }, `GRES name "g pu"`},
		{"empty name", func(inv *gres.Inventory) { inv.Devices[1].Name = "" }, `GRES name ""`},
		{"bad type", func(inv *gres.Inventory) { inv.Devices[1].Type = "a:b" }, `type "a:b"`},
		{"dup UUID", func(inv *gres.Inventory) { inv.Devices[5].UUID = inv.Devices[4].UUID }, "duplicates device 4"},
		{"dup bus", func(inv *gres.Inventory) { inv.Devices[5].PCIBusID = inv.Devices[1].PCIBusID }, "PCI bus id"},
		{"negative memory", func(inv *gres.Inventory) { inv.Devices[2].MemoryMiB = -5 }, "negative memory"},
		{"bad NUMA", func(inv *gres.Inventory) { inv.Devices[2].NUMA = -2 }, "NUMA node -2"},
		{"bad socket", func(inv *gres.Inventory) { inv.Devices[2].Socket = -3 }, "socket -3"},
		{"NUMA on two sockets", func(inv *gres.Inventory) { inv.Devices[0].NUMA = 1; inv.Devices[1].NUMA = 1 }, "device 4: NUMA node 1 on socket 1, but another device puts it on socket 0"},
		{"asymmetric", func(inv *gres.Inventory) { inv.Links[0][1].NVLinks = 4 }, "asymmetric"},
		{"self link", func(inv *gres.Inventory) { inv.Links[2][2] = gres.Link{NVLinks: 1} }, "itself"},
		{"short matrix", func(inv *gres.Inventory) { inv.Links = inv.Links[:7] }, "7 rows for 8 devices"},
		{"short row", func(inv *gres.Inventory) { inv.Links[4] = inv.Links[4][:3] }, "3 entries"},
		{"too many lanes", func(inv *gres.Inventory) { setBoth(inv, 0, 1, gres.Link{NVLinks: 300, PCIe: gres.PCIePIX}) }, "300 NVLinks"},
		{"negative lanes", func(inv *gres.Inventory) { setBoth(inv, 0, 1, gres.Link{NVLinks: -1, PCIe: gres.PCIePIX}) }, "-1 NVLinks"},
		{"NVSwitch without lanes", func(inv *gres.Inventory) { setBoth(inv, 0, 1, gres.Link{NVSwitch: true, PCIe: gres.PCIePIX}) }, "NVSwitch"},
		{"unknown level", func(inv *gres.Inventory) { setBoth(inv, 0, 1, gres.Link{PCIe: 9}) }, "unknown PCIe level"},
		{"PIX across NUMA", func(inv *gres.Inventory) { setBoth(inv, 0, 4, gres.Link{PCIe: gres.PCIePIX}) }, "PCIe level PIX but NUMA nodes 0 and 1"},
		{"NODE across sockets", func(inv *gres.Inventory) {
			inv.Devices[0].NUMA, inv.Devices[4].NUMA = -1, -1
			setBoth(inv, 0, 4, gres.Link{PCIe: gres.PCIeNODE})
		}, "sockets 0 and 1"},
		{"SYS within NUMA", func(inv *gres.Inventory) { setBoth(inv, 0, 1, gres.Link{PCIe: gres.PCIeSYS}) }, "SYS but both on NUMA node 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := base()
			require.NoError(t, inv.Validate())
			tt.mutate(&inv)
			err := inv.Validate()
			require.ErrorIs(t, err, gres.ErrInvalidInventory)
			assert.ErrorContains(t, err, tt.msg)
			_, err = gres.NewNodeDevices(inv)
			assert.ErrorIs(t, err, gres.ErrInvalidInventory)
		})
	}
	tooMany := gres.Inventory{Devices: make([]gres.Device, gres.MaxDevices+1)}
	assert.ErrorIs(t, tooMany.Validate(), gres.ErrInvalidInventory)

	// Valid edge cases: no devices, no link matrix, unknown NUMA/socket,
	// gaps in indices.
	for _, inv := range []gres.Inventory{
		{},
		{Devices: []gres.Device{{Index: 0, Name: "gpu", NUMA: -1, Socket: -1}, {Index: 3, Name: "gpu", NUMA: -1, Socket: -1}}},
	} {
		require.NoError(t, inv.Validate())
	}
}

func setBoth(inv *gres.Inventory, i, j int, l gres.Link) {
	inv.Links[i][j], inv.Links[j][i] = l, l
}

func TestInventorySetLinkAndClone(t *testing.T) {
	inv := gres.Inventory{Devices: []gres.Device{{Index: 0, Name: "gpu"}, {Index: 1, Name: "gpu"}}}
	assert.Equal(t, gres.Link{}, inv.Link(0, 1), "no matrix")
	require.NoError(t, inv.SetLink(0, 1, gres.Link{NVLinks: 4, PCIe: gres.PCIePIX}))
	assert.Equal(t, gres.Link{NVLinks: 4, PCIe: gres.PCIePIX}, inv.Link(1, 0))
	assert.Equal(t, gres.Link{}, inv.Link(0, 0))
	assert.Equal(t, gres.Link{}, inv.Link(0, 5))
	assert.ErrorIs(t, inv.SetLink(0, 0, gres.Link{}), gres.ErrInvalidInventory)
	assert.ErrorIs(t, inv.SetLink(0, 2, gres.Link{}), gres.ErrInvalidInventory)
	c := inv.Clone()
	c.Links[0][1].NVLinks = 9
	c.Devices[0].Type = "x"
	assert.Equal(t, 4, inv.Links[0][1].NVLinks)
	assert.Equal(t, "", inv.Devices[0].Type)
	bad := gres.Inventory{Devices: inv.Devices, Links: [][]gres.Link{{}, {}}}
	assert.ErrorIs(t, bad.SetLink(0, 1, gres.Link{}), gres.ErrInvalidInventory)
	assert.Equal(t, "PIX", gres.PCIePIX.String())
	assert.Equal(t, "unknown", gres.PCIeUnknown.String())
	assert.Equal(t, "PCIeLevel(42)", gres.PCIeLevel(42).String())
}

func mixedNode(t testing.TB) *gres.NodeDevices {
	t.Helper()
	inv := gpuserver.PCIeA100Pairs()
	for i := 4; i < 8; i++ {
		inv.Devices[i].Type = "H100" // names and types are case-insensitive
	}
	s, err := gres.NewNodeDevices(inv)
	require.NoError(t, err)
	return s
}

func TestNodeDevicesAllocateRelease(t *testing.T) {
	s := mixedNode(t)
	assert.Equal(t, 8, s.Len())
	assert.Equal(t, 8, s.Free("gpu", ""))
	assert.Equal(t, 4, s.Free("gpu", "a100"))
	assert.Equal(t, 4, s.Free("GPU", "h100"))
	assert.Equal(t, 0, s.Free("gpu", "v100"))
	assert.Equal(t, 0, s.Free("nic", ""))
	assert.Equal(t, "h100", s.Inventory().Devices[4].Type)

	require.NoError(t, s.Allocate([]int{0, 5}))
	assert.True(t, s.InUse(0))
	assert.False(t, s.InUse(1))
	assert.False(t, s.InUse(42))
	assert.Equal(t, 6, s.Free("gpu", ""))
	assert.Equal(t, 3, s.Free("gpu", "a100"))
	assert.Equal(t, []int{0, 5}, s.AppendUsed(nil))
	assert.Equal(t, []int{4, 6, 7}, s.AppendFree(nil, "gpu", "h100"))
	assert.Nil(t, s.AppendFree(nil, "nic", ""))

	before := s.Clone()
	for _, tt := range []struct {
		name    string
		indices []int
		want    error
	}{
		{"double", []int{1, 0}, gres.ErrDeviceInUse},
		{"unknown", []int{1, 8}, gres.ErrUnknownDevice},
		{"negative", []int{-1}, gres.ErrUnknownDevice},
		{"repeated", []int{1, 1}, gres.ErrInvalidRequest},
	} {
		err := s.Allocate(tt.indices)
		assert.ErrorIs(t, err, tt.want, tt.name)
		assert.Equal(t, before.AppendUsed(nil), s.AppendUsed(nil), "%s: state unchanged", tt.name)
	}
	require.NoError(t, s.SetHealthy(2, false))
	assert.ErrorIs(t, s.Allocate([]int{1, 2}), gres.ErrDeviceUnhealthy)
	assert.False(t, s.InUse(1), "nothing allocated on error")

	for _, tt := range []struct {
		name    string
		indices []int
		want    error
	}{
		{"not in use", []int{0, 1}, gres.ErrDeviceNotInUse},
		{"unknown", []int{0, 99}, gres.ErrUnknownDevice},
		{"repeated", []int{0, 0}, gres.ErrInvalidRequest},
	} {
		assert.ErrorIs(t, s.Release(tt.indices), tt.want, tt.name)
		assert.True(t, s.InUse(0), "%s: state unchanged", tt.name)
	}
	require.NoError(t, s.Release([]int{5, 0}))
	assert.Empty(t, s.AppendUsed(nil))
	require.NoError(t, s.Allocate(nil))
	require.NoError(t, s.Release(nil))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_ = s.Allocate([]int{3, 4})
		_ = s.Release([]int{3, 4})
		_ = s.Free("gpu", "h100")
	}), "allocation-free fast paths")
}

func TestNodeDevicesHealth(t *testing.T) {
	s := mixedNode(t)
	require.NoError(t, s.Allocate([]int{6}))
	require.NoError(t, s.SetHealthy(6, false)) // allocated, then fails
	require.NoError(t, s.SetHealthy(1, false))
	assert.ErrorIs(t, s.SetHealthy(12, false), gres.ErrUnknownDevice)
	assert.False(t, s.IsHealthy(1))
	assert.False(t, s.IsHealthy(12))
	total, healthy, free := s.Counts("gpu", "")
	assert.Equal(t, []int{8, 6, 6}, []int{total, healthy, free})
	total, healthy, free = s.Counts("gpu", "h100")
	assert.Equal(t, []int{4, 3, 3}, []int{total, healthy, free})
	total, healthy, free = s.Counts("nic", "")
	assert.Equal(t, []int{0, 0, 0}, []int{total, healthy, free})

	require.NoError(t, s.Release([]int{6}), "a failed device can be released")
	assert.Equal(t, 3, s.Free("gpu", "h100"), "released but unhealthy: not free")
	assert.ErrorIs(t, s.Allocate([]int{6}), gres.ErrDeviceUnhealthy)
	p, err := s.Choose(gres.DeviceRequest{Name: "gpu", Count: 6})
	require.NoError(t, err, "the rest of the node stays usable")
	assert.Equal(t, []int{0, 2, 3, 4, 5, 7}, p.Devices)
	_, err = s.Choose(gres.DeviceRequest{Name: "gpu", Count: 7})
	assert.ErrorIs(t, err, gres.ErrInsufficientDevices)

	require.NoError(t, s.SetHealthy(6, true))
	require.NoError(t, s.Allocate([]int{6}))

	c := s.Clone()
	require.NoError(t, c.Release([]int{6}))
	require.NoError(t, c.SetHealthy(1, true))
	assert.True(t, s.InUse(6), "clone is independent")
	assert.False(t, s.IsHealthy(1), "clone is independent")
}

func TestInventoryTRES(t *testing.T) {
	inv := gpuserver.PCIeA100Pairs()
	for i := 4; i < 8; i++ {
		inv.Devices[i].Type = ""
	}
	r, err := gres.NewRegistry()
	require.NoError(t, err)
	_, err = inv.TRES(r)
	require.ErrorIs(t, err, gres.ErrUnknownTRES)
	require.NoError(t, r.RegisterInventory(&inv))
	v, err := inv.TRES(r)
	require.NoError(t, err)
	assert.Equal(t, "gres/gpu=8,gres/gpu:a100=4", r.FormatTRES(v))

	// A request fits the node's capacity exactly when RequestVector says so.
	reqs, err := gres.ParseGRES("gpu:a100:4,gpu:2")
	require.NoError(t, err)
	want, err := r.RequestVector(reqs)
	require.NoError(t, err)
	assert.True(t, want.Fits(v))
	reqs, err = gres.ParseGRES("gpu:a100:5")
	require.NoError(t, err)
	want, err = r.RequestVector(reqs)
	require.NoError(t, err)
	assert.False(t, want.Fits(v))

	bad := gres.Inventory{Devices: []gres.Device{{Index: 0, Name: "gpu", Type: "a b"}}}
	assert.ErrorIs(t, r.RegisterInventory(&bad), gres.ErrInvalidTRES)
}
