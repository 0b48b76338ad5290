package scheduler

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/topology"
)

// ErrCorruptSnapshot reports a snapshot that Restore cannot read: a bad
// header, a truncated or corrupt section (its checksum does not match),
// or contents that do not describe a valid state. The error names the
// section and the byte offset in the stream.
var ErrCorruptSnapshot = errors.New("corrupt snapshot")

// ErrSnapshotVersion reports a snapshot written by a newer major version
// of the format, which this version cannot read.
var ErrSnapshotVersion = errors.New("unsupported snapshot version")

// The snapshot format: a header (snapshotMagic, then the major and minor
// version as little-endian uint16), then sections, each a one-byte ID, an
// 8-byte little-endian payload length, the payload's CRC-32C
// (Castagnoli) as a little-endian uint32, and the payload; a section of
// ID secEnd and no payload ends the snapshot.
//
// Compatibility: Restore reads every snapshot of its major version whose
// minor version is not newer than its own, and a newer minor version when
// it uses nothing this version does not know (an unknown section or field
// is an error naming it). A snapshot of another major version is refused
// with ErrSnapshotVersion. The major version changes only when the meaning
// of existing data changes; adding a field or a section bumps the minor.
const (
	snapshotMagic = "\x89SLUICE\n"
	snapshotMajor = 1
	snapshotMinor = 4 // 1: device links carry their fabric; 2: device shares, MIG instances, NVLink fabric; 3: changeable features, reboots, the profile's device claim; 4: telemetry (config, per-job usage, device energy counters)
)

// Section IDs, in the order they are written.
const (
	secEnd      = 0
	secRegistry = 1 // the TRES names, in registry order
	secConfig   = 2 // the configuration, as the live structures hold it
	secNodes    = 3 // per node: administrative state, health, jobs, free TRES
	secJobs     = 4 // every job: spec and dynamic state
	secState    = 5 // counters, finished-job bookkeeping, arrays, priority, reservations
	secProfile  = 6 // the backfill profile kept from the last cycle
)

var sectionNames = [...]string{secEnd: "end", secRegistry: "registry", secConfig: "config", secNodes: "nodes",
	secJobs: "jobs", secState: "state", secProfile: "profile"}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// What a snapshot holds — every field of the scheduler's state, stored or
