package scheduler

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/telemetry"
	"github.com/sluicehq/sluice/topology"
)

// JobID identifies a job. IDs are assigned by Submit, starting at 1, in
// submission order.
type JobID uint64

// JobState is where a job is in its life cycle:
//
//	PENDING → RUNNING → COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | PREEMPTED
//
// A pending job may also be cancelled; a running job may go back to
// PENDING when it is requeued (launch failure, node failure of a requeueable
// job, preemption in REQUEUE mode, RequeueJob), or be SUSPENDED by
// preemption in SUSPEND mode or by SuspendJob and later resume RUNNING. A
// finished job other than a cancelled one may be requeued (RequeueJob).
type JobState uint8

// Job states, with Slurm's names.
const (
	JobPending JobState = iota
	JobRunning
	// JobSuspended: preempted in SUSPEND mode (it keeps its memory and
	// devices, its CPUs are lent to the preemptor, and it resumes when the
	// preemptor has ended and its CPUs are free again), or suspended by an
	// administrator (SuspendJob: it keeps its whole allocation until
	// ResumeJob; Job.AdminSuspended). Suspended time does not count
	// against the time limit.
	JobSuspended
	JobCompleted
	JobFailed
	JobCancelled
	JobTimeout
	JobNodeFail
	JobPreempted
)

var jobStateNames = [...]struct{ long, short string }{
	JobPending:   {"PENDING", "PD"},
	JobRunning:   {"RUNNING", "R"},
	JobSuspended: {"SUSPENDED", "S"},
	JobCompleted: {"COMPLETED", "CD"},
	JobFailed:    {"FAILED", "F"},
	JobCancelled: {"CANCELLED", "CA"},
	JobTimeout:   {"TIMEOUT", "TO"},
	JobNodeFail:  {"NODE_FAIL", "NF"},
	JobPreempted: {"PREEMPTED", "PR"},
}

// String returns Slurm's long name of the state (e.g. "RUNNING").
func (s JobState) String() string {
	if int(s) < len(jobStateNames) {
		return jobStateNames[s].long
	}
	return fmt.Sprintf("JobState(%d)", uint8(s))
}

// Short returns squeue's compact state code (e.g. "R", "PD").
func (s JobState) Short() string {
	if int(s) < len(jobStateNames) {
		return jobStateNames[s].short
	}
	return "?"
}

// Finished reports whether s is a terminal state.
func (s JobState) Finished() bool { return s >= JobCompleted }

