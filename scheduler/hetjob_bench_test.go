package scheduler_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
)

// BenchmarkScheduleHet measures the standard-scale cycle (10,000 nodes,
// about 40,000 running and 100,000 pending jobs, multifactor priority,
// EASY backfill) with heterogeneous jobs in the mix: "plain" adds 4,000
// jobs of the standard mix, "het" the same 4,000 specs paired into 2,000
// two-component heterogeneous jobs (the same job records, the same
// resources asked for). Each is timed as a repeated cycle (the plan
// extended) and with /replan, planning the whole queue every cycle.
func BenchmarkScheduleHet(b *testing.B) {
	const extra = 4000
	specs := clustertest.Workload(clustertest.WorkloadConfig{Jobs: extra, Seed: 11})
	for _, bc := range []struct {
		name        string
		het, replan bool
	}{
		{"nodes=10000/pending=100000/easy/plain", false, false},
		{"nodes=10000/pending=100000/easy/het", true, false},
		{"nodes=10000/pending=100000/easy/replan/plain", false, true},
		{"nodes=10000/pending=100000/easy/replan/het", true, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, now := standardState(b, []func(*scheduler.Config) error{standardPriority, easy}, false)
			for k := 0; k+1 < len(specs); k += 2 {
				a, c := specs[k].Spec, specs[k+1].Spec
				if bc.het {
					if _, err := s.SubmitHet(now, []scheduler.JobSpec{a, c}); err != nil {
						b.Fatal(err)
					}
					continue
				}
				for _, sp := range []scheduler.JobSpec{a, c} {
					if _, err := s.Submit(now, sp); err != nil {
						b.Fatal(err)
					}
				}
			}
			if bc.replan {
				scheduler.ReplanEveryCycle(s)
			}
			if _, err := s.Schedule(now); err != nil {
				b.Fatal(err)
			}
			p, r := s.Counts()
			for b.Loop() {
				if _, err := s.Schedule(now); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(p), "pending")
			b.ReportMetric(float64(r), "running")
		})
	}
}
