package accounting

import (
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/telemetry"
)

// The goodput fields of job and step records (Usage, launch counts, lost
// and prior GPU-seconds, allocation quality): validation, normalisation
// and their part of the binary encoding.

// gpuTRES is the TRES name whose count is a job's GPUs.
const gpuTRES = "gres/gpu"

// AllocGPUSeconds returns the GPU-seconds allocated to j over all its
// runs: AllocTRES["gres/gpu"] × Elapsed(now) + PriorGPUSeconds.
func (j JobRecord) AllocGPUSeconds(now time.Time) float64 {
	return float64(j.AllocTRES[gpuTRES])*j.Elapsed(now).Seconds() + j.PriorGPUSeconds
}

// validGoodput checks j's goodput fields: counts non-negative and at
// most maxCount, failures at most attempts, GPU-seconds finite and non-negative, lost work at
// most what a finished job was allocated, quality 0 or in (0, 1], and a
// valid Usage.
func (j *JobRecord) validGoodput() error {
	switch {
	case j.LaunchAttempts < 0:
		return fmt.Errorf("%w: launch_attempts %d is negative", ErrInvalid, j.LaunchAttempts)
	case j.LaunchFailures < 0:
		return fmt.Errorf("%w: launch_failures %d is negative", ErrInvalid, j.LaunchFailures)
	case j.LaunchFailures > j.LaunchAttempts:
		return fmt.Errorf("%w: launch_failures %d exceed launch_attempts %d", ErrInvalid, j.LaunchFailures, j.LaunchAttempts)
	case j.LaunchAttempts > maxCount:
		return fmt.Errorf("%w: launch_attempts %d is over %d", ErrInvalid, j.LaunchAttempts, maxCount)
	}
	for _, c := range []struct {
		field string
		v     float64
	}{{"lost_gpu_seconds", j.LostGPUSeconds}, {"prior_gpu_seconds", j.PriorGPUSeconds}} {
		if err := validNonNeg(c.field, c.v); err != nil {
			return err
		}
	}
	if !j.End.IsZero() {
		// Times are kept in whole seconds: allow each GPU one second of
		// rounding, on the times as stored (the check a read makes).
		stored := JobRecord{Start: normTime(j.Start), End: normTime(j.End), AllocTRES: j.AllocTRES, PriorGPUSeconds: j.PriorGPUSeconds}
		alloc := stored.AllocGPUSeconds(stored.End)
		if j.LostGPUSeconds > alloc+float64(j.AllocTRES[gpuTRES]) {
			return fmt.Errorf("%w: lost_gpu_seconds %v exceed the %v GPU-seconds allocated", ErrInvalid, j.LostGPUSeconds, alloc)
		}
	}
	if !(j.Quality == 0 || j.Quality > 0 && j.Quality <= 1) {
		return fmt.Errorf("%w: alloc_quality %v (want 0 for unscored, or in (0, 1])", ErrInvalid, j.Quality)
	}
	return validUsage(j.Usage)
}

// validNonNeg checks that v is a finite number ≥ 0.
func validNonNeg(field string, v float64) error {
	if err := validFloat(field, v); err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("%w: %s %v is negative", ErrInvalid, field, v)
	}
	return nil
}

// usageSlack is the relative rounding a Usage's sums may carry when one
// bounds another (busy ≤ covered device time).
const usageSlack = 1e-9

