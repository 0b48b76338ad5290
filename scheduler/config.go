package scheduler

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/topology"
)

// Sentinel errors returned (wrapped) by the scheduler. Use errors.Is.
var (
	// ErrInvalidConfig reports a configuration that Validate rejects.
	ErrInvalidConfig = errors.New("invalid scheduler config")
	// ErrInvalidJob reports a job request that can never be valid.
	ErrInvalidJob = errors.New("invalid job")
	// ErrUnknownJob reports an event naming a job the scheduler does not hold.
	ErrUnknownJob = errors.New("unknown job")
	// ErrUnknownNode reports an event naming a node that is not configured.
	ErrUnknownNode = errors.New("unknown node")
	// ErrUnknownPartition reports a job naming a partition that is not configured.
	ErrUnknownPartition = errors.New("unknown partition")
	// ErrJobState reports an event that is not valid in the job's current
	// state (finishing a pending job, cancelling a completed one …).
	ErrJobState = errors.New("invalid job state for event")
	// ErrUnsatisfiable reports a request that no node or partition of the
	// cluster could ever satisfy, even when idle.
	ErrUnsatisfiable = errors.New("request can never be satisfied")
	// ErrTimeWentBackwards reports an event whose now is earlier than an
	// event already applied. The scheduler's clock only moves forward.
	ErrTimeWentBackwards = errors.New("time went backwards")
	// ErrInvalidEvent reports an event value or encoding that is not
	// valid (nil, an unknown kind, a malformed payload).
	ErrInvalidEvent = errors.New("invalid event")
)

