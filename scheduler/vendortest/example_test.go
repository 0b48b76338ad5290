package vendortest_test

import (
	"fmt"
	"os"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/vendortest"
)

// One node per vendor, each as its driver reports it, in one cluster:
// typed requests go to their vendor's node.
func ExampleAll() {
	dir, _ := os.MkdirTemp("", "vendortest")
	defer os.RemoveAll(dir)
	nodes, err := vendortest.All(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := scheduler.Config{Partitions: []scheduler.PartitionConfig{{Name: "gpu", Default: true}}}
	for _, n := range nodes {
		cfg.Nodes = append(cfg.Nodes, n.Config)
		d := n.Config.Devices
		fmt.Printf("%s: %d × %s, link 0-1 %v\n", n.Config.Name, len(d.Devices), n.Type, d.Link(0, 1).Fabric)
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	at := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	for _, typ := range []string{"max_1550_tile", "mi300x", "h100"} {
		_, _ = s.Submit(at, scheduler.JobSpec{GRESPerNode: []gres.Request{{Name: "gpu", Type: typ, Count: 2}}, TimeLimit: time.Hour})
	}
	cyc, _ := s.Schedule(at)
	for _, st := range cyc.Starts {
		fmt.Println("job", st.Job, "on", st.Alloc.Nodes[0].Name, "devices", st.Alloc.Nodes[0].Devices)
	}
	// Output:
	// nvidia-01: 8 × h100, link 0-1 nvlink
	// amd-01: 8 × mi300x, link 0-1 xgmi
	// intel-01: 16 × max_1550_tile, link 0-1 xelink
	// job 1 on intel-01 devices [0 1]
	// job 2 on amd-01 devices [0 1]
	// job 3 on nvidia-01 devices [0 1]
}
