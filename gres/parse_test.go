package gres_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
)

func newRegistry(t testing.TB) *gres.Registry {
	t.Helper()
	r, err := gres.NewRegistry("gres/gpu", "gres/gpu:h100", "gres/gpu:a100", "gres/shard", "gres/mps", "license/matlab")
	require.NoError(t, err)
	return r
}

// vec builds a vector from name=count pairs.
func vec(t testing.TB, r *gres.Registry, kv map[string]int64) gres.Vector {
	t.Helper()
	v := r.NewVector()
	for k, n := range kv {
		id, ok := r.Lookup(k)
		require.True(t, ok, k)
		v[id] = n
	}
	return v
}

func TestParseTRES(t *testing.T) {
	r := newRegistry(t)
	tests := []struct {
		in        string
		want      map[string]int64
		canonical string
	}{
		{"", nil, ""},
		{"  ", nil, ""},
		{"cpu=4", map[string]int64{"cpu": 4}, "cpu=4"},
		{"cpu=4,mem=16G,node=1,billing=10,gres/gpu=2,gres/gpu:h100=2,license/matlab=1",
			map[string]int64{"cpu": 4, "mem": 16384, "node": 1, "billing": 10, "gres/gpu": 2, "gres/gpu:h100": 2, "license/matlab": 1},
			"cpu=4,mem=16G,node=1,billing=10,gres/gpu=2,gres/gpu:h100=2,license/matlab=1"},
		{"gres/gpu:h100=2,CPU=4", map[string]int64{"cpu": 4, "gres/gpu:h100": 2}, "cpu=4,gres/gpu:h100=2"},
		{" Mem = 1536M , GRES/GPU:H100=1 ", map[string]int64{"mem": 1536, "gres/gpu:h100": 1}, "mem=1536M,gres/gpu:h100=1"},
		{"mem=16384", map[string]int64{"mem": 16384}, "mem=16G"},
		{"mem=1K", map[string]int64{"mem": 1}, "mem=1M"},
		{"mem=1025K", map[string]int64{"mem": 2}, "mem=2M"},
		{"mem=2048k", map[string]int64{"mem": 2}, "mem=2M"},
		{"mem=0K", nil, ""},
		{"mem=3T", map[string]int64{"mem": 3 << 20}, "mem=3T"},
		{"mem=2p", map[string]int64{"mem": 2 << 30}, "mem=2P"},
		{"mem=1048576P", map[string]int64{"mem": gres.MaxCount}, "mem=1048576P"},
		{"mem=1024P", map[string]int64{"mem": 1 << 40}, "mem=1024P"},
		{"mem=1000M", map[string]int64{"mem": 1000}, "mem=1000M"},
		{"gres/mps=1K", map[string]int64{"gres/mps": 1024}, "gres/mps=1024"},
		{"gres/shard=2m", map[string]int64{"gres/shard": 2 << 20}, "gres/shard=2097152"},
		{"cpu=0,node=0", nil, ""},
		{"cpu=007", map[string]int64{"cpu": 7}, "cpu=7"},
		{"energy=5", map[string]int64{"energy": 5}, "energy=5"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, err := r.ParseTRES(tt.in)
			require.NoError(t, err)
			assert.Len(t, v, r.Len())
			assert.True(t, vec(t, r, tt.want).Equal(v), "got %v", v)
			got := r.FormatTRES(v)
			assert.Equal(t, tt.canonical, got)
			back, err := r.ParseTRES(got)
			require.NoError(t, err)
			assert.True(t, back.Equal(v), "parse(format(v)) == v")
			assert.Equal(t, got, r.FormatTRES(back), "canonical form is a fixed point")
		})
	}
}