// Config describes a cluster: its nodes and partitions. Zero values of
// optional fields mean Slurm's default, as documented on each field.
type Config struct {
	// Telemetry says how jobs' telemetry is folded and when a job is
	// allocated but idle (see TelemetryEvent); the zero value folds
	// readings and calls no job idle.
	Telemetry TelemetryConfig `json:",omitzero"`
	// Nodes are the compute nodes, in index order. Node indices used in
	// allocations and NodeSets are positions in this slice.
	Nodes []NodeConfig
	// Partitions group nodes into queues. At least one is required.
	Partitions []PartitionConfig
	// Topology optionally describes the network: switches (a tree of any
	// depth), blocks, and multi-node NVLink domains. With it, multi-node
	// jobs get the least-spread nodes and small jobs avoid breaking whole
	// leaves and domains; without it, placement is first-fit by node
	// index. Leave Topology.Nodes empty: the scheduler fills it with the
	// node names in Config order, so graph and scheduler indices agree.
	Topology *topology.Config
	// Priority turns on multifactor priority and fair-share; nil orders
	// the queue first come, first served.
	Priority *PriorityConfig
	// Backfill turns on the backfill pass after the main pass: EASY (k
	// reservations) or conservative, with Slurm's knobs (bf_window,
	// bf_resolution, …). Every pending job then also gets an expected
	// start time. Nil means no backfill (strict priority order).
	Backfill *backfill.Config
	// EstimateInterval, with Backfill, is how long the expected start of
	// a pending job that holds no reservation may stand before a backfill
	// pass computes it again: an estimate stands until the next multiple
	// of EstimateInterval in Unix time (a fixed boundary of the clock, so
	// that how often Schedule is called does not move the refreshes).
	// Zero computes every such job's expected start in every pass. Between refreshes the pass only tests the job
	// for a start now, which decides exactly as computing its estimate
	// would (starts and reservations are the same), so a longer interval
	// spares most of a pass's searches on a long queue, at the price of
	// expected starts up to that old — Job.EstimatedAt says when each was
	// computed — the way Slurm's squeue --start shows what the last
	// backfill pass (every bf_interval) computed. A job without an
	// estimate, or whose expected start has come, gets a fresh one in the
	// next pass whatever the interval; Explain computes a fresh one when
	// the job's is older than the last pass.
	EstimateInterval time.Duration
	// MaxArraySize is Slurm's MaxArraySize: job array indices must be
	// below it. Zero means DefaultMaxArraySize (1001).
	MaxArraySize int
	// FirstJobID is the ID the first submitted job gets (Slurm's
	// FirstJobId); zero means 1. A control plane restarted over an
	// existing ledger continues after the IDs it recorded.
	FirstJobID JobID
	// MinJobAge is Slurm's MinJobAge: a finished job (completed, failed,
	// cancelled, timed out, preempted, node failure) is forgotten — Job
	// and Jobs no longer report it, events naming it fail with
	// ErrUnknownJob — once it has been finished this long, and not before
	// the cycle after the one that first saw it finished, so that a caller
	// reading every cycle (a ledger Recorder) sees it. Its outcome (a few
	// dozen bytes) is kept for dependencies. It bounds the memory of a
	// long-running control plane or of a simulation of millions of jobs
	// to the jobs in flight. Zero keeps every
	// finished job, as MinJobAge=0 does in Slurm (whose default is 300 s).
	MinJobAge time.Duration
	// JobRequeue is Slurm's JobRequeue: whether a job that does not say
	// (JobSpec.Requeue is RequeueDefault) may be requeued after a node
	// failure or on preemption in REQUEUE mode. The zero value,
	// RequeueDefault, is Slurm's default JobRequeue=1, as is RequeueYes;
	// RequeueNo is JobRequeue=0 (such jobs end in NODE_FAIL, and are
	// cancelled where REQUEUE preemption would requeue them).
	JobRequeue RequeueMode
	// RequeueDelay is how long a requeued job waits before it may start
	// again: its begin time moves to the requeue plus the delay, and it
	// pends with BeginTime until then. Slurm delays a requeued job by
	// the job credential's lifetime (AuthInfo cred_expire, 120 s by
	// default), which lets its nodes clean up; zero, Sluice's default,
	// makes it eligible at once (the caller reports a requeue when the
	// nodes are clean). DefaultRequeueDelay gives Slurm's behaviour.
	RequeueDelay time.Duration
	// SelectTypeParameters is slurm.conf's SelectTypeParameters with
	// select/cons_tres: the unit CPUs are allocated in (see CRUnit,
	// ParseSelectTypeParameters). The zero value, CRCPU, is Sluice's
	// default: hardware threads are handed out as CPUs. Slurm's default
	// in its recent releases is CR_Core_Memory (CRCore): whole cores, so
	// a one-CPU task on a node of two threads per core is charged 2 CPUs.
	SelectTypeParameters CRUnit `json:",omitzero"`
	// BootTime is how long a node takes to reboot into changeable
	// features (helpers.conf BootTime, node_features/helpers; see
	// NodeConfig.ChangeableFeatures and reboot.go): the backfill plan
	// counts a node rebooted for a job as free from then, and a node not
	// reported booted (NodeRebooted) by then is marked DOWN with the
	// reason "reboot timed out". Zero means Slurm's default,
	// DefaultBootTime (300 s).
	BootTime time.Duration
	// Registry is the TRES registry the scheduler indexes vectors by. Nil
	// means a new one. Policy limits (policy.ParseTRESLimits) are built
	// against a registry: build it with NewRegistry(cfg.Nodes), parse the
	// limits with it, and pass it here. Register nothing in it after New.
	Registry *gres.Registry
	// Policy holds QOS, associations with their limits and preemption
	// settings (package policy: PreemptType, PreemptMode, and
	// PreemptOrder, the victim choice — least lost work by default, or
	// Slurm's order); partition policy is set on Partitions.
	// Nil (with no partition policy either) checks no limits: any user,
	// account and QOS may run.
	Policy *policy.Config
	// BillingMode is how a partition's TRESBillingWeights combine into a
	// job's billing (Allocation.Billing, the billing TRES the ledger
	// charges), Slurm's PriorityFlags MAX_TRES and MAX_TRES_GRES:
	// gres.BillingSum (the zero value, Slurm's default) adds every weighted
	// TRES of the job; gres.BillingMaxTRES takes the largest weighted
	// node-level TRES (cpu, mem, node, gres/…) plus the sum of the weighted
	// global ones (licenses); gres.BillingMaxTRESGRES takes the largest of
	// cpu, mem and node plus the weighted GRES and global TRES. With
	// BillingMode zero, PriorityFlags MAX_TRES or MAX_TRES_GRES in
	// Priority.Engine.Flags choose the mode, as in slurm.conf; a non-zero
	// BillingMode that disagrees with those flags is an error.
	BillingMode gres.BillingMode
	// GPUOrder is how a node's devices are chosen for a job
	// (gres.DeviceRequest.Order): gres.NVLinkFirst, the zero value and
	// Sluice's default, takes the best NVLink-connected devices first and
	// those close to the node's free CPUs second; gres.AffinityFirst is
	// Slurm's order, devices close to the job's socket first, then NVLink.
	// Sluice's default deviates from Slurm on purpose (peer bandwidth
	// usually matters more than a socket hop); choose AffinityFirst for
	// Slurm's placements. With EnforceBinding both orders take only close
	// devices.
	GPUOrder gres.DeviceOrder
	// Power turns on power saving (Slurm's SuspendTime, ResumeTimeout …):
	// idle nodes are powered down and resumed on demand (see PowerConfig
	// and power.go). Nil keeps every node on.
	Power *PowerConfig
	// Licenses is slurm.conf's Licenses (Licenses=matlab:10,ansys:2):
	// cluster-wide counted resources that jobs request with
	// JobSpec.Licenses, each a TRES license/<name> (so QOS and
	// association TRES limits apply to them). Names are unique; a count
	// may be 0. See ParseLicenses.
	Licenses []License `json:",omitempty"`
}

