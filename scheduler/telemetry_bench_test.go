package scheduler_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/journal"
	"github.com/sluicehq/sluice/telemetry"
)

// telemetryRule is the idle rule of the telemetry benchmarks.
var telemetryRule = telemetry.Rule{IdleBelow: 5, IdleAfter: 30 * time.Minute}

// BenchmarkTelemetry measures one TelemetryEvent at the standard scale
// (10,000 nodes, about 40,000 running jobs): the 8 device samples of the
// 8-GPU node running the most jobs, and one reading of each of its jobs
// (CPU counter, memory peak), folded into their usage with the idle rule
// on. ns/sample is the event's time over its samples (device samples and
// job readings). The /journal row appends each event to a journal
// (scheduler/journal, binary encoding, batched fsync) first, as a
// journaled scheduler does.
func BenchmarkTelemetry(b *testing.B) {
	s, now, err := clustertest.NewState(clustertest.StateOptions{Running: 40000, Pending: 1000, Seed: 1,
		Configure: func(c *scheduler.Config) error {
			c.Telemetry = scheduler.TelemetryConfig{Rule: telemetryRule}
			return nil
		}})
	if err != nil {
		b.Fatal(err)
	}
	// The 8-GPU node with the most running jobs.
	perNode := map[string][]scheduler.JobID{}
	for _, j := range s.Jobs() {
		if j.State == scheduler.JobRunning {
			for _, na := range j.Alloc.Nodes {
				perNode[na.Name] = append(perNode[na.Name], j.ID)
			}
		}
	}
	node, jobs := "", []scheduler.JobID(nil)
	for _, n := range clustertest.StandardCluster().Nodes {
		if ids := perNode[n.Name]; len(n.Devices.Devices) == 8 && len(ids) > len(jobs) {
			node, jobs = n.Name, ids
		}
	}
	if node == "" {
		b.Fatal("no 8-GPU node runs a job")
	}
	for _, bc := range []struct {
		name    string
		journal bool
	}{{"nodes=10000/running=40000", false}, {"nodes=10000/running=40000/journal", true}} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.journal {
				j, err := journal.Open(b.TempDir(), journal.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer j.Close()
				s.SetEventLog(j)
				defer s.SetEventLog(nil)
			}
			ev := scheduler.TelemetryEvent{Node: node, Devices: make([]gres.DeviceSample, 8), Jobs: make([]scheduler.JobReading, len(jobs))}
			k := 0
			b.ReportAllocs()
			for b.Loop() {
				k++
				now = now.Add(time.Second)
				for i := range ev.Devices {
					ev.Devices[i] = gres.DeviceSample{Index: i, Utilization: float64((k + 10*i) % 100), MemoryUsedMiB: 30000,
						PowerWatts: 400, EnergyJoules: float64(400 * k)}
				}
				for i, id := range jobs {
					ev.Jobs[i] = scheduler.JobReading{Job: id, CPUSeconds: float64(k), MemoryPeakBytes: 1 << 33}
				}
				if _, err := s.ReportTelemetry(now, ev); err != nil {
					b.Fatal(err)
				}
			}
			samples := float64(len(ev.Devices) + len(ev.Jobs))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/samples, "ns/sample")
			b.ReportMetric(samples, "samples/event")
		})
	}
}

// BenchmarkScheduleTelemetryConfig is BenchmarkSchedule's base row with
// and without a telemetry configuration (idle rule and action), and no
// sample arriving: the cycle does no telemetry work, so the two rows
// differ only by noise (compare them with benchstat).
func BenchmarkScheduleTelemetryConfig(b *testing.B) {
	for _, bc := range []struct {
		name string
		tc   scheduler.TelemetryConfig
	}{
		{"nodes=10000/pending=100000/telemetry=off", scheduler.TelemetryConfig{}},
		{"nodes=10000/pending=100000/telemetry=on", scheduler.TelemetryConfig{Rule: telemetryRule, Action: scheduler.IdleRequeue, Grace: time.Hour}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, now := standardState(b, []func(*scheduler.Config) error{func(c *scheduler.Config) error {
				c.Telemetry = bc.tc
				return nil
			}}, false)
			loopCycles(b, s, now)
		})
	}
}
