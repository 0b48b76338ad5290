package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/postgres"
)

var t0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

func openLedger(t testing.TB, pool *pgxpool.Pool, cluster string, cfg accounting.Config) accounting.Ledger {
	t.Helper()
	l, err := postgres.Open(context.Background(), pool, postgres.Options{Cluster: cluster}, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// users builds account "acct" with n users in ledger cluster c.
func users(t testing.TB, l accounting.Ledger, c string, n int) []accounting.Assoc {
	t.Helper()
	var out []accounting.Assoc
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		if _, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: c, Account: "acct"}}); err != nil {
			return err
		}
		for i := range n {
			a, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: c, Account: "acct", User: fmt.Sprintf("u%d", i)}})
			if err != nil {
				return err
			}
			out = append(out, a)
		}
		return nil
	}))
	return out
}

func job(id accounting.JobID, a accounting.Assoc, start time.Time, d time.Duration, cpus int64) accounting.JobRecord {
	return accounting.JobRecord{ID: id, Cluster: a.Cluster, Assoc: a.ID, QOS: "normal", Partition: "p",
		Submit: start.Add(-time.Minute), Start: start, End: start.Add(d), State: accounting.StateCompleted,
		AllocTRES: accounting.TRES{"cpu": cpus, "billing": cpus}}
}

// TestPostgresConcurrentClusters has four clusters write one database at
// once, each through its own ledger from its own goroutine, every charge
// retried in a second transaction: each cluster's usage and rollups equal
// the sum of what it charged and recorded, once, and no cluster sees
// another's rows.
func TestPostgresConcurrentClusters(t *testing.T) {
	pool := testPool(t)
	const clusters, rounds, perRound = 4, 12, 10
	names := make([]string, clusters)
	ledgers := make([]accounting.Ledger, clusters)
	assocs := make([][]accounting.Assoc, clusters)
	for i := range names {
		names[i] = clusterName(fmt.Sprintf("conc%d", i))
		ledgers[i] = openLedger(t, pool, names[i], accounting.Config{NoDecay: true})
		assocs[i] = users(t, ledgers[i], names[i], 3)
	}
	var wg sync.WaitGroup
	errs := make([]error, clusters)
	for ci := range clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, as := ledgers[ci], assocs[ci]
			for r := range rounds {
				var charges []accounting.Charge
				err := l.Update(func(tx accounting.Tx) error {
					for k := range perRound {
						id := accounting.JobID(r*perRound + k + 1)
						a := as[k%len(as)]
						start := t0.Add(time.Duration(r) * time.Hour)
						j := job(id, a, start, time.Hour, int64(ci+1))
						if err := tx.PutJob(j); err != nil {
							return err
						}
						c := accounting.JobCharge(j, start, start.Add(time.Hour))
						charges = append(charges, c)
						if err := tx.Charge(c); err != nil {
							return err
						}
					}
					return nil
				})
				if err == nil { // the retry a caller makes when unsure its commit landed
					err = l.Update(func(tx accounting.Tx) error {
						for _, c := range charges {
							if err := tx.Charge(c); err != nil {
								return err
							}
						}
						return nil
					})
				}
				if err != nil {
					errs[ci] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for ci, err := range errs {
		require.NoError(t, err, names[ci])
	}
	now := t0.Add(rounds * time.Hour)
	for ci, l := range ledgers {
		cpus := float64(ci + 1)
		require.NoError(t, l.View(func(tx accounting.Tx) error {
			var n int
			require.NoError(t, tx.Jobs(accounting.JobQuery{}, func(j accounting.JobRecord) bool {
				assert.Equal(t, names[ci], j.Cluster, "a ledger sees its own cluster's records only")
				n++
				return true
			}))
			assert.Equal(t, rounds*perRound, n)
			root, err := tx.LookupAssoc(accounting.AssocKey{Cluster: names[ci], Account: accounting.RootAccount})
			require.NoError(t, err)
			u, err := tx.Usage(root.ID, now)
			require.NoError(t, err)
			assert.InDelta(t, rounds*perRound*cpus*3600, u.Raw, 1e-6, "%s: usage is every charge once", names[ci])
			for k, a := range assocs[ci] {
				ua, err := tx.Usage(a.ID, now)
				require.NoError(t, err)
				jobs := 0
				for x := range perRound {
					if x%len(assocs[ci]) == k {
						jobs++
					}
				}
				assert.InDelta(t, float64(rounds*jobs)*cpus*3600, ua.Raw, 1e-6)
			}
			tot, err := tx.Totals(root.ID, t0, now.Add(time.Hour)) // the last jobs end at now
			require.NoError(t, err)
			assert.Equal(t, int64(rounds*perRound), tot.Jobs)
			assert.Equal(t, int64(rounds*perRound)*int64(ci+1)*3600, tot.TRESSeconds["cpu"], "rollups count each job once")
			return nil
		}))
	}
}

func TestPostgresLockRefusal(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	c := clusterName("lock")
	l := openLedger(t, pool, c, accounting.Config{})
	_, err := postgres.Open(ctx, pool, postgres.Options{Cluster: c}, accounting.Config{})
	require.ErrorIs(t, err, accounting.ErrLocked, "a second writer of the same cluster is refused")
	assert.Contains(t, err.Error(), c)
	other := openLedger(t, pool, clusterName("lock-other"), accounting.Config{})
	require.NoError(t, other.Update(func(tx accounting.Tx) error { return nil }), "another cluster opens meanwhile")
	require.NoError(t, l.Close())
	l2 := openLedger(t, pool, c, accounting.Config{})

	// Losing the session loses the lock: the ledger stops writing, and
	// another writer can take over.
	var pid int32
	require.NoError(t, pool.QueryRow(ctx, `SELECT pid FROM pg_locks l JOIN sluice_clusters c ON l.objid = c.id
WHERE l.locktype = 'advisory' AND l.classid = $1 AND c.name = $2`, 0x534c5543, c).Scan(&pid))
	_, err = pool.Exec(ctx, `SELECT pg_terminate_backend($1, 10000)`, pid) // waits until it is gone
	require.NoError(t, err)
	require.Error(t, l2.Update(func(tx accounting.Tx) error {
		_, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: c, Account: "a"}})
		return err
	}))
	err = l2.Update(func(tx accounting.Tx) error { return nil })
	assert.ErrorIs(t, err, accounting.ErrFailed)
	l3 := openLedger(t, pool, c, accounting.Config{})
	require.NoError(t, l3.Update(func(tx accounting.Tx) error {
		_, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: c, Account: "a"}})
		return err
	}))
}

