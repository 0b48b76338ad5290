package sim

import (
	"cmp"
	"slices"
	"time"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// ReasonCount is the number of pending jobs that wait for one reason.
type ReasonCount struct {
	Reason policy.Reason
	Jobs   int
}

// ExplainSample is the explanation state of the cluster at one instant of
// the sampling grid (see Options.ExplainEvery): why jobs wait and why
// capacity is idle. It is the state left by the last scheduling cycle at
// or before At (events at a later instant are not applied yet), and, as
// in any sampling estimate, it stands for the grid steps from At to
// At+Span.
type ExplainSample struct {
	// At is a grid instant, Start + k × ExplainEvery.
	At time.Time
	// Span is how long the sample stands for: one grid step, or several
	// when no cycle ran between their instants (the state was the same),
	// and shorter for the last one, which ends at Result.End.
	Span time.Duration
	// Reasons counts the pending jobs per reason (policy.Reason), in
	// reason-code order, reasons with no job left out.
	Reasons []ReasonCount
	// IdleGPUs and IdleCPUs are the idle units per class of
	// Scheduler.IdleCapacity at At.
	IdleGPUs, IdleCPUs scheduler.IdleCounts
}

// Pending returns the number of pending jobs of the sample.
func (s ExplainSample) Pending() int {
	n := 0
	for _, rc := range s.Reasons {
		n += rc.Jobs
	}
	return n
}

// ReasonShare is the part one pending reason takes of the queue over a run.
type ReasonShare struct {
	Reason policy.Reason
	// JobHours is the pending-job-time spent with this reason: the time
	// integral of the number of jobs pending for it.
	JobHours float64
	// Share is JobHours as a fraction of all pending-job-time.
	Share float64
}

// ExplainSummary aggregates the explanation statistics of a run
// (Options.ExplainEvery); it is zero when they are off.
type ExplainSummary struct {
	// Every is the sampling step (Options.ExplainEvery); Samples counts
	// the idle-capacity classifications made (Scheduler.IdleCapacity
	// calls), at most one per grid step and one per cycle.
	Every   time.Duration
	Samples int
	// PendingJobHours is the time integral of the queue length: the total
	// pending-job-time the reasons share out.
	PendingJobHours float64
	// Reasons shares out the pending-job-time by reason, largest share
	// first (ties by reason code). It is exact: the reasons of every
	// cycle count, each for the time until the next cycle.
	Reasons []ReasonShare
	// IdleGPUHours and IdleCPUHours are the idle GPU- and CPU-time per
	// idle class (scheduler.IdleClass), estimated from the grid samples:
	// each sample's counts times its Span.
	IdleGPUHours, IdleCPUHours [scheduler.NumIdleClasses]float64
	// IdleShares is the fraction of idle GPU-time per class (idle
	// CPU-time on a cluster without GPUs); the classes sum to 1, or all
	// are 0 when nothing was idle.
	IdleShares [scheduler.NumIdleClasses]float64
}

// Share returns the fraction of pending-job-time of reason r (0 when
// absent).
func (e ExplainSummary) Share(r policy.Reason) float64 {
	for _, rs := range e.Reasons {
		if rs.Reason == r {
			return rs.Share
		}
	}
	return 0
}

// explainer gathers the explanation statistics of a run.
type explainer struct {
	every time.Duration
	gpu   bool // share idle GPU-time (else CPU-time)
	// pending reasons after the last cycle, indexed by reason code, and
	// the codes in use
	counts []int
	used   []policy.Reason
	// exact pending-job-seconds per reason
	jobSec  []float64
	lastAt  time.Time
	have    bool
	grid    time.Time // next grid instant to sample
	samples []ExplainSample
	sum     ExplainSummary
}

func newExplainer(every time.Duration, start time.Time, gpu bool) *explainer {
	n := len(policy.Reasons())
	return &explainer{every: every, gpu: gpu, counts: make([]int, n), jobSec: make([]float64, n), grid: start,
		sum: ExplainSummary{Every: every}}
}

// observe records the pending reasons after the cycle at now.
func (e *explainer) observe(now time.Time, pending []scheduler.Pending) {
	e.integrate(now)
	for _, r := range e.used {
		e.counts[r] = 0
	}
	e.used = e.used[:0]
	for _, p := range pending {
		r := p.Reason
		if int(r) >= len(e.counts) {
			// A code the policy package does not list: count it anyway.
			e.counts = append(e.counts, make([]int, int(r)+1-len(e.counts))...)
			e.jobSec = append(e.jobSec, make([]float64, int(r)+1-len(e.jobSec))...)
		}
		if e.counts[r] == 0 {
			e.used = append(e.used, r)
		}
		e.counts[r]++
	}
	e.have, e.lastAt = true, now
}

// integrate adds the reasons after the last cycle over [lastAt, t).
func (e *explainer) integrate(t time.Time) {
	if !e.have {
		return
	}
	if dt := t.Sub(e.lastAt).Seconds(); dt > 0 {
		for _, r := range e.used {
			e.jobSec[r] += float64(e.counts[r]) * dt
		}
	}
	e.lastAt = t
}

// sample records the grid instants before now with the state left by the
// last cycle: one sample (one IdleCapacity call) for all of them, since
// nothing changed in between.
func (e *explainer) sample(s *scheduler.Scheduler, now time.Time) {
	if !e.have || !e.grid.Before(now) {
		return
	}
	k := (now.Sub(e.grid)-1)/e.every + 1 // grid instants in [grid, now)
	rep := s.IdleCapacity(e.grid)
	smp := ExplainSample{At: e.grid, Span: time.Duration(k) * e.every, IdleGPUs: rep.GPUs, IdleCPUs: rep.CPUs}
	if len(e.used) > 0 {
		rc := make([]ReasonCount, 0, len(e.used))
		for _, r := range e.used {
			rc = append(rc, ReasonCount{Reason: r, Jobs: e.counts[r]})
		}
		slices.SortFunc(rc, func(a, b ReasonCount) int { return cmp.Compare(a.Reason, b.Reason) })
		smp.Reasons = rc
	}
	e.samples = append(e.samples, smp)
	e.sum.Samples++
	e.grid = e.grid.Add(time.Duration(k) * e.every)
}

// finish closes the statistics at end (the last event) and returns the
// series and the summary.
func (e *explainer) finish(end time.Time) ([]ExplainSample, ExplainSummary) {
	e.integrate(end)
	if n := len(e.samples); n > 0 {
		last := &e.samples[n-1]
		if stop := last.At.Add(last.Span); stop.After(end) {
			last.Span = end.Sub(last.At)
		}
	}
	var total float64
	for r, v := range e.jobSec {
		if v > 0 {
			e.sum.Reasons = append(e.sum.Reasons, ReasonShare{Reason: policy.Reason(r), JobHours: v / 3600})
			total += v
		}
	}
	e.sum.PendingJobHours = total / 3600
	for i := range e.sum.Reasons {
		e.sum.Reasons[i].Share = e.sum.Reasons[i].JobHours * 3600 / total
	}
	slices.SortStableFunc(e.sum.Reasons, func(a, b ReasonShare) int { return cmp.Compare(b.JobHours, a.JobHours) })
	for _, smp := range e.samples {
		h := smp.Span.Hours()
		for c := range scheduler.NumIdleClasses {
			e.sum.IdleGPUHours[c] += float64(smp.IdleGPUs[c]) * h
			e.sum.IdleCPUHours[c] += float64(smp.IdleCPUs[c]) * h
		}
	}
	hours := e.sum.IdleCPUHours
	if e.gpu {
		hours = e.sum.IdleGPUHours
	}
	var idle float64
	for _, v := range hours {
		idle += v
	}
	if idle > 0 {
		for c, v := range hours {
			e.sum.IdleShares[c] = v / idle
		}
	}
	return e.samples, e.sum
}
