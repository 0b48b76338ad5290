//go:build unix

package journal

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile opens path (creating it) and takes an exclusive, non-blocking
// flock on it: one Journal per directory, across processes and within
// one (a flock belongs to the open file, not to the process).
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("journal: lock: %w", err)
	}
	switch err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); {
	case err == nil:
		return f, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		err = fmt.Errorf("%w: %s is held by another journal", ErrLocked, path)
		return nil, errors.Join(err, f.Close())
	default:
		return nil, errors.Join(fmt.Errorf("journal: lock %s: %w", path, err), f.Close())
	}
}

// unlockFile releases the lock by closing the file.
func unlockFile(f *os.File) error { return f.Close() }
