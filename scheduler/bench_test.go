package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

// standardPriority is the multifactor configuration of the benchmarks.
func standardPriority(c *scheduler.Config) error {
	c.Priority = &scheduler.PriorityConfig{
		Engine:      priority.Config{Weights: priority.Weights{Age: 1000, FairShare: 10000, JobSize: 1000, Partition: 1000, QOS: 2000}},
		QOSPriority: map[string]uint32{"high": 100, "normal": 50, "low": 10, "standby": 0},
	}
	return nil
}

// standardPolicy is the realistic policy of DESIGN.md's scale: 4 QOS with
// per-user GPU limits, the 3 partitions, and 2 reservations (a
// maintenance window on 64 nodes in two hours, and 32 nodes held now for
// one user).
func standardPolicy(c *scheduler.Config) error {
	reg, err := scheduler.NewRegistry(c.Nodes)
	if err != nil {
		return err
	}
	lim := func(s string) policy.TRESLimits {
		l, err := policy.ParseTRESLimits(reg, s)
		if err != nil {
			panic(err)
		}
		return l
	}
	c.Registry = reg
	c.Policy = &policy.Config{
		QOS: []policy.QOS{
			{Name: "high", Priority: 100, Limits: policy.QOSLimits{MaxTRESPerUser: lim("gres/gpu=64")}},
			{Name: "normal", Priority: 50, Limits: policy.QOSLimits{MaxTRESPerUser: lim("gres/gpu=32")}},
			{Name: "low", Priority: 10, Limits: policy.QOSLimits{MaxTRESPerUser: lim("gres/gpu=16")}},
			{Name: "standby", Limits: policy.QOSLimits{MaxTRESPerUser: lim("gres/gpu=128")}},
		},
	}
	return nil
}

// reserve adds the two standard reservations to a state.
func reserve(s *scheduler.Scheduler, now time.Time) error {
	n := len(s.Nodes())
	maint := topology.NewNodeSet(n)
	for i := 5000; i < 5064; i++ {
		maint.Add(i)
	}
	if err := s.AddReservation(now, policy.Reservation{Name: "maint", Start: now.Add(2 * time.Hour), Duration: 4 * time.Hour,
		Nodes: maint, Users: []string{"root"}, Flags: policy.ResvMaint | policy.ResvIgnoreJobs}); err != nil {
		return err
	}
	user := topology.NewNodeSet(n)
	for i := 9000; i < 9032; i++ {
		user.Add(i)
	}
	return s.AddReservation(now, policy.Reservation{Name: "u0001-demo", Start: now, Duration: 8 * time.Hour,
		Nodes: user, Users: []string{"u0001"}, Flags: policy.ResvIgnoreJobs})
}

// BenchmarkSchedule measures one scheduling cycle at the standard scale:
// 10,000 nodes, about 40,000 running jobs and 100,000 pending. The state is
// built once; a first cycle starts whatever fits, so every timed cycle
// evaluates the full queue against a full cluster (the steady state of a
// busy site). Sub-benchmarks add multifactor priority, the realistic
// policy (limits and reservations) and EASY backfill planning the whole
// queue.
func BenchmarkSchedule(b *testing.B) {
	for _, bc := range []struct {
		name      string
		configure []func(*scheduler.Config) error
		policy    bool
	}{
		{"nodes=10000/pending=100000", nil, false},
		{"nodes=10000/pending=100000/policy", []func(*scheduler.Config) error{standardPolicy}, true},
		{"nodes=10000/pending=100000/priority", []func(*scheduler.Config) error{standardPriority}, false},
		{"nodes=10000/pending=100000/priority+policy", []func(*scheduler.Config) error{standardPriority, standardPolicy}, true},
		{"nodes=10000/pending=100000/easy", []func(*scheduler.Config) error{standardPriority, easy}, false},
		{"nodes=10000/pending=100000/easy+policy", []func(*scheduler.Config) error{standardPriority, standardPolicy, easy}, true},
		{"nodes=10000/pending=100000/easy/replan", []func(*scheduler.Config) error{standardPriority, easy}, false},
		{"nodes=10000/pending=100000/easy+policy/replan", []func(*scheduler.Config) error{standardPriority, standardPolicy, easy}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, now := standardState(b, bc.configure, bc.policy)
			if strings.HasSuffix(bc.name, "/replan") {
				// Nothing changes between the loop's cycles, so the
				// scheduler would extend the last plan (the name without
				// /replan measures that); this plans the whole queue, as
				// a cycle after a job ends does.
				scheduler.ReplanEveryCycle(s)
			}
			loopCycles(b, s, now)
		})
	}
}

