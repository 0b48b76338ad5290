package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/postgres"
)

func TestPostgresMonthlyPartitions(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	c := clusterName("part")
	l := openLedger(t, pool, c, accounting.Config{})
	a := users(t, l, c, 1)[0]
	jan := time.Date(2024, 1, 10, 0, 0, 0, 0, time.UTC)
	feb := time.Date(2024, 2, 10, 0, 0, 0, 0, time.UTC)
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		for i, s := range []time.Time{jan, feb, t0} {
			if err := tx.PutJob(job(accounting.JobID(i+1), a, s, time.Hour, 1)); err != nil {
				return err
			}
		}
		return tx.PutStep(accounting.StepRecord{Job: 2, Step: "batch", Start: feb})
	}))
	where := func() map[string]string {
		rows, err := pool.Query(ctx, `SELECT convert_from(r.key, 'UTF8'), r.tableoid::regclass::text FROM sluice_records r
JOIN sluice_clusters c ON c.id = r.cluster WHERE c.name = $1 ORDER BY r.key`, c)
		require.NoError(t, err)
		defer rows.Close()
		m := map[string]string{}
		for rows.Next() {
			var k, p string
			require.NoError(t, rows.Scan(&k, &p))
			m[k] = p
		}
		require.NoError(t, rows.Err())
		return m
	}
	assert.Equal(t, map[string]string{
		"j:0000000000000001":        "sluice_records_y2024m01",
		"j:0000000000000002":        "sluice_records_y2024m02",
		"j:0000000000000003":        "sluice_records_y2024m02", // submitted a minute before March
		"st:0000000000000002:batch": "sluice_records_y2024m02",
	}, where(), "job records by the month of their submit time, steps of their start")

	// A record whose time moves to another month moves partition, once.
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		return tx.PutJob(job(1, a, t0.Add(48*time.Hour), time.Hour, 1))
	}))
	assert.Equal(t, "sluice_records_y2024m03", where()["j:0000000000000001"])
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		var ids []accounting.JobID
		require.NoError(t, tx.Jobs(accounting.JobQuery{}, func(j accounting.JobRecord) bool { ids = append(ids, j.ID); return true }))
		assert.Equal(t, []accounting.JobID{1, 2, 3}, ids, "records read back in key order across partitions")
		j, err := tx.Job(1)
		require.NoError(t, err)
		assert.Equal(t, t0.Add(48*time.Hour), j.Start)
		st, err := tx.Steps(2)
		require.NoError(t, err)
		assert.Len(t, st, 1)
		return nil
	}))
}

// A job or step key whose value does not carry a record time is refused
// at Set, and the transaction stores nothing.
func TestPostgresBackendRefusesBadRecord(t *testing.T) {
	b, err := postgres.OpenBackend(context.Background(), testPool(t), postgres.Options{Cluster: clusterName("bad")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	err = b.Update(func(w accounting.KVWriter) error {
		require.NoError(t, w.Set("a", "1"))
		return w.Set("j:0000000000000001", "not a job record")
	})
	require.ErrorIs(t, err, accounting.ErrCorrupt)
	require.NoError(t, b.View(func(r accounting.KVReader) error {
		return r.Ascend("", "", func(k, _ string) bool { t.Errorf("stored %q", k); return true })
	}))
}

// Damaged rows give ErrCorrupt naming the record; nothing else is lost,
// and the damaged row stays for an operator to inspect.
func TestPostgresCorruptRows(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	c := clusterName("corrupt")
	l := openLedger(t, pool, c, accounting.Config{})
	a := users(t, l, c, 1)[0]
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		for i := range 3 {
			if err := tx.PutJob(job(accounting.JobID(i+1), a, t0.Add(time.Duration(i)*24*time.Hour), time.Hour, 1)); err != nil {
				return err
			}
		}
		return nil
	}))
	_, err := pool.Exec(ctx, `UPDATE sluice_records SET val = '\x01ff'::bytea WHERE key = convert_to('j:0000000000000002', 'UTF8')
AND cluster = (SELECT id FROM sluice_clusters WHERE name = $1)`, c)
	require.NoError(t, err)
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		_, err := tx.Job(2)
		assert.ErrorIs(t, err, accounting.ErrCorrupt)
		assert.Contains(t, err.Error(), "j:0000000000000002")
		err = tx.Jobs(accounting.JobQuery{}, func(accounting.JobRecord) bool { return true })
		assert.ErrorIs(t, err, accounting.ErrCorrupt)
		for _, id := range []accounting.JobID{1, 3} {
			_, err := tx.Job(id)
			assert.NoError(t, err)
		}
		return nil
	}))
	err = l.Update(func(tx accounting.Tx) error { return tx.PutJob(job(2, a, t0, time.Hour, 1)) })
	assert.ErrorIs(t, err, accounting.ErrCorrupt, "replacing a damaged record fails (its rollup contribution is unknown)")
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM sluice_records WHERE cluster = (SELECT id FROM sluice_clusters WHERE name = $1)`, c).Scan(&n))
	assert.Equal(t, 3, n, "nothing was deleted")

	// The same record in two partitions (a hand-made copy) is reported.
	_, err = pool.Exec(ctx, `INSERT INTO sluice_records (cluster, month, key, val)
SELECT cluster, DATE '2024-02-01', key, val FROM sluice_records WHERE key = convert_to('j:0000000000000003', 'UTF8')
AND cluster = (SELECT id FROM sluice_clusters WHERE name = $1)`, c)
	require.NoError(t, err)
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		_, err := tx.Job(3)
		assert.ErrorIs(t, err, accounting.ErrCorrupt)
		assert.Contains(t, err.Error(), "partitions")
		return nil
	}))

	// A damaged string table stops the ledger from opening, with ErrCorrupt.
	require.NoError(t, l.Close())
	_, err = pool.Exec(ctx, `UPDATE sluice_kv SET key = convert_to('t:000000ff', 'UTF8') WHERE key = convert_to('t:00000001', 'UTF8')
AND cluster = (SELECT id FROM sluice_clusters WHERE name = $1)`, c)
	require.NoError(t, err)
	_, err = postgres.Open(ctx, pool, postgres.Options{Cluster: c}, accounting.Config{})
	assert.ErrorIs(t, err, accounting.ErrCorrupt)
	l2, err := postgres.Open(ctx, pool, postgres.Options{Cluster: c}, accounting.Config{})
	if err == nil {
		_ = l2.Close()
	}
	assert.ErrorIs(t, err, accounting.ErrCorrupt, "and the failed open released the lock (same error, not ErrLocked)")
}

// A panic inside an Update leaves nothing behind: the next Update starts
// a clean transaction.
func TestPostgresUpdateAfterPanic(t *testing.T) {
	b, err := postgres.OpenBackend(context.Background(), testPool(t), postgres.Options{Cluster: clusterName("panic")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	func() {
		defer func() { assert.Equal(t, "boom", recover()) }()
		_ = b.Update(func(w accounting.KVWriter) error {
			require.NoError(t, w.Set("a", "1"))
			_, _, err := w.Get("zz") // the transaction is open on the server
			require.NoError(t, err)
			panic("boom")
		})
	}()
	require.NoError(t, b.Update(func(w accounting.KVWriter) error { return w.Set("b", "2") }))
	require.NoError(t, b.View(func(r accounting.KVReader) error {
		var keys []string
		err := r.Ascend("", "", func(k, _ string) bool { keys = append(keys, k); return true })
		assert.Equal(t, []string{"b"}, keys)
		return err
	}))
}
