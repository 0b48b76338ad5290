package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// field returns the whitespace-separated fields of the line starting with
// prefix (the last one: the squeue table is printed twice).
func field(t *testing.T, out, prefix string) []string {
	t.Helper()
	var got []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			got = strings.Fields(line)
		}
	}
	require.NotNil(t, got, "no line %q in\n%s", prefix, out)
	return got
}

// TestRun checks the demo's story: typed jobs on their vendor's node,
// tiles of one card together, plain jobs anywhere, the Intel driver's
// fault withholding a tile so a job wanting all of them waits.
func TestRun(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, run(&buf))
	out := buf.String()
	for prefix, node := range map[string]string{"1 ": "nvidia-01", "2 ": "amd-01", "3 ": "intel-01", "4 ": "intel-01"} {
		assert.Equal(t, node, field(t, out, prefix)[4], "job %s", prefix)
	}
	assert.Equal(t, []string{"0", "1"}, field(t, out, "3 ")[5:], "inference: two tiles of one card")
	assert.Equal(t, "Resources", strings.Trim(field(t, out, "7 ")[4], "()"))
	assert.Contains(t, out, "intel-01: state idle, unhealthy devices [15], 15 devices free")
	assert.Regexp(t, regexp.MustCompile(`intel-01\s+intel\s+16\s+max_1550_tile\s+xelink\s+64 GiB`), out)
	assert.Regexp(t, regexp.MustCompile(`amd-01\s+amd\s+8\s+mi300x\s+xgmi\s+192 GiB`), out)
	// The plain jobs started (they have a node, not a reason), on two
	// different vendors' nodes.
	any8, any4 := field(t, out, "5 ")[4], field(t, out, "6 ")[4]
	assert.Contains(t, []string{"nvidia-01", "amd-01", "intel-01"}, any8)
	assert.Contains(t, []string{"nvidia-01", "amd-01", "intel-01"}, any4)
	assert.NotEqual(t, any8, any4)
}
