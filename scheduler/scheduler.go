package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/google/btree"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/feature"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/topology"
)

// Scheduler is the cluster model and the scheduling state machine. The
// caller owns the loop: it feeds events (Submit, Cancel, Finish, node
// events) with the current time, and calls Schedule(now) for decisions.
// Every method that mutates state either succeeds completely or returns an
// error and leaves the state untouched.
//
// A Scheduler is not safe for concurrent use; serialise calls (one control
// loop), as with etcd's raft.Node.
type Scheduler struct {
	reg *gres.Registry
	// tresByID is reg's names by ID, shared by the output values that
	// carry them for MarshalJSON (see tresNames).
	tresByID   []string
	nodes      []node
	nodeByName map[string]int
	parts      []partition
	partByName map[string]int
	defPart    int

	jobs map[JobID]*job
	// done lists the finished jobs in the order they finished, from
	// doneHead on, for MinJobAge; purged keeps the outcome of the jobs
	// forgotten since, for dependencies (see purgedOutcome).
	done      []*job
	doneHead  int
	minJobAge time.Duration
	purged    []uint8
	firstID   JobID               // the first job's ID
	pending   *btree.BTreeG[*job] // in queue order
	running   *btree.BTreeG[*job] // by deadline, then ID
	nextID    JobID
	last      time.Time // time of the latest event applied

	graph  *topology.Graph  // nil without Config.Topology
	topo   *topology.Config // Config.Topology as given (Snapshot writes it)
	prio   *prio            // nil without Config.Priority (FCFS)
	bf     *bfState         // nil without Config.Backfill
	power  *powerState      // nil without Config.Power
	pol    *polState        // nil without Config.Policy
	usable topology.NodeSet // nodes whose admin state is up
	// removed holds the tombstones of removed nodes (see nodeadmin.go);
	// length 0 until a node is removed.
	removed topology.NodeSet
	shapes  map[string]*shape
	// inPass is set while Schedule walks the pending index; jobs requeued
	// meanwhile (preemption victims) wait in deferred.
	inPass   bool
	deferred []*job
	// unjudged holds, during the settling passes of a Schedule call, the
	// jobs its preemptions requeued (see settle).
	unjudged map[JobID]bool
	// settlePasses counts the further passes settle ran (benchmarks).
	settlePasses uint64
	// eventDecisions holds the audit records of decisions made by events
	// between cycles (requeues); the next cycle carries them.
	eventDecisions []Decision
	// rekey lists pending jobs whose queue key changes after the pass
	// (preemptors waiting for their victims).
	rekey []*job
	// healthGen counts device health changes (invalidates cached profile use).
	healthGen uint64
	// shareGen counts changes to what the devices of nodes that share
	// them hold (starts, ends, suspensions, rollbacks), which invalidate
	// shareUse, the backfill profile's view of those nodes (see
	// backfill_shares.go), and the cached profile use of the jobs there.
	shareGen uint64
	shareUse map[int]*nodeShareUse
	// claim1 is one more than the backfill profile's device-claim
	// dimension (0: none, no node shares devices); claimIDs the untyped
	// device TRES a claim counts (see backfill_claims.go), increasing;
	// claimEpoch counts their changes (invalidates job.bfClaimed).
	claim1     int
	claimIDs   []gres.ID
	claimEpoch uint64
	// sharerSeq numbers the share generations given to nodes (node.sharerGen), for CPU sharers (oversub.go),
	// never reused, not even by a rollback.
	sharerSeq uint64
	// policyVersion caches PolicyVersion; reset when reservations change.
	policyVersion string
	// suspended lists the SUSPENDED jobs, in suspension order.
	suspended []*job
	// billMode is how billing weights combine (Config.BillingMode).
	billMode gres.BillingMode
	// telCfg is Config.Telemetry (UpdateTelemetryEvent changes it).
	telCfg TelemetryConfig
	// telScratch is a TelemetryEvent's scratch (telemetry.go).
	telScratch telScratch
	gpuOrder   gres.DeviceOrder // Config.GPUOrder
	// arrays holds the job arrays by array job ID; maxArray bounds indices.
	arrays   map[JobID]*array
	maxArray int
	cycleNo  uint64 // numbers cycles, for per-cycle caches
	// noRequeue is Config.JobRequeue=RequeueNo (JobRequeue=0).
	noRequeue bool
	// requeueDelay is Config.RequeueDelay.
	requeueDelay time.Duration
	// crUnit is Config.SelectTypeParameters (crunit.go).
	crUnit CRUnit
	// shareBuf is shareCells' scratch (oversub.go).
	shareBuf []cpuCell
	// bootTime is Config.BootTime with its default; boot is the state of
	// the nodes rebooting into changeable features (reboot.go).
	bootTime time.Duration
	boot     bootState

	// scratch sets reused by Schedule
	avail, cand, fit topology.NodeSet
	fits             fitMemo // the main pass's placement summaries (placesum.go)
	// Scratch reused from call to call (see where each is filled): the
	// nodes place chose, the jobs started by the main pass, the pending
	// jobs of the cycle being built (parallel to Cycle.Pending), the jobs
	// holding limit counters back (passBlocks.holders), and a TRES sum;
	// AuditRecords' scratch; a shape key being looked up.
	keyBuf   []byte
	placed   []int
	started  []*job
	pendJobs []*job
	holders  []*job
	sum      gres.Vector
	audit    auditScratch
	// jr is the undo journal of the cycle running (see journal).
	jr journal
	// log receives every event before it is applied (SetEventLog).
	log EventLog
	// tiers groups the live nodes by Weight, lightest first (nil when all
	// weigh the same); tierGen counts its rebuilds, and tierKey names the
	// current tiers for the backfill planner's cache (see weight.go).
	tiers   []topology.NodeSet
	tierGen uint64
	tierKey string
	// whereC is the where chooser's node sets and scratch (where_sets.go).
	whereC whereCache
	// tierChooser is chooseByWeight as a backfill.NodeChooser, made once.
	tierChooser backfill.NodeChooser
	// cycleFault, when set (tests), is called at the end of every cycle;
	// an error it returns fails the cycle.
	cycleFault func() error
	// exclUserUses counts the nodes' running --exclusive=user jobs, summed
	// (exclusive.go): zero spares the plan its per-node check.
	exclUserUses int
	// exclNodes lists the nodes running --exclusive=user jobs, rebuilt
	// when exclNodesStale (a count changed).
	exclNodes      []int
	exclNodesStale bool
	exclGen        uint64
	// lic is the cluster's licenses (license.go).
	lic licenses
	// hets holds the heterogeneous jobs by leader ID (see hetjob.go).
	hets map[JobID]*hetJob
}

type partition struct {
	cfg   PartitionConfig
	nodes topology.NodeSet
}