// derived (rebuilt on Restore). A field added to Scheduler, job, node,
// polState, prio or bfState must be added here, to one side or the other.
//
// Scheduler:
//   - stored (config): nodes' NodeConfig, partitions' PartitionConfig
//     (defaults applied), Topology (topo), the compiled policy's Config
//     (pol.p.Config() without its partitions, which New derives from the
//     PartitionConfigs), priority config (prio.cfg: engine config without
//     its Registry and Site hook, CalcPeriod, CalcEpoch, DampeningFactor,
//     QOSPriority), backfill config (planner.Config(), defaults filled in,
//     without its Chooser), EstimateInterval, MaxArraySize (maxArray),
//     FirstJobID (firstID), minJobAge, JobRequeue (noRequeue), BillingMode
//     (billMode, resolved), GPUOrder (gpuOrder), Telemetry (telCfg, as
//     UpdateTelemetryEvent left it); the registry's names.
//   - stored (state): nextID, last, cycleNo (purge compares doneCycle with
//     it), done[doneHead:] (by ID, in finishing order), purged, suspended
//     (by ID, in suspension order), arrays (throttle, running, indices),
//     eventDecisions; the reservations (pol.resv, as added: NodeCount and
//     TRES as asked, with the nodes held); prio.lastCalc (the boundary
//     of the last priority recalculation) and
//     prio.assocs (the fair-share inputs the pending priorities were last
//     computed from) with whether a tree was built.
//   - derived: reg (rebuilt from the names), nodeByName, partByName,
//     defPart, parts[].nodes, jobs (the map), pending and running (the
//     queues, from the job states and keys), graph (from topo), usable
//     (from admin states), shapes (cache), doneHead (0), healthGen,
//     shareGen, sharerSeq, shareUse, claim1, claimIDs, claimEpoch and policyVersion
//     (caches), pol.p (compiled from the config), pol.usage (recounted
//     from the jobs: AddJob for every unfinished job, StartJob
//     with usageTotal/usageEnd for running and suspended ones),
//     pol.singletons (recounted), pol.forbidden (scratch), prio.engine,
//     prio.tree (built from assocs: priority.Tree's in-place update is bit
//     for bit a new tree), prio.ups, prio.in, prio.partTRES; log (not state).
//   - transient (empty between calls): inPass, deferred, rekey, the
//     scratch sets and lists (avail, cand, fit, keyBuf, placed, started,
//     pendJobs, sum, audit, telScratch), jr (the undo journal), cycleFault
//     (tests).
//   - backfill (bfState): last, the kept profile, is stored (section
//     profile, with its device claim dimension where nodes share devices;
//     lastClaim1 follows from it): Explain and IdleCapacity read it between
//     cycles. The rest
//     is derived: planner (from the config), the change lists since the
//     last plan (ended, started), plan/spare/planAt/prevJobs/prevUsable/
//     windows, the scratch (nodes, running, jobs, pjobs). A restored
//     scheduler marks the kept profile dirty, so its first backfill pass
//     builds the profile afresh and plans the whole queue, which the
//     package guarantees decides exactly as updating the kept profile and
//     extending the last plan would (the path a rolled-back cycle takes).
//
// job (stored): ID, Spec (as resolved at submit: QOS filled in, Exclusive
// set by OverSubscribe=EXCLUSIVE), Partition (by name; part, its index, is
// derived), State, Reason, TimeLimit (a --time-min start shortens it),
// Priority and breakdown, SubmitTime, StartTime, EndTime, EligibleTime,
// ExitCode, Restarts, Alloc (per node: index, CPU ids, memory, device
// indices, device quality, TRES; billing, quality), Backfilled,
// ArrayJobID, ArrayTaskID, LastCheckpoint, LostGPUSeconds, ExpectedStart,
// EstimatedAt, planned, reserved, deadline, doneCycle, the request derived
// at submit (tier, nodes, tpn, perNode, devReq, extra, extraTotal, bfPer,
// bfMin, bfSpread — kept as computed then, so that a later change of the
// partition or the nodes does not change a queued job's request),
// suspendedBy, remaining, suspendedCPUs, preemptFirst, awaitingVictims,
// preemptedFor, preempting, preemptAction, usageTotal, usageEnd, tel (the
// telemetry: past runs' usage, the current run's usage and last CPU
// counter per allocation node, the current run's steps, whether its idle
// spell was recorded; see snapshot_telemetry.go), and Job's counters Starts, LaunchFailures,
// LostWorkGPUSeconds (Job.Usage is filled from tel by Job's copy).
// job (derived): subject (Resolve of user, account, partition and the
// resolved QOS, which gives the same plan), dep (parsed from
// Spec.Dependency), preemptRank, shape, assoc, total, chooserKeys, bfUse,
// bfUseHealthGen, bfUseShareGen, bfUseSharerGens, bfClaimed, bfClaimOf and bfClaimEpoch
// (caches), touched and viewed (journal epochs),
// planShares (transient); Job.PerNode and Job.PlannedNodes are filled by
// Job's copy.
//
// node (stored): admin, autoDrained, reason, since, jobs (in start
// order), free (checked on Restore against capacity less what the jobs
// hold and the unhealthy devices no job holds), the unhealthy device
// indices, and tel (the devices' last energy counters). node (derived): cfg,
// capacity, devTRES, devCores, hasAffinity (from the NodeConfig), cpuUsed
// and the devices in use (from the allocations of the running and
// suspended jobs, checked for double use), touched and saved (journal),
// sharerGen (cache generation).

// Snapshot writes the scheduler's whole authoritative state to w: the
// configuration as it stands (nodes, partitions, policy, priority and
// backfill settings), every node's administrative state and device
// health, every job with its allocation (CPU ids, GPU indices), the
// reservations, the fair-share inputs, the ID counters and the time of
// the last event. Derived state (the backfill plan, caches) is not
// written; Restore rebuilds it. Functions and interfaces in the
// configuration (the fair-share source, the priority site-factor hook, a
// backfill chooser) are not data: Restore takes them in RestoreOptions.
// Snapshot changes nothing; it fails only when w does.
func (s *Scheduler) Snapshot(w io.Writer) error {
	var hdr [len(snapshotMagic) + 4]byte
	copy(hdr[:], snapshotMagic)
	binary.LittleEndian.PutUint16(hdr[len(snapshotMagic):], snapshotMajor)
	binary.LittleEndian.PutUint16(hdr[len(snapshotMagic)+2:], snapshotMinor)
	if _, err := w.Write(hdr[:]); err != nil {
		return fmt.Errorf("scheduler: snapshot: %w", err)
	}
	// The jobs section is the largest: room for it, grown once.
	e := &senc{b: make([]byte, 0, 1<<16+400*len(s.jobs)+64*len(s.nodes))}
	for _, sec := range []struct {
		id   byte
		fill func(e *senc) error
	}{
		{secRegistry, s.snapRegistry},
		{secConfig, s.snapConfig},
		{secNodes, s.snapNodes},
		{secJobs, s.snapJobs},
		{secState, s.snapState},
		{secProfile, s.snapProfile},
		{secEnd, func(*senc) error { return nil }},
	} {
		e.b, e.fields, e.syms, e.recent, e.lastInv = e.b[:0], nil, nil, [symSlots]symCache{}, nil
		e.sec++
		if err := sec.fill(e); err != nil {
			return fmt.Errorf("scheduler: snapshot: section %s: %w", sectionNames[sec.id], err)
		}
		var fh [sectionHeader]byte
		fh[0] = sec.id
		binary.LittleEndian.PutUint64(fh[1:], uint64(len(e.b)))
		binary.LittleEndian.PutUint32(fh[9:], crc32.Checksum(e.b, crcTable))
		if _, err := w.Write(fh[:]); err != nil {
			return fmt.Errorf("scheduler: snapshot: %w", err)
		}
		if _, err := w.Write(e.b); err != nil {
			return fmt.Errorf("scheduler: snapshot: %w", err)
		}
	}
	return nil
}

