package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/ledgertest"
	"github.com/sluicehq/sluice/accounting/postgres"
)

// TestPostgresLedgerConformance runs the ledger conformance suite (the
// one the memory and buntdb ledgers pass) against a real server: every
// ledger is a cluster of its own in one database.
func TestPostgresLedgerConformance(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	t.Run("Ledger", func(t *testing.T) {
		ledgertest.Run(t, func(t *testing.T, cfg accounting.Config) accounting.Ledger {
			l, err := postgres.Open(ctx, pool, postgres.Options{Cluster: clusterName("run")}, cfg)
			require.NoError(t, err)
			return l
		})
	})
	t.Run("Persistent", func(t *testing.T) {
		var mu sync.Mutex
		clusters := map[string]string{} // the suite's directory → cluster
		ledgertest.RunPersistent(t, func(t *testing.T, dir string, cfg accounting.Config) (accounting.Ledger, error) {
			mu.Lock()
			c, ok := clusters[dir]
			if !ok {
				c = clusterName("persist")
				clusters[dir] = c
			}
			mu.Unlock()
			return postgres.Open(ctx, pool, postgres.Options{Cluster: c}, cfg)
		})
	})
	t.Run("Backend", func(t *testing.T) {
		ledgertest.RunBackend(t, func(t *testing.T) accounting.Backend {
			b, err := postgres.OpenBackend(ctx, pool, postgres.Options{Cluster: clusterName("kv")})
			require.NoError(t, err)
			return b
		})
	})
}