// billingMode is the mode Alloc.Billing uses: BillingMode, or the one
// PriorityFlags name. It fails on an unknown mode or on flags and a
// BillingMode that disagree.
func (c *Config) billingMode() (gres.BillingMode, error) {
	m := gres.BillingSum
	if c.Priority != nil {
		f := c.Priority.Engine.Flags
		switch {
		case f&priority.MaxTRES != 0 && f&priority.MaxTRESGRES != 0:
			return 0, fmt.Errorf("%w: PriorityFlags MAX_TRES and MAX_TRES_GRES are exclusive", ErrInvalidConfig)
		case f&priority.MaxTRES != 0:
			m = gres.BillingMaxTRES
		case f&priority.MaxTRESGRES != 0:
			m = gres.BillingMaxTRESGRES
		}
	}
	switch {
	case c.BillingMode > gres.BillingMaxTRESGRES:
		return 0, fmt.Errorf("%w: unknown BillingMode %v", ErrInvalidConfig, c.BillingMode)
	case c.BillingMode == gres.BillingSum:
		return m, nil
	case m != gres.BillingSum && m != c.BillingMode:
		return 0, fmt.Errorf("%w: BillingMode %v disagrees with PriorityFlags (%v)", ErrInvalidConfig, c.BillingMode, m)
	}
	return c.BillingMode, nil
}

// NodeConfig describes one compute node.
type NodeConfig struct {
	// Name is unique across the cluster (e.g. "gpu-a01").
	Name string
	// CPUs is the number of schedulable CPUs (cores or threads), ids
	// 0..CPUs-1, in [1, 65536].
	CPUs int
	// MemoryMiB is the schedulable memory (Slurm's RealMemory). Must be ≥ 0.
	MemoryMiB int64
	// Features are arbitrary labels (Slurm's node features): the node's
	// active features, Slurm's ActiveFeatures — the static ones and
	// whichever changeable ones are active now.
	Features []string
	// ChangeableFeatures are the features a node features plugin can
	// change on this node by rebooting it (node_features/helpers: the
	// helpers.conf Feature= lines with a Helper for the node, such as
	// MIG or KNL memory modes). Those in Features are active now; a job
	// whose Constraint needs others gets the node rebooted into them
	// (see reboot.go). Slurm's AvailableFeatures is Features together
	// with ChangeableFeatures (NodeInfo.AvailableFeatures). Each is a
	// feature name as a Constraint writes one, listed once.
	ChangeableFeatures []string `json:",omitempty"`
	// Devices is the node's GRES device inventory (GPUs and other
	// devices, with their types and links). An empty inventory is a
	// CPU-only node.
	Devices gres.Inventory
	// GRES lists count-only generic resources (GPU shards, MPS shares,
	// local licenses): counted, without device indices. A name must not
	// also be a device name of the node, nor shard or mps when the
	// devices are shared under that name (Devices.Shares: shards and MPS
	// shares on concrete devices, see shares.go).
	GRES []gres.Request
	// Weight is Slurm's node Weight: among the nodes that can hold a job,
	// the lightest are allocated first (then the lowest index). Zero
	// means Slurm's default, 1; at most MaxNodeWeight. See weight.go for
	// where the order applies.
	Weight int64 `json:",omitempty"`
	// Boards, Sockets, CoresPerSocket and ThreadsPerCore are slurm.conf's
	// node layout (Boards, Sockets or SocketsPerBoard, CoresPerSocket,
	// ThreadsPerCore); zero means Slurm's default. Boards defaults to 1,
	// and with Boards set Sockets counts one board's sockets (Slurm's
	// SocketsPerBoard); CoresPerSocket and ThreadsPerCore default to 1;
	// Sockets defaults to what CPUs leaves: CPUs/(Boards×CoresPerSocket×
	// ThreadsPerCore). CPUs must be the product of the four, or the core
	// count (threads then are not CPUs). CPU ids are Slurm's abstract
	// ids: socket by socket, core by core, the threads of a core
	// consecutive ((socket×CoresPerSocket + core)×ThreadsPerCore +
	// thread). A device's Cores (gres.conf Cores=) name core indices
	// (socket×CoresPerSocket + core), each standing for all its threads;
	// a device's Socket must be below the node's socket count.
	Boards         int `json:",omitempty"`
	Sockets        int `json:",omitempty"`
	CoresPerSocket int `json:",omitempty"`
	ThreadsPerCore int `json:",omitempty"`
}

