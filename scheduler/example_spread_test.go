package scheduler_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
)

// sbatch -w n2 -n 40 on 16-CPU nodes: the node list names fewer nodes
// than the tasks need, so the job gets n2 and as many more as needed
// (n1, n3), the tasks dealt one per node in turn; and sbatch -n 8
// --gpus=8 on 4-GPU nodes takes the 2 nodes the GPUs need.
func ExampleJobSpec_nodeListWithTasks() {
	var nodes []scheduler.NodeConfig
	for i := 1; i <= 5; i++ {
		inv := gres.Inventory{}
		for d := range 4 {
			inv.Devices = append(inv.Devices, gres.Device{Index: d, Name: "gpu", Socket: -1, NUMA: -1})
		}
		nodes = append(nodes, scheduler.NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 16, MemoryMiB: 65536, Devices: inv})
	}
	s, _ := scheduler.New(scheduler.Config{Nodes: nodes, Partitions: []scheduler.PartitionConfig{{Name: "p", Default: true}}})
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	cpu, _ := s.Submit(now, scheduler.JobSpec{User: "ann", NodeList: "n2", Tasks: 40, TimeLimit: time.Hour})
	gpu, _ := s.Submit(now, scheduler.JobSpec{User: "bob", Tasks: 8, GRESPerJob: []gres.Request{{Name: "gpu", Count: 8}}, TimeLimit: time.Hour})
	_, _ = s.Schedule(now)
	for _, id := range []scheduler.JobID{cpu, gpu} {
		j, _ := s.Job(id)
		for _, na := range j.Alloc.Nodes {
			fmt.Printf("job %d %s: %d CPUs, GPUs %v\n", id, na.Name, len(na.CPUs), na.Devices)
		}
	}
	// Output:
	// job 1 n1: 14 CPUs, GPUs []
	// job 1 n2: 13 CPUs, GPUs []
	// job 1 n3: 13 CPUs, GPUs []
	// job 2 n4: 4 CPUs, GPUs [0 1 2 3]
	// job 2 n5: 4 CPUs, GPUs [0 1 2 3]
}
