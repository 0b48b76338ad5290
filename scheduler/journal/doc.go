// Package journal is a write-ahead journal of scheduler events, durable on
// buntdb, with snapshot compaction and crash recovery.
//
// A Journal implements scheduler.EventLog: after s.SetEventLog(j), every
// event the scheduler applies (a submit, a finish, a node drain, a
// Schedule cycle …) is first appended to the journal's file with a
// sequence number one above the last, and only then applied; when the
// append fails the event is not applied. Appends are written to the file
// before they are acknowledged and fsynced per Options.Sync: by default
// in batches once a second (SyncBatched), or each one (SyncAlways); Sync
// forces them to disk before the caller acts outside the process on what
// they decided.
//
// WriteSnapshot stores a snapshot of the scheduler with the sequence
// number of the last event it covers and drops those events (and the
// older snapshot), so the journal stays as long as the events since the
// last snapshot. Recover rebuilds the scheduler after a restart: the last
// snapshot (scheduler.Restore), or RecoverOptions.New for a journal
// without one, then every event after it re-applied through
// Scheduler.Apply. Since the scheduler is deterministic, the recovered
// scheduler is the one that acknowledged the last event, and it decides
// from there on exactly as the original would have. A replayed Schedule
// event computes the same cycle again: the caller must not launch its
// starts twice (key launches by job ID and start time).
//
// Open checks every record's checksum. A torn last record — a crash in
// the middle of writing it — is dropped and reported (Journal.Torn,
// RecoverReport.Torn); damage before the last record is an error naming
// the file, byte offset, key and sequence number (*CorruptError), and
// nothing is changed. One Journal at a time may have a directory open
// (ErrLocked).
//
// Events are stored in a compact binary form of their fields
// (EncodingBinary, the default: exact, as the event was applied) or as
// scheduler.Entry JSON (EncodingJSON); Dump and DumpDir list any journal
// readably: sequence number, time, kind and the event as JSON.
//
// The journal directory holds journal.db (buntdb's append-only file),
// journal.lock and the snapshot file snapshot-<seq>.snap. buntdb keeps
// the events since the last snapshot in memory as well; snapshot often
// enough that they fit.
package journal
