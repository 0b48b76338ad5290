package accounting

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
)

func TestParseTRES(t *testing.T) {
	tests := []struct {
		in   string
		want TRES
		err  bool
	}{
		{"", TRES{}, false},
		{"cpu=4", TRES{"cpu": 4}, false},
		{"cpu=4,mem=16G,node=1,billing=4,gres/gpu=2", TRES{"cpu": 4, "mem": 16384, "node": 1, "billing": 4, "gres/gpu": 2}, false},
		{" CPU = 2 , Gres/GPU:H100=8 ", TRES{"cpu": 2, "gres/gpu:h100": 8}, false},
		{"mem=512M", TRES{"mem": 512}, false},
		{"mem=2048K", TRES{"mem": 2}, false},
		{"mem=1T", TRES{"mem": 1 << 20}, false},
		{"mem=1P", TRES{"mem": 1 << 30}, false},
		{"license/matlab=3", TRES{"license/matlab": 3}, false},
		{"mem=1000K", nil, true},
		{"cpu=4G", nil, true},
		{"cpu", nil, true},
		{"cpu=-1", nil, true},
		{"cpu=1,cpu=2", nil, true},
		{"gpu=1", nil, true},
		{"gres/=1", nil, true},
		{"cpu=1125899906842625", nil, true},
		{"mem=2000000P", nil, true},
		{"cpu=", nil, true},
	}
	for _, tc := range tests {
		got, err := ParseTRES(tc.in)
		if tc.err {
			assert.ErrorIs(t, err, ErrInvalid, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestTRESFormatting(t *testing.T) {
	tr := TRES{"gres/gpu:h100": 8, "billing": 10, "gres/gpu": 8, "mem": 2 << 20, "cpu": 128, "node": 1, "license/a": 1}
	assert.Equal(t, []string{"cpu", "mem", "node", "billing", "gres/gpu", "gres/gpu:h100", "license/a"}, tr.Names())
	assert.Equal(t, "cpu=128,mem=2097152,node=1,billing=10,gres/gpu=8,gres/gpu:h100=8,license/a=1", tr.String())
	assert.Equal(t, "cpu=128,mem=2T,node=1,billing=10,gres/gpu=8,gres/gpu:h100=8,license/a=1", FormatTRES(tr))
	assert.Equal(t, "mem=1500M", FormatTRES(TRES{"mem": 1500}))
	assert.Equal(t, "mem=0M", FormatTRES(TRES{"mem": 0}))
	back, err := ParseTRES(FormatTRES(tr))
	require.NoError(t, err)
	assert.Equal(t, tr, back)
	assert.True(t, TRES{"cpu": 1, "mem": 0}.Equal(TRES{"cpu": 1}))
	assert.False(t, TRES{"cpu": 1}.Equal(TRES{"cpu": 2}))
}

func TestTRESVector(t *testing.T) {
	reg, err := gres.NewRegistry("gres/gpu:h100")
	require.NoError(t, err)
	tr := TRES{"cpu": 4, "gres/gpu:h100": 2, "gres/gpu": 2}
	v, err := tr.Vector(reg, false)
	require.NoError(t, err)
	assert.Equal(t, int64(4), v.At(gres.CPU))
	assert.Equal(t, tr, TRESFromVector(reg, v))
	_, err = TRES{"license/x": 1}.Vector(reg, false)
	assert.ErrorIs(t, err, gres.ErrUnknownTRES)
	v, err = TRES{"license/x": 1}.Vector(reg, true)
	require.NoError(t, err)
	id, ok := reg.Lookup("license/x")
	require.True(t, ok)
	assert.Equal(t, int64(1), v.At(id))
}

func FuzzParseTRES(f *testing.F) {
	for _, s := range []string{"cpu=4,mem=16G,gres/gpu:h100=2", "mem=1024K", "license/x=1", "a=b=c", ",,", "gres/gpu:=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tr, err := ParseTRES(s)
		if err != nil {
			return
		}
		require.NoError(t, tr.Validate())
		again, err := ParseTRES(tr.String())
		require.NoError(t, err, "canonical form %q of %q re-parses", tr.String(), s)
		require.Equal(t, tr, again)
		again, err = ParseTRES(FormatTRES(tr))
		require.NoError(t, err)
		require.Equal(t, tr, again)
	})
}

// FuzzTRESName checks validTRESName against gres.Registry.Register, the
// reference definition of a TRES name.
func FuzzTRESName(f *testing.F) {
	for _, s := range []string{"cpu", "gres/gpu", "gres/gpu:h100", "license/m.atlab", "gres/GPU", "fs/disk", "gres/", "gres/a:b:c", "license/" + strings.Repeat("a", 65)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		reg, err := gres.NewRegistry()
		require.NoError(t, err)
		_, regErr := reg.Register(s)
		canonical := regErr == nil && strings.ToLower(strings.TrimSpace(s)) == s
		assert.Equal(t, canonical, validTRESName(s) == nil, "%q: registry says %v", s, regErr)
	})
}
