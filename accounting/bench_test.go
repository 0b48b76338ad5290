package accounting_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// The benchmark workload: the standard scale's 2,000 users in 200
// accounts; jobs submitted uniformly over 60 days with log-normal run
// times (median 1 h), a mix of 1/2/4-GPU single-node jobs, whole nodes
// and 2–256-node jobs.

const (
	benchUsers    = 2000
	benchAccounts = 200
	benchDays     = 60
	benchBatch    = 1000
)

var benchStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

type benchGen struct {
	rng   *rand.Rand
	users []accounting.Assoc
}

func benchSetup(l accounting.Ledger) (*benchGen, error) {
	g := &benchGen{rng: rand.New(rand.NewPCG(2024, 1))}
	err := l.Update(func(tx accounting.Tx) error {
		for a := range benchAccounts {
			acct := fmt.Sprintf("acct%03d", a)
			if _, err := tx.PutAssoc(benchStart, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "big", Account: acct}, Shares: uint32(1 + a%7)}); err != nil {
				return err
			}
			for u := range benchUsers / benchAccounts {
				ua, err := tx.PutAssoc(benchStart, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "big", Account: acct, User: fmt.Sprintf("user%04d", a*10+u)}})
				if err != nil {
					return err
				}
				g.users = append(g.users, ua)
			}
		}
		return nil
	})
	return g, err
}

var gpuTypes = []string{"gres/gpu:h100", "gres/gpu:a100", "gres/gpu:gb200"}

func (g *benchGen) job(id accounting.JobID) accounting.JobRecord {
	r := g.rng
	u := g.users[r.IntN(len(g.users))]
	submit := benchStart.Add(time.Duration(float64(id) / 1e6 * benchDays * 24 * float64(time.Hour)))
	wait := time.Duration(r.ExpFloat64()*1800) * time.Second
	run := time.Duration(math.Min(math.Exp(r.NormFloat64()*1.2)*3600, 7*86400)) * time.Second
	var nodes, gpus, cpus int64
	switch k := r.IntN(10); {
	case k < 6: // 1/2/4-GPU single-node
		nodes, gpus = 1, int64(1)<<r.IntN(3)
		cpus = 16 * gpus
	case k < 8: // whole node
		nodes, gpus, cpus = 1, 8, 128
	default: // 2–256 nodes
		nodes = int64(2) << r.IntN(8)
		gpus, cpus = 8*nodes, 128*nodes
	}
	typ := gpuTypes[r.IntN(len(gpuTypes))]
	start := submit.Add(wait)
	return accounting.JobRecord{
		ID: id, Name: "train", Cluster: "big", User: u.User, Account: u.Account, Assoc: u.ID,
		Partition: "gpu", QOS: "normal", Submit: submit, Eligible: submit, Start: start, End: start.Add(run),
		TimeLimit: 24 * time.Hour, State: accounting.StateCompleted,
		ReqTRES:   accounting.TRES{"cpu": cpus, "mem": cpus * 8192, "node": nodes, "gres/gpu": gpus},
		AllocTRES: accounting.TRES{"cpu": cpus, "mem": cpus * 16384, "node": nodes, "billing": cpus + 10*gpus, "gres/gpu": gpus, typ: gpus},
		NodeList:  fmt.Sprintf("n[%05d-%05d]", int64(id%9000), int64(id%9000)+nodes-1),
		Priority:  int64(r.IntN(1 << 20)), Reason: "Priority",
	}
}