// job is the scheduler's internal record: the public snapshot plus the
// derived request.
type job struct {
	Job
	part     int
	tier     int
	nodes    int
	perNode  gres.Vector    // per-node request (cpu, mem, node=1, gres); Job.PerNode is set by snapshot
	devReq   []gres.Request // per-node device requests, merged by (name, type)
	shape    *shape
	deadline time.Time
	// breakdown explains Priority under multifactor priority.
	breakdown priority.Breakdown
	// planned holds the node indices of the backfill plan's expected
	// start; reserved says whether the plan booked a reservation there.
	planned []int
	// doneCycle is the cycle count when the job finished (MinJobAge).
	doneCycle uint64
	// assoc is "account/user", the backfill planner's association key.
	assoc    string
	reserved bool
	// subject is the job's resolved policy identity, as of policy
	// generation subjGen (read it with Scheduler.subjectOf, which rebases
	// it after a policy change); dep its dependency.
	subject policy.Subject
	subjGen uint64
	dep     policy.Dependency
	// bfPer is the per-node request as the backfill profile counts it
	// (ceil(total/nodes) for a --gpus total); bfUse caches the per-node use as the profile counts
	// it (valid for health generation bfUseHealthGen and, for a sharer,
	// while every node of its allocation is at the share generation in
	// bfUseSharerGens, see sharersChanged).
	bfPer           gres.Vector
	total           gres.Vector // perNode × nodes (see totalRequest)
	chooserKeys     [2]string   // the backfill chooser key, unrelaxed and relaxed
	bfUse           []backfill.Alloc
	bfUseHealthGen  uint64
	bfUseShareGen   uint64 // the share generation bfUse holds for, when it holds devices on nodes that share them
	bfUseSharerGens []uint64
	// bfMin and bfSpread are what the backfill pass plans with: the
	// per-node minimum and the GRESPerJob beyond it as a backfill Spread
	// (bfSpread nil without one, or where the spread is not exact; then
	// bfMin is bfPer). See bfSpreadExact.
	bfMin, bfSpread gres.Vector
	// bfClaimed is bfMin with the device claims the plan counts on nodes
	// that share devices, for bfMin bfClaimOf and claim epoch
	// bfClaimEpoch (see backfill_claims.go).
	bfClaimed, bfClaimOf gres.Vector
	bfClaimEpoch         uint64
	// suspendedBy is the preemptor a SUSPENDED job waits for; remaining
	// its run time left; suspendedCPUs its CPU count per node.
	suspendedBy   JobID
	remaining     time.Duration
	suspendedCPUs []int64
	// preemptFirst puts a job that preempted victims (and waits for their
	// grace time) ahead of every other in the queue, as Slurm sorts
	// preemptors first, so that what its victims free goes to it.
	// awaitingVictims counts its victims still in their grace time;
	// preemptedFor is, on a victim, the job it makes room for.
	preemptFirst    bool
	awaitingVictims int
	preemptedFor    JobID
	// preempting marks a preemption victim in its grace time; it is ended
	// (or requeued, per preemptAction) at its deadline.
	preempting    bool
	preemptAction policy.PreemptAction
	// preemptRank is the job's policy.Subject.PreemptRank: a job that may
	// preempt another ranks above it and is considered first.
	preemptRank int
	// usageTotal and usageEnd are what the policy usage counts of the
	// running job (policyStart), for taking a stop back. touched and
	// viewed are the journal epochs the job and its pending view were
	// last saved in (see Scheduler.touch).
	usageTotal      gres.Vector
	usageEnd        time.Time
	touched, viewed uint64
	// extra is the GRESPerJob beyond one per node, spread over the nodes
	// at placement (see spreadExtra), and extraTotal its TRES; tpn is the
	// tasks per node.
	extra      []gres.Request
	extraTotal gres.Vector
	tpn        int64
	// planShares is, while the backfill pass starts the job, each planned
	// node's share of its GRESPerJob (backfill.Entry.Spread), which
	// spreadExtra then places; nil otherwise.
	planShares []gres.Vector
	// excluded holds the indices of JobSpec.Exclude, ascending
	// (derived from the spec; part of the job's shape).
	excluded []int
	// tel is the job's telemetry (nil until its first reading; see
	// telemetry.go). A new run gets a new value (copy on write), so the
	// undo journal's copy of the job keeps the old one.
	tel *jobTelemetry
	// cons is JobSpec.Constraint parsed (its per-node part is in the
	// shape) and where the rest of where the job may run (nil: nothing
	// beyond its shape); see where.go.
	cons  feature.Constraint
	where *whereReq
	// restoreRequired carries the required nodes from a snapshot's
	// record to restoreWhere (nil otherwise).
	restoreRequired []int
	// whereOK caches whereSatisfiable for the shape whereShape and the
	// node generation whereGen (Scheduler.tierGen).
	whereOK    bool
	whereShape *shape
	whereGen   uint64
	// bfNarrow is the backfill plan's allowed set narrowed to the nodes
	// the where chooser can pick (narrowAllowed), replaced when it
	// changes.
	bfNarrow topology.NodeSet
	// bootAllowed is the backfill plan's allowed set without the
	// rebooting nodes whose new features do not suit the job (reboot.go).
	bootAllowed topology.NodeSet
	// whereBF is the job's where chooser for the backfill plan, kept
	// while its base key stays (whereChooser).
	whereBF *whereBF
	// defMemPerCPU, defCPUPerGPU and defMemPerGPU are the partition's
	// DefMemPerCPU, DefCpuPerGPU and DefMemPerGPU when the job was
	// submitted (or last updated), what nodeVector applies.
	defMemPerCPU, defCPUPerGPU, defMemPerGPU int64
	// killBy is, while the job runs, the end of the reservation window
	// it runs in (its deadline never passes it); zero for none.
	killBy time.Time
	// tasks is how a job with a variable number of tasks per node (or a
	// node count range) spreads them (see tasks.go); nil when every node
	// takes perNode. planTasks is, while the backfill pass starts the
	// job, each planned node's task count (nil otherwise).
	tasks     *taskSpread
	planTasks []int
	// held caches, while the job runs, the limit counters it holds (see
	// limitplan.go's heldOf).
	held heldCache
	// bfCheck is, while the job is pending, its policy request compiled
	// for the backfill pass, compared last in pass bfCheckPass
	// (bfinputs.go).
	bfCheck     *policy.StartCheck
	bfCheckPass uint64
	bfKeyNos    keyNos // its slot keys' numbers (bfinputs.go)
}

