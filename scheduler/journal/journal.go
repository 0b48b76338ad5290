package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/buntdb"

	"github.com/sluicehq/sluice/scheduler"
)

// SyncPolicy says when the journal forces its appends to disk. Whatever
// the policy, an append is written to the file (the operating system's
// cache) before Append returns, so a crash of the process loses nothing
// acknowledged; the policy decides what a power loss or a kernel crash
// may lose.
type SyncPolicy uint8

const (
	// SyncBatched (the default) fsyncs the appends of the last second
	// together, once a second in the background (buntdb's EverySecond,
	// as the accounting ledger's SyncEverySecond): a power loss can lose
	// the last second of events.
	SyncBatched SyncPolicy = iota
	// SyncAlways fsyncs every append before Append returns: nothing
	// acknowledged is ever lost. An fsync failure puts the journal in the
	// ErrFailed state.
	SyncAlways
	// SyncNever leaves flushing to the operating system.
	SyncNever
)

// String returns "batched", "always" or "never".
func (p SyncPolicy) String() string {
	switch p {
	case SyncBatched:
		return "batched"
	case SyncAlways:
		return "always"
	case SyncNever:
		return "never"
	}
	return fmt.Sprintf("SyncPolicy(%d)", uint8(p))
}

// Encoding says how an event is stored.
type Encoding uint8

const (
	// EncodingBinary (the default) stores an entry in a compact binary
	// form of the event's fields (see Dump for a readable listing): about
	// 40 % of the JSON's size, several times faster to decode on
	// recovery, and exact where JSON forms are for people. An event the
	// binary form cannot hold is stored as JSON.
	EncodingBinary Encoding = iota
	// EncodingJSON stores every entry as scheduler.Entry's JSON.
	EncodingJSON
)

// String returns "binary" or "json".
func (e Encoding) String() string {
	switch e {
	case EncodingBinary:
		return "binary"
	case EncodingJSON:
		return "json"
	}
	return fmt.Sprintf("Encoding(%d)", uint8(e))
}

// Options tune a journal. The zero value is the default: batched fsync,
// binary encoding, a torn last record dropped on Open.
type Options struct {
	// Sync is when appends are forced to disk (default SyncBatched).
	Sync SyncPolicy
	// Encoding is how events are stored (default EncodingBinary).
	Encoding Encoding
	// StrictTail makes Open fail with ErrTornTail (a *CorruptError
	// naming the offset) when the file ends inside a record, instead of
	// dropping the torn record as crash recovery does.
	StrictTail bool
}

// Validate checks that the policy and encoding are known ones.
func (o Options) Validate() error {
	if o.Sync > SyncNever {
		return fmt.Errorf("%w: sync policy %d", ErrInvalidOptions, o.Sync)
	}
	if o.Encoding > EncodingJSON {
		return fmt.Errorf("%w: encoding %d", ErrInvalidOptions, o.Encoding)
	}
	return nil
}

// File names inside the journal directory.
const (
	fileName     = "journal.db"
	lockName     = "journal.lock"
	snapPrefix   = "snapshot-"
	snapSuffix   = ".snap"
	tmpSuffix    = ".tmp"
	compactName  = fileName + ".compact"
	snapNameForm = snapPrefix + "%016x" + snapSuffix
)

// Journal is a write-ahead log of scheduler events in a directory: the
// events in a buntdb file (journal.db), each with a sequence number one
// above the last, and the snapshot they continue from (snapshot-*.snap).
// It implements scheduler.EventLog: after s.SetEventLog(j), every event s
// applies is appended (and written to the file) before it is applied.
// Methods are safe for concurrent use, but the snapshot WriteSnapshot
// takes must be of the events appended so far: call it from the goroutine
// that drives the scheduler, between events.
type Journal struct {
	mu    sync.Mutex
	dir   string
	path  string
	opts  Options
	db    *buntdb.DB
	syncf *os.File // a second descriptor on the file, for checked fsync
	lock  *os.File
	codec *codec
	buf   []byte

	last     uint64       // the last sequence number used
	snapshot *snapshotRef // the snapshot the events continue from
	torn     *Torn
	failed   error
	closed   bool
}

