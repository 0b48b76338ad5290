package nvml

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
)

func TestNormalizeType(t *testing.T) {
	for name, want := range map[string]string{
		"NVIDIA H100 80GB HBM3":          "h100",
		"NVIDIA H100 PCIe":               "h100",
		"NVIDIA H100 NVL":                "h100",
		"NVIDIA H200":                    "h200",
		"NVIDIA H200 141GB HBM3e":        "h200",
		"NVIDIA A100-SXM4-40GB":          "a100",
		"Mock NVIDIA A100-SXM4-40GB":     "a100",
		"NVIDIA A100-PCIE-40GB":          "a100",
		"NVIDIA A100 80GB PCIe":          "a100",
		"NVIDIA B200 180GB HBM3e":        "b200",
		"NVIDIA GB200":                   "gb200",
		"NVIDIA GH200 480GB":             "gh200",
		"Tesla V100-SXM2-16GB":           "v100",
		"Tesla T4":                       "t4",
		"NVIDIA L40S":                    "l40s",
		"NVIDIA A30":                     "a30",
		"NVIDIA GeForce RTX 4090":        "rtx_4090",
		"NVIDIA GeForce RTX 4080 SUPER":  "rtx_4080_super",
		"NVIDIA RTX A6000":               "rtx_a6000",
		"NVIDIA RTX 6000 Ada Generation": "rtx_6000_ada",
		"Quadro RTX 8000":                "rtx_8000",
		"":                               "",
		"NVIDIA":                         "",
		"80GB HBM3":                      "",
		"  weird / name, (x) ":           "weird_name_x",
	} {
		assert.Equal(t, want, NormalizeType(name), "%q", name)
	}
}

func TestMIGProfile(t *testing.T) {
	for _, c := range []struct {
		gi, ci uint32
		mem    uint64
		want   string
	}{
		{1, 1, 4864, "1g.5gb"}, {2, 2, 9856, "2g.10gb"}, {3, 3, 19968, "3g.20gb"}, {4, 4, 19968, "4g.20gb"},
		{7, 7, 40192, "7g.40gb"}, {7, 7, 81152, "7g.80gb"}, {7, 7, 81920, "7g.80gb"}, {1, 1, 9984, "1g.10gb"}, {3, 1, 19968, "1c.3g.20gb"},
		{0, 0, 100, ""}, {1, 1, 0, ""}, {2, 0, 9856, "2g.10gb"},
	} {
		assert.Equal(t, c.want, MIGProfile(c.gi, c.ci, c.mem), "%+v", c)
	}
	assert.Equal(t, "a100_3g.20gb", MIGType("a100", "3g.20gb"))
	assert.Equal(t, "3g.20gb", MIGType("", "3g.20gb"))
}

func TestNormalizeBusID(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:1B:00.0":   "0000:1b:00.0",
		"0000:1b:00.0":       "0000:1b:00.0",
		"00000001:C3:1F.7":   "0001:c3:1f.7",
		" 00000000:07:00.0 ": "0000:07:00.0",
		"":                   "",
		"1B:00.0":            "",
		"0000:1b:00":         "",
		"0000:1b:20.0":       "", // device > 0x1f
		"0000:1b:00.8":       "", // function > 7
		"00010000:1b:00.0":   "", // domain > 0xffff
		"0000:zz:00.0":       "",
		"0000:123:00.0":      "",
	} {
		assert.Equal(t, want, NormalizeBusID(in), "%q", in)
	}
}

func TestParseProcDevices(t *testing.T) {
	in := "Character devices:\n  1 mem\n  4 /dev/vc/0\n195 nvidia-frontend\n236 nvidia-caps\n510 nvidia-uvm\n\nBlock devices:\n  8 sd\n259 blkext\n"
	m, err := ParseProcDevices(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"mem": 1, "/dev/vc/0": 4, "nvidia-frontend": 195, "nvidia-caps": 236, "nvidia-uvm": 510}, m)
	for _, bad := range []string{"Character devices:\nx mem\n", "Character devices:\n12\n", "Character devices:\n-1 x\n", "Character devices:\n99999999999 x\n"} {
		_, err := ParseProcDevices(strings.NewReader(bad))
		require.ErrorIs(t, err, errMalformed, "%q", bad)
	}
}

