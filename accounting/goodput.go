package accounting

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat"
)

// Goodput reports: what the GPUs a ledger's jobs were allocated did. They
// read only job records, so they cover the jobs that ended in a range
// [From, To) — each counted whole, since a record's usage aggregate has
// no timeline to split at the range's edges. Definitions (docs/accounting.md):
//
//   - allocated GPU-seconds of a job: AllocTRES["gres/gpu"] × Elapsed +
//     PriorGPUSeconds (every run, the requeued ones included);
//   - measured: the job has at least one GPU reading with a known
//     utilisation (Usage.Measured); the allocated GPU-seconds of the other
//     jobs are "unmeasured" and left out of goodput's numerator and
//     denominator;
//   - busy GPU-seconds: Usage.BusyGPUSeconds, the sum over readings of
//     interval × utilisation / 100, at most the allocated GPU-seconds;
//   - lost GPU-seconds: LostGPUSeconds, the work not kept;
//   - useful GPU-seconds: the busy GPU-seconds of the work kept, busy
//     minus the busy part of the lost work, taken pro rata of the job's
//     busy fraction (busy / covered device time): busy × (1 − lost /
//     Usage.GPUSeconds), at most allocated − lost, never below 0;
//   - goodput: useful / allocated GPU-seconds, over the measured jobs.

// GPUHours sums the allocated and used GPU-hours of a set of jobs.
type GPUHours struct {
	// Jobs counts the jobs; MeasuredJobs those with GPU readings.
	Jobs         int `json:"jobs"`
	MeasuredJobs int `json:"measured_jobs"`
	// Allocated is the GPU-hours allocated to all the jobs; Measured the
	// part allocated to measured jobs, Unmeasured the rest (Allocated =
	// Measured + Unmeasured).
	Allocated  float64 `json:"allocated"`
	Measured   float64 `json:"measured"`
	Unmeasured float64 `json:"unmeasured"`
	// Busy is the measured jobs' busy GPU-hours (each job's at most its
	// allocated); Useful the busy GPU-hours of the work they kept.
	Busy   float64 `json:"busy"`
	Useful float64 `json:"useful"`
	// Lost is the GPU-hours of work not kept, over all the jobs.
	Lost float64 `json:"lost"`
	// EnergyKWh is the energy the jobs' GPUs used (ConsumedEnergy), in
	// kilowatt-hours.
	EnergyKWh float64 `json:"energy_kwh"`
}

// Goodput returns Useful / Measured: the fraction of the GPU-hours
// allocated to measured jobs that did work that was kept. It is 0 when no
// job was measured.
func (h GPUHours) Goodput() float64 {
	if h.Measured == 0 {
		return 0
	}
	return h.Useful / h.Measured
}

// add counts job j (finished; now is its End).
func (h *GPUHours) add(j *JobRecord) {
	const hour = 3600.0
	allocSec := j.AllocGPUSeconds(j.End)
	alloc := allocSec / hour
	h.Jobs++
	h.Allocated += alloc
	h.Lost += j.LostGPUSeconds / hour
	h.EnergyKWh += j.Usage.EnergyJoules / 3.6e6
	if !j.Usage.Measured() {
		h.Unmeasured += alloc
		return
	}
	h.MeasuredJobs++
	h.Measured += alloc
	h.Busy += min(j.Usage.BusyGPUSeconds, allocSec) / hour
	h.Useful += usefulGPUSeconds(j, allocSec) / hour
}

// usefulGPUSeconds is the busy GPU-seconds of the work j kept: its busy
// GPU-seconds less the busy part of its lost work, the lost GPU-seconds
// at the job's busy fraction; at most the allocated GPU-seconds alloc
// less the lost ones (readings may cover GPU time the record does not
// count: shards or MPS shares of a GPU, a second of rounding), never
// below 0.
func usefulGPUSeconds(j *JobRecord, alloc float64) float64 {
	u := j.Usage
	if !u.Measured() {
		return 0
	}
	lostBusy := j.LostGPUSeconds * u.BusyGPUSeconds / u.GPUSeconds
	return max(0, min(u.BusyGPUSeconds-lostBusy, alloc-j.LostGPUSeconds))
}

// GPUUsageRow is one group's GPU-hours: an account, user, QOS or
// partition ("" for jobs without one).
type GPUUsageRow struct {
	Name string `json:"name"`
	GPUHours
}

