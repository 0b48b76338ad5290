package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
)

// TestSnapshotInventoryKeepsFabric checks that a link's fabric (XGMI, Xe
// Link) survives the snapshot's inventory encoding next to its lanes and
// PCIe level.
func TestSnapshotInventoryKeepsFabric(t *testing.T) {
	inv := gres.Inventory{Devices: []gres.Device{
		{Index: 0, Name: "gpu", Type: "mi300x", NUMA: 0, Socket: 0},
		{Index: 1, Name: "gpu", Type: "mi300x", NUMA: 0, Socket: 0},
		{Index: 2, Name: "gpu", Type: "mi300x", NUMA: 1, Socket: 1},
	}}
	require.NoError(t, inv.SetLink(0, 1, gres.Link{NVLinks: 1, Fabric: gres.FabricXGMI, PCIe: gres.PCIeNODE}))
	require.NoError(t, inv.SetLink(0, 2, gres.Link{NVLinks: 2, Fabric: gres.FabricXeLink, PCIe: gres.PCIeSYS}))
	require.NoError(t, inv.Validate())
	var e senc
	e.inventory(&inv)
	d := sdec{b: e.b}
	got := d.inventory()
	require.NoError(t, d.err)
	require.True(t, sameInventory(&inv, &got), "got %+v", got.Links)
}

// TestSnapshotInventorySharing checks the minor-2 extension: device
// shares, MIG instances and the NVLink fabric survive the inventory
// encoding, a back-reference copies them, and an inventory without them
// is written as before (tag 1), so snapshots stay readable both ways.
func TestSnapshotInventorySharing(t *testing.T) {
	plain := gres.Inventory{Devices: []gres.Device{
		{Index: 0, Name: "gpu", Type: "h100", NUMA: -1, Socket: -1},
		{Index: 8, Name: "gpu", Type: "h100_1g.10gb", UUID: "MIG-x", NUMA: -1, Socket: -1},
	}}
	var e senc
	e.inventory(&plain)
	require.Equal(t, byte(1), e.b[0], "an inventory without the extension keeps tag 1")
	inv := plain.Clone()
	inv.Shares = []gres.DeviceShares{{Device: 0, Shards: 4, MPS: 100}}
	inv.MIG = []gres.MIGInstance{{Device: 8, Parent: 1, ParentUUID: "GPU-1", Profile: "1g.10gb", GPUInstance: 9, ComputeInstance: 0}}
	inv.Fabric = gres.NVLinkFabric{ClusterUUID: "abcd0000-0000-0000-0000-000000000001", CliqueID: 3}
	require.NoError(t, inv.Validate())
	e = senc{}
	e.inventory(&inv)
	e.inventory(&inv) // back-reference
	e.inventory(&plain)
	d := sdec{b: e.b}
	for _, want := range []gres.Inventory{inv, inv, plain} {
		got := d.inventory()
		require.NoError(t, d.err)
		require.Equal(t, want, got)
	}
	require.False(t, sameInventory(&inv, &plain))
}