func TestPostgresMigrations(t *testing.T) {
	dsn := freshDB(t)
	pool := poolFor(t, dsn)
	ctx := context.Background()
	// Several processes opening a new database at once: one migrates, the
	// others wait on the migration lock and find it done.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var l accounting.Ledger
			l, errs[i] = postgres.Open(ctx, pool, postgres.Options{Cluster: fmt.Sprintf("m%d", i)}, accounting.Config{})
			if errs[i] == nil {
				errs[i] = l.Close()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	versions := func() []int {
		var vs []int
		rows, err := pool.Query(ctx, `SELECT version FROM sluice_schema_migrations ORDER BY version`)
		require.NoError(t, err)
		for rows.Next() {
			var v int
			require.NoError(t, rows.Scan(&v))
			vs = append(vs, v)
		}
		require.NoError(t, rows.Err())
		return vs
	}
	var want []int
	for v := 1; v <= postgres.SchemaVersion; v++ {
		want = append(want, v)
	}
	assert.Equal(t, want, versions(), "every migration applied once, in order")
	l := openLedger(t, pool, "m0", accounting.Config{})
	require.NoError(t, l.Close())
	assert.Equal(t, want, versions(), "reopening applies nothing again")

	_, err := pool.Exec(ctx, `INSERT INTO sluice_schema_migrations (version, name) VALUES ($1, 'from the future')`, postgres.SchemaVersion+1)
	require.NoError(t, err)
	_, err = postgres.Open(ctx, pool, postgres.Options{Cluster: "m0"}, accounting.Config{})
	require.ErrorIs(t, err, accounting.ErrSchemaVersion, "a database newer than the code is refused")
	assert.Contains(t, err.Error(), "newer")
}

func TestPostgresOptions(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	for _, o := range []postgres.Options{{}, {Cluster: string([]byte{0xff})}, {Cluster: "x", Timeout: -1}} {
		_, err := postgres.Open(ctx, pool, o, accounting.Config{})
		assert.ErrorIs(t, err, accounting.ErrInvalidConfig, "%+v", o)
	}
	_, err := postgres.Open(ctx, nil, postgres.Options{Cluster: "x"}, accounting.Config{})
	assert.ErrorIs(t, err, accounting.ErrInvalidConfig)
}

// A database at an older schema version is migrated forward at open, one
// version after another.
func TestPostgresMigratesOlderSchema(t *testing.T) {
	pool := poolFor(t, freshDB(t))
	ctx := context.Background()
	require.NoError(t, postgres.MigrateTo(ctx, pool, 1))
	var imports *string
	require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass('sluice_imports')::text`).Scan(&imports))
	assert.Nil(t, imports, "version 1 has no import checkpoints")
	l := openLedger(t, pool, "old", accounting.Config{})
	require.NoError(t, l.Close())
	require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass('sluice_imports')::text`).Scan(&imports))
	require.NotNil(t, imports)
	var n, maxV int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), max(version) FROM sluice_schema_migrations`).Scan(&n, &maxV))
	assert.Equal(t, postgres.SchemaVersion, n)
	assert.Equal(t, postgres.SchemaVersion, maxV)
}