func TestParseTRESErrors(t *testing.T) {
	r := newRegistry(t)
	tests := []struct {
		in     string
		token  string
		offset int
		want   error
	}{
		{"cpu=4,foo=2", "foo=2", 6, gres.ErrUnknownTRES},
		{"gres/nic=1", "gres/nic=1", 0, gres.ErrUnknownTRES},
		{"gres/gpu:v100=1", "gres/gpu:v100=1", 0, gres.ErrUnknownTRES},
		{"license/ansys=1", "license/ansys=1", 0, gres.ErrUnknownTRES},
		{"fs/disk=1", "fs/disk=1", 0, gres.ErrUnknownTRES},
		{"cpu", "cpu", 0, gres.ErrInvalidTRES},
		{"cpu=", "cpu=", 0, gres.ErrInvalidTRES},
		{"=4", "=4", 0, gres.ErrInvalidTRES},
		{"cpu=-1", "cpu=-1", 0, gres.ErrInvalidTRES},
		{"cpu=+1", "cpu=+1", 0, gres.ErrInvalidTRES},
		{"cpu=1.5", "cpu=1.5", 0, gres.ErrInvalidTRES},
		{"mem=1.5G", "mem=1.5G", 0, gres.ErrInvalidTRES},
		{"mem=16GB", "mem=16GB", 0, gres.ErrInvalidTRES},
		{"mem=G", "mem=G", 0, gres.ErrInvalidTRES},
		{"cpu=4x", "cpu=4x", 0, gres.ErrInvalidTRES},
		{"cpu=4,,mem=1", "", 6, gres.ErrInvalidTRES},
		{"cpu=4,", "", 6, gres.ErrInvalidTRES},
		{"cpu=4,CPU=5", "CPU=5", 6, gres.ErrInvalidTRES},
		{"cpu=1125899906842625", "cpu=1125899906842625", 0, gres.ErrOverflow},
		{"cpu=99999999999999999999999", "cpu=99999999999999999999999", 0, gres.ErrOverflow},
		{"cpu=1048577G", "cpu=1048577G", 0, gres.ErrOverflow},
		{"mem=1048577P", "mem=1048577P", 0, gres.ErrOverflow},
		{"gres/gp u=1", "gres/gp u=1", 0, gres.ErrInvalidTRES},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := r.ParseTRES(tt.in)
			requireParseError(t, err, tt.want, "TRES", tt.token, tt.offset)
			assert.Contains(t, err.Error(), tt.in)
		})
	}
}

func TestParseTRESRegister(t *testing.T) {
	r := newRegistry(t)
	n := r.Len()
	_, err := r.ParseTRESRegister("gres/nic=1,fs/disk=3")
	require.ErrorIs(t, err, gres.ErrUnknownTRES)
	assert.Equal(t, n, r.Len(), "nothing registered on error")
	_, err = r.ParseTRESRegister("gres/nic=1,cpu=x")
	require.ErrorIs(t, err, gres.ErrInvalidTRES)
	assert.Equal(t, n, r.Len(), "nothing registered on error")

	v, err := r.ParseTRESRegister("cpu=2,gres/gpu:v100=3,license/ansys=1,gres/gpu:V100=0")
	require.Error(t, err, "same name twice, case-insensitively")
	assert.Equal(t, n, r.Len())

	v, err = r.ParseTRESRegister("cpu=2,gres/gpu:v100=3,license/ansys=1")
	require.NoError(t, err)
	assert.Equal(t, n+2, r.Len())
	assert.Equal(t, "cpu=2,gres/gpu:v100=3,license/ansys=1", r.FormatTRES(v))
	_, ok := r.Lookup("gres/gpu:v100")
	assert.True(t, ok)

	// Known names behave exactly like ParseTRES.
	w, err := r.ParseTRESRegister("cpu=1")
	require.NoError(t, err)
	assert.Equal(t, "cpu=1", r.FormatTRES(w))
}

func TestFormatTRESForeignID(t *testing.T) {
	r := newRegistry(t)
	v := r.NewVector()
	v = append(v, 0, 3)
	v[gres.CPU] = 1
	assert.Equal(t, "cpu=1,tres#12=3", r.FormatTRES(v))
	_, err := r.ParseTRES(r.FormatTRES(v))
	assert.ErrorIs(t, err, gres.ErrUnknownTRES)
	assert.Equal(t, "", r.FormatTRES(nil))
}