// New validates cfg and returns a Scheduler holding the cluster it
// describes, with every node up and idle.
func New(cfg Config) (*Scheduler, error) {
	graph, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	reg := cfg.Registry
	if reg == nil {
		if reg, err = gres.NewRegistry(); err != nil {
			return nil, err
		}
	}
	if err := registerNodes(reg, cfg.Nodes); err != nil {
		return nil, err
	}
	lic, err := newLicenses(reg, cfg.Licenses)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{
		lic:        lic,
		reg:        reg,
		nodes:      make([]node, len(cfg.Nodes)),
		nodeByName: make(map[string]int, len(cfg.Nodes)),
		partByName: make(map[string]int, len(cfg.Partitions)),
		jobs:       make(map[JobID]*job),
		pending:    btree.NewG(32, queueLess),
		running:    btree.NewG(32, deadlineLess),
		nextID:     max(cfg.FirstJobID, 1),
		firstID:    max(cfg.FirstJobID, 1),
		graph:      graph,
		topo:       cloneTopology(cfg.Topology),
		shapes:     make(map[string]*shape),
		arrays:     make(map[JobID]*array),
		hets:       make(map[JobID]*hetJob),
		maxArray:   max(cfg.MaxArraySize, 0),
		minJobAge:  cfg.MinJobAge,
		noRequeue:  cfg.JobRequeue == RequeueNo,
	}
	s.requeueDelay = cfg.RequeueDelay
	s.crUnit = cfg.SelectTypeParameters
	s.bootTime = cmp.Or(cfg.BootTime, DefaultBootTime)
	s.billMode, _ = cfg.billingMode() // validate checked it
	s.telCfg = cfg.Telemetry
	s.gpuOrder = cfg.GPUOrder
	n := len(cfg.Nodes)
	s.usable = topology.FullNodeSet(n)
	s.avail = topology.NewNodeSet(n)
	s.cand = topology.NewNodeSet(n)
	s.fit = topology.NewNodeSet(n)
	for i := range cfg.Nodes {
		nd, err := s.buildNode(cfg.Nodes[i])
		if err != nil {
			return nil, err
		}
		s.nodes[i] = nd
		s.nodeByName[nd.cfg.Name] = i
	}
	s.parts = make([]partition, len(cfg.Partitions))
	s.defPart = 0
	for i, pc := range cfg.Partitions {
		pc.Nodes = slices.Clone(pc.Nodes)
		if pc.PriorityTier == 0 {
			pc.PriorityTier = 1
		}
		if pc.PriorityJobFactor == 0 {
			pc.PriorityJobFactor = 1
		}
		p := partition{cfg: pc, nodes: topology.NewNodeSet(n)}
		if len(pc.Nodes) == 0 {
			p.nodes.Fill()
		}
		for _, nn := range pc.Nodes {
			p.nodes.Add(s.nodeByName[nn])
		}
		s.parts[i] = p
		s.partByName[pc.Name] = i
		if pc.Default {
			s.defPart = i
		}
	}
	polCfg := cfg.Policy
	for i := range cfg.Partitions {
		if polCfg == nil && cfg.Partitions[i].hasPolicy() {
			polCfg = &policy.Config{}
		}
	}
	if polCfg != nil {
		// The policy sees the partitions with their defaults applied
		// (PriorityTier 1), as the queue does.
		parts := make([]PartitionConfig, len(s.parts))
		for i := range s.parts {
			parts[i] = s.parts[i].cfg
		}
		if err := s.initPolicy(*polCfg, parts); err != nil {
			return nil, err
		}
	}
	if cfg.Power != nil {
		s.initPower(*cfg.Power)
	}
	if cfg.Backfill != nil {
		if err := s.initBackfill(*cfg.Backfill, cfg.EstimateInterval); err != nil {
			return nil, err
		}
	}
	if cfg.Priority != nil {
		pc := *cfg.Priority
		if err := s.initPriority(&pc); err != nil {
			return nil, err
		}
	}
	s.tresByID = reg.Names()
	s.refreshWeightTiers()
	return s, nil
}

// buildNode returns the runtime state of a new, idle node with config nc
// (copied), whose GRES names are registered. It changes nothing.
func (s *Scheduler) buildNode(nc NodeConfig) (node, error) {
	nc.Features = slices.Clone(nc.Features)
	nc.ChangeableFeatures = slices.Clone(nc.ChangeableFeatures)
	nc.GRES = slices.Clone(nc.GRES)
	nd := node{cfg: &nc}
	lay, err := nc.layout()
	if err != nil {
		return node{}, err
	}
	nd.lay = lay
	nd.capacity = s.nodeCapacity(&nc)
	nd.free = nd.capacity.Clone()
	nd.cpuUsed = make([]uint64, (nc.CPUs+63)/64)
	if len(nc.Devices.Devices) > 0 {
		ds, err := gres.NewNodeDevices(lay.cpuInventory(nc.Devices))
		if err != nil {
			return node{}, fmt.Errorf("%w: node %q: %w", ErrInvalidConfig, nc.Name, err)
		}
		nd.devs = ds
		nd.devTRES = make(map[int][2]gres.ID, len(nc.Devices.Devices))
		nd.devCores = make(map[int]gres.CoreSet, len(nc.Devices.Devices))
		for _, d := range nc.Devices.Devices {
			nd.devCores[d.Index] = lay.cpusOfCores(d.Cores) // Cores= names cores
			nd.hasAffinity = nd.hasAffinity || !d.Cores.IsEmpty()
			ids := [2]gres.ID{s.reg.MustLookup(deviceTRES(d.Name, "")), -1}
			if d.Type != "" {
				ids[1] = s.reg.MustLookup(deviceTRES(d.Name, d.Type))
			}
			nd.devTRES[d.Index] = ids
		}
	}
	return nd, nil
}

// NewRegistry returns a TRES registry holding the built-in TRES and every
// device and GRES name and type of nodes, as New registers them: build
// policy limits and priority TRES weights against it, and pass it as
// Config.Registry.
func NewRegistry(nodes []NodeConfig) (*gres.Registry, error) {
	reg, err := gres.NewRegistry()
	if err != nil {
		return nil, err
	}
	if err := registerNodes(reg, nodes); err != nil {
		return nil, err
	}
	return reg, nil
}

// registerNodes registers every device and GRES name and type of nodes,
// so all vectors share one length.
func registerNodes(reg *gres.Registry, nodes []NodeConfig) error {
	for i := range nodes {
		for _, d := range nodes[i].Devices.Devices {
			if _, err := reg.Register(deviceTRES(d.Name, d.Type)); err != nil {
				return fmt.Errorf("%w: node %q: device %d: %w", ErrInvalidConfig, nodes[i].Name, d.Index, err)
			}
		}
		for _, g := range nodes[i].GRES {
			if _, err := reg.Register(deviceTRES(g.Name, g.Type)); err != nil {
				return fmt.Errorf("%w: node %q: GRES %s: %w", ErrInvalidConfig, nodes[i].Name, g, err)
			}
		}
		if err := registerShares(reg, &nodes[i]); err != nil {
			return err
		}
	}
	return nil
}

func deviceTRES(name, typ string) string {
	if typ == "" {
		return "gres/" + name
	}
	return "gres/" + name + ":" + typ
}

func (s *Scheduler) nodeCapacity(nc *NodeConfig) gres.Vector {
	v := s.reg.NewVector()
	v[gres.CPU] = int64(nc.CPUs)
	v[gres.Mem] = nc.MemoryMiB
	v[gres.Node] = 1
	for _, d := range nc.Devices.Devices {
		v[s.reg.MustLookup(deviceTRES(d.Name, ""))]++
		if d.Type != "" {
			v[s.reg.MustLookup(deviceTRES(d.Name, d.Type))]++
		}
	}
	for _, g := range nc.GRES {
		v[s.reg.MustLookup(deviceTRES(g.Name, ""))] += g.Count
		if g.Type != "" {
			v[s.reg.MustLookup(deviceTRES(g.Name, g.Type))] += g.Count
		}
	}
	s.addShareCapacity(v, nc)
	return v
}

// Registry returns the TRES registry the scheduler's vectors are indexed by.
// Callers must not register new names in it.
func (s *Scheduler) Registry() *gres.Registry { return s.reg }

// queueLess orders pending jobs as Slurm evaluates them: preemptors
// waiting for their victims first, then jobs that may preempt others
// before the jobs they may preempt (higher PreemptRank first), then jobs
// that name a reservation, then partition PriorityTier (higher first),
// priority (higher first), submit time (earlier first), then job ID
// (lower first).
func queueLess(a, b *job) bool {
	return queueKeyLess(a, a.Spec.Reservation != "", b, b.Spec.Reservation != "")
}

func deadlineLess(a, b *job) bool {
	if !a.deadline.Equal(b.deadline) {
		return a.deadline.Before(b.deadline)
	}
	return a.ID < b.ID
}

