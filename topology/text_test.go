package topology

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDomainModeTextRoundTrip(t *testing.T) {
	for m := DomainAny; m <= DomainBalanced; m++ {
		b, err := m.MarshalText()
		require.NoError(t, err)
		var back DomainMode
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, m, back)
		j, err := json.Marshal(m)
		require.NoError(t, err)
		assert.Equal(t, `"`+m.String()+`"`, string(j))
	}
	var m DomainMode
	require.NoError(t, m.UnmarshalText([]byte("BALANCED")))
	assert.Equal(t, DomainBalanced, m)
	err := m.UnmarshalText([]byte("two"))
	require.ErrorIs(t, err, ErrSyntax)
	assert.Contains(t, err.Error(), `DomainMode "two"`)
	_, err = DomainMode(7).MarshalText()
	assert.Error(t, err)
}

func TestNodeSetTextRoundTrip(t *testing.T) {
	for _, n := range testLengths {
		for _, idx := range [][]int{nil, {0}, {0, 1, 2, 5}, {n - 1}, {1, 3, 5, 64, 65, 66}} {
			s := NodeSetOf(n, idx...)
			b, err := s.MarshalText()
			require.NoError(t, err)
			var back NodeSet
			require.NoError(t, back.UnmarshalText(b), "%q", b)
			assert.Equal(t, s.Len(), back.Len(), "%q", b)
			assert.True(t, s.Equal(back), "%q → %v", b, back)
		}
	}
	j, err := json.Marshal(struct{ Nodes NodeSet }{NodeSetOf(16, 0, 1, 2, 3, 7)})
	require.NoError(t, err)
	assert.Equal(t, `{"Nodes":"{0-3,7}/16"}`, string(j))
	var back NodeSet
	for _, bad := range []string{"{}", "0-3/16", "{3-1}/16", "{1,1}/16", "{0-3}/4x", "{16}/16", "{-1}/4", "{01}/4", "{}/99999999999", "{2,1}/4"} {
		assert.Error(t, back.UnmarshalText([]byte(bad)), "%q", bad)
	}
}

func FuzzNodeSetText(f *testing.F) {
	for _, s := range []string{"", "{}/0", "{0-3,7}/16", "{63-64}/128", "{1}/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v NodeSet
		if v.UnmarshalText([]byte(s)) != nil {
			return
		}
		b, err := v.MarshalText()
		require.NoError(t, err)
		var w NodeSet
		require.NoError(t, w.UnmarshalText(b), "%q → %q", s, b)
		if v.Len() != w.Len() || !v.Equal(w) {
			t.Fatalf("%q → %v → %q → %v", s, v, b, w)
		}
	})
}
