package sim

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInvalidProfile reports a utilisation Profile or a power model that
// the simulator rejects.
var ErrInvalidProfile = errors.New("sim: invalid utilisation profile")

// MaxPhases is how many phases a Profile holds.
const MaxPhases = 4

// ProfileScale is the fixed-point scale of a Phase: End and Util are in
// units of 1/ProfileScale of the work and of 100 % (0.01 % steps).
const ProfileScale = 10000

// MaxStall is the longest startup stall a Profile holds (its Stall is
// kept in whole seconds in 32 bits).
const MaxStall = math.MaxUint32 * time.Second

// Phase is one stretch of a job's work at a constant GPU utilisation.
type Phase struct {
	// End is where the phase ends, as a fraction of the work after the
	// stall in units of 1/ProfileScale (1 to ProfileScale; the phase
	// starts where the previous one ended, or at the end of the stall).
	End uint16
	// Util is the phase's mean SM utilisation of each of the job's GPUs
	// (NVML's utilization.gpu, the percent of time a kernel ran), in
	// units of 1/ProfileScale of 100 % (0 to ProfileScale).
	Util uint16
}

// Profile describes a job's GPU activity over its work, as measured
// (sacct's TRESUsageInAve gres/gpuutil gives its mean) or modelled: a
// startup stall at 0 % (data loading, container pull) of a fixed
// duration, then up to MaxPhases piecewise-constant phases covering the
// rest of the work in order. The work is the job's Runtime as the
// simulator replays it: a run that covers only part of it (ended at its
// time limit, preempted, requeued and restarted at its last checkpoint)
// is charged the part of the profile it covered.
//
// The zero Profile means "unknown": the job was not measured, and its
// GPU-hours are counted as unmeasured (Goodput.UnmeasuredGPUHours), left
// out of goodput and energy. A known profile has at least one phase; its
// used phases come first, their Ends increase strictly and the last one
// is ProfileScale; unused phases are zero. A Profile is 20 bytes and
// holds no pointer.
type Profile struct {
	// Phases are the phases in order; unused trailing ones are zero.
	Phases [MaxPhases]Phase
	// StallSeconds is the startup stall, in seconds at 0 % utilisation
	// at the start of the work (cut to the work when longer). Zero: none.
	StallSeconds uint32
}

// ConstantProfile returns the profile of a job whose GPUs ran at util
// percent all along (a per-job mean utilisation), util rounded to
// 0.01 %. It is invalid (Validate) for util outside [0, 100].
func ConstantProfile(util float64) Profile {
	return Profile{Phases: [MaxPhases]Phase{{End: ProfileScale, Util: fixed(util / 100)}}}
}

// PhaseOf returns the phase that ends at fraction end of the work after
// the stall (in (0, 1]) at util percent, both rounded to the nearest
// 1/ProfileScale. Values out of range give an invalid phase, which
// Profile.Validate rejects.
func PhaseOf(end, util float64) Phase { return Phase{End: fixed(end), Util: fixed(util / 100)} }

// fixed rounds v in [0, 1] to units of 1/ProfileScale; v out of range (or
// NaN) gives a value Validate rejects (0 for End, above ProfileScale for
// Util and End above 1).
func fixed(v float64) uint16 {
	switch {
	case v >= 0 && v <= 1:
		return uint16(math.Round(v * ProfileScale))
	case v > 1:
		return math.MaxUint16
	}
	return math.MaxUint16 // negative or NaN: out of range either way
}

// Known reports whether the profile is measured (not the zero Profile).
func (p Profile) Known() bool { return p != Profile{} }

// Validate checks the profile: the zero Profile, or at least one phase
// with strictly increasing Ends, the last used one ProfileScale,
// utilisations at most 100 %, the unused phases zero.
func (p Profile) Validate() error {
	if !p.Known() {
		return nil
	}
	prev := uint16(0)
	done := false
	for i, ph := range p.Phases {
		switch {
		case done:
			if ph != (Phase{}) {
				return fmt.Errorf("%w: phase %d after the phase that ends the work", ErrInvalidProfile, i+1)
			}
			continue
		case ph == (Phase{}):
			if i == 0 {
				return fmt.Errorf("%w: a stall without phases", ErrInvalidProfile)
			}
			return fmt.Errorf("%w: the phases end at %v of the work, not at 1", ErrInvalidProfile, float64(prev)/ProfileScale)
		case ph.Util > ProfileScale:
			return fmt.Errorf("%w: phase %d utilisation %v %% over 100 %%", ErrInvalidProfile, i+1, float64(ph.Util)/100)
		case ph.End <= prev || ph.End > ProfileScale:
			return fmt.Errorf("%w: phase %d ends at %v of the work (want after %v, at most 1)",
				ErrInvalidProfile, i+1, float64(ph.End)/ProfileScale, float64(prev)/ProfileScale)
		}
		prev = ph.End
		done = ph.End == ProfileScale
	}
	if !done {
		return fmt.Errorf("%w: the phases end at %v of the work, not at 1", ErrInvalidProfile, float64(prev)/ProfileScale)
	}
	return nil
}

