package accounting_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
)

// sacct lists each component of a heterogeneous job as a record of its
// own, its JobID as HetJobID+HetJobOffset and JobIDRaw its own job ID.
func TestJobWriterHetJob(t *testing.T) {
	t0 := time.Date(2024, 3, 1, 8, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	w, err := accounting.NewJobWriter(&buf, accounting.ExportOptions{Format: accounting.FormatParsable2, Fields: []string{"JobID", "JobIDRaw", "Partition"}, NoHeader: true})
	require.NoError(t, err)
	for k, part := range []string{"cpu", "gpu"} {
		require.NoError(t, w.Write(accounting.JobRecord{ID: accounting.JobID(123 + k), HetJobID: 123, HetJobOffset: uint32(k),
			Cluster: "c", User: "u", Account: "a", Partition: part, Submit: t0, State: accounting.StatePending}))
	}
	require.NoError(t, w.Close())
	assert.Equal(t, "123+0|123|cpu\n123+1|124|gpu\n", buf.String())
}
