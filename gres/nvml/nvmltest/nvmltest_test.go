//go:build cgo

package nvmltest

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
)

func TestNotRepresentable(t *testing.T) {
	inv := gpuserver.DGXH100()
	inv.Devices = inv.Devices[1:] // indices 1..7
	inv.Links = nil
	_, err := New(inv, gpus.H100_SXM5_80GB)
	require.ErrorIs(t, err, ErrNotRepresentable)

	inv = gpuserver.DGXH100()
	inv.Links[0][1].NVLinks, inv.Links[1][0].NVLinks = 12, 12 // not min(18, 18)
	_, err = New(inv, gpus.H100_SXM5_80GB)
	require.ErrorIs(t, err, ErrNotRepresentable)

	bad := gres.Inventory{Devices: []gres.Device{{Index: 0, Name: ""}}}
	_, err = New(bad, gpus.H100_SXM5_80GB)
	require.ErrorIs(t, err, ErrNotRepresentable)
}

func TestEnableMIGErrors(t *testing.T) {
	srv := DGXH100()
	_, err := srv.EnableMIG(8, nvml.GPU_INSTANCE_PROFILE_1_SLICE)
	require.Error(t, err)
	_, err = GB200().EnableMIG(0, nvml.GPU_INSTANCE_PROFILE_1_SLICE)
	require.Error(t, err) // the GB200 model has no MIG profiles
	m, err := srv.EnableMIG(0, nvml.GPU_INSTANCE_PROFILE_7_SLICE)
	require.NoError(t, err)
	require.Len(t, srv.MIGDevices(0), 1)
	require.Equal(t, uint64(81920), m[0].Profile.MemorySizeMB)
}