func TestParseGRES(t *testing.T) {
	tests := []struct {
		in        string
		want      []gres.Request
		canonical string
	}{
		{"", nil, ""},
		{"none", nil, ""},
		{" NONE ", nil, ""},
		{"gpu", []gres.Request{{Name: "gpu", Count: 1}}, "gpu:1"},
		{"gpu:2", []gres.Request{{Name: "gpu", Count: 2}}, "gpu:2"},
		{"gpu:h100", []gres.Request{{Name: "gpu", Type: "h100", Count: 1}}, "gpu:h100:1"},
		{"gpu:h100:2", []gres.Request{{Name: "gpu", Type: "h100", Count: 2}}, "gpu:h100:2"},
		{"GPU:H100:2", []gres.Request{{Name: "gpu", Type: "h100", Count: 2}}, "gpu:h100:2"},
		{"gpu:h100:2,shard:4,mps:100", []gres.Request{
			{Name: "gpu", Type: "h100", Count: 2}, {Name: "mps", Count: 100}, {Name: "shard", Count: 4}},
			"gpu:h100:2,mps:100,shard:4"},
		{"gpu:a100:1,gpu:h100:1,gpu:1", []gres.Request{
			{Name: "gpu", Count: 1}, {Name: "gpu", Type: "a100", Count: 1}, {Name: "gpu", Type: "h100", Count: 1}},
			"gpu:1,gpu:a100:1,gpu:h100:1"},
		{"gres/gpu:h100=2", []gres.Request{{Name: "gpu", Type: "h100", Count: 2}}, "gpu:h100:2"},
		{"gres/gpu=2", []gres.Request{{Name: "gpu", Count: 2}}, "gpu:2"},
		{"gres/gpu:h100:3", []gres.Request{{Name: "gpu", Type: "h100", Count: 3}}, "gpu:h100:3"},
		{"GRES/gpu", []gres.Request{{Name: "gpu", Count: 1}}, "gpu:1"},
		{"gpu:a100_3g.20gb:2", []gres.Request{{Name: "gpu", Type: "a100_3g.20gb", Count: 2}}, "gpu:a100_3g.20gb:2"},
		{"gpu:1g.10gb", []gres.Request{{Name: "gpu", Type: "1g.10gb", Count: 1}}, "gpu:1g.10gb:1"},
		{"mps:1K", []gres.Request{{Name: "mps", Count: 1024}}, "mps:1024"},
		{"gpu:0", []gres.Request{{Name: "gpu", Count: 0}}, "gpu:0"},
		{" gpu:2 , shard:1 ", []gres.Request{{Name: "gpu", Count: 2}, {Name: "shard", Count: 1}}, "gpu:2,shard:1"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := gres.ParseGRES(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.canonical, gres.FormatGRES(got))
			back, err := gres.ParseGRES(gres.FormatGRES(got))
			require.NoError(t, err)
			assert.Equal(t, got, back)
		})
	}
}

func TestParseGRESErrors(t *testing.T) {
	tests := []struct {
		in     string
		token  string
		offset int
		want   error
	}{
		{"gpu:", "gpu:", 0, gres.ErrInvalidGRES},
		{":2", ":2", 0, gres.ErrInvalidGRES},
		{"gpu::2", "gpu::2", 0, gres.ErrInvalidGRES},
		{"gpu:h100:", "gpu:h100:", 0, gres.ErrInvalidGRES},
		{"gpu:h100:2:x", "gpu:h100:2:x", 0, gres.ErrInvalidGRES},
		{"gpu:h100:two", "gpu:h100:two", 0, gres.ErrInvalidGRES},
		{"gpu:h100:-1", "gpu:h100:-1", 0, gres.ErrInvalidGRES},
		{"gpu:2,gpu:3", "gpu:3", 6, gres.ErrInvalidGRES},
		{"gpu:h100:1,GPU:H100:2", "GPU:H100:2", 11, gres.ErrInvalidGRES},
		{"gpu:2,,shard:1", "", 6, gres.ErrInvalidGRES},
		{"gpu:2,", "", 6, gres.ErrInvalidGRES},
		{"2gpu", "2gpu", 0, gres.ErrInvalidGRES},
		{"g pu", "g pu", 0, gres.ErrInvalidGRES},
		{"gpu:h1 00", "gpu:h1 00", 0, gres.ErrInvalidGRES},
		{"gpu:h100:2(S:0)", "gpu:h100:2(S:0)", 0, gres.ErrInvalidGRES},
		{"gres/gpu:=2", "gres/gpu:=2", 0, gres.ErrInvalidGRES},
		{"gres/gpu=x", "gres/gpu=x", 0, gres.ErrInvalidGRES},
		{"gres/=2", "gres/=2", 0, gres.ErrInvalidGRES},
		{"gpu:2000000P", "gpu:2000000P", 0, gres.ErrOverflow},
		{"shard:9999999999999999999", "shard:9999999999999999999", 0, gres.ErrOverflow},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := gres.ParseGRES(tt.in)
			requireParseError(t, err, tt.want, "GRES", tt.token, tt.offset)
		})
	}
}

