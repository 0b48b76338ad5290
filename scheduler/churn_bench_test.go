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
	s, now := churnState(b, pending, mode)
	arrivals := clustertest.Workload(clustertest.WorkloadConfig{Jobs: 20 * k, Seed: 7})
	churn(b, s, now, k, func(now time.Time, n int) error {
		_, err := s.Submit(now, arrivals[n%len(arrivals)].Spec)
		return err
	})
}

// churnState is the churn benchmarks' state: standardQueue with pending
// jobs, multifactor priority, the standard policy, mode (nil: none) and
// the two standard reservations.
func churnState(b *testing.B, pending int, mode func(*scheduler.Config) error) (*scheduler.Scheduler, time.Time) {
	b.Helper()
	configure := []func(*scheduler.Config) error{standardPriority, standardPolicy}
	if mode != nil {
		configure = append(configure, mode)
	}
	return standardQueue(b, pending, configure, true)
}

// churnQueue is a churn benchmark's running jobs in start order (oldest
// first) and the jobs a cycle ended, which are skipped when their turn to
// finish comes.
type churnQueue struct {
	running []scheduler.JobID
	ended   map[scheduler.JobID]bool
}

// newChurnQueue lists the jobs running in s.
func newChurnQueue(s *scheduler.Scheduler) *churnQueue {
	q := &churnQueue{ended: map[scheduler.JobID]bool{}}
	for _, j := range s.Jobs() {
		if j.State == scheduler.JobRunning {
			q.running = append(q.running, j.ID)
		}
	}
	return q
}

// finish ends the k longest-running jobs at now.
func (q *churnQueue) finish(b *testing.B, s *scheduler.Scheduler, now time.Time, k int) {
	for n := 0; n < k && len(q.running) > 0; {
		id := q.running[0]
		q.running = q.running[1:]
		if q.ended[id] {
			delete(q.ended, id)
			continue
		}
		if err := s.Finish(now, id, 0); err != nil {
			b.Fatal(err)
		}
		n++
	}
}

// note records what cycle cyc ended and started.
func (q *churnQueue) note(cyc scheduler.Cycle) {
	for _, e := range cyc.Ended {
		q.ended[e.Job] = true
	}
	for _, st := range cyc.Starts {
		q.running = append(q.running, st.Job)
	}
}
