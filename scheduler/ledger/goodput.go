package ledger

import (
	"errors"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// The goodput fields of a job record (accounting.JobRecord's Usage,
// LaunchAttempts, LaunchFailures, LostGPUSeconds, PriorGPUSeconds and
// Quality) span every run of the job, while the ledger keeps one record
// per job, the latest run's. Each record the recorder writes therefore
// carries the earlier runs' counts over from the record it replaces:
//
//   - LaunchAttempts counts the runs started, LaunchFailures the runs
//     requeued because their launch failed (launch_failed_requeued);
//   - PriorGPUSeconds is the GPU-seconds allocated to the earlier runs;
//   - LostGPUSeconds is the GPU work not kept: a run requeued, or ended
//     in any state but COMPLETED or CANCELLED (FAILED, TIMEOUT,
//     NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, DEADLINE, BOOT_FAIL), loses
//     its GPU-seconds since its last checkpoint (Job.LastCheckpoint
//     within the run), or since its start;
//   - Usage is the scheduler's Job.Usage, all runs merged; Quality the
//     latest run's Allocation.Quality.

// priorOf returns the record the ledger holds for the job of rec (nil
// when it has none).
func priorOf(tx accounting.Tx, id accounting.JobID) (*accounting.JobRecord, error) {
	stored, err := tx.Job(id)
	if errors.Is(err, accounting.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &stored, nil
}

// fillGoodput sets rec's goodput fields for job j from stored, the record
// it replaces (nil for none). prevEnd is when a stored earlier run that
// the ledger never saw end (a requeue and a restart between two
// observations) ended at the latest: the new run's start, or the requeue
// decision's time.
func fillGoodput(rec *accounting.JobRecord, j scheduler.Job, stored *accounting.JobRecord, prevEnd time.Time) {
	if j.Usage != nil {
		rec.Usage = *j.Usage
	}
	if len(j.Alloc.Nodes) > 0 && j.Alloc.Quality > 0 {
		rec.Quality = min(j.Alloc.Quality, 1)
	}
	switch {
	case stored == nil || stored.Start.IsZero():
		if !rec.Start.IsZero() {
			rec.LaunchAttempts = 1
		}
	case stored.Start.Equal(rec.Start):
		// The same run, recorded again (at its end).
		rec.LaunchAttempts, rec.LaunchFailures = stored.LaunchAttempts, stored.LaunchFailures
		rec.LostGPUSeconds, rec.PriorGPUSeconds = stored.LostGPUSeconds, stored.PriorGPUSeconds
	default:
		// stored is an earlier run.
		end := stored.End
		lost := stored.LostGPUSeconds
		if stored.State != accounting.StateRequeued || end.IsZero() {
			// Its end was never recorded: it went back to the queue by
			// prevEnd, losing the whole run (no checkpoint of it known).
			end = prevEnd
			if end.Before(stored.Start) {
				end = stored.Start
			}
			lost += gpuSeconds(stored, stored.Start, end)
		}
		rec.PriorGPUSeconds = stored.PriorGPUSeconds + gpuSeconds(stored, stored.Start, end)
		rec.LostGPUSeconds = lost
		rec.LaunchAttempts, rec.LaunchFailures = stored.LaunchAttempts, stored.LaunchFailures
		if !rec.Start.IsZero() {
			rec.LaunchAttempts++
		}
	}
	if rec.State.Finished() && lostState(rec.State) {
		rec.LostGPUSeconds += lostSince(rec, j, rec.End)
	}
}

// requeuedRun turns run, the stored record of a run that went back to the
// queue at run.End, into its REQUEUED record: its loss counted, a launch
// failure counted, the job's usage as of now.
func requeuedRun(run *accounting.JobRecord, j scheduler.Job) {
	run.State = accounting.StateRequeued
	run.LostGPUSeconds += lostSince(run, j, run.End)
	if j.Reason == policy.ReasonLaunchFailRequeue {
		run.LaunchFailures = min(run.LaunchFailures+1, max(run.LaunchAttempts, 1))
		run.LaunchAttempts = max(run.LaunchAttempts, 1)
	}
	if j.Usage != nil {
		run.Usage = *j.Usage
	}
}

// lostSince is the GPU work of run lost at end: its GPU-seconds since the
// job's last checkpoint when that falls within the run, else since its
// start.
func lostSince(run *accounting.JobRecord, j scheduler.Job, end time.Time) float64 {
	from := run.Start
	if c := j.LastCheckpoint; c.After(from) && !c.After(end) {
		from = c
	}
	return gpuSeconds(run, from, end)
}

// gpuSeconds is run's GPU count times the time from from to to (0 when
// to is not after from).
func gpuSeconds(run *accounting.JobRecord, from, to time.Time) float64 {
	if !to.After(from) {
		return 0
	}
	return float64(run.AllocTRES["gres/gpu"]) * to.Sub(from).Seconds()
}

// lostState reports whether a job ended in state s lost its last run's
// work: every end but a completion or a cancellation.
func lostState(s accounting.JobState) bool {
	return s != accounting.StateCompleted && s != accounting.StateCancelled
}
