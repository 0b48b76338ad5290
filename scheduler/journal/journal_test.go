package journal_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/journal"
)

// openRun opens a journal in dir, journals a new scheduler and applies n
// workload events to it.
func openRun(t *testing.T, dir string, opts journal.Options, seed uint64, n int) (*journal.Journal, *scheduler.Scheduler, *workload) {
	t.Helper()
	j, err := journal.Open(dir, opts)
	require.NoError(t, err)
	s, err := newScheduler()
	require.NoError(t, err)
	s.SetEventLog(j)
	w := newWorkload(seed)
	run(t, w, s, n)
	return j, s, w
}

// A journalled scheduler recovered from its journal has the same state,
// the same last sequence number, and decides the same from there on as
// the scheduler that wrote it — for either encoding.
func TestJournalAppendRecoverRoundTrip(t *testing.T) {
	for _, enc := range []journal.Encoding{journal.EncodingBinary, journal.EncodingJSON} {
		t.Run(enc.String(), func(t *testing.T) {
			dir := t.TempDir()
			j, s, w := openRun(t, dir, journal.Options{Encoding: enc}, 1, 400)
			st, err := j.Stats()
			require.NoError(t, err)
			require.Equal(t, uint64(400), st.LastSeq)
			want := digest(s)
			require.NoError(t, j.Close())

			j2, err := journal.Open(dir, journal.Options{Encoding: enc})
			require.NoError(t, err)
			defer j2.Close()
			require.Nil(t, j2.Torn())
			r, rep, err := j2.Recover(recoverOpts)
			require.NoError(t, err)
			require.Equal(t, want, digest(r))
			require.Equal(t, uint64(400), rep.LastSeq)
			require.Equal(t, 400, rep.Replayed)
			require.Positive(t, rep.Rejected, "the workload has events that fail")
			require.Less(t, rep.Rejected, 200)

			// Both continue identically; the recovered one journals on.
			w2 := w.clone()
			s.SetEventLog(nil)
			require.Equal(t, run(t, w, s, 200), run(t, w2, r, 200))
			st, err = j2.Stats()
			require.NoError(t, err)
			require.Equal(t, uint64(600), st.LastSeq)
		})
	}
}

// The binary encoding carries exactly what the JSON one does: every
// event of a long random sequence, stored in binary, dumps to the JSON of
// the event that was appended.
func TestJournalBinaryEncodingMatchesJSON(t *testing.T) {
	dir := t.TempDir()
	j, err := journal.Open(dir, journal.Options{})
	require.NoError(t, err)
	defer j.Close()
	var want strings.Builder
	s, err := newScheduler()
	require.NoError(t, err)
	w := newWorkload(7)
	extra := []scheduler.Event{
		scheduler.SubmitEvent{Spec: scheduler.JobSpec{Name: "x\x00y\n\"é", Tasks: 2, CPUsPerTask: 3,
			BeginTime: t0.Add(time.Hour).In(time.FixedZone("X", 3600)), Dependency: "afterok:1", Nice: -5,
			GRESPerNode: []gres.Request{}, NodesMax: 3, TasksPerNode: 2, TasksPerSocket: 1, MemPerCPUMiB: 256}},
		scheduler.RemoveReservationEvent{Name: "r"},
		// A heterogeneous job: its components travel in the event.
		scheduler.SubmitEvent{Spec: scheduler.JobSpec{Name: "het", Tasks: 2, TimeLimit: time.Hour},
			Components: []scheduler.JobSpec{{Name: "het", Nodes: 2, TimeLimit: 90 * time.Second, GRESPerNode: []gres.Request{{Name: "gpu", Count: 1}}}}},
	}
	for i := range 600 {
		now, ev := w.next(s)
		if i < len(extra) {
			ev = extra[i]
		}
		seq, err := j.AppendSeq(now, ev)
		require.NoError(t, err)
		_, _ = s.Apply(now, ev)
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		fmt.Fprintf(&want, "%d\t%s\t%s\t%s\n", seq, now.Format(time.RFC3339Nano), ev.Kind(), b)
	}
	var got bytes.Buffer
	require.NoError(t, j.Dump(&got))
	lines := strings.SplitN(got.String(), "\n", 2)
	require.True(t, strings.HasPrefix(lines[0], "# sluice-journal version 1"))
	require.Equal(t, want.String(), lines[1])

	// DumpDir lists the same from the file, while the journal is open.
	var fromFile bytes.Buffer
	require.NoError(t, journal.DumpDir(dir, &fromFile))
	require.Equal(t, got.String(), fromFile.String())
}