func (s *Scheduler) tick(now time.Time) error {
	if now.Before(s.last) {
		return fmt.Errorf("%w: %s is before the last event at %s", ErrTimeWentBackwards,
			now.Format(time.RFC3339Nano), s.last.Format(time.RFC3339Nano))
	}
	return nil
}

// DefaultMaxArraySize is Slurm's MaxArraySize default: array indices must
// be below it.
const DefaultMaxArraySize = policy.DefaultMaxArraySize

// submitArray queues the tasks of array (see SubmitArray).
func (s *Scheduler) submitArray(now time.Time, spec JobSpec, array string) ([]JobID, error) {
	a, err := policy.ParseArray(array, s.maxArray)
	if err != nil {
		return nil, fmt.Errorf("%w: array %q: %w", ErrInvalidJob, array, err)
	}
	indices := a.Indices()
	first, err := s.submit(now, spec, indices, a.Throttle)
	if err != nil {
		return nil, err
	}
	ids := make([]JobID, max(len(indices), 1)) // as many as submit queued
	for k := range ids {
		ids[k] = first + JobID(k)
	}
	return ids, nil
}

// submit queues one job (indices nil) or one job per array index (with
// consecutive IDs), returning the first ID.
func (s *Scheduler) submit(now time.Time, spec JobSpec, indices []int, throttle int) (JobID, error) {
	if err := s.tick(now); err != nil {
		return 0, err
	}
	j0, err := s.newJob(spec)
	if err != nil {
		return 0, err
	}
	n := max(len(indices), 1)
	if err := s.admitPolicy(j0, s.nextID, n); err != nil {
		return 0, err
	}
	if spec.Hold {
		j0.Hold, j0.Reason = HoldUser, policy.ReasonJobHeldUser // sbatch --hold
	}
	var one [1]*job
	jobs := one[:]
	if n > 1 {
		jobs = make([]*job, n)
	}
	for k := range jobs {
		j := j0
		if k > 0 {
			c := *j0
			j = &c
		}
		j.ID = s.nextID + JobID(k)
		j.SubmitTime = now
		j.State = JobPending
		if indices != nil {
			j.ArrayJobID = s.nextID
			j.ArrayTaskID = indices[k]
		}
		if s.prio != nil {
			if err := s.computePriority(now, j); err != nil {
				return 0, fmt.Errorf("%w: %w", ErrInvalidJob, err)
			}
		}
		jobs[k] = j
	}
	if s.pol != nil {
		for k, j := range jobs {
			if err := s.pol.usage.AddJob(policy.JobID(j.ID), j.subject); err != nil {
				for _, done := range jobs[:k] {
					_ = s.pol.usage.RemoveJob(policy.JobID(done.ID))
				}
				return 0, fmt.Errorf("%w: %w", ErrInvalidJob, err)
			}
		}
	}
	if indices != nil {
		s.arrays[s.nextID] = &array{throttle: throttle, indices: indices}
	}
	for _, j := range jobs {
		s.jobs[j.ID] = j
		s.mutPending().ReplaceOrInsert(j)
	}
	first := s.nextID
	s.nextID += JobID(n)
	s.last = now
	return first, nil
}

// array is the scheduler's state of a job array: its throttle, how many
// of its tasks run, and its task indices (ascending; the task of
// indices[k] has ID array ID + k).
type array struct {
	throttle, running int
	indices           []int
}

// newJob validates spec and derives the per-node request.
func (s *Scheduler) newJob(spec JobSpec) (*job, error) { return s.newJobIn(spec, true) }

// newJobIn is newJob; with accepting false a partition that accepts no new
// jobs (DRAIN, INACTIVE) is not refused (a queued job's update that keeps
// its partition). A --gpus total whose node count Slurm chooses is
// resolved first (gpuNodeCount).
func (s *Scheduler) newJobIn(spec JobSpec, accepting bool) (*job, error) {
	if gpuCountChosen(spec) {
		return s.gpuNodeCount(spec, accepting, nil)
	}
	return s.newJobFixed(spec, accepting, nil)
}