// PartitionState is a partition's availability, with Slurm's meaning.
type PartitionState uint8

// Partition states.
const (
	// PartitionUp accepts jobs and starts them. The zero value.
	PartitionUp PartitionState = iota
	// PartitionDown accepts jobs but starts none (they pend with PartitionDown).
	PartitionDown
	// PartitionDrain accepts no new jobs but starts those already queued.
	PartitionDrain
	// PartitionInactive neither accepts nor starts jobs.
	PartitionInactive
)

// String returns the Slurm spelling of the state.
func (s PartitionState) String() string {
	switch s {
	case PartitionUp:
		return "UP"
	case PartitionDown:
		return "DOWN"
	case PartitionDrain:
		return "DRAIN"
	case PartitionInactive:
		return "INACTIVE"
	}
	return fmt.Sprintf("PartitionState(%d)", uint8(s))
}

// PartitionConfig describes one partition (a named queue over a node set).
type PartitionConfig struct {
	// Name is unique among partitions.
	Name string
	// Nodes lists the member node names; empty means all nodes (Slurm's
	// Nodes=ALL). Partitions may overlap.
	Nodes []string
	// Default marks the partition jobs go to when they name none. At most
	// one partition may be default; with none, the first one is.
	Default bool
	// State is the partition's availability (default UP).
	State PartitionState
	// DefaultTime is the time limit of jobs that give none. Zero means
	// MaxTime (and, when that is unlimited too, one year — Sluice plans
	// with finite limits).
	DefaultTime time.Duration
	// MaxTime is the largest time limit a job may have. Zero means
	// unlimited. It does not hold a job whose QOS has the
	// PartitionTimeLimit flag (the QOS's MaxWall still does).
	MaxTime time.Duration
	// MinNodes and MaxNodes bound a job's node count; zero MaxNodes means
	// unlimited. A job whose QOS has the PartitionMinNodes or
	// PartitionMaxNodes flag is not held by that bound.
	MinNodes, MaxNodes int
	// PriorityTier orders partitions: jobs of a higher tier are considered
	// first. Default 1 (Slurm's default).
	PriorityTier int
	// PriorityJobFactor is the partition's contribution to the multifactor
	// priority. Default 1.
	PriorityJobFactor int
	// DefMemPerCPU is the memory (MiB) given per allocated CPU to jobs that
	// request no memory. Zero means such jobs request no memory.
	DefMemPerCPU int64

	// The fields below are the partition's policy, with the meaning of
	// policy.Partition (where each is documented): access lists, the
	// partition QOS, per-GPU defaults, node sharing, billing and
	// preemption. Setting any of them turns on policy checks (as a
	// non-nil Config.Policy does). They are the one place partition policy
	// is configured: Config.Policy.Partitions must stay empty.

	// QOS is the partition QOS.
	QOS string
	// AllowAccounts, DenyAccounts, AllowQOS and DenyQOS say who may run here.
	AllowAccounts, DenyAccounts, AllowQOS, DenyQOS []string
	// MaxCPUsPerNode caps the CPUs one job may use on a node.
	MaxCPUsPerNode int
	// DefMemPerGPU (MiB) and DefCPUPerGPU are given per GPU to jobs that
	// ask for GPUs but no memory or CPUs per GPU.
	DefMemPerGPU int64
	DefCPUPerGPU int
	// OverSubscribe is the node-sharing mode (EXCLUSIVE: whole nodes).
	OverSubscribe      policy.OverSubscribe
	OverSubscribeCount int
	// TRESBillingWeights weighs a job's TRES into its billing
	// ("CPU=1.0,Mem=0.25G,GRES/gpu=2.0"); empty bills the CPU count.
	TRESBillingWeights string
	// PreemptMode and GraceTime apply to this partition's jobs under
	// preempt/partition_prio.
	PreemptMode policy.PreemptMode
	GraceTime   time.Duration
	// ReqResv: jobs of this partition must name a reservation.
	ReqResv bool
}

