package journal

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/tidwall/buntdb"
)

// Snapshotter writes the whole state of a state machine: a
// *scheduler.Scheduler (Scheduler.Snapshot, which Recover restores with
// scheduler.Restore), or a caller's wrapper around one (restored by
// RecoverOptions.Restore).
type Snapshotter interface {
	Snapshot(w io.Writer) error
}

// WriteSnapshot compacts the journal: it writes s's snapshot, which must
// be the state after every event appended so far, to a new snapshot file,
// then replaces the events file by one that starts from it, without the
// events it covers, and deletes the older snapshot. It returns the last
// sequence number the snapshot covers; the next event gets the next one.
// When no event was appended since the last snapshot it does nothing.
// Every step is fsynced, and the switch is one rename: a crash at any
// point leaves either the old snapshot and all events or the new
// snapshot and the events after it. On error the journal is as it was
// (unless the error wraps ErrFailed).
func (j *Journal) WriteSnapshot(s Snapshotter) (uint64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return 0, err
	}
	if j.snapshot != nil && j.snapshot.Seq == j.last {
		// The state is a function of the events: the snapshot of the
		// same events is the one stored (and rewriting its file in place
		// would not be atomic with the record that checksums it).
		return j.last, nil
	}
	ref := snapshotRef{Seq: j.last, File: fmt.Sprintf(snapNameForm, j.last)}
	if err := j.writeSnapshotFile(s, &ref); err != nil {
		return 0, err
	}
	old := j.snapshot
	if err := j.rewrite(&ref); err != nil {
		if old == nil || old.File != ref.File {
			_ = os.Remove(filepath.Join(j.dir, ref.File))
		}
		return 0, err
	}
	if old != nil && old.File != ref.File {
		_ = os.Remove(filepath.Join(j.dir, old.File)) // else the next Open removes it
	}
	return ref.Seq, nil
}

// writeSnapshotFile writes s's snapshot to ref.File (through a temporary
// file, fsynced and renamed) and fills in its size and checksum.
func (j *Journal) writeSnapshotFile(s Snapshotter, ref *snapshotRef) error {
	final := filepath.Join(j.dir, ref.File)
	tmp := final + tmpSuffix
	h := crc32.New(castagnoli)
	var cw *countWriter
	err := syncPath(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, func(f *os.File) error {
		cw = &countWriter{w: io.MultiWriter(f, h)}
		bw := bufio.NewWriterSize(cw, 1<<20)
		if err := s.Snapshot(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err == nil {
		err = syncDir(j.dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("journal: snapshot %s: %w", final, err)
	}
	ref.Size, ref.CRC32 = cw.n, h.Sum32()
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// rewrite replaces the events file by one holding the header, ref and the
// events after ref.Seq, and reopens it.
func (j *Journal) rewrite(ref *snapshotRef) error {
	tmp := filepath.Join(j.dir, compactName)
	refJSON, err := json.Marshal(ref)
	if err != nil {
		return fmt.Errorf("journal: compact: %w", err)
	}
	err = writeFile(tmp, func(add func(string, []byte) error) error {
		if err := add(snapshotKey, refJSON); err != nil {
			return err
		}
		var werr error
		verr := j.db.View(func(tx *buntdb.Tx) error {
			return tx.AscendGreaterOrEqual("", eventKey(ref.Seq+1), func(k, v string) bool {
				if len(k) != eventKeyLen || k[0] != eventPrefix {
					return false
				}
				payload, ok := unseal([]byte(k), []byte(v))
				if !ok {
					werr = &CorruptError{Path: j.path, Offset: -1, Key: k, Reason: "checksum mismatch in memory", Err: ErrCorrupt}
					return false
				}
				werr = add(k, payload)
				return werr == nil
			})
		})
		if verr != nil {
			return verr
		}
		return werr
	})
	if err != nil {
		return err
	}
	// From here on, the open file is replaced: close it, swap, reopen
	// whichever file is in place.
	_ = j.db.Close()
	_ = j.syncf.Close()
	renameErr := os.Rename(tmp, j.path)
	var syncErr error
	if renameErr != nil {
		_ = os.Remove(tmp)
	} else {
		syncErr = syncDir(j.dir)
	}
	if err := j.openDB(); err != nil {
		j.db, j.syncf = nil, nil
		return j.fail(fmt.Errorf("compact: reopen: %w", err))
	}
	if renameErr != nil {
		return fmt.Errorf("journal: compact: %w", renameErr) // the old file, unchanged
	}
	j.snapshot = ref
	if syncErr != nil {
		return j.fail(fmt.Errorf("compact: %w", syncErr))
	}
	return nil
}
