package journal

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tidwall/buntdb"

	"github.com/sluicehq/sluice/scheduler"
)

// RecoverOptions say how Recover builds the scheduler the events are
// replayed onto.
type RecoverOptions struct {
	// New builds the scheduler a journal without a snapshot replays
	// onto: the scheduler as it was before the first event journalled,
	// typically scheduler.New with the configuration it was created with.
	// Nil: a journal without a snapshot fails with ErrNoBase.
	New func() (*scheduler.Scheduler, error)
	// RestoreOptions carry what a snapshot does not hold (a fair-share
	// source, a site-factor hook, a backfill chooser, the TRES registry)
	// to scheduler.Restore. Their EventLog is not used: the recovered
	// scheduler journals to the journal.
	RestoreOptions scheduler.RestoreOptions
	// Restore, if set, rebuilds the scheduler from the bytes the
	// Snapshotter given to WriteSnapshot wrote, in place of
	// scheduler.Restore(r, RestoreOptions): for a caller whose snapshot
	// wraps the scheduler's own.
	Restore func(r io.Reader) (*scheduler.Scheduler, error)
}

// RecoverReport says what Recover did.
type RecoverReport struct {
	// SnapshotSeq is the last event the snapshot covered (0: none; the
	// replay started from RecoverOptions.New).
	SnapshotSeq uint64
	// Replayed is the number of events applied after the snapshot.
	Replayed int
	// Rejected is how many of them Apply refused (an unknown job, say):
	// they were journalled before being applied, failed then as they
	// fail now, and changed nothing either time.
	Rejected int
	// LastSeq is the sequence number of the last event the recovered
	// state includes; the next Append gets LastSeq+1.
	LastSeq uint64
	// Torn is the torn last record Open dropped (an event a crash
	// interrupted before it was acknowledged), or nil.
	Torn *Torn
}

// replayed is one decoded event of the replay.
type replayed struct {
	seq   uint64
	entry scheduler.Entry
	err   error
	key   string
}

// Recover rebuilds the scheduler: the last snapshot (restored by
// scheduler.Restore, or RecoverOptions.New for a journal without one),
// then every event after it applied in order with Apply.
// Nothing is appended during the replay; the returned scheduler then has
// the journal as its EventLog, so that its later events are journalled.
// Damage (a snapshot that does not match its checksum, an event that does
// not decode, a gap in the sequence numbers, an event time before the
// last) is an error naming the event's sequence number and key, and
// nothing stored is changed. Events decode on a second goroutine while
// the first applies them. The journal is locked meanwhile: opts.New and
// opts.Restore must not call it.
func (j *Journal) Recover(opts RecoverOptions) (*scheduler.Scheduler, RecoverReport, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	rep := RecoverReport{Torn: j.torn}
	if err := j.usable(); err != nil {
		return nil, rep, err
	}
	s, err := j.base(opts)
	if err != nil {
		return nil, rep, err
	}
	if j.snapshot != nil {
		rep.SnapshotSeq = j.snapshot.Seq
	}
	s.SetEventLog(nil)
	rep.LastSeq = rep.SnapshotSeq
	stop := make(chan struct{})
	batches := make(chan []replayed, 4)
	go j.decodeEvents(rep.SnapshotSeq, batches, stop)
	defer func() {
		close(stop)
		for range batches { // let the decoder finish
		}
	}()
	for batch := range batches {
		for _, r := range batch {
			if r.err != nil {
				return nil, rep, r.err
			}
			if r.seq != rep.LastSeq+1 {
				return nil, rep, &CorruptError{Path: j.path, Offset: -1, Key: r.key, Seq: r.seq, Err: ErrCorrupt,
					Reason: fmt.Sprintf("events %d to %d are missing", rep.LastSeq+1, r.seq-1)}
			}
			_, err := s.Apply(r.entry.At, r.entry.Event)
			if errors.Is(err, scheduler.ErrTimeWentBackwards) {
				return nil, rep, &CorruptError{Path: j.path, Offset: -1, Key: r.key, Seq: r.seq, Err: ErrCorrupt,
					Reason: fmt.Sprintf("replaying the %s event: %v", r.entry.Event.Kind(), err)}
			}
			if err != nil {
				rep.Rejected++
			}
			rep.Replayed++
			rep.LastSeq = r.seq
		}
	}
	if rep.LastSeq != j.last {
		return nil, rep, &CorruptError{Path: j.path, Offset: -1, Key: eventKey(j.last), Seq: j.last, Err: ErrCorrupt,
			Reason: fmt.Sprintf("the replay ended at event %d", rep.LastSeq)}
	}
	s.SetEventLog(j)
	return s, rep, nil
}

