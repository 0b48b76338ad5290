package accounting

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by this package wrap one of these (test
// with errors.Is) and name the offending field, key, file or value.
var (
	// ErrNotFound reports a record (association, job, usage…) that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists reports an insert whose key is already taken.
	ErrExists = errors.New("already exists")
	// ErrInvalid reports a record or argument that fails validation.
	ErrInvalid = errors.New("invalid")
	// ErrInUse reports a removal that would orphan other records, such as
	// removing an account that still has child associations.
	ErrInUse = errors.New("in use")
	// ErrReadOnly reports a write attempted inside View.
	ErrReadOnly = errors.New("read-only transaction")
	// ErrClosed reports use of a ledger after Close.
	ErrClosed = errors.New("ledger closed")
	// ErrFailed reports a ledger that hit an I/O failure (a failed write or
	// fsync) after which its file can no longer be trusted to match memory;
	// close it and open it again.
	ErrFailed = errors.New("ledger failed")
	// ErrCorrupt reports stored data that cannot be decoded: a damaged file,
	// a bad checksum, or a record that does not parse. A *CorruptError
	// carries the file and byte offset when they are known.
	ErrCorrupt = errors.New("corrupt ledger data")
	// ErrTruncated reports a ledger file that ends inside a transaction. It
	// is returned only when BuntOptions.StrictTail is set; by default the
	// uncommitted tail is dropped on open, as after a crash. errors.Is
	// matches both ErrTruncated and ErrCorrupt for it.
	ErrTruncated = errors.New("truncated ledger file")
	// ErrSchemaVersion reports a ledger written with a schema version this
	// package does not read, or a store that is not a Sluice ledger.
	ErrSchemaVersion = errors.New("unsupported ledger schema version")
	// ErrLocked reports a ledger file that another process has open.
	ErrLocked = errors.New("ledger locked")
	// ErrInvalidConfig reports a configuration that fails Validate, or one
	// that conflicts with what the ledger was created with.
	ErrInvalidConfig = errors.New("invalid ledger configuration")
)

// CorruptError describes damaged ledger data. Path and Offset locate it in
// a file when it was found while reading one; Key names the record when it
// was found while decoding one.
type CorruptError struct {
	Path   string // file, or "" when not read from a file
	Offset int64  // byte offset of the first damaged byte in Path, or -1
	Key    string // record key, or ""
	Reason string // what is wrong
	Err    error  // ErrCorrupt or ErrTruncated
}

// Error implements error.
func (e *CorruptError) Error() string {
	kind := "corrupt ledger data"
	if e.Err == ErrTruncated {
		kind = "truncated ledger file"
	}
	switch {
	case e.Path != "" && e.Offset >= 0:
		return fmt.Sprintf("%s: %s at byte offset %d: %s", kind, e.Path, e.Offset, e.Reason)
	case e.Path != "":
		return fmt.Sprintf("%s: %s: %s", kind, e.Path, e.Reason)
	case e.Key != "":
		return fmt.Sprintf("%s: record %q: %s", kind, e.Key, e.Reason)
	}
	return kind + ": " + e.Reason
}

// Unwrap returns ErrCorrupt or ErrTruncated.
func (e *CorruptError) Unwrap() error {
	if e.Err == nil {
		return ErrCorrupt
	}
	return e.Err
}

// Is makes errors.Is(err, ErrCorrupt) true for truncation errors too.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

func corruptKey(key, format string, args ...any) error {
	return &CorruptError{Offset: -1, Key: key, Reason: fmt.Sprintf(format, args...), Err: ErrCorrupt}
}
