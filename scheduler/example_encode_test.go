package scheduler_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
)

// What json.Marshal writes for the scheduler's values: states and reasons
// by their Slurm names, TRES as TRES strings, durations in Slurm's time
// format, unset times left out. A submit event is encoded the same way, so
// a journal of events reads like the commands that made them.
func Example_json() {
	var inv gres.Inventory
	for i := range 4 {
		inv.Devices = append(inv.Devices, gres.Device{Index: i, Name: "gpu", Type: "h100", NUMA: -1, Socket: -1})
	}
	s, err := scheduler.New(scheduler.Config{
		Nodes:      []scheduler.NodeConfig{{Name: "n1", CPUs: 32, MemoryMiB: 256 << 10, Devices: inv}},
		Partitions: []scheduler.PartitionConfig{{Name: "gpu", MaxTime: 48 * time.Hour}},
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	spec := scheduler.JobSpec{User: "ann", CPUsPerTask: 8, MemPerNodeMiB: 16 << 10,
		GRESPerNode: []gres.Request{{Name: "gpu", Count: 2}}, TimeLimit: 36 * time.Hour}
	ev, _ := json.Marshal(scheduler.Entry{At: now, Event: scheduler.SubmitEvent{Spec: spec}})
	fmt.Println(string(ev))
	if _, err := s.Submit(now, spec); err != nil {
		panic(err)
	}
	cyc, err := s.Schedule(now)
	if err != nil {
		panic(err)
	}
	start, _ := json.Marshal(cyc.Starts[0])
	fmt.Println(string(start))
	job, _ := s.Job(1)
	b, _ := json.Marshal(job)
	var view struct{ State, TimeLimit, PerNode, StartTime string }
	_ = json.Unmarshal(b, &view)
	fmt.Printf("%+v\n", view)
	// Output:
	// {"at":"2026-12-01T10:00:00Z","kind":"submit","event":{"Spec":{"Name":"","User":"ann","Account":"","Partition":"","QOS":"","Nodes":0,"Tasks":0,"CPUsPerTask":8,"MemPerNodeMiB":16384,"GRESPerNode":["gpu:2"],"GRESPerTask":null,"GRESPerJob":null,"CPUsPerGPU":0,"MemPerGPUMiB":0,"GPUsPerSocket":0,"SocketsPerNode":0,"EnforceBinding":false,"Exclusive":false,"Requeue":"default","Switches":0,"Segment":0,"Reservation":"","Dependency":"","Nice":0,"NVLinkDomain":"any","TimeLimit":"1-12:00:00"}}}
	// {"Job":1,"Alloc":{"Billing":8,"Quality":1,"Nodes":[{"Node":0,"Name":"n1","CPUs":[0,1,2,3,4,5,6,7],"MemoryMiB":16384,"Devices":[0,1],"DeviceQuality":1,"TRES":"cpu=8,mem=16G,node=1,gres/gpu=2,gres/gpu:h100=2"}]},"Backfill":false,"TimeLimit":"1-12:00:00"}
	// {State:RUNNING TimeLimit:1-12:00:00 PerNode:cpu=8,mem=16G,node=1,gres/gpu=2 StartTime:2026-12-01T10:00:00Z}
}