// WriteSnapshot drops the events it covers and the older snapshot; the
// journal recovers from the snapshot plus the events after it, and keeps
// numbering events from where it was.
func TestJournalSnapshotCompaction(t *testing.T) {
	dir := t.TempDir()
	j, s, w := openRun(t, dir, journal.Options{}, 3, 300)
	before, err := j.Stats()
	require.NoError(t, err)

	seq, err := j.WriteSnapshot(s)
	require.NoError(t, err)
	require.Equal(t, uint64(300), seq)
	st, err := j.Stats()
	require.NoError(t, err)
	require.Equal(t, journal.Stats{LastSeq: 300, SnapshotSeq: 300, Events: 0, FileSize: st.FileSize}, st)
	require.Less(t, st.FileSize*10, before.FileSize, "the events are gone from the file")
	require.Equal(t, []string{"journal.db", "journal.lock", "snapshot-000000000000012c.snap"}, dirNames(t, dir))

	files := readAll(t, dir)
	seq, err = j.WriteSnapshot(s)
	require.NoError(t, err)
	require.Equal(t, uint64(300), seq)
	require.Equal(t, files, readAll(t, dir), "no event since the snapshot: nothing to do")

	run(t, w, s, 100)
	_, err = j.WriteSnapshot(s)
	require.NoError(t, err)
	require.Equal(t, []string{"journal.db", "journal.lock", "snapshot-0000000000000190.snap"}, dirNames(t, dir), "the older snapshot is deleted")
	run(t, w, s, 50)
	want := digest(s)
	var dump strings.Builder
	require.NoError(t, journal.DumpDir(dir, &dump))
	require.Contains(t, dump.String(), "\n# snapshot of events 1-400: snapshot-0000000000000190.snap (")
	require.Contains(t, dump.String(), "\n401\t")
	require.NotContains(t, dump.String(), "\n400\t")
	require.NoError(t, j.Close())

	j2, err := journal.Open(dir, journal.Options{})
	require.NoError(t, err)
	defer j2.Close()
	r, rep, err := j2.Recover(recoverOpts)
	require.NoError(t, err)
	require.Equal(t, want, digest(r))
	require.Equal(t, journal.RecoverReport{SnapshotSeq: 400, Replayed: 50, Rejected: rep.Rejected, LastSeq: 450}, rep)
	seq, err = j2.AppendSeq(t0.Add(1000*time.Hour), scheduler.ScheduleEvent{})
	require.NoError(t, err)
	require.Equal(t, uint64(451), seq)

}

// A caller whose snapshot is its own (wrapping the scheduler's, say)
// recovers with RecoverOptions.Restore; scheduler.Restore refuses it as
// not a snapshot, and nothing changes.
func TestJournalCustomRestore(t *testing.T) {
	dir := t.TempDir()
	j, err := journal.Open(dir, journal.Options{})
	require.NoError(t, err)
	s, err := newScheduler()
	require.NoError(t, err)
	log := &entryLog{next: j}
	s.SetEventLog(log)
	w := newWorkload(11)
	run(t, w, s, 150)
	_, err = j.WriteSnapshot(log)
	require.NoError(t, err)
	run(t, w, s, 40)
	want := digest(s)
	require.NoError(t, j.Close())
	before := readAll(t, dir)

	j2, err := journal.Open(dir, journal.Options{})
	require.NoError(t, err)
	defer j2.Close()
	_, _, err = j2.Recover(journal.RecoverOptions{New: newScheduler})
	require.ErrorIs(t, err, scheduler.ErrCorruptSnapshot)
	require.Equal(t, before, readAll(t, dir))
	r, rep, err := j2.Recover(journal.RecoverOptions{Restore: replayLog})
	require.NoError(t, err)
	require.Equal(t, want, digest(r))
	require.Equal(t, journal.RecoverReport{SnapshotSeq: 150, Replayed: 40, Rejected: rep.Rejected, LastSeq: 190}, rep)
}

