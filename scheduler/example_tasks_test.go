package scheduler_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

// sbatch -N reads as a count or a range.
func ExampleParseNodeCount() {
	lo, hi, err := scheduler.ParseNodeCount("2-4")
	fmt.Println(lo, hi, err, scheduler.FormatNodeCount(lo, hi))
	// Output: 2 4 <nil> 2-4
}

// sbatch -n 32 with no -N on 16-CPU nodes: the scheduler chooses two
// nodes, every CPU of each.
func ExampleJobSpec_tasks() {
	s, _ := scheduler.New(scheduler.Config{
		Nodes: []scheduler.NodeConfig{
			{Name: "n1", CPUs: 16, MemoryMiB: 65536}, {Name: "n2", CPUs: 16, MemoryMiB: 65536}, {Name: "n3", CPUs: 16, MemoryMiB: 65536},
		},
		Partitions: []scheduler.PartitionConfig{{Name: "cpu", Default: true}},
	})
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	id, _ := s.Submit(now, scheduler.JobSpec{User: "ann", Tasks: 32, TimeLimit: time.Hour})
	_, _ = s.Schedule(now)
	j, _ := s.Job(id)
	for _, na := range j.Alloc.Nodes {
		fmt.Println(na.Name, len(na.CPUs), na.CPUs[0], na.CPUs[len(na.CPUs)-1])
	}
	// Output:
	// n1 16 0 15
	// n2 16 0 15
}
