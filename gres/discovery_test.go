package gres

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDiscoveryClone(t *testing.T) {
	d := Discovery{
		Inventory:   Inventory{Devices: []Device{{Index: 0, Name: "gpu", NUMA: -1, Socket: -1}, {Index: 1, Name: "gpu", NUMA: -1, Socket: -1}}},
		Files:       [][]DeviceFile{{{Path: "/dev/dri/renderD128", Kind: CharDevice, Major: 226, Minor: 128}}, {{Path: "/dev/dri/renderD129", Kind: CharDevice, Major: 226, Minor: 129}}},
		CommonFiles: []DeviceFile{{Path: "/dev/kfd", Kind: CharDevice, Major: 235}},
		Driver:      "amdgpu",
		Warnings:    []string{"w"},
	}
	assert.NoError(t, d.Inventory.SetLink(0, 1, Link{NVLinks: 1, Fabric: FabricXGMI}))
	c := d.Clone()
	assert.Equal(t, d, c)
	c.Inventory.Devices[0].Type = "x"
	c.Inventory.Links[0][1].NVLinks = 5
	c.Files[1][0].Minor = 7
	c.CommonFiles[0].Minor = 3
	c.Warnings[0] = "changed"
	assert.Equal(t, "", d.Inventory.Devices[0].Type)
	assert.Equal(t, 1, d.Inventory.Links[0][1].NVLinks)
	assert.Equal(t, int64(129), d.Files[1][0].Minor)
	assert.Equal(t, int64(0), d.CommonFiles[0].Minor)
	assert.Equal(t, "w", d.Warnings[0])
	assert.Nil(t, (&Discovery{}).Clone().Files)
}