// A snapshot file that does not match the checksum its record gives is an
// error naming the file; nothing is deleted.
func TestJournalCorruptSnapshot(t *testing.T) {
	dir := t.TempDir()
	j, s, _ := openRun(t, dir, journal.Options{}, 4, 100)
	_, err := j.WriteSnapshot(s)
	require.NoError(t, err)
	require.NoError(t, j.Close())
	snap := filepath.Join(dir, "snapshot-0000000000000064.snap")
	flipByte(t, snap, 10)
	before := readAll(t, dir)

	j2, err := journal.Open(dir, journal.Options{})
	require.NoError(t, err)
	defer j2.Close()
	_, _, err = j2.Recover(recoverOpts)
	var ce *journal.CorruptError
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, journal.ErrCorrupt)
	require.Equal(t, snap, ce.Path)
	require.Equal(t, before, readAll(t, dir))
}

// A record cut off by a crash at the end of the file is dropped and
// reported; the events before it recover. With StrictTail, Open refuses.
func TestJournalTornTail(t *testing.T) {
	dir := t.TempDir()
	j, s, _ := openRun(t, dir, journal.Options{}, 5, 120)
	want := digest(s)
	require.NoError(t, j.Close())
	path := filepath.Join(dir, "journal.db")
	good, err := os.ReadFile(path)
	require.NoError(t, err)

	for _, tail := range []string{
		"*3\r\n$3\r\nset\r\n$17\r\ne0000000000000079\r\n$40\r\nB\x06submit", // cut off in the value
		"*3\r\n$3\r\nse", // cut off in the command
		"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", // zeros after a power loss
	} {
		require.NoError(t, os.WriteFile(path, append(append([]byte{}, good...), tail...), 0o644))
		var dump strings.Builder
		require.NoError(t, journal.DumpDir(dir, &dump))
		require.Contains(t, dump.String(), "\n120\t")
		require.Contains(t, dump.String(), fmt.Sprintf("# torn tail at byte offset %d: %d bytes", len(good), len(tail)))
		_, err = journal.Open(dir, journal.Options{StrictTail: true})
		require.ErrorIs(t, err, journal.ErrTornTail)
		var ce *journal.CorruptError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, int64(len(good)), ce.Offset)

		j2, err := journal.Open(dir, journal.Options{})
		require.NoError(t, err)
		require.Equal(t, &journal.Torn{Offset: int64(len(good)), Bytes: int64(len(tail)), Key: j2.Torn().Key, Reason: j2.Torn().Reason}, j2.Torn())
		r, rep, err := j2.Recover(recoverOpts)
		require.NoError(t, err)
		require.Equal(t, want, digest(r))
		require.Equal(t, uint64(120), rep.LastSeq)
		require.Equal(t, j2.Torn(), rep.Torn)
		seq, err := j2.AppendSeq(t0.Add(1000*time.Hour), scheduler.ScheduleEvent{})
		require.NoError(t, err)
		require.Equal(t, uint64(121), seq, "the torn event's number is given again")
		require.NoError(t, j2.Close())
		require.NoError(t, os.WriteFile(path, good, 0o644))
	}
}

