package amdtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteRejectsBadMachines(t *testing.T) {
	for name, m := range map[string]Machine{
		"no sockets":     {NUMAPerSocket: 1, CPUsPerNUMA: 1},
		"bad bus":        {Sockets: 1, NUMAPerSocket: 1, CPUsPerNUMA: 1, GPUs: []GPU{{Bus: "05:00.0", RenderMinors: []int{128}}}},
		"bad device":     {Sockets: 1, NUMAPerSocket: 1, CPUsPerNUMA: 1, GPUs: []GPU{{Bus: "0000:05:20.0", RenderMinors: []int{128}}}},
		"no render node": {Sockets: 1, NUMAPerSocket: 1, CPUsPerNUMA: 1, GPUs: []GPU{{Bus: "0000:05:00.0"}}},
	} {
		if err := m.Write(t.TempDir()); err == nil {
			t.Errorf("%s: no error", name)
		}
		if tree, err := m.Tree(); err == nil || tree.Files != nil || tree.Links != nil {
			t.Errorf("%s: Tree returned %d files, %d links and error %v", name, len(tree.Files), len(tree.Links), err)
		}
	}
}

// TestLayout checks the encodings the kernel documents, independently of
// package amd: location_id packs bus, device and function; PCI ids are
// 0x-prefixed hex; RAS counters read "ue: N"; render nodes link to their
// device; partitions' render nodes live on platform devices.
func TestLayout(t *testing.T) {
	root := t.TempDir()
	m := MI300XCPX()
	if err := m.Write(root); err != nil {
		t.Fatal(err)
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	props := read("sys/class/kfd/kfd/topology/nodes/9/properties")
	for _, want := range []string{"location_id 9472\n", "drm_render_minor 129\n", "vendor_id 4098\n", "device_id 29857\n"} { // 0x25<<8
		if !strings.Contains(props, want) {
			t.Errorf("node 9 properties lack %q", want)
		}
	}
	if got := read(filepath.Join(m.GPUs[1].PCIDir(), "vendor")); got != "0x1002\n" {
		t.Errorf("vendor %q", got)
	}
	if got := read(m.GPUs[0].RASFile("umc")); got != "ue: 0\nce: 0\n" {
		t.Errorf("ras %q", got)
	}
	dev, err := filepath.EvalSymlinks(filepath.Join(root, "sys/class/drm/renderD129/device"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(dev) != m.GPUs[1].Bus {
		t.Errorf("renderD129/device resolves to %s", dev)
	}
	xcp, err := filepath.EvalSymlinks(filepath.Join(root, "sys/class/drm/renderD131/device"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(xcp), "amdgpu_xcp.") {
		t.Errorf("renderD131/device resolves to %s, want an amdgpu_xcp platform device", xcp)
	}
	bus, err := filepath.EvalSymlinks(filepath.Join(root, "sys/bus/pci/devices", m.GPUs[0].Bus))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(bus, "/sys/devices/pci0000:00/") {
		t.Errorf("bus link resolves to %s", bus)
	}
}
