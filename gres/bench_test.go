package gres_test

import (
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
)

func benchChoose(b *testing.B, inv gres.Inventory, used []int, req gres.DeviceRequest) {
	b.Helper()
	s, err := gres.NewNodeDevices(inv)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Allocate(used); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Choose(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChooseGPUs measures Choose on an 8-GPU node (the issue's
// target: under 2 µs) for each request size, on an idle node and on a
// fragmented one, with and without CPU binding.
func BenchmarkChooseGPUs(b *testing.B) {
	cores := gpuserver.SocketCores(1)
	for _, fx := range []struct {
		name string
		inv  gres.Inventory
	}{{"DGXH100", gpuserver.DGXH100()}, {"PCIeA100Pairs", gpuserver.PCIeA100Pairs()}} {
		for _, k := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("%s/idle/k=%d", fx.name, k), func(b *testing.B) {
				benchChoose(b, fx.inv, nil, gres.DeviceRequest{Name: "gpu", Count: k})
			})
		}
		for _, k := range []int{1, 2, 3} {
			b.Run(fmt.Sprintf("%s/used=0,2,5/k=%d", fx.name, k), func(b *testing.B) {
				benchChoose(b, fx.inv, []int{0, 2, 5}, gres.DeviceRequest{Name: "gpu", Count: k})
			})
		}
		b.Run(fmt.Sprintf("%s/idle/k=4/cores=socket1", fx.name), func(b *testing.B) {
			benchChoose(b, fx.inv, nil, gres.DeviceRequest{Name: "gpu", Count: 4, Cores: cores})
		})
		b.Run(fmt.Sprintf("%s/idle/k=2/enforce-binding", fx.name), func(b *testing.B) {
			benchChoose(b, fx.inv, nil, gres.DeviceRequest{Name: "gpu", Count: 2, Cores: cores, EnforceBinding: true})
		})
	}
}

// BenchmarkChooseGPUsLarge measures Choose on the 16-GPU DGX-2 (exact
// search) and the 72-GPU NVL72 domain (greedy + local search).
func BenchmarkChooseGPUsLarge(b *testing.B) {
	for _, fx := range []struct {
		name string
		inv  gres.Inventory
		used []int
	}{
		{"DGX2-16", gpuserver.DGX2(), nil},
		{"DGX2-16/used=0,3,9", gpuserver.DGX2(), []int{0, 3, 9}},
		{"NVL72", gpuserver.NVL72(), nil},
		{"NVL72/used=every5th", gpuserver.NVL72(), every(72, 5)},
	} {
		for _, k := range []int{2, 4, 8, 16, 36} {
			if k > len(fx.inv.Devices)-len(fx.used) {
				continue
			}
			b.Run(fmt.Sprintf("%s/k=%d", fx.name, k), func(b *testing.B) {
				benchChoose(b, fx.inv, fx.used, gres.DeviceRequest{Name: "gpu", Count: k})
			})
		}
	}
}

func every(n, step int) []int {
	var out []int
	for i := 0; i < n; i += step {
		out = append(out, i)
	}
	return out
}

func BenchmarkParseTRES(b *testing.B) {
	r := newRegistry(b)
	const s = "cpu=4,mem=16G,node=1,billing=10,gres/gpu=2,gres/gpu:h100=2,license/matlab=1"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ParseTRES(s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFormatTRES(b *testing.B) {
	r := newRegistry(b)
	v, err := r.ParseTRES("cpu=4,mem=16G,node=1,billing=10,gres/gpu=2,gres/gpu:h100=2,license/matlab=1")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.FormatTRES(v)
	}
}

func BenchmarkParseGRES(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gres.ParseGRES("gpu:h100:2,shard:4,mps:100"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRequestVector(b *testing.B) {
	r := newRegistry(b)
	reqs, err := gres.ParseGRES("gpu:h100:2,shard:4,mps:100")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.RequestVector(reqs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBillable(b *testing.B) {
	r := newRegistry(b)
	w, err := r.ParseBillingWeights("CPU=1.0,Mem=0.25G,GRES/gpu=2.0,gres/gpu:h100=3,license/matlab=5")
	if err != nil {
		b.Fatal(err)
	}
	job, err := r.ParseTRES("cpu=64,mem=512G,node=2,gres/gpu=8,gres/gpu:h100=8,license/matlab=1")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = w.Billable(job, gres.BillingMaxTRES)
	}
}

// BenchmarkNodeDevicesFree is the per-node filter a scheduler runs over
// every candidate node.
func BenchmarkNodeDevicesFree(b *testing.B) {
	s, err := gres.NewNodeDevices(gpuserver.DGXH100())
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Allocate([]int{1, 6}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if s.Free("gpu", "h100") != 6 {
			b.Fatal("wrong count")
		}
	}
}

func BenchmarkNodeDevicesAllocateRelease(b *testing.B) {
	s, err := gres.NewNodeDevices(gpuserver.DGXH100())
	if err != nil {
		b.Fatal(err)
	}
	idx := []int{2, 3, 5}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Allocate(idx); err != nil {
			b.Fatal(err)
		}
		if err := s.Release(idx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewNodeDevices(b *testing.B) {
	inv := gpuserver.DGXH100()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gres.NewNodeDevices(inv); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAttributeProcesses splits 8 GPUs' activity, 4 processes each
// from 2 jobs, per job: the agent's per-sample attribution cost.
func BenchmarkAttributeProcesses(b *testing.B) {
	var devs []gres.DeviceProcesses
	jobOf := map[int]string{}
	for i := range 8 {
		d := gres.DeviceProcesses{Index: i, Known: true}
		for k := range 4 {
			pid := 1000*i + k + 1
			d.Processes = append(d.Processes, gres.ProcessSample{PID: pid, SMUtil: 20, MemUtil: 5})
			jobOf[pid] = []string{"a", "b"}[k%2]
		}
		devs = append(devs, d)
	}
	lookup := func(pid int) (string, bool) { j, ok := jobOf[pid]; return j, ok }
	b.ReportAllocs()
	for b.Loop() {
		if s := gres.AttributeProcesses(devs, lookup); len(s) != 16 {
			b.Fatal(len(s))
		}
	}
}
