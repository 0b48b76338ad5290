package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
)

// featureNodes labels the standard cluster's nodes with a rack (40 nodes
// each) and their GPU kind, Slurm's node Features.
func featureNodes(c *scheduler.Config) error {
	for i := range c.Nodes {
		kind := map[byte]string{'h': "h100", 'a': "a100", 'g': "gb200"}[c.Nodes[i].Name[0]]
		c.Nodes[i].Features = []string{fmt.Sprintf("rack%03d", i/40), kind}
	}
	return nil
}

// whereMix gives every tenth job of the batch partition a where request,
// in turn: a feature filter, a matching OR over two racks (single-node
// jobs), a required node, an excluded range, a rack count; and another
// tenth of its one-node jobs with tasks a where request over tasks that
// spread (spreadWhere).
func whereMix(k int, sp *scheduler.JobSpec) {
	spreadWhere(k, sp)
	if k%10 != 0 || sp.Partition != "batch" {
		return
	}
	small := sp.Nodes <= 1
	switch (k / 10) % 5 {
	case 0:
		sp.Constraint = "h100|a100"
	case 1:
		if small {
			r := (k / 50) % 120
			sp.Constraint = fmt.Sprintf("[rack%03d|rack%03d]", r, r+1)
		} else {
			sp.Constraint = "(h100|a100)&rack000|h100"
		}
	case 2:
		if small {
			sp.NodeList = fmt.Sprintf("h%05d", (k/50)%4000)
		} else {
			sp.Exclude = []string{"h[00000-00009]"}
		}
	case 3:
		sp.Exclude = []string{fmt.Sprintf("a[%05d-%05d]", 5000+(k/50)%1000, 5010+(k/50)%1000)}
	case 4:
		if small {
			sp.Constraint = fmt.Sprintf("rack%03d*1", (k/50)%120)
		} else {
			sp.Constraint = "h100"
		}
	}
}

// changeableNodes is featureNodes with changeable MIG modes on the a100
// nodes (node_features/helpers): "mig1" or "mig7", one active, the other
// a reboot away.
func changeableNodes(c *scheduler.Config) error {
	if err := featureNodes(c); err != nil {
		return err
	}
	for i := range c.Nodes {
		if c.Nodes[i].Name[0] == 'a' {
			c.Nodes[i].Features = append(c.Nodes[i].Features, []string{"mig1", "mig7"}[i%2])
			c.Nodes[i].ChangeableFeatures = []string{"mig1", "mig7"}
		}
	}
	return nil
}

// staticModes is changeableNodes with the MIG modes static (no
// ChangeableFeatures): the same constraints, met only where active, as
// the control of the changeable cases.
func staticModes(c *scheduler.Config) error {
	if err := changeableNodes(c); err != nil {
		return err
	}
	for i := range c.Nodes {
		c.Nodes[i].ChangeableFeatures = nil
	}
	return nil
}

// changeableMix is whereMix with, in addition, every tenth job of the
// batch partition from the fifth on asking for a MIG mode of the a100
// nodes (half of them need a reboot for it).
func changeableMix(k int, sp *scheduler.JobSpec) {
	whereMix(k, sp)
	if k%10 == 5 && sp.Partition == "batch" {
		sp.Constraint = []string{"a100&mig7", "mig1"}[(k/10)%2]
	}
}

// BenchmarkScheduleWhere is BenchmarkSchedule's standard cycle over a
// cluster with node features, without and with where requests (one job
// in ten of the batch partition: constraints, matching OR, counts,
// required and excluded nodes; and one in ten of its one-node task jobs
// with tasks spreading under a where request) in the queue, and with changeable
// features (another job in ten asking for a MIG mode changeable on the
// a100 nodes; static-modes is its control, the same modes static). The
// reboots metric counts the reboots of the first cycle;
// the measured cycles, at the same instant, find those nodes rebooting.
func BenchmarkScheduleWhere(b *testing.B) {
	for _, bc := range []struct {
		name   string
		mutate func(int, *scheduler.JobSpec)
		cfg    []func(*scheduler.Config) error
	}{
		{"plain", nil, []func(*scheduler.Config) error{featureNodes, standardPriority}},
		{"where", whereMix, []func(*scheduler.Config) error{featureNodes, standardPriority}},
		{"plain/easy", nil, []func(*scheduler.Config) error{featureNodes, standardPriority, easy}},
		{"where/easy", whereMix, []func(*scheduler.Config) error{featureNodes, standardPriority, easy}},
		{"changeable", changeableMix, []func(*scheduler.Config) error{changeableNodes, standardPriority}},
		{"changeable/easy", changeableMix, []func(*scheduler.Config) error{changeableNodes, standardPriority, easy}},
		{"static-modes", changeableMix, []func(*scheduler.Config) error{staticModes, standardPriority}},
		{"static-modes/easy", changeableMix, []func(*scheduler.Config) error{staticModes, standardPriority, easy}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, now, err := clustertest.NewState(clustertest.StateOptions{Running: 40000, Pending: 100000, Seed: 1,
				Mutate: bc.mutate,
				Configure: func(c *scheduler.Config) error {
					for _, f := range bc.cfg {
						if err := f(c); err != nil {
							return err
						}
					}
					return nil
				}})
			if err != nil {
				b.Fatal(err)
			}
			c, err := s.Schedule(now)
			if err != nil {
				b.Fatal(err)
			}
			p, r := s.Counts()
			n := 0
			for _, j := range s.Jobs() {
				if j.Spec.Constraint != "" || j.Spec.NodeList != "" || j.Spec.Exclude != nil {
					n++
				}
			}
			if (n > 0) != (bc.mutate != nil) {
				b.Fatalf("%d jobs with where requests", n)
			}
			for b.Loop() {
				if _, err := s.Schedule(now); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(p), "pending")
			b.ReportMetric(float64(r), "running")
			b.ReportMetric(float64(n), "where-jobs")
			b.ReportMetric(float64(len(c.Reboots)), "reboots")
		})
	}
}

// spreadWhere rewrites every tenth one-node GPU job of the batch
// partition (at offset 5) as a where request whose tasks Slurm spreads
// (where_tasks.go): -n 8+GPUs --gpus-per-task=1 and no -N, in turn with a
// required node (-w), a count per rack ([rackA*1&rackB*1]) and a
// matching OR ([h100|a100]).
func spreadWhere(k int, sp *scheduler.JobSpec) {
	if k%10 != 5 || sp.Partition != "batch" || sp.Nodes > 1 || sp.Exclusive || len(sp.GRESPerNode) == 0 {
		return
	}
	sp.Nodes = 0
	sp.Tasks = 8 + int(sp.GRESPerNode[0].Count)
	sp.GRESPerTask = []gres.Request{{Name: "gpu", Count: 1}}
	sp.GRESPerNode = nil
	sp.MemPerNodeMiB = 0
	sp.MemPerCPUMiB = 4 * 1024
	switch r := (k / 50) % 119; (k / 10) % 3 {
	case 0:
		sp.NodeList = fmt.Sprintf("h%05d", (k/50)%4000)
	case 1:
		sp.Constraint = fmt.Sprintf("[rack%03d*1&rack%03d*1]", r, r+1)
	default:
		sp.Constraint = "[h100|a100]"
	}
}
