package journal

import (
	"errors"
	"fmt"
)

// Sentinel errors; the errors of this package wrap one of them (test with
// errors.Is) and name the file, record or value at fault.
var (
	// ErrLocked reports a journal directory another Journal (in this or
	// another process) has open.
	ErrLocked = errors.New("journal locked")
	// ErrClosed reports use of a journal after Close.
	ErrClosed = errors.New("journal closed")
	// ErrFailed reports a journal that hit a write or fsync failure: what
	// is in its file can no longer be trusted to match what was
	// acknowledged, so every later Append fails (close it and open it
	// again, which scans the file).
	ErrFailed = errors.New("journal failed")
	// ErrCorrupt reports stored data that is damaged (a bad checksum, bad
	// framing, a sequence number out of order, an undecodable event)
	// anywhere but in the last record. A *CorruptError says where.
	ErrCorrupt = errors.New("corrupt journal")
	// ErrTornTail reports a file that ends inside a record (a crash while
	// it was written). It is an error only with Options.StrictTail; by
	// default Open drops the torn record and reports it (Journal.Torn).
	ErrTornTail = errors.New("journal ends inside a record")
	// ErrNotJournal reports a file that is not a Sluice journal, or one
	// written in a format version this package does not read.
	ErrNotJournal = errors.New("not a Sluice journal")
	// ErrNoBase reports a Recover that has neither a snapshot in the
	// journal nor RecoverOptions.New to start the replay from.
	ErrNoBase = errors.New("nothing to replay the journal onto")
	// ErrInvalidOptions reports Options that fail Validate.
	ErrInvalidOptions = errors.New("invalid journal options")
)

// CorruptError locates damaged journal data.
type CorruptError struct {
	Path   string // the file
	Offset int64  // byte offset of the damaged record in Path, or -1
	Key    string // the record's key when it could be read, else ""
	Seq    uint64 // the event's sequence number when known, else 0
	Reason string // what is wrong
	Err    error  // ErrCorrupt or ErrTornTail
}

// Error implements error.
func (e *CorruptError) Error() string {
	where := e.Path
	if e.Offset >= 0 {
		where = fmt.Sprintf("%s at byte offset %d", where, e.Offset)
	}
	if e.Seq != 0 {
		where = fmt.Sprintf("%s (event %d, key %q)", where, e.Seq, e.Key)
	} else if e.Key != "" {
		where = fmt.Sprintf("%s (key %q)", where, e.Key)
	}
	return fmt.Sprintf("%v: %s: %s", e.Err, where, e.Reason)
}

// Unwrap returns Err.
func (e *CorruptError) Unwrap() error { return e.Err }
