package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/scheduler"
)

// ErrInvalidSynthetic reports a SyntheticConfig or cluster size that the
// generators reject.
var ErrInvalidSynthetic = errors.New("sim: invalid synthetic workload")

// Standard-scale defaults of the synthetic GPU workload (DESIGN.md).
const (
	// StandardNodes is the node count of the standard cluster.
	StandardNodes = 10000
	// StandardJobs is the job count of the standard simulation.
	StandardJobs = 100000
	// StandardSpan spreads the standard simulation's arrivals over a week:
	// an offered load of roughly two thirds of the standard cluster.
	StandardSpan = 7 * 24 * time.Hour
	// SyntheticUsers and SyntheticAccounts size the user population.
	SyntheticUsers    = 2000
	SyntheticAccounts = 200
	// SyntheticMaxNodes is the default largest multi-node job.
	SyntheticMaxNodes = 256
)

// SyntheticEpoch returns the fixed start time of synthetic workloads
// (Monday 5 January 2026, 08:00 UTC).
func SyntheticEpoch() time.Time { return time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC) }

// syntheticQOS returns the i-th QOS name of the standard scale.
func syntheticQOS(i int) string {
	return [...]string{"normal", "high", "low", "standby"}[i]
}

// SyntheticConfig shapes a synthetic GPU workload. Zero values mean the
// documented defaults.
type SyntheticConfig struct {
	// Jobs is how many jobs to generate.
	Jobs int
	// Seed makes the workload reproducible: the same config gives the
	// same jobs.
	Seed uint64
	// Span spreads submit times uniformly over [Start, Start+Span); zero
	// submits every job at Start.
	Span time.Duration
	// MaxNodes caps multi-node jobs (default 256). On a cluster smaller
	// than the standard one, keep it at most the size of the gb200
	// partition, or the largest gb200 jobs are rejected at submit.
	MaxNodes int
	// Users and Accounts size the population (defaults 2,000 and 200).
	Users, Accounts int
	// Start is the time of the first possible arrival (zero means
	// SyntheticEpoch).
	Start time.Time
	// NoProfiles leaves every job's Profile zero (unmeasured) instead of
	// drawing one (see NewSyntheticGenerator). The other fields of the
	// jobs are the same either way.
	NoProfiles bool
}

// Validate checks the configuration.
func (c SyntheticConfig) Validate() error {
	switch {
	case c.Jobs < 0:
		return fmt.Errorf("%w: Jobs %d is negative", ErrInvalidSynthetic, c.Jobs)
	case c.Span < 0 || c.Span > scheduler.MaxTimeLimit:
		return fmt.Errorf("%w: Span %v out of range [0, %v]", ErrInvalidSynthetic, c.Span, scheduler.MaxTimeLimit)
	case c.MaxNodes < 0 || c.MaxNodes > scheduler.MaxNodesPerJob:
		return fmt.Errorf("%w: MaxNodes %d out of range [0, %d]", ErrInvalidSynthetic, c.MaxNodes, scheduler.MaxNodesPerJob)
	case c.Users < 0:
		return fmt.Errorf("%w: Users %d is negative", ErrInvalidSynthetic, c.Users)
	case c.Accounts < 0:
		return fmt.Errorf("%w: Accounts %d is negative", ErrInvalidSynthetic, c.Accounts)
	}
	return nil
}

// SyntheticGenerator produces the jobs of a synthetic workload one by one,
// in generation order (not submit order: sort them, or use Synthetic,
// before replaying them with a Source).
type SyntheticGenerator struct {
	c   SyntheticConfig
	rng *rand.Rand
	// prof draws the utilisation profiles: a stream of its own, so that
	// the other fields are those of a generator without profiles.
	prof *rand.Rand
	i    int
}

// NewSyntheticGenerator validates c and returns its generator.
//
// The job mix is the standard one: 60 % take 1, 2 or 4 GPUs on one node
// (8 CPUs and 64 GiB per GPU), 25 % one whole node, 15 % 2–MaxNodes whole
// nodes (log-uniform); 70 % go to partition "batch", 20 % to "h100" and
// 10 % to "gb200" (4-GPU nodes). Run times are log-normal (median 40
// minutes, σ = 1.2, clamped to [1 min, 20 h]); user time limits are 1–10×
// the run time rounded up to 5 minutes and at most 24 h, and a job never
// runs past its limit. Users, accounts and QOS are drawn uniformly.
//
// Every job (all use GPUs) also gets a utilisation profile (Job.Profile),
// drawn from a second stream seeded by Seed, so that the other fields do
// not depend on it (SyntheticConfig.NoProfiles leaves it zero). Each job
// starts with a stall of 0–300 s (uniform: container start, data staging)
// and then is, with probability
//
//   - 70 %, compute-bound: busy at 60–95 % (uniform) for the rest;
//   - 20 %, input-bound (data loading starves it): 15–45 % for the rest;
//   - 7 %, with an idle tail: 60–95 % for the first 50–90 % of the rest,
//     then 0–5 % (waiting on a straggler, or not exiting when done);
//   - 3 %, hung: 60–95 % for the first 5–20 % of the rest, then 0 %
//     until its end (a hung collective holding its GPUs idle).
//
// The figures are a model for comparing policies, not a measurement.
func NewSyntheticGenerator(c SyntheticConfig) (*SyntheticGenerator, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.MaxNodes == 0 {
		c.MaxNodes = SyntheticMaxNodes
	}
	if c.Users == 0 {
		c.Users = SyntheticUsers
	}
	if c.Accounts == 0 {
		c.Accounts = SyntheticAccounts
	}
	if c.Start.IsZero() {
		c.Start = SyntheticEpoch()
	}
	return &SyntheticGenerator{c: c, rng: rand.New(rand.NewPCG(c.Seed, 0x5113ce)), prof: profileRand(c.Seed)}, nil
}

