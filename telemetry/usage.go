package telemetry

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInvalid is wrapped by every error about a malformed reading or rule.
var ErrInvalid = errors.New("telemetry: invalid")

// Rule says how readings are folded into a Usage and when a job's GPUs
// count as "allocated, idle". The zero Rule folds readings and never
// calls a job idle.
type Rule struct {
	// IdleBelow is the mean GPU utilisation (percent, SM activity) under
	// which a reading counts as idle; 0 turns idle detection off.
	IdleBelow float64 `json:",omitempty"`
	// IdleAfter is how long a job's readings must stay below IdleBelow,
	// without a break, before the job is allocated-but-idle (IsIdle): a
	// busy reading, or a silence longer than MaxGap, is a break.
	// Zero with IdleBelow > 0: idle from its first idle reading.
	IdleAfter time.Duration `json:",omitempty"`
	// MaxGap caps the time one reading covers: a reading stands for the
	// interval since the job's previous reading (or its start), but never
	// more than MaxGap, so an agent that starts late or stalls does not
	// have one reading speak for hours — of use, or of idleness: an
	// idle streak restarts at the MaxGap the reading covers, so an
	// agent must poll more often than MaxGap for a streak to reach an
	// IdleAfter longer than it. Zero: DefaultMaxGap.
	MaxGap time.Duration `json:",omitempty"`
}

// DefaultMaxGap is the MaxGap of a Rule that names none: Slurm's
// JobAcctGatherFrequency default is 30 s; five missed polls is a stall.
const DefaultMaxGap = 150 * time.Second

// Validate checks the rule: IdleBelow in [0, 100], durations non-negative.
func (r Rule) Validate() error {
	switch {
	case !(r.IdleBelow >= 0 && r.IdleBelow <= 100):
		return fmt.Errorf("%w: idle threshold %v%% outside [0, 100]", ErrInvalid, r.IdleBelow)
	case r.IdleAfter < 0:
		return fmt.Errorf("%w: negative idle time %v", ErrInvalid, r.IdleAfter)
	case r.MaxGap < 0:
		return fmt.Errorf("%w: negative max gap %v", ErrInvalid, r.MaxGap)
	}
	return nil
}

func (r Rule) maxGap() time.Duration {
	if r.MaxGap == 0 {
		return DefaultMaxGap
	}
	return r.MaxGap
}

// GPUReading is one job's view of its GPUs on one node at one instant:
// the devices it holds there, summed. Unknown parts are -1.
type GPUReading struct {
	// Time is when the devices were read.
	Time time.Time
	// Devices is how many of the job's devices have a known utilisation
	// in UtilizationSum (0: utilisation unknown).
	Devices int
	// UtilizationSum is the sum over those devices of their utilisation
	// (percent of the sample period a kernel ran, NVML's SM activity).
	UtilizationSum float64
	// MemoryUsedMiB is the device memory in use, summed (-1: unknown).
	MemoryUsedMiB int64
	// PowerWatts is the board power, summed (-1: unknown).
	PowerWatts float64
	// EnergyJoules is the energy the devices used since the previous
	// reading (the rise of their counters; -1: unknown).
	EnergyJoules float64
}

// Validate checks the reading: a time, non-negative counts, utilisation
// at most 100 per device, unknown parts exactly -1.
func (g GPUReading) Validate() error {
	switch {
	case g.Time.IsZero():
		return fmt.Errorf("%w: GPU reading without a time", ErrInvalid)
	case g.Devices < 0:
		return fmt.Errorf("%w: GPU reading of %d devices", ErrInvalid, g.Devices)
	case !(g.UtilizationSum >= 0 && g.UtilizationSum <= 100*float64(g.Devices)):
		return fmt.Errorf("%w: GPU utilisation sum %v for %d devices (want 0 to 100 per device)", ErrInvalid, g.UtilizationSum, g.Devices)
	case g.MemoryUsedMiB < -1:
		return fmt.Errorf("%w: GPU memory used %d MiB (want >= 0, or -1 for unknown)", ErrInvalid, g.MemoryUsedMiB)
	case g.PowerWatts != -1 && !(g.PowerWatts >= 0 && !math.IsInf(g.PowerWatts, 1)):
		return fmt.Errorf("%w: GPU power %v W (want >= 0, or -1 for unknown)", ErrInvalid, g.PowerWatts)
	case g.EnergyJoules != -1 && !(g.EnergyJoules >= 0 && !math.IsInf(g.EnergyJoules, 1)):
		return fmt.Errorf("%w: GPU energy %v J (want >= 0, or -1 for unknown)", ErrInvalid, g.EnergyJoules)
	}
	return nil
}

