package scheduler_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

// Changeable features (node_features/helpers): a job asking for a MIG
// mode no free node has active gets an idle node rebooted into it, and
// starts once the node reports booted.
func ExampleScheduler_NodeRebooted() {
	cfg := scheduler.Config{Partitions: []scheduler.PartitionConfig{{Name: "gpu", Default: true}}, BootTime: 5 * time.Minute}
	for i, mode := range []string{"mig7", "mig1"} {
		cfg.Nodes = append(cfg.Nodes, scheduler.NodeConfig{Name: fmt.Sprintf("g%d", i), CPUs: 8, MemoryMiB: 1024,
			Features: []string{"ib", mode}, ChangeableFeatures: []string{"mig1", "mig7"}})
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		panic(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, _ := s.Submit(at, scheduler.JobSpec{User: "ann", Constraint: "mig7", Exclusive: true, TimeLimit: time.Hour})
	b, _ := s.Submit(at, scheduler.JobSpec{User: "bob", Constraint: "mig7&ib", Exclusive: true, TimeLimit: time.Hour})
	_, err = s.Submit(at, scheduler.JobSpec{User: "cy", Constraint: "mig7|mig1", TimeLimit: time.Hour})
	fmt.Println("OR of changeable features refused:", err != nil)
	c, _ := s.Schedule(at)
	for _, r := range c.Reboots {
		fmt.Println("reboot", r.Node, "for job", r.Job, "into", r.Features)
	}
	ja, _ := s.Job(a)
	jb, _ := s.Job(b)
	fmt.Println("ann", ja.State, ja.Alloc.NodeNames(), "(mig7 active there)")
	fmt.Println("bob", jb.State)

	up := at.Add(3 * time.Minute)
	if err := s.NodeRebooted(up, "g1"); err != nil {
		panic(err)
	}
	if _, err := s.Schedule(up); err != nil {
		panic(err)
	}
	jb, _ = s.Job(b)
	g1, _ := s.Node("g1")
	fmt.Println("bob", jb.State, jb.Alloc.NodeNames(), "g1 active:", g1.ActiveFeatures)
	// Output:
	// OR of changeable features refused: true
	// reboot g1 for job 2 into [ib mig7]
	// ann RUNNING [g0] (mig7 active there)
	// bob PENDING
	// bob RUNNING [g1] g1 active: [ib mig7]
}