// JobSpec is what a user asks for (sbatch's options). Zero values mean
// Slurm's defaults, as documented on each field.
type JobSpec struct {
	// Name is a free-form label.
	Name string
	// User and Account identify who runs the job and who pays for it.
	User, Account string
	// Partition names the partition; empty means the default partition.
	Partition string
	// QOS names the quality of service; empty means the default.
	QOS string
	// Nodes is the number of nodes (sbatch -N), or the minimum of a
	// range -N min-max (see NodesMax; ParseNodeCount reads both). Zero
	// means 1, except with Tasks or GRESPerJob: Slurm then chooses the
	// fewest nodes that hold the tasks, or the --gpus total. NodeList and
	// a counted Constraint raise it to the nodes they need.
	Nodes int
	// Tasks is the number of tasks (sbatch -n). Zero means one per node
	// (TasksPerNode per node when set). Each task's CPUs, memory and
	// GRESPerTask sit on one node; every node runs at least one task, and
	// the tasks are dealt one per node in turn while a node has room
	// (Slurm's cyclic distribution over nodes): -N2 -n7 takes 4+3 CPUs.
	// With a GRESPerJob the node count is Nodes, or the fewest in the
	// range that hold the total on the partition's nodes (sbatch -n 8
	// --gpus=8 on 4-GPU nodes takes 2), chosen at submission and again
	// while it waits whenever node or partition configuration changes;
	// each node runs ceil(Tasks/nodes) tasks. With NodeList,
	// Constraint or Contiguous the nodes are chosen to meet them and hold
	// the tasks: -w n1 -n 40 on 16-CPU nodes takes n1 and two more.
	Tasks int
	// CPUsPerTask is sbatch -c. Zero means 1.
	CPUsPerTask int
	// MemPerNodeMiB is sbatch --mem. Zero means the partition's
	// DefMemPerCPU × the node's CPUs, or no memory when that is unset.
	MemPerNodeMiB int64
	// GRESPerNode is sbatch --gres (e.g. gpu:h100:2 on every node).
	GRESPerNode []gres.Request
	// GRESPerTask is, per task, the GRES each task needs (--gpus-per-task).
	GRESPerTask []gres.Request
	// GRESPerJob is the job-wide total (sbatch --gpus), as in Slurm: every
	// node of the job takes at least one (so the total must be at least
	// Nodes), and the rest goes to the nodes as they can hold it, filling
	// them in node order. Without Nodes, or with a range (-N 1-4
	// --gpus=12), the node count is the fewest that could hold the total
	// (and the tasks) on the partition's nodes as configured, chosen at
	// submission (3 of 4-GPU nodes for 12) and chosen again while the job
	// is pending whenever node or partition configuration changes
	// (AddNode, RemoveNode, UpdateNode, partition events; Slurm decides
	// the count when it schedules the job); a job no count can run any
	// more keeps its count and waits. It does not grow with what is free.
	// The job is charged exactly the total. The
	// backfill plan holds the total exactly too (its expected start and
	// reservation), and a backfill start places what it planned; where
	// the GPUs beyond one per node would bring CPUs or memory with them
	// (CPUsPerGPU, MemPerGPUMiB, the partition's DefCpuPerGPU or
	// DefMemPerGPU), or the request is typed, the plan counts
	// ceil(total/Nodes) on each node instead (cautious: never less).
	// Explain's re-plans count ceil(total/Nodes).
	GRESPerJob []gres.Request
	// CPUsPerGPU is sbatch --cpus-per-gpu: each node gets at least this
	// many CPUs per GPU it holds.
	CPUsPerGPU int
	// MemPerGPUMiB is sbatch --mem-per-gpu: each node gets this much
	// memory per GPU it holds. It excludes MemPerNodeMiB.
	MemPerGPUMiB int64
	// GPUsPerSocket and SocketsPerNode are sbatch --gpus-per-socket and
	// --sockets-per-node: on each node the job takes GPUsPerSocket GPUs
	// from each of SocketsPerNode distinct sockets (devices of the node's
	// inventory carry their socket). SocketsPerNode zero means 1. A node
	// is a candidate only when its free, healthy GPUs allow that choice;
	// Submit rejects a request no node's sockets could ever hold.
	GPUsPerSocket, SocketsPerNode int
	// EnforceBinding is --gres-flags=enforce-binding: the job's CPUs on a
	// node must all be close to (share affinity with) its devices there.
	// The devices are chosen among the sets whose free close CPUs hold the
	// job's CPUs (the best-connected such set), so a 2-GPU job needing
	// more CPUs than one socket has free gets GPUs on two sockets. Without
	// it, close CPUs are preferred but not required.
	EnforceBinding bool
	// TimeMin is sbatch --time-min: with backfill, the job may start with
	// a limit as short as this to fit a gap; it then runs as long as the
	// plan allows, up to TimeLimit. Zero means none; otherwise at least
	// one second and at most the job's time limit.
	TimeMin time.Duration
	// TimeLimit is sbatch -t. Zero means the partition's DefaultTime;
	// otherwise at least one second (Submit rejects less).
	TimeLimit time.Duration
	// BeginTime is sbatch --begin: the job is not eligible before it.
	BeginTime time.Time
	// Exclusive asks for whole nodes (sbatch --exclusive): the job's nodes
	// run nothing else and it is charged all their resources. A node is
	// taken only where the job's own request fits its healthy free
	// resources: an unhealthy GPU is neither given nor counted.
	Exclusive bool
	// CheckpointInterval is the period at which the job saves its state
	// (zero: never, unless it reports checkpoints with Checkpoint). A
	// preempted job loses only the work since its last checkpoint, and
	// victims are chosen to lose the least.
	CheckpointInterval time.Duration
	// Requeue says whether the job may be requeued: go back to pending,
	// rather than end in NODE_FAIL, when a node it runs on fails, and be
	// requeued rather than cancelled when preempted under
	// PreemptMode=REQUEUE. RequeueYes is sbatch --requeue, RequeueNo
	// --no-requeue; the zero value, RequeueDefault, takes the cluster's
	// Config.JobRequeue, which like Slurm's JobRequeue makes jobs
	// requeueable unless they opt out.
	Requeue RequeueMode
	// Switches is the count of sbatch --switches=count@max-wait: the most
	// leaf switches the job wants to span. Zero means no limit.
	Switches int
	// SwitchesMaxWait is the max-wait of --switches: how long after it
	// became eligible the job waits for a placement within Switches leaf
	// switches before accepting a wider one. Zero means it waits forever.
	SwitchesMaxWait time.Duration
	// Segment is sbatch --segment: nodes come in groups of Segment nodes,
	// each group under one leaf switch or base block.
	Segment int
	// Reservation names the advance reservation the job runs in (sbatch
	// --reservation). It then runs only on the reservation's nodes,
	// inside its window, and is ended at the window's end.
	Reservation string
	// Dependency is sbatch --dependency, e.g. "afterok:12:13,afterany:14"
	// or "singleton"; '?' separates alternatives. As in Slurm, a job
	// array's ID (its ArrayJobID) stands for every task of the array
	// (afterok: all succeeded; afterany: all ended; afternotok: all
	// ended, one failed; after: none pending), and "12_3" names the task
	// of index 3 alone.
	Dependency string
	// Nice lowers the job's multifactor priority by this amount (sbatch
	// --nice); negative values raise it. Range ±2147483645.
	Nice int
	// NVLinkDomain says how a multi-node job relates to multi-node NVLink
	// domains: any (default), one domain, or balanced slices of the fewest
	// domains.
	NVLinkDomain topology.DomainMode
	// Hold submits the job held (sbatch --hold): a user hold, pending with
	// JobHeldUser until Release (see Scheduler.Hold).
	Hold bool `json:",omitempty"`
	// NodesMax is the maximum of sbatch -N min-max: the job gets as many
	// nodes as can run it now within [Nodes, NodesMax] (NodeList among
	// them). Zero means Nodes, or, for a job with Tasks and no Nodes, as
	// many as its tasks need. With GRESPerJob it is the fewest in the
	// range that hold the total (see GRESPerJob).
	NodesMax int `json:",omitempty"`
	// TasksPerNode is sbatch --ntasks-per-node: with Tasks, the most
	// tasks one node may run (and, without Nodes, at least
	// ceil(Tasks/TasksPerNode) nodes); without Tasks, every node's count.
	TasksPerNode int `json:",omitempty"`
	// TasksPerSocket is sbatch --ntasks-per-socket: the most tasks per
	// CPU socket of a node (the sockets its devices name; 1 when none).
	TasksPerSocket int `json:",omitempty"`
	// MemPerCPUMiB is sbatch --mem-per-cpu: memory per allocated CPU on
	// each node. It excludes MemPerNodeMiB and MemPerGPUMiB, as in Slurm.
	MemPerCPUMiB int64 `json:",omitempty"`
	// Distribution is sbatch -m/--distribution (ParseDistribution reads
	// Slurm's form, "block:cyclic"). Its second field, the method over
	// sockets, chooses the job's CPU ids on each node as select/cons_tres
	// does: cyclic by default (a 4-task job on an idle node of 2 sockets
	// of 8 cores gets CPUs 0,1,8,9), block fills the lowest socket first
	// (0-3), fcyclic deals each CPU to the next socket. Its first field
	// changes the allocation only for plane=<size>: the tasks are dealt
	// to the nodes in blocks of size (-N4 -n21 -m plane=4: 8+5+4+4); see
	// Distribution for what the other fields and Pack do and do not do.
	Distribution Distribution `json:",omitzero"`
	// Hint is sbatch --hint (ParseHint): nomultithread or compute_bound
	// give each of the job's CPUs on a node a core of its own (one thread
	// per core); a node whose free cores are too few cannot host it.
	Hint Hint `json:",omitempty"`
	// ExclusiveUser is sbatch --exclusive=user (ParseExclusive): the
	// job's nodes run only jobs of its own user while it runs there, and
	// it starts only on nodes that run no other user's job. It is charged
	// only what it asks for. It excludes Exclusive (whole nodes), which a
	// partition's OverSubscribe=EXCLUSIVE sets over it.
	ExclusiveUser bool `json:",omitempty"`
	// OverSubscribe is sbatch -s/--oversubscribe: in a partition with
	// OverSubscribe=YES[:n] the job's CPUs may be shared with up to n jobs
	// in all that asked the same (n defaults to 4). Under FORCE every job
	// shares without asking; under NO and EXCLUSIVE, and for an
	// --exclusive job, the flag changes nothing. GRES and memory are
	// never shared.
	OverSubscribe bool `json:",omitempty"`
	// Licenses is sbatch -L/--licenses (matlab:2,ansys): cluster-wide
	// licenses of Config.Licenses the job holds while it runs. It pends
	// with Slurm's reason Licenses while too few are free, and the
	// backfill plan gives it an expected start when they come back.
	// See ParseLicenses.
	Licenses []License `json:",omitempty"`
	// Exclude names nodes the job must not run on (sbatch -x/--exclude).
	// Each element is a node name or a Slurm hostlist expression
	// ("gpu[01-04],cpu7"). Every name must be a node of the cluster, and
	// enough nodes able to hold the job must remain, or Submit rejects
	// it. Placement, the backfill plan, preemption and Explain all keep
	// the job off them. A launch failure reported with
	// RequeueEvent.ExcludeNodes adds the failed nodes here. It was called
	// ExcludeNodes, the name an older journal, snapshot or JSON form
	// still holds and which is read into it.
	Exclude []string `json:",omitempty" was:"ExcludeNodes"`
	// NodeList is sbatch -w/--nodelist: a Slurm hostlist expression
	// ("gpu[01-04],cpu7") of nodes the job must be given, every one of
	// them; with a larger node count (Nodes) it gets more nodes besides,
	// and with Tasks it gets as many more as its tasks need (the sbatch
	// -w page: additional nodes as needed; -w n1 -n 40 on 16-CPU nodes
	// takes n1 and two others). The job's node count is at least the
	// number of names. Every name
	// must be a node of the job's partition able to hold it, or Submit
	// rejects the job; while one is down, drained, powered down or in a
	// reservation the job cannot use, the job pends with ReqNodeNotAvail
	// and Explain lists them (Slurm's "UnavailableNodes:").
	NodeList string `json:",omitempty"`
	// Constraint is sbatch -C/--constraint over the node features
	// (NodeConfig.Features), in Slurm's syntax (see package feature):
	// "a&b", "a|b", "(a|b)&c", the matching OR "[a|b]" (all nodes with
	// the same one), node counts "gpu*2" and multiple counts
	// "[rack1*2&rack2*2]". Malformed text is rejected at submission
	// (ErrInvalidJob wrapping feature.ErrSyntax), as is a constraint no
	// node of the partition satisfies; one that stops being satisfiable
	// when node features change (UpdateNode) leaves the job pending with
	// BadConstraints. With counts the job's node count is at least their
	// sum. With Tasks the nodes chosen to meet it also hold the tasks
	// ("[a|b]" -n 40 takes the first alternative whose nodes do).
	Constraint string `json:",omitempty"`
	// Contiguous is sbatch --contiguous: the job's nodes are consecutive
	// in the cluster's node order (the order of Config.Nodes, which is
	// the topology's leaf order when a topology is configured), with no
	// node between them left out.
	Contiguous bool `json:",omitempty"`
}