// hasPolicy reports whether any policy field of the partition is set.
func (p *PartitionConfig) hasPolicy() bool {
	return p.QOS != "" || len(p.AllowAccounts)+len(p.DenyAccounts)+len(p.AllowQOS)+len(p.DenyQOS) > 0 ||
		p.MaxCPUsPerNode != 0 || p.DefMemPerGPU != 0 || p.DefCPUPerGPU != 0 || p.OverSubscribe != 0 ||
		p.OverSubscribeCount != 0 || p.TRESBillingWeights != "" || p.PreemptMode != 0 || p.GraceTime != 0 || p.ReqResv
}

// policyPartition is the partition as the policy package sees it.
func (p *PartitionConfig) policyPartition() policy.Partition {
	return policy.Partition{
		Name: p.Name, QOS: p.QOS, AllowAccounts: p.AllowAccounts, DenyAccounts: p.DenyAccounts,
		AllowQOS: p.AllowQOS, DenyQOS: p.DenyQOS, MaxTime: p.MaxTime, MinNodes: p.MinNodes, MaxNodes: p.MaxNodes,
		MaxCPUsPerNode: p.MaxCPUsPerNode, DefMemPerGPU: p.DefMemPerGPU, DefCPUPerGPU: p.DefCPUPerGPU,
		OverSubscribe: p.OverSubscribe, OverSubscribeCount: p.OverSubscribeCount,
		TRESBillingWeights: p.TRESBillingWeights, PriorityTier: p.PriorityTier,
		PreemptMode: p.PreemptMode, GraceTime: p.GraceTime, ReqResv: p.ReqResv,
	}
}

// Limits on sizes accepted from callers, so that nothing overflows.
const (
	// MaxNodesPerJob bounds a job's node count.
	MaxNodesPerJob = 1 << 20
	// MaxTasksPerJob bounds a job's task count.
	MaxTasksPerJob = 1 << 24
	// MaxTimeLimit bounds any time limit (100 years).
	MaxTimeLimit = 100 * 365 * 24 * time.Hour
	// unlimitedPlanTime is the limit Sluice plans with when neither job nor
	// partition gives one.
	unlimitedPlanTime = 365 * 24 * time.Hour
)

// Validate checks the configuration and returns an error naming the first
// bad field. It does not modify c.
func (c *Config) Validate() error {
	_, err := c.validate()
	return err
}