// base builds the scheduler the replay starts from.
func (j *Journal) base(opts RecoverOptions) (*scheduler.Scheduler, error) {
	if j.snapshot == nil {
		if opts.New == nil {
			return nil, fmt.Errorf("%w: %s has no snapshot and RecoverOptions.New is nil", ErrNoBase, j.dir)
		}
		s, err := opts.New()
		if err != nil {
			return nil, fmt.Errorf("journal: recover: new scheduler: %w", err)
		}
		return s, nil
	}
	ref := j.snapshot
	path := filepath.Join(j.dir, ref.File)
	restore := opts.Restore
	if restore == nil {
		ro := opts.RestoreOptions
		ro.EventLog = nil // installed after the replay
		restore = func(r io.Reader) (*scheduler.Scheduler, error) { return scheduler.Restore(r, ro) }
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("journal: recover: snapshot of event %d: %w", ref.Seq, err)
	}
	defer f.Close()
	h := crc32.New(castagnoli)
	cw := &countWriter{w: h}
	r := io.TeeReader(bufio.NewReaderSize(f, 1<<20), cw)
	s, rerr := ref.restore(restore, r)
	// Check the whole file, also what Restore did not read.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, fmt.Errorf("journal: recover: snapshot %s: %w", path, err)
	}
	if cw.n != ref.Size || h.Sum32() != ref.CRC32 {
		return nil, &CorruptError{Path: path, Offset: -1, Key: snapshotKey, Err: ErrCorrupt,
			Reason: fmt.Sprintf("snapshot of event %d: %d bytes with CRC-32C %08x, want %d bytes with %08x", ref.Seq, cw.n, h.Sum32(), ref.Size, ref.CRC32)}
	}
	if rerr != nil {
		return nil, fmt.Errorf("journal: recover: restore snapshot %s: %w", path, rerr)
	}
	return s, nil
}

func (ref *snapshotRef) restore(fn func(io.Reader) (*scheduler.Scheduler, error), r io.Reader) (*scheduler.Scheduler, error) {
	s, err := fn(r)
	if err == nil && s == nil {
		err = errors.New("restore returned no scheduler")
	}
	return s, err
}

// decodeEvents decodes the events after seq in batches, until stop is
// closed; it closes out when done.
func (j *Journal) decodeEvents(seq uint64, out chan<- []replayed, stop <-chan struct{}) {
	defer close(out)
	const batchSize = 512
	batch := make([]replayed, 0, batchSize)
	send := func() bool {
		select {
		case out <- batch:
			batch = make([]replayed, 0, batchSize)
			return true
		case <-stop:
			return false
		}
	}
	err := j.db.View(func(tx *buntdb.Tx) error {
		return tx.AscendGreaterOrEqual("", eventKey(seq+1), func(k, v string) bool {
			if len(k) != eventKeyLen || k[0] != eventPrefix {
				return false
			}
			r := j.decodeRecord(k, v)
			batch = append(batch, r)
			if r.err != nil {
				return false
			}
			return len(batch) < batchSize || send()
		})
	})
	if err != nil {
		batch = append(batch, replayed{err: fmt.Errorf("journal: recover: %w", err)})
	}
	if len(batch) > 0 {
		send()
	}
}

