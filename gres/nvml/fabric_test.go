//go:build cgo

package nvml

import (
	"context"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxb200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/gres/nvml/nvmltest"
)

var testCluster = [16]uint8{0x6b, 0x1f, 0x3a, 0x1e, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0x01}

const testClusterUUID = "6b1f3a1e-0000-4000-8000-000000000001"

// TestDiscoverFabricStockMocks runs discovery on go-nvml's own H100, H200
// and B200 servers, supplying by hand what the stock mocks lack, with
// every GPU registered in clique 7 of one fabric cluster: the node's
// NVLink domain comes from the hardware.
func TestDiscoverFabricStockMocks(t *testing.T) {
	for name, c := range map[string]struct {
		srv *server.Server
		typ string
	}{"dgxh100": {dgxh100.New(), "h100"}, "dgxh200": {dgxh200.New(), "h200"}, "dgxb200": {dgxb200.New(), "b200"}} {
		t.Run(name, func(t *testing.T) {
			for i := range c.srv.Devices {
				dv := fillStockMock(c.srv, i)
				dv.GetGpuFabricInfoFunc = func() (gonvml.GpuFabricInfo, gonvml.Return) {
					return gonvml.GpuFabricInfo{ClusterUuid: testCluster, CliqueId: 7, State: gonvml.GPU_FABRIC_STATE_COMPLETED}, gonvml.SUCCESS
				}
			}
			d, err := New(c.srv, Options{SysfsRoot: t.TempDir(), ProcRoot: t.TempDir()})
			require.NoError(t, err)
			require.NoError(t, d.Init())
			defer d.Shutdown()
			disc, err := d.Discover(context.Background())
			require.NoError(t, err)
			require.Len(t, disc.Inventory.Devices, 8)
			assert.Equal(t, c.typ, disc.Inventory.Devices[0].Type)
			assert.Equal(t, gres.NVLinkFabric{ClusterUUID: testClusterUUID, CliqueID: 7}, disc.Inventory.Fabric)
		})
	}
}

// fillStockMock supplies what discovery calls and go-nvml's stock DGX
// servers lack, for GPU i, as a third party would: NUMA node i/4, CPU
// affinity and NVLink unsupported, SYS between GPUs, MIG off, no
// multi-node fabric. It returns the device to adjust further.
func fillStockMock(srv *server.Server, i int) *server.Device {
	dv := srv.Devices[i].(*server.Device)
	dv.GetNumaNodeIdFunc = func() (int, gonvml.Return) { return i / 4, gonvml.SUCCESS }
	dv.GetCpuAffinityFunc = func(int) ([]uint, gonvml.Return) { return nil, gonvml.ERROR_NOT_SUPPORTED }
	dv.GetNvLinkStateFunc = func(int) (gonvml.EnableState, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
	dv.GetTopologyCommonAncestorFunc = func(gonvml.Device) (gonvml.GpuTopologyLevel, gonvml.Return) {
		return gonvml.TOPOLOGY_SYSTEM, gonvml.SUCCESS
	}
	dv.GetMigModeFunc = func() (int, int, gonvml.Return) { return 0, 0, gonvml.SUCCESS }
	dv.GetGpuFabricInfoFunc = func() (gonvml.GpuFabricInfo, gonvml.Return) {
		return gonvml.GpuFabricInfo{}, gonvml.ERROR_NOT_SUPPORTED
	}
	return dv
}

// TestDiscoverFabricStates: a GPU not yet registered, registered with an
// error, or in another clique leaves the node outside every domain (with
// a warning); GPUs without a multi-node fabric put it in none, silently.
func TestDiscoverFabricStates(t *testing.T) {
	ok := gonvml.GpuFabricInfo{ClusterUuid: testCluster, CliqueId: 1, State: gonvml.GPU_FABRIC_STATE_COMPLETED}
	cases := []struct {
		name  string
		gpu1  *gonvml.GpuFabricInfo // nil: same as the others
		want  gres.NVLinkFabric
		warns string
	}{
		{"all registered", nil, gres.NVLinkFabric{ClusterUUID: testClusterUUID, CliqueID: 1}, ""},
		{"in progress", &gonvml.GpuFabricInfo{ClusterUuid: testCluster, CliqueId: 1, State: gonvml.GPU_FABRIC_STATE_IN_PROGRESS}, gres.NVLinkFabric{}, "registration in progress"},
		{"failed", &gonvml.GpuFabricInfo{ClusterUuid: testCluster, CliqueId: 1, State: gonvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(gonvml.ERROR_UNKNOWN)}, gres.NVLinkFabric{}, "registration failed"},
		{"other clique", &gonvml.GpuFabricInfo{ClusterUuid: testCluster, CliqueId: 2, State: gonvml.GPU_FABRIC_STATE_COMPLETED}, gres.NVLinkFabric{}, "another GPU in"},
		{"no cluster", &gonvml.GpuFabricInfo{State: gonvml.GPU_FABRIC_STATE_COMPLETED}, gres.NVLinkFabric{ClusterUUID: testClusterUUID, CliqueID: 1}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := nvmltest.GB200()
			for i := range srv.GPUs {
				srv.SetFabric(i, ok)
			}
			if c.gpu1 != nil {
				srv.SetFabric(1, *c.gpu1)
			}
			d := newDriver(t, srv, Options{})
			disc, err := d.Discover(context.Background())
			require.NoError(t, err)
			assert.Equal(t, c.want, disc.Inventory.Fabric)
			if c.warns == "" {
				assert.Empty(t, disc.Warnings)
			} else {
				assert.True(t, hasWarning(disc.Warnings, c.warns), "%v", disc.Warnings)
			}
		})
	}
	// No fabric (NOT_SUPPORTED, as a DGX H100 without multi-node NVLink
	// answers) and a driver without the call: no domain, no warning.
	for _, remove := range []bool{false, true} {
		srv := nvmltest.DGXH100()
		if remove {
			srv.RemoveSymbol("nvmlDeviceGetGpuFabricInfo")
		}
		d := newDriver(t, srv, Options{})
		disc, err := d.Discover(context.Background())
		require.NoError(t, err)
		assert.True(t, disc.Inventory.Fabric.IsZero())
		assert.Empty(t, disc.Warnings)
	}
}