// validate is Validate, returning the topology graph it builds on the
// way (nil without Config.Topology).
func (c *Config) validate() (*topology.Graph, error) {
	if len(c.Nodes) == 0 {
		return nil, fmt.Errorf("%w: no nodes", ErrInvalidConfig)
	}
	if c.JobRequeue > RequeueNo {
		return nil, fmt.Errorf("%w: JobRequeue %v unknown", ErrInvalidConfig, c.JobRequeue)
	}
	if err := c.SelectTypeParameters.validate(); err != nil {
		return nil, err
	}
	if err := c.Telemetry.Validate(); err != nil {
		return nil, err
	}
	names := make(map[string]int, len(c.Nodes))
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Name == "" {
			return nil, fmt.Errorf("%w: node %d: empty name", ErrInvalidConfig, i)
		}
		if j, dup := names[n.Name]; dup {
			return nil, fmt.Errorf("%w: node %q: duplicate name (nodes %d and %d)", ErrInvalidConfig, n.Name, j, i)
		}
		names[n.Name] = i
		if err := n.validate(); err != nil {
			return nil, err
		}
	}
	if c.EstimateInterval < 0 {
		return nil, fmt.Errorf("%w: EstimateInterval %v, want ≥ 0", ErrInvalidConfig, c.EstimateInterval)
	}
	if c.MinJobAge < 0 {
		return nil, fmt.Errorf("%w: MinJobAge %v, want ≥ 0", ErrInvalidConfig, c.MinJobAge)
	}
	if c.BootTime < 0 || c.BootTime > MaxTimeLimit {
		return nil, fmt.Errorf("%w: BootTime %v out of range [0, %v]", ErrInvalidConfig, c.BootTime, MaxTimeLimit)
	}
	if c.RequeueDelay < 0 || c.RequeueDelay > MaxTimeLimit {
		return nil, fmt.Errorf("%w: RequeueDelay %v out of range [0, %v]", ErrInvalidConfig, c.RequeueDelay, MaxTimeLimit)
	}
	if c.MaxArraySize < 0 || c.MaxArraySize > 1<<22 {
		return nil, fmt.Errorf("%w: MaxArraySize %d out of range [0, 2^22]", ErrInvalidConfig, c.MaxArraySize)
	}
	if len(c.Partitions) == 0 {
		return nil, fmt.Errorf("%w: no partitions", ErrInvalidConfig)
	}
	pnames := make(map[string]bool, len(c.Partitions))
	defaults := 0
	for i := range c.Partitions {
		p := &c.Partitions[i]
		if pnames[p.Name] {
			return nil, fmt.Errorf("%w: partition %q: duplicate name", ErrInvalidConfig, p.Name)
		}
		if err := p.validate(i, func(n string) bool { _, ok := names[n]; return ok }); err != nil {
			return nil, err
		}
		pnames[p.Name] = true
		if p.Default {
			defaults++
		}
	}
	var g *topology.Graph
	if c.topologyConfig() != nil {
		var err error
		if g, err = c.graph(); err != nil {
			return nil, err
		}
	}
	if defaults > 1 {
		return nil, fmt.Errorf("%w: %d partitions marked Default, at most one allowed", ErrInvalidConfig, defaults)
	}
	if _, err := c.billingMode(); err != nil {
		return nil, err
	}
	if c.Power != nil {
		if err := c.Power.validate(names, pnames); err != nil {
			return nil, err
		}
	}
	if c.GPUOrder > gres.AffinityFirst {
		return nil, fmt.Errorf("%w: unknown GPUOrder %v", ErrInvalidConfig, c.GPUOrder)
	}
	return g, nil
}

// validate checks one node's own fields (not its name's uniqueness), as
// New and the node administration events do; errors wrap
// ErrInvalidConfig and name the node.
func (n *NodeConfig) validate() error {
	if n.Name == "" {
		return fmt.Errorf("%w: node: empty name", ErrInvalidConfig)
	}
	if n.CPUs < 1 || n.CPUs > gres.MaxCoreID+1 {
		return fmt.Errorf("%w: node %q: CPUs %d out of range [1, %d]", ErrInvalidConfig, n.Name, n.CPUs, gres.MaxCoreID+1)
	}
	if n.MemoryMiB < 0 || n.MemoryMiB > gres.MaxCount {
		return fmt.Errorf("%w: node %q: MemoryMiB %d out of range", ErrInvalidConfig, n.Name, n.MemoryMiB)
	}
	if n.Weight < 0 || n.Weight > MaxNodeWeight {
		return fmt.Errorf("%w: node %q: Weight %d out of range [0, %d]", ErrInvalidConfig, n.Name, n.Weight, int64(MaxNodeWeight))
	}
	if err := n.Devices.Validate(); err != nil {
		return fmt.Errorf("%w: node %q: devices: %w", ErrInvalidConfig, n.Name, err)
	}
	if err := n.validateLayout(); err != nil {
		return err
	}
	for _, g := range n.GRES {
		if err := g.Validate(); err != nil {
			return fmt.Errorf("%w: node %q: GRES %s: %w", ErrInvalidConfig, n.Name, g, err)
		}
		for _, d := range n.Devices.Devices {
			if strings.EqualFold(d.Name, g.Name) {
				return fmt.Errorf("%w: node %q: GRES %q is both counted and a device", ErrInvalidConfig, n.Name, g.Name)
			}
		}
	}
	if err := n.validateChangeable(); err != nil {
		return err
	}
	return n.validateShares()
}

