package amd_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/amd"
	"github.com/sluicehq/sluice/gres/amd/amdtest"
	"github.com/sluicehq/sluice/gres/gresdriver"
)

// fixture writes m into a temporary root and opens a driver on it.
func fixture(t testing.TB, m amdtest.Machine) (*amd.Driver, string) {
	t.Helper()
	tree, err := m.Tree()
	require.NoError(t, err)
	root := gresdriver.WriteTree(t, tree)
	d, err := amd.Open(amd.Options{Root: root, PollInterval: time.Millisecond})
	require.NoError(t, err)
	return d, root
}

func discover(t testing.TB, d *amd.Driver) gres.Discovery {
	t.Helper()
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	require.NoError(t, gresdriver.CheckDiscovery(disc))
	return disc
}

// cpus is the CPU list "lo-hi".
func cpus(t testing.TB, lo, hi int) gres.CoreSet {
	c, err := gres.CoreRange(lo, hi)
	require.NoError(t, err)
	return c
}

func render(minor int) gres.DeviceFile {
	return gres.DeviceFile{Path: fmt.Sprintf("/dev/dri/renderD%d", minor), Kind: gres.CharDevice, Major: 226, Minor: int64(minor)}
}

func TestDiscoverMI300XHive(t *testing.T) {
	m := amdtest.MI300XHive()
	d, _ := fixture(t, m)
	disc := discover(t, d)
	assert.Empty(t, disc.Warnings)
	assert.Equal(t, "amdgpu", disc.Driver)
	inv := disc.Inventory
	require.Len(t, inv.Devices, 8)
	for i, dev := range inv.Devices {
		g := m.GPUs[i]
		numa := i / 4
		assert.Equal(t, gres.Device{Index: i, Name: "gpu", Type: "mi300x", UUID: fmt.Sprintf("GPU-%016x", g.UniqueID),
			MemoryMiB: 192 << 10, PCIBusID: g.Bus, NUMA: numa, Socket: numa, Cores: cpus(t, 64*numa, 64*numa+63)}, dev)
		assert.Equal(t, []gres.DeviceFile{render(128 + i)}, disc.Files[i])
		for j := range inv.Devices {
			if i == j {
				continue
			}
			want := gres.Link{NVLinks: 1, Fabric: gres.FabricXGMI, PCIe: gres.PCIeSYS}
			if i/4 == j/4 {
				want.PCIe = gres.PCIeNODE // own host bridges, one NUMA node
			}
			assert.Equal(t, want, inv.Link(i, j), "%d-%d", i, j)
		}
	}
	assert.Equal(t, []gres.DeviceFile{{Path: "/dev/kfd", Kind: gres.CharDevice, Major: 235, Minor: 0}}, disc.CommonFiles)
	info := d.Devices()
	require.Len(t, info, 8)
	assert.Equal(t, amd.DeviceInfo{Index: 3, Node: 5, GPUID: 40000 + 5*1117, RenderMinor: 131, PCIBusID: "0000:65:00.0",
		DeviceID: 0x74a1, ComputePartition: "SPX", MemoryPartition: "NPS1", Partition: 0, Partitions: 1}, info[3])
}

func TestDiscoverMI250X(t *testing.T) {
	m := amdtest.MI250XNode()
	d, _ := fixture(t, m)
	disc := discover(t, d)
	assert.Empty(t, disc.Warnings)
	inv := disc.Inventory
	require.Len(t, inv.Devices, 8)
	for i, dev := range inv.Devices {
		p := i / 2
		assert.Equal(t, "mi250x", dev.Type)
		assert.Equal(t, int64(64<<10), dev.MemoryMiB)
		assert.Equal(t, p, dev.NUMA)
		assert.Equal(t, 0, dev.Socket)
		assert.Equal(t, cpus(t, 16*p, 16*p+15), dev.Cores)
		assert.Equal(t, m.GPUs[i].Bus, dev.PCIBusID)
	}
	lanes := map[[2]int]int{}
	for _, l := range m.XGMI {
		lanes[[2]int{min(l.A, l.B), max(l.A, l.B)}] = l.Links
	}
	for i := range 8 {
		for j := i + 1; j < 8; j++ {
			want := gres.Link{NVLinks: lanes[[2]int{i, j}], PCIe: gres.PCIeSYS}
			if want.NVLinks > 0 {
				want.Fabric = gres.FabricXGMI
			}
			if i/2 == j/2 {
				want.PCIe = gres.PCIePIX // two GCDs behind one switch
			}
			assert.Equal(t, want, inv.Link(i, j), "%d-%d", i, j)
		}
	}
	assert.Equal(t, 4, inv.Link(6, 7).NVLinks)
	assert.Equal(t, 2, inv.Link(0, 7).NVLinks)
	assert.Equal(t, 0, inv.Link(0, 4).NVLinks, "same hive, no direct link")
	assert.Equal(t, []gres.DeviceFile{{Path: "/dev/kfd", Kind: gres.CharDevice, Major: 236, Minor: 0}}, disc.CommonFiles)
}