// Mean returns the profile's mean utilisation (percent) over a work of
// duration work: the time-weighted mean of the stall and the phases.
// It is 0 for the zero Profile or a work of zero length.
func (p Profile) Mean(work time.Duration) float64 {
	if work <= 0 || !p.Known() {
		return 0
	}
	return 100 * p.busy(work, 0, work) / work.Seconds()
}

// At returns the utilisation (percent) the profile gives the work
// position pos of a work of duration work: 0 in the stall, the phase's
// utilisation after it; 0 outside [0, work) and for the zero Profile.
// It is what a GPU reading of a simulated running job would show, for a
// telemetry feed of the simulation.
func (p Profile) At(work, pos time.Duration) float64 {
	if pos < 0 || pos >= work || !p.Known() {
		return 0
	}
	stall := min(time.Duration(p.StallSeconds)*time.Second, work)
	if pos < stall {
		return 0
	}
	x := (pos - stall).Seconds() / (work - stall).Seconds()
	for _, ph := range p.Phases {
		if ph.End == 0 {
			break
		}
		if x < float64(ph.End)/ProfileScale {
			return float64(ph.Util) / (ProfileScale / 100)
		}
	}
	return 0
}

// busy returns the integral over the work positions [a, b) of a work of
// duration work of the utilisation, as a fraction of 1 (seconds × u):
// the busy seconds of one GPU that ran that part of the work. The
// profile must be valid; a and b are clamped to [0, work].
func (p Profile) busy(work, a, b time.Duration) float64 {
	a, b = max(a, 0), min(b, work)
	if b <= a {
		return 0
	}
	stall := min(time.Duration(p.StallSeconds)*time.Second, work)
	rest := (work - stall).Seconds()
	from, to := (a - stall).Seconds(), (b - stall).Seconds() // in the rest
	sum := 0.0
	start := 0.0
	for _, ph := range p.Phases {
		if ph.End == 0 {
			break
		}
		end := rest * float64(ph.End) / ProfileScale
		if lo, hi := max(start, from), min(end, to); hi > lo {
			sum += (hi - lo) * float64(ph.Util) / ProfileScale
		}
		start = end
	}
	return sum
}

// PowerModel is the simple GPU power model of the energy figures: a GPU
// allocated to a job draws IdleWatts plus its utilisation × (MaxWatts −
// IdleWatts). It is a model of the board's draw, not a measurement:
// utilisation (SM activity) is only a proxy for power.
type PowerModel struct {
	// IdleWatts is the draw of an allocated GPU running no kernel.
	IdleWatts float64
	// MaxWatts is the draw at 100 % utilisation: the board's TDP.
	MaxWatts float64
}

// Default power model: an NVIDIA H100 SXM5, whose published maximum
// thermal design power is 700 W (NVIDIA H100 Tensor Core GPU datasheet);
// idle draw is taken as a tenth of it, 70 W (an assumption: NVIDIA
// publishes no idle figure; measured H100 SXM boards idle at 60–90 W).
const (
	DefaultGPUIdleWatts = 70
	DefaultGPUMaxWatts  = 700
)

// DefaultPowerModel returns the H100 SXM5 model of DefaultGPUIdleWatts
// and DefaultGPUMaxWatts.
func DefaultPowerModel() PowerModel {
	return PowerModel{IdleWatts: DefaultGPUIdleWatts, MaxWatts: DefaultGPUMaxWatts}
}

// Validate checks the model: 0 ≤ IdleWatts ≤ MaxWatts, MaxWatts
// positive and finite. (The zero model, which Options.Power reads as
// DefaultPowerModel, is invalid here, so that a caller asking for 0 W is
// told rather than given the default.)
func (m PowerModel) Validate() error {
	if !(m.IdleWatts >= 0 && m.IdleWatts <= m.MaxWatts && m.MaxWatts > 0 && !math.IsInf(m.MaxWatts, 1)) {
		return fmt.Errorf("%w: power model idle %v W, max %v W (want 0 ≤ idle ≤ max, max > 0, finite)", ErrInvalidProfile, m.IdleWatts, m.MaxWatts)
	}
	return nil
}

// EnergyKWh returns the energy in kWh of allocated GPU-seconds of which
// busy GPU-seconds ran a kernel: allocated × IdleWatts + busy ×
// (MaxWatts − IdleWatts), in joules / 3.6e6.
func (m PowerModel) EnergyKWh(allocatedGPUSeconds, busyGPUSeconds float64) float64 {
	return (allocatedGPUSeconds*m.IdleWatts + busyGPUSeconds*(m.MaxWatts-m.IdleWatts)) / 3.6e6
}
