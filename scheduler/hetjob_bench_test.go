package scheduler_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/internal/cputime"
	"github.com/sluicehq/sluice/scheduler"
)

// BenchmarkScheduleHet measures the standard-scale cycle (10,000 nodes,
// about 40,000 running and 100,000 pending jobs, multifactor priority,
// EASY backfill) with heterogeneous jobs in the mix: mix=plain adds
// 4,000 jobs of the standard mix, mix=het the same 4,000 specs paired
// into 2,000 two-component heterogeneous jobs (the same job records, the
// same resources asked for). On each state it times the repeated cycle
// (the plan extended), then, with /replan, the cycle that plans the whole
// queue. On a shared machine wall time is noisy; cpu-ns/op (the
// process's user and system CPU time per cycle, GC included) is the
// steadier figure to compare.
func BenchmarkScheduleHet(b *testing.B) {
	const extra = 4000
	specs := clustertest.Workload(clustertest.WorkloadConfig{Jobs: extra, Seed: 11})
	for _, mix := range []string{"plain", "het"} {
		s, now := standardState(b, []func(*scheduler.Config) error{standardPriority, easy}, false)
		for k := 0; k+1 < len(specs); k += 2 {
			pair := []scheduler.JobSpec{specs[k].Spec, specs[k+1].Spec}
			if mix == "het" {
				if _, err := s.SubmitHet(now, pair); err != nil {
					b.Fatal(err)
				}
				continue
			}
			for _, sp := range pair {
				if _, err := s.Submit(now, sp); err != nil {
					b.Fatal(err)
				}
			}
		}
		if _, err := s.Schedule(now); err != nil {
			b.Fatal(err)
		}
		p, r := s.Counts()
		for _, plan := range []string{"extend", "replan"} {
			if plan == "replan" {
				scheduler.ReplanEveryCycle(s)
			}
			b.Run("nodes=10000/pending=100000/easy/plan="+plan+"/mix="+mix, func(b *testing.B) {
				c0 := cputime.Process()
				for b.Loop() {
					if _, err := s.Schedule(now); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cputime.Process()-c0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(p), "pending")
				b.ReportMetric(float64(r), "running")
			})
		}
	}
}
