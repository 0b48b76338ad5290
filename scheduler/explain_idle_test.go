package scheduler_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/telemetry"
)

// idleScene fills both h100 nodes with 8-GPU jobs, first (ann, 1 h) and
// second (bob, 3 h), reports readings every minute for 12 minutes at the
// given utilisations, and queues a third 8-GPU h100 job, which waits for
// first's end: its GPUs are the ones it gets.
func idleScene(t *testing.T, bf bool, rule telemetry.Rule, firstUtil, secondUtil float64) (s *scheduler.Scheduler, first, second, waiting scheduler.JobID, now time.Time) {
	t.Helper()
	cfg := clustertest.Mixed4()
	cfg.Telemetry.Rule = rule
	if bf {
		cfg.Backfill = &backfill.Config{Mode: backfill.EASY}
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	first = mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", Partition: "h100", TimeLimit: time.Hour, GRESPerNode: gpus(8)})
	second = mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", Partition: "h100", TimeLimit: 3 * time.Hour, GRESPerNode: gpus(8)})
	mustSchedule(t, s, t0)
	jf, _ := s.Job(first)
	js, _ := s.Job(second)
	require.Equal(t, scheduler.JobRunning, jf.State)
	require.Equal(t, scheduler.JobRunning, js.State)
	for k := 1; k <= 12; k++ {
		at := t0.Add(time.Duration(k) * time.Minute)
		require.NoError(t, noJobs(s.ReportTelemetry(at, scheduler.TelemetryEvent{Node: jf.Alloc.Nodes[0].Name, Devices: uniform(firstUtil)})))
		require.NoError(t, noJobs(s.ReportTelemetry(at, scheduler.TelemetryEvent{Node: js.Alloc.Nodes[0].Name, Devices: uniform(secondUtil)})))
	}
	now = t0.Add(12 * time.Minute)
	waiting = mustSubmit(t, s, now, scheduler.JobSpec{User: "cy", Partition: "h100", TimeLimit: time.Hour, GRESPerNode: gpus(8)})
	mustSchedule(t, s, now)
	return s, first, second, waiting, now
}

// A job waiting for 8 GPUs held by an allocated-but-idle job is told so:
// the job, its GPUs and node, its mean utilisation and idle time, as data
// and in words.
func TestExplainNamesTheIdleJobItWaitsFor(t *testing.T) {
	for _, bf := range []bool{false, true} {
		s, first, _, waiting, now := idleScene(t, bf, idleRule, 1, 90)
		ex, err := s.Explain(now, waiting, scheduler.ExplainOptions{})
		require.NoError(t, err)
		est := ex.Estimate
		require.NotNil(t, est)
		jf, _ := s.Job(first)
		node := jf.Alloc.Nodes[0].Name
		require.Equal(t, []string{node}, est.Nodes, "backfill %v: planned where the first job ends", bf)
		require.Equal(t, 1, est.WaitsForIdleTotal, "backfill %v: %s", bf, ex)
		require.Len(t, est.WaitsForIdle, 1)
		h := est.WaitsForIdle[0]
		assert.Equal(t, first, h.Job)
		assert.Equal(t, "ann", h.User)
		assert.Equal(t, []scheduler.NodeGPUs{{Node: node, Indices: []int{0, 1, 2, 3, 4, 5, 6, 7}}}, h.GPUs)
		assert.Equal(t, 8, h.GPUCount)
		assert.InDelta(t, 1, h.MeanUtilization, 1e-9)
		assert.Equal(t, 12*time.Minute, h.IdleFor, "idle since its start, read up to 12 minutes")
		assert.Equal(t, t0.Add(time.Hour), h.End)
		assert.Contains(t, ex.String(), "job 1 (ann) holds "+node+"[0-7] allocated but idle: 1.0% mean GPU utilisation, below 5% for 12m")

		b, err := json.Marshal(ex)
		require.NoError(t, err)
		assert.Contains(t, string(b), `"IdleFor":"00:12:00"`)
	}
}

// The same wait behind a busy job says nothing of idleness, though the
// other job on the partition idles: the waiting job does not wait for it.
// With the rule off, an idle job is not named either.
func TestExplainSaysNothingOfIdlenessBehindABusyJob(t *testing.T) {
	for _, bf := range []bool{false, true} {
		s, first, _, waiting, now := idleScene(t, bf, idleRule, 90, 1)
		ex, err := s.Explain(now, waiting, scheduler.ExplainOptions{})
		require.NoError(t, err)
		require.NotNil(t, ex.Estimate)
		require.NotEmpty(t, ex.Estimate.WaitsFor)
		assert.Equal(t, first, ex.Estimate.WaitsFor[0].Job)
		assert.Empty(t, ex.Estimate.WaitsForIdle)
		assert.Zero(t, ex.Estimate.WaitsForIdleTotal)
		assert.NotContains(t, ex.String(), "idle")
		b, err := json.Marshal(ex)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "WaitsForIdle")

		s, _, _, waiting, now = idleScene(t, bf, telemetry.Rule{}, 1, 1)
		ex, err = s.Explain(now, waiting, scheduler.ExplainOptions{})
		require.NoError(t, err)
		assert.Empty(t, ex.Estimate.WaitsForIdle, "rule off")
		assert.NotContains(t, ex.String(), "idle")
	}
}
