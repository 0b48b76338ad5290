package scheduler_test

import (
	"testing"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// layoutCluster gives every node of the standard cluster a layout of 2
// sockets × 32 cores × 2 threads (its 128 CPUs) and its devices' Cores as
// core indices of their socket (the gpuserver inventories list the
// socket's 64 CPUs, 0-63 and 64-127: cores 0-31 and 32-63).
func layoutCluster(c *scheduler.Config) error {
	for i := range c.Nodes {
		n := &c.Nodes[i]
		n.Sockets, n.CoresPerSocket, n.ThreadsPerCore = 2, 32, 2
		inv := n.Devices
		inv.Devices = append([]gres.Device(nil), inv.Devices...)
		for k := range inv.Devices {
			d := &inv.Devices[k]
			var cores []int
			for _, c := range d.Cores.AppendTo(nil) {
				cores = append(cores, c/2)
			}
			cs, err := gres.CoreSetOf(cores...)
			if err != nil {
				return err
			}
			d.Cores = cs
		}
		n.Devices = inv
	}
	return nil
}

// layoutMix puts layout requests in the standard mix: a quarter of the
// jobs with --hint=nomultithread, a quarter with -m block:block, one in
// eight with --exclusive=user; the rest take the default (cyclic over
// sockets).
func layoutMix(i int, spec *scheduler.JobSpec) {
	switch {
	case i%4 == 0:
		spec.Hint = scheduler.HintNoMultithread
	case i%4 == 1:
		spec.Distribution = scheduler.Distribution{Node: scheduler.DistBlock, Socket: scheduler.DistBlock}
	case i%8 == 2 && !spec.Exclusive:
		spec.ExclusiveUser = true
	}
}

// oversubCluster allocates whole cores (SelectTypeParameters=CR_Core)
// and makes every other partition OverSubscribe=FORCE:2 and the others
// YES (Slurm's count, 4). Partition policy needs the jobs' QOS known.
func oversubCluster(c *scheduler.Config) error {
	c.SelectTypeParameters = scheduler.CRCore
	if c.Policy == nil {
		c.Policy = &policy.Config{}
		for _, q := range clustertest.QOSNames {
			c.Policy.QOS = append(c.Policy.QOS, policy.QOS{Name: q})
		}
	}
	for i := range c.Partitions {
		if i%2 == 0 {
			c.Partitions[i].OverSubscribe, c.Partitions[i].OverSubscribeCount = policy.OverSubscribeForce, 2
		} else {
			c.Partitions[i].OverSubscribe = policy.OverSubscribeYes
		}
	}
	return nil
}

// oversubMix is layoutMix with one job in three asking --oversubscribe.
func oversubMix(i int, spec *scheduler.JobSpec) {
	layoutMix(i, spec)
	spec.OverSubscribe = i%3 == 0
}

// BenchmarkScheduleLayout is BenchmarkSchedule's standard cycle (10,000
// nodes, about 40,000 running and 100,000 pending jobs) without layouts
// (plain), with layout-bearing nodes and layout requests in the mix
// (layout), and with those allocated in whole cores on OverSubscribe
// partitions (oversub, see oversubCluster), FIFO and with EASY backfill.
func BenchmarkScheduleLayout(b *testing.B) {
	for _, bc := range []struct {
		name    string
		layout  bool
		easy    bool
		oversub bool
	}{
		{"plain", false, false, false}, {"layout", true, false, false}, {"oversub", true, false, true},
		{"easy/plain", false, true, false}, {"easy/layout", true, true, false}, {"easy/oversub", true, true, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			o := clustertest.StateOptions{Running: 40000, Pending: 100000, Seed: 1,
				Configure: func(c *scheduler.Config) error {
					if bc.easy {
						if err := standardPriority(c); err != nil {
							return err
						}
						if err := easy(c); err != nil {
							return err
						}
					}
					if bc.oversub {
						if err := oversubCluster(c); err != nil {
							return err
						}
					}
					if bc.layout {
						return layoutCluster(c)
					}
					return nil
				}}
			if bc.layout {
				o.Spec = layoutMix
			}
			if bc.oversub {
				o.Spec = oversubMix
			}
			s, now, err := clustertest.NewState(o)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Schedule(now); err != nil {
				b.Fatal(err)
			}
			loopCycles(b, s, now)
		})
	}
}
