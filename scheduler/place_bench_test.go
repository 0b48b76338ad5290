package scheduler_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/internal/cputime"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

// placeQOS is the policy of BenchmarkPlace: the standard four QOS
// without their per-user GPU limits (standardPolicy's limits would hold
// most multi-node jobs back, and the benchmark measures placement, not
// limits), so that the standard reservations apply.
func placeQOS(c *scheduler.Config) error {
	reg, err := scheduler.NewRegistry(c.Nodes)
	if err != nil {
		return err
	}
	c.Registry = reg
	c.Policy = &policy.Config{QOS: []policy.QOS{
		{Name: "high", Priority: 100}, {Name: "normal", Priority: 50}, {Name: "low", Priority: 10}, {Name: "standby"},
	}}
	return nil
}

// BenchmarkPlace measures how fast jobs are placed into an empty standard
// cluster (10,000 nodes, multifactor priority, the standard QOS and
// reservations, nothing running), through Schedule: partition,
// reservation and resource filtering included. Each class takes its jobs
// from the standard mix (clustertest.Workload, seed 7):
//
//   - single-gpu: 1, 2 or 4 GPUs on one shared node, 1,000 jobs per op;
//   - whole-node: one exclusive node, 1,000 jobs per op;
//   - multi-node: 2–256 exclusive nodes (log-uniform), 64 jobs per op
//     (about 3,400 nodes);
//   - multi-node/tree: the same on the cluster with DESIGN.md's fabric
//     (leaf switches of 32 nodes under a spine), so that the topology
//     graph chooses among all the nodes that fit.
//
// One op is: submit the batch (Submit, timed) and run one Schedule cycle
// (timed), which starts it. Ending the started jobs (Finish), which empties
// the cluster for the next op, is not timed; the clock then moves one
// second, and finished jobs are forgotten after a second (MinJobAge), so
// that every op starts from the same empty cluster and the same heap.
// starts/s is the jobs started per second of timed time; starts/op shows
// every job of the batch started; cpu-ns/op and starts/cpu-s are the same
// over the process's CPU time in the timed parts (user and system, GC
// included), which other work on a shared machine does not inflate.
func BenchmarkPlace(b *testing.B) {
	for _, bc := range []struct {
		name  string
		batch int
		is    func(scheduler.JobSpec) bool
	}{
		{"single-gpu", 1000, func(s scheduler.JobSpec) bool { return !s.Exclusive && s.Nodes <= 1 }},
		{"whole-node", 1000, func(s scheduler.JobSpec) bool { return s.Exclusive && s.Nodes <= 1 }},
		{"multi-node", 64, func(s scheduler.JobSpec) bool { return s.Nodes >= 2 }},
		{"multi-node/tree", 64, func(s scheduler.JobSpec) bool { return s.Nodes >= 2 }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var specs []scheduler.JobSpec
			for _, w := range clustertest.Workload(clustertest.WorkloadConfig{Jobs: 40000, Seed: 7}) {
				if bc.is(w.Spec) {
					specs = append(specs, w.Spec)
				}
			}
			s, now, err := clustertest.NewState(clustertest.StateOptions{Seed: 1,
				Configure: func(c *scheduler.Config) error {
					if err := standardPriority(c); err != nil {
						return err
					}
					// Finished jobs are forgotten (two cycles after
					// they end), so the heap stays the size of one op.
					c.MinJobAge = time.Second
					if strings.HasSuffix(bc.name, "/tree") {
						standardTree(c)
					}
					return placeQOS(c)
				}})
			if err != nil {
				b.Fatal(err)
			}
			if err := reserve(s, now); err != nil {
				b.Fatal(err)
			}
			placeLoop(b, s, now, specs, bc.batch)
		})
	}
}

// placeLoop is BenchmarkPlace's loop: per op, submit batch jobs of specs
// (in turn) and schedule, then end the started jobs untimed.
func placeLoop(b *testing.B, s *scheduler.Scheduler, now time.Time, specs []scheduler.JobSpec, batch int) {
	b.Helper()
	next, starts := 0, 0
	var ids []scheduler.JobID
	var cpu time.Duration
	for b.Loop() {
		cpu0 := cputime.Process()
		for range batch {
			if _, err := s.Submit(now, specs[next%len(specs)]); err != nil {
				b.Fatal(err)
			}
			next++
		}
		cyc, err := s.Schedule(now)
		if err != nil {
			b.Fatal(err)
		}
		starts += len(cyc.Starts)
		cpu += cputime.Process() - cpu0
		b.StopTimer()
		ids = ids[:0]
		for _, st := range cyc.Starts {
			ids = append(ids, st.Job)
		}
		for _, id := range ids {
			if err := s.Finish(now, id, 0); err != nil {
				b.Fatal(err)
			}
		}
		now = now.Add(time.Second)
		b.StartTimer()
	}
	b.ReportMetric(float64(starts)/float64(b.N), "starts/op")
	if el := b.Elapsed().Seconds(); el > 0 {
		b.ReportMetric(float64(starts)/el, "starts/s")
	}
	if cpu > 0 {
		// The process's CPU time over the timed parts: on a shared
		// machine, what the ops cost rather than how long they waited.
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(starts)/cpu.Seconds(), "starts/cpu-s")
	}
}

// standardTree gives the standard cluster DESIGN.md's fabric: leaf
// switches of clustertest.StandardLeafSize consecutive nodes under one
// spine.
func standardTree(c *scheduler.Config) {
	const per = clustertest.StandardLeafSize
	t := &topology.Config{}
	var leaves []string
	for l := 0; l*per < len(c.Nodes); l++ {
		sw := topology.SwitchConfig{Name: fmt.Sprintf("leaf%d", l)}
		for i := l * per; i < min(l*per+per, len(c.Nodes)); i++ {
			sw.Nodes = append(sw.Nodes, c.Nodes[i].Name)
		}
		t.Switches = append(t.Switches, sw)
		leaves = append(leaves, sw.Name)
	}
	t.Switches = append(t.Switches, topology.SwitchConfig{Name: "spine", Switches: leaves})
	c.Topology = t
}
