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
