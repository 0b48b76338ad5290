package postgres_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/postgres"
)

// benchTree adds 10 accounts of 10 users each to cluster c.
func benchTree(tb testing.TB, l accounting.Ledger, c string) []accounting.Assoc {
	tb.Helper()
	var us []accounting.Assoc
	require.NoError(tb, l.Update(func(tx accounting.Tx) error {
		for a := range 10 {
			acct := fmt.Sprintf("acct%d", a)
			if _, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: c, Account: acct}}); err != nil {
				return err
			}
			for u := range 10 {
				x, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: c, Account: acct, User: fmt.Sprintf("u%d-%d", a, u)}})
				if err != nil {
					return err
				}
				us = append(us, x)
			}
		}
		return nil
	}))
	return us
}

// benchJob is job id of a synthetic load, 10 minutes to 8 hours long,
// 1–64 CPUs: with span 0, started every = 3 seconds after job id-1, as a
// controller records jobs; otherwise started at random in [t0, t0+span).
func benchJob(r *rand.Rand, id accounting.JobID, us []accounting.Assoc, span time.Duration) accounting.JobRecord {
	start := t0.Add(time.Duration(id) * every)
	if span > 0 {
		start = t0.Add(time.Duration(r.Int64N(int64(span/time.Second))) * time.Second)
	}
	j := job(id, us[r.IntN(len(us))], start, time.Duration(10+r.IntN(470))*time.Minute, 1+r.Int64N(64))
	j.ReqTRES = j.AllocTRES
	return j
}

const (
	insertBatch = 1000
	every       = 3 * time.Second
)

