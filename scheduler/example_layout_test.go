package scheduler_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

// A node of 2 sockets × 8 cores: a 4-task job gets two CPUs on each
// socket (Slurm's default cyclic allocation within a node), a job with
// -m block:block the lowest free CPUs. Another user's --exclusive=user
// job keeps off ann's node and, with --hint=nomultithread on a node of
// two threads per core, gets one thread of each of its cores.
func ExampleParseDistribution() {
	s, err := scheduler.New(scheduler.Config{
		Nodes: []scheduler.NodeConfig{
			{Name: "n0", CPUs: 16, MemoryMiB: 64 << 10, Sockets: 2, CoresPerSocket: 8},
			{Name: "n1", CPUs: 16, MemoryMiB: 64 << 10, Sockets: 2, CoresPerSocket: 4, ThreadsPerCore: 2},
		},
		Partitions: []scheduler.PartitionConfig{{Name: "p"}},
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	block, err := scheduler.ParseDistribution("block:block")
	if err != nil {
		panic(err)
	}
	hint, err := scheduler.ParseHint("nomultithread")
	if err != nil {
		panic(err)
	}
	for _, spec := range []scheduler.JobSpec{
		{User: "ann", Tasks: 4},
		{User: "ann", Tasks: 4, Distribution: block},
		{User: "bob", Tasks: 4, Hint: hint, ExclusiveUser: true},
	} {
		spec.TimeLimit = time.Hour
		if _, err := s.Submit(now, spec); err != nil {
			panic(err)
		}
		cyc, err := s.Schedule(now)
		if err != nil {
			panic(err)
		}
		for _, st := range cyc.Starts {
			na := st.Alloc.Nodes[0]
			fmt.Printf("job %d (-m %q, --hint=%q, user %s): %s CPUs %v\n", st.Job, spec.Distribution, spec.Hint, spec.User, na.Name, na.CPUs)
		}
	}
	// Output:
	// job 1 (-m "", --hint="", user ann): n0 CPUs [0 1 8 9]
	// job 2 (-m "block:block", --hint="", user ann): n0 CPUs [2 3 4 5]
	// job 3 (-m "", --hint="nomultithread", user bob): n1 CPUs [0 2 8 10]
}
