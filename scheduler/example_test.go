package scheduler_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
)

// A two-node cluster with four GPUs per node: the caller submits jobs,
// runs a cycle, launches the starts and reads why the others wait.
func Example() {
	gpuNode := func(name string) scheduler.NodeConfig {
		inv := gres.Inventory{}
		for i := range 4 {
			inv.Devices = append(inv.Devices, gres.Device{Index: i, Name: "gpu", Type: "a100", NUMA: -1, Socket: -1})
		}
		return scheduler.NodeConfig{Name: name, CPUs: 32, MemoryMiB: 256 * 1024, Devices: inv}
	}
	s, err := scheduler.New(scheduler.Config{
		Nodes:      []scheduler.NodeConfig{gpuNode("n1"), gpuNode("n2")},
		Partitions: []scheduler.PartitionConfig{{Name: "gpu", MaxTime: 24 * time.Hour}},
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	gpus := func(n int64) []gres.Request { return []gres.Request{{Name: "gpu", Count: n}} }
	for _, spec := range []scheduler.JobSpec{
		{User: "ann", GRESPerNode: gpus(4), TimeLimit: time.Hour},
		{User: "bob", Nodes: 2, GRESPerNode: gpus(4), TimeLimit: time.Hour},
		{User: "cy", GRESPerNode: gpus(1), TimeLimit: time.Hour},
	} {
		if _, err := s.Submit(now, spec); err != nil {
			panic(err)
		}
	}
	cyc, err := s.Schedule(now)
	if err != nil {
		panic(err)
	}
	for _, st := range cyc.Starts {
		fmt.Printf("start job %d on %s GPUs %v\n", st.Job, st.Alloc.Nodes[0].Name, st.Alloc.Nodes[0].Devices)
	}
	for _, p := range cyc.Pending {
		fmt.Printf("job %d waits: %s\n", p.Job, p.Reason)
	}
	// Output:
	// start job 1 on n1 GPUs [0 1 2 3]
	// job 2 waits: Resources
	// job 3 waits: Priority
}

// Under EASY backfill with an EstimateInterval, a job behind the head
// keeps the expected start computed when it was first planned until the
// interval passes; Job.EstimatedAt says when that was. Starts are decided
// as if every estimate were fresh.
func ExampleConfig_estimateInterval() {
	node := func(name string) scheduler.NodeConfig {
		return scheduler.NodeConfig{Name: name, CPUs: 8, MemoryMiB: 32 * 1024}
	}
	s, err := scheduler.New(scheduler.Config{
		Nodes:            []scheduler.NodeConfig{node("n1"), node("n2")},
		Partitions:       []scheduler.PartitionConfig{{Name: "batch", MaxTime: 24 * time.Hour}},
		Backfill:         &backfill.Config{Mode: backfill.EASY},
		EstimateInterval: time.Hour,
	})
	if err != nil {
		panic(err)
	}
	nine := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	submit := func(nodes int, limit time.Duration) scheduler.JobID {
		id, err := s.Submit(nine, scheduler.JobSpec{Nodes: nodes, Exclusive: true, TimeLimit: limit})
		if err != nil {
			panic(err)
		}
		return id
	}
	first, _ := submit(1, 4*time.Hour), submit(1, 2*time.Hour)
	head, behind := submit(2, time.Hour), submit(2, time.Hour)
	show := func(at time.Time) {
		if _, err := s.Schedule(at); err != nil {
			panic(err)
		}
		for _, id := range []scheduler.JobID{head, behind} {
			j, _ := s.Job(id)
			fmt.Printf("%s job %d: expected %s (estimated %s)\n", at.Format("15:04"), id, j.ExpectedStart.Format("15:04"), j.EstimatedAt.Format("15:04"))
		}
	}
	show(nine)
	// The 4 h job ends early: the head's reservation moves up at once;
	// the estimate behind it stands until 10:00.
	if err := s.Finish(nine.Add(30*time.Minute), first, 0); err != nil {
		panic(err)
	}
	show(nine.Add(30 * time.Minute))
	show(nine.Add(time.Hour))
	// Output:
	// 09:00 job 3: expected 13:00 (estimated 09:00)
	// 09:00 job 4: expected 14:00 (estimated 09:00)
	// 09:30 job 3: expected 11:00 (estimated 09:30)
	// 09:30 job 4: expected 14:00 (estimated 09:00)
	// 10:00 job 3: expected 11:00 (estimated 10:00)
	// 10:00 job 4: expected 12:00 (estimated 10:00)
}
