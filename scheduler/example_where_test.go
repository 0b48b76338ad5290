package scheduler_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

// Where a job may run: sbatch -w (NodeList), -x (Exclude) and -C
// (Constraint) over node features.
func ExampleJobSpec_where() {
	cfg := scheduler.Config{Partitions: []scheduler.PartitionConfig{{Name: "batch", Default: true}}}
	for i, f := range []string{"rack1", "rack1", "rack2", "rack2"} {
		cfg.Nodes = append(cfg.Nodes, scheduler.NodeConfig{Name: fmt.Sprintf("gpu%02d", i+1), CPUs: 8, MemoryMiB: 1024, Features: []string{f}})
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		panic(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, _ := s.Submit(at, scheduler.JobSpec{User: "ann", Nodes: 2, NodeList: "gpu03", Exclusive: true, TimeLimit: time.Hour})
	b, _ := s.Submit(at, scheduler.JobSpec{User: "bob", Nodes: 2, Constraint: "[rack1|rack2]", Exclude: []string{"gpu[03-04]"}, Exclusive: true, TimeLimit: time.Hour})
	_, err = s.Submit(at, scheduler.JobSpec{User: "cy", Constraint: "rack1&(", TimeLimit: time.Hour})
	fmt.Println("rejected:", err != nil)
	if _, err := s.Schedule(at); err != nil {
		panic(err)
	}
	for _, id := range []scheduler.JobID{a, b} {
		j, _ := s.Job(id)
		fmt.Println(j.Spec.User, j.State, j.Alloc.NodeNames())
	}
	// Output:
	// rejected: true
	// ann RUNNING [gpu01 gpu03]
	// bob PENDING []
}
