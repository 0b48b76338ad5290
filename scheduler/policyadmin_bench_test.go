package scheduler_test

import (
	"testing"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// BenchmarkUpdateQOS measures an administrative change at the standard
// scale (10,000 nodes, about 40,000 running and 100,000 pending jobs):
// UpdateQOS of the "normal" QOS's per-user GPU limit (alternately 32 and
// 33), alone (update), followed by the next cycle (update+schedule), the
// QOS written back unchanged and the next cycle (same+schedule: the cost
// of the mechanism without the decisions a new limit changes), and a
// cycle alone (schedule) to compare with; and UpdatePartition of a
// partition's MaxTime followed by the next cycle (partition+schedule). The change recompiles the
// policy and moves the usage counters and every job's subject to it
// (Policy.Rebase: one map lookup per job); the cycle after it rebuilds
// nothing the change did not touch.
func BenchmarkUpdateQOS(b *testing.B) {
	for _, bc := range []struct {
		name      string
		configure []func(*scheduler.Config) error
	}{
		{"nodes=10000/pending=100000/priority+policy", []func(*scheduler.Config) error{standardPriority, standardPolicy}},
		{"nodes=10000/pending=100000/easy+policy", []func(*scheduler.Config) error{standardPriority, standardPolicy, easy}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, now := standardState(b, bc.configure, true)
			reg := s.Registry()
			var qs [2]policy.QOS
			var err error
			for k, lim := range []string{"gres/gpu=33", "gres/gpu=32"} {
				q, ok := s.Policy().QOS("normal")
				if !ok {
					b.Fatal("no QOS normal")
				}
				if q.Limits.MaxTRESPerUser, err = policy.ParseTRESLimits(reg, lim); err != nil {
					b.Fatal(err)
				}
				qs[k] = q
			}
			k := 0
			update := func() {
				if err := s.UpdateQOS(now, qs[k%2]); err != nil {
					b.Fatal(err)
				}
				k++
			}
			schedule := func() {
				if _, err := s.Schedule(now); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("schedule", func(b *testing.B) {
				for b.Loop() {
					schedule()
				}
			})
			b.Run("update", func(b *testing.B) {
				for b.Loop() {
					update()
				}
			})
			b.Run("update+schedule", func(b *testing.B) {
				for b.Loop() {
					update()
					schedule()
				}
			})
			// A partition limit toggled (MaxTime unlimited or 100 years,
			// which holds no job): scontrol update of a partition.
			part := s.Partitions()[0]
			b.Run("partition+schedule", func(b *testing.B) {
				for b.Loop() {
					if part.MaxTime == 0 {
						part.MaxTime = scheduler.MaxTimeLimit
					} else {
						part.MaxTime = 0
					}
					if err := s.UpdatePartition(now, part); err != nil {
						b.Fatal(err)
					}
					schedule()
				}
			})
			// The same QOS written back unchanged: the mechanism's cost
			// (a new policy, every job's subject rebased when the cycle
			// reads it) without the decisions a new limit changes.
			same := qs[k%2]
			b.Run("same+schedule", func(b *testing.B) {
				for b.Loop() {
					if err := s.UpdateQOS(now, same); err != nil {
						b.Fatal(err)
					}
					schedule()
				}
			})
		})
	}
}
