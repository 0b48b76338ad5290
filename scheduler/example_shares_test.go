package scheduler_test

import (
	"fmt"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
)

// ExampleFabricDomains groups GB200 trays into multi-node NVLink domains
// by the fabric clique their GPUs report (the NVML driver fills
// gres.Inventory.Fabric); New uses these domains when the topology
// configures none.
func ExampleFabricDomains() {
	var nodes []scheduler.NodeConfig
	for i, clique := range []uint32{1, 1, 2, 0} {
		inv := gpuserver.GB200Node()
		if clique != 0 {
			inv.Fabric = gres.NVLinkFabric{ClusterUUID: "abcd0000-0000-0000-0000-000000000001", CliqueID: clique}
		}
		nodes = append(nodes, scheduler.NodeConfig{Name: fmt.Sprintf("tray%d", i), CPUs: 128, MemoryMiB: 1 << 20, Devices: inv})
	}
	for _, d := range scheduler.FabricDomains(nodes) {
		fmt.Println(d.Name, d.Nodes)
	}
	// Output:
	// abcd0000-0000-0000-0000-000000000001/1 [tray0 tray1]
	// abcd0000-0000-0000-0000-000000000001/2 [tray2]
}

// Example_sharedGPU shares two GPUs of a DGX between jobs with
// gres/shard (gres.conf "Name=shard Count=8 File=/dev/nvidia[0-1]"): two
// shard:2 jobs run on GPU 0 together, and GPU 0 is no longer free whole.
func Example_sharedGPU() {
	cfg := clustertest.DGX()
	cfg.Nodes[0].Devices.Shares, _ = gres.ParseSharesConf("Name=shard Count=8 File=/dev/nvidia[0-1]")
	s, _ := scheduler.New(cfg)
	for range 2 {
		_, _ = s.Submit(clustertest.Epoch, scheduler.JobSpec{GRESPerNode: []gres.Request{{Name: "shard", Count: 2}}, CPUsPerTask: 1})
	}
	cyc, _ := s.Schedule(clustertest.Epoch)
	for _, st := range cyc.Starts {
		j, _ := s.Job(st.Job)
		fmt.Println("job", j.ID, j.Alloc.Nodes[0].Shares, s.Registry().FormatTRES(j.Alloc.Nodes[0].TRES))
	}
	info, _ := s.Node("dgx01")
	fmt.Println("free devices:", info.FreeDevices)
	// Output:
	// job 1 [shard:2@0] cpu=1,node=1,gres/shard=2
	// job 2 [shard:2@0] cpu=1,node=1,gres/shard=2
	// free devices: [1 2 3 4 5 6 7]
}
