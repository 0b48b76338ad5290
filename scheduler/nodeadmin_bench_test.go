package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/internal/cputime"
	"github.com/sluicehq/sluice/scheduler"
)

// BenchmarkAddNode measures an administrative change at the standard
// scale (10,000 nodes, about 40,000 running, 100,000 pending, multifactor
// priority, the realistic policy and EASY backfill): each step adds one
// node (a copy of an h100 node, in the batch and h100 partitions) and
// runs the next cycle, which starts jobs on it and plans the queue with
// it. "schedule" is the same cycle with no change (the plan extended),
// "schedule/replan" one that plans the whole queue again (as after a job
// ends): the cost an added node must stay close to. The add-ns/op metric
// is AddNode alone, cpu-ns/op the process's CPU time per step (every
// thread, the collector's included).
func BenchmarkAddNode(b *testing.B) {
	for _, bc := range []string{"schedule", "schedule/replan", "addnode+schedule"} {
		b.Run("nodes=10000/pending=100000/easy+policy/"+bc, func(b *testing.B) {
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
			if bc == "schedule/replan" {
				scheduler.ReplanEveryCycle(s)
			}
			var tmpl scheduler.NodeConfig
			for _, n := range s.Nodes() {
				if nc, _ := s.NodeConfig(n.Name); len(nc.Devices.Devices) == 8 && nc.Devices.Devices[0].Type == "h100" {
					tmpl = nc
					break
				}
			}
			if tmpl.Name == "" {
				b.Fatal("no h100 node to copy")
			}
			var add time.Duration
			k := 0
			cpu0 := cputime.Process()
			for b.Loop() {
				if bc == "addnode+schedule" {
					nc := tmpl
					nc.Name = fmt.Sprintf("added-%05d", k)
					k++
					t := time.Now()
					if err := s.AddNode(now, nc, "h100"); err != nil {
						b.Fatal(err)
					}
					add += time.Since(t)
				}
				if _, err := s.Schedule(now); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time per step: on a shared machine wall time also counts
			// the other processes.
			b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			if k > 0 {
				b.ReportMetric(float64(add.Nanoseconds())/float64(k), "add-ns/op")
			}
		})
	}
}
