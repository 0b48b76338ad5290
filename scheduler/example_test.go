package scheduler_test

import (
	"fmt"
	"time"

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
