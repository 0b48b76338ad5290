package cgroup_test

import (
	"fmt"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/cgroup"
)

// Plan shows what Apply writes for a job holding GPUs 2 and 5 of an
// 8-GPU node, without touching the system. On a node, build the Enforcer
// with cgroup.New(cfg) and call Apply(ctx, a).
func ExampleConfig_Plan() {
	var gpus []gres.DeviceFile
	for i := range 8 {
		gpus = append(gpus, gres.DeviceFile{Path: fmt.Sprintf("/dev/nvidia%d", i), Kind: gres.CharDevice, Major: 195, Minor: int64(i)})
	}
	ctl := gres.DeviceFile{Path: "/dev/nvidiactl", Kind: gres.CharDevice, Major: 195, Minor: 255}
	cfg := cgroup.Config{Root: "/sys/fs/cgroup/sluice", ManagedDevices: gpus}

	cpus, _ := gres.ParseCoreSet("64-79")
	a := gres.Allocation{Job: "1234", CPUs: cpus, Mems: []int{1}, MemoryBytes: 64 << 30,
		Devices: []gres.DeviceFile{gpus[2], gpus[5], ctl}}
	p, err := cfg.Plan(a)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Dir)
	fmt.Println("cpuset.cpus =", p.CpusetCpus)
	fmt.Println("cpuset.mems =", p.CpusetMems)
	fmt.Println("memory.max  =", p.MemoryMax)
	fmt.Println("memory.swap.max =", p.MemorySwapMax)
	for _, r := range p.Devices {
		fmt.Println(r)
	}
	// Output:
	// /sys/fs/cgroup/sluice/job_1234
	// cpuset.cpus = 64-79
	// cpuset.mems = 1
	// memory.max  = 68719476736
	// memory.swap.max = 0
	// allow a *:* rwm
	// deny c 195:0 rwm
	// deny c 195:1 rwm
	// deny c 195:3 rwm
	// deny c 195:4 rwm
	// deny c 195:6 rwm
	// deny c 195:7 rwm
}
