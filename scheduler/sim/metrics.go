package sim

import (
	"math"
	"slices"
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

// BSLDThreshold is τ, the run time below which bounded slowdown treats a
// job as if it had run τ (the literature's usual 10 s), so that very short
// jobs do not dominate the mean.
const BSLDThreshold = 10 * time.Second

// Wait returns how long the job waited in the queue (start − submit).
func (r JobResult) Wait() time.Duration { return r.Start.Sub(r.Job.Submit) }

// Response returns the job's response (turnaround) time: end − submit.
func (r JobResult) Response() time.Duration { return r.End.Sub(r.Job.Submit) }

// RunTime returns how long the job ran in the simulation: end − start. It
// is shorter than Job.Runtime when the job was ended at its time limit.
func (r JobResult) RunTime() time.Duration { return r.End.Sub(r.Start) }

// Slowdown returns (wait + run) / run. A run time under one second counts
// as one second (the resolution of workload traces), so the value is
// always finite and at least 1 for a job that ran at least a second.
func (r JobResult) Slowdown() float64 { return slowdown(r.Wait(), r.RunTime()) }

func slowdown(wait, run time.Duration) float64 {
	return float64(wait+run) / float64(max(run, time.Second))
}

// BoundedSlowdown returns max(1, (wait + run) / max(tau, run)): the
// slowdown with run times below tau counted as tau. Use BSLDThreshold for
// the usual τ = 10 s.
func (r JobResult) BoundedSlowdown(tau time.Duration) float64 {
	return boundedSlowdown(r.Wait(), r.RunTime(), tau)
}

func boundedSlowdown(wait, run, tau time.Duration) float64 {
	return max(1, float64(wait+run)/float64(max(tau, run, 1)))
}

// ETAError returns the error of the job's first start estimate, actual
// start − FirstExpectedStart (negative when it started early), and
// whether it had one.
func (r JobResult) ETAError() (time.Duration, bool) { return etaError(r.Start, r.FirstExpectedStart) }

func etaError(start, first time.Time) (time.Duration, bool) {
	if first.IsZero() {
		return 0, false
	}
	return start.Sub(first), true
}

// CPUHours returns the CPU time allocated to the job's last run: its CPUs
// × run time, less the time it was suspended (its CPUs were lent then).
func (r JobResult) CPUHours() float64 { return cpuHours(r.CPUs, r.RunTime(), r.Suspended) }

// cpuHours and gpuHours round their product explicitly (the conversion),
// so that a sum they are inlined into cannot fuse it into a multiply-add
// and round differently.
func cpuHours(cpus int64, run, suspended time.Duration) float64 {
	return float64(float64(cpus) * (run - suspended).Hours())
}

// GPUHours returns the GPU time allocated to the job's last run: its GPUs
// × run time (a suspended job keeps its GPUs).
func (r JobResult) GPUHours() float64 { return gpuHours(r.GPUs, r.RunTime()) }

func gpuHours(gpus int64, run time.Duration) float64 { return float64(float64(gpus) * run.Hours()) }

// Lost reports whether the job's run was wasted: it was ended before its
// work was done (TIMEOUT, NODE_FAIL, PREEMPTED, or CANCELLED while
// running). A job that ran to completion, even with a non-zero exit code
// (FAILED), did its work and is not lost.
func (r JobResult) Lost() bool {
	switch r.State {
	case scheduler.JobTimeout, scheduler.JobNodeFail, scheduler.JobPreempted:
		return true
	case scheduler.JobCancelled:
		return !r.Start.IsZero()
	}
	return false
}

// LostCPUHours returns the CPU-hours a lost run (see Lost) cost the
// workload, else 0:
//
//   - a job ended at its time limit (TIMEOUT) loses the part of its work
//     beyond the limit: its CPUs × (Job.Runtime − the time it ran, less
//     the time it was suspended), the work the limit did not let it do. A
//     job that overran its limit by seconds loses those seconds, not its
//     run: what it did run is counted as done (the simulator cannot know
//     whether a killed job's output was kept), and with ExactEstimates,
//     which cut run times to the limits, no job loses any. Replay CPU-hours
//   - lost to time limits = the workload's CPU-hours (Job.Runtime ×
//     CPUs), when nothing else ends jobs early;
//   - a job ended by a node failure, a preemption or a cancellation while
//     running loses its whole final run (CPUHours): that work is destroyed
//     (LostCPUSeconds is preemption's own measure, from the last
//     checkpoint).
func (r JobResult) LostCPUHours() float64 {
	c, _, _ := lostHours(&r)
	return c
}

// LostGPUHours returns the GPU-hours a lost run cost the workload, as
// LostCPUHours defines it: for a TIMEOUT, its GPUs × the work beyond the
// limit; for other lost runs, the whole final run (GPUHours).
func (r JobResult) LostGPUHours() float64 {
	_, g, _ := lostHours(&r)
	return g
}

// lostHours returns the CPU- and GPU-hours r's run lost (see
// LostCPUHours), and whether they were lost to its time limit.
func lostHours(r *JobResult) (cpuH, gpuH float64, timeLimit bool) {
	switch {
	case r.State == scheduler.JobTimeout:
		beyond := max(0, r.Job.Runtime-(r.RunTime()-r.Suspended))
		return cpuHours(r.CPUs, beyond, 0), gpuHours(r.GPUs, beyond), true
	case r.Lost():
		return cpuHours(r.CPUs, r.RunTime(), r.Suspended), gpuHours(r.GPUs, r.RunTime()), false
	}
	return 0, 0, false
}

// Stats describes a distribution: its mean and percentiles. Percentiles
// use the nearest-rank definition: P90 is the smallest value that at least
// 90 % of the values do not exceed. All are zero for an empty set.
type Stats struct {
	Mean, P50, P90, P95, P99, Max float64
}

// ETAStats measures the honesty of the scheduler's start estimates: for
// every job that had one, how far its actual start was from the first
// ExpectedStart the backfill plan gave it (JobResult.FirstExpectedStart).
// It is zero without backfill, which makes no estimates.
type ETAStats struct {
	// Jobs counts the jobs that ran with an estimate; Unestimated those
	// that ran without one (started in the first cycle that could start
	// them, or never planned: beyond the window, not tested).
	Jobs, Unestimated int
	// Error is the distribution of |actual start − first estimate|, in
	// seconds, over Jobs (P50 is the median).
	Error Stats
	// Bias is the mean of actual start − first estimate, in seconds:
	// negative when jobs start earlier than promised on average.
	Bias float64
	// OnTime is the fraction of Jobs that started no later than first
	// estimated; Early and Late count the jobs that started before and
	// after it (Jobs − Early − Late started exactly on time).
	OnTime      float64
	Early, Late int
}

// Summary aggregates a run: per-job metrics over every job that ran, and
// the time series over the span from the first arrival to the last event.
type Summary struct {
	// Jobs counts the jobs that ran; Rejected those the scheduler refused
	// at submit (they are in no other figure).
	Jobs, Rejected int
	// Completed, Failed and TimedOut count final states; Killed counts the
	// other ends (node failure, preemption, cancellation). Unknown counts
	// the jobs that ran to their end but whose workload does not say how
	// they ended (Job.ExitUnknown): neither completed nor failed.
	Completed, Failed, TimedOut, Killed, Unknown int
	// Wait and Response are in seconds; Slowdown and BSLD (bounded
	// slowdown with τ = BSLDThreshold) are ratios. Means are over all jobs.
	Wait, Response, Slowdown, BSLD Stats
	// Makespan is the span from the first arrival to the last event.
	Makespan time.Duration
	// CPUHours and GPUHours are the allocated totals (runs that a
	// requeue ended included); LostCPUHours and LostGPUHours what lost
	// final runs cost the workload (see JobResult.LostCPUHours: the work
	// beyond the limit of jobs ended at their time limit, the whole run of
	// jobs killed otherwise), of which LostCPUHoursTimeLimit and
	// LostGPUHoursTimeLimit is the time limits' part.
	CPUHours, GPUHours, LostCPUHours, LostGPUHours float64
	LostCPUHoursTimeLimit, LostGPUHoursTimeLimit   float64
	// Preemptions counts the preemptions of all jobs (any action), and
	// Restarts those that requeued a job.
	Preemptions, Restarts int
	// LostCPUHoursPreempted and LostGPUHoursPreempted are the work
	// preemption destroyed: JobResult.LostCPUSeconds and LostGPUSeconds
	// summed, in hours.
	LostCPUHoursPreempted, LostGPUHoursPreempted float64
	// CPUUtilization and GPUUtilization are the allocated fraction of the
	// cluster's capacity over the makespan, in [0, 1]. Utilization is the
	// GPU figure on a cluster with GPUs, the CPU figure otherwise.
	CPUUtilization, GPUUtilization, Utilization float64
	// MeanPending is the time-weighted mean queue length; MaxPending its
	// largest value after a cycle.
	MeanPending float64
	MaxPending  int
	// WaitingFraction is the fraction of the makespan during which at
	// least one job was pending.
	WaitingFraction float64
	// IdleCPUHoursWaiting and IdleGPUHoursWaiting are the capacity left
	// idle while jobs were pending — resources the queue could not use
	// (fragmentation, reservations, head-of-line blocking).
	IdleCPUHoursWaiting, IdleGPUHoursWaiting float64
	// IdleWhileWaiting is that idle capacity as a fraction of the total
	// capacity over the makespan (GPUs on a cluster with GPUs, CPUs
	// otherwise), in [0, 1].
	IdleWhileWaiting float64
	// ETA is the error of the first start estimates (see ETAStats).
	ETA ETAStats
	// Goodput is what the allocated GPUs did, from the jobs' utilisation
	// profiles: busy, useful and lost GPU-hours, goodput and energy.
	Goodput Goodput
	// Explain aggregates the explanation statistics, when
	// Options.ExplainEvery is set (Run only; Summarize leaves it zero).
	Explain ExplainSummary
	// Telemetry is what the simulated telemetry and the scheduler's
	// allocated-but-idle policy did (zero unless Options.TelemetryEvery).
	Telemetry TelemetrySummary
}

// Sample is the cluster's state over one stretch of virtual time, from At
// until the next sample's At. Exact series (Options.SeriesStep zero) hold
// the integer values after each cycle that changed them; resampled series
// hold time-weighted means over [At, At+step).
type Sample struct {
	At time.Time
	// Pending and Running are the queue length and the running jobs.
	Pending, Running float64
	// BusyCPUs and BusyGPUs are the allocated CPUs and GPUs.
	BusyCPUs, BusyGPUs float64
	// IdleCPUsWaiting and IdleGPUsWaiting are the CPUs and GPUs left idle
	// while at least one job was pending (zero when the queue is empty).
	IdleCPUsWaiting, IdleGPUsWaiting float64
}

func sameValues(a, b Sample) bool {
	a.At = b.At
	return a == b
}

// Summarize aggregates job results and an exact or resampled series of a
// cluster of capacity c over [start, end], as Run does. Use it to
// summarise a subset of a run (for example without a warm-up period).
// Its Goodput.IdleEnergyKWh is that of DefaultPowerModel (the jobs'
// energy is their results').
func Summarize(jobs []JobResult, series []Sample, c Capacity, start, end time.Time) Summary {
	col := newCollector(c, DefaultPowerModel())
	for i := range jobs {
		col.add(&jobs[i])
	}
	eachSegment(series, end, func(s Sample, until time.Time) { col.integrate(s, s.At, until) })
	return col.summary(0, start, end)
}

// eachSegment calls f with every sample of series and the end of the
// stretch it holds for: the next sample's At, or end for the last.
func eachSegment(series []Sample, end time.Time, f func(s Sample, until time.Time)) {
	for i, s := range series {
		until := end
		if i+1 < len(series) {
			until = series[i+1].At
		}
		f(s, until)
	}
}

// collector accumulates a Summary incrementally, so that Run needs no
// job list.
type collector struct {
	cap                               Capacity
	power                             PowerModel
	s                                 Summary
	waits, resps, slows, bslds        []float64
	etaErr                            []float64
	etaSigned                         float64
	have                              bool
	cur                               Sample // the state since cur.At
	pendInt, waitingSec, idleC, idleG float64
}

func newCollector(c Capacity, m PowerModel) collector { return collector{cap: c, power: m} }

// add counts the job r. (It takes r by pointer and calls JobResult's
// helpers rather than its methods, which are not inlined: each call would
// copy the whole JobResult.)
func (c *collector) add(r *JobResult) {
	c.s.Jobs++
	switch r.State {
	case scheduler.JobCompleted:
		if r.Job.ExitUnknown {
			c.s.Unknown++
		} else {
			c.s.Completed++
		}
	case scheduler.JobFailed:
		c.s.Failed++
	case scheduler.JobTimeout:
		c.s.TimedOut++
	default:
		c.s.Killed++
	}
	wait, run := r.Wait(), r.RunTime()
	c.waits = appendDoubling(c.waits, wait.Seconds())
	c.resps = appendDoubling(c.resps, r.Response().Seconds())
	c.slows = appendDoubling(c.slows, slowdown(wait, run))
	c.bslds = appendDoubling(c.bslds, boundedSlowdown(wait, run, BSLDThreshold))
	if d, ok := etaError(r.Start, r.FirstExpectedStart); ok {
		c.s.ETA.Jobs++
		c.etaErr = appendDoubling(c.etaErr, math.Abs(d.Seconds()))
		c.etaSigned += d.Seconds()
		switch {
		case d < 0:
			c.s.ETA.Early++
		case d > 0:
			c.s.ETA.Late++
		}
	} else {
		c.s.ETA.Unestimated++
	}
	gpuH := allocGPUHours(r)
	c.s.CPUHours += cpuHours(r.CPUs, run, r.Suspended) + r.RequeuedCPUHours
	c.s.GPUHours += gpuH
	c.s.Preemptions += r.Preemptions
	c.s.Restarts += r.Restarts
	c.s.LostCPUHoursPreempted += r.LostCPUSeconds / 3600
	c.s.LostGPUHoursPreempted += r.LostGPUSeconds / 3600
	addGoodput(&c.s.Goodput, r, gpuH)
	lostC, lostG, timeLimit := lostHours(r)
	c.s.LostCPUHours += lostC
	c.s.LostGPUHours += lostG
	if timeLimit {
		c.s.LostCPUHoursTimeLimit += lostC
		c.s.LostGPUHoursTimeLimit += lostG
	}
}

// appendDoubling appends v to x, doubling its capacity when it is full:
// append grows a long slice by a quarter at a time, which for the
// per-job metrics of a long replay allocates (and copies) about five
// times their final size in all, where doubling allocates twice.
func appendDoubling(x []float64, v float64) []float64 {
	if len(x) == cap(x) {
		x = slices.Grow(x, max(len(x), 64))
	}
	return append(x, v)
}

// observe records the state s after a cycle at s.At.
func (c *collector) observe(s Sample) {
	if c.have {
		c.integrate(c.cur, c.cur.At, s.At)
	}
	c.have, c.cur = true, s
	c.s.MaxPending = max(c.s.MaxPending, int(s.Pending))
}

// integrate adds the state v held over [a, b).
func (c *collector) integrate(v Sample, a, b time.Time) {
	dt := b.Sub(a).Seconds()
	if dt <= 0 {
		c.s.MaxPending = max(c.s.MaxPending, int(math.Ceil(v.Pending)))
		return
	}
	c.pendInt += v.Pending * dt
	if v.Pending > 0 {
		c.waitingSec += dt
	}
	c.idleC += v.IdleCPUsWaiting * dt
	c.idleG += v.IdleGPUsWaiting * dt
	c.s.MaxPending = max(c.s.MaxPending, int(math.Ceil(v.Pending)))
}

func (c *collector) summary(rejected int, start, end time.Time) Summary {
	if c.have && end.After(c.cur.At) {
		c.integrate(c.cur, c.cur.At, end)
		c.cur.At = end
	}
	s := c.s
	s.Rejected = rejected
	s.Wait = stats(c.waits)
	s.Response = stats(c.resps)
	s.Slowdown = stats(c.slows)
	s.BSLD = stats(c.bslds)
	s.ETA.Error = stats(c.etaErr)
	if n := s.ETA.Jobs; n > 0 {
		s.ETA.Bias = c.etaSigned / float64(n)
		s.ETA.OnTime = float64(n-s.ETA.Late) / float64(n)
	}
	if end.After(start) {
		s.Makespan = end.Sub(start)
	}
	s.Goodput.finish(c.cap, s.Makespan, s.GPUHours, c.power)
	s.IdleCPUHoursWaiting = c.idleC / 3600
	s.IdleGPUHoursWaiting = c.idleG / 3600
	if span := s.Makespan.Seconds(); span > 0 {
		s.MeanPending = c.pendInt / span
		s.WaitingFraction = c.waitingSec / span
		if c.cap.CPUs > 0 {
			s.CPUUtilization = s.CPUHours * 3600 / (float64(c.cap.CPUs) * span)
			s.Utilization = s.CPUUtilization
			s.IdleWhileWaiting = c.idleC / (float64(c.cap.CPUs) * span)
		}
		if c.cap.GPUs > 0 { // the GPU figures stand for a cluster with GPUs
			s.GPUUtilization = s.GPUHours * 3600 / (float64(c.cap.GPUs) * span)
			s.Utilization = s.GPUUtilization
			s.IdleWhileWaiting = c.idleG / (float64(c.cap.GPUs) * span)
		}
	}
	return s
}

// stats sorts x in place and returns its mean and percentiles.
func stats(x []float64) Stats {
	if len(x) == 0 {
		return Stats{}
	}
	var sum float64
	for _, v := range x {
		sum += v
	}
	slices.Sort(x)
	return Stats{
		Mean: sum / float64(len(x)),
		P50:  percentile(x, 0.50),
		P90:  percentile(x, 0.90),
		P95:  percentile(x, 0.95),
		P99:  percentile(x, 0.99),
		Max:  x[len(x)-1],
	}
}

// percentile returns the nearest-rank p-quantile of sorted x.
func percentile(sorted []float64, p float64) float64 {
	k := int(math.Ceil(p*float64(len(sorted))-1e-9)) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

func sampleOf(at time.Time, c Capacity, pending, running int, busyCPUs, busyGPUs int64) Sample {
	s := Sample{At: at, Pending: float64(pending), Running: float64(running),
		BusyCPUs: float64(busyCPUs), BusyGPUs: float64(busyGPUs)}
	if pending > 0 {
		s.IdleCPUsWaiting = float64(c.CPUs - busyCPUs)
		s.IdleGPUsWaiting = float64(c.GPUs - busyGPUs)
	}
	return s
}

// seriesRecorder builds Result.Series from the state after each cycle:
// exact when rs.step is zero, else resampled.
type seriesRecorder struct {
	off  bool
	out  []Sample
	rs   resampler
	have bool
	last Sample
}

// observe records the state s after a cycle at s.At.
func (r *seriesRecorder) observe(s Sample) {
	if r.off {
		return
	}
	if r.rs.step == 0 {
		if !r.have || !sameValues(s, r.last) {
			r.out = append(r.out, s)
		}
	} else if r.have {
		r.rs.add(r.last.At, s.At, r.last)
	}
	r.have, r.last = true, s
}

func (r *seriesRecorder) finish(end time.Time) []Sample {
	if r.off || r.rs.step == 0 || !r.have {
		return r.out
	}
	r.rs.add(r.last.At, end, r.last)
	return r.rs.flush()
}

// Resample turns a series (exact or resampled) ending at end into one
// sample per step holding time-weighted means, each input sample counting
// as constant until the next one. It returns nil for an empty series or a
// non-positive step.
func Resample(series []Sample, end time.Time, step time.Duration) []Sample {
	if len(series) == 0 || step <= 0 {
		return nil
	}
	rs := resampler{step: step}
	eachSegment(series, end, func(s Sample, until time.Time) { rs.add(s.At, until, s) })
	return rs.flush()
}

// resampler accumulates piecewise-constant segments into fixed buckets.
type resampler struct {
	step    time.Duration
	origin  time.Time
	have    bool
	bucket  int64
	acc     Sample // value × seconds
	covered float64
	last    Sample
	out     []Sample
}

func (rs *resampler) add(a, b time.Time, v Sample) {
	if !rs.have {
		rs.have, rs.origin = true, a
	}
	rs.last = v
	for a.Before(b) {
		k := int64(a.Sub(rs.origin) / rs.step)
		if k != rs.bucket {
			rs.emit()
			rs.bucket = k
		}
		bEnd := rs.origin.Add(time.Duration(k+1) * rs.step)
		segEnd := b
		if bEnd.Before(b) {
			segEnd = bEnd
		}
		dt := segEnd.Sub(a).Seconds()
		rs.acc.Pending += v.Pending * dt
		rs.acc.Running += v.Running * dt
		rs.acc.BusyCPUs += v.BusyCPUs * dt
		rs.acc.BusyGPUs += v.BusyGPUs * dt
		rs.acc.IdleCPUsWaiting += v.IdleCPUsWaiting * dt
		rs.acc.IdleGPUsWaiting += v.IdleGPUsWaiting * dt
		rs.covered += dt
		a = segEnd
	}
}

func (rs *resampler) emit() {
	if rs.covered <= 0 {
		rs.acc = Sample{}
		return
	}
	d := rs.covered
	rs.out = append(rs.out, Sample{
		At:              rs.origin.Add(time.Duration(rs.bucket) * rs.step),
		Pending:         rs.acc.Pending / d,
		Running:         rs.acc.Running / d,
		BusyCPUs:        rs.acc.BusyCPUs / d,
		BusyGPUs:        rs.acc.BusyGPUs / d,
		IdleCPUsWaiting: rs.acc.IdleCPUsWaiting / d,
		IdleGPUsWaiting: rs.acc.IdleGPUsWaiting / d,
	})
	rs.acc, rs.covered = Sample{}, 0
}

func (rs *resampler) flush() []Sample {
	rs.emit()
	if rs.have && len(rs.out) == 0 {
		// A zero-length span: one sample with the only state there was.
		s := rs.last
		s.At = rs.origin
		rs.out = append(rs.out, s)
	}
	return rs.out
}
