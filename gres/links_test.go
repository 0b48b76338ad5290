package gres_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
)

func fourGPUs() gres.Inventory {
	inv := gres.Inventory{}
	for i := range 4 {
		inv.Devices = append(inv.Devices, gres.Device{Index: i, Name: "gpu", NUMA: -1, Socket: -1})
	}
	return inv
}

func TestLinksRows(t *testing.T) {
	inv := fourGPUs()
	rows := []string{"-1,4,0,0", "4,-1,0,0", "0,0,-1,4", "0,0,4,-1"}
	for i, r := range rows {
		require.NoError(t, inv.ParseLinksRow(i, r))
	}
	require.NoError(t, inv.Validate())
	assert.Equal(t, 4, inv.Link(0, 1).NVLinks)
	assert.Equal(t, 0, inv.Link(1, 2).NVLinks)
	for i, r := range rows {
		assert.Equal(t, r, inv.FormatLinksRow(i))
	}
	assert.Equal(t, "", inv.FormatLinksRow(4))

	// A row that disagrees with another is caught by Validate.
	require.NoError(t, inv.ParseLinksRow(3, "1,0,4,-1"))
	assert.ErrorIs(t, inv.Validate(), gres.ErrInvalidInventory)

	h := gpuserver.DGXH100()
	assert.Equal(t, "-1,18,18,18,18,18,18,18", h.FormatLinksRow(0))
}

func TestLinksRowErrors(t *testing.T) {
	for _, tt := range []struct {
		i       int
		in, tok string
	}{
		{0, "-1,4,0", "-1,4,0"},
		{0, "-1,4,0,0,0", "-1,4,0,0,0"},
		{0, "0,4,0,0", "0"},
		{1, "4,-1,x,0", "x"},
		{1, "4,-1,-2,0", "-2"},
		{1, "4,-1,256,0", "256"},
		{1, "4,-1,,0", ""},
	} {
		inv := fourGPUs()
		err := inv.ParseLinksRow(tt.i, tt.in)
		require.ErrorIs(t, err, gres.ErrInvalidInventory, tt.in)
		var pe *gres.ParseError
		require.True(t, errors.As(err, &pe), tt.in)
		assert.Equal(t, tt.tok, pe.Token, tt.in)
		assert.Nil(t, inv.Links, "%s: unchanged on error", tt.in)
	}
	inv := fourGPUs()
	assert.ErrorIs(t, inv.ParseLinksRow(4, "-1"), gres.ErrInvalidInventory)
}

func FuzzParseLinksRow(f *testing.F) {
	for _, s := range []string{"-1,4,0,0", "4,-1,0,0", "-1,18,18,18", "0,0,0,0", "", ",", "-1,x,0,0", "-1,999,0,0"} {
		f.Add(1, s)
	}
	f.Fuzz(func(t *testing.T, i int, s string) {
		inv := fourGPUs()
		if err := inv.ParseLinksRow(i, s); err != nil {
			return
		}
		back := fourGPUs()
		if err := back.ParseLinksRow(i, inv.FormatLinksRow(i)); err != nil {
			t.Fatalf("row %d %q -> %q: %v", i, s, inv.FormatLinksRow(i), err)
		}
		if back.FormatLinksRow(i) != inv.FormatLinksRow(i) {
			t.Fatalf("row %d %q not stable", i, s)
		}
	})
}
