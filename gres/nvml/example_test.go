//go:build cgo

package nvml_test

import (
	"context"
	"fmt"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/nvml"
	"github.com/sluicehq/sluice/gres/nvml/nvmltest"
)

// Discover a (mocked) DGX H100 and pick the best two GPUs for a job on
// socket 1. On a real node use nvml.Open(nvml.Options{}) instead of New.
func ExampleDriver_Discover() {
	srv := nvmltest.DGXH100() // go-nvml's mock with NVLink, topology, NUMA filled in
	d, err := nvml.New(srv, nvml.Options{SysfsRoot: "/nonexistent", ProcRoot: "/nonexistent"})
	if err != nil {
		panic(err)
	}
	if err := d.Init(); err != nil { // ErrLibraryNotFound on a machine without the driver
		fmt.Println(err)
		return
	}
	defer d.Shutdown()
	disc, err := d.Discover(context.Background())
	if err != nil {
		panic(err)
	}
	inv := disc.Inventory
	fmt.Println(disc.Driver)
	fmt.Printf("%d × %s:%s, %d MiB, GPU 0 on NUMA node %d\n", len(inv.Devices), inv.Devices[0].Name, inv.Devices[0].Type, inv.Devices[0].MemoryMiB, inv.Devices[0].NUMA)
	l := inv.Link(0, 7)
	fmt.Printf("GPU 0 ↔ GPU 7: %d NVLink lanes, NVSwitch %v, host path %v\n", l.NVLinks, l.NVSwitch, l.PCIe)

	nd, _ := gres.NewNodeDevices(inv)
	socket1, _ := gres.CoreRange(64, 127)
	p, _ := nd.Choose(gres.DeviceRequest{Name: "gpu", Count: 2, Cores: socket1})
	files, _ := disc.FilesFor(p.Devices)
	fmt.Println("chosen:", p.Devices)
	for _, f := range files {
		fmt.Println(" ", f)
	}
	// Output:
	// nvml driver 550.54.15 CUDA 12.4
	// 8 × gpu:h100, 81920 MiB, GPU 0 on NUMA node 0
	// GPU 0 ↔ GPU 7: 18 NVLink lanes, NVSwitch true, host path SYS
	// chosen: [4 5]
	//   c 195:4 /dev/nvidia4
	//   c 195:5 /dev/nvidia5
	//   c 195:255 /dev/nvidiactl
}

// Watch health: an XID 79 (GPU fallen off the bus) makes GPU 3
// unavailable; the node stays usable with the other seven.
func ExampleDriver_PollHealth() {
	srv := nvmltest.DGXH100()
	d, _ := nvml.New(srv, nvml.Options{SysfsRoot: "/nonexistent", ProcRoot: "/nonexistent"})
	if err := d.Init(); err != nil {
		panic(err)
	}
	defer d.Shutdown()
	disc, _ := d.Discover(context.Background())
	nd, _ := gres.NewNodeDevices(disc.Inventory)

	srv.InjectXID(3, 79)
	srv.InjectXID(5, 13) // an application error: ignored
	evs, _ := d.PollHealth(context.Background(), 100*time.Millisecond)
	for _, ev := range evs {
		fmt.Printf("gpu %d healthy=%v: %s\n", ev.Index, ev.Healthy, ev.Reason)
	}
	sum, _ := gres.ApplyHealth(nd, map[int]string{}, evs)
	fmt.Printf("%d of %d healthy, drain=%v (%s)\n", sum.Healthy, sum.Total, sum.Drain, sum.Reason)
	// Output:
	// gpu 3 healthy=false: XID 79
	// 7 of 8 healthy, drain=false (gpu 3: XID 79)
}

// ExampleDriver_SampleProcesses attributes a shared GPU's activity to the
// processes that ran on it, on the mock: an agent then maps each PID to
// the job whose cgroup holds it.
func ExampleDriver_SampleProcesses() {
	srv := nvmltest.DGXH100()
	srv.SetTelemetry(2, nvmltest.Telemetry{Processes: []gonvml.ProcessUtilizationSample{
		{Pid: 4242, TimeStamp: 1_700_000_000_000_000, SmUtil: 55, MemUtil: 20},
		{Pid: 4343, TimeStamp: 1_700_000_000_000_000, SmUtil: 30, MemUtil: 5},
	}})
	d, _ := nvml.New(srv, nvml.Options{SysfsRoot: "/nonexistent", ProcRoot: "/nonexistent"})
	if err := d.Init(); err != nil {
		panic(err)
	}
	defer d.Shutdown()
	since := time.Unix(1_699_999_990, 0) // the agent's previous call
	devs, err := d.SampleProcesses(context.Background(), since)
	if err != nil {
		panic(err)
	}
	for _, p := range devs[2].Processes {
		fmt.Printf("gpu %d: pid %d SM %.0f%% memory %.0f%%\n", devs[2].Index, p.PID, p.SMUtil, p.MemUtil)
	}
	fmt.Printf("gpu 0: known=%v, %d processes\n", devs[0].Known, len(devs[0].Processes))
	// Output:
	// gpu 2: pid 4242 SM 55% memory 20%
	// gpu 2: pid 4343 SM 30% memory 5%
	// gpu 0: known=true, 0 processes
}

// ExampleDriver_SampleWindows shows utilisation averaged over the samples
// NVML buffered since the previous Sample, and the instant rate when the
// GPU took none since.
func ExampleDriver_SampleWindows() {
	srv := nvmltest.DGXH100()
	srv.SetTelemetry(0, nvmltest.Telemetry{GPUPercent: 5, UtilizationSamples: []nvmltest.UtilizationSample{
		{Micros: 1_000_000, Percent: 90}, {Micros: 1_166_666, Percent: 70}, {Micros: 1_333_333, Percent: 80},
	}})
	d, _ := nvml.New(srv, nvml.Options{SysfsRoot: "/nonexistent", ProcRoot: "/nonexistent"})
	if err := d.Init(); err != nil {
		panic(err)
	}
	defer d.Shutdown()
	for range 2 {
		s, w, err := d.SampleWindows(context.Background())
		if err != nil {
			panic(err)
		}
		fmt.Printf("gpu 0: %.0f%% (%s, %d samples)\n", s[0].Utilization, w[0].Source, w[0].Samples)
	}
	// Output:
	// gpu 0: 80% (interval, 3 samples)
	// gpu 0: 5% (instant, 0 samples)
}
