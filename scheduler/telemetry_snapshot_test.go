package scheduler_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/telemetry"
)

// telemetryRun is a scheduler with two jobs sharing a node, read four
// times (device energy counters, per-job CPU counters), one job requeued
// after its first run so that it has a past, and its telemetry
// configuration changed live.
func telemetryRun(t *testing.T) (s *scheduler.Scheduler, node string, ids []scheduler.JobID) {
	t.Helper()
	cfg := clustertest.Mixed4()
	cfg.Telemetry.Rule = telemetry.Rule{IdleBelow: 5, IdleAfter: time.Minute}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	t0 := clustertest.Epoch
	spec := scheduler.JobSpec{Partition: "h100", TimeLimit: time.Hour, GRESPerNode: []gres.Request{{Name: "gpu", Count: 4}}}
	a := mustSubmit(t, s, t0, spec)
	b := mustSubmit(t, s, t0, spec)
	mustSchedule(t, s, t0)
	ja, _ := s.Job(a)
	node = ja.Alloc.Nodes[0].Name
	readAt := func(k int) {
		util := []float64{90, 91, 92, 93, 1, 2, 0, 1}
		require.NoError(t, noJobs(s.ReportTelemetry(t0.Add(time.Duration(30*k)*time.Second), scheduler.TelemetryEvent{Node: node,
			Devices: devSamples(util, 1000*float64(k)+0.5),
			Jobs: []scheduler.JobReading{{Job: a, CPUSeconds: 7.5 * float64(k), MemoryPeakBytes: 1 << 30},
				{Job: b, CPUSeconds: 2 * float64(k), MemoryPeakBytes: -1}}})))
	}
	for k := 1; k <= 2; k++ {
		readAt(k)
	}
	require.NoError(t, s.Requeue(t0.Add(61*time.Second), b))
	mustSchedule(t, s, t0.Add(62*time.Second))
	for k := 3; k <= 4; k++ {
		readAt(k)
	}
	require.NoError(t, s.SetTelemetry(t0.Add(125*time.Second), scheduler.TelemetryConfig{Rule: cfg.Telemetry.Rule, Action: scheduler.IdleCancel, Grace: time.Hour}))
	return s, node, []scheduler.JobID{a, b}
}

func usages(t *testing.T, s *scheduler.Scheduler, ids []scheduler.JobID) []telemetry.Usage {
	t.Helper()
	var out []telemetry.Usage
	for _, id := range ids {
		j, ok := s.Job(id)
		require.True(t, ok)
		require.NotNil(t, j.Usage, "job %d", id)
		out = append(out, *j.Usage)
	}
	return out
}

// Telemetry is part of the snapshot: a restored scheduler shows the same
// usage, keeps the telemetry configuration, and folds the next reading
// exactly as the original does (energy and CPU rises measured from the
// restored counters, the idle clock from the restored idle spell).
func TestTelemetrySurvivesSnapshotRestore(t *testing.T) {
	s, node, ids := telemetryRun(t)
	var buf bytes.Buffer
	require.NoError(t, s.Snapshot(&buf))
	r, err := scheduler.Restore(bytes.NewReader(buf.Bytes()), scheduler.RestoreOptions{})
	require.NoError(t, err)
	assert.Equal(t, usages(t, s, ids), usages(t, r, ids))
	assert.Equal(t, s.Telemetry(), r.Telemetry())
	for _, id := range ids {
		ja, _ := s.Job(id)
		jb, _ := r.Job(id)
		assert.Equal(t, ja.Starts, jb.Starts)
		assert.Equal(t, ja.LaunchFailures, jb.LaunchFailures)
		assert.Equal(t, ja.LostWorkGPUSeconds, jb.LostWorkGPUSeconds)
	}
	jb, _ := s.Job(ids[1])
	assert.Equal(t, 1, jb.LaunchFailures)
	assert.Positive(t, jb.LostWorkGPUSeconds)

	next := scheduler.TelemetryEvent{Node: node, Devices: devSamples([]float64{50, 50, 50, 50, 0, 0, 0, 0}, 9000),
		Jobs: []scheduler.JobReading{{Job: ids[0], CPUSeconds: 100, MemoryPeakBytes: 1 << 31}, {Job: ids[1], CPUSeconds: 40, MemoryPeakBytes: -1}}}
	at := clustertest.Epoch.Add(150 * time.Second)
	want, err := s.Apply(at, next)
	require.NoError(t, err)
	got, err := r.Apply(at, next)
	require.NoError(t, err)
	assert.Equal(t, want.Jobs, got.Jobs)
	before := usages(t, s, ids)
	assert.Equal(t, before, usages(t, r, ids))
	ja, _ := s.Job(ids[0])
	assert.InDelta(t, 100, ja.Usage.CPUSeconds, 1e-9, "the counter from 0 at the start to 100, the last rise from the restored value")
	assert.InDelta(t, 4*(3*1000+9000-4000.5), ja.Usage.EnergyJoules, 1e-6, "three rises of 1000 J, then the rise from the restored counters, on each of its 4 devices")

	// The snapshot of the restored scheduler is the original's.
	var b1, b2 bytes.Buffer
	require.NoError(t, s.Snapshot(&b1))
	require.NoError(t, r.Snapshot(&b2))
	assert.Equal(t, b1.Bytes(), b2.Bytes())
}
