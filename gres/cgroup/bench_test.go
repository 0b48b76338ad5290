package cgroup

import (
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/gres"
)

// BenchmarkPlan plans a 2-GPU job on an 8-GPU node (validation, CPU and
// NUMA formatting, device rules).
func BenchmarkPlan(b *testing.B) {
	var gpus []gres.DeviceFile
	for i := range 8 {
		gpus = append(gpus, gres.DeviceFile{Path: fmt.Sprintf("/dev/nvidia%d", i), Kind: gres.CharDevice, Major: 195, Minor: int64(i)})
	}
	cfg := Config{Root: "/sys/fs/cgroup/sluice", ManagedDevices: gpus}
	cpus, _ := gres.CoreRange(64, 79)
	a := gres.Allocation{Job: "1234", CPUs: cpus, Mems: []int{1}, MemoryBytes: 64 << 30, Devices: gpus[2:4]}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cfg.Plan(a); err != nil {
			b.Fatal(err)
		}
	}
}
