package scheduler_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler"
)

// IdleCounts encode as an object keyed by class name, every class
// present; they decode from it, from the older array form (one count per
// class in class order, fewer classes than now), and refuse what names no
// class, too many classes, or one class twice (class names are read
// case-insensitively, so "unhealthy" and "UNHEALTHY" are the same one:
// the result must not depend on which the decoder sees last).
func TestIdleCountsJSON(t *testing.T) {
	var c scheduler.IdleCounts
	c[scheduler.IdleUnhealthy], c[scheduler.IdleFragmented], c[scheduler.IdleAllocated] = 1, 6, 8
	b, err := json.Marshal(c)
	require.NoError(t, err)
	assert.JSONEq(t, `{"unhealthy":1,"unavailable":0,"advance-reservation":0,"reserved":0,"no-demand":0,"policy":0,
		"fragmented":6,"allocated-idle":8}`, string(b))
	var back scheduler.IdleCounts
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, c, back)

	var old scheduler.IdleCounts
	require.NoError(t, json.Unmarshal([]byte(`[1,2,3,4,5,6,7]`), &old), "the seven classes before allocated-idle")
	assert.Equal(t, scheduler.IdleCounts{1, 2, 3, 4, 5, 6, 7, 0}, old)
	var part scheduler.IdleCounts
	require.NoError(t, json.Unmarshal([]byte(`{"allocated-idle":3}`), &part))
	assert.Equal(t, scheduler.IdleCounts{scheduler.IdleAllocated: 3}, part)

	for _, bad := range []string{`[1,2,3,4,5,6,7,8,9]`, `{"idle":1}`, `{"unhealthy":1,"UNHEALTHY":2}`, `{"policy":1," policy":1}`, `"x"`, `[1.5]`} {
		var x scheduler.IdleCounts
		assert.Error(t, json.Unmarshal([]byte(bad), &x), bad)
	}
}
