//go:build linux

package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/journal"
)

// journalLog is the scheduler's EventLog: the journal (package
// scheduler/journal, durable on buntdb), remembering the time of the
// last event, below which the orchestrator's clock never goes (Apply
// refuses a time before the last event's).
type journalLog struct {
	*journal.Journal
	last time.Time
	// snapSeq is the last event the journal's snapshot covers.
	snapSeq uint64
}

// Append journals ev (scheduler.EventLog).
func (l *journalLog) Append(now time.Time, ev scheduler.Event) error {
	if err := l.Journal.Append(now, ev); err != nil {
		return err
	}
	l.last = now
	return nil
}

// Last returns the time of the last event journalled.
func (l *journalLog) Last() time.Time { return l.last }

// openJournal opens the journal in dir and recovers the scheduler from
// it: the last snapshot, or cfg for a journal without one, then every
// event after it replayed. The returned scheduler journals its events
// to the returned log.
func openJournal(dir string, cfg scheduler.Config) (*scheduler.Scheduler, *journalLog, error) {
	j, err := journal.Open(dir, journal.Options{})
	if err != nil {
		return nil, nil, err
	}
	l := &journalLog{Journal: j}
	s, rep, err := j.Recover(journal.RecoverOptions{
		New:     func() (*scheduler.Scheduler, error) { return scheduler.New(cfg) },
		Restore: l.restore,
	})
	if err == nil && rep.LastSeq > rep.SnapshotSeq {
		err = j.Events(rep.LastSeq-1, func(_ uint64, e scheduler.Entry) error {
			l.last = e.At
			return nil
		})
	}
	if err != nil {
		_ = j.Close()
		return nil, nil, fmt.Errorf("journal %s: %w", dir, err)
	}
	l.snapSeq = rep.SnapshotSeq
	s.SetEventLog(l)
	return s, l, nil
}

// clockSnapshot is the journal's snapshot: the time of the last event
// it covers (8 bytes, Unix nanoseconds, big-endian), then the
// scheduler's own snapshot.
type clockSnapshot struct {
	s  *scheduler.Scheduler
	at time.Time
}

// Snapshot writes the snapshot (journal.Snapshotter).
func (c clockSnapshot) Snapshot(w io.Writer) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(c.at.UnixNano()))
	if _, err := w.Write(b[:]); err != nil {
		return err
	}
	return c.s.Snapshot(w)
}

// restore reads a clockSnapshot back (RecoverOptions.Restore).
func (l *journalLog) restore(r io.Reader) (*scheduler.Scheduler, error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return nil, fmt.Errorf("snapshot clock: %w", err)
	}
	s, err := scheduler.Restore(r, scheduler.RestoreOptions{})
	if err != nil {
		return nil, err
	}
	if n := int64(binary.BigEndian.Uint64(b[:])); n != 0 {
		l.last = time.Unix(0, n).UTC()
	}
	return s, nil
}

// compact writes a snapshot of s (the state after every event journalled)
// when every events have been journalled since the last one.
func (l *journalLog) compact(s *scheduler.Scheduler, every uint64) error {
	if every == 0 || l.LastSeq()-l.snapSeq < every {
		return nil
	}
	seq, err := l.WriteSnapshot(clockSnapshot{s: s, at: l.last})
	if err != nil {
		return fmt.Errorf("journal: snapshot: %w", err)
	}
	l.snapSeq = seq
	return nil
}
