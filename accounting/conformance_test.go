package accounting_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/ledgertest"
)

func TestMemoryConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T, cfg accounting.Config) accounting.Ledger {
		l, err := accounting.NewMemory(cfg)
		require.NoError(t, err)
		return l
	})
}

func TestBuntConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T, cfg accounting.Config) accounting.Ledger {
		l, err := accounting.OpenBunt(filepath.Join(t.TempDir(), "ledger.db"), cfg, accounting.BuntOptions{Sync: accounting.SyncNever})
		require.NoError(t, err)
		return l
	})
}

func TestBuntPersistent(t *testing.T) {
	ledgertest.RunPersistent(t, func(t *testing.T, dir string, cfg accounting.Config) (accounting.Ledger, error) {
		l, err := accounting.OpenBunt(filepath.Join(dir, "ledger.db"), cfg, accounting.BuntOptions{})
		if err != nil {
			return nil, err
		}
		return l, nil
	})
}

func TestBackendConformance(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		ledgertest.RunBackend(t, func(*testing.T) accounting.Backend { return accounting.NewMemoryBackend() })
	})
	t.Run("bunt", func(t *testing.T) {
		ledgertest.RunBackend(t, func(t *testing.T) accounting.Backend {
			b, err := accounting.OpenBuntBackend(filepath.Join(t.TempDir(), "kv.db"), accounting.BuntOptions{})
			require.NoError(t, err)
			return b
		})
	})
}
