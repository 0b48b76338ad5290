package gres_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
)

// sharedNode is four GPUs; 0 and 1 offer 4 shards each and 100 MPS.
func sharedNode(t testing.TB) *gres.NodeDevices {
	t.Helper()
	inv := gres.Inventory{}
	for i := range 4 {
		inv.Devices = append(inv.Devices, gres.Device{Index: i, Name: "gpu", Type: "h100", NUMA: -1, Socket: -1})
	}
	inv.Shares = []gres.DeviceShares{{Device: 0, Shards: 4, MPS: 100}, {Device: 1, Shards: 4, MPS: 100}}
	s, err := gres.NewNodeDevices(inv)
	require.NoError(t, err)
	return s
}

// TestSharesOneDevicePerJob: by default (Slurm without
// MULTIPLE_SHARING_GRES_PJ) all of a job's shards come from one GPU, and
// a request larger than any one GPU's free shards fails even when the
// node has enough in all.
func TestSharesOneDevicePerJob(t *testing.T) {
	s := sharedNode(t)
	g, err := s.ChooseShares(gres.ShareRequest{Name: "shard", Count: 3})
	require.NoError(t, err)
	assert.Equal(t, []gres.ShareGrant{{Device: 0, Name: "shard", Count: 3}}, g)
	require.NoError(t, s.AllocateShares(g))
	// The next shard request packs onto the device already shared.
	g2, err := s.ChooseShares(gres.ShareRequest{Name: "shard", Count: 1})
	require.NoError(t, err)
	assert.Equal(t, 0, g2[0].Device)
	// 1 free on GPU 0 and 4 on GPU 1: five in all, but no single GPU has 5.
	total, free := s.ShareCounts("shard")
	assert.Equal(t, 8, total)
	assert.Equal(t, 5, free)
	_, err = s.ChooseShares(gres.ShareRequest{Name: "shard", Count: 5})
	assert.ErrorIs(t, err, gres.ErrInsufficientDevices)
	// With Spread (MULTIPLE_SHARING_GRES_PJ) they come from both.
	g3, err := s.ChooseShares(gres.ShareRequest{Name: "shard", Count: 5, Spread: true})
	require.NoError(t, err)
	assert.Equal(t, []gres.ShareGrant{{Device: 0, Name: "shard", Count: 1}, {Device: 1, Name: "shard", Count: 4}}, g3)
}

// TestSharesExcludeWholeUse: as in Slurm, a GPU with shards (or MPS) in
// use is not allocated whole as gres/gpu, and a GPU allocated whole gives
// no shards.
func TestSharesExcludeWholeUse(t *testing.T) {
	s := sharedNode(t)
	require.NoError(t, s.AllocateShares([]gres.ShareGrant{{Device: 0, Name: "mps", Count: 50}}))
	assert.True(t, s.InUse(0))
	assert.Equal(t, 3, s.Free("gpu", ""))
	assert.ErrorIs(t, s.Allocate([]int{0}), gres.ErrDeviceInUse)
	pl, err := s.Choose(gres.DeviceRequest{Name: "gpu", Count: 3})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3}, pl.Devices)
	require.NoError(t, s.Allocate([]int{1}))
	err = s.AllocateShares([]gres.ShareGrant{{Device: 1, Name: "shard", Count: 1}})
	assert.ErrorIs(t, err, gres.ErrDeviceInUse)
	_, err = s.ChooseShares(gres.ShareRequest{Name: "shard", Count: 1})
	require.NoError(t, err) // GPU 0 still has shards: shards and MPS may share a GPU's sharing
	// mps:50 more fits GPU 0 (100 in all); mps:51 does not.
	_, err = s.ChooseShares(gres.ShareRequest{Name: "mps", Count: 51})
	assert.ErrorIs(t, err, gres.ErrInsufficientDevices)
	require.NoError(t, s.ReleaseShares([]gres.ShareGrant{{Device: 0, Name: "mps", Count: 50}}))
	assert.False(t, s.InUse(0))
	assert.NoError(t, s.Allocate([]int{0}))
}

