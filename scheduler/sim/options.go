package sim

import (
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

// Options tune a run. The zero value runs the whole workload, scheduling
// on events only, and keeps every job result and an exact time series.
type Options struct {
	// OnCycle, when set, is called after every scheduling cycle with the
	// scheduler (for snapshots) and the cycle's decisions. It must not
	// mutate the scheduler.
	OnCycle func(s *scheduler.Scheduler, c scheduler.Cycle)
	// OnSubmitError, when set, decides what to do with a job the scheduler
	// rejects: return nil to skip it (it is counted in Result.Rejected),
	// or an error to stop. When unset, rejected jobs are skipped.
	OnSubmitError func(j Job, err error) error
	// OnJobEnd, when set, is called with every job's result as it ends, in
	// completion order; an error stops the simulation.
	OnJobEnd func(r JobResult) error
	// DiscardJobs leaves Result.Jobs empty, so that memory does not grow
	// with the workload (the Summary is still computed; use OnJobEnd to
	// stream the results).
	DiscardJobs bool
	// Interval, when positive, also runs a scheduling cycle every Interval
	// of virtual time while jobs are pending, like Slurm's periodic
	// scheduler (sched_interval). Policies whose order changes with time
	// alone (the age factor of multifactor priority) need it; event-driven
	// FCFS and backfill do not. Zero schedules on events only.
	Interval time.Duration
	// SeriesStep, when positive, records Result.Series as one sample per
	// SeriesStep of virtual time holding time-weighted means, so that its
	// size is bounded by the span rather than by the number of cycles.
	// Zero records the exact step function: one sample per change.
	SeriesStep time.Duration
	// DiscardSeries leaves Result.Series empty.
	DiscardSeries bool
	// ExplainEvery, when positive, gathers explanation statistics
	// (Result.Explain, Summary.Explain): why jobs wait and why capacity is
	// idle, over time. The pending reasons of every cycle are counted
	// (cheap: a pass over Cycle.Pending), so their shares of the
	// pending-job-time are exact. The idle capacity is classified
	// (Scheduler.IdleCapacity, which walks every node, the pending queue
	// and the backfill plan: costly at scale) only on a grid of instants
	// Start + k × ExplainEvery, from the state the last cycle left, and
	// at most once between two cycles; its shares are the samples'
	// time-weighted estimate. The number of classifications is thus at
	// most min(span / ExplainEvery, cycles): an hour on a year-long trace
	// is under 9,000. Zero gathers nothing.
	ExplainEvery time.Duration
	// FairShare, when set, is told of every submission, start and end so
	// that it can serve the scheduler's fair-share tree (give the same
	// value to the scheduler's PriorityConfig.FairShare).
	FairShare *FairShare
	// Power is the GPU power model of the energy figures
	// (JobResult.EnergyKWh, Goodput.EnergyKWh). Zero: DefaultPowerModel.
	Power PowerModel
	// TelemetryEvery, when positive, makes the scheduler's
	// allocated-but-idle policy act in the simulation: on the grid of
	// instants Start + k × TelemetryEvery, every node running a job with
	// a Profile gets one scheduler.TelemetryEvent with a device sample
	// per device (see TelemetrySummary), and the runs the scheduler's
	// idle action (its Config.Telemetry: scheduler.TelemetryConfig) takes
	// back end there: requeued runs lose their work and run again later,
	// cancelled jobs end CANCELLED. Only nodes with a device inventory can
	// be sampled. It must not exceed the telemetry rule's MaxGap. A grid
	// instant with nothing else due runs no scheduling cycle unless the
	// idle action ended a run, so that IdleNotify changes no result but
	// Summary.Telemetry. Zero (the default) sends no telemetry.
	TelemetryEvery time.Duration
}
