package scheduler

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
)

// This file holds FuzzScheduler's random clusters: fzCluster is a small,
// printable description (a reproduction names the cluster as a Go literal
// of it) that fzConfig turns into a Config.

// fzEpoch is the time every fuzzed scenario starts at. It is not a whole
// minute, so that rounding to a resolution shows.
var fzEpoch = time.Date(2026, 1, 5, 8, 0, 17, 0, time.UTC)

// fzGPUTypes are the device types a fuzzed node's GPUs may have ("" is
// untyped); fzQOS the QOS of a cluster with a policy.
var (
	fzGPUTypes = []string{"a100", "h100", "", "a100_3g.20gb"}
	fzQOS      = []string{"normal", "high", "low"}
)

// fzNode describes one node: Sockets sockets of CoresPerSocket CPUs and
// GPUsPerSocket GPUs of type GPUType each (their affinity is their
// socket's CPUs); Links joins GPU pairs with NVLink; Shards adds a
// count-only GRES.
type fzNode struct {
	Sockets, CoresPerSocket, GPUsPerSocket int
	GPUType                                string
	Links                                  bool
	Shards                                 int64
	MemGiB                                 int64
	// Weight is the node's Weight (0: the default).
	Weight int64
	// Threads, when set, gives the node a layout of Sockets ×
	// CoresPerSocket × Threads CPUs (devices keep their core indices).
	Threads int
	// DevShards splits every GPU into that many shards (gres/shard
	// device shares, Inventory.Shares), and DevMPS gives every GPU that
	// many MPS shares; 0: none. The random generator leaves them 0 (its
	// stream stays as it was); tests set them on drawn clusters.
	DevShards, DevMPS int
}

// fzPart describes one partition; times are in seconds.
type fzPart struct {
	Nodes                []int
	MaxTime, DefaultTime int
	Tier                 int
	State                PartitionState
	DefMemPerCPU         int64
	QOS                  string
	Exclusive            bool
	MaxCPUsPerNode       int
	DefCPUPerGPU         int
	DefMemPerGPU         int64
	Billing              string
	PreemptMode          policy.PreemptMode
	GraceSeconds         int
	Default              bool
	// OverSubscribe (YES or FORCE, when not Exclusive) with
	// OverSubscribeCount (0: Slurm's 4).
	OverSubscribe      policy.OverSubscribe
	OverSubscribeCount int
}

// fzCluster is a whole fuzzed cluster.
type fzCluster struct {
	Nodes []fzNode
	Parts []fzPart
	// Backfill: 0 none, 1 conservative, 2 EASY; Resolution in seconds.
	Backfill, Resolution int
	Priority             bool
	// Policy turns on the QOS of fzQOS; PreemptType/PreemptMode as in
	// package policy; GraceSeconds is the low QOS's grace time.
	Policy       bool
	PreemptType  policy.PreemptType
	PreemptMode  policy.PreemptMode
	GraceSeconds int
	// MinJobAge, EstimateInterval and RequeueDelay in seconds.
	MinJobAge, EstimateInterval, RequeueDelay int
	// SuspendTime, in seconds, turns on power saving (0: off), with
	// ResumeTimeout in seconds (0: the default) and no rate limit when
	// NoRate is set.
	SuspendTime, ResumeTimeout int
	NoRate                     bool
	// Unit is Config.SelectTypeParameters.
	Unit CRUnit
}

// fzNodeName is the name of node i.
func fzNodeName(i int) string { return fmt.Sprintf("n%d", i) }

// fzInventory builds a node's devices.
func fzInventory(n fzNode) (gres.Inventory, error) {
	var inv gres.Inventory
	for s := range n.Sockets {
		cores, err := gres.CoreRange(s*n.CoresPerSocket, s*n.CoresPerSocket+n.CoresPerSocket-1)
		if err != nil {
			return inv, err
		}
		for range n.GPUsPerSocket {
			i := len(inv.Devices)
			inv.Devices = append(inv.Devices, gres.Device{
				Index: i, Name: "gpu", Type: n.GPUType, MemoryMiB: 40 * 1024,
				PCIBusID: fmt.Sprintf("0000:%02x:00.0", i+1), NUMA: s, Socket: s, Cores: cores,
			})
		}
	}
	if n.DevShards > 0 || n.DevMPS > 0 {
		for i := range inv.Devices {
			inv.Shares = append(inv.Shares, gres.DeviceShares{Device: i, Shards: n.DevShards, MPS: n.DevMPS})
		}
	}
	if n.Links {
		for i := 0; i+1 < len(inv.Devices); i += 2 {
			if inv.Devices[i].Socket != inv.Devices[i+1].Socket {
				continue
			}
			if err := inv.SetLink(i, i+1, gres.Link{NVLinks: 4, PCIe: gres.PCIeNODE}); err != nil {
				return inv, err
			}
		}
	}
	return inv, nil
}