// newJobFixed is newJobIn for a spec whose node count is not a --gpus
// total's to choose. With was set it rebuilds queued job was's request
// (a --gpus count chosen again, gpurecount.go): what was fixed when was
// was submitted stays as it was then — its excluded and required nodes
// as resolved then, the partition's defaults and OverSubscribe=EXCLUSIVE
// as they applied then, its time limit.
func (s *Scheduler) newJobFixed(spec JobSpec, accepting bool, was *job) (*job, error) {
	spec.GRESPerNode = slices.Clone(spec.GRESPerNode)
	spec.GRESPerTask = slices.Clone(spec.GRESPerTask)
	spec.GRESPerJob = slices.Clone(spec.GRESPerJob)
	spec.Licenses = slices.Clone(spec.Licenses)
	if err := s.checkLicenseRequest(spec.Licenses); err != nil {
		return nil, err
	}
	pi := s.defPart
	if spec.Partition != "" {
		var ok bool
		if pi, ok = s.partByName[spec.Partition]; !ok {
			return nil, fmt.Errorf("%w: %w %q", ErrInvalidJob, ErrUnknownPartition, spec.Partition)
		}
	}
	p := &s.parts[pi]
	switch p.cfg.State {
	case PartitionDrain, PartitionInactive:
		if !accepting {
			break
		}
		return nil, fmt.Errorf("%w: partition %q is %s and accepts no jobs", ErrInvalidJob, p.cfg.Name, p.cfg.State)
	}
	switch {
	case spec.Nodes < 0 || spec.Nodes > MaxNodesPerJob:
		return nil, fmt.Errorf("%w: Nodes %d out of range [0, %d]", ErrInvalidJob, spec.Nodes, MaxNodesPerJob)
	case spec.Tasks < 0 || spec.Tasks > MaxTasksPerJob:
		return nil, fmt.Errorf("%w: Tasks %d out of range [0, %d]", ErrInvalidJob, spec.Tasks, MaxTasksPerJob)
	case spec.CPUsPerTask < 0 || spec.CPUsPerTask > 1<<20:
		return nil, fmt.Errorf("%w: CPUsPerTask %d out of range [0, 2^20]", ErrInvalidJob, spec.CPUsPerTask)
	case spec.MemPerNodeMiB < 0 || spec.MemPerNodeMiB > gres.MaxCount:
		return nil, fmt.Errorf("%w: MemPerNodeMiB %d out of range", ErrInvalidJob, spec.MemPerNodeMiB)
	case spec.MemPerGPUMiB < 0 || spec.MemPerGPUMiB > gres.MaxCount>>16:
		return nil, fmt.Errorf("%w: MemPerGPUMiB %d out of range", ErrInvalidJob, spec.MemPerGPUMiB)
	case spec.MemPerGPUMiB > 0 && spec.MemPerNodeMiB > 0:
		return nil, fmt.Errorf("%w: MemPerGPUMiB and MemPerNodeMiB are mutually exclusive (--mem-per-gpu, --mem)", ErrInvalidJob)
	case spec.GPUsPerSocket < 0 || spec.GPUsPerSocket > 1<<10 || spec.SocketsPerNode < 0 || spec.SocketsPerNode > 64:
		return nil, fmt.Errorf("%w: GPUsPerSocket %d / SocketsPerNode %d out of range", ErrInvalidJob, spec.GPUsPerSocket, spec.SocketsPerNode)
	case spec.GPUsPerSocket == 0 && spec.SocketsPerNode > 0:
		return nil, fmt.Errorf("%w: SocketsPerNode needs GPUsPerSocket", ErrInvalidJob)
	case spec.CheckpointInterval < 0:
		return nil, fmt.Errorf("%w: CheckpointInterval %v is negative", ErrInvalidJob, spec.CheckpointInterval)
	case spec.CPUsPerGPU < 0 || spec.CPUsPerGPU > 1<<16:
		return nil, fmt.Errorf("%w: CPUsPerGPU %d out of range [0, 65536]", ErrInvalidJob, spec.CPUsPerGPU)
	case spec.TimeLimit < 0 || (spec.TimeLimit > 0 && spec.TimeLimit < time.Second) || spec.TimeLimit > MaxTimeLimit:
		// A limit under a second cannot be planned (nor run: Slurm counts whole minutes).
		return nil, fmt.Errorf("%w: TimeLimit %v out of range: 0 (the partition's default) or [1s, %v]", ErrInvalidJob, spec.TimeLimit, MaxTimeLimit)
	case spec.TimeMin < 0 || (spec.TimeMin > 0 && spec.TimeMin < time.Second):
		return nil, fmt.Errorf("%w: TimeMin %v out of range: 0 (none) or at least 1s", ErrInvalidJob, spec.TimeMin)
	case spec.Switches < 0 || spec.Switches > MaxNodesPerJob:
		return nil, fmt.Errorf("%w: Switches %d out of range", ErrInvalidJob, spec.Switches)
	case spec.SwitchesMaxWait < 0:
		return nil, fmt.Errorf("%w: SwitchesMaxWait %v is negative", ErrInvalidJob, spec.SwitchesMaxWait)
	case spec.Segment < 0 || spec.Segment > MaxNodesPerJob:
		return nil, fmt.Errorf("%w: Segment %d out of range", ErrInvalidJob, spec.Segment)
	case spec.Nice < -priority.MaxNice || spec.Nice > priority.MaxNice:
		return nil, fmt.Errorf("%w: Nice %d out of range [-%d, %d]", ErrInvalidJob, spec.Nice, priority.MaxNice, priority.MaxNice)
	case spec.Requeue > RequeueNo:
		return nil, fmt.Errorf("%w: Requeue %v unknown", ErrInvalidJob, spec.Requeue)
	case spec.NVLinkDomain > topology.DomainBalanced:
		return nil, fmt.Errorf("%w: NVLinkDomain %d unknown", ErrInvalidJob, spec.NVLinkDomain)
	}
	if err := spec.validateLayoutRequest(); err != nil {
		return nil, err
	}
	// Where the job may run (where.go): its excluded and required nodes
	// and its constraint, which may raise its node count.
	var excluded []int
	var err error
	if was != nil {
		excluded = was.excluded
	} else if excluded, err = s.resolveHostlists("Exclude", spec.Exclude); err != nil {
		return nil, err
	}
	cons, err := parseConstraint(spec.Constraint)
	if err != nil {
		return nil, err
	}
	if err := s.checkChangeable(cons); err != nil {
		return nil, err
	}
	var where *whereReq
	if was != nil {
		var required []int
		if was.where != nil {
			required = was.where.required
		}
		where = makeWhere(required, cons, spec.Contiguous)
	} else if where, err = s.newWhere(spec, cons, excluded); err != nil {
		return nil, err
	}
	nodes, tpn, ts, err := resolveTasks(&spec)
	if err != nil {
		return nil, err
	}
	if m := where.minNodes(); m > nodes {
		// The required nodes or the constraint's counts raise the count
		// (a task spread's minimum; where_tasks.go).
		if spec.Tasks > 0 && spec.Tasks < m {
			return nil, fmt.Errorf("%w: Tasks %d fewer than the %d node(s) NodeList and Constraint need", ErrInvalidJob, spec.Tasks, m)
		}
		if ts != nil && m > ts.nodesMax {
			return nil, fmt.Errorf("%w: NodeList and Constraint need %d node(s), above NodesMax %d (-N %d-%d)", ErrInvalidJob, m, ts.nodesMax, spec.Nodes, ts.nodesMax)
		}
		nodes = m
		switch {
		case spec.Tasks == 0 || ts != nil:
		case (spec.Tasks%m != 0 || spec.planeSize() > 0) && len(spec.GRESPerJob) == 0:
			// -N1 -n7 -w n[1-2]: the tasks spread over the two nodes, 4+3
			// (or in blocks, for -m plane).
			if p := spec.planeSize(); p > 0 && (spec.Tasks+p-1)/p < m {
				return nil, fmt.Errorf("%w: Tasks %d make %d block(s) of plane=%d, fewer than the %d node(s) NodeList and Constraint need", ErrInvalidJob, spec.Tasks, (spec.Tasks+p-1)/p, p, m)
			}
			ts = &taskSpread{total: spec.Tasks, maxPer: spec.TasksPerNode, perSocket: spec.TasksPerSocket, nodesMax: m,
				plane: int64(spec.planeSize())}
			tpn = 1
		default:
			tpn = int64((spec.Tasks + m - 1) / m)
		}
	}
	j := &job{part: pi, tier: p.cfg.PriorityTier, nodes: nodes, tasks: ts}
	j.Spec = spec
	j.Partition = p.cfg.Name
	j.TimeLimit = p.effectiveLimit(spec.TimeLimit)
	if was != nil {
		j.TimeLimit = was.TimeLimit
	}
	j.Spec.Exclude = slices.Clone(spec.Exclude)
	j.excluded, j.cons, j.where = excluded, cons, where
	if spec.TimeMin > j.TimeLimit {
		return nil, fmt.Errorf("%w: TimeMin %v exceeds the time limit %v", ErrInvalidJob, spec.TimeMin, j.TimeLimit)
	}
	// The partition's policy (OverSubscribe, DefCpuPerGPU, DefMemPerGPU).
	var pp policy.Partition
	hasPP := false
	if s.pol != nil {
		pp, hasPP = s.pol.p.Partition(p.cfg.Name)
	}
	if hasPP && was == nil && pp.WholeNodes(spec.Exclusive) {
		spec.Exclusive = true // OverSubscribe=EXCLUSIVE
		j.Spec.Exclusive = true
	}
	devReq, extra, err := mergeDeviceRequests(spec, int64(nodes), tpn)
	if err != nil {
		return nil, err
	}
	j.devReq, j.extra, j.tpn = devReq, extra, tpn
	// The partition's defaults apply as they are at submission (as in
	// Slurm, a job's request is fixed then): a later change of the
	// partition does not change the job's CPUs or memory per GPU.
	j.defMemPerCPU = p.cfg.DefMemPerCPU
	if hasPP {
		j.defCPUPerGPU, j.defMemPerGPU = int64(pp.DefCPUPerGPU), pp.DefMemPerGPU
	}
	if was != nil {
		j.defMemPerCPU, j.defCPUPerGPU, j.defMemPerGPU = was.defMemPerCPU, was.defCPUPerGPU, was.defMemPerGPU
	}
	// The per-node request and the backfill profile's view of it (bfPer,
	// with a --gpus total as ceil(total/nodes) per node) share one array.
	nv := s.reg.Len()
	both := make(gres.Vector, 2*nv)
	v := both[:nv:nv]
	if err := s.nodeVector(j, devReq, v); err != nil {
		return nil, err
	}
	j.perNode = v
	j.bfPer = both[nv:]
	if len(extra) == 0 {
		copy(j.bfPer, v)
	} else {
		// The ceil view (bfPer): the job's --gpus spread evenly,
		// ceil(total/nodes) on each node, never smaller than it is;
		// the backfill pass plans the total exactly where it can
		// (bfMin, bfSpread below).
		even := slices.Clone(extra)
		for k := range even {
			even[k].Count = (even[k].Count + int64(nodes) - 1) / int64(nodes)
		}
		if err := s.nodeVector(j, addRequests(devReq, even), j.bfPer); err != nil {
			return nil, err
		}
		if j.extraTotal, err = s.requestVector(extra); err != nil {
			return nil, err
		}
	}
	j.bfPer[gres.Node] = 0
	j.bfMin = j.bfPer
	if len(extra) > 0 {
		exact, err := s.bfSpreadExact(j)
		if err != nil {
			return nil, err
		}
		if exact {
			j.bfMin = v.Clone()
			j.bfMin[gres.Node] = 0
			j.bfSpread = j.extraTotal
		}
	}
	j.shape = s.shapeOf(pi, v, spec.Exclusive, excluded, cons)
	s.roundPlanCPUs(j)
	if ts != nil {
		if err := s.initTasks(j); err != nil {
			return nil, err
		}
		nodes = j.nodes
	}
	if c := j.shape.capable.Count(); c < nodes {
		return nil, fmt.Errorf("%w: %w: needs %d node(s) with %s in partition %q, only %d exist",
			ErrInvalidJob, ErrUnsatisfiable, nodes, s.reg.FormatTRES(v), p.cfg.Name, c)
	}
	if err := s.checkWhere(j); err != nil {
		return nil, err
	}
	if err := s.perJobFeasible(j); err != nil {
		return nil, err
	}
	if err := s.oneThreadFeasible(j); err != nil {
		return nil, err
	}
	if spec.GPUsPerSocket > 0 {
		k := 0
		for i := j.shape.capable.Next(0); i >= 0; i = j.shape.capable.Next(i + 1) {
			if socketsCapable(j, &s.nodes[i]) {
				k++
			}
		}
		if k < nodes {
			return nil, fmt.Errorf("%w: %w: GPUsPerSocket %d × SocketsPerNode %d: needs %d node(s) with %d socket(s) of %d GPUs in partition %q, only %d exist",
				ErrInvalidJob, ErrUnsatisfiable, spec.GPUsPerSocket, max(spec.SocketsPerNode, 1), nodes, max(spec.SocketsPerNode, 1), spec.GPUsPerSocket, p.cfg.Name, k)
		}
	}
	if s.graph != nil {
		if err := s.graph.Feasible(nodes, j.constraints()); err != nil {
			return nil, fmt.Errorf("%w: %w: topology: %w", ErrInvalidJob, ErrUnsatisfiable, err)
		}
	} else if spec.Switches > 0 || spec.Segment > 1 || spec.NVLinkDomain != topology.DomainAny {
		return nil, fmt.Errorf("%w: Switches, Segment and NVLinkDomain need a cluster topology (Config.Topology)", ErrInvalidJob)
	}
	return j, nil
}

