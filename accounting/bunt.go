package accounting

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/tidwall/buntdb"
)

// SyncPolicy says when a buntdb ledger forces its writes to disk.
type SyncPolicy uint8

const (
	// SyncAlways fsyncs after every committed Update, before Update
	// returns (the default): a crash, even a power loss, loses nothing
	// that Update acknowledged. An fsync failure puts the ledger in the
	// ErrFailed state.
	SyncAlways SyncPolicy = iota
	// SyncEverySecond lets buntdb fsync once a second in the background:
	// a power loss can lose the last second; a process crash loses
	// nothing acknowledged.
	SyncEverySecond
	// SyncNever leaves flushing to the operating system.
	SyncNever
)

// String returns "always", "every-second" or "never".
func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "always"
	case SyncEverySecond:
		return "every-second"
	case SyncNever:
		return "never"
	}
	return fmt.Sprintf("SyncPolicy(%d)", uint8(p))
}

// BuntOptions tune a buntdb ledger file. The zero value is the safe
// default: fsync every commit, recover from a crash's torn tail, compact
// automatically.
type BuntOptions struct {
	Sync SyncPolicy
	// StrictTail makes Open fail with ErrTruncated (naming the file and
	// offset) when the file ends inside a transaction, instead of dropping
	// the uncommitted tail as crash recovery does.
	StrictTail bool
	// CompactMinSize is the file size below which the log is never
	// compacted automatically; 0 means 64 MiB.
	CompactMinSize int64
	// CompactRatio triggers automatic compaction when the file has grown
	// to CompactRatio × its size after the last open or compaction; 0
	// means 2.
	CompactRatio float64
	// NoAutoCompact disables automatic compaction (call Compact).
	NoAutoCompact bool
}

// Validate checks the options: a known sync policy, CompactMinSize ≥ 0,
// CompactRatio 0 or above 1.
func (o BuntOptions) Validate() error {
	if o.Sync > SyncNever {
		return fmt.Errorf("%w: sync policy %d", ErrInvalidConfig, o.Sync)
	}
	if o.CompactMinSize < 0 {
		return fmt.Errorf("%w: CompactMinSize %d is negative", ErrInvalidConfig, o.CompactMinSize)
	}
	if o.CompactRatio < 0 || (o.CompactRatio > 0 && o.CompactRatio <= 1) {
		return fmt.Errorf("%w: CompactRatio %v must be 0 (default 2) or above 1", ErrInvalidConfig, o.CompactRatio)
	}
	return nil
}

// Recovery describes what opening a ledger file dropped: the bytes of an
// interrupted transaction at its end. Zero when the file was clean.
type Recovery struct {
	Offset  int64 `json:"offset"`  // where the dropped tail started (the file's new size)
	Dropped int64 `json:"dropped"` // bytes dropped
}

// BuntBackend is a Backend stored in one buntdb file: the whole data set
// in memory, every Update appended to the file as one write followed by a
// commit record, fsynced per the sync policy. Use OpenBunt for a Ledger on
// it; OpenBuntBackend is for running the conformance suite or other
// ledgers on the same storage.
type BuntBackend struct {
	mu         sync.RWMutex
	path       string
	opts       BuntOptions
	db         *buntdb.DB
	syncf      *os.File // second descriptor on the file, for checked fsync
	lock       *os.File // held lock on path+".lock"
	seq        uint64   // last commit sequence number
	base       int64    // file size after open or the last compaction
	recovery   Recovery
	failed     error
	compactErr error
	closed     bool
}

// OpenBuntBackend opens (or creates) the ledger file at path. It checks
// every record's checksum: damage fails with a *CorruptError (ErrCorrupt)
// naming the file and byte offset (run RepairBunt); an interrupted last
// transaction is dropped (see Recovery) unless opts.StrictTail is set.
// Another process holding the file open fails with ErrLocked.
func OpenBuntBackend(path string, opts BuntOptions) (*BuntBackend, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	b := &BuntBackend{path: path, opts: opts}
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, err
	}
	b.lock = lock
	// A compaction killed half-way leaves its temporary file behind.
	if err := os.Remove(path + ".compact"); err != nil && !errors.Is(err, os.ErrNotExist) {
		_ = unlockFile(b.lock)
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	if err := b.open(true); err != nil {
		_ = unlockFile(b.lock)
		return nil, err
	}
	return b, nil
}