// RequeueMode is whether jobs may be requeued (JobSpec.Requeue, and the
// cluster default Config.JobRequeue).
type RequeueMode uint8

// Requeue modes.
const (
	// RequeueDefault: on a job, the cluster's Config.JobRequeue decides;
	// as Config.JobRequeue, Slurm's default JobRequeue=1 (requeueable).
	RequeueDefault RequeueMode = iota
	// RequeueYes: requeueable (sbatch --requeue; JobRequeue=1).
	RequeueYes
	// RequeueNo: never requeued (sbatch --no-requeue; JobRequeue=0).
	RequeueNo
)

var requeueModeNames = [...]string{RequeueDefault: "default", RequeueYes: "requeue", RequeueNo: "no-requeue"}

// String returns the mode's name ("default", "requeue", "no-requeue").
func (m RequeueMode) String() string { return enumName(m, requeueModeNames[:], "RequeueMode") }

// Job is a read-only snapshot of a job as the scheduler holds it.
type Job struct {
	ID   JobID
	Spec JobSpec
	// Partition is the resolved partition name (Spec.Partition or the default).
	Partition string
	State     JobState
	// Reason is why a pending job waits (set by the last Schedule) or why
	// a job ended (NodeDown, TimeLimit …).
	Reason policy.Reason
	// TimeLimit is the effective limit (the job's, or the partition's default).
	TimeLimit time.Duration
	// ReqNodes is the node count the job requires, as sacct's ReqNodes and
	// ReqTRES node= record it: Spec.Nodes (at least one), raised to what
	// Spec.NodeList and a counted Spec.Constraint need; for tasks spread
	// over a variable number of nodes, the fewest nodes that hold them;
	// for a GRESPerJob (--gpus) total without -N or with -N min-max, the
	// count chosen when the job was submitted or updated, or last chosen
	// again on a node or partition change (gpucount.go, gpurecount.go).
	ReqNodes int `json:",omitempty"`
	// PerNode is the TRES the job needs on each of its nodes (before
	// Exclusive widens it to whole nodes); a GRESPerJob counts one per
	// node here, the rest being spread at placement (see Alloc).
	PerNode gres.Vector
	// Priority is the job's scheduling priority (higher first). Zero under
	// the FCFS policy, which orders by submit time.
	Priority uint32
	// SubmitTime, StartTime and EndTime are the event times; zero when not
	// reached.
	SubmitTime, StartTime, EndTime time.Time
	// EligibleTime is when the job first became eligible to start (its
	// begin time reached, its partition up, its request within the
	// partition's limits, its dependencies satisfied), as sacct's
	// Eligible; zero until then. The multifactor age factor counts from
	// it (unless PriorityFlags has ACCRUE_ALWAYS), as Slurm's does.
	EligibleTime time.Time
	// ExitCode is the exit code given to Finish.
	ExitCode int
	// Restarts counts how many times the job was requeued.
	Restarts int
	// Starts counts how many times the job was started (given an
	// allocation): its runs, the current one included.
	Starts int `json:",omitempty"`
	// LaunchFailures counts the requeues for a failed launch (Requeue and
	// RequeueExcluding: reason launch_failed_requeued), a part of
	// Restarts.
	LaunchFailures int `json:",omitempty"`
	// IdleRequeues counts the requeues of the allocated-but-idle action
	// (TelemetryConfig.Action IdleRequeue; at most MaxIdleRequeues; a
	// part of Restarts).
	IdleRequeues int `json:",omitempty"`
	// Alloc is the job's allocation while running (and the last one after it
	// ended).
	Alloc Allocation
	// Backfilled reports that the backfill pass started the job.
	Backfilled bool
	// ArrayJobID and ArrayTaskID identify a task of a job array
	// (SubmitArray): the array's ID is its first task's job ID. Zero
	// ArrayJobID: not an array task.
	ArrayJobID  JobID
	ArrayTaskID int
	// LastCheckpoint is the last checkpoint the job reported (Checkpoint).
	LastCheckpoint time.Time
	// LostGPUSeconds is the GPU work preemption destroyed in this job.
	LostGPUSeconds float64
	// LostWorkGPUSeconds is the GPU work lost in this job for every
	// cause (the "lost GPU-seconds" of goodput): for each run ended
	// without its work kept, its GPUs × the time since its last
	// checkpoint (or its start). A run is lost when it is requeued (a
	// launch failure, a node failure, scontrol requeue, the idle action),
	// ends in NODE_FAIL, TIMEOUT or FAILED, is cancelled by the idle
	// action, or is preempted (then as LostGPUSeconds counts it, which
	// LostWorkGPUSeconds includes). A cancelled or completed run keeps
	// its work. GPUs are the whole GPU devices of the allocation.
	LostWorkGPUSeconds float64 `json:",omitempty"`
	// Usage is what the job did with its allocation over all its runs,
	// folded from its telemetry (TelemetryEvent); nil until a reading
	// arrives.
	Usage *telemetry.Usage `json:",omitempty"`
	// Steps is the usage of the steps of the job's current (or last) run
	// whose cgroups were read (JobReading.Step), in the order first read;
	// at most MaxSteps.
	Steps []StepUsage `json:",omitempty"`
	// Hold is the job's hold (Scheduler.Hold, JobSpec.Hold, RequeueJob
	// with hold): a held pending job never starts, has priority 0 and
	// pends with JobHeldUser or JobHeldAdmin. A running job may be held
	// too: it keeps running, and is held if it is requeued.
	Hold HoldKind `json:",omitempty"`
	// AdminPriority is a priority an administrator fixed (UpdateJob with
	// Priority, scontrol update priority=N): it replaces the computed
	// priority until reset. Zero: none.
	AdminPriority uint32 `json:",omitempty"`
	// AdminSuspended reports a job SUSPENDED by SuspendJob (scontrol
	// suspend), as opposed to one suspended by preemption: it keeps its
	// whole allocation and resumes only by ResumeJob.
	AdminSuspended bool `json:",omitempty"`
	// ExpectedStart and PlannedNodes are, for a pending job under
	// backfill, when and where the plan expects it to start (squeue
	// --start); zero and nil when the plan has no estimate. EstimatedAt
	// is the time of the cycle that computed them: the last cycle's,
	// unless Config.EstimateInterval let an older estimate stand.
	ExpectedStart time.Time
	PlannedNodes  []string
	EstimatedAt   time.Time
	// HetJobID and HetJobOffset identify a component of a heterogeneous
	// job (SubmitHet), as Slurm's HetJobId and HetJobOffset: every
	// component is a job of its own with its own ID, the leader's ID plus
	// its offset, and HetJobID is the leader's (offset 0) ID. squeue
	// and sacct show a component as HetJobID+HetJobOffset ("123+1", see
	// JobLabel). Zero HetJobID: not a heterogeneous job.
	HetJobID     JobID `json:",omitempty"`
	HetJobOffset int   `json:",omitempty"`

	// tres names PerNode's TRES in MarshalJSON: the registry's names by
	// ID (set by the scheduler's snapshot of the job; nil in a Job built
	// by hand).
	tres []string
}

