package ledgertest_test

import (
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/ledgertest"
)

// An implementation's test runs the suites against itself. (Example
// functions cannot receive a *testing.T, so this one only compiles; the
// accounting package's conformance_test.go runs the same code for the
// memory and buntdb ledgers.)
func Example() {
	_ = func(t *testing.T) {
		ledgertest.Run(t, func(t *testing.T, cfg accounting.Config) accounting.Ledger {
			l, err := accounting.OpenBunt(filepath.Join(t.TempDir(), "l.db"), cfg, accounting.BuntOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return l
		})
	}
}
