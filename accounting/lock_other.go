//go:build !unix

package accounting

import (
	"fmt"
	"os"
)

// lockFile opens the lock file; advisory locking is only implemented on
// Unix, so elsewhere callers must not open one ledger twice.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock ledger: %w", err)
	}
	return f, nil
}

func unlockFile(f *os.File) error {
	if f == nil {
		return nil
	}
	return f.Close()
}