// TestSharesFailedCallsChangeNothing checks the error paths.
func TestSharesFailedCallsChangeNothing(t *testing.T) {
	s := sharedNode(t)
	for _, gs := range [][]gres.ShareGrant{
		{{Device: 9, Name: "shard", Count: 1}},
		{{Device: 2, Name: "shard", Count: 1}}, // offers none
		{{Device: 0, Name: "shard", Count: 3}, {Device: 0, Name: "shard", Count: 2}},
		{{Device: 0, Name: "gpu", Count: 1}},
		// Counts so large their sum would overflow are refused one by one.
		{{Device: 0, Name: "shard", Count: 1 << 62}, {Device: 0, Name: "shard", Count: 1 << 62}},
	} {
		assert.Error(t, s.AllocateShares(gs), "%v", gs)
	}
	_, free := s.ShareCounts("shard")
	assert.Equal(t, 8, free)
	assert.ErrorIs(t, s.ReleaseShares([]gres.ShareGrant{{Device: 0, Name: "shard", Count: 1}}), gres.ErrDeviceNotInUse)
	require.NoError(t, s.SetHealthy(1, false))
	_, free = s.ShareCounts("shard")
	assert.Equal(t, 4, free)
	_, err := s.ChooseShares(gres.ShareRequest{Name: "shard", Count: 0})
	assert.ErrorIs(t, err, gres.ErrInvalidRequest)
	c := s.Clone()
	require.NoError(t, c.AllocateShares([]gres.ShareGrant{{Device: 0, Name: "shard", Count: 1}}))
	assert.Equal(t, 0, s.SharesInUse(0, "shard"), "a clone's shares are its own")
}

// TestParseSharesConf reads gres.conf sharing lines as Slurm documents
// them: Count spread evenly over the files.
func TestParseSharesConf(t *testing.T) {
	got, err := gres.ParseSharesConf("Name=shard Count=32 File=/dev/nvidia[0-3]")
	require.NoError(t, err)
	assert.Equal(t, []gres.DeviceShares{{Device: 0, Shards: 8}, {Device: 1, Shards: 8}, {Device: 2, Shards: 8}, {Device: 3, Shards: 8}}, got)
	got, err = gres.ParseSharesConf("NodeName=tux0 name=mps count=200 file=/dev/nvidia0,/dev/nvidia2 # two GPUs")
	require.NoError(t, err)
	assert.Equal(t, []gres.DeviceShares{{Device: 0, MPS: 100}, {Device: 2, MPS: 100}}, got)
	for _, bad := range []string{
		"Name=gpu Count=4 File=/dev/nvidia0",
		"Name=shard Count=3 File=/dev/nvidia[0-1]",
		"Name=shard Count=4",
		"Name=shard Count=x File=/dev/nvidia0",
		"Name=shard Count=4 File=/dev/nvidia[1-0]",
		"Name=shard Count=4 File=/dev/nvidia",
		"Name=shard Count=4 File=/dev/nvidia0,/dev/nvidia0",
		"Name=shard Count=4 Cores=0-3 File=/dev/nvidia0",
	} {
		_, err := gres.ParseSharesConf(bad)
		assert.ErrorIs(t, err, gres.ErrInvalidGRES, bad)
	}
}

