package sim

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// Preemption of a running job: cancelled, requeued or suspended and
// resumed (moved out of sim.go).

// preempted applies one preemption decided by the cycle at now. A CANCEL
// or REQUEUE victim with a KillAt after now keeps running until then (a
// marker event makes a cycle happen at KillAt, which lists it in Ended);
// otherwise a CANCEL victim ends PREEMPTED now and a REQUEUE victim's run
// ends now, the job waiting to start again. A SUSPEND victim stops running
// now, keeping its GPUs and lending its CPUs; its end event is dropped and
// re-queued, for the run time it has left, when it resumes.
func (r *runner) preempted(now time.Time, p scheduler.Preemption) error {
	lj, ok := r.jobs[p.Victim]
	if !ok || !lj.inRun || !lj.suspendedAt.IsZero() {
		return fmt.Errorf("sim: cycle at %s preempted job %d, which the simulator does not run", now.Format(time.RFC3339), p.Victim)
	}
	lj.preemptions++
	lj.lostGPUSecs += p.LostGPUSeconds
	lj.lostCPUSecs += p.LostCPUSeconds
	// The scheduler counts the lost work as resources × the time from
	// the last checkpoint to KillAt: the rest of the run is kept if it is
	// requeued (work in a grace time after the last checkpoint is lost).
	run := lj.worked(now)
	lost := run
	switch {
	case lj.cpus > 0:
		lost = time.Duration(p.LostCPUSeconds / float64(lj.cpus) * float64(time.Second))
	case lj.gpus > 0:
		lost = time.Duration(p.LostGPUSeconds / float64(lj.gpus) * float64(time.Second))
	}
	if p.Action == policy.ActionSuspend {
		// A suspension loses nothing and is no checkpoint: keep stays
		// what it was (0 unless an earlier preemption of the run set
		// it), so that a later end that loses the run's work (a time
		// limit, a failure) keeps no more than its last checkpoint.
		lj.gen++ // drop the queued end event
		lj.ran = run
		lj.suspendedAt = now
		r.release(now, p.Victim, lj.cpus, 0) // it keeps its GPUs
		return nil
	}
	// The lost work runs up to KillAt (the grace time included), so the
	// work kept is the run up to then less the lost part: the run up to
	// its last checkpoint at or before KillAt.
	atKill := run
	if p.KillAt.After(now) {
		atKill += p.KillAt.Sub(now)
	}
	lj.keep = min(max(atKill-lost, 0), atKill)
	if p.KillAt.After(now) {
		lj.killAt = p.KillAt
		r.q.push(event{at: p.KillAt, id: p.Victim, kind: evKill, gen: lj.gen})
		return nil
	}
	if p.Action == policy.ActionRequeue {
		r.requeued(p.Victim, lj, now)
		return nil
	}
	return r.ended(p.Victim, lj, now, scheduler.JobPreempted)
}

// requeued ends the current run of job id (lj, its record) at end
// (preemption in REQUEUE mode): its resources are free, the run's work
// since its last checkpoint is lost (the work up to then is kept for the
// next run), and the job waits to start again.
func (r *runner) requeued(id scheduler.JobID, lj *live, end time.Time) {
	lj.runGoodput(end, true)
	lj.done += lj.keep
	lj.requeuedCPUHs += cpuHours(lj.cpus, end.Sub(lj.start), lj.suspended)
	lj.requeuedGPUHs += gpuHours(lj.gpus, end.Sub(lj.start))
	lj.restarts++
	lj.gen++
	lj.inRun, lj.keep, lj.killAt = false, 0, time.Time{}
	if r.tel != nil {
		r.tel.drop(id, lj)
	}
	r.release(end, id, lj.cpus, lj.gpus)
}

// resumed restarts a suspended job at now: its end event is queued again
// for the run (or the time limit) it had left when it was suspended.
func (r *runner) resumed(now time.Time, id scheduler.JobID) error {
	lj, ok := r.jobs[id]
	if !ok || lj.suspendedAt.IsZero() {
		return fmt.Errorf("sim: cycle at %s resumed job %d, which the simulator did not see suspended", now.Format(time.RFC3339), id)
	}
	off := now.Sub(lj.suspendedAt)
	lj.suspended += off
	lj.deadline = lj.deadline.Add(off)
	lj.evAt = lj.evAt.Add(off)
	lj.suspendedAt = time.Time{}
	lj.ranSince = now
	lj.gen++
	r.q.push(event{at: lj.evAt, id: id, kind: lj.evKind, gen: lj.gen})
	r.occupy(now, id, &lj.job.Spec, lj.cpus, 0) // it kept its GPUs
	return nil
}
