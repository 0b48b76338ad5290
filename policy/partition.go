package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gres"
)

// OverSubscribe is a partition's node-sharing mode (slurm.conf
// OverSubscribe=).
type OverSubscribe uint8

// Over-subscription modes.
const (
	// OverSubscribeNo (the zero value, Slurm's default): nodes may be
	// shared by jobs at the level of individual CPUs, memory and GRES, but
	// no resource is given to two jobs.
	OverSubscribeNo OverSubscribe = iota
	// OverSubscribeExclusive: every job gets whole nodes (as if each asked
	// --exclusive).
	OverSubscribeExclusive
	// OverSubscribeYes: jobs that ask (--oversubscribe) may share
	// resources, up to OverSubscribeCount jobs per resource.
	OverSubscribeYes
	// OverSubscribeForce: every job may share resources, up to
	// OverSubscribeCount jobs per resource.
	OverSubscribeForce
)

var overSubscribeNames = [...]string{"NO", "EXCLUSIVE", "YES", "FORCE"}

// String returns the Slurm spelling.
func (o OverSubscribe) String() string { return enumString(o, overSubscribeNames[:], "OverSubscribe") }

// ParseOverSubscribe parses "NO", "EXCLUSIVE", "YES[:n]" or "FORCE[:n]"
// (case-insensitive) and returns the mode and the per-resource job count
// (Slurm's defaults: 4 for YES and FORCE, 1 otherwise). Errors wrap
// ErrSyntax.
func ParseOverSubscribe(s string) (OverSubscribe, int, error) {
	name, cnt, hasCnt := strings.Cut(strings.TrimSpace(s), ":")
	for i, n := range overSubscribeNames {
		if !strings.EqualFold(name, n) {
			continue
		}
		mode := OverSubscribe(i)
		if mode == OverSubscribeNo || mode == OverSubscribeExclusive {
			if hasCnt {
				return 0, 0, fmt.Errorf("%w: OverSubscribe %q: %s takes no count", ErrSyntax, s, n)
			}
			return mode, 1, nil
		}
		if !hasCnt {
			return mode, 4, nil
		}
		c, err := strconv.Atoi(cnt)
		if err != nil || c < 1 || c > 1<<15 {
			return 0, 0, fmt.Errorf("%w: OverSubscribe %q: count must be 1..32768", ErrSyntax, s)
		}
		return mode, c, nil
	}
	return 0, 0, fmt.Errorf("%w: OverSubscribe %q: want NO, EXCLUSIVE, YES[:n] or FORCE[:n]", ErrSyntax, s)
}

// Partition holds a partition's policy settings (the scheduler owns its
// nodes and state). Zero values mean Slurm's defaults.
type Partition struct {
	// Name identifies the partition (required).
	Name string
	// QOS is the partition QOS: its limits apply to every job of the
	// partition, before the job's own QOS unless that has OverPartQOS.
	// Empty means none.
	QOS string
	// AllowAccounts lists the accounts whose jobs may run here; empty (or
	// "ALL") means all. It is hierarchical: a sub-account of a listed
	// account is allowed. When set, DenyAccounts is ignored.
	AllowAccounts []string
	// DenyAccounts lists accounts (and their sub-accounts) that may not
	// run here.
	DenyAccounts []string
	// AllowQOS lists the QOS jobs here may use; empty (or "ALL") means
	// all. When set, DenyQOS is ignored.
	AllowQOS []string
	// DenyQOS lists QOS jobs here may not use.
	DenyQOS []string
	// MaxTime caps a job's time limit (zero: unlimited). It binds even when
	// a QOS or association allows more, unless the QOS has
	// PartitionTimeLimit.
	MaxTime time.Duration
	// MinNodes and MaxNodes bound a job's node count (zero MaxNodes:
	// unlimited), unless the QOS has PartitionMinNodes/PartitionMaxNodes.
	MinNodes, MaxNodes int
	// MaxCPUsPerNode caps the CPUs one job of this partition may use on a
	// node (zero: unlimited). The scheduler caps the partition's total per
	// node; policy checks that a single job's per-node request fits.
	MaxCPUsPerNode int
	// DefMemPerGPU (MiB) and DefCPUPerGPU are given per allocated GPU to
	// jobs that ask GPUs but no memory / CPUs. Zero: no default.
	DefMemPerGPU int64
	DefCPUPerGPU int
	// OverSubscribe is the node-sharing mode; OverSubscribeCount the jobs
	// per resource for YES/FORCE (zero: Slurm's default 4).
	OverSubscribe      OverSubscribe
	OverSubscribeCount int
	// TRESBillingWeights is the Slurm billing-weights string
	// ("CPU=1.0,Mem=0.25G,GRES/gpu=2.0"), checked by New against the
	// registry; see Policy.BillingWeights.
	TRESBillingWeights string
	// PriorityTier orders partitions and decides preempt/partition_prio
	// (a higher tier preempts a lower). Zero means Slurm's default 1.
	PriorityTier int
	// PreemptMode is how jobs of this partition are preempted under
	// preempt/partition_prio (zero: the cluster's mode).
	PreemptMode PreemptMode
	// GraceTime is how long a preempted job of this partition is signalled
	// before it is killed (preempt/partition_prio).
	GraceTime time.Duration
	// ReqResv: jobs of this partition must name a reservation.
	ReqResv bool
}