// validUsage checks a record's Usage: counts and sums non-negative and
// finite, utilisation at most 100 % (busy GPU-seconds at most the GPU-
// seconds covered, the highest mean at most 100), idle time at most the
// covered time, times in range and ordered.
func validUsage(u telemetry.Usage) error {
	switch {
	case u.Samples < 0:
		return fmt.Errorf("%w: usage.samples %d is negative", ErrInvalid, u.Samples)
	case u.HostSamples < 0:
		return fmt.Errorf("%w: usage.host_samples %d is negative", ErrInvalid, u.HostSamples)
	case u.MemoryMaxMiB < 0:
		return fmt.Errorf("%w: usage.memory_max_mib %d is negative", ErrInvalid, u.MemoryMaxMiB)
	case u.MemoryPeakBytes < 0:
		return fmt.Errorf("%w: usage.memory_peak_bytes %d is negative", ErrInvalid, u.MemoryPeakBytes)
	}
	for _, c := range []struct {
		field string
		v     float64
	}{{"usage.gpu_seconds", u.GPUSeconds}, {"usage.busy_gpu_seconds", u.BusyGPUSeconds},
		{"usage.utilization_max", u.UtilizationMax}, {"usage.memory_mib_seconds", u.MemoryMiBSeconds},
		{"usage.covered_seconds", u.CoveredSeconds}, {"usage.power_max_watts", u.PowerMaxWatts},
		{"usage.energy_joules", u.EnergyJoules}, {"usage.idle_seconds", u.IdleSeconds}, {"usage.cpu_seconds", u.CPUSeconds}} {
		if err := validNonNeg(c.field, c.v); err != nil {
			return err
		}
	}
	switch {
	case u.BusyGPUSeconds > u.GPUSeconds*(1+usageSlack):
		return fmt.Errorf("%w: usage.busy_gpu_seconds %v exceed usage.gpu_seconds %v (utilisation over 100%%)", ErrInvalid, u.BusyGPUSeconds, u.GPUSeconds)
	case u.UtilizationMax > 100:
		return fmt.Errorf("%w: usage.utilization_max %v%% is over 100%%", ErrInvalid, u.UtilizationMax)
	case u.IdleSeconds > u.CoveredSeconds*(1+usageSlack):
		return fmt.Errorf("%w: usage.idle_seconds %v exceed usage.covered_seconds %v", ErrInvalid, u.IdleSeconds, u.CoveredSeconds)
	}
	for _, c := range []struct {
		field string
		t     time.Time
	}{{"usage.first", u.First}, {"usage.last", u.Last}, {"usage.idle_since", u.IdleSince}} {
		if err := validTime(c.field, c.t, true); err != nil {
			return err
		}
	}
	if u.Samples == 0 && !(u.First.IsZero() && u.Last.IsZero() && u.GPUSeconds == 0) {
		return fmt.Errorf("%w: usage without GPU samples has reading times or GPU-seconds", ErrInvalid)
	}
	if u.Samples > 0 && (u.First.IsZero() || u.Last.Before(u.First)) {
		return fmt.Errorf("%w: usage.first %v and usage.last %v (want first set, last not before it)", ErrInvalid, u.First, u.Last)
	}
	return nil
}

// normUsage stores u's times as the record's: whole seconds, UTC.
func normUsage(u *telemetry.Usage) {
	u.First, u.Last, u.IdleSince = normTime(u.First), normTime(u.Last), normTime(u.IdleSince)
}

// Record versions: codecVersion for job and step records without goodput
// fields (byte for byte what the first encoder wrote, so records written
// before the fields existed decode unchanged); goodputVersion for those
// that carry them, appended after the version-1 fields.
const goodputVersion = codecVersion + 1

// recordVersion is the version byte of a job or step record: goodputVersion
// when it carries goodput fields.
func recordVersion(goodput bool) byte {
	if goodput {
		return goodputVersion
	}
	return codecVersion
}

// knownRecordVersion reports whether ver is a job or step record version
// this code reads.
func knownRecordVersion(ver byte) bool { return ver == codecVersion || ver == goodputVersion }

// maxCount is the largest launch count a record holds (what the codec
// reads back).
const maxCount = math.MaxInt32

// Goodput tail of a job record: a presence byte, then the fields present.
const (
	gfAttempts = 1 << iota
	gfFailures
	gfLost
	gfPrior
	gfQuality
	gfUsage
)

// jobTail returns the presence byte of j's goodput fields (0: none).
func jobTail(j *JobRecord) byte {
	var fl byte
	for _, c := range []struct {
		bit byte
		set bool
	}{{gfAttempts, j.LaunchAttempts != 0}, {gfFailures, j.LaunchFailures != 0}, {gfLost, j.LostGPUSeconds != 0},
		{gfPrior, j.PriorGPUSeconds != 0}, {gfQuality, j.Quality != 0}, {gfUsage, j.Usage != telemetry.Usage{}}} {
		if c.set {
			fl |= c.bit
		}
	}
	return fl
}

