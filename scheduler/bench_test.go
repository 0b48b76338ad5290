package scheduler_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/clustertest"
)

// BenchmarkSchedule measures one FCFS scheduling cycle at the standard
// scale: 10,000 nodes, about 40,000 running jobs and 100,000 pending. The
// state is built once; a first cycle starts whatever fits, so every timed
// cycle evaluates the full queue against a full cluster (the steady state
// of a busy site).
func BenchmarkSchedule(b *testing.B) {
	for _, bc := range []struct {
		name             string
		running, pending int
	}{
		{"nodes=10000/pending=100000", 40000, 100000},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, now, err := clustertest.StandardState(bc.running, bc.pending, 1)
			if err != nil {
				b.Fatal(err)
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