func TestRequestVector(t *testing.T) {
	r := newRegistry(t)
	reqs, err := gres.ParseGRES("gpu:h100:2,shard:4")
	require.NoError(t, err)
	v, err := r.RequestVector(reqs)
	require.NoError(t, err)
	assert.Equal(t, "gres/gpu=2,gres/gpu:h100=2,gres/shard=4", r.FormatTRES(v), "typed counts in both")

	reqs, err = gres.ParseGRES("gpu:3")
	require.NoError(t, err)
	v, err = r.RequestVector(reqs)
	require.NoError(t, err)
	assert.Equal(t, "gres/gpu=3", r.FormatTRES(v), "untyped only in gres/gpu")

	reqs, err = gres.ParseGRES("gpu:1,gpu:a100:2,gpu:h100:1")
	require.NoError(t, err)
	v, err = r.RequestVector(reqs)
	require.NoError(t, err)
	assert.Equal(t, "gres/gpu=4,gres/gpu:h100=1,gres/gpu:a100=2", r.FormatTRES(v))

	v, err = r.RequestVector(nil)
	require.NoError(t, err)
	assert.True(t, v.IsZero())

	for _, tt := range []struct {
		reqs []gres.Request
		want error
		msg  string
	}{
		{[]gres.Request{{Name: "nic", Count: 1}}, gres.ErrUnknownTRES, "gres/nic"},
		{[]gres.Request{{Name: "gpu", Type: "v100", Count: 1}}, gres.ErrUnknownTRES, "gres/gpu:v100"},
		{[]gres.Request{{Name: "gpu", Count: -1}}, gres.ErrOverflow, "-1"},
		{[]gres.Request{{Name: "", Count: 1}}, gres.ErrInvalidGRES, `""`},
		{[]gres.Request{{Name: "gpu", Type: "a b", Count: 1}}, gres.ErrInvalidGRES, "a b"},
		{[]gres.Request{{Name: "gpu", Type: "h100", Count: gres.MaxCount}, {Name: "gpu", Type: "a100", Count: 1}}, gres.ErrOverflow, "gpu:a100:1"},
	} {
		_, err := r.RequestVector(tt.reqs)
		assert.ErrorIs(t, err, tt.want, tt.msg)
		assert.ErrorContains(t, err, tt.msg)
	}
}

func TestRequestStringAndTRESName(t *testing.T) {
	q := gres.Request{Name: "gpu", Type: "h100", Count: 2}
	assert.Equal(t, "gpu:h100:2", q.String())
	assert.Equal(t, "gres/gpu:h100", q.TRESName())
	assert.Equal(t, "gres/shard", gres.Request{Name: "shard", Count: 1}.TRESName())
	assert.Equal(t, "", gres.FormatGRES(nil))
	assert.Equal(t, "shard:1,gpu:2", gres.FormatGRES([]gres.Request{{Name: "shard", Count: 1}, {Name: "gpu", Count: 2}}), "given order kept")
}

