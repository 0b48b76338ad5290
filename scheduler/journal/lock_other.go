//go:build !unix

package journal

import (
	"fmt"
	"os"
)

// lockFile opens path (creating it). Advisory locks are implemented on
// Unix only: elsewhere a caller must not open one journal twice.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("journal: lock: %w", err)
	}
	return f, nil
}

// unlockFile closes the lock file.
func unlockFile(f *os.File) error { return f.Close() }