// BenchmarkPostgresJobInsert records insertBatch finished jobs per
// Update (rollups included), one cluster, in the order they run.
func BenchmarkPostgresJobInsert(b *testing.B) {
	pool := testPool(b)
	c := clusterName("bench-insert")
	l := openLedger(b, pool, c, accounting.Config{})
	us := benchTree(b, l, c)
	r := rand.New(rand.NewPCG(1, 2))
	id := accounting.JobID(0)
	b.ResetTimer()
	for range b.N {
		err := l.Update(func(tx accounting.Tx) error {
			for range insertBatch {
				id++
				if err := tx.PutJob(benchJob(r, id, us, 0)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*insertBatch)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkPostgresFourClusters has four clusters' ledgers write one
// database at once, each from its own goroutine: per iteration every
// cluster commits insertBatch/4 jobs with a keyed charge each. At the end
// each cluster's usage must be the sum of its charges and its rollups
// must count each job once: nothing lost or doubled.
func BenchmarkPostgresFourClusters(b *testing.B) {
	pool := testPool(b)
	const n = 4
	ls := make([]accounting.Ledger, n)
	uss := make([][]accounting.Assoc, n)
	names := make([]string, n)
	for i := range ls {
		names[i] = clusterName(fmt.Sprintf("bench-4c%d", i))
		ls[i] = openLedger(b, pool, names[i], accounting.Config{NoDecay: true})
		uss[i] = benchTree(b, ls[i], names[i])
	}
	ids := make([]accounting.JobID, n)
	charged := make([]float64, n) // billing-seconds committed
	rs := make([]*rand.Rand, n)
	for i := range rs {
		rs[i] = rand.New(rand.NewPCG(uint64(i), 7))
	}
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var sum float64
				errs[i] = ls[i].Update(func(tx accounting.Tx) error {
					sum = 0
					for k := range insertBatch / n {
						j := benchJob(rs[i], ids[i]+accounting.JobID(k+1), uss[i], 0)
						if err := tx.PutJob(j); err != nil {
							return err
						}
						if err := tx.Charge(accounting.JobCharge(j, j.Start, j.End)); err != nil {
							return err
						}
						sum += float64(j.AllocTRES["billing"]) * j.End.Sub(j.Start).Seconds()
					}
					return nil
				})
				if errs[i] == nil {
					ids[i] += insertBatch / n
					charged[i] += sum
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*insertBatch)/b.Elapsed().Seconds(), "records/s")
	for i, l := range ls {
		err := l.View(func(tx accounting.Tx) error {
			root, err := tx.LookupAssoc(accounting.AssocKey{Cluster: names[i], Account: accounting.RootAccount})
			if err != nil {
				return err
			}
			end := t0.Add(time.Duration(ids[i]+1)*every + 9*time.Hour)
			u, err := tx.Usage(root.ID, end)
			if err != nil {
				return err
			}
			tot, err := tx.Totals(root.ID, t0, end)
			if err != nil {
				return err
			}
			if math.Abs(u.Raw-charged[i]) > 1e-6*charged[i] || tot.Jobs != int64(ids[i]) {
				return fmt.Errorf("cluster %s: usage %v, charged %v; rollups count %d jobs of %d", names[i], u.Raw, charged[i], tot.Jobs, ids[i])
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// reportLoad is the ledger the report benchmark reads: SLUICE_PG_BIG=1
// loads 10,000,000 job records (minutes, once per server), otherwise
// 100,000 so that -bench stays quick.
var reportLoad struct {
	once    sync.Once
	pool    *pgxpool.Pool
	cluster string
	records int
	err     error
}

// loadReport builds the records in a memory ledger chunk by chunk (so
// rollups are the ledger's own) and copies each chunk's record rows and
// finally every other row into PostgreSQL with COPY.
func loadReport(tb testing.TB) (*pgxpool.Pool, string, int) {
	needServer(tb)
	rl := &reportLoad
	rl.once.Do(func() {
		rl.records = 100_000
		if os.Getenv("SLUICE_PG_BIG") == "1" {
			rl.records = 10_000_000
		}
		cfg, err := pgxpool.ParseConfig(serverDSN)
		if err != nil {
			rl.err = err
			return
		}
		if rl.pool, rl.err = pgxpool.NewWithConfig(context.Background(), cfg); rl.err != nil {
			return
		}
		rl.cluster = "report-" + strconv.Itoa(rl.records)
		rl.err = fillReport(rl.pool, rl.cluster, rl.records)
	})
	if rl.err != nil {
		tb.Fatal(rl.err)
	}
	return rl.pool, rl.cluster, rl.records
}

func fillReport(pool *pgxpool.Pool, cluster string, records int) error {
	ctx := context.Background()
	var done bool
	err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sluice_kv k JOIN sluice_clusters c ON c.id = k.cluster
WHERE c.name = $1 AND k.key = 'm:schema'::bytea)`, cluster).Scan(&done)
	if err == nil && done {
		return nil // loaded by an earlier run on this server
	}
	mb := accounting.NewMemoryBackend()
	ml, err := accounting.New(mb, accounting.Config{})
	if err != nil {
		return err
	}
	us := benchTree(&testing.B{}, ml, cluster)
	dst, err := postgres.OpenBackend(ctx, pool, postgres.Options{Cluster: cluster})
	if err != nil {
		return err
	}
	defer func() { _ = dst.Close() }()
	r := rand.New(rand.NewPCG(3, 4))
	const chunk = 200_000
	for base := 0; base < records; base += chunk {
		err := ml.Update(func(tx accounting.Tx) error {
			for i := base; i < min(base+chunk, records); i++ {
				if err := tx.PutJob(benchJob(r, accounting.JobID(i+1), us, 365*24*time.Hour)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		var ks, vs []string
		if err := mb.View(func(kv accounting.KVReader) error {
			return kv.Ascend("j:", "j;", func(k, v string) bool { ks, vs = append(ks, k), append(vs, v); return true })
		}); err != nil {
			return err
		}
		if err := postgres.BulkLoad(ctx, dst, ks, vs); err != nil {
			return err
		}
		if err := mb.Update(func(w accounting.KVWriter) error {
			for _, k := range ks {
				if err := w.Delete(k); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	var ks, vs []string
	if err := mb.View(func(kv accounting.KVReader) error {
		return kv.Ascend("", "", func(k, v string) bool { ks, vs = append(ks, k), append(vs, v); return true })
	}); err != nil {
		return err
	}
	if err := postgres.BulkLoad(ctx, dst, ks, vs); err != nil {
		return err
	}
	_, err = pool.Exec(ctx, "ANALYZE sluice_kv; ANALYZE sluice_records")
	return err
}

// BenchmarkPostgresUsageReport30d is a 30-day per-account usage report
// (accounting.AccountUsage: every association of the cluster, from the
// rollups) over a ledger of records job records spread over a year.
func BenchmarkPostgresUsageReport30d(b *testing.B) {
	pool, cluster, n := loadReport(b)
	l, err := postgres.Open(context.Background(), pool, postgres.Options{Cluster: cluster}, accounting.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	from := time.Date(2024, 6, 15, 0, 0, 0, 0, time.UTC)
	to, now := from.Add(30*24*time.Hour), t0.Add(400*24*time.Hour)
	var rows []accounting.UsageRow
	runtime.GC() // not the loader's garbage
	b.ResetTimer()
	for range b.N {
		err := l.View(func(tx accounting.Tx) error {
			var err error
			rows, err = accounting.AccountUsage(tx, cluster, from, to, now, false)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if len(rows) != 111 || rows[0].Jobs == 0 {
		b.Fatalf("report has %d rows, root %+v: want the root, 10 accounts, 100 users, all with jobs", len(rows), rows[0])
	}
	b.ReportMetric(float64(n), "records")
}