func TestBillingWeights(t *testing.T) {
	r := newRegistry(t)
	job := vec(t, r, map[string]int64{"cpu": 16, "mem": 64 * 1024, "node": 2, "gres/gpu": 4, "gres/gpu:h100": 4, "license/matlab": 2, "billing": 1000})

	none, err := r.ParseBillingWeights("")
	require.NoError(t, err)
	assert.True(t, none.IsZero())
	for _, m := range []gres.BillingMode{gres.BillingSum, gres.BillingMaxTRES, gres.BillingMaxTRESGRES} {
		assert.Equal(t, 16.0, none.Billable(job, m), "no weights bills CPUs in mode %v", m)
	}
	var zero gres.BillingWeights
	assert.EqualValues(t, 16, zero.Billing(job, gres.BillingSum))

	w, err := r.ParseBillingWeights("CPU=1.0,Mem=0.25G,GRES/gpu=2.0,gres/gpu:h100=3,license/matlab=5,Node=0.5")
	require.NoError(t, err)
	assert.InDelta(t, 0.25/1024, w.Weight(gres.Mem), 1e-15)
	// cpu 16, mem 64 GiB × 0.25 = 16, node 1, gres/gpu 8, gres/gpu:h100 12, license 10.
	assert.InDelta(t, 16+16+1+8+12+10, w.Billable(job, gres.BillingSum), 1e-9)
	assert.InDelta(t, 16+10, w.Billable(job, gres.BillingMaxTRES), 1e-9, "max(cpu 16, mem 16, node 1, gpu 8, h100 12) + licenses")
	assert.InDelta(t, (8+12)+16+10, w.Billable(job, gres.BillingMaxTRESGRES), 1e-9, "Σgres + max(cpu, mem, node) + licenses")
	assert.EqualValues(t, 63, w.Billing(job, gres.BillingSum))
	assert.Equal(t, "cpu=1,mem=0.25G,node=0.5,gres/gpu=2,gres/gpu:h100=3,license/matlab=5", w.String())
	again, err := r.ParseBillingWeights(w.String())
	require.NoError(t, err)
	assert.Equal(t, w, again, "String round-trips")

	// Typed weights never apply to untyped requests.
	typedOnly, err := r.ParseBillingWeights("gres/gpu:h100=10")
	require.NoError(t, err)
	untyped := vec(t, r, map[string]int64{"cpu": 1, "gres/gpu": 2})
	assert.Equal(t, 0.0, typedOnly.Billable(untyped, gres.BillingSum))
	typed := vec(t, r, map[string]int64{"cpu": 1, "gres/gpu": 2, "gres/gpu:h100": 2})
	assert.Equal(t, 20.0, typedOnly.Billable(typed, gres.BillingSum))

	// MAX_TRES picks a GPU-dominated job's GPUs.
	gpuHeavy, err := r.ParseBillingWeights("cpu=1,gres/gpu=32")
	require.NoError(t, err)
	j := vec(t, r, map[string]int64{"cpu": 8, "gres/gpu": 1})
	assert.Equal(t, 32.0, gpuHeavy.Billable(j, gres.BillingMaxTRES))
	assert.Equal(t, 40.0, gpuHeavy.Billable(j, gres.BillingSum))
	assert.Equal(t, 40.0, gpuHeavy.Billable(j, gres.BillingMaxTRESGRES))

	// Suffixes.
	for _, tt := range []struct {
		in   string
		id   gres.ID
		want float64
	}{
		{"mem=2", gres.Mem, 2},
		{"mem=2M", gres.Mem, 2},
		{"mem=1K", gres.Mem, 1024},
		{"mem=1G", gres.Mem, 1.0 / 1024},
		{"mem=1T", gres.Mem, 1.0 / (1 << 20)},
		{"mem=1P", gres.Mem, 1.0 / (1 << 30)},
		{"cpu=1K", gres.CPU, 1.0 / 1024},
		{"cpu=.5", gres.CPU, 0.5},
		{"cpu=0", gres.CPU, 0},
	} {
		b, err := r.ParseBillingWeights(tt.in)
		require.NoError(t, err, tt.in)
		assert.InDelta(t, tt.want, b.Weight(tt.id), 1e-18, tt.in)
	}

	// Clamping and truncation.
	huge, err := r.ParseBillingWeights("cpu=1000000000000")
	require.NoError(t, err)
	assert.Equal(t, gres.MaxCount, huge.Billing(vec(t, r, map[string]int64{"cpu": gres.MaxCount}), gres.BillingSum))
	frac, err := r.ParseBillingWeights("cpu=0.75")
	require.NoError(t, err)
	assert.EqualValues(t, 2, frac.Billing(vec(t, r, map[string]int64{"cpu": 3}), gres.BillingSum), "2.25 truncates")
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = w.Billable(job, gres.BillingMaxTRES) }))
}

