package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The allocated-but-idle scene shows ann's 8 GPUs (and the 8 CPUs of her
// job) in IdleCapacity's allocated-idle class, none free, and the Explain
// of cy's job names ann's idle job as the one it waits for.
func TestAllocatedIdleScene(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, allocatedIdle(&b))
	out := b.String()
	assert.Contains(t, out, "job 1 (ann) on h100-01: 1.0% mean GPU utilisation")
	assert.Contains(t, out, "job 2 (bob) on h100-02: 85.0% mean GPU utilisation, 5.1 of 6.0 GPU-hours busy, 3.4 kWh, working")
	assert.Contains(t, out, "  allocated-idle              8        8\n")
	assert.Contains(t, out, "  total                       8      248\n")
	assert.Contains(t, out, "    of which free             0      240\n")
	assert.Contains(t, out, "    waits for running job(s): 1 (ends 2026-01-05 13:00:00)\n"+
		"    job 1 (ann) holds h100-01[0-7] allocated but idle: 1.0% mean GPU utilisation, below 5% for 45m\n")
}