// A damaged record before the last is an error naming its offset, key and
// sequence number, and leaves the file as it was.
func TestJournalCorruptMiddle(t *testing.T) {
	dir := t.TempDir()
	j, _, _ := openRun(t, dir, journal.Options{}, 6, 80)
	require.NoError(t, j.Close())
	path := filepath.Join(dir, "journal.db")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	key := []byte("e0000000000000028") // event 40
	off := bytes.Index(b, key)
	require.Positive(t, off)
	flipByte(t, path, int64(off+len(key)+12))
	before := readAll(t, dir)

	_, err = journal.Open(dir, journal.Options{})
	var ce *journal.CorruptError
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, journal.ErrCorrupt)
	require.Equal(t, uint64(40), ce.Seq)
	require.Equal(t, string(key), ce.Key)
	require.Equal(t, int64(bytes.LastIndex(b[:off], []byte("*3\r\n"))), ce.Offset)
	require.Contains(t, err.Error(), "event 40")
	require.Equal(t, before, readAll(t, dir), "a failed open changes nothing")

	// Damage to the framing is found too.
	require.NoError(t, os.WriteFile(path, bytes.Replace(b, []byte("$17\r\ne0000000000000014"), []byte("$17\r\nX0000000000000014"), 1), 0o644))
	_, err = journal.Open(dir, journal.Options{})
	require.ErrorIs(t, err, journal.ErrCorrupt)
	require.Contains(t, err.Error(), "0000000000000014")

	// A file that is not a journal is refused, untouched.
	require.NoError(t, os.WriteFile(path, []byte("hello"), 0o644))
	_, err = journal.Open(dir, journal.Options{})
	require.ErrorIs(t, err, journal.ErrNotJournal)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "hello", string(got))
}

// A journal closed cleanly reopens with nothing dropped and numbers on.
func TestJournalReopenAfterCleanClose(t *testing.T) {
	dir := t.TempDir()
	for round := range 3 {
		j, err := journal.Open(dir, journal.Options{Sync: journal.SyncAlways})
		require.NoError(t, err)
		require.Nil(t, j.Torn())
		st, err := j.Stats()
		require.NoError(t, err)
		require.Equal(t, uint64(round*10), st.LastSeq)
		for i := range 10 {
			seq, err := j.AppendSeq(t0.Add(time.Duration(round*10+i)*time.Second), scheduler.ScheduleEvent{})
			require.NoError(t, err)
			require.Equal(t, uint64(round*10+i+1), seq)
		}
		require.NoError(t, j.Sync())
		require.NoError(t, j.Close())
		require.ErrorIs(t, j.Close(), journal.ErrClosed)
		require.ErrorIs(t, j.Sync(), journal.ErrClosed)
		require.ErrorIs(t, j.Append(t0, scheduler.ScheduleEvent{}), journal.ErrClosed)
	}
}

// Two journals never have one directory open at once.
func TestJournalLockAgainstTwoOpeners(t *testing.T) {
	dir := t.TempDir()
	j, err := journal.Open(dir, journal.Options{})
	require.NoError(t, err)
	_, err = journal.Open(dir, journal.Options{})
	require.ErrorIs(t, err, journal.ErrLocked)
	require.NoError(t, j.Close())
	j, err = journal.Open(dir, journal.Options{})
	require.NoError(t, err)
	require.NoError(t, j.Close())
}

// A failed append applies nothing: the scheduler refuses the event.
func TestJournalFailedAppendAppliesNothing(t *testing.T) {
	dir := t.TempDir()
	j, s, _ := openRun(t, dir, journal.Options{}, 8, 20)
	want := digest(s)
	require.NoError(t, j.Close())
	_, err := s.Submit(t0.Add(100*time.Hour), scheduler.JobSpec{Tasks: 1, CPUsPerTask: 1, TimeLimit: time.Hour})
	require.ErrorIs(t, err, journal.ErrClosed)
	require.Equal(t, want, digest(s))
}

func TestJournalOptionsValidate(t *testing.T) {
	require.NoError(t, journal.Options{}.Validate())
	require.ErrorIs(t, journal.Options{Sync: 9}.Validate(), journal.ErrInvalidOptions)
	require.ErrorIs(t, journal.Options{Encoding: 9}.Validate(), journal.ErrInvalidOptions)
	_, err := journal.Open(t.TempDir(), journal.Options{Sync: 9})
	require.ErrorIs(t, err, journal.ErrInvalidOptions)
	require.Equal(t, "batched", journal.SyncBatched.String())
	require.Equal(t, "always", journal.SyncAlways.String())
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	b := make([]byte, 1)
	_, err = f.ReadAt(b, off)
	require.NoError(t, err)
	b[0] ^= 0x20
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// readAll returns every file of dir by name.
func readAll(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range dirNames(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, n))
		require.NoError(t, err)
		out[n] = string(b)
	}
	return out
}

