package backfill

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestModeTextRoundTrip(t *testing.T) {
	for _, m := range []Mode{Conservative, EASY} {
		j, err := json.Marshal(m)
		require.NoError(t, err)
		assert.Equal(t, `"`+m.String()+`"`, string(j))
		var back Mode
		require.NoError(t, json.Unmarshal(j, &back))
		assert.Equal(t, m, back)
	}
	var m Mode
	require.NoError(t, m.UnmarshalText([]byte("EASY")))
	assert.Equal(t, EASY, m)
	err := m.UnmarshalText([]byte("aggressive"))
	require.ErrorIs(t, err, ErrInvalidConfig)
	assert.Contains(t, err.Error(), `Mode "aggressive"`)
	_, err = Mode(5).MarshalText()
	assert.Error(t, err)
}
