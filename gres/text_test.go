package gres_test

import (
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
)

// textRoundTrip encodes v as text and JSON, decodes both into fresh values
// of v's type and returns them.
func textRoundTrip[T any, P interface {
	*T
	encoding.TextUnmarshaler
}](t *testing.T, v T) (fromText, fromJSON T) {
	t.Helper()
	m, ok := any(v).(encoding.TextMarshaler)
	require.True(t, ok, "%T has no MarshalText", v)
	b, err := m.MarshalText()
	require.NoError(t, err)
	require.NoError(t, P(&fromText).UnmarshalText(b), "decoding %q", b)
	j, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(j, &fromJSON), "decoding %s", j)
	return fromText, fromJSON
}

func TestGRESEnumsTextRoundTrip(t *testing.T) {
	for _, m := range []gres.BillingMode{gres.BillingSum, gres.BillingMaxTRES, gres.BillingMaxTRESGRES} {
		a, b := textRoundTrip(t, m)
		assert.Equal(t, m, a)
		assert.Equal(t, m, b)
	}
	for _, o := range []gres.DeviceOrder{gres.NVLinkFirst, gres.AffinityFirst} {
		a, b := textRoundTrip(t, o)
		assert.Equal(t, o, a)
		assert.Equal(t, o, b)
	}
	for l := gres.PCIeUnknown; l <= gres.PCIeBoard; l++ {
		a, b := textRoundTrip(t, l)
		assert.Equal(t, l, a)
		assert.Equal(t, l, b)
	}
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
		a, b := textRoundTrip(t, q)
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
		a, b := textRoundTrip(t, c)
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

// fuzzText checks the text contract on arbitrary input: decoding either
// fails or gives a value whose encoding decodes to the same value.
func fuzzText[T any, P interface {
	*T
	encoding.TextUnmarshaler
}](t *testing.T, s string, equal func(a, b T) bool) {
	var v T
	if P(&v).UnmarshalText([]byte(s)) != nil {
		return
	}
	b, err := any(v).(encoding.TextMarshaler).MarshalText()
	if err != nil {
		t.Fatalf("%q decoded to %v, which does not encode: %v", s, v, err)
	}
	var w T
	if err := P(&w).UnmarshalText(b); err != nil {
		t.Fatalf("%q → %q does not decode: %v", s, b, err)
	}
	if !equal(v, w) {
		t.Fatalf("%q → %v → %q → %v", s, v, b, w)
	}
}

func FuzzVectorText(f *testing.F) {
	for _, s := range []string{"", "cpu=4,mem=16G,tres5=2", "mem=1K", "CPU=1, Node=2", "tres7=1P", "billing=0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzText[gres.Vector](t, s, gres.Vector.Equal)
	})
}

func FuzzRequestText(f *testing.F) {
	for _, s := range []string{"gpu:h100:2", "shard:4", "gpu:0", "GPU:-3", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzText[gres.Request](t, s, func(a, b gres.Request) bool { return a == b })
	})
}

func FuzzGRESEnumText(f *testing.F) {
	for _, s := range []string{"sum", "MAX_TRES", "nvlink-first", "PIX", "board", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.ToValidUTF8(s, "")
		fuzzText[gres.BillingMode](t, s, func(a, b gres.BillingMode) bool { return a == b })
		fuzzText[gres.DeviceOrder](t, s, func(a, b gres.DeviceOrder) bool { return a == b })
		fuzzText[gres.PCIeLevel](t, s, func(a, b gres.PCIeLevel) bool { return a == b })
		fuzzText[gres.CoreSet](t, s, func(a, b gres.CoreSet) bool { return reflect.DeepEqual(a.AppendTo(nil), b.AppendTo(nil)) })
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
