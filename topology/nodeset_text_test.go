package topology

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNodeSetTextRoundTrip(t *testing.T) {
	for _, s := range []NodeSet{{}, NewNodeSet(5), NodeSetOf(16, 0, 1, 2, 3, 7), FullNodeSet(130)} {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		var got NodeSet
		require.NoError(t, json.Unmarshal(b, &got), string(b))
		require.Equal(t, s.Len(), got.Len())
		require.True(t, s.Equal(got), "%s → %s", b, got)
	}
	b, _ := NodeSetOf(16, 0, 1, 2, 3, 7).MarshalText()
	require.Equal(t, "16:{0-3,7}", string(b))
	for _, bad := range []string{"", "16", "x:{}", "-1:{}", "4:{4}", "4:{2-1}", "4:{a}", "4:{0,}", "99999999:{}", "4:0-1"} {
		s := NodeSetOf(3, 1)
		require.Error(t, s.UnmarshalText([]byte(bad)), bad)
		require.True(t, s.Equal(NodeSetOf(3, 1)), "unchanged after %q", bad)
	}
}

func FuzzNodeSetText(f *testing.F) {
	for _, s := range []string{"16:{0-3,7}", "0:{}", "3:{2}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var s NodeSet
		if s.UnmarshalText([]byte(in)) != nil {
			return
		}
		b, err := s.MarshalText()
		require.NoError(t, err)
		var again NodeSet
		require.NoError(t, again.UnmarshalText(b))
		require.True(t, s.Equal(again) && s.Len() == again.Len(), "%q → %q", in, b)
	})
}