// Next returns the next job, or false after Jobs jobs.
func (g *SyntheticGenerator) Next() (Job, bool) {
	if g.i >= g.c.Jobs {
		return Job{}, false
	}
	c, rng, i := &g.c, g.rng, g.i
	g.i++
	u := rng.IntN(c.Users)
	spec := scheduler.JobSpec{
		Name:    fmt.Sprintf("job%d", i),
		User:    fmt.Sprintf("u%04d", u),
		Account: fmt.Sprintf("acct%03d", u%c.Accounts),
		QOS:     syntheticQOS(rng.IntN(4)),
	}
	part := rng.IntN(10)
	switch {
	case part < 7:
		spec.Partition = "batch"
	case part < 9:
		spec.Partition = "h100"
	default:
		spec.Partition = "gb200"
	}
	gpusPerNode := int64(8)
	if spec.Partition == "gb200" {
		gpusPerNode = 4
	}
	k := rng.IntN(100)
	switch {
	case k < 60: // 1, 2 or 4 GPUs on one node
		gpus := []int64{1, 2, 4}[rng.IntN(3)]
		spec.Nodes = 1 // -N1: Slurm would otherwise choose the node count for -n
		spec.Tasks = int(gpus)
		spec.CPUsPerTask = 8
		spec.MemPerNodeMiB = gpus * 64 * 1024
		spec.GRESPerNode = []gres.Request{{Name: "gpu", Count: min(gpus, gpusPerNode)}}
	case k < 85: // whole node
		spec.Exclusive = true
		spec.GRESPerNode = []gres.Request{{Name: "gpu", Count: gpusPerNode}}
	default: // 2..MaxNodes nodes, log-uniform
		n := int(math.Round(math.Exp(rng.Float64()*math.Log(float64(c.MaxNodes)/2)) * 2))
		spec.Nodes = min(max(n, 2), c.MaxNodes)
		spec.Exclusive = true
		spec.GRESPerNode = []gres.Request{{Name: "gpu", Count: gpusPerNode}}
	}
	run := time.Duration(math.Exp(rng.NormFloat64()*1.2+math.Log(2400))) * time.Second
	run = min(max(run, time.Minute), 20*time.Hour)
	limit := time.Duration(float64(run) * (1 + 9*rng.Float64()))
	limit = (limit + 5*time.Minute - 1) / (5 * time.Minute) * (5 * time.Minute)
	limit = min(limit, 24*time.Hour)
	spec.TimeLimit = limit
	var at time.Duration
	if c.Span > 0 {
		at = time.Duration(rng.Int64N(int64(c.Span)))
	}
	j := Job{Spec: spec, Submit: c.Start.Add(at), Runtime: min(run, limit)}
	if !c.NoProfiles {
		j.Profile = syntheticProfile(g.prof)
	}
	return j, true
}

// SyntheticProfiles returns a Source that gives every job of src without
// a profile one drawn from the synthetic workload's mix (see
// NewSyntheticGenerator), from a stream seeded by seed, in the order the
// jobs are read: the same source and seed give the same profiles. Jobs
// with a profile keep it. Use it to replay a trace that records no
// utilisation (an SWF trace on a machine with GPUs) with modelled ones.
func SyntheticProfiles(src Source, seed uint64) Source {
	return &drawProfiles{src: src, rng: profileRand(seed)}
}

// profileRand returns the profile stream of seed, the one both the
// generator and SyntheticProfiles draw from.
func profileRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9a0d9e7)) }

type drawProfiles struct {
	src Source
	rng *rand.Rand
}

// Next returns the next job, with a drawn profile when it has none.
func (d *drawProfiles) Next() (Job, bool, error) {
	j, ok, err := d.src.Next()
	if ok && !j.Profile.Known() {
		j.Profile = syntheticProfile(d.rng)
	}
	return j, ok, err
}

// syntheticProfile draws one profile of the mix NewSyntheticGenerator
// documents.
func syntheticProfile(rng *rand.Rand) Profile {
	uniform := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
	p := Profile{StallSeconds: uint32(rng.IntN(301))}
	switch k := rng.IntN(100); {
	case k < 70:
		p.Phases[0] = PhaseOf(1, uniform(60, 95))
	case k < 90:
		p.Phases[0] = PhaseOf(1, uniform(15, 45))
	case k < 97:
		p.Phases[0] = PhaseOf(uniform(0.5, 0.9), uniform(60, 95))
		p.Phases[1] = PhaseOf(1, uniform(0, 5))
	default:
		p.Phases[0] = PhaseOf(uniform(0.05, 0.2), uniform(60, 95))
		p.Phases[1] = PhaseOf(1, 0)
	}
	return p
}

