package amd

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/internal/sysfs"
)

// KFD io-link types (the CRAT table's io-link interface types).
const (
	ioLinkXGMI = 11 // xGMI (Infinity Fabric) between GPUs
)

// PartitionLanes is the least number of xGMI lanes counted between two
// compute partitions of one GPU. They share the GPU's internal fabric,
// which is several times faster than any set of xGMI links between two
// GPUs, so the pair must rank above every inter-GPU pair; Discover uses
// this or one more than the best inter-GPU link of the node, whichever is
// larger.
const PartitionLanes = 16

// readLinks reads the xGMI io_links of KFD node g: far node → links.
// The number of parallel xGMI links of a pair is max_bandwidth divided by
// min_bandwidth: KFD reports one link's bandwidth as the minimum and the
// bandwidth of all the pair's links as the maximum, and a maximum of 0
// for peers of the hive that are not directly linked. A link without
// bandwidth counts as one link (with a warning).
func (d *Driver) readLinks(g kfdGPU, warnf func(string, ...any)) kfdLinks {
	dir := filepath.Join(d.nodesDir(), strconv.Itoa(g.node), "io_links")
	ids, _, err := sysfs.ReadNumbered(dir, "")
	if err != nil {
		return nil
	}
	out := kfdLinks{}
	for _, k := range ids {
		p, err := readProps(filepath.Join(dir, strconv.Itoa(k), "properties"))
		if err != nil {
			warnf("kfd node %d: io_link %d: %v; ignored", g.node, k, err)
			continue
		}
		if t, _ := p.get("type"); t != ioLinkXGMI {
			continue
		}
		to, ok := p.get("node_to")
		if from, _ := p.get("node_from"); !ok || from != uint64(g.node) || to > 1<<20 {
			warnf("kfd node %d: io_link %d: node_from %d node_to %d do not name this node and another; ignored", g.node, k, from, to)
			continue
		}
		lo, _ := p.get("min_bandwidth")
		hi, _ := p.get("max_bandwidth")
		n := 0
		switch {
		case lo > 0 && hi == 0:
			n = 0 // same hive, no direct link
		case lo > 0 && hi >= lo:
			n = int(min((hi+lo/2)/lo, gres.MaxNVLinks))
		default:
			warnf("kfd node %d: xGMI io_link %d to node %d: bandwidth %d..%d MB/s; counted as one link", g.node, k, to, lo, hi)
			n = 1
		}
		out[int(to)] = max(out[int(to)], n)
	}
	return out
}

// buildLinks fills the link matrix: xGMI links between GPUs, partitions
// of one GPU on one board with PartitionLanes, host-side levels from NUMA
// nodes and the PCI tree.
// nodes are every KFD node number: xGMI links to other nodes (the CPU of
// an MI300A, a GPU skipped for its own faults) are left out quietly, links
// to nodes that do not exist with a warning.
func (d *Driver) buildLinks(s *snapshot, gpus []kfdGPU, nodes []int, warnf func(string, ...any)) {
	n := len(gpus)
	if n == 0 {
		return
	}
	posOf := make(map[int]int, n)
	for pos, g := range gpus {
		posOf[g.node] = pos
	}
	s.links = make([]kfdLinks, n)
	lanes := make([][]int, n)
	for pos, g := range gpus {
		s.links[pos] = d.readLinks(g, warnf)
		lanes[pos] = make([]int, n)
	}
	best := 0
	for i := range n {
		for to, c := range s.links[i] {
			j, ok := posOf[to]
			_, exists := slices.BinarySearch(nodes, to)
			if !exists || ok && j == i {
				warnf("kfd node %d: xGMI link to node %d, which is not another node; ignored", gpus[i].node, to)
			}
			if !ok || j == i {
				continue
			}
			lanes[i][j], lanes[j][i] = max(lanes[i][j], c), max(lanes[j][i], c)
			if s.devs[i].phys != s.devs[j].phys {
				best = max(best, c)
			}
		}
	}
	intra := min(max(PartitionLanes, best+1), gres.MaxNVLinks)
	inv := &s.disc.Inventory
	for i := range n {
		for j := i + 1; j < n; j++ {
			l := gres.Link{NVLinks: lanes[i][j]}
			a, b := &s.phys[s.devs[i].phys], &s.phys[s.devs[j].phys]
			if a == b {
				l.NVLinks, l.PCIe = max(l.NVLinks, intra), gres.PCIeBoard
			} else {
				l.PCIe = hostLevel(a, b)
			}
			if l.NVLinks > 0 {
				l.Fabric = gres.FabricXGMI
			}
			_ = inv.SetLink(i, j, l) // cannot fail: i ≠ j, both in range
		}
	}
}

// hostLevel is the host-side level of two physical GPUs: SYS on
// different NUMA nodes; on one NUMA node NODE, or closer when their PCI
// paths meet below the host bridge: PHB when they share a host bridge
// only, PIX when each is at most two hops (a switch's downstream port and
// the GPU) below their last common bridge, PXB otherwise. With a NUMA
// node unknown, only a shared host bridge gives a level.
func hostLevel(a, b *physGPU) gres.PCIeLevel {
	if a.numa >= 0 && b.numa >= 0 && a.numa != b.numa {
		return gres.PCIeSYS
	}
	pl := pathLevel(a.realPath, b.realPath)
	if a.numa >= 0 && a.numa == b.numa {
		return max(pl, gres.PCIeNODE)
	}
	return pl
}

// pathLevel compares two device paths relative to /sys/devices
// ("pci0000:00/0000:00:01.1/…/0000:05:00.0").
func pathLevel(pa, pb string) gres.PCIeLevel {
	if pa == "" || pb == "" {
		return gres.PCIeUnknown
	}
	ea, eb := strings.Split(pa, "/"), strings.Split(pb, "/")
	if len(ea) < 2 || len(eb) < 2 || !strings.HasPrefix(ea[0], "pci") || ea[0] != eb[0] {
		return gres.PCIeUnknown
	}
	c := 0
	for c+1 < len(ea) && c+1 < len(eb) && ea[c+1] == eb[c+1] {
		c++
	}
	ra, rb := len(ea)-1-c, len(eb)-1-c
	switch {
	case ra == 0 || rb == 0:
		return gres.PCIeUnknown // one device below the other: not two GPUs
	case c == 0:
		return gres.PCIePHB
	case ra <= 2 && rb <= 2:
		return gres.PCIePIX
	}
	return gres.PCIePXB
}
