// Package clustertest builds the clusters and workloads Sluice's tests,
// benchmarks and examples share: small named clusters for unit tests and
// the seeded standard-scale cluster and workload of DESIGN.md
// ("Standard scale"). Everything here is deterministic for a given seed.
package clustertest

import (
	"time"

	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
)

// GiB is one gibibyte in MiB, the unit of memory in Sluice.
const GiB = 1024

// DGXNode returns one DGX-H100-like node: 2×56 cores, 2 TiB, 8 h100 GPUs
// connected all-to-all through NVSwitch.
func DGXNode(name string) scheduler.NodeConfig {
	return scheduler.NodeConfig{Name: name, CPUs: 112, MemoryMiB: 2048 * GiB, Devices: gpuserver.DGXH100()}
}

// DGX returns a one-node cluster (a DGX-H100-like server) with one
// partition "gpu".
func DGX() scheduler.Config {
	return scheduler.Config{
		Nodes:      []scheduler.NodeConfig{DGXNode("dgx01")},
		Partitions: []scheduler.PartitionConfig{{Name: "gpu", Default: true, MaxTime: 24 * time.Hour}},
	}
}

// Mixed4 returns a four-node cluster: two h100 nodes (NVSwitch, 8 GPUs
// each), two a100 PCIe nodes (NVLink pairs, 8 GPUs each), and two
// partitions: "gpu" over all nodes (default, 1 day max) and "h100" over the
// h100 nodes (priority tier 2, 4 hours max).
func Mixed4() scheduler.Config {
	return scheduler.Config{
		Nodes: []scheduler.NodeConfig{
			DGXNode("h100-01"),
			DGXNode("h100-02"),
			{Name: "a100-01", CPUs: 64, MemoryMiB: 512 * GiB, Devices: gpuserver.PCIeA100Pairs()},
			{Name: "a100-02", CPUs: 64, MemoryMiB: 512 * GiB, Devices: gpuserver.PCIeA100Pairs()},
		},
		Partitions: []scheduler.PartitionConfig{
			{Name: "gpu", Default: true, MaxTime: 24 * time.Hour, DefaultTime: time.Hour},
			{Name: "h100", Nodes: []string{"h100-01", "h100-02"}, MaxTime: 4 * time.Hour, PriorityTier: 2},
		},
	}
}

// Standard-scale shape (DESIGN.md): node counts per kind. GB200 nodes come
// in racks of 18 forming one NVLink domain.
const (
	StandardNodes    = sim.StandardNodes
	StandardGB200    = 44 * 18 // 792 nodes, 44 NVL racks
	StandardH100     = (StandardNodes - StandardGB200) / 2
	StandardA100     = StandardNodes - StandardGB200 - StandardH100
	StandardLeafSize = 32 // nodes per leaf switch
	StandardUsers    = sim.SyntheticUsers
	StandardAccounts = sim.SyntheticAccounts
)

// StandardCluster returns the standard benchmark cluster: 10,000 nodes of
// 2×64 cores and 2 TiB, h100 SXM nodes (8 GPUs, NVSwitch), a100 PCIe nodes
// (8 GPUs in NVLink pairs) and GB200-style nodes (4 GPUs, 18-node NVLink
// racks); partitions "batch" (all nodes, default, 2 days), "h100" (the h100
// nodes, tier 2, 1 day) and "gb200" (the GB200 racks, 1 day). It is
// sim.SyntheticCluster(StandardNodes) keeping finished jobs (MinJobAge 0).
func StandardCluster() scheduler.Config {
	cfg, err := sim.SyntheticCluster(StandardNodes)
	if err != nil {
		panic(err) // unreachable: StandardNodes is a valid cluster size
	}
	cfg.MinJobAge = 0
	return cfg
}

// QOSNames are the four QOS of the standard scale.
var QOSNames = [...]string{"normal", "high", "low", "standby"}

// WorkloadJob is one synthetic job: what the user asked for, and how long
// it really runs.
type WorkloadJob struct {
	Spec scheduler.JobSpec
	// Submit is the offset from the workload's start at which it arrives.
	Submit time.Duration
	// Runtime is how long it actually runs (≤ Spec.TimeLimit).
	Runtime time.Duration
}

// WorkloadConfig shapes a synthetic GPU workload.
type WorkloadConfig struct {
	// Jobs is how many jobs to generate.
	Jobs int
	// Seed makes the workload reproducible.
	Seed uint64
	// Span spreads submit times uniformly over [0, Span); zero submits all
	// at once.
	Span time.Duration
	// MaxNodes caps multi-node jobs (default 256).
	MaxNodes int
	// Users and Accounts size the population (defaults 2,000 and 200).
	Users, Accounts int
}

// Workload generates the standard job mix: 1/2/4-GPU single-node jobs,
// whole-node jobs and 2–MaxNodes-node jobs, log-normal run times (median
// about 40 minutes), and user time limits 1–10× the run time rounded up to
// 5 minutes. Jobs go to partitions batch (most), h100 and gb200. Jobs come
// in generation order (submit offsets are not sorted). It delegates to
// sim.NewSyntheticGenerator, the public generator, and returns nil for a
// configuration that generator rejects (negative sizes).
func Workload(c WorkloadConfig) []WorkloadJob {
	g, err := sim.NewSyntheticGenerator(sim.SyntheticConfig{
		Jobs: c.Jobs, Seed: c.Seed, Span: c.Span, MaxNodes: c.MaxNodes,
		Users: c.Users, Accounts: c.Accounts, Start: Epoch,
	})
	if err != nil {
		return nil
	}
	out := make([]WorkloadJob, 0, c.Jobs)
	for j, ok := g.Next(); ok; j, ok = g.Next() {
		out = append(out, WorkloadJob{Spec: j.Spec, Submit: j.Submit.Sub(Epoch), Runtime: j.Runtime})
	}
	return out
}

// Epoch is the fixed start time of every synthetic scenario
// (sim.SyntheticEpoch).
var Epoch = sim.SyntheticEpoch()

// StandardState returns a scheduler over the standard cluster with the
// standard load (see NewState): about running jobs running and pending
// queued. It returns the scheduler and the time the state is at.
func StandardState(running, pending int, seed uint64) (*scheduler.Scheduler, time.Time, error) {
	return NewState(StateOptions{Running: running, Pending: pending, Seed: seed})
}