// fzConfig builds the Config c describes.
func fzConfig(c fzCluster) (Config, error) {
	cfg := Config{SelectTypeParameters: c.Unit}
	for i, n := range c.Nodes {
		nc, err := fzNodeConfig(fzNodeName(i), n)
		if err != nil {
			return cfg, err
		}
		cfg.Nodes = append(cfg.Nodes, nc)
	}
	for i, p := range c.Parts {
		pc := PartitionConfig{
			Name: fmt.Sprintf("p%d", i), MaxTime: time.Duration(p.MaxTime) * time.Second,
			DefaultTime: time.Duration(p.DefaultTime) * time.Second, PriorityTier: p.Tier, State: p.State,
			DefMemPerCPU: p.DefMemPerCPU, Default: p.Default, MaxCPUsPerNode: p.MaxCPUsPerNode,
			DefCPUPerGPU: p.DefCPUPerGPU, DefMemPerGPU: p.DefMemPerGPU, TRESBillingWeights: p.Billing,
			PreemptMode: p.PreemptMode, GraceTime: time.Duration(p.GraceSeconds) * time.Second,
		}
		if c.Policy {
			pc.QOS = p.QOS
		}
		if p.Exclusive {
			pc.OverSubscribe = policy.OverSubscribeExclusive
		} else if p.OverSubscribe != 0 {
			pc.OverSubscribe, pc.OverSubscribeCount = p.OverSubscribe, p.OverSubscribeCount
		}
		for _, k := range p.Nodes {
			pc.Nodes = append(pc.Nodes, fzNodeName(k))
		}
		cfg.Partitions = append(cfg.Partitions, pc)
	}
	switch c.Backfill {
	case 1:
		cfg.Backfill = &backfill.Config{Mode: backfill.Conservative, Resolution: time.Duration(c.Resolution) * time.Second}
	case 2:
		cfg.Backfill = &backfill.Config{Mode: backfill.EASY, Resolution: time.Duration(c.Resolution) * time.Second}
	}
	if c.Priority {
		cfg.Priority = &PriorityConfig{
			Engine:      priority.Config{Weights: priority.Weights{Age: 1000, JobSize: 500, Partition: 1000, QOS: 2000}},
			QOSPriority: map[string]uint32{"normal": 10, "high": 100, "low": 0},
		}
	}
	if c.Policy {
		cfg.Policy = &policy.Config{
			QOS: []policy.QOS{
				{Name: "normal", Priority: 10},
				{Name: "high", Priority: 100, Preempt: []string{"low"}},
				{Name: "low", GraceTime: time.Duration(c.GraceSeconds) * time.Second},
			},
			PreemptType: c.PreemptType, PreemptMode: c.PreemptMode,
		}
		if c.PreemptType == policy.PreemptNone {
			cfg.Policy.PreemptMode = policy.PreemptModeCluster
		}
	}
	cfg.MinJobAge = time.Duration(c.MinJobAge) * time.Second
	cfg.EstimateInterval = time.Duration(c.EstimateInterval) * time.Second
	cfg.RequeueDelay = time.Duration(c.RequeueDelay) * time.Second
	if c.SuspendTime > 0 {
		cfg.Power = &PowerConfig{SuspendTime: time.Duration(c.SuspendTime) * time.Second,
			ResumeTimeout: time.Duration(c.ResumeTimeout) * time.Second, ResumeRate: 1, SuspendRate: 2}
		if c.NoRate {
			cfg.Power.ResumeRate, cfg.Power.SuspendRate = -1, -1
		}
	}
	return cfg, nil
}

// fzGenNode draws a node: 1–3 sockets with typed GPUs.
func fzGenNode(src *fzSource) fzNode {
	n := fzNode{
		Sockets: 1 + src.intn(3), CoresPerSocket: 2 + src.intn(7), GPUsPerSocket: src.intn(4),
		GPUType: fzGPUTypes[src.intn(len(fzGPUTypes))], Links: src.intn(2) == 0, MemGiB: int64(1 + src.intn(64)),
	}
	if src.intn(4) == 0 {
		n.Shards = int64(1 + src.intn(8))
	}
	if src.intn(3) == 0 {
		n.Weight = []int64{1, 5, 10, 100}[src.intn(4)]
	}
	return n
}

// fzNodeConfig is node i's config as fzConfig builds it.
func fzNodeConfig(name string, n fzNode) (NodeConfig, error) {
	inv, err := fzInventory(n)
	if err != nil {
		return NodeConfig{}, err
	}
	nc := NodeConfig{Name: name, CPUs: n.Sockets * n.CoresPerSocket, MemoryMiB: n.MemGiB * 1024, Devices: inv, Weight: n.Weight}
	if n.Threads > 0 {
		nc.CPUs *= n.Threads
		nc.Sockets, nc.CoresPerSocket, nc.ThreadsPerCore = n.Sockets, n.CoresPerSocket, n.Threads
	}
	if n.Shards > 0 && n.DevShards == 0 {
		nc.GRES = []gres.Request{{Name: "shard", Count: n.Shards}}
	}
	// Features for the generated constraints, derived from the layout.
	if n.Sockets%2 == 1 {
		nc.Features = append(nc.Features, "f0")
	}
	if n.CoresPerSocket%2 == 1 {
		nc.Features = append(nc.Features, "f1")
	}
	// Changeable features (reboot.go) on nodes of an even core count,
	// booted in f2.
	if n.CoresPerSocket%2 == 0 {
		nc.Features = append(nc.Features, "f2")
		nc.ChangeableFeatures = []string{"f2", "f3"}
	}
	return nc, nil
}