// Tier returns PriorityTier, or 1 when unset.
func (p *Partition) Tier() int {
	if p.PriorityTier == 0 {
		return 1
	}
	return p.PriorityTier
}

// WholeNodes reports whether a job gets whole nodes here: the partition is
// OverSubscribe=EXCLUSIVE or the job asked --exclusive.
func (p *Partition) WholeNodes(jobExclusive bool) bool {
	return jobExclusive || p.OverSubscribe == OverSubscribeExclusive
}

// DefaultOverSubscribeCount is Slurm's jobs per resource for
// OverSubscribe=YES and FORCE without a count.
const DefaultOverSubscribeCount = 4

// ShareCount returns how many jobs of this partition may share one
// resource (a CPU, or a core or socket as SelectTypeParameters counts
// them) with a job of it: OverSubscribeCount (DefaultOverSubscribeCount
// when zero) under FORCE, and under YES when the job asked (sbatch
// --oversubscribe, jobOverSubscribe); 1 — no sharing — under NO and
// EXCLUSIVE, under YES for a job that did not ask, and for a job that
// asked --exclusive (jobExclusive). GRES are never shared, nor is memory
// (tracked as a consumable resource): the count applies to CPUs only.
func (p *Partition) ShareCount(jobOverSubscribe, jobExclusive bool) int {
	if jobExclusive {
		return 1
	}
	switch {
	case p.OverSubscribe == OverSubscribeForce, p.OverSubscribe == OverSubscribeYes && jobOverSubscribe:
		if p.OverSubscribeCount == 0 {
			return DefaultOverSubscribeCount
		}
		return p.OverSubscribeCount
	}
	return 1
}

// GPUDefaults returns the CPUs and memory (MiB) a node's share of a job
// gets for gpus GPUs when it asks for none explicitly: DefCPUPerGPU and
// DefMemPerGPU times gpus (saturating at gres.MaxCount).
func (p *Partition) GPUDefaults(gpus int64) (cpus, memMiB int64) {
	if gpus <= 0 {
		return 0, 0
	}
	mul := func(a, b int64) int64 {
		if a != 0 && b > gres.MaxCount/a {
			return gres.MaxCount
		}
		return a * b
	}
	return mul(int64(p.DefCPUPerGPU), gpus), mul(p.DefMemPerGPU, gpus)
}

// Validate checks the partition on its own (names of QOS are checked by
// New) and returns an error naming the partition and field.
func (p *Partition) Validate() error {
	f := func(format string, a ...any) error {
		return fmt.Errorf("%w: partition %q: %s", ErrInvalidConfig, p.Name, fmt.Sprintf(format, a...))
	}
	if err := validName(p.Name); err != nil {
		return fmt.Errorf("%w: partition: %w", ErrInvalidConfig, err)
	}
	for _, l := range []struct {
		f string
		v []string
	}{{"AllowAccounts", p.AllowAccounts}, {"DenyAccounts", p.DenyAccounts}, {"AllowQOS", p.AllowQOS}, {"DenyQOS", p.DenyQOS}} {
		for _, n := range l.v {
			if err := validName(n); err != nil {
				return f("%s: %v", l.f, err)
			}
		}
	}
	if err := validDuration("MaxTime", p.MaxTime); err != nil {
		return f("%v", err)
	}
	if err := validDuration("GraceTime", p.GraceTime); err != nil {
		return f("%v", err)
	}
	if p.MinNodes < 0 || p.MaxNodes < 0 || (p.MaxNodes > 0 && p.MinNodes > p.MaxNodes) {
		return f("MinNodes %d / MaxNodes %d invalid", p.MinNodes, p.MaxNodes)
	}
	if p.MaxCPUsPerNode < 0 || p.DefCPUPerGPU < 0 || p.DefMemPerGPU < 0 {
		return f("MaxCPUsPerNode %d, DefCPUPerGPU %d, DefMemPerGPU %d must not be negative", p.MaxCPUsPerNode, p.DefCPUPerGPU, p.DefMemPerGPU)
	}
	if p.OverSubscribe > OverSubscribeForce {
		return f("OverSubscribe %d invalid", p.OverSubscribe)
	}
	if p.OverSubscribeCount < 0 || p.OverSubscribeCount > 1<<15 {
		return f("OverSubscribeCount %d out of range [0, 32768]", p.OverSubscribeCount)
	}
	if p.PriorityTier < 0 || p.PriorityTier > 65533 {
		return f("PriorityTier %d out of range [0, 65533]", p.PriorityTier)
	}
	if !p.PreemptMode.valid() || p.PreemptMode.Has(PreemptWithin) {
		return f("PreemptMode %s is not valid for a partition", p.PreemptMode)
	}
	return nil
}