type failingSnapshotter struct{}

func (failingSnapshotter) Snapshot(w io.Writer) error {
	_, _ = w.Write([]byte("partial"))
	return errors.New("disk full")
}

// A WriteSnapshot that fails, or one a crash interrupted (its temporary
// files, or a new snapshot file whose journal switch never happened),
// leaves the journal as it was: it recovers from the previous snapshot
// and all the events after it.
func TestJournalInterruptedSnapshot(t *testing.T) {
	dir := t.TempDir()
	j, s, w := openRun(t, dir, journal.Options{}, 9, 200)
	_, err := j.WriteSnapshot(s)
	require.NoError(t, err)
	run(t, w, s, 60)
	files := readAll(t, dir)
	_, err = j.WriteSnapshot(failingSnapshotter{})
	require.ErrorContains(t, err, "disk full")
	require.Equal(t, files, readAll(t, dir))
	run(t, w, s, 10) // still usable
	want := digest(s)
	require.NoError(t, j.Close())

	for name, content := range map[string]string{
		"snapshot-0000000000000104.snap":     "a newer snapshot whose switch did not happen",
		"snapshot-0000000000000104.snap.tmp": "half a snapshot",
		"journal.db.compact":                 "half a new events file",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	j2, err := journal.Open(dir, journal.Options{})
	require.NoError(t, err)
	defer j2.Close()
	require.Equal(t, []string{"journal.db", "journal.lock", "snapshot-00000000000000c8.snap"}, dirNames(t, dir))
	r, rep, err := j2.Recover(recoverOpts)
	require.NoError(t, err)
	require.Equal(t, want, digest(r))
	require.Equal(t, uint64(200), rep.SnapshotSeq)
	require.Equal(t, 70, rep.Replayed)
}

// alienEvent is an event of a kind the scheduler cannot decode (it
// borrows CancelEvent's apply).
type alienEvent struct{ scheduler.CancelEvent }

func (alienEvent) Kind() scheduler.EventKind { return "alien" }

// An event recovery could not read back is refused, so the scheduler
// does not apply it, and the journal carries on.
func TestJournalRefusesUndecodableEvent(t *testing.T) {
	for _, enc := range []journal.Encoding{journal.EncodingBinary, journal.EncodingJSON} {
		j, s, _ := openRun(t, t.TempDir(), journal.Options{Encoding: enc}, 10, 30)
		want := digest(s)
		_, err := s.Apply(t0.Add(100*time.Hour), alienEvent{scheduler.CancelEvent{Job: 1}})
		require.ErrorContains(t, err, "would not decode")
		require.Equal(t, want, digest(s))
		seq, err := j.AppendSeq(t0.Add(100*time.Hour), scheduler.ScheduleEvent{})
		require.NoError(t, err)
		require.Equal(t, uint64(31), seq)
		require.NoError(t, j.Close())
	}
}

// Appends from several goroutines get distinct, consecutive sequence
// numbers, and every one is recovered.
func TestJournalConcurrentAppends(t *testing.T) {
	dir := t.TempDir()
	j, err := journal.Open(dir, journal.Options{})
	require.NoError(t, err)
	const workers, each = 4, 250
	seqs := make(chan uint64, workers*each)
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range each {
				seq, err := j.AppendSeq(t0.Add(time.Duration(w*each+i)*time.Second), scheduler.CancelEvent{Job: scheduler.JobID(w)})
				if err != nil {
					errs <- err
					return
				}
				seqs <- seq
			}
			errs <- nil
		}()
	}
	for range workers {
		require.NoError(t, <-errs)
	}
	close(seqs)
	seen := map[uint64]bool{}
	for s := range seqs {
		require.False(t, seen[s], "sequence number %d given twice", s)
		seen[s] = true
	}
	require.Len(t, seen, workers*each)
	require.Equal(t, uint64(workers*each), j.LastSeq())
	n := 0
	require.NoError(t, j.Events(0, func(seq uint64, _ scheduler.Entry) error {
		n++
		require.Equal(t, uint64(n), seq)
		return nil
	}))
	require.Equal(t, workers*each, n)
	require.NoError(t, j.Close())
}