// Open opens the journal in dir, creating the directory and an empty
// journal if there is none. It checks every record: damage before the
// last record fails with a *CorruptError (ErrCorrupt) naming the file,
// offset and key, and changes nothing; a torn last record (a crash while
// it was written) is dropped and reported by Torn, unless
// opts.StrictTail is set. A directory another Journal has open fails
// with ErrLocked.
func Open(dir string, opts Options) (*Journal, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	lock, err := lockFile(filepath.Join(dir, lockName))
	if err != nil {
		return nil, err
	}
	j := &Journal{dir: dir, path: filepath.Join(dir, fileName), opts: opts, lock: lock, codec: newCodec()}
	if err := j.open(); err != nil {
		_ = unlockFile(lock)
		return nil, err
	}
	return j, nil
}

func (j *Journal) open() error {
	// A WriteSnapshot (or a creation) killed half-way leaves this
	// temporary file.
	tmp := filepath.Join(j.dir, compactName)
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: %w", err)
	}
	sc, err := scanFile(j.path, nil)
	if err != nil {
		return err
	}
	if sc.torn != nil {
		if j.opts.StrictTail {
			return &CorruptError{Path: j.path, Offset: sc.torn.Offset, Key: sc.torn.Key, Err: ErrTornTail,
				Reason: fmt.Sprintf("the last %d bytes are a torn record (%s); open without StrictTail to drop them", sc.torn.Bytes, sc.torn.Reason)}
		}
		if err := truncateFile(j.path, sc.torn.Offset); err != nil {
			return err
		}
		j.torn = sc.torn
	}
	if sc.good == 0 { // a new journal: its header, in place at once
		if err := writeFile(tmp, nil); err != nil {
			return err
		}
		if err := os.Rename(tmp, j.path); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		if err := syncDir(j.dir); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	j.snapshot, j.last = sc.snapshot, sc.last
	if j.snapshot != nil && j.snapshot.Seq > j.last {
		j.last = j.snapshot.Seq
	}
	if err := j.openDB(); err != nil {
		return err
	}
	j.removeStaleSnapshots()
	return nil
}

// openDB opens the (checked) file in buntdb.
func (j *Journal) openDB() error {
	db, err := buntdb.Open(j.path)
	if err != nil {
		return fmt.Errorf("journal: open %s: %w", j.path, err)
	}
	pol := buntdb.Never
	if j.opts.Sync == SyncBatched {
		pol = buntdb.EverySecond
	}
	if err := db.SetConfig(buntdb.Config{SyncPolicy: pol, AutoShrinkDisabled: true}); err != nil {
		_ = db.Close()
		return fmt.Errorf("journal: open %s: %w", j.path, err)
	}
	f, err := os.OpenFile(j.path, os.O_RDWR, 0)
	if err != nil {
		_ = db.Close()
		return fmt.Errorf("journal: open %s: %w", j.path, err)
	}
	j.db, j.syncf = db, f
	return nil
}

// removeStaleSnapshots deletes the snapshot files other than the current
// one: older ones a WriteSnapshot did not get to delete, and a newer one
// whose WriteSnapshot did not finish. Failures are left for the next Open.
func (j *Journal) removeStaleSnapshots() {
	ents, err := os.ReadDir(j.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, snapPrefix) || (j.snapshot != nil && n == j.snapshot.File) {
			continue
		}
		if strings.HasSuffix(n, snapSuffix) || strings.HasSuffix(n, snapSuffix+tmpSuffix) {
			_ = os.Remove(filepath.Join(j.dir, n))
		}
	}
}

// Dir returns the journal's directory.
func (j *Journal) Dir() string { return j.dir }

// Torn returns the torn last record Open dropped, or nil.
func (j *Journal) Torn() *Torn { return j.torn }

// LastSeq returns the sequence number of the last event appended (or
// covered by the snapshot): right after a journalled s.Schedule returns,
// the number of its Schedule event, by which a caller can key the launches
// of its cycle.
func (j *Journal) LastSeq() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.last
}

// Stats says what the journal holds.
type Stats struct {
	// LastSeq is the sequence number of the last event appended (or
	// covered by the snapshot); the next Append gets LastSeq+1.
	LastSeq uint64
	// SnapshotSeq is the last event the snapshot covers; 0 without one.
	SnapshotSeq uint64
	// Events is the number of events after the snapshot (those Recover
	// replays).
	Events uint64
	// FileSize is the size of the events file in bytes.
	FileSize int64
}

// Stats returns what the journal holds now.
func (j *Journal) Stats() (Stats, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return Stats{}, err
	}
	st := Stats{LastSeq: j.last}
	if j.snapshot != nil {
		st.SnapshotSeq = j.snapshot.Seq
	}
	st.Events = j.last - st.SnapshotSeq
	fi, err := j.syncf.Stat()
	if err != nil {
		return Stats{}, fmt.Errorf("journal: %w", err)
	}
	st.FileSize = fi.Size()
	return st, nil
}