// buildBenchLedger appends n jobs in batches of benchBatch, durably.
func buildBenchLedger(path string, n int, opts accounting.BuntOptions) (time.Duration, error) {
	l, err := accounting.OpenBunt(path, accounting.Config{}, opts)
	if err != nil {
		return 0, err
	}
	g, err := benchSetup(l)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	for first := 1; first <= n; first += benchBatch {
		err := l.Update(func(tx accounting.Tx) error {
			for id := first; id < first+benchBatch && id <= n; id++ {
				if err := tx.PutJob(g.job(accounting.JobID(id))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	d := time.Since(t0)
	return d, l.Close()
}

func benchJobs() int {
	if s := os.Getenv("SLUICE_BENCH_JOBS"); s != "" {
		var n int
		fmt.Sscan(s, &n)
		return n
	}
	return 1_000_000
}

var (
	fixtureOnce sync.Once
	fixturePath string
	fixtureErr  error
)

// benchFixture returns a ledger file holding benchJobs() jobs, built once
// per process in a temporary directory.
func benchFixture(b *testing.B) string {
	fixtureOnce.Do(func() {
		// SLUICE_BENCH_FIXTURE names a ledger file to reuse (built by an
		// earlier run) or to build and keep.
		if p := os.Getenv("SLUICE_BENCH_FIXTURE"); p != "" {
			fixturePath = p
			if _, err := os.Stat(p); err == nil {
				return
			}
			_, fixtureErr = buildBenchLedger(p, benchJobs(), accounting.BuntOptions{Sync: accounting.SyncNever})
			return
		}
		dir, err := os.MkdirTemp("", "sluice-ledger-bench")
		if err != nil {
			fixtureErr = err
			return
		}
		fixturePath = filepath.Join(dir, "ledger.db")
		_, fixtureErr = buildBenchLedger(fixturePath, benchJobs(), accounting.BuntOptions{Sync: accounting.SyncNever})
	})
	if fixtureErr != nil {
		b.Fatal(fixtureErr)
	}
	return fixturePath
}

// BenchmarkAppendJobs1M appends 1,000,000 finished job records (with
// their rollups) to a fresh buntdb ledger in durable transactions of
// 1,000 records (fsync per commit) and reports throughput and file bytes
// per record.
func BenchmarkAppendJobs1M(b *testing.B) {
	n := benchJobs()
	for b.Loop() {
		path := filepath.Join(b.TempDir(), "append.db")
		d, err := buildBenchLedger(path, n, accounting.BuntOptions{})
		if err != nil {
			b.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n)/d.Seconds(), "records/s")
		b.ReportMetric(float64(st.Size())/float64(n), "file-bytes/record")
		b.ReportMetric(float64(st.Size())/(1<<20), "file-MiB")
	}
}

// BenchmarkAccountUsage30Days reads one account's usage over 30 days from
// a ledger of 1,000,000 job records (monthly, daily and hourly rollups).
func BenchmarkAccountUsage30Days(b *testing.B) {
	path := benchFixture(b)
	l, err := accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var acct accounting.Assoc
	if err := l.View(func(tx accounting.Tx) error {
		acct, err = tx.LookupAssoc(accounting.AssocKey{Cluster: "big", Account: "acct042"})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	from := benchStart.Add(17*24*time.Hour + 5*time.Hour + 30*time.Minute)
	to := from.Add(30 * 24 * time.Hour)
	var tot accounting.Totals
	for b.Loop() {
		if err := l.View(func(tx accounting.Tx) error {
			tot, err = tx.Totals(acct.ID, from, to)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	if tot.TRESSeconds["gres/gpu"] == 0 {
		b.Fatal("no usage")
	}
	b.ReportMetric(float64(tot.TRESSeconds["gres/gpu"])/3600, "gpu-hours")
}

var (
	compactOnce sync.Once
	compactPath string
	compactErr  error
)

// compactedFixture is a compacted copy of the fixture: the same records
// without the log's superseded versions.
func compactedFixture(b *testing.B, src string) string {
	compactOnce.Do(func() {
		compactPath = src + ".compacted"
		if _, err := os.Stat(compactPath); err == nil {
			return
		}
		data, err := os.ReadFile(src)
		if err == nil {
			err = os.WriteFile(compactPath, data, 0o644)
		}
		if err != nil {
			compactErr = err
			return
		}
		l, err := accounting.OpenBunt(compactPath, accounting.Config{}, accounting.BuntOptions{})
		if err != nil {
			compactErr = err
			return
		}
		compactErr = errors.Join(l.Compact(), l.Close())
	})
	if compactErr != nil {
		b.Fatal(compactErr)
	}
	return compactPath
}

// BenchmarkReopen1M opens a ledger file of 1,000,000 job records
// (checksum scan + buntdb load) and reports the heap it holds: "log" is
// the file as written (with superseded rollup versions, as between
// compactions), "compacted" the same ledger after Compact.
func BenchmarkReopen1M(b *testing.B) {
	path := benchFixture(b)
	for _, c := range []struct{ name, path string }{{"log", path}, {"compacted", compactedFixture(b, path)}} {
		b.Run(c.name, func(b *testing.B) {
			st, err := os.Stat(c.path)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				l, err := accounting.OpenBunt(c.path, accounting.Config{}, accounting.BuntOptions{})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
				b.ReportMetric(float64(st.Size())/(1<<20), "file-MiB")
				b.ReportMetric(float64(st.Size())/float64(benchJobs()), "file-bytes/record")
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