// sectionHeader is the size of a section's ID, length and checksum.
const sectionHeader = 1 + 8 + 4

func (s *Scheduler) snapRegistry(e *senc) error {
	names := s.reg.Names()
	e.uvarint(uint64(len(names)))
	for _, n := range names {
		e.str(n)
	}
	return nil
}

// snapConfig is the configuration section: Config as the live structures
// hold it, without what is not data.
type snapConfig struct {
	Nodes            []NodeConfig
	Partitions       []PartitionConfig
	Topology         *topology.Config
	Priority         *snapPriority
	Backfill         *backfill.Config
	CustomChooser    bool // Backfill.Chooser was the caller's
	EstimateInterval time.Duration
	MaxArraySize     int
	FirstJobID       JobID
	MinJobAge        time.Duration
	JobRequeue       RequeueMode
	Policy           *policy.Config
	BillingMode      gres.BillingMode
	GPUOrder         gres.DeviceOrder
	RequeueDelay     time.Duration
	BootTime         time.Duration // minor 3
	Power            *PowerConfig
	// Removed lists the tombstones of removed nodes (RemoveNode), whose
	// Nodes entry holds only the name.
	Removed []int
	// Licenses is Config.Licenses.
	Licenses []License
	// SelectTypeParameters is Config.SelectTypeParameters.
	SelectTypeParameters CRUnit
	// Telemetry is Config.Telemetry as UpdateTelemetryEvent left it
	// (minor 4; an older snapshot has none: the zero configuration).
	Telemetry TelemetryConfig
}

// snapPriority is PriorityConfig without its source and hook, and
// whether they were set.
type snapPriority struct {
	Engine          priority.Config
	CalcPeriod      time.Duration
	CalcEpoch       time.Time
	DampeningFactor uint16
	QOSPriority     map[string]uint32
	FairShare, Site bool
}

// currentConfig returns the configuration the scheduler runs with.
func (s *Scheduler) currentConfig() snapConfig {
	c := snapConfig{
		Nodes: make([]NodeConfig, len(s.nodes)), Partitions: make([]PartitionConfig, len(s.parts)),
		Topology: s.topo, MaxArraySize: s.maxArray, FirstJobID: s.firstID, MinJobAge: s.minJobAge,
		BillingMode: s.billMode, GPUOrder: s.gpuOrder, RequeueDelay: s.requeueDelay,
		Licenses: s.lic.config(), SelectTypeParameters: s.crUnit, BootTime: s.bootTime,
		Telemetry: s.telCfg,
	}
	for i := range s.nodes {
		c.Nodes[i] = *s.nodes[i].cfg
		if s.nodes[i].removed {
			c.Removed = append(c.Removed, i)
		}
	}
	if s.power != nil {
		pc := s.Power()
		c.Power = pc
	}
	for i := range s.parts {
		c.Partitions[i] = s.parts[i].cfg
	}
	if s.noRequeue {
		c.JobRequeue = RequeueNo
	}
	if s.prio != nil {
		pc := s.prio.cfg
		eng := pc.Engine
		eng.Site, eng.Registry = nil, nil // a hook (RestoreOptions), and the registry section
		c.Priority = &snapPriority{Engine: eng, CalcPeriod: pc.CalcPeriod, CalcEpoch: pc.CalcEpoch, DampeningFactor: pc.DampeningFactor,
			QOSPriority: pc.QOSPriority, FairShare: pc.FairShare != nil, Site: pc.Engine.Site != nil}
	}
	if s.bf != nil {
		bc := s.bf.planner.Config()
		bc.Chooser = nil // the caller's (RestoreOptions) or the topology's (rebuilt)
		c.Backfill, c.CustomChooser, c.EstimateInterval = &bc, s.bf.customChooser, s.bf.estimateEvery
	}
	if s.pol != nil {
		pc := s.pol.p.Config()
		pc.Partitions = nil // New derives them from the PartitionConfigs
		c.Policy = &pc
	}
	return c
}