// GPUUsageReport is allocated vs used GPU-hours of the jobs of a cluster
// that ended in [From, To), in total and grouped four ways (rows sorted
// by name), as sreport's per-account and per-user reports, for GPUs.
type GPUUsageReport struct {
	Cluster     string        `json:"cluster"`
	From        time.Time     `json:"from"`
	To          time.Time     `json:"to"`
	Total       GPUHours      `json:"total"`
	ByAccount   []GPUUsageRow `json:"by_account"`
	ByUser      []GPUUsageRow `json:"by_user"`
	ByQOS       []GPUUsageRow `json:"by_qos"`
	ByPartition []GPUUsageRow `json:"by_partition"`
}

// endedIn calls fn for each job of cluster that ended in [from, to),
// until fn returns false.
func endedIn(tx Tx, cluster string, from, to time.Time, fn func(j JobRecord) bool) error {
	if err := validTime("from", from, false); err != nil {
		return err
	}
	if err := validTime("to", to, false); err != nil {
		return err
	}
	if !from.Before(to) {
		return fmt.Errorf("%w: report range [%v, %v) is empty", ErrInvalid, from, to)
	}
	// A job that ended in the range was submitted before To and ended
	// at From or after; the query's window keeps jobs that ended after
	// its From, so it starts a nanosecond earlier to keep those that
	// ended at From.
	q := JobQuery{Cluster: cluster, From: from.Add(-time.Nanosecond), To: to}
	return tx.Jobs(q, func(j JobRecord) bool {
		if !j.End.IsZero() && !j.End.Before(from) && j.End.Before(to) {
			return fn(j)
		}
		return true
	})
}

// GPUUsage returns allocated vs used GPU-hours of the jobs of cluster
// that ended in [from, to) (whole jobs; see GPUHours for each figure).
func GPUUsage(tx Tx, cluster string, from, to time.Time) (GPUUsageReport, error) {
	rep := GPUUsageReport{Cluster: cluster, From: from, To: to}
	groups := [4]map[string]*GPUHours{{}, {}, {}, {}}
	err := endedIn(tx, cluster, from, to, func(j JobRecord) bool {
		rep.Total.add(&j)
		for i, name := range [4]string{j.Account, j.User, j.QOS, j.Partition} {
			g := groups[i][name]
			if g == nil {
				g = &GPUHours{}
				groups[i][name] = g
			}
			g.add(&j)
		}
		return true
	})
	if err != nil {
		return GPUUsageReport{}, err
	}
	rows := func(m map[string]*GPUHours) []GPUUsageRow {
		out := make([]GPUUsageRow, 0, len(m))
		for _, name := range slices.Sorted(maps.Keys(m)) {
			out = append(out, GPUUsageRow{Name: name, GPUHours: *m[name]})
		}
		return out
	}
	rep.ByAccount, rep.ByUser, rep.ByQOS, rep.ByPartition = rows(groups[0]), rows(groups[1]), rows(groups[2]), rows(groups[3])
	return rep, nil
}

// Goodput returns the goodput of the jobs of cluster that ended in
// [from, to) — useful GPU-hours over the GPU-hours allocated to the
// measured jobs — with the sums it is computed from.
func Goodput(tx Tx, cluster string, from, to time.Time) (float64, GPUHours, error) {
	var h GPUHours
	err := endedIn(tx, cluster, from, to, func(j JobRecord) bool { h.add(&j); return true })
	if err != nil {
		return 0, GPUHours{}, err
	}
	return h.Goodput(), h, nil
}

// JobPath is one job's end-to-end path, from request to completed work.
type JobPath struct {
	Job     JobID    `json:"job_id"`
	Account string   `json:"account"`
	User    string   `json:"user"`
	State   JobState `json:"state"` // how it completed
	// Started reports whether the job ran; QueueDelay is Start minus
	// Eligible (Submit when it has none), 0 for a job that never ran.
	Started    bool          `json:"started"`
	QueueDelay time.Duration `json:"queue_delay"`
	// Quality is the allocation quality score (0: not scored).
	Quality float64 `json:"quality,omitempty"`
	// LaunchAttempts and LaunchFailures are the record's counts;
	// Retries its restarts (requeues).
	LaunchAttempts int `json:"launch_attempts"`
	LaunchFailures int `json:"launch_failures"`
	Retries        int `json:"retries"`
	// AllocGPUHours and LostGPUHours are the job's allocated and lost
	// GPU-hours.
	AllocGPUHours float64 `json:"alloc_gpu_hours"`
	LostGPUHours  float64 `json:"lost_gpu_hours"`
	// Measured reports whether the job has GPU readings; MeanUtilization
	// is then their time-weighted mean GPU utilisation (percent).
	Measured        bool    `json:"measured"`
	MeanUtilization float64 `json:"mean_utilization,omitempty"`
}

