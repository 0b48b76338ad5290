//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

// fileJournal is the orchestrator's write-ahead event log: one JSON
// scheduler.Entry per line, appended and fsynced before the scheduler
// applies the event (it is the scheduler's EventLog). Recovery builds the
// scheduler from its configuration and replays every entry.
//
// It is the seam where package scheduler/journal goes (durable on buntdb,
// compacted by snapshots, Recover = last snapshot + replay): this file
// keeps every event since the state directory was created, so recovery
// time grows with the orchestrator's age.
type fileJournal struct {
	f    *os.File
	off  int64     // the end of the last complete entry
	last time.Time // the time of the last entry
}

// openJournal recovers the scheduler that the events in path (created
// when missing) lead to from cfg, and returns it with the journal
// attached as its EventLog. A torn last line (the process died while
// appending it) is cut off: its event was never applied. An event that
// fails to apply failed the same way when it was appended (the log is
// written ahead), and is skipped.
func openJournal(path string, cfg scheduler.Config) (*scheduler.Scheduler, *fileJournal, error) {
	s, err := scheduler.New(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	j := &fileJournal{f: f}
	good, err := j.replay(s)
	if err == nil {
		err = j.cut(good)
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("journal %s: %w", path, err)
	}
	s.SetEventLog(j)
	return s, j, nil
}

// replay applies every complete entry to s and returns the offset just
// past the last one.
func (j *fileJournal) replay(s *scheduler.Scheduler) (int64, error) {
	r := bufio.NewReader(j.f)
	var off int64
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return off, nil // a line without its newline is torn
		}
		if err != nil {
			return off, err
		}
		var e scheduler.Entry
		if err := json.Unmarshal(bytes.TrimSpace(line), &e); err != nil {
			return off, fmt.Errorf("entry at offset %d: %w", off, err)
		}
		_, _ = s.Apply(e.At, e.Event) // see openJournal
		j.last = e.At
		off += int64(len(line))
	}
}

// cut truncates the file at off and positions writes there.
func (j *fileJournal) cut(off int64) error {
	if err := j.f.Truncate(off); err != nil {
		return err
	}
	if _, err := j.f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	j.off = off
	return nil
}

// Append writes the entry and fsyncs it (scheduler.EventLog).
func (j *fileJournal) Append(now time.Time, ev scheduler.Event) error {
	b, err := json.Marshal(scheduler.Entry{At: now, Event: ev})
	if err != nil {
		return err
	}
	_, err = j.f.Write(append(b, '\n'))
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		// Not acknowledged, so not applied: take it out again.
		if cerr := j.cut(j.off); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return fmt.Errorf("journal: %w", err)
	}
	j.off += int64(len(b)) + 1
	j.last = now
	return nil
}

// Last returns the time of the last event journaled.
func (j *fileJournal) Last() time.Time { return j.last }

// Close closes the file.
func (j *fileJournal) Close() error { return j.f.Close() }
