package sysfs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/internal/sysfs"
)

// tree writes files (path → content) under a temporary root.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return root
}

// TestValues reads attribute files as the kernel writes them (one value,
// a trailing newline) and rejects other content with ErrMalformed.
func TestValues(t *testing.T) {
	root := tree(t, map[string]string{
		"line": "  SPX \nsecond\n", "uint": "196608\n", "neg": "-1\n", "int": "-42\n", "big": "99999999999999999999\n",
		"size": "0x1000000000\n", "sizedec": "4096\n", "vendor": "0x1002\n", "upper": "0X8086\n", "nohex": "1002\n",
		"wide": "0x10020\n", "dev": "226:128\n", "devbad": "226\n", "devneg": "226:-1\n", "devbig": "1:4294967296\n",
		"numa": "3\n", "toobig": "4096\n", "cpus": "0-3,8-11\n", "cpubad": "3-1\n", "empty": "\n",
	})
	f := func(name string) string { return filepath.Join(root, name) }

	s, err := sysfs.Line(f("line"))
	require.NoError(t, err)
	assert.Equal(t, "SPX", s)
	_, err = sysfs.Line(f("absent"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	u, err := sysfs.Uint(f("uint"))
	require.NoError(t, err)
	assert.Equal(t, uint64(196608), u)
	for _, bad := range []string{"neg", "big", "line"} {
		_, err := sysfs.Uint(f(bad))
		assert.ErrorIs(t, err, sysfs.ErrMalformed, bad)
		assert.ErrorContains(t, err, f(bad), "the error names the file")
	}
	i, err := sysfs.Int(f("int"))
	require.NoError(t, err)
	assert.Equal(t, int64(-42), i)
	_, err = sysfs.Int(f("big"))
	assert.ErrorIs(t, err, sysfs.ErrMalformed)

	for name, want := range map[string]int64{"size": 64 << 30, "sizedec": 4096} {
		n, err := sysfs.Size(f(name))
		require.NoError(t, err)
		assert.Equal(t, want, n, name)
	}
	_, err = sysfs.Size(f("neg"))
	assert.ErrorIs(t, err, sysfs.ErrMalformed)

	id, err := sysfs.HexID(f("vendor"))
	require.NoError(t, err)
	assert.Equal(t, uint16(0x1002), id)
	id, err = sysfs.HexID(f("upper"))
	require.NoError(t, err)
	assert.Equal(t, uint16(0x8086), id)
	for _, bad := range []string{"nohex", "wide", "empty"} {
		_, err := sysfs.HexID(f(bad))
		assert.ErrorIs(t, err, sysfs.ErrMalformed, bad)
	}

	ma, mi, err := sysfs.DevNumber(f("dev"))
	require.NoError(t, err)
	assert.Equal(t, [2]int64{226, 128}, [2]int64{ma, mi})
	for _, bad := range []string{"devbad", "devneg", "devbig"} {
		_, _, err := sysfs.DevNumber(f(bad))
		assert.ErrorIs(t, err, sysfs.ErrMalformed, bad)
	}

	assert.Equal(t, 3, sysfs.NUMANode(f("numa")))
	for _, unknown := range []string{"neg", "toobig", "line", "absent"} {
		assert.Equal(t, -1, sysfs.NUMANode(f(unknown)), unknown)
	}
	assert.Equal(t, 4096, sysfs.ID(f("toobig")))
	assert.Equal(t, -1, sysfs.ID(f("neg")))

	want, err := gres.ParseCoreSet("0-3,8-11")
	require.NoError(t, err)
	c, err := sysfs.CPUList(f("cpus"))
	require.NoError(t, err)
	assert.True(t, want.Equal(c))
	_, err = sysfs.CPUList(f("cpubad"))
	assert.ErrorIs(t, err, sysfs.ErrMalformed)
	c, err = sysfs.CPUList(f("empty"))
	require.NoError(t, err)
	assert.True(t, c.IsEmpty())
	_, ok := sysfs.CPUs(f("cpus"))
	assert.True(t, ok)
	for _, no := range []string{"cpubad", "empty", "absent"} {
		_, ok := sysfs.CPUs(f(no))
		assert.False(t, ok, no)
	}
}

// TestLineBounded: only the first MaxFileBytes of a file are read.
func TestLineBounded(t *testing.T) {
	root := tree(t, map[string]string{"huge": strings.Repeat("x", 2*sysfs.MaxFileBytes)})
	s, err := sysfs.Line(filepath.Join(root, "huge"))
	require.NoError(t, err)
	assert.Len(t, s, sysfs.MaxFileBytes)
}

func TestCPUSocket(t *testing.T) {
	root := tree(t, map[string]string{
		"sys/devices/system/cpu/cpu0/topology/physical_package_id":  "0\n",
		"sys/devices/system/cpu/cpu57/topology/physical_package_id": "1\n",
	})
	sys := filepath.Join(root, "sys")
	assert.Equal(t, 0, sysfs.CPUSocket(sys, 0))
	assert.Equal(t, 1, sysfs.CPUSocket(sys, 57))
	assert.Equal(t, -1, sysfs.CPUSocket(sys, 3))
}

// TestNumbered lists prefix<N> entries by N, not by name, and passes
// over names that are not such an entry (leading zeros included).
func TestNumbered(t *testing.T) {
	root := tree(t, map[string]string{})
	for _, name := range []string{"card10", "card2", "card0", "card01", "card", "card-1", "renderD128", "version"} {
		require.NoError(t, os.Mkdir(filepath.Join(root, name), 0o755))
	}
	assert.Equal(t, []int{0, 2, 10}, sysfs.Numbered(root, "card"))
	assert.Equal(t, []int{128}, sysfs.Numbered(root, "renderD"))
	assert.Nil(t, sysfs.Numbered(filepath.Join(root, "absent"), "card"))

	nodes := tree(t, map[string]string{"0/properties": "", "1/properties": "", "12/properties": "", "07/properties": "", "x/properties": ""})
	ids, others, err := sysfs.ReadNumbered(nodes, "")
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 12}, ids)
	assert.ElementsMatch(t, []string{"07", "x"}, others)
	_, _, err = sysfs.ReadNumbered(filepath.Join(nodes, "absent"), "")
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestLinksAndUevent(t *testing.T) {
	root := tree(t, map[string]string{
		"devices/pci0000:28/0000:28:01.0/0000:29:00.0/uevent": "DRIVER=i915\nPCI_SLOT_NAME=0000:29:00.0\nnot a pair\n",
	})
	dev := filepath.Join(root, "class/drm/card1/device")
	require.NoError(t, os.MkdirAll(filepath.Dir(dev), 0o755))
	require.NoError(t, os.Symlink("../../../devices/pci0000:28/0000:28:01.0/0000:29:00.0", dev))
	base, err := sysfs.LinkBase(dev)
	require.NoError(t, err)
	assert.Equal(t, "0000:29:00.0", base)
	assert.True(t, sysfs.Exists(filepath.Join(dev, "uevent")), "Exists follows links")
	assert.False(t, sysfs.Exists(filepath.Join(dev, "vendor")))
	assert.Equal(t, map[string]string{"DRIVER": "i915", "PCI_SLOT_NAME": "0000:29:00.0"}, sysfs.Uevent(filepath.Join(dev, "uevent")))
	assert.Nil(t, sysfs.Uevent(filepath.Join(root, "absent")))

	assert.True(t, sysfs.ValidPCI("0000:29:00.0"))
	for _, bad := range []string{"0000:29:00", "00000000:29:00.0", "0000:29:00.8", "0000:2A:00.0", ""} {
		assert.False(t, sysfs.ValidPCI(bad), bad)
	}
	assert.Equal(t, strings.Repeat("a", 40)+"…", sysfs.Clip(strings.Repeat("a", 50)))
	assert.Equal(t, "short", sysfs.Clip("short"))
}