// Events calls fn with every event stored after sequence number after, in
// order: for an audit, a replica catching up, or a listing. It stops at
// the first error fn returns, and returns it. An event that does not
// decode is a *CorruptError naming it.
func (j *Journal) Events(after uint64, fn func(seq uint64, e scheduler.Entry) error) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return err
	}
	var ferr error
	err := j.db.View(func(tx *buntdb.Tx) error {
		return tx.AscendGreaterOrEqual("", eventKey(after+1), func(k, v string) bool {
			if len(k) != eventKeyLen || k[0] != eventPrefix {
				return false
			}
			r := j.decodeRecord(k, v)
			if ferr = r.err; ferr == nil {
				ferr = fn(r.seq, r.entry)
			}
			return ferr == nil
		})
	})
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return ferr
}

// decodeRecord checks and decodes the event record k = v.
func (j *Journal) decodeRecord(k, v string) replayed {
	payload, ok := unseal([]byte(k), []byte(v))
	if !ok {
		seq, _ := keySeq([]byte(k))
		return replayed{key: k, seq: seq, err: &CorruptError{Path: j.path, Offset: -1, Key: k, Seq: seq, Reason: "checksum mismatch in memory", Err: ErrCorrupt}}
	}
	return decodePayload(j.codec, j.path, k, payload)
}

// decodePayload decodes the (checked) payload of event record k.
func decodePayload(c *codec, path, k string, payload []byte) replayed {
	r := replayed{key: k}
	r.seq, _ = keySeq([]byte(k))
	if r.entry, r.err = decodeWith(c, payload); r.err != nil {
		r.err = &CorruptError{Path: path, Offset: -1, Key: k, Seq: r.seq, Reason: "undecodable event: " + r.err.Error(), Err: ErrCorrupt}
	}
	return r
}

// Dump writes a readable listing of the journal to w: a header line, the
// snapshot the events continue from, then one line per event, tab
// separated: its sequence number, its time (RFC 3339), its kind and the
// event as JSON.
func (j *Journal) Dump(w io.Writer) error {
	j.mu.Lock()
	snap := j.snapshot
	j.mu.Unlock()
	bw := bufio.NewWriter(w)
	dumpHeader(bw, j.path)
	if snap != nil {
		dumpSnapshot(bw, snap)
	}
	err := j.Events(0, func(seq uint64, e scheduler.Entry) error { return dumpEvent(bw, seq, e) })
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("journal: dump: %w", err)
	}
	return nil
}

// DumpDir writes the listing Dump writes of the journal in dir without
// opening it: it takes no lock and changes nothing, so it can list the
// journal of a running process, up to its last complete record (a record
// being written is listed as a torn tail). Damage is an error, as for
// Open.
func DumpDir(dir string, w io.Writer) error {
	path := filepath.Join(dir, fileName)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("journal: dump: %w", err)
	}
	c := newCodec()
	bw := bufio.NewWriter(w)
	dumpHeader(bw, path)
	sc, err := scanFile(path, func(key, payload []byte) error {
		if string(key) == snapshotKey {
			var ref snapshotRef
			if err := json.Unmarshal(payload, &ref); err != nil {
				return fmt.Errorf("journal: %s: snapshot record: %w", path, err)
			}
			dumpSnapshot(bw, &ref)
			return nil
		}
		r := decodePayload(c, path, string(key), payload)
		if r.err != nil {
			return r.err
		}
		return dumpEvent(bw, r.seq, r.entry)
	})
	if err == nil && sc.torn != nil {
		_, err = fmt.Fprintf(bw, "# torn tail at byte offset %d: %d bytes (%s)\n", sc.torn.Offset, sc.torn.Bytes, sc.torn.Reason)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("journal: dump: %w", err)
	}
	return nil
}

func dumpHeader(w io.Writer, path string) {
	fmt.Fprintf(w, "# %s version %d: %s\n", formatName, formatVersion, path)
}

func dumpSnapshot(w io.Writer, ref *snapshotRef) {
	fmt.Fprintf(w, "# snapshot of events 1-%d: %s (%d bytes, CRC-32C %08x)\n", ref.Seq, ref.File, ref.Size, ref.CRC32)
}

func dumpEvent(w io.Writer, seq uint64, e scheduler.Entry) error {
	ev, err := json.Marshal(e.Event)
	if err != nil {
		return fmt.Errorf("journal: event %d: %w", seq, err)
	}
	_, err = fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", seq, e.At.Format(time.RFC3339Nano), e.Event.Kind(), ev)
	return err
}
