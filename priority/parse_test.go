package priority

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFlags(t *testing.T) {
	cases := []struct {
		in   string
		want Flags
	}{
		{"", 0},
		{"FAIR_TREE", 0},
		{"ACCRUE_ALWAYS", AccrueAlways},
		{"accrue_always, small_relative_to_time", AccrueAlways | SmallRelativeToTime},
		{"NO_NORMAL_ALL", NoNormalAll},
		{"NO_NORMAL_ASSOC,NO_NORMAL_PART,NO_NORMAL_QOS,NO_NORMAL_TRES", NoNormalAll},
		{"DEPTH_OBLIVIOUS", DepthOblivious | NoFairTree},
		{"NO_FAIR_TREE,INCR_ONLY,CALCULATE_RUNNING,MAX_TRES,MAX_TRES_GRES", NoFairTree | IncrOnly | CalculateRunning | MaxTRES | MaxTRESGRES},
	}
	for _, c := range cases {
		got, err := ParseFlags(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
		back, err := ParseFlags(got.String())
		require.NoError(t, err)
		assert.Equal(t, got, back, "round trip of %q", got.String())
	}
	for _, bad := range []string{"NO_SUCH", "ACCRUE_ALWAYS,,INCR_ONLY", "ACCRUE_ALWAYS,"} {
		_, err := ParseFlags(bad)
		require.ErrorIs(t, err, ErrSyntax, bad)
	}
	assert.Equal(t, FairTree, Flags(0).FairShareAlgorithm())
	assert.Equal(t, Classic, NoFairTree.FairShareAlgorithm())
	assert.Equal(t, ClassicDepthOblivious, DepthOblivious.FairShareAlgorithm())
	assert.Equal(t, "ACCRUE_ALWAYS,0x80000000", (AccrueAlways | 1<<31).String())
	assert.Equal(t, "Algorithm(9)", Algorithm(9).String())
	assert.True(t, Config{}.Recalculate(false))
	assert.False(t, Config{}.Recalculate(true))
	assert.True(t, Config{Flags: CalculateRunning}.Recalculate(true))
}

func TestParseTRESWeights(t *testing.T) {
	got, err := ParseTRESWeights("CPU=1000,Mem=2000,GRES/gpu=3000")
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"cpu": 1000, "mem": 2000, "gres/gpu": 3000}, got)

	got, err = ParseTRESWeights(" cpu = -1.5 , mem=0.25G, mem=1T, license/matlab=1e3, gres/gpu:h100=5. ")
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"cpu": -1.5, "mem": 1.0 / (1024 * 1024), "license/matlab": 1000, "gres/gpu:h100": 5}, got)
	assert.Equal(t, "cpu=-1.5,gres/gpu:h100=5,license/matlab=1000,mem=9.5367431640625e-07", FormatTRESWeights(got))

	got, err = ParseTRESWeights("")
	require.NoError(t, err)
	assert.Empty(t, got)

	for _, bad := range []string{"cpu", "cpu=", "=5", "cpu=abc", "cpu=5G", "mem=5Q", "cpu=inf", "cpu=NaN", "cpu=0x10", "cpu=1e999", "cpu=1,,mem=2"} {
		_, err := ParseTRESWeights(bad)
		require.ErrorIs(t, err, ErrSyntax, bad)
	}
}

func FuzzParseFlags(f *testing.F) {
	for _, s := range []string{"", "ACCRUE_ALWAYS", "NO_NORMAL_ALL,INCR_ONLY", "DEPTH_OBLIVIOUS", "x,,y", "fair_tree"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fl, err := ParseFlags(s)
		if err != nil {
			if fl != 0 {
				t.Fatalf("error with non-zero flags %v", fl)
			}
			return
		}
		if fl&^allFlags != 0 {
			t.Fatalf("unknown bits from %q: %x", s, uint32(fl))
		}
		if fl&DepthOblivious != 0 && fl&NoFairTree == 0 {
			t.Fatalf("DEPTH_OBLIVIOUS without NO_FAIR_TREE from %q", s)
		}
		back, err := ParseFlags(fl.String())
		if err != nil || back != fl {
			t.Fatalf("round trip of %q: %v %v", fl.String(), back, err)
		}
	})
}

func FuzzParseTRESWeights(f *testing.F) {
	for _, s := range []string{"CPU=1000,Mem=2000,GRES/gpu=3000", "mem=0.25G", "cpu=-1", "", "a=b=c", "cpu=1e308,mem=1P"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseTRESWeights(s)
		if err != nil {
			return
		}
		for name, v := range w {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%q: weight %q = %v", s, name, v)
			}
			if name != strings.ToLower(name) || strings.TrimSpace(name) != name || name == "" {
				t.Fatalf("%q: name %q not normalised", s, name)
			}
		}
		back, err := ParseTRESWeights(FormatTRESWeights(w))
		if err != nil {
			t.Fatalf("reparse of %q: %v", FormatTRESWeights(w), err)
		}
		if len(back) != len(w) {
			t.Fatalf("round trip of %q changed the names", s)
		}
		for name, v := range w {
			if back[name] != v {
				t.Fatalf("round trip of %q: %s %v -> %v", s, name, v, back[name])
			}
		}
	})
}
