package accounting

import (
	"math"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/telemetry"
)

// sacct's usage fields of a job record (its Usage and goodput fields),
// formatted as sacct prints them: TRES strings in canonical name order,
// memory sizes in mebibytes with Slurm's "M" suffix, utilisation in whole
// percent, energy in joules. An unmeasured job prints empty usage fields,
// as sacct does for a job that gathered nothing.

// FormatUsageAve formats u as sacct's TRESUsageInAve: the time-weighted
// mean device memory in use (gres/gpumem, "1234M") and GPU utilisation
// (gres/gpuutil, percent) over the time the readings cover. Empty when u
// holds no GPU reading with a known utilisation or memory.
func FormatUsageAve(u telemetry.Usage) string {
	var parts []string
	if u.MemoryMiBSeconds > 0 && u.CoveredSeconds > 0 {
		parts = append(parts, "gres/gpumem="+mebibytes(u.MeanMemoryMiB()))
	}
	if u.Measured() {
		parts = append(parts, "gres/gpuutil="+whole(u.MeanUtilization()))
	}
	return strings.Join(parts, ",")
}

// FormatUsageMax formats u as sacct's TRESUsageInMax: the energy used
// (energy, joules), the highest device memory in use and per-device mean
// utilisation of one reading (gres/gpumem, gres/gpuutil) and the highest
// host memory peak (mem). Names without a reading are left out; empty
// when none has one.
func FormatUsageMax(u telemetry.Usage) string {
	var parts []string
	if u.EnergyJoules > 0 {
		parts = append(parts, "energy="+whole(u.EnergyJoules))
	}
	if u.MemoryMaxMiB > 0 {
		parts = append(parts, "gres/gpumem="+strconv.FormatInt(u.MemoryMaxMiB, 10)+"M")
	}
	if u.Measured() {
		parts = append(parts, "gres/gpuutil="+whole(u.UtilizationMax))
	}
	if u.MemoryPeakBytes > 0 {
		parts = append(parts, "mem="+mebibytes(float64(u.MemoryPeakBytes)/(1<<20)))
	}
	return strings.Join(parts, ",")
}

// mebibytes formats a size in MiB as Slurm prints memory: a whole number
// of mebibytes with the suffix "M" (rounded; at least 1M when non-zero).
func mebibytes(mib float64) string {
	return whole(max(mib, 1)) + "M"
}

// whole formats x rounded to a whole number, however large (no int64
// conversion that would wrap): percentages and joules as sacct prints them.
func whole(x float64) string { return strconv.FormatFloat(math.Round(x), 'f', 0, 64) }

// usageJobFields are the sacct fields on a job's usage and path.
var usageJobFields = map[string]func(j *JobRecord, o *ExportOptions) string{
	"TRESUsageInAve": func(j *JobRecord, _ *ExportOptions) string { return FormatUsageAve(j.Usage) },
	"TRESUsageInMax": func(j *JobRecord, _ *ExportOptions) string { return FormatUsageMax(j.Usage) },
	// ConsumedEnergy is the energy the job's GPUs used, in joules
	// (ConsumedEnergyRaw prints the same number: the ledger keeps no
	// unit-scaled form).
	"ConsumedEnergy":    consumedEnergy,
	"ConsumedEnergyRaw": consumedEnergy,
	// Sluice's own fields (Slurm has none for them).
	"LaunchAttempts": func(j *JobRecord, _ *ExportOptions) string { return strconv.Itoa(j.LaunchAttempts) },
	"LaunchFailures": func(j *JobRecord, _ *ExportOptions) string { return strconv.Itoa(j.LaunchFailures) },
	"AllocGPUHours": func(j *JobRecord, o *ExportOptions) string {
		return strconv.FormatFloat(j.AllocGPUSeconds(o.Now)/3600, 'f', 2, 64)
	},
	"LostGPUHours": func(j *JobRecord, _ *ExportOptions) string {
		return strconv.FormatFloat(j.LostGPUSeconds/3600, 'f', 2, 64)
	},
	"BusyGPUHours": func(j *JobRecord, _ *ExportOptions) string {
		return strconv.FormatFloat(j.Usage.BusyGPUSeconds/3600, 'f', 2, 64)
	},
	"GPUUtil": func(j *JobRecord, _ *ExportOptions) string {
		if !j.Usage.Measured() {
			return ""
		}
		return strconv.FormatFloat(j.Usage.MeanUtilization(), 'f', 1, 64)
	},
	"AllocQuality": func(j *JobRecord, _ *ExportOptions) string {
		if j.Quality == 0 {
			return ""
		}
		return strconv.FormatFloat(j.Quality, 'f', 3, 64)
	},
}

func consumedEnergy(j *JobRecord, _ *ExportOptions) string { return whole(j.Usage.EnergyJoules) }