// HostReading is one job's host usage on one node since its previous
// reading there (the cgroup driver's cpu.stat and memory.peak, or a
// caller's agent). Unknown parts are -1.
type HostReading struct {
	// CPUSeconds is the CPU time (user+system) used since the previous
	// reading (the rise of cpu.stat's usage_usec; -1: unknown).
	CPUSeconds float64
	// MemoryPeakBytes is the highest memory use seen (memory.peak; -1:
	// unknown).
	MemoryPeakBytes int64
}

// Validate checks the reading: non-negative, unknown parts exactly -1.
func (h HostReading) Validate() error {
	switch {
	case h.CPUSeconds != -1 && !(h.CPUSeconds >= 0 && !math.IsInf(h.CPUSeconds, 1)):
		return fmt.Errorf("%w: CPU time %v s (want >= 0, or -1 for unknown)", ErrInvalid, h.CPUSeconds)
	case h.MemoryPeakBytes < -1:
		return fmt.Errorf("%w: memory peak %d bytes (want >= 0, or -1 for unknown)", ErrInvalid, h.MemoryPeakBytes)
	}
	return nil
}

// Usage is what one job (or one step, or one run of a job) did with what
// it was given, folded from its readings as they arrive: a fixed-size
// aggregate, so that the cost of telemetry is bounded per reading and
// nothing is kept per sample. The zero Usage has seen nothing. Usage is
// plain data (it encodes as JSON field by field).
type Usage struct {
	// Samples counts the GPU readings folded in; HostSamples the host ones.
	Samples, HostSamples int64 `json:",omitempty"`
	// First and Last are the times of the first and the latest GPU reading.
	First, Last time.Time `json:",omitzero"`
	// GPUSeconds is the device time the readings with a known utilisation
	// cover (interval × devices), BusyGPUSeconds the part of it a kernel
	// ran (interval × utilisation sum / 100): the "useful" GPU-seconds.
	GPUSeconds, BusyGPUSeconds float64 `json:",omitempty"`
	// UtilizationMax is the highest per-device mean utilisation of one
	// reading (percent); MemoryMaxMiB the highest memory in use of one
	// reading, MemoryMiBSeconds its integral over the covered time (the
	// mean is MemoryMiBSeconds / CoveredSeconds).
	UtilizationMax   float64 `json:",omitempty"`
	MemoryMaxMiB     int64   `json:",omitempty"`
	MemoryMiBSeconds float64 `json:",omitempty"`
	// CoveredSeconds is the wall time the GPU readings cover (each
	// reading's interval, capped at Rule.MaxGap).
	CoveredSeconds float64 `json:",omitempty"`
	// PowerMaxWatts is the highest power of one reading; EnergyJoules the
	// energy summed over readings (Slurm's ConsumedEnergy).
	PowerMaxWatts float64 `json:",omitempty"`
	EnergyJoules  float64 `json:",omitempty"`
	// IdleSeconds is the covered time whose readings were below
	// Rule.IdleBelow; IdleSince the start of the current unbroken run of
	// idle readings (zero when the latest reading was busy or there is
	// none).
	IdleSeconds float64   `json:",omitempty"`
	IdleSince   time.Time `json:",omitzero"`
	// CPUSeconds is the host CPU time used; MemoryPeakBytes the highest
	// host memory peak read.
	CPUSeconds      float64 `json:",omitempty"`
	MemoryPeakBytes int64   `json:",omitempty"`
}

// AddGPU folds reading g in. since is when the interval g covers began
// at the latest: the job's start (or the start of the run being
// measured); the interval is from the later of since and the previous
// reading to g.Time, capped at rule.MaxGap. A reading not after the
// previous one covers no time (it still counts its maxima). g must be
// valid (Validate); AddGPU does O(1) work.
func (u *Usage) AddGPU(g GPUReading, since time.Time, rule Rule) {
	from := since
	if u.Samples > 0 && u.Last.After(from) {
		from = u.Last
	}
	iv := 0.0
	gapped := false // the interval was capped: no evidence before from
	if g.Time.After(from) {
		d := g.Time.Sub(from)
		if gap := rule.maxGap(); d > gap {
			d, gapped = gap, true
			from = g.Time.Add(-gap)
		}
		iv = d.Seconds()
	}
	if u.Samples == 0 {
		u.First = g.Time
	}
	u.Samples++
	if g.Time.After(u.Last) {
		u.Last = g.Time
	}
	if g.EnergyJoules > 0 {
		u.EnergyJoules = sat(u.EnergyJoules + g.EnergyJoules)
	}
	u.PowerMaxWatts = max(u.PowerMaxWatts, g.PowerWatts)
	if g.MemoryUsedMiB > 0 {
		u.MemoryMaxMiB = max(u.MemoryMaxMiB, g.MemoryUsedMiB)
		u.MemoryMiBSeconds = sat(u.MemoryMiBSeconds + iv*float64(g.MemoryUsedMiB))
	}
	u.CoveredSeconds += iv
	if g.Devices == 0 {
		return // utilisation unknown: no busy/idle evidence
	}
	mean := g.UtilizationSum / float64(g.Devices)
	u.UtilizationMax = max(u.UtilizationMax, mean)
	u.GPUSeconds += iv * float64(g.Devices)
	u.BusyGPUSeconds += iv * g.UtilizationSum / 100
	if rule.IdleBelow > 0 && mean < rule.IdleBelow {
		u.IdleSeconds += iv
		if u.IdleSince.IsZero() || gapped {
			// A stall longer than MaxGap breaks the streak: the time
			// no reading covers is not idle time (IdleFor).
			u.IdleSince = from
		}
	} else {
		u.IdleSince = time.Time{}
	}
}

