package scheduler_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/telemetry"
)

// The telemetry events' journal form: unknown readings stay -1 (never
// left out: 0 is a reading), the configuration reads as Slurm's times and
// names, and both decode to the event encoded.
func TestTelemetryEntryJSONRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 5, time.UTC)
	for _, c := range []struct {
		ev   scheduler.Event
		want []string
	}{
		{scheduler.TelemetryEvent{Node: "h100-01",
			Devices: []gres.DeviceSample{{Index: 0, UUID: "GPU-0", Utilization: 93.5, MemoryUsedMiB: 40960, PowerWatts: -1, EnergyJoules: 0},
				{Index: 3, Utilization: -1, MemoryUsedMiB: -1, PowerWatts: 310.25, EnergyJoules: 123456.5}},
			Jobs: []scheduler.JobReading{{Job: 7, CPUSeconds: 812.5, MemoryPeakBytes: -1, GPUs: []scheduler.JobGPUReading{{Index: 3, Utilization: 40}}},
				{Job: 8, CPUSeconds: -1, MemoryPeakBytes: 0}}},
			[]string{`"kind":"telemetry"`, `"PowerWatts":-1`, `"EnergyJoules":0`, `"Utilization":-1`, `"CPUSeconds":-1`, `"MemoryPeakBytes":0`}},
		{scheduler.TelemetryEvent{Node: "a100-01"}, []string{`"event":{"Node":"a100-01"}`}},
		{scheduler.UpdateTelemetryEvent{Config: scheduler.TelemetryConfig{Rule: telemetry.Rule{IdleBelow: 5, IdleAfter: 30 * time.Minute, MaxGap: 1500 * time.Millisecond},
			Action: scheduler.IdleRequeue, Grace: 10 * time.Minute, MaxIdleRequeues: 3}},
			[]string{`"kind":"update_telemetry"`, `"IdleAfter":"00:30:00"`, `"MaxGap":"1.5s"`, `"Action":"REQUEUE"`, `"Grace":"00:10:00"`, `"MaxIdleRequeues":3`}},
		{scheduler.UpdateTelemetryEvent{}, []string{`"event":{"Config":{}}`}},
	} {
		b, err := json.Marshal(scheduler.Entry{At: at, Event: c.ev})
		require.NoError(t, err)
		for _, w := range c.want {
			assert.Contains(t, string(b), w)
		}
		var back scheduler.Entry
		require.NoError(t, json.Unmarshal(b, &back), "%s", b)
		assert.Equal(t, c.ev, back.Event, "%s", b)
		assert.True(t, at.Equal(back.At))
	}
	var e scheduler.Entry
	assert.ErrorIs(t, json.Unmarshal([]byte(`{"at":"2026-12-01T10:00:00Z","kind":"telemetry","event":{"Node":"n","Bogus":1}}`), &e), scheduler.ErrInvalidEvent)
	assert.Error(t, json.Unmarshal([]byte(`{"at":"2026-12-01T10:00:00Z","kind":"update_telemetry","event":{"Config":{"Action":"EXPLODE"}}}`), &e))
	// A misspelt field of the configuration, at any depth, is refused,
	// not read as a zero idle time.
	for _, bad := range []string{`{"Rule":{"IdleBelow":5,"IdleAftr":"00:30:00"},"Action":"REQUEUE"}`, `{"Rul":{"IdleBelow":5}}`, `{"Grace":"00:10:00","Actoin":"CANCEL"}`} {
		assert.ErrorIs(t, json.Unmarshal([]byte(`{"at":"2026-12-01T10:00:00Z","kind":"update_telemetry","event":{"Config":`+bad+`}}`), &e), scheduler.ErrInvalidEvent, bad)
		var c scheduler.TelemetryConfig
		assert.Error(t, json.Unmarshal([]byte(bad), &c), bad)
	}
}

func TestIdleActionTextRoundTrip(t *testing.T) {
	for _, a := range []scheduler.IdleAction{scheduler.IdleNotify, scheduler.IdleRequeue, scheduler.IdleCancel} {
		b, err := a.MarshalText()
		require.NoError(t, err)
		got, err := scheduler.ParseIdleAction(" " + string(bytes.ToLower(b)) + " ")
		require.NoError(t, err)
		assert.Equal(t, a, got)
	}
	_, err := scheduler.ParseIdleAction("kill")
	assert.ErrorIs(t, err, scheduler.ErrUnknownName)
	_, err = scheduler.IdleAction(7).MarshalText()
	assert.ErrorIs(t, err, scheduler.ErrUnknownName)
}

// A job's usage and run counters are part of its JSON and read back
// exactly; the configuration's telemetry is part of Config's.
func TestTelemetryJobAndConfigJSONRoundTrip(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Telemetry = scheduler.TelemetryConfig{Rule: telemetry.Rule{IdleBelow: 5, IdleAfter: time.Minute}, Action: scheduler.IdleCancel, Grace: time.Hour}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	t0 := clustertest.Epoch
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", TimeLimit: time.Hour, GRESPerNode: []gres.Request{{Name: "gpu", Count: 8}}})
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	node := j.Alloc.Nodes[0].Name
	for k := 1; k <= 3; k++ {
		u := []float64{90, 80.5, 70, 0, 1, 2, 3, 99.9}
		require.NoError(t, noJobs(s.ReportTelemetry(t0.Add(time.Duration(7*k)*time.Second+time.Duration(k)*time.Millisecond), scheduler.TelemetryEvent{Node: node,
			Devices: devSamples(u, 1000.5*float64(k)), Jobs: []scheduler.JobReading{{Job: id, CPUSeconds: 3.25 * float64(k), MemoryPeakBytes: 1 << 33}}})))
	}
	j, _ = s.Job(id)
	require.NotNil(t, j.Usage)
	b, err := json.Marshal(j)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"Usage":{"Samples":3`)
	assert.Contains(t, string(b), `"Starts":1`)
	back, err := scheduler.ParseJobJSON(cfg.Registry, b)
	if cfg.Registry == nil {
		reg, rerr := scheduler.NewRegistry(cfg.Nodes)
		require.NoError(t, rerr)
		back, err = scheduler.ParseJobJSON(reg, b)
	}
	require.NoError(t, err, "%s", b)
	assert.Equal(t, *j.Usage, *back.Usage)
	assert.Equal(t, j.Starts, back.Starts)

	c, err := json.Marshal(cfg)
	require.NoError(t, err)
	assert.Contains(t, string(c), `"Telemetry":{"Rule":{"IdleBelow":5,"IdleAfter":"00:01:00"},"Action":"CANCEL","Grace":"01:00:00"}`)
	var cback scheduler.Config
	require.NoError(t, json.Unmarshal(c, &cback))
	assert.Equal(t, cfg.Telemetry, cback.Telemetry)

	// An idle decision's JSON names its kind and idle time.
	d := scheduler.Decision{Kind: scheduler.DecisionIdle, Job: id, Time: t0, Utilization: 1.5, IdleFor: 90 * time.Second}
	db, err := json.Marshal(d)
	require.NoError(t, err)
	assert.Contains(t, string(db), `"Kind":"idle"`)
	assert.Contains(t, string(db), `"IdleFor":"00:01:30"`)
}