// open scans the file (when scan is set), truncates a torn tail, and
// loads it into buntdb.
func (b *BuntBackend) open(scan bool) error {
	if scan {
		sc, err := scanFile(b.path)
		if err != nil {
			return err
		}
		if sc.size > sc.committed {
			if b.opts.StrictTail {
				return &CorruptError{Path: b.path, Offset: sc.committed, Err: ErrTruncated,
					Reason: fmt.Sprintf("the last %d bytes are an uncommitted transaction (open without StrictTail to drop them)", sc.size-sc.committed)}
			}
			if err := truncateSync(b.path, sc.committed); err != nil {
				return err
			}
			b.recovery = Recovery{Offset: sc.committed, Dropped: sc.size - sc.committed}
		}
		b.seq = sc.seq
	}
	db, err := buntdb.Open(b.path)
	if err != nil {
		if errors.Is(err, buntdb.ErrInvalid) {
			return &CorruptError{Path: b.path, Offset: -1, Reason: err.Error(), Err: ErrCorrupt}
		}
		return fmt.Errorf("open ledger %s: %w", b.path, err)
	}
	bs := buntdb.Never
	if b.opts.Sync == SyncEverySecond {
		bs = buntdb.EverySecond
	}
	if err := db.SetConfig(buntdb.Config{SyncPolicy: bs, AutoShrinkDisabled: true}); err != nil {
		_ = db.Close()
		return fmt.Errorf("open ledger %s: %w", b.path, err)
	}
	f, err := os.OpenFile(b.path, os.O_RDWR, 0)
	if err != nil {
		_ = db.Close()
		return fmt.Errorf("open ledger %s: %w", b.path, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = db.Close()
		_ = f.Close()
		return fmt.Errorf("open ledger %s: %w", b.path, err)
	}
	b.db, b.syncf, b.base = db, f, st.Size()
	return nil
}

type scanResult struct {
	size, committed int64
	seq             uint64
}

// scanFile checks every command of the file. committed is the offset
// just after the last commit record. A failure (a cut-off command, NUL
// bytes, bad framing, a bad checksum) with an intact commit record after
// it is damage to committed data: ErrCorrupt at its offset. Without one,
// everything after the last commit is the leftover of an interrupted
// transaction, and only that is dropped.
func scanFile(path string) (scanResult, error) {
	var res scanResult
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("open ledger %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return res, fmt.Errorf("open ledger %s: %w", path, err)
	}
	return scanLog(path, f, st.Size())
}

// scanLog scans a log of size bytes read through r (path names it in
// errors).
func scanLog(path string, r io.ReaderAt, size int64) (scanResult, error) {
	res := scanResult{size: size}
	sc := newScanner(io.NewSectionReader(r, 0, size), size)
	for {
		off := sc.off
		c, err := sc.next()
		if err == io.EOF {
			return res, nil
		}
		reason := ""
		if err != nil {
			reason = err.Error()
		} else if !c.del {
			val, ok := checkSealed(c.key, c.val)
			switch {
			case !ok && off == 0:
				return res, fmt.Errorf("%w: %s does not start with a Sluice ledger record (checksum of %q does not match)", ErrSchemaVersion, path, c.key)
			case !ok:
				reason = fmt.Sprintf("checksum mismatch in record %q", c.key)
			case string(c.key) == commitKey:
				if len(val) != 8 {
					reason = "bad commit record"
				} else if seq := binary.BigEndian.Uint64(val); seq <= res.seq {
					reason = fmt.Sprintf("commit %d after commit %d", seq, res.seq)
				} else {
					res.seq, res.committed = seq, off+c.size
				}
			}
		}
		if reason != "" {
			rest := make([]byte, res.size-off)
			if _, err := r.ReadAt(rest, off); err != nil && err != io.EOF {
				return res, fmt.Errorf("open ledger %s: %w", path, err)
			}
			if hasCommitAfter(rest[1:]) {
				return res, &CorruptError{Path: path, Offset: off, Reason: reason, Err: ErrCorrupt}
			}
			if res.seq == 0 && err != errIncomplete && err != errNUL {
				// Nothing was ever committed and the bytes are not a
				// torn ledger write: do not truncate someone's file.
				if off == 0 {
					return res, fmt.Errorf("%w: %s is not a Sluice ledger file (%s at byte offset 0)", ErrSchemaVersion, path, reason)
				}
				return res, &CorruptError{Path: path, Offset: off, Reason: reason + " (and no committed transaction before it)", Err: ErrCorrupt}
			}
			return res, nil // an interrupted transaction's leftovers
		}
	}
}

func truncateSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("recover ledger %s: %w", path, err)
	}
	if err := f.Truncate(size); err != nil {
		_ = f.Close()
		return fmt.Errorf("recover ledger %s: truncate to %d: %w", path, size, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("recover ledger %s: %w", path, err)
	}
	return f.Close()
}