// TestInventorySharingValidateAndJSON checks validation of the new
// inventory parts and their JSON round trip.
func TestInventorySharingValidateAndJSON(t *testing.T) {
	inv := gres.Inventory{Devices: []gres.Device{
		{Index: 0, Name: "gpu", Type: "h100", NUMA: -1, Socket: -1},
		{Index: 8, Name: "gpu", Type: "h100_1g.10gb", UUID: "MIG-1", NUMA: -1, Socket: -1},
	}}
	inv.Shares = []gres.DeviceShares{{Device: 0, Shards: 4}}
	inv.MIG = []gres.MIGInstance{{Device: 8, Parent: 1, ParentUUID: "GPU-1", Profile: "1g.10gb", GPUInstance: 9, ComputeInstance: 0}}
	inv.Fabric = gres.NVLinkFabric{ClusterUUID: "6b1f3a1e-0000-4000-8000-000000000001", CliqueID: 3}
	require.NoError(t, inv.Validate())
	b, err := json.Marshal(inv)
	require.NoError(t, err)
	var back gres.Inventory
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, inv, back)
	assert.Equal(t, inv, inv.Clone())
	for _, mut := range []func(*gres.Inventory){
		func(v *gres.Inventory) { v.Shares = []gres.DeviceShares{{Device: 3, Shards: 1}} },
		func(v *gres.Inventory) { v.Shares = []gres.DeviceShares{{Device: 0}} },
		func(v *gres.Inventory) { v.Shares = []gres.DeviceShares{{Device: 0, Shards: -1}} },
		func(v *gres.Inventory) { v.MIG[0].Profile = "" },
		func(v *gres.Inventory) { v.MIG[0].Device = 5 },
		func(v *gres.Inventory) { v.Fabric.ClusterUUID = "" },
	} {
		c := inv.Clone()
		mut(&c)
		assert.ErrorIs(t, c.Validate(), gres.ErrInvalidInventory)
	}
}

func FuzzParseSharesConf(f *testing.F) {
	for _, s := range []string{"Name=shard Count=32 File=/dev/nvidia[0-3]", "Name=mps Count=100 File=/dev/nvidia0", "name=shard count=2 file=/dev/nvidia[0,2]", "Name=shard Count=1 File=a[1-", "#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ds, err := gres.ParseSharesConf(s)
		if err != nil {
			if !errors.Is(err, gres.ErrInvalidGRES) {
				t.Fatalf("%q: error %v does not wrap ErrInvalidGRES", s, err)
			}
			return
		}
		if len(ds) == 0 {
			t.Fatalf("%q: no shares and no error", s)
		}
		seen := map[int]bool{}
		for _, d := range ds {
			if seen[d.Device] || (d.Shards == 0) == (d.MPS == 0) || d.Device < 0 || d.Device > gres.MaxDeviceIndex {
				t.Fatalf("%q: bad result %+v", s, ds)
			}
			seen[d.Device] = true
		}
	})
}

// ExampleNodeDevices_ChooseShares shares one GPU between two jobs with
// gres/shard and keeps it from being allocated whole meanwhile.
func ExampleNodeDevices_ChooseShares() {
	shares, _ := gres.ParseSharesConf("Name=shard Count=8 File=/dev/nvidia[0-1]")
	inv := gres.Inventory{Devices: []gres.Device{
		{Index: 0, Name: "gpu", NUMA: -1, Socket: -1}, {Index: 1, Name: "gpu", NUMA: -1, Socket: -1},
	}, Shares: shares}
	devs, _ := gres.NewNodeDevices(inv)
	for range 2 {
		g, _ := devs.ChooseShares(gres.ShareRequest{Name: gres.ShardName, Count: 2})
		_ = devs.AllocateShares(g)
		fmt.Println(g)
	}
	fmt.Println("whole GPUs free:", devs.Free("gpu", ""))
	// Output:
	// [shard:2@0]
	// [shard:2@0]
	// whole GPUs free: 1
}

// TestChooseLeavesSharableDevices: a whole-GPU request takes GPUs that
// offer no shares while they suffice, so the shareable ones stay
// available to shard and MPS jobs; when they do not suffice every free
// GPU is eligible, ranked as usual.
func TestChooseLeavesSharableDevices(t *testing.T) {
	s := sharedNode(t) // GPUs 0 and 1 offer shares
	pl, err := s.Choose(gres.DeviceRequest{Name: "gpu", Count: 2})
	require.NoError(t, err)
	assert.Equal(t, []int{2, 3}, pl.Devices)
	pl, err = s.Choose(gres.DeviceRequest{Name: "gpu", Count: 3})
	require.NoError(t, err)
	assert.Len(t, pl.Devices, 3, "too few unshareable GPUs: shareable ones are eligible")
}