// encodeJobTail appends j's goodput fields (presence byte fl ≠ 0).
func (e *enc) jobTail(j *JobRecord, fl byte) {
	e.byte1(fl)
	if fl&gfAttempts != 0 {
		e.u(uint64(j.LaunchAttempts))
	}
	if fl&gfFailures != 0 {
		e.u(uint64(j.LaunchFailures))
	}
	if fl&gfLost != 0 {
		e.f(j.LostGPUSeconds)
	}
	if fl&gfPrior != 0 {
		e.f(j.PriorGPUSeconds)
	}
	if fl&gfQuality != 0 {
		e.f(j.Quality)
	}
	if fl&gfUsage != 0 {
		e.usage(&j.Usage)
	}
}

// decodeJobTail reads the goodput fields of a version-2 job record.
func decodeJobTail(key string, d *dec, j *JobRecord) error {
	fl := d.byte1()
	if fl == 0 || fl >= gfUsage<<1 {
		return corruptKey(key, "job record goodput flags %#x", fl)
	}
	count := func() int {
		v := d.u()
		if v > maxCount {
			d.fail("count out of range")
			return 0
		}
		return int(v)
	}
	if fl&gfAttempts != 0 {
		j.LaunchAttempts = count()
	}
	if fl&gfFailures != 0 {
		j.LaunchFailures = count()
	}
	if fl&gfLost != 0 {
		j.LostGPUSeconds = d.f()
	}
	if fl&gfPrior != 0 {
		j.PriorGPUSeconds = d.f()
	}
	if fl&gfQuality != 0 {
		j.Quality = d.f()
	}
	if fl&gfUsage != 0 {
		return d.usage(key, &j.Usage)
	}
	return nil
}

// Usage encoding: a varint mask of the non-zero fields, in the order of
// usageFields, then each: counts, MiB and bytes as varints, times as unix
// seconds (varints), sums as float64.
const numUsageFields = 16

// usageField points at one field of a Usage: exactly one of i, t, f is set.
type usageField struct {
	i *int64
	t *time.Time
	f *float64
}

// usageFields returns u's fields in their encoding order.
func usageFields(u *telemetry.Usage) [numUsageFields]usageField {
	return [numUsageFields]usageField{{i: &u.Samples}, {i: &u.HostSamples}, {t: &u.First}, {t: &u.Last},
		{f: &u.GPUSeconds}, {f: &u.BusyGPUSeconds}, {f: &u.UtilizationMax}, {i: &u.MemoryMaxMiB}, {f: &u.MemoryMiBSeconds},
		{f: &u.CoveredSeconds}, {f: &u.PowerMaxWatts}, {f: &u.EnergyJoules}, {f: &u.IdleSeconds}, {t: &u.IdleSince},
		{f: &u.CPUSeconds}, {i: &u.MemoryPeakBytes}}
}

func (e *enc) usage(u *telemetry.Usage) {
	fields := usageFields(u)
	var mask uint64
	for k, x := range fields {
		if x.i != nil && *x.i != 0 || x.t != nil && !x.t.IsZero() || x.f != nil && *x.f != 0 {
			mask |= 1 << k
		}
	}
	e.u(mask)
	for k, x := range fields {
		switch {
		case mask&(1<<k) == 0:
		case x.i != nil:
			e.i(*x.i)
		case x.t != nil:
			e.i(x.t.Unix())
		default:
			e.f(*x.f)
		}
	}
}

func (d *dec) usage(key string, u *telemetry.Usage) error {
	mask := d.u()
	if mask >= 1<<numUsageFields {
		return corruptKey(key, "usage field mask %#x", mask)
	}
	*u = telemetry.Usage{}
	for k, x := range usageFields(u) {
		switch {
		case mask&(1<<k) == 0:
		case x.i != nil:
			*x.i = d.i()
		case x.t != nil:
			*x.t = timeOrZero(d.i())
		default:
			*x.f = d.f()
		}
	}
	if d.err != "" {
		return corruptKey(key, "usage: %s", d.err)
	}
	if err := validUsage(*u); err != nil {
		return corruptKey(key, "usage: %v", err)
	}
	return nil
}