// TestDiscoverMIGInstances checks that MIG instances on H100, H200 and
// B200 come with their parent GPU and profile (gres.MIGInstance), typed
// "<gpu>_<profile>" as Slurm's AutoDetect=nvml names them.
func TestDiscoverMIGInstances(t *testing.T) {
	for _, model := range []gpus.Config{gpus.H100_SXM5_80GB, gpus.H200_SXM5_141GB, gpus.B200_SXM5_180GB} {
		t.Run(model.Name, func(t *testing.T) {
			srv, err := nvmltest.New(gpuserver.DGXH100(), model)
			require.NoError(t, err)
			migs, err := srv.EnableMIG(3, gonvml.GPU_INSTANCE_PROFILE_1_SLICE, gonvml.GPU_INSTANCE_PROFILE_3_SLICE)
			require.NoError(t, err)
			d := newDriver(t, srv, Options{DevRoot: "/dev"})
			disc, err := d.Discover(context.Background())
			require.NoError(t, err)
			inv := disc.Inventory
			require.Len(t, inv.Devices, 9) // 7 whole GPUs, 2 instances of GPU 3
			require.Len(t, inv.MIG, 2)
			gpuType := inv.Devices[0].Type
			for k, m := range inv.MIG {
				dev := inv.Devices[7+k]
				assert.Equal(t, dev.Index, m.Device)
				assert.Equal(t, 3, m.Parent)
				assert.Equal(t, srv.GPUs[3].UUID, m.ParentUUID)
				assert.Equal(t, migs[k].UUID, dev.UUID)
				assert.Equal(t, gpuType+"_"+m.Profile, dev.Type)
				assert.Len(t, disc.Files[7+k], 3, "parent file and two capability files")
			}
			assert.True(t, strings.HasPrefix(inv.MIG[0].Profile, "1g."), inv.MIG[0].Profile)
			assert.True(t, strings.HasPrefix(inv.MIG[1].Profile, "3g."), inv.MIG[1].Profile)
			require.NoError(t, inv.Validate())
		})
	}
}