// Path returns the ledger file's path.
func (b *BuntBackend) Path() string { return b.path }

// Recovery reports what opening the file dropped (zero if nothing).
func (b *BuntBackend) Recovery() Recovery { return b.recovery }

// View implements Backend.
func (b *BuntBackend) View(fn func(KVReader) error) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.usable(); err != nil {
		return err
	}
	return b.db.View(func(tx *buntdb.Tx) error { return fn(&buntTx{tx: tx}) })
}

func (b *BuntBackend) usable() error {
	if b.closed {
		return ErrClosed
	}
	if b.failed != nil {
		return b.failed
	}
	return nil
}

func (b *BuntBackend) fail(err error) error {
	b.failed = fmt.Errorf("%w: %s: %w", ErrFailed, b.path, err)
	return b.failed
}

// Update implements Backend. The transaction's writes go to the file in
// one write, then a commit record in a second; with SyncAlways the file is
// fsynced before Update returns. A crash between the writes leaves an
// uncommitted tail that the next open drops.
func (b *BuntBackend) Update(fn func(KVWriter) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.usable(); err != nil {
		return err
	}
	var fnErr error
	var wrote bool
	err := b.db.Update(func(tx *buntdb.Tx) error {
		fnErr = fn(&buntTx{tx: tx, writable: true, wrote: &wrote})
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return b.fail(err)
	}
	if !wrote {
		return nil
	}
	b.seq++
	err = b.db.Update(func(tx *buntdb.Tx) error {
		_, _, err := tx.Set(commitKey, sealValue(commitKey, commitValue(b.seq)), nil)
		return err
	})
	if err != nil {
		return b.fail(err)
	}
	if b.opts.Sync == SyncAlways {
		if err := b.syncf.Sync(); err != nil {
			return b.fail(err)
		}
	}
	if !b.opts.NoAutoCompact {
		st, err := b.syncf.Stat()
		if err != nil {
			return b.fail(err)
		}
		minSize, ratio := b.opts.CompactMinSize, b.opts.CompactRatio
		if minSize == 0 {
			minSize = 64 << 20
		}
		if ratio == 0 {
			ratio = 2
		}
		if st.Size() > minSize && float64(st.Size()) > ratio*float64(b.base) {
			// The transaction is committed and durable: a compaction
			// failure must not be reported as its failure. A failure
			// before the swap leaves the old file in use (retried after
			// the log grows by the ratio again); one after it puts the
			// backend in the failed state. Err reports both.
			b.compactErr = b.compactLocked()
			if b.compactErr != nil {
				b.base = st.Size()
			}
		}
	}
	return nil
}

// Err returns the error that put the backend in the ErrFailed state, or
// else the error of the last automatic compaction, or nil.
func (b *BuntBackend) Err() error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.failed != nil {
		return b.failed
	}
	return b.compactErr
}

// Compact rewrites the file as its live records only (buntdb's log grows
// with every change), fsyncs the new file and atomically replaces the old
// one. It blocks the ledger while it runs and reloads the file after.
func (b *BuntBackend) Compact() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.usable(); err != nil {
		return err
	}
	b.compactErr = b.compactLocked()
	return b.compactErr
}

func (b *BuntBackend) compactLocked() error {
	tmp := b.path + ".compact"
	err := writeLogFile(tmp, b.seq, func(set func(k, v string) error) error {
		var werr error
		err := b.db.View(func(tx *buntdb.Tx) error {
			return tx.Ascend("", func(k, v string) bool {
				if k != commitKey {
					werr = set(k, v)
				}
				return werr == nil
			})
		})
		if err != nil {
			return err
		}
		return werr
	})
	if err != nil {
		return fmt.Errorf("compact %s: %w", b.path, err)
	}
	// From here on the in-memory state is dropped and reloaded.
	_ = b.db.Close()
	_ = b.syncf.Close()
	if err := os.Rename(tmp, b.path); err != nil {
		return b.fail(fmt.Errorf("compact: %w", err))
	}
	if err := syncDir(filepath.Dir(b.path)); err != nil {
		return b.fail(fmt.Errorf("compact: %w", err))
	}
	if err := b.open(false); err != nil {
		return b.fail(fmt.Errorf("compact: reopen: %w", err))
	}
	return nil
}

