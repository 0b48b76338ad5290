//go:build cgo

package nvml

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/gres/nvml/nvmltest"
)

// newDriver writes the server's sysfs and procfs into temp dirs and
// returns an initialised driver over it.
func newDriver(t *testing.T, srv *nvmltest.Server, opts Options) *Driver {
	t.Helper()
	if opts.SysfsRoot == "" {
		opts.SysfsRoot = t.TempDir()
		require.NoError(t, srv.WriteSysfs(opts.SysfsRoot))
	}
	if opts.ProcRoot == "" {
		opts.ProcRoot = t.TempDir()
		require.NoError(t, srv.WriteProcfs(opts.ProcRoot))
	}
	d, err := New(srv, opts)
	require.NoError(t, err)
	require.NoError(t, d.Init())
	t.Cleanup(func() { _ = d.Shutdown() })
	return d
}

var (
	l40s = gpus.Config{Name: "NVIDIA L40S", MemoryMB: 49152, PciDeviceId: 0x26B910DE}
)

// TestDiscoverRoundTrip builds mocks from the gpuserver fixtures and checks
// that discovery reproduces each inventory exactly: identities, memory,
// bus ids, NUMA, sockets, cores and the whole link matrix (NVSwitch
// fabrics, NVLink bridges, islands, PCIe levels).
func TestDiscoverRoundTrip(t *testing.T) {
	cases := []struct {
		name  string
		inv   gres.Inventory
		model gpus.Config
	}{
		{"DGXH100", gpuserver.DGXH100(), gpus.H100_SXM5_80GB},
		{"DGXA100", gpuserver.DGXA100(), gpus.A100_SXM4_40GB},
		{"PCIeA100Pairs", gpuserver.PCIeA100Pairs(), gpus.A100_PCIE_80GB},
		{"PCIeTwoNUMA", gpuserver.PCIeTwoNUMA(), l40s},
		{"TwoQuads", gpuserver.TwoQuads(), gpus.A100_SXM4_80GB},
		{"GB200Node", gpuserver.GB200Node(), nvmltest.GB200Model()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, err := nvmltest.New(c.inv, c.model)
			require.NoError(t, err)
			d := newDriver(t, srv, Options{})
			disc, err := d.Discover(context.Background())
			require.NoError(t, err)
			assert.Empty(t, disc.Warnings)
			assert.Equal(t, c.inv, disc.Inventory)
			require.NoError(t, disc.Validate())
		})
	}
}

// TestDiscoverRandomRoundTrip is the same property over seeded random
// inventories (mixed layouts, switch trees, unknown affinity).
func TestDiscoverRandomRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 1))
	checked := 0
	for iter := range 24 {
		inv := gpuserver.Random(rng, 1+rng.IntN(16), false)
		srv, err := nvmltest.New(inv, gpus.A100_SXM4_80GB)
		if errors.Is(err, nvmltest.ErrNotRepresentable) {
			continue // e.g. more than 36 NVLinks on one GPU
		}
		require.NoError(t, err, "iteration %d", iter)
		checked++
		d := newDriver(t, srv, Options{})
		disc, err := d.Discover(context.Background())
		require.NoError(t, err, "iteration %d", iter)
		want := inv.Clone()
		// Unknown affinity falls back to the NUMA node's CPUs (sysfs).
		for i := range want.Devices {
			if !want.Devices[i].Cores.IsEmpty() {
				continue
			}
			var node gres.CoreSet
			for _, o := range inv.Devices {
				if o.NUMA == want.Devices[i].NUMA {
					node = node.Union(o.Cores)
				}
			}
			want.Devices[i].Cores = node
			if node.IsEmpty() {
				want.Devices[i].Socket = -1
			}
		}
		require.Equal(t, want, disc.Inventory, "iteration %d", iter)
	}
	assert.Greater(t, checked, 12)
}

