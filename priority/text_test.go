package priority

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPriorityTextRoundTrip(t *testing.T) {
	for _, f := range []Flags{0, AccrueAlways, MaxTRES | NoNormalAll, DepthOblivious | NoFairTree, allFlags} {
		j, err := json.Marshal(f)
		require.NoError(t, err)
		var back Flags
		require.NoError(t, json.Unmarshal(j, &back), "%s", j)
		assert.Equal(t, f, back, "%s", j)
	}
	j, err := json.Marshal(AccrueAlways | MaxTRES)
	require.NoError(t, err)
	assert.Equal(t, `"ACCRUE_ALWAYS,MAX_TRES"`, string(j))
	_, err = Flags(1 << 30).MarshalText()
	require.ErrorIs(t, err, ErrSyntax)
	var f Flags
	err = f.UnmarshalText([]byte("ACCRUE_ALWAYS,FAST"))
	require.ErrorIs(t, err, ErrSyntax)
	assert.Contains(t, err.Error(), `"FAST"`)

	for _, a := range []Algorithm{FairTree, Classic, ClassicDepthOblivious} {
		j, err := json.Marshal(a)
		require.NoError(t, err)
		var back Algorithm
		require.NoError(t, json.Unmarshal(j, &back))
		assert.Equal(t, a, back)
	}
	var a Algorithm
	require.NoError(t, a.UnmarshalText([]byte("CLASSIC")))
	assert.Equal(t, Classic, a)
	err = a.UnmarshalText([]byte("ticket"))
	require.ErrorIs(t, err, ErrSyntax)
	assert.Contains(t, err.Error(), `Algorithm "ticket"`)
	_, err = Algorithm(9).MarshalText()
	assert.Error(t, err)
}

func FuzzFlagsText(f *testing.F) {
	for _, s := range []string{"", "ACCRUE_ALWAYS,NO_NORMAL_ALL", "DEPTH_OBLIVIOUS", "fair_tree", "MAX_TRES,MAX_TRES_GRES"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v Flags
		if v.UnmarshalText([]byte(s)) != nil {
			return
		}
		b, err := v.MarshalText()
		require.NoError(t, err)
		var w Flags
		require.NoError(t, w.UnmarshalText(b), "%q → %q", s, b)
		require.Equal(t, v, w, "%q → %q", s, b)
	})
}
