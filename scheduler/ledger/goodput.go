package ledger

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/telemetry"
)

// The goodput fields of a job record span every run of the job, while the
// ledger keeps one record per job, the latest run's:
//
//   - Usage is the scheduler's Job.Usage (all runs merged), made finite
//     (finiteUsage);
//   - LaunchAttempts is Job.Starts, LaunchFailures Job.LaunchFailures;
//   - LostGPUSeconds is Job.LostWorkGPUSeconds: a run requeued, or ended
//     in any state but COMPLETED or CANCELLED by its user, lost its GPU
//     time since its last checkpoint (capped at what the record shows
//     allocated, so a suspended run's time is not counted twice);
//   - PriorGPUSeconds, the GPU-seconds of the runs before the one the
//     record spans, is carried over from the record it replaces;
//   - Quality is the latest run's Allocation.Quality.

// priorOf returns the record the ledger holds for job id (nil when it has
// none).
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

// fillGoodput sets rec's goodput fields for job j from its counters and
// from stored, the record rec replaces (nil for none). prevEnd is when a
// stored earlier run the ledger never saw end (a requeue and a restart
// between two observations) ended at the latest: the new run's start, or
// the requeue decision's time.
func fillGoodput(rec *accounting.JobRecord, j scheduler.Job, stored *accounting.JobRecord, prevEnd time.Time) {
	if len(j.Alloc.Nodes) > 0 && j.Alloc.Quality > 0 {
		rec.Quality = min(j.Alloc.Quality, 1)
	}
	if stored != nil && !stored.Start.IsZero() {
		switch {
		case stored.Start.Equal(rec.Start.Truncate(time.Second)):
			// The same run, recorded again (the ledger keeps whole
			// seconds: the scheduler's start may have a fraction).
			rec.PriorGPUSeconds = stored.PriorGPUSeconds
		case stored.State == accounting.StateRequeued && !stored.End.IsZero():
			rec.PriorGPUSeconds = stored.PriorGPUSeconds + gpuSeconds(stored, stored.Start, stored.End)
		default:
			end := prevEnd
			if end.Before(stored.Start) {
				end = stored.Start
			}
			rec.PriorGPUSeconds = stored.PriorGPUSeconds + gpuSeconds(stored, stored.Start, end)
		}
	}
	setCounters(rec, j, j.Starts)
}

// requeuedRun turns run, the stored record of a run that went back to the
// queue at run.End, into its REQUEUED record with the job's counters as of
// its requeue.
func requeuedRun(run *accounting.JobRecord, j scheduler.Job) {
	run.State = accounting.StateRequeued
	setCounters(run, j, max(j.Starts, 1))
}

// setCounters sets rec's usage, launch counts (starts attempts, at most as
// many failed) and lost work from job j's counters; rec's other fields,
// PriorGPUSeconds included, must be set already (setLost reads them).
func setCounters(rec *accounting.JobRecord, j scheduler.Job, starts int) {
	if j.Usage != nil {
		rec.Usage = finiteUsage(*j.Usage)
	}
	rec.LaunchAttempts, rec.LaunchFailures = starts, min(j.LaunchFailures, starts)
	setLost(rec, j)
}

// finiteUsage returns u with every sum and maximum made finite. The
// scheduler's usage is finite already (it refuses infinite readings and
// saturates its sums at the largest float64), but the ledger refuses a
// non-finite number and one refused record would fail every later
// Observe, so the bridge does not rely on it: +Inf becomes the largest
// float64, NaN 0.
func finiteUsage(u telemetry.Usage) telemetry.Usage {
	for _, f := range []*float64{&u.GPUSeconds, &u.BusyGPUSeconds, &u.UtilizationMax, &u.MemoryMiBSeconds,
		&u.CoveredSeconds, &u.PowerMaxWatts, &u.EnergyJoules, &u.IdleSeconds, &u.CPUSeconds} {
		switch {
		case math.IsNaN(*f):
			*f = 0
		case math.IsInf(*f, 0):
			*f = math.Copysign(math.MaxFloat64, *f)
		}
	}
	return u
}

// setLost sets rec's lost work from the job's, at most the GPU-seconds the
// record shows allocated (the ledger refuses more).
func setLost(rec *accounting.JobRecord, j scheduler.Job) {
	end := rec.End
	if end.IsZero() {
		end = rec.Start
	}
	rec.LostGPUSeconds = max(0, min(j.LostWorkGPUSeconds, rec.AllocGPUSeconds(end)))
}

// gpuSeconds is run's GPU count times the time from from to to (0 when
// to is not after from).
func gpuSeconds(run *accounting.JobRecord, from, to time.Time) float64 {
	if !to.After(from) {
		return 0
	}
	return float64(run.AllocTRES["gres/gpu"]) * to.Sub(from).Seconds()
}

// putStepUsage writes the usage of the steps of j's run that just ended
// (Job.Steps, from readings of the steps' cgroups) into their step
// records: a step the caller recorded keeps its own fields and gains the
// usage; one it did not gets a record spanning the run, in the run's
// state, with its CPU time and memory peak from the readings.
func putStepUsage(tx accounting.Tx, j scheduler.Job, run accounting.JobRecord) error {
	if len(j.Steps) == 0 {
		return nil
	}
	have, err := tx.Steps(run.ID)
	if err != nil {
		return err
	}
	for _, su := range j.Steps {
		st := accounting.StepRecord{Job: run.ID, Step: su.Step, Start: run.Start, End: run.End, State: run.State,
			NodeList: run.NodeList}
		for _, h := range have {
			if h.Step == su.Step {
				st = h
			}
		}
		st.Usage = finiteUsage(su.Usage)
		if st.CPUTime == 0 && su.Usage.CPUSeconds > 0 {
			st.CPUTime = time.Duration(min(su.Usage.CPUSeconds, float64(math.MaxInt64/int64(time.Second))) * float64(time.Second))
		}
		if st.MaxRSS == 0 && su.Usage.MemoryPeakBytes > 0 {
			st.MaxRSS = su.Usage.MemoryPeakBytes
		}
		if err := tx.PutStep(st); err != nil {
			return fmt.Errorf("step %s: %w", su.Step, err)
		}
	}
	return nil
}