func TestDiscoverMI300XCPX(t *testing.T) {
	m := amdtest.MI300XCPX()
	d, _ := fixture(t, m)
	disc := discover(t, d)
	inv := disc.Inventory
	require.Len(t, inv.Devices, 9)
	minors := append(append([]int(nil), m.GPUs[0].RenderMinors...), m.GPUs[1].RenderMinors...)
	for i, dev := range inv.Devices {
		assert.Equal(t, []gres.DeviceFile{render(minors[i])}, disc.Files[i])
		assert.Equal(t, 0, dev.NUMA)
		if i < 8 {
			assert.Equal(t, gres.Device{Index: i, Name: "gpu", Type: "mi300x_cpx", MemoryMiB: 24 << 10, NUMA: 0, Socket: 0, Cores: cpus(t, 0, 63)}, dev)
		}
	}
	assert.Equal(t, gres.Device{Index: 8, Name: "gpu", Type: "mi300x", UUID: fmt.Sprintf("GPU-%016x", m.GPUs[1].UniqueID),
		MemoryMiB: 192 << 10, PCIBusID: m.GPUs[1].Bus, NUMA: 0, Socket: 0, Cores: cpus(t, 0, 63)}, inv.Devices[8])
	for i := range 8 {
		for j := i + 1; j < 8; j++ {
			assert.Equal(t, gres.Link{NVLinks: amd.PartitionLanes, Fabric: gres.FabricXGMI, PCIe: gres.PCIeBoard}, inv.Link(i, j))
		}
		assert.Equal(t, gres.Link{NVLinks: 1, Fabric: gres.FabricXGMI, PCIe: gres.PCIeNODE}, inv.Link(i, 8))
	}
	info := d.Devices()
	for i := range 8 {
		assert.Equal(t, m.GPUs[0].Bus, info[i].PCIBusID, "partition %d records its parent", i)
		assert.Equal(t, i, info[i].Partition)
		assert.Equal(t, 8, info[i].Partitions)
		assert.Equal(t, "CPX", info[i].ComputePartition)
	}
	assert.Equal(t, 1, info[8].Partitions)
	joined := strings.Join(disc.Warnings, "\n")
	assert.Contains(t, joined, "gpu 0000:05:00.0: compute partition mode CPX, memory partition mode NPS1: devices 0,1,2,3,4,5,6,7 are its partitions")
	assert.Contains(t, joined, "partitions share unique_id")
	assert.Equal(t, disc, discover(t, d), "warnings included, a second discovery is the same")
}

func TestTypeOf(t *testing.T) {
	for _, c := range []struct {
		id    uint16
		cus   int
		name  string
		want  string
		known bool
	}{
		{0x74a1, 304, "", "mi300x", true},
		{0x74a0, 228, "", "mi300a", true},
		{0x74a5, 304, "", "mi325x", true},
		{0x740c, 110, "", "mi250x", true},
		{0x740c, 104, "", "mi250", true},
		{0x740f, 104, "", "mi210", true},
		{0x738c, 120, "", "mi100", true},
		{0x7499, 0, "AMD Instinct MI999Z OAM", "mi999z", false},
		{0x7499, 0, "Radeon Pro W7900 (Dual Slot)", "radeon_pro_w7900__dual_slot", false},
		{0x7499, 0, "", "amd_7499", false},
		{0x7499, 0, "???", "amd_7499", false},
	} {
		got, known := amd.TypeOf(c.id, c.cus, c.name)
		assert.Equal(t, c.want, got, "%#x %q", c.id, c.name)
		assert.Equal(t, c.known, known, "%#x", c.id)
		assert.NoError(t, gres.ValidateName("gpu", got))
	}
}