// fzGenCluster draws a cluster from src: 1–4 nodes of 1–3 sockets with
// typed GPUs, 1–3 partitions, and the optional backfill, priority and
// policy (QOS, preemption).
func fzGenCluster(src *fzSource) fzCluster {
	var c fzCluster
	nn := 1 + src.intn(4)
	for range nn {
		c.Nodes = append(c.Nodes, fzGenNode(src))
	}
	anyGPU := false
	for _, n := range c.Nodes {
		anyGPU = anyGPU || n.GPUsPerSocket > 0
	}
	np := 1 + src.intn(3)
	for i := range np {
		p := fzPart{Tier: src.intn(3)}
		if i > 0 || src.intn(3) == 0 { // the first partition usually spans every node
			for k := range nn {
				if src.intn(2) == 0 {
					p.Nodes = append(p.Nodes, k)
				}
			}
			if len(p.Nodes) == 0 {
				p.Nodes = []int{src.intn(nn)}
			}
		}
		switch src.intn(4) {
		case 0:
			p.MaxTime = 3600 * (1 + src.intn(24))
			p.DefaultTime = 60 * src.intn(p.MaxTime/60+1)
		case 1:
			p.DefaultTime = 37 + src.intn(7200)
		}
		if src.intn(8) == 0 {
			p.State = PartitionState(1 + src.intn(3))
		}
		if src.intn(3) == 0 {
			p.DefMemPerCPU = int64(src.intn(2048))
		}
		if src.intn(4) == 0 {
			p.QOS = fzQOS[src.intn(len(fzQOS))]
		}
		p.Exclusive = src.intn(8) == 0
		if src.intn(6) == 0 {
			p.MaxCPUsPerNode = 1 + src.intn(8)
		}
		if src.intn(5) == 0 {
			p.DefCPUPerGPU, p.DefMemPerGPU = src.intn(3), int64(src.intn(4096))
		}
		if src.intn(4) == 0 {
			p.Billing = []string{"CPU=1.0,Mem=0.25G", "CPU=1.0,GRES/gpu=2.0", "CPU=0.5"}[src.intn(3)]
			if !anyGPU && strings.Contains(p.Billing, "gpu") {
				p.Billing = "CPU=2"
			}
		}
		c.Parts = append(c.Parts, p)
	}
	c.Parts[src.intn(np)].Default = true
	c.Backfill = src.intn(3)
	if src.intn(2) == 0 {
		c.Resolution = []int{1, 7, 60, 300}[src.intn(4)]
	}
	c.Priority = src.intn(2) == 0
	c.Policy = src.intn(3) > 0
	if c.Policy {
		c.PreemptType = policy.PreemptType(src.intn(3))
		c.PreemptMode = []policy.PreemptMode{policy.PreemptCancel, policy.PreemptRequeue, policy.PreemptSuspend}[src.intn(3)]
		if c.PreemptMode == policy.PreemptSuspend && c.PreemptType == policy.PreemptQOS {
			c.PreemptMode = policy.PreemptRequeue // Slurm refuses SUSPEND with preempt/qos unless GANG
		}
		c.GraceSeconds = []int{0, 0, 30, 45}[src.intn(4)]
	}
	if src.intn(3) == 0 {
		c.MinJobAge = []int{1, 300}[src.intn(2)]
	}
	if src.intn(4) == 0 {
		c.EstimateInterval = []int{30, 600}[src.intn(2)]
	}
	if src.intn(5) == 0 {
		c.RequeueDelay = 120
	}
	if src.intn(3) == 0 {
		c.SuspendTime = []int{60, 600, 3600}[src.intn(3)]
		c.ResumeTimeout = []int{0, 30, 300}[src.intn(3)]
		c.NoRate = src.intn(2) == 0
	}
	// Drawn last, so that the draws above keep their meaning: the
	// allocation unit, threads per core, and CPU over-subscription.
	c.Unit = CRUnit(src.intn(3))
	for i := range c.Nodes {
		if src.intn(3) == 0 {
			c.Nodes[i].Threads = 2
		}
	}
	for i := range c.Parts {
		if src.intn(3) == 0 {
			c.Parts[i].OverSubscribe = []policy.OverSubscribe{policy.OverSubscribeYes, policy.OverSubscribeForce}[src.intn(2)]
			c.Parts[i].OverSubscribeCount = src.intn(4)
		}
	}
	return c
}
