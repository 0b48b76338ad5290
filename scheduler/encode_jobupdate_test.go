package scheduler_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler"
)

// TestUpdateJobEventJSONIsReadableAndExact: an update event's journal form
// writes its durations as Slurm times, keeps the job ID beside the fields
// set, and decodes to the same event.
func TestUpdateJobEventJSONIsReadableAndExact(t *testing.T) {
	limit, tmin, nice, qos := 36*time.Hour, 1500*time.Millisecond, -5, "high"
	begin := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ev := scheduler.UpdateJobEvent{Job: 7, JobUpdate: scheduler.JobUpdate{TimeLimit: &limit, TimeMin: &tmin, Nice: &nice, QOS: &qos, BeginTime: &begin}}
	b, err := json.Marshal(scheduler.Entry{At: begin, Event: ev})
	require.NoError(t, err)
	for _, want := range []string{`"Job":7`, `"TimeLimit":"1-12:00:00"`, `"TimeMin":"1.5s"`, `"Nice":-5`, `"QOS":"high"`, `"BeginTime":"2026-12-01T10:00:00Z"`} {
		assert.Contains(t, string(b), want)
	}
	assert.NotContains(t, string(b), "Partition", "unset fields are left out")
	var back scheduler.Entry
	require.NoError(t, json.Unmarshal(b, &back))
	got, ok := back.Event.(scheduler.UpdateJobEvent)
	require.True(t, ok, "%T", back.Event)
	assert.Equal(t, ev.Job, got.Job)
	require.NotNil(t, got.TimeLimit)
	assert.Equal(t, limit, *got.TimeLimit)
	assert.Equal(t, tmin, *got.TimeMin)
	assert.Equal(t, nice, *got.Nice)
	assert.True(t, begin.Equal(*got.BeginTime))
	assert.Nil(t, got.Partition)

	b, err = json.Marshal(scheduler.JobUpdate{})
	require.NoError(t, err)
	assert.Equal(t, `{}`, string(b))
}