// mergeDeviceRequests folds the per-node, per-task and per-job GRES of a
// spec into one per-node list, merged by (name, type), in a stable order.
// A per-job request (--gpus) counts one per node there (every node of the
// job takes at least one); what it asks beyond that is returned in extra,
// to be spread over the nodes as they can hold it (see spreadExtra).
func mergeDeviceRequests(spec JobSpec, nodes, tpn int64) (out, extra []gres.Request, err error) {
	add := func(r gres.Request, mult int64, field string) error {
		if err := r.Validate(); err != nil { // gres's one rule for names, types and counts
			return fmt.Errorf("%w: %s: %w", ErrInvalidJob, field, err)
		}
		c := r.Count
		if c != 0 && mult > gres.MaxCount/c {
			return fmt.Errorf("%w: %s: GRES %s count %d × %d tasks overflows", ErrInvalidJob, field, r.Name, r.Count, mult)
		}
		c *= mult
		for i := range out {
			if out[i].Name == r.Name && out[i].Type == r.Type {
				if out[i].Count+c > gres.MaxCount {
					return fmt.Errorf("%w: %s: GRES %s total overflows", ErrInvalidJob, field, r.Name)
				}
				out[i].Count += c
				return nil
			}
		}
		if c > 0 {
			out = append(out, gres.Request{Name: r.Name, Type: r.Type, Count: c})
		}
		return nil
	}
	for _, r := range spec.GRESPerNode {
		if err := add(r, 1, "GRESPerNode"); err != nil {
			return nil, nil, err
		}
	}
	for _, r := range spec.GRESPerTask {
		if err := add(r, tpn, "GRESPerTask"); err != nil {
			return nil, nil, err
		}
	}
	for _, r := range spec.GRESPerJob {
		if r.Count > 0 && r.Count < nodes {
			return nil, nil, fmt.Errorf("%w: GRESPerJob: GRES %s count %d is fewer than the job's %d nodes (each node takes at least one)",
				ErrInvalidJob, r.Name, r.Count, nodes)
		}
		if r.Count > gres.MaxCount {
			return nil, nil, fmt.Errorf("%w: GRESPerJob: GRES %s count %d out of range", ErrInvalidJob, r.Name, r.Count)
		}
		one := r
		one.Count = min(r.Count, 1)
		if err := add(one, 1, "GRESPerJob"); err != nil {
			return nil, nil, err
		}
		if more := r.Count - nodes; more > 0 {
			extra = addRequests(extra, []gres.Request{{Name: r.Name, Type: r.Type, Count: more}})
		}
	}
	if spec.GPUsPerSocket > 0 {
		per := gres.Request{Name: "gpu", Count: int64(spec.GPUsPerSocket) * int64(max(spec.SocketsPerNode, 1))}
		if err := add(per, 1, "GPUsPerSocket"); err != nil {
			return nil, nil, err
		}
	}
	slices.SortStableFunc(out, func(a, b gres.Request) int {
		// typed requests first, so an untyped request takes what is left
		if (a.Type == "") != (b.Type == "") {
			if a.Type != "" {
				return -1
			}
			return 1
		}
		return 0
	})
	return out, extra, nil
}

// cancelJob ends job id as CANCELLED (see Cancel).
func (s *Scheduler) cancelJob(now time.Time, id JobID) error {
	j, err := s.jobAt(now, id)
	if err != nil {
		return err
	}
	switch j.State {
	case JobPending, JobRunning, JobSuspended:
	default:
		return fmt.Errorf("%w: job %d is %s, cannot cancel", ErrJobState, id, j.State)
	}
	if j.HetJobID != 0 {
		return s.cancelHet(now, j)
	}
	s.endJob(j, JobCancelled, now)
	s.last = now
	return nil
}

// finishJob ends running job id by its exit code (see Finish).
func (s *Scheduler) finishJob(now time.Time, id JobID, exitCode int) error {
	j, err := s.runningJob(now, id, "finish")
	if err != nil {
		return err
	}
	st := JobCompleted
	if exitCode != 0 {
		st = JobFailed
	}
	s.endJob(j, st, now)
	j.ExitCode = exitCode
	s.last = now
	return nil
}

