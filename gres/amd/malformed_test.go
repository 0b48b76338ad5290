package amd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/amd"
	"github.com/sluicehq/sluice/gres/amd/amdtest"
	"github.com/sluicehq/sluice/gres/gresdriver"
)

const topo = "sys/class/kfd/kfd/topology/nodes"

// editProps rewrites one key of a KFD properties file ("" value drops it).
func editProps(t *testing.T, root, rel, key, value string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, _, _ := strings.Cut(line, " "); k == key {
			if value == "" {
				continue
			}
			line = key + " " + value
		}
		out = append(out, line)
	}
	writeFile(t, root, rel, strings.Join(out, "\n")+"\n")
}

// TestMalformedSysfs damages the MI300X hive's tree one way at a time:
// Discover must degrade with a clear warning (or fail with a clear error)
// and always return a valid Discovery. The KFD nodes are 0-1 (CPUs) and
// 2-9 (GPUs 0-7).
func TestMalformedSysfs(t *testing.T) {
	m := amdtest.MI300XHive()
	m.CPUsPerNUMA = 8 // fewer files to write per case
	gpu := func(i int) string { return topo + "/" + string(rune('0'+i+2)) }
	cases := []struct {
		name    string
		damage  func(t *testing.T, root string)
		devices int
		warn    string
		check   func(t *testing.T, disc gres.Discovery)
	}{
		{"garbage properties", func(t *testing.T, root string) {
			writeFile(t, root, gpu(2)+"/properties", "simd_count lots\n")
		}, 7, `kfd node 4: `, nil},
		{"no simd_count", func(t *testing.T, root string) { writeFile(t, root, gpu(2)+"/properties", "\n") }, 7, "no simd_count", nil},
		{"missing properties", func(t *testing.T, root string) {
			require.NoError(t, os.Remove(filepath.Join(root, gpu(3), "properties")))
		}, 7, "kfd node 5:", nil},
		{"location out of range", func(t *testing.T, root string) { editProps(t, root, gpu(0)+"/properties", "location_id", "70000") }, 7, "location_id 70000 outside [0, 65535]", nil},
		{"domain missing", func(t *testing.T, root string) { editProps(t, root, gpu(0)+"/properties", "domain", "") }, 7, "no domain", nil},
		{"not AMD", func(t *testing.T, root string) { editProps(t, root, gpu(7)+"/properties", "vendor_id", "4318") }, 7, "vendor_id 0x10de is not AMD", nil},
		{"huge number", func(t *testing.T, root string) {
			editProps(t, root, gpu(1)+"/properties", "device_id", "99999999999999999999999")
		}, 7, "want an unsigned decimal integer", nil},
		{"no render node", func(t *testing.T, root string) {
			editProps(t, root, gpu(1)+"/properties", "drm_render_minor", "4294967295")
		}, 7, "no DRM render node", nil},
		{"stray node entry", func(t *testing.T, root string) { writeFile(t, root, topo+"/foo/properties", "x 1\n") }, 8, `"foo" is not a node number`, nil},
		{"garbage io_link", func(t *testing.T, root string) { writeFile(t, root, gpu(0)+"/io_links/1/properties", "type xgmi\n") }, 8, "kfd node 2: io_link 1:",
			func(t *testing.T, disc gres.Discovery) {
				assert.Equal(t, 1, disc.Inventory.Link(0, 1).NVLinks, "the other direction still tells")
			}},
		{"io_link to nowhere", func(t *testing.T, root string) { editProps(t, root, gpu(0)+"/io_links/1/properties", "node_to", "99") }, 8, "xGMI link to node 99, which is not another node", nil},
		{"xGMI link to a CPU", func(t *testing.T, root string) { editProps(t, root, gpu(0)+"/io_links/0/properties", "type", "11") }, 8, "",
			func(t *testing.T, disc gres.Discovery) {
				assert.Empty(t, disc.Warnings, "an APU's GPU-CPU link is xGMI")
			}},
		{"io_link from elsewhere", func(t *testing.T, root string) { editProps(t, root, gpu(0)+"/io_links/1/properties", "node_from", "7") }, 8, "do not name this node", nil},
		{"io_link without bandwidth", func(t *testing.T, root string) {
			for i := range 8 {
				for k := 1; k < 8; k++ {
					rel := gpu(i) + "/io_links/" + string(rune('0'+k)) + "/properties"
					editProps(t, root, rel, "min_bandwidth", "0")
					editProps(t, root, rel, "max_bandwidth", "0")
				}
			}
		}, 8, "counted as one link", func(t *testing.T, disc gres.Discovery) { assert.Equal(t, 1, disc.Inventory.Link(2, 6).NVLinks) }},
		{"no kfd dev", func(t *testing.T, root string) {
			require.NoError(t, os.Remove(filepath.Join(root, "sys/class/kfd/kfd/dev")))
		}, 8, "/dev/kfd: device number unknown",
			func(t *testing.T, disc gres.Discovery) { assert.Nil(t, disc.CommonFiles) }},
		{"garbage kfd dev", func(t *testing.T, root string) { writeFile(t, root, "sys/class/kfd/kfd/dev", "235\n") }, 8, `"235": want major:minor`, nil},
		{"render dev mismatch", func(t *testing.T, root string) {
			writeFile(t, root, filepath.Join(m.GPUs[3].PCIDir(), "drm/renderD131/dev"), "226:200\n")
		}, 8, "/dev/dri/renderD131 is 226:200, not 226:131", func(t *testing.T, disc gres.Discovery) {
			assert.Equal(t, int64(200), disc.Files[3][0].Minor)
		}},
		{"garbage numa_node", func(t *testing.T, root string) {
			writeFile(t, root, filepath.Join(m.GPUs[0].PCIDir(), "numa_node"), "zero\n")
		}, 8, "",
			func(t *testing.T, disc gres.Discovery) {
				assert.Equal(t, -1, disc.Inventory.Devices[0].NUMA)
				assert.Equal(t, gres.PCIeUnknown, disc.Inventory.Link(0, 1).PCIe)
			}},
		{"garbage cpulist", func(t *testing.T, root string) {
			writeFile(t, root, filepath.Join(m.GPUs[5].PCIDir(), "local_cpulist"), "8-\n")
		}, 8, "",
			func(t *testing.T, disc gres.Discovery) {
				assert.True(t, disc.Inventory.Devices[5].Cores.IsEmpty())
				assert.Equal(t, -1, disc.Inventory.Devices[5].Socket)
			}},
		{"NUMA node on two sockets", func(t *testing.T, root string) {
			writeFile(t, root, filepath.Join(m.GPUs[1].PCIDir(), "local_cpulist"), "1-7\n")
			writeFile(t, root, "sys/devices/system/cpu/cpu1/topology/physical_package_id", "1\n")
		}, 8, "NUMA node 0 reported on sockets 0 and 1; sockets ignored", func(t *testing.T, disc gres.Discovery) {
			for _, d := range disc.Inventory.Devices {
				assert.Equal(t, -1, d.Socket)
			}
		}},
		{"PCI link gone, render device left", func(t *testing.T, root string) {
			require.NoError(t, os.Remove(filepath.Join(root, "sys/bus/pci/devices", m.GPUs[2].Bus)))
		}, 8, "", func(t *testing.T, disc gres.Discovery) {
			d := disc.Inventory.Devices[2]
			assert.Equal(t, 0, d.NUMA, "read through the render node's device link")
			assert.Equal(t, int64(192<<10), d.MemoryMiB)
			assert.Empty(t, disc.Warnings)
		}},
		{"PCI device gone", func(t *testing.T, root string) {
			require.NoError(t, os.Remove(filepath.Join(root, "sys/bus/pci/devices", m.GPUs[2].Bus)))
			require.NoError(t, os.Remove(filepath.Join(root, "sys/class/drm/renderD130")))
		}, 8, "gpu 0000:45:00.0: PCI device not found in sysfs", func(t *testing.T, disc gres.Discovery) {
			d := disc.Inventory.Devices[2]
			assert.Equal(t, -1, d.NUMA)
			assert.Equal(t, int64(192<<10), d.MemoryMiB, "from the KFD memory bank")
		}},
		{"bad vendor file", func(t *testing.T, root string) {
			writeFile(t, root, filepath.Join(m.GPUs[4].PCIDir(), "vendor"), "AMD\n")
		}, 8, "gpu 0000:85:00.0: PCI device not found", nil},
		{"no nodes", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, topo)))
			require.NoError(t, os.Mkdir(filepath.Join(root, topo), 0o755))
		}, 0, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			require.NoError(t, m.Write(root))
			c.damage(t, root)
			d, err := amd.Open(amd.Options{Root: root})
			require.NoError(t, err)
			disc, err := d.Discover(context.Background())
			require.NoError(t, err)
			require.NoError(t, gresdriver.CheckDiscovery(disc))
			assert.Len(t, disc.Inventory.Devices, c.devices)
			if c.warn != "" {
				assert.Contains(t, strings.Join(disc.Warnings, "\n"), c.warn)
			}
			if c.check != nil {
				c.check(t, disc)
			}
		})
	}
	t.Run("topology gone", func(t *testing.T) {
		root := t.TempDir()
		require.NoError(t, m.Write(root))
		d, err := amd.Open(amd.Options{Root: root})
		require.NoError(t, err)
		require.NoError(t, os.RemoveAll(filepath.Join(root, topo)))
		_, err = d.Discover(context.Background())
		assert.ErrorIs(t, err, amd.ErrUnavailable)
	})
}
