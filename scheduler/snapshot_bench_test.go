package scheduler_test

import (
	"bytes"
	"testing"

	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/internal/cputime"
	"github.com/sluicehq/sluice/scheduler"
)

// snapshotState builds the standard state (10,000 nodes, about 40,000
// running jobs and 100,000 pending) with multifactor priority, the
// realistic policy with its reservations and EASY backfill, after one
// cycle (so the kept backfill profile holds the plan), and returns its
// snapshot.
func snapshotState(b *testing.B) (*scheduler.Scheduler, []byte) {
	b.Helper()
	s, now, err := clustertest.NewState(clustertest.StateOptions{Running: 40000, Pending: 100000, Seed: 1,
		Configure: func(c *scheduler.Config) error {
			for _, f := range []func(*scheduler.Config) error{standardPriority, standardPolicy, easy} {
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
	if _, err := s.Schedule(now); err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.Snapshot(&buf); err != nil {
		b.Fatal(err)
	}
	return s, buf.Bytes()
}

// BenchmarkSnapshot measures Snapshot of the standard state into memory,
// reporting the snapshot's size.
func BenchmarkSnapshot(b *testing.B) {
	s, snap := snapshotState(b)
	var buf bytes.Buffer
	buf.Grow(len(snap))
	cpu0, n := cputime.Process(), 0
	for b.Loop() {
		buf.Reset()
		if err := s.Snapshot(&buf); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(n)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(len(snap)), "bytes")
	p, r := s.Counts()
	b.ReportMetric(float64(p), "pending")
	b.ReportMetric(float64(r), "running")
}

// BenchmarkRestore measures Restore of the standard state's snapshot.
func BenchmarkRestore(b *testing.B) {
	_, snap := snapshotState(b)
	cpu0, n := cputime.Process(), 0
	for b.Loop() {
		if _, err := scheduler.Restore(bytes.NewReader(snap), scheduler.RestoreOptions{}); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(n)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(len(snap)), "bytes")
}
