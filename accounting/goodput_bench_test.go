package accounting_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/telemetry"
)

// withUsage gives a benchmark job what a recorder with telemetry would
// write: for 9 jobs in 10, GPU readings every 30 s over the run at a
// utilisation drawn from [0, 100) %, 700 W per GPU; one job in 5 was
// requeued once and lost its first run's 30 minutes.
func withUsage(j accounting.JobRecord, r *rand.Rand) accounting.JobRecord {
	gpus := float64(j.AllocTRES["gres/gpu"])
	run := j.End.Sub(j.Start).Seconds()
	j.LaunchAttempts, j.Quality = 1, 0.5+r.Float64()/2
	if r.IntN(5) == 0 {
		j.Restarts, j.LaunchAttempts = 1, 2
		j.PriorGPUSeconds, j.LostGPUSeconds = 1800*gpus, 1800*gpus
	}
	if r.IntN(10) == 0 {
		return j
	}
	covered := run + j.PriorGPUSeconds/gpus
	util := r.Float64() * 100
	j.Usage = telemetry.Usage{Samples: int64(covered/30) + 1, First: j.Start, Last: j.End, GPUSeconds: covered * gpus,
		BusyGPUSeconds: covered * gpus * util / 100, UtilizationMax: min(100, util*1.2), MemoryMaxMiB: 40 << 10,
		MemoryMiBSeconds: covered * gpus * 20480, CoveredSeconds: covered, PowerMaxWatts: 700 * gpus,
		EnergyJoules: covered * gpus * 700 * (0.3 + 0.7*util/100)}
	return j
}

var (
	goodputOnce sync.Once
	goodputPath string
	goodputErr  error
)

// goodputFixture is a buntdb ledger of benchJobs() benchmark jobs
// carrying usage (withUsage), built once per process.
func goodputFixture(b *testing.B) string {
	goodputOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-goodput-bench")
		if err != nil {
			goodputErr = err
			return
		}
		goodputPath = filepath.Join(dir, "ledger.db")
		l, err := accounting.OpenBunt(goodputPath, accounting.Config{}, accounting.BuntOptions{Sync: accounting.SyncNever})
		if err != nil {
			goodputErr = err
			return
		}
		defer l.Close()
		g, err := benchSetup(l)
		if err != nil {
			goodputErr = err
			return
		}
		r := rand.New(rand.NewPCG(25, 1))
		n := benchJobs()
		for first := 1; first <= n && goodputErr == nil; first += benchBatch {
			goodputErr = l.Update(func(tx accounting.Tx) error {
				for id := first; id < first+benchBatch && id <= n; id++ {
					if err := tx.PutJob(withUsage(g.job(accounting.JobID(id)), r)); err != nil {
						return err
					}
				}
				return nil
			})
		}
	})
	if goodputErr != nil {
		b.Fatal(goodputErr)
	}
	return goodputPath
}

// BenchmarkGPUUsage30Days computes the allocated-vs-used GPU-hours report
// (total and by account, user, QOS and partition) over 30 of the 60 days of a
// ledger of benchJobs() job records with usage, and the per-account path
// distributions over the same range.
func BenchmarkGPUUsage30Days(b *testing.B) {
	l, err := accounting.OpenBunt(goodputFixture(b), accounting.Config{}, accounting.BuntOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	// Days 17–47 of the 60 the standard scale's jobs span (fewer jobs,
	// SLUICE_BENCH_JOBS, span fewer days: the same share of them).
	span := time.Duration(float64(benchJobs()) / 1e6 * benchDays * 24 * float64(time.Hour))
	from := benchStart.Add(span * 17 / 60)
	to := from.Add(span / 2)
	b.Run("GPUUsage", func(b *testing.B) {
		var rep accounting.GPUUsageReport
		for b.Loop() {
			if err := l.View(func(tx accounting.Tx) error {
				rep, err = accounting.GPUUsage(tx, "big", from, to)
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
		if rep.Total.MeasuredJobs == 0 {
			b.Fatal("no measured job")
		}
		b.ReportMetric(float64(rep.Total.Jobs), "jobs")
		b.ReportMetric(rep.Total.Goodput(), "goodput")
	})
	b.Run("PathDistributions", func(b *testing.B) {
		var ds []accounting.PathDistribution
		for b.Loop() {
			if err := l.View(func(tx accounting.Tx) error {
				ds, err = accounting.PathDistributions(tx, "big", from, to)
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
		if len(ds) != 200 {
			b.Fatalf("%d accounts", len(ds))
		}
	})
}
