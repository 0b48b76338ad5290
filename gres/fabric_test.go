package gres

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLinkFabricText(t *testing.T) {
	for _, f := range []LinkFabric{FabricNVLink, FabricXGMI, FabricXeLink} {
		b, err := f.MarshalText()
		require.NoError(t, err)
		var g LinkFabric
		require.NoError(t, g.UnmarshalText(b))
		assert.Equal(t, f, g)
		assert.Equal(t, string(b), f.String())
	}
	var g LinkFabric
	require.NoError(t, g.UnmarshalText(nil))
	assert.Equal(t, FabricNVLink, g)
	err := g.UnmarshalText([]byte("infiniband"))
	assert.True(t, errors.Is(err, ErrInvalidInventory), "%v", err)
	_, err = LinkFabric(9).MarshalText()
	assert.Error(t, err)

	l := Link{NVLinks: 1, Fabric: FabricXGMI}
	b, err := json.Marshal(l)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"Fabric":"xgmi"`)
	var back Link
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, l, back)
}

func TestValidateLinkFabric(t *testing.T) {
	inv := Inventory{Devices: []Device{{Index: 0, Name: "gpu", NUMA: -1, Socket: -1}, {Index: 1, Name: "gpu", NUMA: -1, Socket: -1}}}
	require.NoError(t, inv.SetLink(0, 1, Link{NVLinks: 1, Fabric: FabricXGMI}))
	require.NoError(t, inv.Validate())
	require.NoError(t, inv.SetLink(0, 1, Link{NVLinks: 1, Fabric: FabricXGMI, NVSwitch: true}))
	assert.ErrorContains(t, inv.Validate(), "NVSwitch link without NVLink lanes")
	require.NoError(t, inv.SetLink(0, 1, Link{NVLinks: 1, Fabric: 7}))
	assert.ErrorContains(t, inv.Validate(), "unknown link fabric 7")
}

func TestDeviceSampleValidate(t *testing.T) {
	ok := DeviceSample{Index: 2, Utilization: 55, MemoryUsedMiB: 1024, PowerWatts: 300, EnergyJoules: 1e6}
	require.NoError(t, ok.Validate())
	unknown := DeviceSample{Index: 0, Utilization: -1, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1}
	require.NoError(t, unknown.Validate())
	for name, s := range map[string]DeviceSample{
		"index":       {Index: -1},
		"utilization": {Utilization: 101},
		"memory":      {MemoryUsedMiB: -2},
		"power":       {PowerWatts: -0.5},
		"energy":      {EnergyJoules: -3},
		"power inf":   {PowerWatts: math.Inf(1)},
		"energy inf":  {EnergyJoules: math.Inf(1)},
		"energy nan":  {EnergyJoules: math.NaN()},
	} {
		err := s.Validate()
		assert.True(t, errors.Is(err, ErrInvalidRequest), "%s: %v", name, err)
	}
}