// pathOf returns the path of finished job j.
func pathOf(j *JobRecord) JobPath {
	p := JobPath{Job: j.ID, Account: j.Account, User: j.User, State: j.State, Started: !j.Start.IsZero(),
		Quality: j.Quality, LaunchAttempts: j.LaunchAttempts, LaunchFailures: j.LaunchFailures, Retries: int(j.Restarts),
		AllocGPUHours: j.AllocGPUSeconds(j.End) / 3600, LostGPUHours: j.LostGPUSeconds / 3600,
		Measured: j.Usage.Measured(), MeanUtilization: j.Usage.MeanUtilization()}
	if p.Started {
		p.QueueDelay = j.Start.Sub(j.waitStart())
	}
	return p
}

// JobPaths calls fn with the path of each job of cluster that ended in
// [from, to), in job ID order, until fn returns false.
func JobPaths(tx Tx, cluster string, from, to time.Time, fn func(JobPath) bool) error {
	return endedIn(tx, cluster, from, to, func(j JobRecord) bool { return fn(pathOf(&j)) })
}

// Summary is a distribution's count, mean and quantiles (gonum's
// empirical quantiles: the smallest value whose cumulative share reaches
// p). All zero when N is 0.
type Summary struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
}

// summarise returns the summary of xs (sorted in place).
func summarise(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	slices.Sort(xs)
	q := func(p float64) float64 { return stat.Quantile(p, stat.Empirical, xs, nil) }
	return Summary{N: len(xs), Mean: stat.Mean(xs, nil), P50: q(0.5), P90: q(0.9), P99: q(0.99)}
}

// PathDistribution is the distribution of one account's job paths.
type PathDistribution struct {
	Account string `json:"account"`
	// Jobs counts the jobs that ended; Started those that ran, Completed
	// those that ended COMPLETED; States counts every end state.
	Jobs      int              `json:"jobs"`
	Started   int              `json:"started"`
	Completed int              `json:"completed"`
	States    map[JobState]int `json:"states"`
	// LaunchAttempts and LaunchFailures sum the jobs' counts;
	// LaunchSuccess is the share of attempts that launched (0 with none).
	LaunchAttempts int     `json:"launch_attempts"`
	LaunchFailures int     `json:"launch_failures"`
	LaunchSuccess  float64 `json:"launch_success"`
	// Retries sums the jobs' restarts; Retried counts jobs with any.
	Retries int `json:"retries"`
	Retried int `json:"retried"`
	// QueueDelay is over the started jobs, in seconds; Quality over the
	// scored jobs; LostGPUHours over all the jobs.
	QueueDelay   Summary `json:"queue_delay_seconds"`
	Quality      Summary `json:"quality"`
	LostGPUHours Summary `json:"lost_gpu_hours"`
	// MeanUtilization is over the measured jobs (percent).
	MeanUtilization Summary `json:"mean_utilization"`
}

// PathDistributions returns, per account (sorted by name), the
// distribution of the paths of the jobs of cluster that ended in
// [from, to).
func PathDistributions(tx Tx, cluster string, from, to time.Time) ([]PathDistribution, error) {
	type acc struct {
		d                       PathDistribution
		delay, qual, lost, util []float64
	}
	by := map[string]*acc{}
	err := JobPaths(tx, cluster, from, to, func(p JobPath) bool {
		a := by[p.Account]
		if a == nil {
			a = &acc{d: PathDistribution{Account: p.Account, States: map[JobState]int{}}}
			by[p.Account] = a
		}
		a.d.Jobs++
		a.d.States[p.State]++
		if p.State == StateCompleted {
			a.d.Completed++
		}
		if p.Started {
			a.d.Started++
			a.delay = append(a.delay, p.QueueDelay.Seconds())
		}
		if p.Quality > 0 {
			a.qual = append(a.qual, p.Quality)
		}
		if p.Measured {
			a.util = append(a.util, p.MeanUtilization)
		}
		a.lost = append(a.lost, p.LostGPUHours)
		a.d.LaunchAttempts += p.LaunchAttempts
		a.d.LaunchFailures += p.LaunchFailures
		a.d.Retries += p.Retries
		if p.Retries > 0 {
			a.d.Retried++
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	out := make([]PathDistribution, 0, len(by))
	for _, a := range by {
		d := a.d
		if d.LaunchAttempts > 0 {
			d.LaunchSuccess = float64(d.LaunchAttempts-d.LaunchFailures) / float64(d.LaunchAttempts)
		}
		d.QueueDelay, d.Quality, d.LostGPUHours, d.MeanUtilization = summarise(a.delay), summarise(a.qual), summarise(a.lost), summarise(a.util)
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y PathDistribution) int { return cmp.Compare(x.Account, y.Account) })
	return out, nil
}
