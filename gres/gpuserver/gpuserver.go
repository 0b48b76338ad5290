package gpuserver

import (
	"fmt"

	"github.com/sluicehq/sluice/gres"
)

// CoresPerSocket is the number of logical CPUs per socket in every
// inventory of this package.
const CoresPerSocket = 64

// SocketCores returns the CPUs of socket s in every inventory of this
// package: 64·s … 64·s+63. It is empty for a negative s or one whose CPUs
// would pass gres.MaxCoreID.
func SocketCores(s int) gres.CoreSet {
	if s < 0 || s > gres.MaxCoreID/CoresPerSocket {
		return gres.CoreSet{}
	}
	c, _ := gres.CoreRange(s*CoresPerSocket, s*CoresPerSocket+CoresPerSocket-1) // in range: checked above
	return c
}

// gpu returns a device on socket (and NUMA node) s.
func gpu(i int, model string, memMiB int64, bus string, s int) gres.Device {
	if bus == "" {
		bus = fmt.Sprintf("0000:%02x:00.0", i+1)
	}
	return gres.Device{
		Index:     i,
		Name:      "gpu",
		Type:      model,
		UUID:      fmt.Sprintf("GPU-%s-%04d-4000-8000-%012d", model, i, i),
		MemoryMiB: memMiB,
		PCIBusID:  bus,
		NUMA:      s,
		Socket:    s,
		Cores:     SocketCores(s),
	}
}

// gpus returns n devices of one model, perSocket per socket (and NUMA
// node), with the given bus ids (nil: gpu's default ids).
func gpus(n int, model string, memMiB int64, perSocket int, buses []string) []gres.Device {
	devs := make([]gres.Device, n)
	for i := range devs {
		bus := ""
		if buses != nil {
			bus = buses[i]
		}
		devs[i] = gpu(i, model, memMiB, bus, i/perSocket)
	}
	return devs
}

// pairOf and quadOf group GPUs by two and by four (PCIe switches and
// switch trees in hostLevel).
func pairOf(i int) int { return i / 2 }
func quadOf(i int) int { return i / 4 }

// build assembles an inventory from devices and a symmetric link
// function. (The package's tests check that every inventory is valid.)
func build(devs []gres.Device, link func(a, b *gres.Device) gres.Link) gres.Inventory {
	inv := gres.Inventory{Devices: devs}
	for i := range devs {
		for j := i + 1; j < len(devs); j++ {
			_ = inv.SetLink(i, j, link(&devs[i], &devs[j])) // cannot fail: i ≠ j, both in range
		}
	}
	return inv
}

// hostLevel is the PCIe level of two GPUs given their PCIe switch groups:
// same switch PIX, same switch tree PXB, same socket NODE, else SYS. A
// group of -1 means "own switch".
func hostLevel(a, b *gres.Device, sw, tree func(i int) int) gres.PCIeLevel {
	switch {
	case a.Socket != b.Socket:
		return gres.PCIeSYS
	case sw != nil && sw(a.Index) >= 0 && sw(a.Index) == sw(b.Index):
		return gres.PCIePIX
	case tree != nil && tree(a.Index) >= 0 && tree(a.Index) == tree(b.Index):
		return gres.PCIePXB
	}
	return gres.PCIeNODE
}

// DGXH100 is an NVIDIA DGX H100: 8 × H100 SXM5 80 GB, every GPU with 18
// NVLink 4 lanes into the NVSwitch fabric (all-to-all, every pair
// equivalent), GPUs 0-3 on socket/NUMA 0 and 4-7 on socket/NUMA 1. Each
// GPU sits behind its own PCIe switch, so host-side pairs are NODE within
// a socket and SYS across. Bus ids are the real machine's.
func DGXH100() gres.Inventory {
	buses := []string{"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0",
		"0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"}
	devs := gpus(8, "h100", 81920, 4, buses)
	return build(devs, func(a, b *gres.Device) gres.Link {
		return gres.Link{NVLinks: 18, NVSwitch: true, PCIe: hostLevel(a, b, nil, nil)}
	})
}

// DGXA100 is an NVIDIA DGX A100: 8 × A100 SXM4 40 GB, 12 NVLink 3 lanes
// each into six NVSwitches (all-to-all). GPUs are in PCIe pairs (0,1),
// (2,3), (4,5), (6,7) behind a two-level switch (PXB); GPUs 0-3 are on
// socket 0 and 4-7 on socket 1. Simplified: the real machine runs NPS4
// (GPU pairs on NUMA 3, 1, 7, 5); here each socket is one NUMA node.
func DGXA100() gres.Inventory {
	buses := []string{"0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0",
		"0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0"}
	devs := gpus(8, "a100", 40960, 4, buses)
	return build(devs, func(a, b *gres.Device) gres.Link {
		return gres.Link{NVLinks: 12, NVSwitch: true, PCIe: hostLevel(a, b, nil, pairOf)}
	})
}

