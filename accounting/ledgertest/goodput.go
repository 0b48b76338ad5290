package ledgertest

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/telemetry"
)

// goodputJob is a finished 2-GPU job carrying every goodput field: its
// second run (one hour, 7200 GPU-seconds allocated) after a requeued
// first run of 1200 GPU-seconds, of which 600 were lost.
func goodputJob(id accounting.JobID, a accounting.Assoc, start time.Time) accounting.JobRecord {
	j := simpleJob(id, a, start, time.Hour)
	j.ReqTRES["gres/gpu"], j.AllocTRES["gres/gpu"] = 2, 2
	j.Restarts = 1
	j.Usage = telemetry.Usage{Samples: 240, HostSamples: 120, First: start.Add(-20 * time.Minute), Last: start.Add(time.Hour),
		GPUSeconds: 9000, BusyGPUSeconds: 6300.25, UtilizationMax: 98.5, MemoryMaxMiB: 79 << 10, MemoryMiBSeconds: 2.5e8,
		CoveredSeconds: 4500, PowerMaxWatts: 1400.5, EnergyJoules: 4.4e6, IdleSeconds: 120, IdleSince: start.Add(58 * time.Minute),
		CPUSeconds: 17000.5, MemoryPeakBytes: 96 << 30}
	j.LaunchAttempts, j.LaunchFailures = 2, 1
	j.LostGPUSeconds, j.PriorGPUSeconds, j.Quality = 600, 1200, 0.875
	return j
}

// testGoodputRoundTrip: a job's and a step's usage, launch counts, lost
// and prior GPU-seconds and allocation quality are stored and read back
// exactly (times in whole seconds), through a job archive too; records
// without them read back as zero; nonsense is refused naming the field.
func testGoodputRoundTrip(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	j := goodputJob(31, tr.bob, t0.Add(time.Hour))
	plain := simpleJob(32, tr.bob, t0.Add(time.Hour), time.Hour)
	step := accounting.StepRecord{Job: 31, Step: "0", Start: j.Start, End: j.End, State: accounting.StateCompleted,
		AllocTRES: accounting.TRES{"gres/gpu": 2}, Usage: telemetry.Usage{Samples: 120, First: j.Start.Add(30 * time.Second),
			Last: j.End, GPUSeconds: 7140, BusyGPUSeconds: 5000, UtilizationMax: 90, EnergyJoules: 3.3e6}}
	sent := step
	sent.Usage.First = sent.Usage.First.Add(400 * time.Millisecond) // kept in whole seconds
	update(t, l, func(tx accounting.Tx) error {
		require.NoError(t, tx.PutJob(j))
		require.NoError(t, tx.PutJob(plain))
		return tx.PutStep(sent)
	})
	norm := func(u *telemetry.Usage) {
		for _, p := range []*time.Time{&u.First, &u.Last, &u.IdleSince} {
			if !p.IsZero() {
				*p = p.UTC()
			}
		}
	}
	view(t, l, func(tx accounting.Tx) error {
		got, err := tx.Job(31)
		require.NoError(t, err)
		got = normJob(got)
		norm(&got.Usage)
		want := j
		assert.Equal(t, want, got)
		assert.InDelta(t, 2*3600+1200, got.AllocGPUSeconds(time.Time{}), 1e-9)
		p, err := tx.Job(32)
		require.NoError(t, err)
		assert.Zero(t, p.Usage)
		assert.Zero(t, p.LaunchAttempts+p.LaunchFailures)
		assert.Zero(t, p.LostGPUSeconds+p.PriorGPUSeconds+p.Quality)
		steps, err := tx.Steps(31)
		require.NoError(t, err)
		require.Len(t, steps, 1)
		norm(&steps[0].Usage)
		steps[0].Start, steps[0].End = steps[0].Start.UTC(), steps[0].End.UTC()
		assert.Equal(t, step, steps[0])
		return nil
	})
	bad := map[string]func(*accounting.JobRecord){
		"launch_attempts":        func(j *accounting.JobRecord) { j.LaunchAttempts = -1 },
		"launch_failures":        func(j *accounting.JobRecord) { j.LaunchFailures = 3 },
		"lost_gpu_seconds":       func(j *accounting.JobRecord) { j.LostGPUSeconds = math.NaN() },
		"alloc_quality":          func(j *accounting.JobRecord) { j.Quality = 2 },
		"usage.busy_gpu_seconds": func(j *accounting.JobRecord) { j.Usage.BusyGPUSeconds = j.Usage.GPUSeconds + 1 },
		"usage.energy_joules":    func(j *accounting.JobRecord) { j.Usage.EnergyJoules = math.Inf(1) },
	}
	for field, mod := range bad {
		b := j
		mod(&b)
		err := l.Update(func(tx accounting.Tx) error { return tx.PutJob(b) })
		require.ErrorIs(t, err, accounting.ErrInvalid, field)
		assert.Contains(t, err.Error(), field)
	}
	var buf bytes.Buffer
	update(t, l, func(tx accounting.Tx) error {
		n, err := tx.ArchiveJobs(t0.Add(30*24*time.Hour), 0, &buf)
		assert.Equal(t, 2, n)
		return err
	})
	var archived []accounting.ArchivedJob
	require.NoError(t, accounting.ReadArchive(&buf, func(a accounting.ArchivedJob) bool {
		archived = append(archived, a)
		return true
	}))
	require.Len(t, archived, 2)
	a := archived[0]
	if a.Job.ID != 31 {
		a = archived[1]
	}
	a.Job = normJob(a.Job)
	norm(&a.Job.Usage)
	assert.Equal(t, j, a.Job, "the archive keeps the goodput fields")
	require.Len(t, a.Steps, 1)
	norm(&a.Steps[0].Usage)
	assert.Equal(t, step.Usage, a.Steps[0].Usage)
}
