package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/postgres"
	"github.com/sluicehq/sluice/accounting/postgres/internal/pgtest"
)

var dsn, skipReason string

func TestMain(m *testing.M) {
	var stop func()
	var err error
	dsn, _, stop, err = pgtest.Setup("sluice_migrate_test")
	if err != nil {
		skipReason = "no PostgreSQL: " + err.Error()
		os.Exit(m.Run())
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

func TestLedgerMigrate(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	cfg := accounting.Config{Location: berlin}
	l, err := accounting.OpenBunt(path, cfg, accounting.BuntOptions{Sync: accounting.SyncNever})
	require.NoError(t, err)
	t0 := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		if _, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "c", Account: "a"}}); err != nil {
			return err
		}
		u, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "c", Account: "a", User: "u"}})
		if err != nil {
			return err
		}
		for i := range 50 {
			s := t0.Add(time.Duration(i) * 13 * time.Hour)
			if err := tx.PutJob(accounting.JobRecord{ID: accounting.JobID(i + 1), Cluster: "c", Assoc: u.ID, Submit: s, Start: s, End: s.Add(time.Hour),
				State: accounting.StateCompleted, AllocTRES: accounting.TRES{"cpu": 2}}); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, l.Close())

	var out bytes.Buffer
	cluster := fmt.Sprintf("migrated-%d", time.Now().UnixNano())
	args := []string{"-from", path, "-dsn", dsn, "-cluster", cluster, "-batch", "20"}

	// A first run interrupted after its first batch (Ctrl-C)...
	ctx, cancel := context.WithCancel(context.Background())
	err = run(ctx, args, cancelOnProgress{cancel})
	require.ErrorIs(t, err, context.Canceled)
	// ...and the second resumes it.
	require.NoError(t, run(context.Background(), args, &out), out.String())
	assert.NotContains(t, out.String(), "copied 20 keys\n", "resumed after the first batch")
	assert.Contains(t, out.String(), "50 job records")
	assert.Contains(t, out.String(), "verified: job records per cluster map[c:50]")

	// The migrated ledger opens in the database with the source's zone.
	pool, err := pgxpool.New(context.Background(), dsn)
	require.NoError(t, err)
	defer pool.Close()
	pl, err := postgres.Open(context.Background(), pool, postgres.Options{Cluster: cluster}, cfg)
	require.NoError(t, err)
	require.NoError(t, pl.View(func(tx accounting.Tx) error {
		j, err := tx.Job(50)
		assert.Equal(t, accounting.TRES{"cpu": 2}, j.AllocTRES)
		return err
	}))
	require.NoError(t, pl.Close())

	out.Reset()
	require.NoError(t, run(context.Background(), args, &out), "running it again only verifies")
	assert.NotContains(t, out.String(), "copied")
	assert.Error(t, run(context.Background(), []string{"-from", path}, &out), "missing flags")
}

// cancelOnProgress cancels the run when it reports its first batch, as
// an operator's Ctrl-C would.
type cancelOnProgress struct{ cancel context.CancelFunc }

func (c cancelOnProgress) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("copied")) {
		c.cancel()
	}
	return len(p), nil
}
