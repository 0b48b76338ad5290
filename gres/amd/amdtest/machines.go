package amdtest

import "fmt"

// PCI device ids of the machines below.
const (
	DeviceMI300X = 0x74a1
	DeviceMI250X = 0x740c // MI250X and MI250 share it; they differ in CUs
)

// rasBlocks are the RAS blocks every fixture GPU reports.
var rasBlocks = []string{"umc", "gfx", "sdma", "mmhub", "xgmi_wafl"}

func mi300x(i, numa int) GPU {
	base := i * 0x20
	return GPU{
		DeviceID: DeviceMI300X, Bus: fmt.Sprintf("0000:%02x:00.0", base+5), NUMA: numa, CUs: 304,
		VRAMBytes: 192 << 30, UniqueID: 0x1c2a5f0e00000000 + uint64(i)*0x1111, ProductName: "AMD Instinct MI300X OAM",
		RootComplex: i, Switch: 0, RenderMinors: []int{128 + i},
		ComputePartition: "SPX", AvailablePartitions: "SPX, DPX, QPX, CPX", MemoryPartition: "NPS1",
		BusyPercent: 10 * i, VRAMUsedBytes: uint64(i) << 30, PowerMicroWatts: 150_000_000 + int64(i)*1_000_000,
		EnergyMicroJoules: -1, RAS: rasBlocks,
	}
}

// MI300XHive is an 8× MI300X node: two sockets of 64 logical CPUs (one
// NUMA node each), GPUs 0-3 on NUMA node 0 and 4-7 on node 1, each GPU on
// its own host bridge behind its own PCIe switch, and one xGMI hive in
// which every GPU has one xGMI link to each of the seven others.
func MI300XHive() Machine {
	m := Machine{Sockets: 2, NUMAPerSocket: 1, CPUsPerNUMA: 64, Hive: 0x6c3f2b7a91d40e55, LinkMBps: 64000, KFDDev: "235:0"}
	for i := range 8 {
		m.GPUs = append(m.GPUs, mi300x(i, i/4))
	}
	for a := range 8 {
		for b := a + 1; b < 8; b++ {
			m.XGMI = append(m.XGMI, Link{a, b, 1})
		}
	}
	return m
}

// MI250XNode is a 4× MI250X node (8 GCDs, each its own GPU): one socket
// in NPS4 mode (four NUMA nodes of 16 CPUs), package p (GCDs 2p and 2p+1)
// on NUMA node p behind one PCIe switch. The two GCDs of a package share
// four xGMI links; packages form a ring A-B-C-D-A in which each
// neighbouring pair of packages has one double and one single GCD link;
// the remaining GCD pairs reach each other only through other GCDs.
func MI250XNode() Machine {
	m := Machine{Sockets: 1, NUMAPerSocket: 4, CPUsPerNUMA: 16, Hive: 0x2d8e41c07a35f913, LinkMBps: 50000, KFDDev: "236:0"}
	for i := range 8 {
		p := i / 2
		m.GPUs = append(m.GPUs, GPU{
			DeviceID: DeviceMI250X, Bus: fmt.Sprintf("0000:%02x:00.0", p*0x20+3+i%2), NUMA: p, CUs: 110,
			VRAMBytes: 64 << 30, UniqueID: 0x51a0c3d200000000 + uint64(i)*0x2222,
			RootComplex: p, Switch: 0, RenderMinors: []int{128 + i},
			BusyPercent: 5 * i, VRAMUsedBytes: uint64(i) << 29, PowerMicroWatts: 90_000_000, EnergyMicroJoules: -1, RAS: rasBlocks,
		})
	}
	m.XGMI = []Link{
		{0, 1, 4}, {2, 3, 4}, {4, 5, 4}, {6, 7, 4}, // within packages
		{1, 2, 2}, {0, 3, 1}, // A-B
		{3, 4, 2}, {2, 5, 1}, // B-C
		{5, 6, 2}, {4, 7, 1}, // C-D
		{7, 0, 2}, {6, 1, 1}, // D-A
	}
	return m
}

// MI300XCPX is a node with two MI300X in one hive (one xGMI link between
// them), one socket and one NUMA node of 64 CPUs: GPU 0 in CPX mode (8
// compute partitions, each its own KFD node and render node: renderD128 on
// the PCI device, renderD130-136 on amdgpu_xcp platform devices, all
// sharing the GPU's unique_id), GPU 1 unpartitioned (SPX, renderD129).
func MI300XCPX() Machine {
	m := Machine{Sockets: 1, NUMAPerSocket: 1, CPUsPerNUMA: 64, Hive: 0x7e11d05c3a9b2f40, LinkMBps: 64000, KFDDev: "235:0",
		XGMI: []Link{{0, 1, 1}}}
	g0, g1 := mi300x(0, 0), mi300x(1, 0)
	g0.ComputePartition = "CPX"
	g0.RenderMinors = []int{128, 130, 131, 132, 133, 134, 135, 136}
	g1.RenderMinors = []int{129}
	m.GPUs = []GPU{g0, g1}
	return m
}
