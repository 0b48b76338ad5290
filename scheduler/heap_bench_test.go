package scheduler_test

import (
	"runtime"
	"testing"

	"github.com/sluicehq/sluice/scheduler"
)

// BenchmarkStandardHeap measures the memory the whole scheduler holds at
// the standard scale (10,000 nodes, about 40,000 running and 100,000
// pending jobs, multifactor priority, the standard policy and
// reservations; the state BenchmarkChurn starts from): its jobs, nodes,
// queues, policy usage, audit and telemetry state, and with backfill the
// kept profile and plan, not the backfill profile alone. Each iteration
// runs a cycle (ns/op); after the last, two garbage collections leave the
// live heap, which it reports as heap-MiB (runtime.MemStats.HeapAlloc,
// the test binary's own small share included) and heap-objects
// (HeapObjects). Run it once: -test.benchtime 1x. The modes are strict
// priority order (fcfs), EASY and conservative backfill.
func BenchmarkStandardHeap(b *testing.B) {
	for _, m := range []struct {
		name string
		mode func(*scheduler.Config) error
	}{{"fcfs", nil}, {"easy", easy}, {"conservative", conservative}} {
		b.Run(m.name, func(b *testing.B) {
			s, now := churnState(b, 100000, m.mode)
			for b.Loop() {
				if _, err := s.Schedule(now); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.GC()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			p, r := s.Counts()
			b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
			b.ReportMetric(float64(ms.HeapObjects), "heap-objects")
			b.ReportMetric(float64(p), "pending")
			b.ReportMetric(float64(r), "running")
			runtime.KeepAlive(s)
		})
	}
}
