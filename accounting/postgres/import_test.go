package postgres_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/postgres"
)

// buntLedger writes a buntdb ledger with two clusters, jobs over three
// months, steps, charges, decisions and a removed association.
func buntLedger(t *testing.T, jobs int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{Sync: accounting.SyncNever})
	require.NoError(t, err)
	for ci, c := range []string{"east", "west"} {
		as := users(t, l, c, 4)
		require.NoError(t, l.Update(func(tx accounting.Tx) error {
			for i := range jobs {
				a := as[i%len(as)]
				start := t0.Add(-40 * 24 * time.Hour).Add(time.Duration(i) * 97 * time.Minute)
				j := job(accounting.JobID(ci*jobs+i+1), a, start, 2*time.Hour, int64(1+i%8))
				if i%10 == 9 {
					j.End, j.State = time.Time{}, accounting.StateRunning
				}
				if err := tx.PutJob(j); err != nil {
					return err
				}
				if err := tx.PutStep(accounting.StepRecord{Job: j.ID, Step: "batch", Start: start}); err != nil {
					return err
				}
				if err := tx.Charge(accounting.JobCharge(j, start, start.Add(time.Hour))); err != nil {
					return err
				}
				if _, err := tx.PutDecision(accounting.Decision{Kind: accounting.DecisionStart, Time: start, Job: j.ID}); err != nil {
					return err
				}
			}
			return tx.RemoveAssoc(t0, as[3].ID)
		}))
	}
	require.NoError(t, l.Close())
	return path
}

func TestPostgresImport(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	path := buntLedger(t, 300)
	src, err := accounting.OpenBuntBackend(path, accounting.BuntOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = src.Close() })
	c := clusterName("import")
	dst, err := postgres.OpenBackend(ctx, pool, postgres.Options{Cluster: c})
	require.NoError(t, err)

	// Interrupted after two batches: what was copied does not open as a
	// ledger, and a second run resumes after the checkpoint.
	ictx, cancel := context.WithCancel(ctx)
	batches := 0
	_, err = postgres.Import(ictx, src, dst, postgres.ImportOptions{Source: path, Batch: 500, Progress: func(int64) {
		if batches++; batches == 2 {
			cancel()
		}
	}})
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, dst.Close())
	_, err = postgres.Open(ctx, pool, postgres.Options{Cluster: c}, accounting.Config{})
	require.ErrorIs(t, err, accounting.ErrSchemaVersion, "a half-imported ledger does not open")
	dst, err = postgres.OpenBackend(ctx, pool, postgres.Options{Cluster: c})
	require.NoError(t, err)
	_, err = postgres.Import(ctx, src, dst, postgres.ImportOptions{Source: "elsewhere.db", Batch: 500})
	require.ErrorIs(t, err, accounting.ErrExists, "resuming another source's import is refused")
	var copied []int64
	sum, err := postgres.Import(ctx, src, dst, postgres.ImportOptions{Source: path, Batch: 500, Progress: func(n int64) { copied = append(copied, n) }})
	require.NoError(t, err)
	require.NotEmpty(t, copied)
	assert.Greater(t, copied[0], int64(1000), "resumed after the checkpoint, not from the start")
	want, err := postgres.Summarize(src)
	require.NoError(t, err)
	assert.True(t, want.Equal(sum))
	assert.Equal(t, int64(600), sum.JobRecords)
	again, err := postgres.Import(ctx, src, dst, postgres.ImportOptions{Source: path})
	require.NoError(t, err, "a finished import only verifies")
	assert.True(t, again.Equal(sum))
	require.NoError(t, dst.Close())

	// The same ledger, read through the ledger API on both sides.
	srcL, err := accounting.New(src, accounting.Config{})
	require.NoError(t, err)
	dstL := openLedger(t, pool, c, accounting.Config{})
	tot, err := postgres.VerifyLedgers(srcL, dstL)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"east": 300, "west": 300}, tot.Jobs)
	report := func(l accounting.Ledger) string {
		var s string
		require.NoError(t, l.View(func(tx accounting.Tx) error {
			rows, err := accounting.AccountUsage(tx, "east", t0.Add(-40*24*time.Hour), t0, t0, true)
			s = fmt.Sprint(rows)
			return err
		}))
		return s
	}
	assert.Equal(t, report(srcL), report(dstL))

	// Into a cluster that has data of its own: refused.
	other, err := postgres.OpenBackend(ctx, pool, postgres.Options{Cluster: clusterName("busy")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	require.NoError(t, other.Update(func(w accounting.KVWriter) error { return w.Set("x", "y") }))
	_, err = postgres.Import(ctx, src, other, postgres.ImportOptions{Source: path})
	require.ErrorIs(t, err, accounting.ErrExists)
}

func TestPostgresVerifyLedgersFindsDifference(t *testing.T) {
	pool := testPool(t)
	a := openLedger(t, pool, clusterName("va"), accounting.Config{})
	b, err := accounting.NewMemory(accounting.Config{})
	require.NoError(t, err)
	for _, l := range []accounting.Ledger{a, b} {
		as := users(t, l, "c", 1)
		require.NoError(t, l.Update(func(tx accounting.Tx) error { return tx.PutJob(job(1, as[0], t0, time.Hour, 2)) }))
	}
	_, err = postgres.VerifyLedgers(b, a)
	require.NoError(t, err)
	require.NoError(t, a.Update(func(tx accounting.Tx) error {
		j, err := tx.Job(1)
		if err != nil {
			return err
		}
		j.End = j.End.Add(time.Hour)
		return tx.PutJob(j)
	}))
	_, err = postgres.VerifyLedgers(b, a)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rollups")
}