func TestDiscoverUnknownDevice(t *testing.T) {
	m := amdtest.MI300XHive()
	m.GPUs = m.GPUs[:2]
	m.XGMI = m.XGMI[:1]
	m.GPUs[0].DeviceID, m.GPUs[1].DeviceID = 0x7499, 0x7499
	m.GPUs[1].ProductName = ""
	d, _ := fixture(t, m)
	disc := discover(t, d)
	assert.Equal(t, "mi300x", disc.Inventory.Devices[0].Type, "from the product name")
	assert.Equal(t, "amd_7499", disc.Inventory.Devices[1].Type)
	assert.Contains(t, strings.Join(disc.Warnings, "\n"), `gpu 0000:25:00.0: unknown AMD device id 0x7499 (""); typed "amd_7499"`)
}

func TestOptions(t *testing.T) {
	for _, o := range []amd.Options{{Root: "rel/dir"}, {Name: "1gpu"}, {PollInterval: -1}, {PollInterval: time.Microsecond}, {PollInterval: 2 * time.Hour}} {
		_, err := amd.New(o)
		assert.ErrorIs(t, err, amd.ErrInvalidOptions, "%+v", o)
	}
	_, err := amd.Open(amd.Options{Root: t.TempDir()})
	assert.ErrorIs(t, err, amd.ErrUnavailable)
	d, err := amd.New(amd.Options{Root: t.TempDir(), Name: "amdgpu"})
	require.NoError(t, err)
	_, err = d.Discover(context.Background())
	assert.ErrorIs(t, err, amd.ErrUnavailable)
	assert.Nil(t, d.Devices())

	root := t.TempDir()
	require.NoError(t, amdtest.MI250XNode().Write(root))
	d, err = amd.Open(amd.Options{Root: root, Name: "amdgpu"})
	require.NoError(t, err)
	disc := discover(t, d)
	assert.Equal(t, "amdgpu", disc.Inventory.Devices[0].Name)
}

// writeFile replaces a file of the tree.
func writeFile(t testing.TB, root, rel, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, rel), []byte(content), 0o644))
}

func TestDiscoverPartitionModeUnknown(t *testing.T) {
	m := amdtest.MI300XCPX()
	m.GPUs[0].ComputePartition = ""
	d, _ := fixture(t, m)
	disc := discover(t, d)
	for _, dev := range disc.Inventory.Devices[:8] {
		assert.Equal(t, "mi300x_xcp", dev.Type)
	}
	assert.Contains(t, strings.Join(disc.Warnings, "\n"), `gpu 0000:05:00.0: 8 KFD nodes but compute partition mode ""; partitions typed "mi300x_xcp"`)
}

func TestDiscoverMI250(t *testing.T) {
	m := amdtest.MI250XNode()
	for i := range m.GPUs {
		m.GPUs[i].CUs = 104
	}
	d, _ := fixture(t, m)
	disc := discover(t, d)
	for _, dev := range disc.Inventory.Devices {
		assert.Equal(t, "mi250", dev.Type, "0x740c with 104 CUs per GCD")
	}
}

func TestDiscoverSharedUniqueID(t *testing.T) {
	m := amdtest.MI300XHive()
	m.GPUs[3].UniqueID = m.GPUs[1].UniqueID
	m.GPUs[6].UniqueID = 0
	d, _ := fixture(t, m)
	disc := discover(t, d)
	for i, dev := range disc.Inventory.Devices {
		if i == 1 || i == 3 || i == 6 {
			assert.Empty(t, dev.UUID, "device %d", i)
		} else {
			assert.NotEmpty(t, dev.UUID, "device %d", i)
		}
	}
	assert.Contains(t, strings.Join(disc.Warnings, "\n"), "shared by 2 KFD nodes of different PCI devices; they have no UUID")
}
