package scheduler_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/internal/cputime"
	"github.com/sluicehq/sluice/scheduler"
)

// BenchmarkChurnInputs is BenchmarkChurn's step (k = 1,000 finishes and
// submits, 30 s apart, on the standard state) with each op two cycles,
// one with the backfill pass's kept inputs (bfinputs.go) and one without,
// in alternating order: their decisions are the same, so both time the
// same state, under the same load (the figures to compare on a shared
// machine). It reports each cycle's wall time and the CPU time of the
// thread that ran it (GC's background work left out), with and without.
func BenchmarkChurnInputs(b *testing.B) {
	for _, m := range []struct {
		name string
		mode func(*scheduler.Config) error
	}{{"easy", easy}, {"conservative", conservative}} {
		b.Run(m.name, func(b *testing.B) { churnInputs(b, m.mode) })
	}
}

func churnInputs(b *testing.B, mode func(*scheduler.Config) error) {
	const k = 1000
	s, now := churnState(b, 100000, mode)
	arrivals := clustertest.Workload(clustertest.WorkloadConfig{Jobs: 20 * k, Seed: 7})
	if _, err := s.Schedule(now); err != nil {
		b.Fatal(err)
	}
	q := newChurnQueue(s)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := cputime.Thread
	next := 0
	var wall, used [2]time.Duration // [0] kept inputs, [1] none
	b.ResetTimer()
	for i := range b.N {
		for x := range 2 {
			off := (i+x)%2 == 1
			now = now.Add(30 * time.Second)
			q.finish(b, s, now, k)
			for range k {
				if _, err := s.Submit(now, arrivals[next%len(arrivals)].Spec); err != nil {
					b.Fatal(err)
				}
				next++
			}
			scheduler.BackfillNoReuse(s, off)
			t0, c0 := time.Now(), cpu()
			cyc, err := s.Schedule(now)
			c1, t1 := cpu(), time.Now()
			if err != nil {
				b.Fatal(err)
			}
			w := 0
			if off {
				w = 1
			}
			wall[w] += t1.Sub(t0)
			used[w] += c1 - c0
			q.note(cyc)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(wall[0].Nanoseconds())/n, "kept-ns/cycle")
	b.ReportMetric(float64(wall[1].Nanoseconds())/n, "none-ns/cycle")
	b.ReportMetric(float64(used[0].Nanoseconds())/n, "kept-cpu-ns/cycle")
	b.ReportMetric(float64(used[1].Nanoseconds())/n, "none-cpu-ns/cycle")
}