func TestDiscoverDGXH100Details(t *testing.T) {
	srv := nvmltest.DGXH100()
	d := newDriver(t, srv, Options{DevRoot: "/dev"})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	require.Len(t, disc.Inventory.Devices, 8)
	assert.Equal(t, "nvml driver 550.54.15 CUDA 12.4", disc.Driver)
	for i, dev := range disc.Inventory.Devices {
		assert.Equal(t, "gpu", dev.Name)
		assert.Equal(t, "h100", dev.Type)
		assert.Equal(t, srv.GPUs[i].UUID, dev.UUID)
		assert.Equal(t, []gres.DeviceFile{{Path: "/dev/nvidia" + string(rune('0'+i)), Kind: gres.CharDevice, Major: 195, Minor: int64(i)}}, disc.Files[i])
		for j := range disc.Inventory.Devices {
			if i != j {
				l := disc.Inventory.Link(i, j)
				assert.Equal(t, 18, l.NVLinks)
				assert.True(t, l.NVSwitch)
			}
		}
	}
	assert.Equal(t, []gres.DeviceFile{
		{Path: "/dev/nvidiactl", Kind: gres.CharDevice, Major: 195, Minor: 255},
		{Path: "/dev/nvidia-uvm", Kind: gres.CharDevice, Major: nvmltest.UVMMajor, Minor: 0},
		{Path: "/dev/nvidia-uvm-tools", Kind: gres.CharDevice, Major: nvmltest.UVMMajor, Minor: 1},
	}, disc.CommonFiles)
	files, err := disc.FilesFor([]int{5, 2})
	require.NoError(t, err)
	assert.Len(t, files, 5) // nvidia2, nvidia5, nvidiactl, uvm, uvm-tools
	assert.Equal(t, "/dev/nvidia2", files[0].Path)

	// The returned value is a copy: changing it does not change the next.
	disc.Inventory.Devices[0].Type = "changed"
	again, err := d.Discover(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "h100", again.Inventory.Devices[0].Type)
}

// TestDiscoverStockDGXMock runs discovery on go-nvml's own dgxa100 server
// with only the funcs the stock mock lacks supplied by hand (no
// nvmltest), as a third party would.
func TestDiscoverStockDGXMock(t *testing.T) {
	srv := dgxa100.New()
	for i := range srv.Devices {
		d := fillStockMock(srv, i)
		d.GetCpuAffinityFunc = func(int) ([]uint, gonvml.Return) { return []uint{0xff << (8 * uint(i/4))}, gonvml.SUCCESS }
	}
	d, err := New(srv, Options{SysfsRoot: t.TempDir(), ProcRoot: t.TempDir()})
	require.NoError(t, err)
	require.NoError(t, d.Init())
	defer d.Shutdown()
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	require.Len(t, disc.Inventory.Devices, 8)
	for i, dev := range disc.Inventory.Devices {
		assert.Equal(t, "a100", dev.Type)
		assert.Equal(t, i/4, dev.NUMA)
		assert.Equal(t, 8, dev.Cores.Count())
		assert.Equal(t, -1, dev.Socket) // no sysfs
		assert.Empty(t, dev.PCIBusID)   // the stock mock's PciInfo has no bus id
	}
	// SYS inside one NUMA node contradicts the NUMA nodes: corrected.
	assert.Equal(t, gres.PCIeNODE, disc.Inventory.Link(0, 1).PCIe)
	assert.Equal(t, gres.PCIeSYS, disc.Inventory.Link(0, 4).PCIe)
	assert.NotEmpty(t, disc.Warnings)
}

