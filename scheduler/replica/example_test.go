package replica_test

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/replica"
)

// A one-replica group on an in-memory transport: submit a job, run a
// cycle through the log, take its decisions from the leader and
// acknowledge them by index.
func Example() {
	addr, trans := raft.NewInmemTransport("")
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
	rc.Logger = hclog.NewNullLogger()
	r, err := replica.New(replica.Config{
		ID: "r0",
		Scheduler: scheduler.Config{
			Nodes:      []scheduler.NodeConfig{{Name: "n1", CPUs: 8, MemoryMiB: 16384}},
			Partitions: []scheduler.PartitionConfig{{Name: "batch", Default: true}},
		},
		Raft:     rc,
		LogStore: raft.NewInmemStore(), StableStore: raft.NewInmemStore(),
		SnapshotStore: raft.NewInmemSnapshotStore(), Transport: trans,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Shutdown()
	if err := r.Bootstrap(raft.Server{ID: "r0", Address: addr}); err != nil {
		fmt.Println(err)
		return
	}
	for !r.IsLeader() {
		time.Sleep(5 * time.Millisecond)
	}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	sub, err := r.Propose(now, scheduler.SubmitEvent{Spec: scheduler.JobSpec{
		User: "ann", Account: "a", Tasks: 1, CPUsPerTask: 4, TimeLimit: time.Hour}})
	if err != nil {
		fmt.Println(err)
		return
	}
	cyc, err := r.Schedule(now.Add(time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	d := <-r.Deliveries()
	fmt.Println("submitted job", sub.Result.Job)
	fmt.Println("delivered under the cycle's index:", d.Index == cyc.Index)
	for _, st := range d.Cycle.Starts {
		fmt.Println("start job", st.Job, "on", st.Alloc.NodeNames())
	}
	if err := r.Ack(d.Index); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("undelivered after the ack:", r.Stats().Undelivered)
	// Output:
	// submitted job 1
	// delivered under the cycle's index: true
	// start job 1 on [n1]
	// undelivered after the ack: 0
}