// graph builds the topology graph over the configured nodes.
func (c *Config) graph() (*topology.Graph, error) {
	tc := *c.topologyConfig()
	if len(tc.Nodes) != 0 {
		return nil, fmt.Errorf("%w: Topology.Nodes must be empty (the scheduler's node order is used)", ErrInvalidConfig)
	}
	tc.Nodes = make([]string, len(c.Nodes))
	for i := range c.Nodes {
		tc.Nodes[i] = c.Nodes[i].Name
	}
	g, err := topology.NewGraph(tc)
	if err != nil {
		return nil, fmt.Errorf("%w: topology: %w", ErrInvalidConfig, err)
	}
	return g, nil
}

// validate checks one partition (the i-th of the configuration) as New
// does; hasNode reports whether a node name is configured. Uniqueness of
// the name and of the Default mark is the caller's.
func (p *PartitionConfig) validate(i int, hasNode func(string) bool) error {
	if p.Name == "" {
		return fmt.Errorf("%w: partition %d: empty name", ErrInvalidConfig, i)
	}
	for _, nn := range p.Nodes {
		if !hasNode(nn) {
			return fmt.Errorf("%w: partition %q: %w %q", ErrInvalidConfig, p.Name, ErrUnknownNode, nn)
		}
	}
	if p.State > PartitionInactive {
		return fmt.Errorf("%w: partition %q: bad state %d", ErrInvalidConfig, p.Name, p.State)
	}
	if p.MaxTime < 0 || (p.MaxTime > 0 && p.MaxTime < time.Second) || p.MaxTime > MaxTimeLimit {
		return fmt.Errorf("%w: partition %q: MaxTime %v out of range: 0 (unlimited) or [1s, %v]", ErrInvalidConfig, p.Name, p.MaxTime, MaxTimeLimit)
	}
	if p.DefaultTime < 0 || (p.DefaultTime > 0 && p.DefaultTime < time.Second) || p.DefaultTime > MaxTimeLimit {
		return fmt.Errorf("%w: partition %q: DefaultTime %v out of range: 0 (MaxTime) or [1s, %v]", ErrInvalidConfig, p.Name, p.DefaultTime, MaxTimeLimit)
	}
	if p.MaxTime > 0 && p.DefaultTime > p.MaxTime {
		return fmt.Errorf("%w: partition %q: DefaultTime %v exceeds MaxTime %v", ErrInvalidConfig, p.Name, p.DefaultTime, p.MaxTime)
	}
	if p.MinNodes < 0 || p.MaxNodes < 0 || (p.MaxNodes > 0 && p.MinNodes > p.MaxNodes) {
		return fmt.Errorf("%w: partition %q: MinNodes %d / MaxNodes %d invalid", ErrInvalidConfig, p.Name, p.MinNodes, p.MaxNodes)
	}
	if p.PriorityTier < 0 || p.PriorityTier > 65533 {
		return fmt.Errorf("%w: partition %q: PriorityTier %d out of range [0, 65533]", ErrInvalidConfig, p.Name, p.PriorityTier)
	}
	if p.PriorityJobFactor < 0 || p.PriorityJobFactor > 65533 {
		return fmt.Errorf("%w: partition %q: PriorityJobFactor %d out of range [0, 65533]", ErrInvalidConfig, p.Name, p.PriorityJobFactor)
	}
	if p.DefMemPerCPU < 0 || p.DefMemPerCPU > gres.MaxCount {
		return fmt.Errorf("%w: partition %q: DefMemPerCPU %d out of range", ErrInvalidConfig, p.Name, p.DefMemPerCPU)
	}
	return nil
}
