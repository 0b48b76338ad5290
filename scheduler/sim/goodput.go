package sim

import (
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

// Goodput is what the jobs' GPUs did with the GPU-hours they were
// allocated, from the jobs' utilisation profiles (Job.Profile), in the
// terms of the telemetry package and the accounting reports:
//
//   - busy GPU-hours of a run: its GPUs × the profile's utilisation
//     integrated over the part of the job's work the run covered (the
//     telemetry Usage's BusyGPUSeconds, from a model instead of readings);
//     a suspended run's GPUs are allocated and idle;
//   - lost GPU-hours: the allocated GPU-hours of work not kept. A run
//     ended by a requeue, a preemption, a node failure, its time limit,
//     a cancellation or a non-zero exit (FAILED) loses its GPU-hours
//     since its last checkpoint (the one the scheduler's preemption
//     counted, Preemption.LostGPUSeconds), or since its start when it
//     has none; a run that completes (COMPLETED, or of unknown status)
//     loses nothing;
//   - useful GPU-hours: the busy GPU-hours of the work kept: all of a
//     run that was not lost; of a lost run, the part before its last
//     checkpoint, pro rata of the run's busy fraction (busy × kept /
//     allocated);
//   - goodput = useful GPU-hours / allocated GPU-hours, over the jobs
//     with a profile (measured). The GPU-hours of jobs without one are
//     reported as UnmeasuredGPUHours and are in neither.
//
// These lost GPU-hours are not Summary.LostGPUHours, the older
// work-based figure that charges a TIMEOUT only the work beyond its
// limit and counts FAILED runs as done.
type Goodput struct {
	// MeasuredJobs counts the jobs with a profile that were allocated
	// GPUs; UnmeasuredJobs those allocated GPUs without one.
	MeasuredJobs, UnmeasuredJobs int
	// AllocatedGPUHours is the GPU-hours allocated to the measured jobs
	// (all their runs); UnmeasuredGPUHours those of the other jobs.
	AllocatedGPUHours, UnmeasuredGPUHours float64
	// BusyGPUHours, UsefulGPUHours and LostGPUHours are defined above,
	// summed over the measured jobs (JobResult.BusyGPUHours,
	// UsefulGPUHours and LostWorkGPUHours).
	BusyGPUHours, UsefulGPUHours, LostGPUHours float64
	// Goodput is UsefulGPUHours / AllocatedGPUHours and BusyFraction
	// BusyGPUHours / AllocatedGPUHours (the mean utilisation of the
	// allocated GPUs), in [0, 1]; both zero when nothing was measured.
	Goodput, BusyFraction float64
	// EnergyKWh is the energy of the measured jobs' allocated GPUs under
	// Options.Power (each GPU-second at IdleWatts, each busy one
	// MaxWatts − IdleWatts more); KWhPerUsefulGPUHour is EnergyKWh /
	// UsefulGPUHours (zero without useful work).
	EnergyKWh, KWhPerUsefulGPUHour float64
	// IdleEnergyKWh is the energy of the cluster's GPUs while no job held
	// them, at IdleWatts: (capacity × makespan − the allocated GPU-hours
	// of all jobs) × IdleWatts, the part of the cluster's draw a policy
	// that packs the same work into a shorter makespan saves. (The
	// unmeasured jobs' GPUs are in neither figure.)
	IdleEnergyKWh float64
}

// goodputAcc is a job's goodput bookkeeping over its ended runs, in
// GPU-seconds.
type goodputAcc struct {
	busy, useful, lost float64
}

// lostState reports whether a run that ended in state st lost its work
// since its last checkpoint (see Goodput): every end but a completion.
func lostState(st scheduler.JobState) bool { return st != scheduler.JobCompleted }

// runGoodput adds the current run of lj, which ends at end (lost: by a
// requeue or in a state that loses its work), to lj's goodput
// bookkeeping. The run covered the work from lj.done (what earlier runs
// kept) for its running time, suspensions aside; a lost run keeps the
// part before its last checkpoint, lj.keep. It does nothing for a job
// without a profile or GPUs.
func (lj *live) runGoodput(end time.Time, lost bool) {
	if lj.gpus == 0 || !lj.job.Profile.Known() {
		return
	}
	worked := lj.worked(end)
	gpus := float64(lj.gpus)
	alloc := gpus * end.Sub(lj.start).Seconds()
	busy := gpus * lj.job.Profile.busy(lj.job.Runtime, lj.done, lj.done+worked)
	useful := busy
	if lost {
		kept := gpus * min(lj.keep, worked).Seconds()
		useful = 0
		if alloc > 0 {
			useful = busy * kept / alloc
		}
		lj.gp.lost += alloc - kept
	}
	lj.gp.busy += busy
	lj.gp.useful += useful
}

// fill sets jr's goodput figures from a, the bookkeeping of its runs,
// and its energy under power m. Busy and useful GPU-hours are at most the
// allocated ones (the figure addGoodput sums): the profile's integral,
// summed in floating point, may round a hair above a run at 100 %, and
// goodput must never exceed 1.
func (a goodputAcc) fill(jr *JobResult, m PowerModel) {
	if jr.GPUs == 0 || !jr.Job.Profile.Known() {
		return
	}
	alloc := allocGPUHours(jr)
	jr.BusyGPUHours = min(a.busy/3600, alloc)
	jr.UsefulGPUHours = min(a.useful/3600, jr.BusyGPUHours)
	jr.LostWorkGPUHours = a.lost / 3600
	jr.EnergyKWh = m.EnergyKWh(alloc*3600, jr.BusyGPUHours*3600)
}

// allocGPUHours is the GPU-hours allocated to job r over all its runs
// (the requeued ones included).
func allocGPUHours(r *JobResult) float64 { return gpuHours(r.GPUs, r.RunTime()) + r.RequeuedGPUHours }

// addGoodput counts job r, allocated alloc GPU-hours (allocGPUHours), in
// the goodput figures g.
func addGoodput(g *Goodput, r *JobResult, alloc float64) {
	switch {
	case r.GPUs == 0:
	case !r.Job.Profile.Known():
		g.UnmeasuredJobs++
		g.UnmeasuredGPUHours += alloc
	default:
		g.MeasuredJobs++
		g.AllocatedGPUHours += alloc
		g.BusyGPUHours += r.BusyGPUHours
		g.UsefulGPUHours += r.UsefulGPUHours
		g.LostGPUHours += r.LostWorkGPUHours
		g.EnergyKWh += r.EnergyKWh
	}
}

// finish computes g's ratios, and the idle energy of a cluster of
// capacity c over makespan span whose jobs were allocated gpuH GPU-hours,
// under power m.
func (g *Goodput) finish(c Capacity, span time.Duration, gpuH float64, m PowerModel) {
	if idle := float64(c.GPUs)*span.Hours() - gpuH; idle > 0 {
		g.IdleEnergyKWh = m.EnergyKWh(idle*3600, 0)
	}
	if g.AllocatedGPUHours > 0 {
		g.Goodput = g.UsefulGPUHours / g.AllocatedGPUHours
		g.BusyFraction = g.BusyGPUHours / g.AllocatedGPUHours
	}
	if g.UsefulGPUHours > 0 {
		g.KWhPerUsefulGPUHour = g.EnergyKWh / g.UsefulGPUHours
	}
}