// PCIeA100Pairs is an 8 × A100 PCIe 80 GB server with NVLink bridges
// joining GPUs in pairs (0,1), (2,3), (4,5), (6,7), 12 lanes per pair (three
// bridges) and no NVLink between pairs. Each bridged pair shares a PCIe
// switch (PIX); the two switches of a socket share an upstream switch
// (PXB); GPUs 0-3 are on socket/NUMA 0, 4-7 on socket/NUMA 1 (SYS across).
func PCIeA100Pairs() gres.Inventory {
	devs := gpus(8, "a100", 81920, 4, nil)
	return build(devs, func(a, b *gres.Device) gres.Link {
		l := gres.Link{PCIe: hostLevel(a, b, pairOf, quadOf)}
		if a.Index/2 == b.Index/2 {
			l.NVLinks = 12
		}
		return l
	})
}

// GB200Node is one compute tray of a GB200 NVL72 rack: two Grace CPUs
// (sockets/NUMA 0 and 1), each with two B200 GPUs (0,1 on socket 0; 2,3 on
// socket 1), all four with 18 NVLink 5 lanes into the rack's NVSwitch
// fabric. Host side: NODE within a Grace, SYS across. Memory 186 GB HBM3e
// (190464 MiB). Grace has 72 cores; the inventory keeps 64 per socket like
// every other one here.
func GB200Node() gres.Inventory {
	devs := gpus(4, "gb200", 190464, 2, nil)
	return build(devs, func(a, b *gres.Device) gres.Link {
		return gres.Link{NVLinks: 18, NVSwitch: true, PCIe: hostLevel(a, b, nil, nil)}
	})
}

// PCIeTwoNUMA is an 8 × L40S 48 GB PCIe server with no NVLink at all: GPUs
// in PCIe-switch pairs (0,1), (2,3), (4,5), (6,7) (PIX), pairs of a socket
// only meeting at the host (NODE), GPUs 0-3 on socket/NUMA 0 and 4-7 on
// socket/NUMA 1 (SYS across). Placement here is decided by PCIe and CPU
// affinity alone.
func PCIeTwoNUMA() gres.Inventory {
	devs := gpus(8, "l40s", 49152, 4, nil)
	return build(devs, func(a, b *gres.Device) gres.Link {
		return gres.Link{PCIe: hostLevel(a, b, pairOf, nil)}
	})
}

// TwoQuads is an 8 × A100 SXM4 80 GB server built from two 4-GPU HGX
// boards: GPUs 0-3 and 4-7 each form an all-to-all island with 4 direct
// NVLink lanes per pair, and the islands meet only over PCIe. Island 0 is
// on socket/NUMA 0, island 1 on socket/NUMA 1; within an island GPUs are in
// PCIe-switch pairs (PIX). It shows the cost of stranding an island.
func TwoQuads() gres.Inventory {
	devs := gpus(8, "a100", 81920, 4, nil)
	return build(devs, func(a, b *gres.Device) gres.Link {
		l := gres.Link{PCIe: hostLevel(a, b, pairOf, nil)}
		if a.Index/4 == b.Index/4 {
			l.NVLinks = 4
		}
		return l
	})
}

// DGX2 is an NVIDIA DGX-2: 16 × V100 SXM3 32 GB, 6 NVLink 2 lanes each
// into twelve NVSwitches (all-to-all). GPUs 0-7 are on socket/NUMA 0 and
// 8-15 on socket/NUMA 1; host side they sit in PCIe-switch pairs (PIX)
// under per-quad switch trees (PXB).
func DGX2() gres.Inventory {
	devs := gpus(16, "v100", 32768, 8, nil)
	return build(devs, func(a, b *gres.Device) gres.Link {
		return gres.Link{NVLinks: 6, NVSwitch: true, PCIe: hostLevel(a, b, pairOf, quadOf)}
	})
}

// NVL72 is a whole GB200 NVL72 NVLink domain seen as one 72-GPU inventory
// (for benchmarks of large domains): 18 trays of GB200Node, tray t holding
// GPUs 4t … 4t+3 on sockets 2t and 2t+1; all 72 GPUs on one NVSwitch
// fabric with 18 lanes each.
func NVL72() gres.Inventory {
	devs := make([]gres.Device, 72)
	for i := range devs {
		devs[i] = gpu(i, "gb200", 190464, fmt.Sprintf("%04x:01:00.0", i), i/2)
	}
	return build(devs, func(a, b *gres.Device) gres.Link {
		return gres.Link{NVLinks: 18, NVSwitch: true, PCIe: hostLevel(a, b, nil, nil)}
	})
}
