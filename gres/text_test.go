package gres_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/texttest"
)

func TestGRESEnumsTextRoundTrip(t *testing.T) {
	texttest.Values(t, gres.BillingSum, gres.BillingMaxTRES, gres.BillingMaxTRESGRES)
	texttest.Values(t, gres.NVLinkFirst, gres.AffinityFirst)
	texttest.Values(t, gres.PCIeUnknown, gres.PCIeSYS, gres.PCIeNODE, gres.PCIePHB, gres.PCIePXB, gres.PCIePIX, gres.PCIeBoard)
	j, err := json.Marshal(struct {
		M gres.BillingMode
		O gres.DeviceOrder
		L gres.PCIeLevel
	}{gres.BillingMaxTRES, gres.AffinityFirst, gres.PCIePIX})
	require.NoError(t, err)
	assert.JSONEq(t, `{"M":"MAX_TRES","O":"affinity-first","L":"PIX"}`, string(j))
}

func TestGRESEnumsRejectUnknownNames(t *testing.T) {
	var m gres.BillingMode
	err := m.UnmarshalText([]byte("MAX_GPU"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"MAX_GPU"`)
	var o gres.DeviceOrder
	err = o.UnmarshalText([]byte("socket-first"))
	require.ErrorIs(t, err, gres.ErrInvalidRequest)
	assert.Contains(t, err.Error(), "DeviceOrder")
	var l gres.PCIeLevel
	err = l.UnmarshalText([]byte("PCI"))
	require.ErrorIs(t, err, gres.ErrInvalidInventory)
	assert.Contains(t, err.Error(), `PCIeLevel "PCI"`)
	_, err = gres.BillingMode(9).MarshalText()
	require.Error(t, err)
	_, err = gres.PCIeLevel(42).MarshalText()
	require.Error(t, err)
	var parsed gres.DeviceOrder
	require.NoError(t, parsed.UnmarshalText([]byte("AFFINITY-FIRST")))
	assert.Equal(t, gres.AffinityFirst, parsed, "case-insensitive")
}

func TestRequestTextKeepsCaseAndCount(t *testing.T) {
	for _, q := range []gres.Request{
		{Name: "gpu", Type: "h100", Count: 2},
		{Name: "shard", Count: 4},
		{Name: "GPU", Type: "A100_3g.20gb", Count: 0},
		{Name: "gpu", Count: -1}, // invalid, but encoded as given: Submit judges it
	} {
		a, b := texttest.RoundTrip(t, q)
		assert.Equal(t, q, a)
		assert.Equal(t, q, b)
	}
	j, err := json.Marshal([]gres.Request{{Name: "gpu", Type: "h100", Count: 2}})
	require.NoError(t, err)
	assert.Equal(t, `["gpu:h100:2"]`, string(j))
	_, err = gres.Request{Name: "gpu:x", Count: 1}.MarshalText()
	require.ErrorIs(t, err, gres.ErrInvalidGRES)
	var q gres.Request
	for _, bad := range []string{"", "gpu", "gpu:x:y:1", ":2", "gpu::2", "gpu:2k", "gpu,x:1"} {
		assert.Error(t, q.UnmarshalText([]byte(bad)), "%q", bad)
	}
}

func TestCoreSetTextRoundTrip(t *testing.T) {
	for _, ids := range [][]int{nil, {0}, {0, 1, 2, 3, 8}, {63, 64, 65, 1000}} {
		c, err := gres.CoreSetOf(ids...)
		require.NoError(t, err)
		a, b := texttest.RoundTrip(t, c)
		assert.True(t, c.Equal(a), "%v → %v", c, a)
		assert.True(t, c.Equal(b), "%v → %v", c, b)
	}
	c, err := gres.CoreSetOf(0, 1, 2, 3, 8)
	require.NoError(t, err)
	j, err := json.Marshal(c)
	require.NoError(t, err)
	assert.Equal(t, `"0-3,8"`, string(j))
}

func TestVectorTextWithoutRegistry(t *testing.T) {
	r := newRegistry(t)
	v, err := r.ParseTRES("cpu=4,mem=16G,node=1,gres/gpu=2")
	require.NoError(t, err)
	b, err := v.MarshalText()
	require.NoError(t, err)
	gpu := r.MustLookup("gres/gpu")
	assert.Equal(t, "cpu=4,mem=16G,node=1,"+gres.TRESName(gpu)+"=2", string(b))
	var back gres.Vector
	require.NoError(t, back.UnmarshalText(b))
	assert.True(t, v.Equal(back), "%v → %v", v, back)
	assert.Equal(t, int64(2), back.At(gpu))

	require.NoError(t, back.UnmarshalText([]byte("cpu=1")))
	assert.Len(t, back, 5, "the built-in TRES are always there to index")
	require.NoError(t, back.UnmarshalText(nil))
	assert.Nil(t, back)
	j, err := json.Marshal(struct{ V gres.Vector }{gres.Vector{1, 1024}})
	require.NoError(t, err)
	assert.Equal(t, `{"V":"cpu=1,mem=1G"}`, string(j))

	for _, bad := range []string{"gres/gpu=2", "tres01=1", "cpu=1,cpu=2", "cpu=-1", "tres99999999=1", "mem", "cpu=1.5"} {
		err := back.UnmarshalText([]byte(bad))
		require.Error(t, err, "%q", bad)
		var pe *gres.ParseError
		assert.True(t, errors.As(err, &pe), "%q: %v", bad, err)
	}
	_, err = gres.Vector{-1}.MarshalText()
	require.ErrorIs(t, err, gres.ErrOverflow)
}

func TestTRESNameRoundTrip(t *testing.T) {
	for id := gres.ID(0); id < 40; id++ {
		got, ok := gres.ParseTRESName(gres.TRESName(id))
		require.True(t, ok, "%d", id)
		assert.Equal(t, id, got)
	}
	for _, bad := range []string{"", "tres", "tres-1", "tres01", "gres/gpu", "cpus"} {
		_, ok := gres.ParseTRESName(bad)
		assert.False(t, ok, "%q", bad)
	}
}

func FuzzVectorText(f *testing.F) {
	for _, s := range []string{"", "cpu=4,mem=16G,tres5=2", "mem=1K", "CPU=1, Node=2", "tres7=1P", "billing=0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		texttest.Fuzz[gres.Vector](t, s)
	})
}

func FuzzRequestText(f *testing.F) {
	for _, s := range []string{"gpu:h100:2", "shard:4", "gpu:0", "GPU:-3", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		texttest.Fuzz[gres.Request](t, s)
	})
}

func FuzzGRESEnumText(f *testing.F) {
	for _, s := range []string{"sum", "MAX_TRES", "nvlink-first", "PIX", "board", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.ToValidUTF8(s, "")
		texttest.Fuzz[gres.BillingMode](t, s)
		texttest.Fuzz[gres.DeviceOrder](t, s)
		texttest.Fuzz[gres.PCIeLevel](t, s)
		texttest.Fuzz[gres.CoreSet](t, s)
	})
}

func TestRegistryTextRebuildsSameIDs(t *testing.T) {
	r := newRegistry(t)
	b, err := r.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "cpu,mem,energy,node,billing,gres/gpu,gres/gpu:h100,gres/gpu:a100,gres/shard,gres/mps,license/matlab", string(b))
	j, err := json.Marshal(struct{ R *gres.Registry }{r})
	require.NoError(t, err)
	var back struct{ R *gres.Registry }
	require.NoError(t, json.Unmarshal(j, &back))
	assert.Equal(t, r.Names(), back.R.Names())
	id, err := back.R.Register("gres/nic")
	require.NoError(t, err, "a decoded registry can grow")
	assert.Equal(t, gres.ID(r.Len()), id)
	for _, bad := range []string{"", "cpu,mem", "mem,cpu,energy,node,billing", "cpu,mem,energy,node,billing,gres/gpu:h100",
		"cpu,mem,energy,node,billing,gres/gpu,gres/gpu", "cpu,mem,energy,node,billing,GRES/gpu", "cpu,mem,energy,node,billing,foo"} {
		var reg gres.Registry
		assert.Error(t, reg.UnmarshalText([]byte(bad)), "%q", bad)
	}
}

func FuzzRegistryText(f *testing.F) {
	f.Add("cpu,mem,energy,node,billing,gres/gpu,gres/gpu:h100,license/x")
	f.Add("cpu,mem,energy,node,billing")
	f.Fuzz(func(t *testing.T, s string) {
		var r gres.Registry
		if r.UnmarshalText([]byte(s)) != nil {
			return
		}
		b, err := r.MarshalText()
		require.NoError(t, err)
		require.Equal(t, s, string(b), "the form is canonical")
	})
}