// jobAt checks the time and returns job id.
func (s *Scheduler) jobAt(now time.Time, id JobID) (*job, error) {
	if err := s.tick(now); err != nil {
		return nil, err
	}
	j, ok := s.jobs[id]
	if !ok {
		return nil, s.unknownJob(id)
	}
	return j, nil
}

// runningJob checks the time and returns running job id, or an error
// saying that only a RUNNING job can do what verb says.
func (s *Scheduler) runningJob(now time.Time, id JobID, verb string) (*job, error) {
	j, err := s.jobAt(now, id)
	if err != nil {
		return nil, err
	}
	if j.State != JobRunning {
		return nil, fmt.Errorf("%w: job %d is %s, only a RUNNING job can %s", ErrJobState, id, j.State, verb)
	}
	return j, nil
}

// requeueJob puts running job id back in the queue (see Requeue).
func (s *Scheduler) requeueJob(now time.Time, id JobID) error {
	j, err := s.runningJob(now, id, "be requeued")
	if err != nil {
		return err
	}
	j.LaunchFailures++
	s.requeue(now, j, policy.ReasonLaunchFailRequeue)
	s.logRequeue(now, j)
	s.last = now
	return nil
}

// requeue frees what running (or suspended) job j holds and puts it back
// in the queue at now, pending for reason r (and, with Config.RequeueDelay,
// not before the delay).
func (s *Scheduler) requeue(now time.Time, j *job, r policy.Reason) {
	s.touch(j)
	s.lostOnRequeue(j, now)
	s.release(j, false)
	s.delayRequeued(now, j)
	j.State = JobPending
	j.Reason = r
	if j.Hold != HoldNone {
		// Held while it ran (or requeued held): it pends held.
		j.Reason, j.Priority = j.Hold.reason(), 0
	}
	j.Restarts++
	j.StartTime = time.Time{}
	j.EndTime = time.Time{}
	if s.inPass {
		// Not while the cycle walks the pending index: queued after it.
		s.deferred = append(s.deferred, j)
		return
	}
	s.mutPending().ReplaceOrInsert(j)
}

// endJob takes j out of the queue (pending) or off its nodes (running,
// suspended) and leaves it in terminal state st, ended at the time at.
// With MinJobAge it is noted for purge, in the order jobs finish.
func (s *Scheduler) endJob(j *job, st JobState, at time.Time) {
	s.touch(j)
	if j.State == JobPending {
		s.mutPending().Delete(j)
		s.policyStop(j, false, true)
	} else {
		s.lostOnEnd(j, st, at)
		s.release(j, true)
	}
	j.State, j.EndTime = st, at
	if s.minJobAge > 0 {
		j.doneCycle = s.cycleNo
		s.done = append(s.done, j)
	}
}

// release frees every resource a running (or suspended) job holds,
// removes it from the running index and stops counting it in the policy
// usage; ended says whether it also leaves the queue (rather than being
// requeued). The allocation stays on the job record as its last one.
func (s *Scheduler) release(j *job, ended bool) {
	s.policyStop(j, true, ended)
	if j.Alloc.OverSubscribe > 1 {
		s.sharersChanged(j) // shared CPUs change hands in the kept profile (sharedCPUUse)
	}
	for _, na := range j.Alloc.Nodes {
		s.saveNode(na.Node)
		n := &s.nodes[na.Node]
		freed := s.dropCPUs(n, j.ID, na.CPUs) // a CPU another job shares stays held
		if n.devs != nil && len(na.Devices) > 0 {
			// The indices were allocated by this scheduler, so release
			// cannot fail unless state is corrupt.
			if err := n.devs.Release(na.Devices); err != nil {
				panic(fmt.Sprintf("scheduler: releasing devices %v of job %d on %s: %v", na.Devices, j.ID, n.cfg.Name, err))
			}
		}
		n.releaseShares(j.ID, na.Shares)
		refund := na.TRES
		if bad := n.unhealthy(na.Devices); len(bad) > 0 {
			// Devices that failed while allocated do not come back as free.
			var err error
			if refund, err = na.TRES.Sub(n.deviceVector(na.TRES, bad)); err != nil {
				panic(fmt.Sprintf("scheduler: job %d on %s: devices %v not in its TRES: %v", j.ID, n.cfg.Name, bad, err))
			}
			refund[gres.Node] = na.TRES[gres.Node]
		}
		if shared := int64(len(na.CPUs)) - freed; shared > 0 {
			refund = refund.Clone()
			refund[gres.CPU] = max(refund[gres.CPU]-shared, 0)
		}
		if err := n.refund(refund); err != nil {
			panic(fmt.Sprintf("scheduler: freeing job %d on %s: %v", j.ID, n.cfg.Name, err))
		}
		n.removeJob(j.ID)
		s.noteUse(j, na.Node, -1)
	}
	if a := s.arrays[j.ArrayJobID]; a != nil {
		a.running--
		s.onUndo(func() { a.running++ })
	}
	s.noteEnded(j)
	j.AdminSuspended, j.killBy = false, time.Time{}
	if j.State == JobSuspended {
		s.suspended = slices.DeleteFunc(s.suspended, func(x *job) bool { return x == j })
		s.noteCapacity()
	}
	s.mutRunning().Delete(j)
}

// Job returns a snapshot of job id: false for an ID never submitted, or
// for a job finished more than Config.MinJobAge ago and forgotten.
func (s *Scheduler) Job(id JobID) (Job, bool) {
	j, ok := s.jobs[id]
	if !ok {
		return Job{}, false
	}
	return s.snapshot(j), true
}

func (s *Scheduler) snapshot(j *job) Job {
	out := j.Job
	if j.State == JobPending && len(j.planned) > 0 {
		out.PlannedNodes = make([]string, len(j.planned))
		for i, n := range j.planned {
			out.PlannedNodes[i] = s.nodes[n].cfg.Name
		}
	} else {
		out.PlannedNodes = nil
	}
	out.PerNode = j.perNode.Clone()
	out.ReqNodes = j.nodes
	out.Alloc = copyAlloc(j.Alloc)
	if j.tel != nil {
		u := j.tel.usage()
		out.Usage = &u
		out.Steps = j.tel.stepUsages()
	}
	out.tres = s.tresNames()
	out.Alloc.tres = out.tres
	return out
}

// copyAlloc returns a deep copy of a: the copies share three backing
// arrays (CPUs, devices, TRES), each node's slice capped at its own length.
func copyAlloc(a Allocation) Allocation {
	out := Allocation{Nodes: make([]NodeAlloc, len(a.Nodes)), Quality: a.Quality, Billing: a.Billing, OverSubscribe: a.OverSubscribe}
	var nc, nd, nt int
	for _, na := range a.Nodes {
		nc, nd, nt = nc+len(na.CPUs), nd+len(na.Devices), nt+len(na.TRES)
	}
	ints := make([]int, nc+nd)
	cpus, devs := ints[:nc], ints[nc:]
	tres := make(gres.Vector, nt)
	for i, na := range a.Nodes {
		if na.CPUs != nil {
			na.CPUs = cutCopy(&cpus, na.CPUs)
		}
		if na.Devices != nil {
			na.Devices = cutCopy(&devs, na.Devices)
		}
		if na.TRES != nil {
			na.TRES = cutCopy(&tres, na.TRES)
		}
		out.Nodes[i] = na
	}
	return out
}