func TestDiscoverMIG(t *testing.T) {
	srv := nvmltest.DGXA100()
	slices, err := srv.EnableMIG(0, gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.GPU_INSTANCE_PROFILE_1_SLICE)
	require.NoError(t, err)
	d := newDriver(t, srv, Options{DevRoot: "/dev"})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	inv := disc.Inventory
	require.Len(t, inv.Devices, 9) // GPUs 1-7 and two slices of GPU 0
	assert.Equal(t, 1, inv.Devices[0].Index)
	s3, s1 := inv.Devices[7], inv.Devices[8]
	assert.Equal(t, 8, s3.Index)
	assert.Equal(t, "a100_3g.20gb", s3.Type)
	assert.Equal(t, slices[0].UUID, s3.UUID)
	assert.Equal(t, int64(19968), s3.MemoryMiB)
	assert.Equal(t, 9, s1.Index)
	assert.Equal(t, "a100_1g.5gb", s1.Type)
	assert.Equal(t, 0, s3.NUMA)
	assert.Equal(t, gres.Link{PCIe: gres.PCIeBoard}, inv.Link(7, 8))
	assert.Equal(t, gres.Link{PCIe: gres.PCIePXB}, inv.Link(7, 0))                              // GPU 0's pair partner, no NVLink
	assert.Equal(t, gres.Link{NVLinks: 12, NVSwitch: true, PCIe: gres.PCIePXB}, inv.Link(1, 2)) // GPUs 2 and 3
	assert.Equal(t, []gres.DeviceFile{
		{Path: "/dev/nvidia0", Kind: gres.CharDevice, Major: 195, Minor: 0},
		{Path: "/dev/nvidia-caps/nvidia-cap13", Kind: gres.CharDevice, Major: nvmltest.CapsMajor, Minor: slices[0].GIMinor},
		{Path: "/dev/nvidia-caps/nvidia-cap14", Kind: gres.CharDevice, Major: nvmltest.CapsMajor, Minor: slices[0].CIMinor},
	}, disc.Files[7])
	ns, err := gres.NewNodeDevices(inv)
	require.NoError(t, err)
	assert.Equal(t, 1, ns.Free("gpu", "a100_3g.20gb"))
	assert.Equal(t, 9, ns.Free("gpu", ""))
}

func TestDiscoverMIGWithoutCapabilityFiles(t *testing.T) {
	srv := nvmltest.DGXA100()
	_, err := srv.EnableMIG(2, gonvml.GPU_INSTANCE_PROFILE_7_SLICE)
	require.NoError(t, err)
	d := newDriver(t, srv, Options{ProcRoot: t.TempDir()}) // empty procfs
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	last := len(disc.Inventory.Devices) - 1
	assert.Equal(t, "a100_7g.40gb", disc.Inventory.Devices[last].Type)
	assert.Len(t, disc.Files[last], 1) // only the parent /dev/nvidia2
	assert.Len(t, disc.CommonFiles, 1) // nvidiactl; uvm major unknown
	assert.True(t, hasWarning(disc.Warnings, "nvidia-caps major unknown"), disc.Warnings)
}