func (j *Journal) usable() error {
	if j.closed {
		return ErrClosed
	}
	return j.failed
}

func (j *Journal) fail(err error) error {
	j.failed = fmt.Errorf("%w: %s: %w", ErrFailed, j.path, err)
	return j.failed
}

// Append implements scheduler.EventLog: it writes the event, with time now
// and the next sequence number, to the file (and, with SyncAlways, to
// disk) before it returns. An event that cannot be encoded, or would not
// decode again, fails and changes nothing (so the scheduler does not
// apply it); a write failure puts the journal in the ErrFailed state.
func (j *Journal) Append(now time.Time, ev scheduler.Event) error {
	_, err := j.AppendSeq(now, ev)
	return err
}

// AppendSeq is Append returning the sequence number the event got. Called
// directly (not by Scheduler.Apply, which checks the clock first), the
// times must not go back: Recover applies the events in sequence order.
func (j *Journal) AppendSeq(now time.Time, ev scheduler.Event) (uint64, error) {
	if ev == nil {
		return 0, fmt.Errorf("journal: append: %w: nil event", scheduler.ErrInvalidEvent)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return 0, err
	}
	payload, err := j.encode(j.buf[:0], now, ev)
	if err != nil {
		return 0, err
	}
	seq := j.last + 1
	key := eventKey(seq)
	val := string(seal(key, payload))
	j.buf = payload[:0]
	err = j.db.Update(func(tx *buntdb.Tx) error {
		_, _, err := tx.Set(key, val, nil)
		return err
	})
	if err != nil {
		return 0, j.fail(err)
	}
	if j.opts.Sync == SyncAlways {
		if err := j.syncf.Sync(); err != nil {
			return 0, j.fail(err)
		}
	}
	j.last = seq
	return seq, nil
}

// Sync forces every event appended so far to disk. Under SyncBatched, call
// it before acting outside the process on what an event decided (launching
// the starts of a Schedule cycle, say), so that a power loss cannot lose
// an event whose effects already happened. A failure puts the journal in
// the ErrFailed state.
func (j *Journal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return err
	}
	if err := j.syncf.Sync(); err != nil {
		return j.fail(err)
	}
	return nil
}

// encode appends an entry's record payload (a format byte and the entry)
// to b.
func (j *Journal) encode(b []byte, now time.Time, ev scheduler.Event) ([]byte, error) {
	return encodeWith(j.codec, j.opts.Encoding, b, now, ev)
}

// encodeWith appends an entry's record payload in encoding enc to b.
func encodeWith(c *codec, enc Encoding, b []byte, now time.Time, ev scheduler.Event) ([]byte, error) {
	if enc == EncodingBinary {
		out, err := c.appendEntry(append(b, recBinary), now, ev)
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, errNoBinary) {
			return b, fmt.Errorf("journal: append %s event: %w", ev.Kind(), err)
		}
	}
	data, err := json.Marshal(scheduler.Entry{At: now, Event: ev})
	if err != nil {
		return b, fmt.Errorf("journal: append %s event: %w", ev.Kind(), err)
	}
	if _, err := c.eventType(ev.Kind()); err != nil {
		// Never journal (and so apply) what recovery could not read back.
		var e scheduler.Entry
		if err := json.Unmarshal(data, &e); err != nil {
			return b, fmt.Errorf("journal: append %s event: it would not decode: %w", ev.Kind(), err)
		}
	}
	return append(append(b, recJSON), data...), nil
}

// decodeWith decodes an event record's payload.
func decodeWith(c *codec, payload []byte) (scheduler.Entry, error) {
	var e scheduler.Entry
	if len(payload) == 0 {
		return e, errors.New("empty record")
	}
	switch payload[0] {
	case recBinary:
		return c.decodeEntry(payload[1:])
	case recJSON:
		err := json.Unmarshal(payload[1:], &e)
		return e, err
	}
	return e, fmt.Errorf("unknown record format %q", payload[0])
}

// Close fsyncs and closes the journal and releases its directory.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	j.closed = true
	var errs []error
	if j.db != nil {
		if err := j.syncf.Sync(); err != nil && j.failed == nil {
			errs = append(errs, err)
		}
		errs = append(errs, j.db.Close(), j.syncf.Close())
	}
	errs = append(errs, unlockFile(j.lock))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("journal: close %s: %w", j.path, err)
	}
	return nil
}
