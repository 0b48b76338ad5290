package gres_test

import (
	"fmt"

	"github.com/sluicehq/sluice/gres"
)

func ExampleRegistry_ParseTRES() {
	r, _ := gres.NewRegistry("gres/gpu:h100")
	v, err := r.ParseTRES("Mem=16384,cpu=4,gres/gpu:h100=2,gres/gpu=2")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.FormatTRES(v))

	_, err = r.ParseTRES("cpu=4,gres/gpu:a100=1")
	fmt.Println(err)
	// Output:
	// cpu=4,mem=16G,gres/gpu=2,gres/gpu:h100=2
	// TRES "cpu=4,gres/gpu:a100=1": token "gres/gpu:a100=1" at offset 6: unknown TRES: "gres/gpu:a100" is not registered
}

func ExampleParseGRES() {
	r, _ := gres.NewRegistry("gres/gpu:h100", "gres/shard")
	reqs, _ := gres.ParseGRES("shard:4,gpu:h100:2")
	fmt.Println(gres.FormatGRES(reqs))
	v, _ := r.RequestVector(reqs)
	fmt.Println(r.FormatTRES(v))
	// Output:
	// gpu:h100:2,shard:4
	// gres/gpu=2,gres/gpu:h100=2,gres/shard=4
}

func ExampleBillingWeights_Billable() {
	r, _ := gres.NewRegistry("gres/gpu")
	w, _ := r.ParseBillingWeights("CPU=1.0,Mem=0.25G,GRES/gpu=2.0")
	job, _ := r.ParseTRES("cpu=16,mem=64G,gres/gpu=4")
	fmt.Println(w.Billable(job, gres.BillingSum))     // 16 + 16 + 8
	fmt.Println(w.Billable(job, gres.BillingMaxTRES)) // max(16, 16, 8)
	// Output:
	// 40
	// 16
}

func ExampleNodeDevices_Choose() {
	// Four GPUs: 0-1 and 2-3 joined by NVLink bridges, 0-1 on socket 0
	// (cores 0-7), 2-3 on socket 1 (cores 8-15).
	s0, _ := gres.CoreRange(0, 7)
	s1, _ := gres.CoreRange(8, 15)
	inv := gres.Inventory{}
	for i := range 4 {
		cores, sock := s0, 0
		if i >= 2 {
			cores, sock = s1, 1
		}
		inv.Devices = append(inv.Devices, gres.Device{Index: i, Name: "gpu", Type: "a100", NUMA: sock, Socket: sock, Cores: cores})
	}
	_ = inv.SetLink(0, 1, gres.Link{NVLinks: 12, PCIe: gres.PCIePIX})
	_ = inv.SetLink(2, 3, gres.Link{NVLinks: 12, PCIe: gres.PCIePIX})
	for _, p := range [][2]int{{0, 2}, {0, 3}, {1, 2}, {1, 3}} {
		_ = inv.SetLink(p[0], p[1], gres.Link{PCIe: gres.PCIeSYS})
	}
	node, err := gres.NewNodeDevices(inv)
	if err != nil {
		fmt.Println(err)
		return
	}

	p, _ := node.Choose(gres.DeviceRequest{Name: "gpu", Count: 2, Cores: s1})
	fmt.Println("2 GPUs near cores 8-15:", p.Devices, "NVLink lanes:", p.Score.NVLink)
	_ = node.Allocate(p.Devices)

	_ = node.Allocate([]int{0})
	p, _ = node.Choose(gres.DeviceRequest{Name: "gpu", Count: 1})
	fmt.Println("1 GPU:", p.Devices)

	_, err = node.Choose(gres.DeviceRequest{Name: "gpu", Count: 2})
	fmt.Println(err)
	// Output:
	// 2 GPUs near cores 8-15: [2 3] NVLink lanes: 12
	// 1 GPU: [1]
	// insufficient devices: want 2 gpu, 1 eligible of 1 free
}

// AttributeProcesses splits a shared GPU's activity among the jobs whose
// cgroups hold its processes: the per-process readings come from a
// ProcessSampler (gres/nvml), the PID-to-job map from the jobs' cgroups
// (gres/cgroup Enforcer.PIDs).
func ExampleAttributeProcesses() {
	devs := []gres.DeviceProcesses{{Index: 3, UUID: "GPU-3", Known: true, Processes: []gres.ProcessSample{
		{PID: 4100, SMUtil: 35, MemUtil: 12}, {PID: 4101, SMUtil: 20, MemUtil: 3}, {PID: 5200, SMUtil: 40, MemUtil: 30},
	}}}
	jobOfPID := map[int]string{4100: "1001", 4101: "1001", 5200: "1002"}
	for _, s := range gres.AttributeProcesses(devs, func(pid int) (string, bool) { j, ok := jobOfPID[pid]; return j, ok }) {
		fmt.Printf("job %s on gpu %d: SM %.0f%%, memory %.0f%%, processes %d\n", s.Job, s.Index, s.SMUtil, s.MemUtil, s.Processes)
	}
	// Output:
	// job 1001 on gpu 3: SM 55%, memory 15%, processes 2
	// job 1002 on gpu 3: SM 40%, memory 30%, processes 1
}