// Allocation is the concrete resources a job holds: per node, which CPUs,
// how much memory and which device indices.
type Allocation struct {
	Nodes []NodeAlloc
	// Billing is the allocation's billable TRES (the partition's
	// TRESBillingWeights over the job's total TRES, combined as
	// Config.BillingMode says; the CPU count when the
	// partition has no weights), what fair-share usage is charged in.
	Billing float64
	// Quality is the network placement quality in (0, 1], 1 being the
	// least spread possible for the node count (see topology.Quality); 1
	// when the cluster has no topology or the job has one node.
	Quality float64
	// OverSubscribe is how many jobs in all may share each of the
	// allocation's CPUs (its partition's OverSubscribe count, under FORCE
	// or under YES for an --oversubscribe job) as it started; zero when
	// its CPUs are its own. Jobs sharing a CPU each list it in CPUs, and
	// each counts it in its TRES cpu, as Slurm's AllocTRES does.
	OverSubscribe int `json:",omitempty"`

	// tres names the nodes' TRES in MarshalJSON (set where the scheduler
	// hands an allocation out; nil in one built by hand).
	tres []string
}

// NodeAlloc is a job's share of one node.
type NodeAlloc struct {
	// Node is the node's index in Config.Nodes; Name its name.
	Node int
	Name string
	// CPUs lists the allocated CPU ids on the node.
	CPUs []int
	// MemoryMiB is the allocated memory.
	MemoryMiB int64
	// Devices lists the allocated device indices (GPU indices for GPUs),
	// in increasing order.
	Devices []int
	// DeviceQuality in [0, 1] is how tightly connected the allocated
	// devices are (see gres.Placement.Quality); 1 for fewer than two.
	DeviceQuality float64
	// TRES is the allocated resources as a vector (cpu, mem, node=1, gres…).
	TRES gres.Vector
	// Shares lists the shards and MPS shares (Slurm's gres/shard and
	// gres/mps) allocated on the node, each with its device index, in
	// increasing device order; the devices stay shared, so they are not
	// in Devices.
	Shares []gres.ShareGrant `json:",omitempty"`
}

// NodeNames returns the allocated node names in allocation order.
func (a Allocation) NodeNames() []string {
	out := make([]string, len(a.Nodes))
	for i, n := range a.Nodes {
		out[i] = n.Name
	}
	return out
}

// Total returns the allocation's TRES summed over its nodes.
func (a Allocation) Total() gres.Vector {
	return a.sumInto(nil)
}

// sumInto is Total written over t's array when it has room (t's contents
// are dropped).
func (a Allocation) sumInto(t gres.Vector) gres.Vector {
	k := 0
	for _, n := range a.Nodes {
		k = max(k, len(n.TRES))
	}
	if cap(t) < k {
		t = make(gres.Vector, k)
	} else {
		t = t[:k]
		clear(t)
	}
	for _, n := range a.Nodes {
		_ = t.AddInPlace(n.TRES) // allocations are bounded by node capacity: no overflow
	}
	return t
}