// writeLogFile writes a new log file at path: the (already sealed) records
// that records passes to set, then a commit record with sequence number
// seq, and fsyncs it. On failure it removes the file.
func writeLogFile(path string, seq uint64, records func(set func(k, v string) error) error) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = records(func(k, v string) error { return writeSet(w, k, v) })
	if err == nil {
		err = writeSet(w, commitKey, sealValue(commitKey, commitValue(seq)))
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}

func writeSet(w *bufio.Writer, k, v string) error {
	_, err := fmt.Fprintf(w, "*3\r\n$3\r\nset\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(v), v)
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close implements Backend: it fsyncs and closes the file.
func (b *BuntBackend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	b.closed = true
	var errs []error
	if b.db != nil {
		if err := b.syncf.Sync(); err != nil && b.failed == nil {
			errs = append(errs, fmt.Errorf("close ledger %s: %w", b.path, err))
		}
		errs = append(errs, b.db.Close(), b.syncf.Close())
	}
	errs = append(errs, unlockFile(b.lock))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close ledger %s: %w", b.path, err)
	}
	return nil
}

// FileSize returns the current size of the ledger file.
func (b *BuntBackend) FileSize() (int64, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.usable(); err != nil {
		return 0, err
	}
	st, err := b.syncf.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

type buntTx struct {
	tx       *buntdb.Tx
	writable bool
	wrote    *bool
}

func (t *buntTx) Get(key string) (string, bool, error) {
	v, err := t.tx.Get(key)
	if errors.Is(err, buntdb.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	v, err = unseal(key, v)
	return v, err == nil, err
}

// unseal strips the checksum sealValue appended (checked when the file
// was opened).
func unseal(key, sealed string) (string, error) {
	if len(sealed) < 4 {
		return "", corruptKey(key, "value shorter than its checksum")
	}
	return sealed[:len(sealed)-4], nil
}

func (t *buntTx) Ascend(from, to string, fn func(k, v string) bool) error {
	var bad error
	it := func(k, v string) bool {
		if k == commitKey {
			return true
		}
		if v, bad = unseal(k, v); bad != nil {
			return false
		}
		return fn(k, v)
	}
	var err error
	if to == "" {
		err = t.tx.AscendGreaterOrEqual("", from, it)
	} else if from < to {
		err = t.tx.AscendRange("", from, to, it)
	}
	if err != nil {
		return err
	}
	return bad
}

func (t *buntTx) Set(key, val string) error {
	if !t.writable {
		return ErrReadOnly
	}
	if len(key) == 0 || key[0] == '~' {
		return fmt.Errorf("%w: key %q is reserved", ErrInvalid, key)
	}
	if _, _, err := t.tx.Set(key, sealValue(key, val), nil); err != nil {
		if errors.Is(err, buntdb.ErrTxIterating) {
			return errWriteWhileIterating
		}
		return err
	}
	*t.wrote = true
	return nil
}

func (t *buntTx) Delete(key string) error {
	if !t.writable {
		return ErrReadOnly
	}
	_, err := t.tx.Delete(key)
	switch {
	case errors.Is(err, buntdb.ErrNotFound):
		return nil
	case errors.Is(err, buntdb.ErrTxIterating):
		return errWriteWhileIterating
	case err != nil:
		return err
	}
	*t.wrote = true
	return nil
}

// BuntLedger is a Ledger stored in one buntdb file.
type BuntLedger struct {
	Ledger
	b *BuntBackend
}

// OpenBunt opens (or creates) a durable ledger file at path with usage
// policy cfg. See OpenBuntBackend for how damage and crashes are handled,
// and New for the schema and configuration checks.
func OpenBunt(path string, cfg Config, opts BuntOptions) (*BuntLedger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b, err := OpenBuntBackend(path, opts)
	if err != nil {
		return nil, err
	}
	l, err := New(b, cfg)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	return &BuntLedger{Ledger: l, b: b}, nil
}

// Backend returns the file backend.
func (l *BuntLedger) Backend() *BuntBackend { return l.b }

// Path returns the ledger file's path.
func (l *BuntLedger) Path() string { return l.b.Path() }

// Recovery reports what opening the file dropped (zero if nothing).
func (l *BuntLedger) Recovery() Recovery { return l.b.Recovery() }

// Compact rewrites the file as its live records (see BuntBackend.Compact).
func (l *BuntLedger) Compact() error { return l.b.Compact() }

// FileSize returns the current size of the ledger file.
func (l *BuntLedger) FileSize() (int64, error) { return l.b.FileSize() }

// Err reports a failed state or the last automatic compaction error (see
// BuntBackend.Err).
func (l *BuntLedger) Err() error { return l.b.Err() }
