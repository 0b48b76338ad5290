package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
)

func conservative(c *scheduler.Config) error {
	c.Backfill = &backfill.Config{Mode: backfill.Conservative}
	return nil
}

// BenchmarkChurn measures the cycle a control plane runs in its steady
// state, at the standard scale (10,000 nodes, about 40,000 running and
// 100,000 pending jobs, multifactor priority, the standard policy and
// reservations): each timed cycle follows k finishes (the longest-running
// jobs) and k submits of the standard mix, 30 s after the last. It reports
// ns/op (one cycle) and starts/s, the jobs started per second of cycle
// time. The modes are strict priority order without backfill (fcfs), EASY
// and conservative backfill; k is 1,000 unless the name says otherwise.
func BenchmarkChurn(b *testing.B) {
	modes := []struct {
		name string
		mode func(*scheduler.Config) error
	}{{"fcfs", nil}, {"easy", easy}, {"conservative", conservative}}
	for _, m := range modes {
		for _, k := range []int{1000, 100, 5000} {
			name := m.name
			if k != 1000 {
				name += fmt.Sprintf("/k=%d", k)
			}
			b.Run(name, func(b *testing.B) { churnBench(b, 100000, k, m.mode) })
		}
	}
	// Cost against the queue depth at k = 1,000.
	for _, m := range modes {
		for _, p := range []int{10000, 300000} {
			b.Run(fmt.Sprintf("%s/pending=%d", m.name, p), func(b *testing.B) { churnBench(b, p, 1000, m.mode) })
		}
	}
}

// churnBench runs BenchmarkChurn's step with k finishes and submits per
// cycle on the standard state with pending jobs and mode applied.
func churnBench(b *testing.B, pending, k int, mode func(*scheduler.Config) error) {
	configure := []func(*scheduler.Config) error{standardPriority, standardPolicy}
	if mode != nil {
		configure = append(configure, mode)
	}
	s, now, err := clustertest.NewState(clustertest.StateOptions{Running: 40000, Pending: pending, Seed: 1,
		Configure: func(c *scheduler.Config) error {
			for _, f := range configure {
				if err := f(c); err != nil {
					return err
				}
			}
			return nil
		}})
	if err != nil {
		b.Fatal(err)
	}
	if err := reserve(s, now); err != nil {
		b.Fatal(err)
	}
	arrivals := clustertest.Workload(clustertest.WorkloadConfig{Jobs: 20 * k, Seed: 7})
	churn(b, s, now, k, func(now time.Time, n int) error {
		_, err := s.Submit(now, arrivals[n%len(arrivals)].Spec)
		return err
	})
}