func TestParseCapabilityMinor(t *testing.T) {
	n, err := ParseCapabilityMinor(strings.NewReader("DeviceFileMinor: 21\nDeviceFileMode: 292\nDeviceFileModify: 1\n"))
	require.NoError(t, err)
	assert.Equal(t, int64(21), n)
	for _, bad := range []string{"", "DeviceFileMode: 292\n", "DeviceFileMinor: x\n", "DeviceFileMinor: -3\n"} {
		_, err := ParseCapabilityMinor(strings.NewReader(bad))
		require.ErrorIs(t, err, errMalformed, "%q", bad)
	}
}

func TestHostFiles(t *testing.T) {
	root := t.TempDir()
	mk := func(rel, content string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	mk("bus/pci/devices/0000:1b:00.0/numa_node", "1\n")
	mk("bus/pci/devices/0000:1b:00.0/local_cpulist", "64-127\n")
	mk("bus/pci/devices/0000:43:00.0/numa_node", "-1\n")
	mk("bus/pci/devices/0000:52:00.0/numa_node", "junk\n")
	mk("devices/system/node/node1/cpulist", "64-127\n")
	mk("devices/system/cpu/cpu64/topology/physical_package_id", "1\n")
	h := host{sysfs: root, procfs: root}
	assert.Equal(t, 1, h.pciNUMANode("0000:1b:00.0"))
	assert.Equal(t, -1, h.pciNUMANode("0000:43:00.0"))
	assert.Equal(t, -1, h.pciNUMANode("0000:52:00.0"))
	assert.Equal(t, -1, h.pciNUMANode(""))
	c, ok := h.pciLocalCPUs("0000:1b:00.0")
	require.True(t, ok)
	assert.Equal(t, "64-127", c.String())
	_, ok = h.pciLocalCPUs("0000:43:00.0")
	assert.False(t, ok)
	assert.Equal(t, 1, h.socketOf(c, -1))
	assert.Equal(t, 1, h.socketOf(gres.CoreSet{}, 1))
	assert.Equal(t, -1, h.socketOf(gres.CoreSet{}, 0))
	_, err := h.capabilityMinor(0, 1, 0)
	require.True(t, errors.Is(err, os.ErrNotExist))
}

func FuzzNormalizeType(f *testing.F) {
	for _, s := range []string{"NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB", "NVIDIA RTX 6000 Ada Generation", "", "...", "a..b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := NormalizeType(name)
		if got == "" {
			return
		}
		if !validType(got) || strings.Trim(got, ".") == "" {
			t.Fatalf("NormalizeType(%q) = %q: not a valid type", name, got)
		}
		if again := NormalizeType(got); again != got {
			t.Fatalf("NormalizeType not idempotent: %q → %q → %q", name, got, again)
		}
	})
}

func FuzzNormalizeBusID(f *testing.F) {
	for _, s := range []string{"00000000:1B:00.0", "0000:1b:00.0", "", "0:0:0.0", "ffff:ff:1f.7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := NormalizeBusID(s)
		if got == "" {
			return
		}
		if len(got) != 12 || NormalizeBusID(got) != got {
			t.Fatalf("NormalizeBusID(%q) = %q: not canonical", s, got)
		}
	})
}

func FuzzParseProcDevices(f *testing.F) {
	f.Add("Character devices:\n195 nvidia-frontend\n510 nvidia-uvm\n\nBlock devices:\n  8 sd\n")
	f.Add("")
	f.Add("Character devices:\nx\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseProcDevices(strings.NewReader(s))
		if err != nil {
			return
		}
		for name, maj := range m {
			if name == "" || maj < 0 || maj > gres.MaxDeviceNumber {
				t.Fatalf("bad entry %q=%d", name, maj)
			}
		}
	})
}

func FuzzParseCapabilityMinor(f *testing.F) {
	f.Add("DeviceFileMinor: 21\nDeviceFileMode: 292\n")
	f.Add("")
	f.Add("DeviceFileMinor: -1")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseCapabilityMinor(strings.NewReader(s))
		if err == nil && (n < 0 || n > gres.MaxDeviceNumber) {
			t.Fatalf("minor %d out of range", n)
		}
	})
}
