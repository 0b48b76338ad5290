package priority

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
)

func TestFormatSprio(t *testing.T) {
	reg, err := gres.NewRegistry("gres/gpu")
	require.NoError(t, err)
	gpu := reg.MustLookup("gres/gpu")
	e := mustEngine(t, Config{
		Weights:     Weights{Age: 1000, FairShare: 10000, QOS: 2000},
		TRESWeights: map[string]float64{"gres/gpu": 4000},
		Registry:    reg,
	}, Cluster{MaxQOSPriority: 4})
	tres := reg.NewVector()
	tres[gpu] = 2
	part := reg.NewVector()
	part[gpu] = 8
	j := Job{ID: 7, AccrueStart: t0.Add(-84 * time.Hour), FairShare: 0.25, QOSPriority: 1, TRES: tres, PartitionTRES: part, Nice: 10}
	b, err := e.Compute(t0, &j)
	require.NoError(t, err)
	admin, err := e.Compute(t0, &Job{ID: 8, AdminPriority: 5})
	require.NoError(t, err)
	rows := []SprioRow{
		{JobID: 7, Partition: "gpu", User: "alice", Account: "physics", QOS: "normal", Breakdown: &b},
		{JobID: 8, Partition: "a-long-partition", Breakdown: &admin},
		{JobID: 9}, // no breakdown: skipped
	}
	want := strings.Join([]string{
		"          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE        QOS                 TRES",
		"        Weights                               1       1000      10000       2000        gres/gpu=4000",
		"              7 gpu             4490          0        500       2500        500        gres/gpu=1000",
		"              8 a-long-pa          5          0          0          0          0",
		"",
	}, "\n")
	assert.Equal(t, want, e.FormatSprio(rows, SprioFormat{Weights: true}))

	want = strings.Join([]string{
		"          JOBID PARTITION PRIORITY   AGE        FAIRSHARE  QOS        TRES",
		"              7 gpu       0.00000104 0.5000000  0.2500000  0.2500000  gres/gpu=0.25",
		"",
	}, "\n")
	assert.Equal(t, want, e.FormatSprio(rows[:1], SprioFormat{Normalized: true}))

	long := e.FormatSprio(rows[:1], SprioFormat{Long: true, NoHeader: true})
	assert.Equal(t, "              7 gpu          alice  physics       4490          0        500          0       2500          0          0     normal        500          10        gres/gpu=1000\n", long)
	assert.Equal(t, uint32(4490), b.Priority) // 500 + 2500 + 500 + 1000 - 10
}