func TestBillingWeightsErrors(t *testing.T) {
	r := newRegistry(t)
	for _, tt := range []struct {
		in, token string
		want      error
	}{
		{"cpu=1,gpu=2", "gpu=2", gres.ErrUnknownTRES},
		{"gres/nic=1", "gres/nic=1", gres.ErrUnknownTRES},
		{"billing=1", "billing=1", gres.ErrInvalidTRES},
		{"cpu", "cpu", gres.ErrInvalidTRES},
		{"cpu=", "cpu=", gres.ErrInvalidTRES},
		{"cpu=-1", "cpu=-1", gres.ErrInvalidTRES},
		{"cpu=1e3", "cpu=1e3", gres.ErrInvalidTRES},
		{"cpu=NaN", "cpu=NaN", gres.ErrInvalidTRES},
		{"cpu=inf", "cpu=inf", gres.ErrInvalidTRES},
		{"cpu=1..2", "cpu=1..2", gres.ErrInvalidTRES},
		{"cpu=.", "cpu=.", gres.ErrInvalidTRES},
		{"mem=1GB", "mem=1GB", gres.ErrInvalidTRES},
		{"cpu=1,CPU=2", "CPU=2", gres.ErrInvalidTRES},
		{"cpu=1,", "", gres.ErrInvalidTRES},
	} {
		_, err := r.ParseBillingWeights(tt.in)
		require.ErrorIs(t, err, tt.want, tt.in)
		var pe *gres.ParseError
		require.True(t, errors.As(err, &pe), tt.in)
		assert.Equal(t, tt.token, pe.Token, tt.in)
	}
}

func TestBillingMode(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want gres.BillingMode
	}{{"", gres.BillingSum}, {"sum", gres.BillingSum}, {"max_tres", gres.BillingMaxTRES}, {" MAX_TRES_GRES ", gres.BillingMaxTRESGRES}} {
		m, err := gres.ParseBillingMode(tt.in)
		require.NoError(t, err)
		assert.Equal(t, tt.want, m)
		back, err := gres.ParseBillingMode(m.String())
		require.NoError(t, err)
		assert.Equal(t, m, back)
	}
	_, err := gres.ParseBillingMode("MAX")
	assert.ErrorIs(t, err, gres.ErrInvalidTRES)
	assert.Equal(t, "BillingMode(9)", gres.BillingMode(9).String())
}

