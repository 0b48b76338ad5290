package scheduler_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// A partition with OverSubscribe=FORCE:2 on one node of 2 cores × 2
// threads, allocated in whole cores (SelectTypeParameters=CR_Core_Memory,
// Slurm's default): two 4-CPU jobs share the node's CPUs, a third waits;
// a one-CPU job is given (and charged) a whole core once one is shared
// by fewer than two jobs.
func ExampleParseSelectTypeParameters() {
	unit, err := scheduler.ParseSelectTypeParameters("CR_Core_Memory")
	if err != nil {
		panic(err)
	}
	mode, count, err := policy.ParseOverSubscribe("FORCE:2")
	if err != nil {
		panic(err)
	}
	s, err := scheduler.New(scheduler.Config{
		Nodes:                []scheduler.NodeConfig{{Name: "n0", CPUs: 4, MemoryMiB: 8 << 10, Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 2}},
		Partitions:           []scheduler.PartitionConfig{{Name: "shared", OverSubscribe: mode, OverSubscribeCount: count}},
		SelectTypeParameters: unit,
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var ids []scheduler.JobID
	for range 3 {
		id, err := s.Submit(now, scheduler.JobSpec{User: "ann", Tasks: 4, TimeLimit: time.Hour})
		if err != nil {
			panic(err)
		}
		ids = append(ids, id)
	}
	cyc, err := s.Schedule(now)
	if err != nil {
		panic(err)
	}
	for _, st := range cyc.Starts {
		fmt.Printf("job %d: CPUs %v, %d jobs per CPU\n", st.Job, st.Alloc.Nodes[0].CPUs, st.Alloc.OverSubscribe)
	}
	for _, p := range cyc.Pending {
		fmt.Printf("job %d waits: %s\n", p.Job, p.Reason)
	}
	if err := s.Finish(now.Add(time.Minute), ids[0], 0); err != nil {
		panic(err)
	}
	if err := s.Cancel(now.Add(time.Minute), ids[2]); err != nil {
		panic(err)
	}
	if _, err := s.Submit(now.Add(time.Minute), scheduler.JobSpec{User: "bob", Tasks: 1, TimeLimit: time.Hour}); err != nil {
		panic(err)
	}
	cyc, err = s.Schedule(now.Add(time.Minute))
	if err != nil {
		panic(err)
	}
	for _, st := range cyc.Starts {
		fmt.Printf("job %d: CPUs %v, cpu=%d\n", st.Job, st.Alloc.Nodes[0].CPUs, st.Alloc.Nodes[0].TRES[gres.CPU])
	}
	// Output:
	// job 1: CPUs [0 1 2 3], 2 jobs per CPU
	// job 2: CPUs [0 1 2 3], 2 jobs per CPU
	// job 3 waits: Resources
	// job 4: CPUs [0 1], cpu=2
}