// AddHost folds host reading h in (h must be valid).
func (u *Usage) AddHost(h HostReading) {
	u.HostSamples++
	if h.CPUSeconds > 0 {
		u.CPUSeconds = sat(u.CPUSeconds + h.CPUSeconds)
	}
	u.MemoryPeakBytes = max(u.MemoryPeakBytes, h.MemoryPeakBytes)
}

// Merge adds o to u, as the usage of one job is the sum of its runs' or
// steps': counts, covered and busy time, energy and idle time add up,
// maxima take the larger, First the earlier and Last the later; the
// current idle run is o's when o's readings are the later ones.
func (u *Usage) Merge(o Usage) {
	if o.Samples > 0 {
		if u.Samples == 0 || o.First.Before(u.First) {
			u.First = o.First
		}
		if o.Last.After(u.Last) || u.Samples == 0 {
			u.Last = o.Last
			u.IdleSince = o.IdleSince
		}
	}
	u.Samples += o.Samples
	u.HostSamples += o.HostSamples
	u.GPUSeconds = sat(u.GPUSeconds + o.GPUSeconds)
	u.BusyGPUSeconds = sat(u.BusyGPUSeconds + o.BusyGPUSeconds)
	u.UtilizationMax = max(u.UtilizationMax, o.UtilizationMax)
	u.MemoryMaxMiB = max(u.MemoryMaxMiB, o.MemoryMaxMiB)
	u.MemoryMiBSeconds = sat(u.MemoryMiBSeconds + o.MemoryMiBSeconds)
	u.CoveredSeconds = sat(u.CoveredSeconds + o.CoveredSeconds)
	u.PowerMaxWatts = max(u.PowerMaxWatts, o.PowerMaxWatts)
	u.EnergyJoules = sat(u.EnergyJoules + o.EnergyJoules)
	u.IdleSeconds = sat(u.IdleSeconds + o.IdleSeconds)
	u.CPUSeconds = sat(u.CPUSeconds + o.CPUSeconds)
	u.MemoryPeakBytes = max(u.MemoryPeakBytes, o.MemoryPeakBytes)
}

// Measured reports whether any GPU reading with a known utilisation was
// folded in.
func (u Usage) Measured() bool { return u.GPUSeconds > 0 }

// MeanUtilization is the time-weighted mean GPU utilisation over the
// covered device time, in percent (Slurm's TRESUsageInAve gres/gpuutil);
// 0 when nothing was measured.
func (u Usage) MeanUtilization() float64 {
	if u.GPUSeconds == 0 {
		return 0
	}
	return 100 * u.BusyGPUSeconds / u.GPUSeconds
}

// MeanMemoryMiB is the time-weighted mean device memory in use over the
// covered time (TRESUsageInAve gres/gpumem); 0 when nothing was covered.
func (u Usage) MeanMemoryMiB() float64 {
	if u.CoveredSeconds == 0 {
		return 0
	}
	return u.MemoryMiBSeconds / u.CoveredSeconds
}

// IdleFor is how long the job's readings have been idle without a break,
// up to its latest reading (0 when the latest reading was busy).
func (u Usage) IdleFor() time.Duration {
	if u.IdleSince.IsZero() || !u.Last.After(u.IdleSince) {
		return 0
	}
	return u.Last.Sub(u.IdleSince)
}

// IsIdle reports whether the job is allocated but idle under rule: its
// readings have stayed below rule.IdleBelow for at least rule.IdleAfter.
// It reads only the readings' evidence (never a clock), so a job whose
// agent stops reporting keeps the state its last reading gave it.
func (u Usage) IsIdle(rule Rule) bool {
	return rule.IdleBelow > 0 && !u.IdleSince.IsZero() && u.IdleFor() >= rule.IdleAfter
}

// sat is x, or the largest float where a sum of finite readings
// overflowed: a Usage stays finite (and so encodable) whatever it folds.
func sat(x float64) float64 { return min(x, math.MaxFloat64) }