func TestCoreSet(t *testing.T) {
	for _, tt := range []struct {
		in, canonical string
		count         int
	}{
		{"", "", 0},
		{"0", "0", 1},
		{"0-3,8,10-11", "0-3,8,10-11", 7},
		{"3,2,1,0", "0-3", 4},
		{"0-63,64-127", "0-127", 128},
		{" 5 , 7-7 ", "5,7", 2},
		{"65535", "65535", 1},
	} {
		c, err := gres.ParseCoreSet(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.canonical, c.String(), tt.in)
		assert.Equal(t, tt.count, c.Count(), tt.in)
		assert.Equal(t, tt.count == 0, c.IsEmpty())
		back, err := gres.ParseCoreSet(c.String())
		require.NoError(t, err)
		assert.True(t, back.Equal(c))
	}
	for _, bad := range []string{"-1", "1-", "3-1", "x", "1,,2", "65536", "0-65536", "1 2", "100000"} {
		_, err := gres.ParseCoreSet(bad)
		require.ErrorIs(t, err, gres.ErrInvalidTRES, bad)
		var pe *gres.ParseError
		assert.True(t, errors.As(err, &pe), bad)
	}
	a, err := gres.CoreRange(0, 63)
	require.NoError(t, err)
	b, err := gres.CoreSetOf(63, 64, 200)
	require.NoError(t, err)
	assert.True(t, a.Intersects(b))
	assert.True(t, a.Has(63))
	assert.False(t, a.Has(64))
	assert.False(t, a.Has(-1))
	u := a.Union(b)
	assert.Equal(t, "0-64,200", u.String())
	assert.Equal(t, []int{63, 64, 200}, b.AppendTo(nil))
	c, err := gres.CoreRange(64, 127)
	require.NoError(t, err)
	assert.False(t, a.Intersects(c))
	assert.False(t, a.Intersects(gres.CoreSet{}))
	_, err = gres.CoreRange(5, 4)
	assert.ErrorIs(t, err, gres.ErrInvalidTRES)
	_, err = gres.CoreRange(-1, 4)
	assert.ErrorIs(t, err, gres.ErrInvalidTRES)
	_, err = gres.CoreSetOf(1, gres.MaxCoreID+1)
	assert.ErrorIs(t, err, gres.ErrInvalidTRES)
	empty, err := gres.CoreSetOf()
	require.NoError(t, err)
	assert.True(t, empty.Equal(gres.CoreSet{}))
}

// requireParseError checks that err wraps want and is a *gres.ParseError
// of the given kind naming token at offset.
func requireParseError(t *testing.T, err, want error, what, token string, offset int) {
	t.Helper()
	require.ErrorIs(t, err, want)
	var pe *gres.ParseError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, token, pe.Token)
	assert.Equal(t, offset, pe.Offset)
	assert.Equal(t, what, pe.What)
}

// TestGRESNamesAndTypesOneRule checks that names and types are validated by
// one rule wherever they enter: a name with a separator ("gpu:a100") and a
// type that reads as a count ("gpu:2:3", type "2") are rejected by
// Request.Validate, ParseGRES, RequestVector and Inventory.Validate alike.
func TestGRESNamesAndTypesOneRule(t *testing.T) {
	bad := []gres.Request{
		{Name: "gpu:a100", Count: 2},
		{Name: "gpu,shard", Count: 1},
		{Name: "gres/gpu", Count: 1},
		{Name: "gpu=2", Count: 1},
		{Name: "gpu", Type: "2", Count: 3},
		{Name: "gpu", Type: "4k", Count: 1},
		{Name: "gpu", Type: "a100:2", Count: 1},
		{Name: "2gpu", Count: 1},
	}
	r := newRegistry(t)
	for _, q := range bad {
		err := q.Validate()
		require.ErrorIs(t, err, gres.ErrInvalidGRES, "%#v", q)
		require.ErrorIs(t, gres.ValidateName(q.Name, q.Type), gres.ErrInvalidGRES, "%#v", q)
		_, err = r.RequestVector([]gres.Request{q})
		require.ErrorIs(t, err, gres.ErrInvalidGRES, "RequestVector %#v", q)
		inv := gres.Inventory{Devices: []gres.Device{{Index: 0, Name: q.Name, Type: q.Type, NUMA: -1, Socket: -1}}}
		require.ErrorIs(t, inv.Validate(), gres.ErrInvalidInventory, "inventory %#v", q)
	}
	for _, s := range []string{"gpu:2:3", "gpu:4k:1", "gres/gpu:2=3", "gres/gpu:2:3"} {
		_, err := gres.ParseGRES(s)
		require.ErrorIs(t, err, gres.ErrInvalidGRES, s)
	}
	for _, ok := range []gres.Request{
		{Name: "gpu", Type: "a100_3g.20gb", Count: 1},
		{Name: "gpu", Type: "1g.10gb", Count: 1},
		{Name: "gpu", Type: "h100", Count: 2},
		{Name: "shard", Count: 0},
	} {
		assert.NoError(t, ok.Validate(), "%#v", ok)
	}
	q, err := gres.ParseGRES("gpu:1g.10gb:1")
	require.NoError(t, err)
	assert.Equal(t, []gres.Request{{Name: "gpu", Type: "1g.10gb", Count: 1}}, q)
}
