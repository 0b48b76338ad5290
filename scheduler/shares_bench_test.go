package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
)

// sharedMix shares a quarter of the standard cluster's H100 nodes: GPUs
// 0-1 split into 8 shards each, GPU 2 with 100 MPS shares, GPU 3 a MIG
// instance (h100_3g.40gb).
func sharedMix(c *scheduler.Config) error {
	for i := range c.Nodes {
		nc := &c.Nodes[i]
		if !strings.HasPrefix(nc.Name, "h") || i%4 != 0 {
			continue
		}
		inv := nc.Devices.Clone() // the standard nodes share one inventory
		inv.Devices[3].Type = "h100_3g.40gb"
		inv.MIG = []gres.MIGInstance{{Device: 3, Parent: 3, Profile: "3g.40gb", GPUInstance: 1}}
		inv.Shares = []gres.DeviceShares{{Device: 0, Shards: 8}, {Device: 1, Shards: 8}, {Device: 2, MPS: 100}}
		nc.Devices = inv
	}
	return nil
}

// sharedRequests turns about one in six of the workload's one-GPU jobs
// outside the GB200 partition into shard:2 (one in ten), mps:25 (one in
// twenty) and gpu:h100_3g.40gb:1 (one in forty) requests, in proportion
// to what the shared nodes offer so that the standard fill still reaches
// about 40,000 running jobs.
func sharedRequests(k int, spec *scheduler.JobSpec) {
	if spec.Nodes > 1 || spec.Exclusive || spec.Partition == "gb200" || len(spec.GRESPerNode) != 1 || spec.GRESPerNode[0].Count != 1 {
		return
	}
	switch {
	case k%10 == 0:
		spec.GRESPerNode = []gres.Request{{Name: "shard", Count: 2}}
	case k%20 == 1:
		spec.GRESPerNode = []gres.Request{{Name: "mps", Count: 25}}
	case k%40 == 2:
		spec.GRESPerNode = []gres.Request{{Name: "gpu", Type: "h100_3g.40gb", Count: 1}}
	}
}

// BenchmarkScheduleShared is BenchmarkSchedule's standard cycle (10,000
// nodes, about 40,000 running, 100,000 pending) with shared GPUs: /base
// is the standard state, /shared the same with a quarter of the H100
// nodes sharing GPUs (sharedMix) and about one in six one-GPU jobs asking
// for shards, MPS or a MIG instance (sharedRequests).
//
// The /churn cases end 20 running one-GPU jobs (base) or share jobs
// (shared) a minute before each cycle, so the kept backfill profile is
// updated every cycle (on shared nodes the jobs holding devices there are
// re-added with their new uses, see backfill_shares.go).
func BenchmarkScheduleShared(b *testing.B) {
	for _, bc := range []struct {
		name   string
		shared bool
		easy   bool
		churn  bool
	}{{"base", false, false, false}, {"shared", true, false, false}, {"base/easy", false, true, false}, {"shared/easy", true, true, false},
		{"base/easy/churn", false, true, true}, {"shared/easy/churn", true, true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			o := clustertest.StateOptions{Running: 40000, Pending: 100000, Seed: 1,
				Configure: func(c *scheduler.Config) error {
					if bc.shared {
						if err := sharedMix(c); err != nil {
							return err
						}
					}
					if bc.easy {
						if err := standardPriority(c); err != nil {
							return err
						}
						return easy(c)
					}
					return nil
				}}
			if bc.shared {
				o.Spec = sharedRequests
			}
			s, now, err := clustertest.NewState(o)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Schedule(now); err != nil {
				b.Fatal(err)
			}
			if !bc.churn {
				loopCycles(b, s, now)
				return
			}
			var ends []scheduler.JobID
			for _, j := range s.Jobs() {
				if j.State != scheduler.JobRunning || len(j.Alloc.Nodes) != 1 {
					continue
				}
				na := j.Alloc.Nodes[0]
				if (bc.shared && len(na.Shares) > 0) || (!bc.shared && len(na.Devices) == 1) {
					ends = append(ends, j.ID)
				}
			}
			for b.Loop() {
				now = now.Add(time.Minute)
				for k := 0; k < 20 && len(ends) > 0; k++ {
					if err := s.Finish(now, ends[0], 0); err != nil {
						b.Fatal(err)
					}
					ends = ends[1:]
				}
				if _, err := s.Schedule(now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
