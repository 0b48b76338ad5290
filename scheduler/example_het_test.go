package scheduler_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
)

// A heterogeneous job (sbatch -p cpu -n 16 : -p gpu --gres=gpu:4): one
// job ID with component offsets, each component its own job, all started
// together by backfill.
func ExampleScheduler_SubmitHet() {
	inv := gres.Inventory{}
	for i := range 4 {
		inv.Devices = append(inv.Devices, gres.Device{Index: i, Name: "gpu", Type: "h100", NUMA: -1, Socket: -1})
	}
	s, err := scheduler.New(scheduler.Config{
		Nodes: []scheduler.NodeConfig{
			{Name: "c1", CPUs: 32, MemoryMiB: 64 * 1024},
			{Name: "g1", CPUs: 32, MemoryMiB: 256 * 1024, Devices: inv},
		},
		Partitions: []scheduler.PartitionConfig{
			{Name: "cpu", Nodes: []string{"c1"}, Default: true, MaxTime: 24 * time.Hour},
			{Name: "gpu", Nodes: []string{"g1"}, MaxTime: 24 * time.Hour},
		},
		Backfill: &backfill.Config{}, // heterogeneous jobs are started by backfill
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	ids, err := s.SubmitHet(now, []scheduler.JobSpec{
		{User: "ann", Partition: "cpu", Tasks: 16, TimeLimit: time.Hour},
		{User: "ann", Partition: "gpu", GRESPerNode: []gres.Request{{Name: "gpu", Count: 4}}, TimeLimit: time.Hour},
	})
	if err != nil {
		panic(err)
	}
	cyc, err := s.Schedule(now)
	if err != nil {
		panic(err)
	}
	for _, st := range cyc.Starts {
		j, _ := s.Job(st.Job)
		fmt.Printf("job %d (%s) starts on %s at %s\n", j.ID, j.Label(), st.Alloc.Nodes[0].Name, j.StartTime.Format("15:04"))
	}
	// Cancelling the leader cancels the whole job.
	if err := s.Cancel(now.Add(time.Minute), ids[0]); err != nil {
		panic(err)
	}
	comps, _ := s.HetJob(ids[0])
	for _, c := range comps {
		fmt.Println(c.Label(), c.State)
	}
	// Output:
	// job 1 (1+0) starts on c1 at 09:00
	// job 2 (1+1) starts on g1 at 09:00
	// 1+0 CANCELLED
	// 1+1 CANCELLED
}
