package journal

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler"
)

// A field renamed with a `was` tag reads what was written under its old
// name: a JobSpec journaled when Exclude was ExcludeNodes decodes into
// Exclude.
func TestRenamedFieldDecodes(t *testing.T) {
	type oldSpec struct {
		User         string
		ExcludeNodes []string
	}
	c := newCodec()
	b, err := c.appendValue(nil, reflect.ValueOf(oldSpec{User: "u", ExcludeNodes: []string{"n1", "n[3-4]"}}))
	require.NoError(t, err)
	var got scheduler.JobSpec
	d := &decoder{c: c, b: b}
	require.NoError(t, d.value(reflect.ValueOf(&got).Elem()))
	require.Equal(t, scheduler.JobSpec{User: "u", Exclude: []string{"n1", "n[3-4]"}}, got)
}