func (s *Scheduler) snapConfig(e *senc) error {
	c := s.currentConfig()
	return e.encodeValue(reflect.ValueOf(&c).Elem())
}

func (s *Scheduler) snapNodes(e *senc) error {
	e.uvarint(uint64(len(s.nodes)))
	for i := range s.nodes {
		n := &s.nodes[i]
		e.byte(byte(n.admin))
		e.bool(n.autoDrained)
		e.str(n.reason)
		e.time(n.since)
		e.uvarint(uint64(len(n.jobs)))
		for _, id := range n.jobs {
			e.uvarint(uint64(id))
		}
		e.vec(n.free)
		e.ints(n.allUnhealthy())
		e.byte(byte(n.pw.state))
		e.time(n.pw.at)
		e.time(n.pw.idleSince)
	}
	snapBoots(e, s)
	snapNodeTelemetry(e, s)
	return nil
}

func (s *Scheduler) snapState(e *senc) error {
	e.uvarint(uint64(s.nextID))
	e.time(s.last)
	e.uvarint(s.cycleNo)
	e.uvarint(uint64(len(s.done) - s.doneHead))
	for _, j := range s.done[s.doneHead:] {
		e.uvarint(uint64(j.ID))
	}
	e.uvarint(uint64(len(s.purged)))
	e.b = append(e.b, s.purged...)
	e.uvarint(uint64(len(s.suspended)))
	for _, j := range s.suspended {
		e.uvarint(uint64(j.ID))
	}
	ids := slices.Sorted(maps.Keys(s.arrays))
	e.uvarint(uint64(len(ids)))
	for _, id := range ids {
		a := s.arrays[id]
		e.uvarint(uint64(id))
		e.int(a.throttle)
		e.int(a.running)
		e.ints(a.indices)
	}
	if err := e.encodeValue(reflect.ValueOf(s.eventDecisions)); err != nil {
		return err
	}
	e.bool(s.prio != nil)
	if s.prio != nil {
		p := s.prio
		e.time(p.lastCalc)
		e.bool(p.tree != nil)
		if err := e.encodeValue(reflect.ValueOf(p.assocs)); err != nil {
			return err
		}
	}
	e.bool(s.power != nil)
	if p := s.power; p != nil {
		e.time(p.upWindow)
		e.time(p.downWindow)
		e.int(p.ups)
		e.int(p.downs)
	}
	var resv []policy.Reservation
	if s.pol != nil {
		resv = s.pol.resv.Specs()
		// A reservation made before nodes were added spans fewer; it is
		// written at the cluster's size, as Restore rebuilds it.
		for k := range resv {
			if ns := resv[k].Nodes; ns.Len() != len(s.nodes) {
				g := topology.NewNodeSet(len(s.nodes))
				g.UnionWith(ns)
				resv[k].Nodes = g
			}
		}
	}
	return e.encodeValue(reflect.ValueOf(resv))
}

// cloneTopology returns a deep copy of c (nil for nil).
func cloneTopology(c *topology.Config) *topology.Config {
	if c == nil {
		return nil
	}
	out := *c
	out.Nodes = slices.Clone(c.Nodes)
	out.Switches = slices.Clone(c.Switches)
	for i := range out.Switches {
		out.Switches[i].Nodes = slices.Clone(out.Switches[i].Nodes)
		out.Switches[i].Switches = slices.Clone(out.Switches[i].Switches)
	}
	out.Blocks = slices.Clone(c.Blocks)
	for i := range out.Blocks {
		out.Blocks[i].Nodes = slices.Clone(out.Blocks[i].Nodes)
	}
	out.BlockSizes = slices.Clone(c.BlockSizes)
	out.Domains = slices.Clone(c.Domains)
	for i := range out.Domains {
		out.Domains[i].Nodes = slices.Clone(out.Domains[i].Nodes)
	}
	return &out
}
