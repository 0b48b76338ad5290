//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler"
)

// TestJournalReplaysAndCutsTornTail: reopening the journal rebuilds the
// scheduler the journalled events led to (jobs, their states, the clock),
// a torn last line is cut off, and appending goes on after it.
func TestJournalReplaysAndCutsTornTail(t *testing.T) {
	cfg := clusterConfig{Cluster: "c", CPUs: 2, MemoryMiB: 1024}.schedulerConfig()
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

	s, j, err := openJournal(path, cfg)
	require.NoError(t, err)
	var ids []scheduler.JobID
	for i := range 3 {
		id, err := s.Submit(t0, scheduler.JobSpec{Name: "j", User: "u", Account: "a", CPUsPerTask: 1, TimeLimit: time.Hour})
		require.NoError(t, err, "job %d", i)
		ids = append(ids, id)
	}
	_, err = s.Schedule(t0)
	require.NoError(t, err)
	require.NoError(t, s.Finish(t0.Add(time.Minute), ids[0], 0))
	_, err = s.Submit(t0, scheduler.JobSpec{Name: "bad", User: "u", Account: "a", CPUsPerTask: 99})
	require.Error(t, err, "journalled, refused: replay refuses it again")
	want := s.Jobs()
	require.NoError(t, j.Close())

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"at":"2026-12-01T10:05:00Z","kind":"cancel","ev`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	s2, j2, err := openJournal(path, cfg)
	require.NoError(t, err)
	assert.Equal(t, want, s2.Jobs(), "the recovered scheduler holds the same jobs")
	assert.Equal(t, t0.Add(time.Minute), j2.Last())
	require.NoError(t, s2.Cancel(t0.Add(2*time.Minute), ids[2]), "a new event after the cut")
	require.NoError(t, j2.Close())

	s3, j3, err := openJournal(path, cfg)
	require.NoError(t, err)
	defer j3.Close()
	got, ok := s3.Job(ids[2])
	require.True(t, ok)
	assert.Equal(t, scheduler.JobCancelled, got.State)
}