// cut returns the first n elements of *buf, capped at n (appending to
// them never writes into the rest of *buf), and leaves *buf past them.
// *buf must hold n elements.
func cut[S ~[]E, E any](buf *S, n int) S {
	out := (*buf)[:n:n]
	*buf = (*buf)[n:]
	return out
}

// cutCopy is cut holding a copy of src.
func cutCopy[S ~[]E, E any](buf *S, src S) S {
	out := cut(buf, len(src))
	copy(out, src)
	return out
}

// Jobs returns snapshots of every job the scheduler holds, by ID (finished
// jobs until Config.MinJobAge forgets them).
func (s *Scheduler) Jobs() []Job {
	ids := make([]JobID, 0, len(s.jobs))
	for id := range s.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]Job, len(ids))
	for i, id := range ids {
		out[i] = s.snapshot(s.jobs[id])
	}
	return out
}

// Node returns a snapshot of the named node.
func (s *Scheduler) Node(name string) (NodeInfo, bool) {
	i, ok := s.nodeByName[name]
	if !ok {
		return NodeInfo{}, false
	}
	return s.nodeInfo(i), true
}

// Nodes returns snapshots of every node, in index order (removed nodes
// are not listed: their indices are skipped).
func (s *Scheduler) Nodes() []NodeInfo {
	out := make([]NodeInfo, 0, len(s.nodeByName))
	for i := range s.nodes {
		if !s.nodes[i].removed {
			out = append(out, s.nodeInfo(i))
		}
	}
	return out
}

func (s *Scheduler) nodeInfo(i int) NodeInfo {
	n := &s.nodes[i]
	ni := NodeInfo{
		Index: i, Name: n.cfg.Name, State: n.state(), Reason: n.reason, Since: n.since,
		Capacity: n.capacity.Clone(), Free: n.free.Clone(), Jobs: slices.Clone(n.jobs), tres: s.tresNames(), Power: n.pw.state,
		ActiveFeatures: slices.Clone(n.cfg.Features), AvailableFeatures: availableFeatures(n.cfg), Reboot: nodeRebootInfo(n),
	}
	ni.FreeDevices = n.freeDevices()
	ni.UnhealthyDevices = n.allUnhealthy()
	return ni
}

// nodeIndex checks the time and returns the index of the named node.
func (s *Scheduler) nodeIndex(now time.Time, name string) (int, error) {
	if err := s.tick(now); err != nil {
		return 0, err
	}
	i, ok := s.nodeByName[name]
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrUnknownNode, name)
	}
	return i, nil
}

func (s *Scheduler) setAdmin(now time.Time, name string, st adminState, reason string) error {
	i, err := s.nodeIndex(now, name)
	if err != nil {
		return err
	}
	s.applyAdmin(now, i, st, reason)
	return nil
}

// applyAdmin sets node i's administrative state, with the reason and
// since, and whether it is usable.
func (s *Scheduler) applyAdmin(now time.Time, i int, st adminState, reason string) {
	n := &s.nodes[i]
	if n.admin == adminDown || st == adminDown {
		s.noteCapacity() // a down node offers nothing to the plan
	}
	n.admin, n.reason, n.since, n.autoDrained = st, reason, now, false
	if st == adminUp && n.pw.state == PowerOn && !n.booting() {
		s.usable.Add(i)
	} else {
		s.usable.Remove(i)
	}
	s.last = now
}

// downNode marks the named node DOWN, ending or requeueing its jobs (see
// DownNode).
func (s *Scheduler) downNode(now time.Time, name, reason string) ([]JobID, error) {
	i, err := s.nodeIndex(now, name)
	if err != nil {
		return nil, err
	}
	affected := slices.Clone(s.nodes[i].jobs)
	for _, id := range affected {
		j := s.jobs[id]
		if s.requeueable(j) {
			s.requeue(now, j, policy.ReasonNodeDown)
			s.logRequeue(now, j)
			continue
		}
		s.endJob(j, JobNodeFail, now)
		j.Reason = policy.ReasonNodeDown
	}
	s.applyAdmin(now, i, adminDown, reason)
	return affected, nil
}

// requeueable reports whether job j may be requeued: its own
// JobSpec.Requeue, or the cluster's Config.JobRequeue when it gives none.
func (s *Scheduler) requeueable(j *job) bool {
	switch j.Spec.Requeue {
	case RequeueYes:
		return true
	case RequeueNo:
		return false
	}
	return !s.noRequeue
}

// Counts returns how many jobs are pending and running.
func (s *Scheduler) Counts() (pending, running int) {
	return s.pending.Len(), s.running.Len()
}

// totalRequest returns the job's whole request, perNode × nodes plus the
// GRESPerJob spread over them, as the limit checks and the priority
// engine see it. The request is fixed at submit, so it is computed once;
// callers only read it.
func (j *job) totalRequest() (gres.Vector, error) {
	if j.total == nil && j.tasks != nil && j.tasks.totalVec != nil {
		j.total = j.tasks.totalVec
	}
	if j.total == nil {
		t, err := j.perNode.Scale(int64(j.nodes))
		if err != nil {
			return nil, err
		}
		if err := t.AddInPlace(j.extraTotal); err != nil {
			return nil, err
		}
		j.total = t
	}
	return j.total, nil
}

// constraints returns the job's topology constraints.
func (j *job) constraints() topology.Constraints {
	return topology.Constraints{MaxLeafSwitches: j.Spec.Switches, Segment: j.Spec.Segment, Domains: j.Spec.NVLinkDomain}
}

// setDeviceHealth records a device health event (see SetDeviceHealth).
func (s *Scheduler) setDeviceHealth(now time.Time, nodeName string, index int, healthy bool, reason string) error {
	i, err := s.nodeIndex(now, nodeName)
	if err != nil {
		return err
	}
	n := &s.nodes[i]
	if n.devs == nil {
		return fmt.Errorf("%w: node %q has no devices", gres.ErrUnknownDevice, nodeName)
	}
	was := n.devs.IsHealthy(index)
	inUse := n.devs.InUse(index)
	if err := n.devs.SetHealthy(index, healthy); err != nil {
		return fmt.Errorf("node %q: %w", nodeName, err)
	}
	s.healthGen++
	s.noteCapacity() // the kept profile counts what devices offer
	if was != healthy && !inUse {
		dv := n.deviceVector(n.free, []int{index})
		if healthy {
			_ = n.free.AddInPlace(dv) // returns a device taken out below: cannot overflow
		} else if err := n.free.SubInPlace(dv); err != nil {
			panic(fmt.Sprintf("scheduler: node %s: free device %d not counted free: %v", nodeName, index, err))
		}
	}
	all := len(n.allUnhealthy()) == len(n.cfg.Devices.Devices)
	switch {
	case all && n.admin == adminUp:
		s.applyAdmin(now, i, adminDrain, "all devices unhealthy: "+reason)
		n.autoDrained = true
	case !all && n.autoDrained && n.admin == adminDrain:
		s.applyAdmin(now, i, adminUp, "")
	}
	s.last = now
	return nil
}

// logRequeue keeps the audit record of a requeue made by an event, for
// the next cycle's Decisions.
func (s *Scheduler) logRequeue(now time.Time, j *job) {
	if d, err := s.RequeueRecord(now, j.ID); err == nil {
		s.eventDecisions = append(s.eventDecisions, d)
	}
}
