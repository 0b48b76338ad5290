// Package sim drives the real scheduler on a virtual clock, the way a
// researcher replays a workload: jobs arrive at their submit times, run for
// their actual run times (or until their time limit, when the scheduler
// ends them), finish and free their resources, and the scheduler is invoked
// after every batch of events exactly as an embedding control plane would
// call it. The simulator adds no scheduling logic of its own: what it
// measures is what the scheduler decides.
//
// # Event order
//
// Time advances to the earliest of: the next arrival, the next completion,
// the next time-limit expiry, the begin time of a job submitted with one,
// (with Options.Interval) the next periodic cycle, and (with
// Options.TelemetryEvery, while a profiled job runs) the next telemetry
// reading. Everything that happens at that instant is applied in a fixed
// order:
//
//  1. completions of jobs whose run time is over, by scheduler job ID
//     (a run time equal to the time limit completes normally);
//  2. with Options.TelemetryEvery, on its grid, the telemetry readings of
//     the nodes running profiled jobs, in node order (the runs the
//     scheduler's idle action takes back end or are requeued here);
//  3. arrivals, in workload order;
//  4. one scheduling cycle, which first ends the jobs whose time limit has
//     passed (TIMEOUT, at their deadline) and then starts what it decides.
//
// A job that starts at t with run time r therefore frees its resources for
// the cycle at t+r, and a job that arrives at the same second as another
// one finishes sees the freed resources. Jobs arriving at the same instant
// are submitted in workload order and so get increasing job IDs, which is
// how the scheduler's queue order (priority, then submit time, then job
// ID) breaks their tie: a trace replays in its own order. A periodic tick
// or a wake-up that falls on an event's instant shares its cycle; a
// telemetry reading alone makes a cycle only when the idle action ended a
// run. The
// order is deterministic: the same workload and configuration give the
// same result, bit for bit.
//
// Only the scheduler decides: the simulator never reorders, delays or
// starts a job itself. The per-job results it reports (start, end,
// state, allocation) are the scheduler's own records.
//
// # Workloads
//
// A workload is a [Source] of [Job] values in non-decreasing submit order.
// [SliceSource] replays a slice; [Synthetic] and [SyntheticGenerator] build
// the seeded GPU workload of the standard benchmark scale, and
// [SyntheticCluster] the matching cluster; the sub-package swf streams
// Standard Workload Format traces of the Parallel Workloads Archive.
// [Window] skips and limits a source, [ExactEstimates] replaces user time
// limits with the actual run times (cut to the user's limit, so that both
// replays do the same work).
//
// A job may carry a GPU utilisation profile (Job.Profile: a startup stall
// and up to four phases of constant utilisation over its work; zero
// means unmeasured). The synthetic generator draws one per job from a
// seeded stream of its own; a GPU workload file (ReadProfiles, a small
// CSV of job ID to mean utilisation or phases) is joined onto any source
// by job ID with [WithProfiles].
//
// # Policies
//
// [Policy] names the policies of the scheduling literature (fcfs, easy,
// conservative, priority) and Policy.Apply maps each onto the scheduler's
// own configuration — the simulator only replays. The priority policy's
// fair-share factor is fed by a [FairShare] ledger of the simulation's own
// usage.
//
// # Metrics
//
// [Run] returns per-job results ([JobResult]: wait, response, slowdown,
// bounded slowdown, GPU- and CPU-hours, lost work), a [Summary] (means and
// percentiles, utilisation, makespan, queue length and the capacity left
// idle while jobs waited) and a time series of [Sample] values for plots
// (see the sub-package simplot). From the jobs' profiles, each result and
// the summary's [Goodput] report busy, useful and lost GPU-hours,
// goodput (useful over allocated GPU-hours of the measured jobs) and the
// energy of a simple power model ([PowerModel], Options.Power), so that
// policies are compared on what the GPUs did, not only on how full they
// were.
//
// # Start estimates
//
// Under backfill, every cycle gives each pending job an expected start
// (scheduler.Pending.ExpectedStart, what squeue --start shows). The
// simulator records each job's first one (JobResult.FirstExpectedStart)
// and Summary.ETA reports how honest they were: the distribution of
// |actual start − first estimate| and the fraction of jobs that started
// no later than promised. With exact run times and the Conservative
// policy the error is zero for every job; with users' estimates it
// measures what a user reading squeue --start would have been told.
// Since only first estimates are reported, EASY computes each job's
// expected start once (EstimateOnce) instead of in every cycle: the
// decisions and every result are the same, in a fraction of the time.
//
// # Explanation statistics
//
// With Options.ExplainEvery, Run also reports why jobs waited and why
// capacity was idle, over time (Result.Explain, Summary.Explain): the
// share of pending-job-time per pending reason (exact, from every
// cycle) and the share of idle GPU-time (CPU-time without GPUs) per
// idle class of Scheduler.IdleCapacity — "an idle GPU is not an
// available GPU", made measurable — sampled on a grid of virtual time
// because classifying is costly on a large cluster.
package sim