func hasWarning(ws []string, sub string) bool {
	for _, w := range ws {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

func TestDiscoverFabricManagerDown(t *testing.T) {
	srv := nvmltest.DGXH100()
	srv.SetNVLinkP2P(false)
	d := newDriver(t, srv, Options{})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	for i := range 8 {
		for j := range 8 {
			assert.Zero(t, disc.Inventory.Link(i, j).NVLinks)
		}
	}
	assert.True(t, hasWarning(disc.Warnings, "fabric manager"), disc.Warnings)
}

// TestDiscoverOldDriver removes the newer NVML entry points: the driver
// must not call them (the mock panics if it does) and falls back to
// sysfs for NUMA nodes and to bus-id matching for direct NVLinks.
func TestDiscoverOldDriver(t *testing.T) {
	for _, c := range []struct {
		name string
		srv  *nvmltest.Server
	}{{"PCIeA100Pairs", nvmltest.PCIeA100Pairs()}, {"DGXH100", nvmltest.DGXH100()}} {
		t.Run(c.name, func(t *testing.T) {
			srv := c.srv
			for _, s := range []string{"nvmlDeviceGetNumaNodeId", "nvmlDeviceGetNvLinkRemoteDeviceType",
				"nvmlDeviceGetRemappedRows", "nvmlDeviceGetP2PStatus", "nvmlDeviceGetMigMode"} {
				srv.RemoveSymbol(s)
			}
			d := newDriver(t, srv, Options{})
			disc, err := d.Discover(context.Background())
			require.NoError(t, err)
			want := srv.Inventory.Clone()
			if c.name == "DGXH100" {
				// Without the far end's device type, NVSwitch lanes are
				// unknown and ignored (with a warning).
				for i := range want.Devices {
					for j := range want.Devices {
						if i != j {
							l := want.Link(i, j)
							l.NVLinks, l.NVSwitch = 0, false
							want.Links[i][j] = l
						}
					}
				}
				assert.True(t, hasWarning(disc.Warnings, "unknown far end"), disc.Warnings)
			}
			assert.Equal(t, want, disc.Inventory)
			evs, err := d.PollHealth(context.Background(), 0)
			require.NoError(t, err)
			assert.Empty(t, evs)
		})
	}
}

// TestDiscoverSysfsFallback: NVML gives neither NUMA node nor affinity;
// sysfs does.
func TestDiscoverSysfsFallback(t *testing.T) {
	srv := nvmltest.DGXH100()
	for _, g := range srv.GPUs {
		g.GetNumaNodeIdFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
		g.GetCpuAffinityFunc = func(int) ([]uint, gonvml.Return) { return nil, gonvml.ERROR_NOT_SUPPORTED }
	}
	d := newDriver(t, srv, Options{})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	assert.Equal(t, srv.Inventory, disc.Inventory)

	// Without sysfs either, NUMA, cores and sockets are unknown.
	d2 := newDriver(t, srv, Options{SysfsRoot: t.TempDir()})
	disc2, err := d2.Discover(context.Background())
	require.NoError(t, err)
	for _, dev := range disc2.Inventory.Devices {
		assert.Equal(t, -1, dev.NUMA)
		assert.Equal(t, -1, dev.Socket)
		assert.True(t, dev.Cores.IsEmpty())
	}
	assert.True(t, hasWarning(disc2.Warnings, "NUMA node unknown"))
}

func TestDiscoverSkipsBrokenGPU(t *testing.T) {
	srv := nvmltest.DGXH100()
	srv.GPUs[3].GetUUIDFunc = func() (string, gonvml.Return) { return "", gonvml.ERROR_UNKNOWN }
	d := newDriver(t, srv, Options{})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	require.Len(t, disc.Inventory.Devices, 7)
	assert.Equal(t, []int{0, 1, 2, 4, 5, 6, 7}, indices(disc.Inventory))
	assert.True(t, hasWarning(disc.Warnings, "gpu 3: skipped"))
}

func indices(inv gres.Inventory) []int {
	var out []int
	for _, d := range inv.Devices {
		out = append(out, d.Index)
	}
	return out
}

func TestDiscoverOptions(t *testing.T) {
	srv := nvmltest.DGXH100()
	d := newDriver(t, srv, Options{Name: "accel", TypeOf: func(n string) string { return "hopper" }})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "accel", disc.Inventory.Devices[0].Name)
	assert.Equal(t, "hopper", disc.Inventory.Devices[0].Type)

	d = newDriver(t, srv, Options{TypeOf: func(string) string { return "bad type!" }})
	disc, err = d.Discover(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "", disc.Inventory.Devices[0].Type)
	assert.True(t, hasWarning(disc.Warnings, "not a valid GRES type"))
}

func TestDiscoverCanceled(t *testing.T) {
	d := newDriver(t, nvmltest.DGXH100(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := d.Discover(ctx)
	require.ErrorIs(t, err, context.Canceled)
}

func TestDiscoverCountFailure(t *testing.T) {
	srv := nvmltest.DGXH100()
	srv.DeviceGetCountFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_UNKNOWN }
	d := newDriver(t, srv, Options{})
	_, err := d.Discover(context.Background())
	require.ErrorIs(t, err, gonvml.ERROR_UNKNOWN)
}

func TestCoresFromMask(t *testing.T) {
	c := coresFromMask([]uint{0b1011, 1}, 4096)
	want := "0-1,3,64"
	if ^uint(0)>>32 == 0 { // 32-bit uint
		want = "0-1,3,32"
	}
	assert.Equal(t, want, c.String())
	assert.Equal(t, "0-1", coresFromMask([]uint{0b1011}, 2).String())
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{Name: "9gpu"}, {Name: "g p u"}, {MaxCPUs: -1}, {MaxCPUs: gres.MaxCoreID + 2},
		{WaitSlice: -1}, {WaitSlice: 10}, {WaitSlice: 2 * 3600e9},
	} {
		err := o.Validate()
		require.ErrorIs(t, err, ErrInvalidOptions, "%+v", o)
		_, err = New(nvmltest.DGXH100(), o)
		require.ErrorIs(t, err, ErrInvalidOptions)
	}
	require.NoError(t, (&Options{Name: "gpu", MaxCPUs: 256, WaitSlice: 5e8}).Validate())
	_, err := New(nil, Options{})
	require.ErrorIs(t, err, ErrInvalidOptions)
}

// TestLibraryNotFound: Init fails as on a machine without the driver; no
// other NVML call may follow (every other func of this mock is nil, so a
// call would panic).
func TestLibraryNotFound(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() gonvml.Return { return gonvml.ERROR_LIBRARY_NOT_FOUND }}
	d, err := New(lib, Options{})
	require.NoError(t, err)
	err = d.Init()
	require.ErrorIs(t, err, ErrLibraryNotFound)
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorIs(t, err, gonvml.ERROR_LIBRARY_NOT_FOUND)
	assertRefuses(t, d)
	assert.Len(t, lib.InitCalls(), 1)

	// Retrying Init is allowed; a success enables the driver.
	srv := nvmltest.DGXH100()
	fail := true
	srv.InitFunc = func() gonvml.Return {
		if fail {
			return gonvml.ERROR_DRIVER_NOT_LOADED
		}
		return gonvml.SUCCESS
	}
	d, err = New(srv, Options{SysfsRoot: t.TempDir(), ProcRoot: t.TempDir()})
	require.NoError(t, err)
	err = d.Init()
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorIs(t, err, gonvml.ERROR_DRIVER_NOT_LOADED)
	require.NotErrorIs(t, err, ErrLibraryNotFound)
	assertRefuses(t, d)
	fail = false
	require.NoError(t, d.Init())
	require.NoError(t, d.Init()) // idempotent
	_, err = d.Discover(context.Background())
	require.NoError(t, err)
	require.NoError(t, d.Shutdown())
	assertRefuses(t, d)
}