// Synthetic returns the whole synthetic workload of c (see
// NewSyntheticGenerator for its mix), sorted by submit time — ties keep
// generation order — ready for a SliceSource.
func Synthetic(c SyntheticConfig) ([]Job, error) {
	g, err := NewSyntheticGenerator(c)
	if err != nil {
		return nil, err
	}
	out := make([]Job, 0, c.Jobs)
	for j, ok := g.Next(); ok; j, ok = g.Next() {
		out = append(out, j)
	}
	slices.SortStableFunc(out, func(a, b Job) int { return a.Submit.Compare(b.Submit) })
	return out, nil
}

// SyntheticFor returns the workload configuration that loads a
// SyntheticCluster of the given size about as the standard simulation
// (StandardJobs over StandardSpan) loads the standard cluster: multi-node
// jobs are capped at the cluster's gb200 partition (at most 256 nodes) and
// the arrival span is scaled by jobs/StandardJobs × StandardNodes/nodes
// and by the expected size of a job under that cap.
func SyntheticFor(nodes, jobs int, seed uint64) SyntheticConfig {
	maxNodes := min(SyntheticMaxNodes, gb200Nodes(nodes))
	// expected nodes per job: 60 % use 7/3 GPUs of 8 on average, 25 % one
	// node, 15 % a log-uniform count in [2, maxNodes]
	size := func(m int) float64 {
		multi := 2.0
		if m > 2 {
			multi = float64(m-2) / math.Log(float64(m)/2)
		}
		return 0.6*7/3/8 + 0.25 + 0.15*multi
	}
	span := float64(StandardSpan) * float64(jobs) / StandardJobs * StandardNodes / float64(max(nodes, 1)) *
		size(maxNodes) / size(SyntheticMaxNodes)
	return SyntheticConfig{
		Jobs: jobs, Seed: seed,
		Span:     time.Duration(min(span, float64(scheduler.MaxTimeLimit))),
		MaxNodes: maxNodes,
	}
}

func gb200Nodes(nodes int) int { return max(nodes*44/StandardNodes, 1) * 18 }

// SyntheticCluster returns the GPU cluster the synthetic workload is
// made for, with the given node count (StandardNodes gives the standard
// benchmark cluster of DESIGN.md). Every node has 2×64 cores and 2 TiB;
// about 7.9 % are GB200-style nodes (4 GPUs, in 18-node NVLink racks, at
// least one rack), half of the rest h100 SXM nodes (8 GPUs on NVSwitch)
// and the others a100 PCIe nodes (8 GPUs in NVLink pairs). Partitions:
// "batch" (all nodes, default, 1 h default and 48 h maximum time), "h100"
// (the h100 nodes, priority tier 2, 24 h) and "gb200" (the GB200 racks,
// 24 h). nodes must be at least 20. Finished jobs are forgotten after
// Slurm's default MinJobAge, PurgeAge (the simulator keeps its own
// results), so long replays run in bounded memory.
func SyntheticCluster(nodes int) (scheduler.Config, error) {
	if nodes < 20 || nodes > 1<<20 {
		return scheduler.Config{}, fmt.Errorf("%w: cluster of %d nodes out of range [20, 2^20]", ErrInvalidSynthetic, nodes)
	}
	gb := gb200Nodes(nodes)
	h100 := (nodes - gb) / 2
	cfg := scheduler.Config{Nodes: make([]scheduler.NodeConfig, 0, nodes)}
	var h100Names, gbNames []string
	h100Inv, a100Inv, gbInv := gpuserver.DGXH100(), gpuserver.PCIeA100Pairs(), gpuserver.GB200Node()
	for i := range nodes {
		nc := scheduler.NodeConfig{CPUs: 128, MemoryMiB: 2048 * 1024}
		switch {
		case i < h100:
			nc.Name = fmt.Sprintf("h%05d", i)
			nc.Devices = h100Inv
			h100Names = append(h100Names, nc.Name)
		case i < nodes-gb:
			nc.Name = fmt.Sprintf("a%05d", i)
			nc.Devices = a100Inv
		default:
			nc.Name = fmt.Sprintf("g%05d", i)
			nc.Devices = gbInv
			gbNames = append(gbNames, nc.Name)
		}
		cfg.Nodes = append(cfg.Nodes, nc)
	}
	cfg.Partitions = []scheduler.PartitionConfig{
		{Name: "batch", Default: true, MaxTime: 48 * time.Hour, DefaultTime: time.Hour},
		{Name: "h100", Nodes: h100Names, MaxTime: 24 * time.Hour, PriorityTier: 2},
		{Name: "gb200", Nodes: gbNames, MaxTime: 24 * time.Hour},
	}
	cfg.MinJobAge = PurgeAge
	return cfg, nil
}