// loopCycles times one cycle of s at now per iteration and reports the
// pending and running counts it started from.
func loopCycles(b *testing.B, s *scheduler.Scheduler, now time.Time) {
	p, r := s.Counts()
	for b.Loop() {
		if _, err := s.Schedule(now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(p), "pending")
	b.ReportMetric(float64(r), "running")
}

// standardState builds the standard state (10,000 nodes, 40,000 running
// and 100,000 pending jobs of the seed-1 mix) with configure applied, the
// standard reservations when reservations is set, and runs a first cycle.
func standardState(b *testing.B, configure []func(*scheduler.Config) error, reservations bool) (*scheduler.Scheduler, time.Time) {
	b.Helper()
	s, now := standardQueue(b, 100000, configure, reservations)
	if _, err := s.Schedule(now); err != nil {
		b.Fatal(err)
	}
	return s, now
}

// standardQueue is standardState with pending jobs and no first cycle.
func standardQueue(b *testing.B, pending int, configure []func(*scheduler.Config) error, reservations bool) (*scheduler.Scheduler, time.Time) {
	b.Helper()
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
	if reservations {
		if err := reserve(s, now); err != nil {
			b.Fatal(err)
		}
	}
	return s, now
}

func easy(c *scheduler.Config) error {
	c.Backfill = &backfill.Config{Mode: backfill.EASY}
	return nil
}

// BenchmarkScheduleChurn measures the cycle a busy site runs, not a
// repeat of the last one: from the standard state (10,000 nodes, about
// 40,000 running, 100,000 pending), each timed step moves the clock 30
// seconds, ends the 100 longest-running jobs (Finish), submits 100 new
// jobs of the standard mix and runs a cycle, which then ends what ran out
// of time, starts what fits in the freed room and (with backfill) plans
// the queue afresh. The queue stays about as deep as it started.
func BenchmarkScheduleChurn(b *testing.B) {
	const perStep = 100
	for _, bc := range []struct {
		name      string
		configure []func(*scheduler.Config) error
		policy    bool
	}{
		{"nodes=10000/pending=100000", nil, false},
		{"nodes=10000/pending=100000/priority+policy", []func(*scheduler.Config) error{standardPriority, standardPolicy}, true},
		{"nodes=10000/pending=100000/easy+policy", []func(*scheduler.Config) error{standardPriority, standardPolicy, easy}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, now, err := clustertest.NewState(clustertest.StateOptions{Running: 40000, Pending: 100000, Seed: 1,
				Configure: func(c *scheduler.Config) error {
					for _, f := range bc.configure {
						if err := f(c); err != nil {
							return err
						}
					}
					return nil
				}})
			if err != nil {
				b.Fatal(err)
			}
			if bc.policy {
				if err := reserve(s, now); err != nil {
					b.Fatal(err)
				}
			}
			arrivals := clustertest.Workload(clustertest.WorkloadConfig{Jobs: 200 * perStep, Seed: 7})
			churn(b, s, now, perStep, func(now time.Time, k int) error {
				_, err := s.Submit(now, arrivals[k%len(arrivals)].Spec)
				return err
			})
		})
	}
}

// churn times BenchmarkScheduleChurn's step on s from now: the clock moves
// 30 seconds, the perStep longest-running jobs end, submit is called for
// the next perStep arrivals (k counts them from 0) and a cycle runs. It
// runs a first, untimed cycle and reports the pending and running counts,
// the starts per cycle and the extra settling passes per cycle.
func churn(b *testing.B, s *scheduler.Scheduler, now time.Time, perStep int, submit func(now time.Time, k int) error) {
	b.Helper()
	cyc, err := s.Schedule(now)
	if err != nil {
		b.Fatal(err)
	}
	q := newChurnQueue(s)
	next, starts := 0, 0
	settled := scheduler.SettlePasses(s)
	for b.Loop() {
		now = now.Add(30 * time.Second)
		q.finish(b, s, now, perStep)
		for range perStep {
			if err := submit(now, next); err != nil {
				b.Fatal(err)
			}
			next++
		}
		if cyc, err = s.Schedule(now); err != nil {
			b.Fatal(err)
		}
		q.note(cyc)
		starts += len(cyc.Starts)
	}
	p, r := s.Counts()
	b.ReportMetric(float64(p), "pending")
	b.ReportMetric(float64(r), "running")
	b.ReportMetric(float64(starts)/float64(b.N), "starts/cycle")
	if el := b.Elapsed().Seconds(); el > 0 {
		b.ReportMetric(float64(starts)/el, "starts/s")
	}
	b.ReportMetric(float64(scheduler.SettlePasses(s)-settled)/float64(b.N), "settle-passes/cycle")
}