func assertRefuses(t *testing.T, d *Driver) {
	t.Helper()
	_, err := d.Discover(context.Background())
	require.ErrorIs(t, err, ErrNotInitialized)
	_, err = d.PollHealth(context.Background(), 0)
	require.ErrorIs(t, err, ErrNotInitialized)
	require.ErrorIs(t, d.Shutdown(), ErrNotInitialized)
}

func TestNilDriver(t *testing.T) {
	var d *Driver
	assertRefuses(t, d)
	require.ErrorIs(t, d.Init(), ErrNotInitialized)
}

// TestOpenRealLibrary loads the system's NVML through go-nvml. On a
// machine without the NVIDIA driver it must fail cleanly with
// ErrLibraryNotFound and then refuse every call (a further NVML call
// would end the test process).
func TestOpenRealLibrary(t *testing.T) {
	d, err := Open(Options{LibraryPath: filepath.Join(t.TempDir(), "libnvidia-ml.so.1")})
	require.ErrorIs(t, err, ErrLibraryNotFound)
	assert.Nil(t, d)
	assertRefuses(t, d)

	d, err = Open(Options{})
	if err != nil {
		require.ErrorIs(t, err, ErrUnavailable)
		t.Logf("system NVML unavailable (expected without a GPU): %v", err)
		return
	}
	t.Logf("system NVML loaded: %s", d.version)
	require.NoError(t, d.Shutdown())
}

func TestNoDevices(t *testing.T) {
	srv, err := nvmltest.New(gres.Inventory{}, gpus.H100_SXM5_80GB)
	require.NoError(t, err)
	d := newDriver(t, srv, Options{})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	assert.Empty(t, disc.Inventory.Devices)
	assert.Empty(t, disc.CommonFiles)
	evs, err := d.PollHealth(context.Background(), 0)
	require.NoError(t, err)
	assert.Empty(t, evs)
}
