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
