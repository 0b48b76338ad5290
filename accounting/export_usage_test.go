package accounting

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/telemetry"
)

// A 2-GPU job that ran one hour: readings covering the hour on both
// devices (7200 device-seconds), busy 5400 of them (75 %), 20 GiB of
// device memory in use on average (its integral 3600 s × 20480 MiB),
// 40 GiB at most, one reading at 99.5 % (sacct's whole percent: 100),
// 3.6 MJ used, a host memory peak of 64 GiB; one run of 1200 GPU-seconds
// before it was requeued, 600 of them lost.
func TestExportUsageFields(t *testing.T) {
	t0 := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	j := JobRecord{ID: 9, Cluster: "c", User: "u", Account: "a", Submit: t0, Start: t0, End: t0.Add(time.Hour),
		State: StateCompleted, AllocTRES: TRES{"gres/gpu": 2},
		Usage: telemetry.Usage{Samples: 60, First: t0.Add(time.Minute), Last: t0.Add(time.Hour), GPUSeconds: 7200,
			BusyGPUSeconds: 5400, UtilizationMax: 99.5, MemoryMaxMiB: 40960, MemoryMiBSeconds: 3600 * 20480,
			CoveredSeconds: 3600, EnergyJoules: 3.6e6, MemoryPeakBytes: 64 << 30},
		LaunchAttempts: 2, LaunchFailures: 1, LostGPUSeconds: 600, PriorGPUSeconds: 1200, Quality: 0.8}
	unmeasured := JobRecord{ID: 10, Cluster: "c", User: "u", Account: "a", Submit: t0, Start: t0, End: t0.Add(time.Hour),
		State: StateCompleted, AllocTRES: TRES{"gres/gpu": 1}}
	var buf bytes.Buffer
	w, err := NewJobWriter(&buf, ExportOptions{Format: FormatParsable2, Fields: []string{"JobID", "TRESUsageInAve", "tresusageinmax",
		"ConsumedEnergy", "ConsumedEnergyRaw", "LaunchAttempts", "LaunchFailures", "AllocGPUHours", "LostGPUHours", "BusyGPUHours",
		"GPUUtil", "AllocQuality"}})
	require.NoError(t, err)
	require.NoError(t, w.Write(j))
	require.NoError(t, w.Write(unmeasured))
	require.NoError(t, w.Close())
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, "JobID|TRESUsageInAve|TRESUsageInMax|ConsumedEnergy|ConsumedEnergyRaw|LaunchAttempts|LaunchFailures|AllocGPUHours|LostGPUHours|BusyGPUHours|GPUUtil|AllocQuality", lines[0])
	// Allocated: 2 GPUs × 1 h + 1200 s = 2.33 GPU-hours; lost 600 s =
	// 0.17 h; busy 5400 s = 1.50 h.
	assert.Equal(t, "9|gres/gpumem=20480M,gres/gpuutil=75|energy=3600000,gres/gpumem=40960M,gres/gpuutil=100,mem=65536M|3600000|3600000|2|1|2.33|0.17|1.50|75.0|0.800", lines[1])
	assert.Equal(t, "10|||0|0|0|0|1.00|0.00|0.00||", lines[2])
	assert.Contains(t, JobFieldNames(), "TRESUsageInAve")
}

func TestFormatUsagePartial(t *testing.T) {
	// Energy only (a power meter without utilisation): no gpuutil.
	assert.Equal(t, "", FormatUsageAve(telemetry.Usage{EnergyJoules: 5}))
	assert.Equal(t, "energy=5", FormatUsageMax(telemetry.Usage{EnergyJoules: 5}))
	// A small mean memory rounds to 1M, never 0M.
	assert.Equal(t, "gres/gpumem=1M", FormatUsageAve(telemetry.Usage{MemoryMiBSeconds: 0.2, CoveredSeconds: 1}))
	assert.Equal(t, "mem=2M", FormatUsageMax(telemetry.Usage{MemoryPeakBytes: 3 << 19}))
}

// Numbers beyond int64 print as numbers, never wrapped negative.
func TestFormatUsageHugeNumbers(t *testing.T) {
	u := telemetry.Usage{EnergyJoules: 1e20, MemoryMiBSeconds: 1e25, CoveredSeconds: 1}
	assert.Equal(t, "energy=100000000000000000000", FormatUsageMax(u))
	assert.Equal(t, "gres/gpumem=10000000000000000905969664M", FormatUsageAve(u))
}
