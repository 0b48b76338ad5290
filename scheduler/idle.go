package scheduler

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// IdleClass says why an idle GPU (or CPU) is idle. Every idle unit is
// counted in exactly one class. A free unit (one no running job holds)
// is in the first of the free classes, IdleUnhealthy to IdleFragmented,
// that matches, in this order; an allocated unit is idle only when the
// job holding it is allocated but idle by its telemetry, and is then in
// IdleAllocated, the last class, and in no other: allocated-idle units
// are allocated, not free.
type IdleClass uint8

// Idle classes, in the order they are tried.
const (
	// IdleUnhealthy: a device reported unhealthy and not in use (GPUs only).
	IdleUnhealthy IdleClass = iota
	// IdleUnavailable: free on a node that takes no new work (down,
	// drained, draining, failing, or, with power saving, not powered on).
	IdleUnavailable
	// IdleAdvanceReservation: held by an advance reservation: every idle
	// unit of a node inside a reservation window open now (whoever may
	// use the reservation, the others may not), and, with backfill, the
	// shadow of a window that opens on the node before the plan's horizon
	// (the units the plan shows taken by then, which a job started now
	// would have to give back).
	IdleAdvanceReservation
	// IdleReserved: free now but held for a higher-priority job. With
	// backfill, the plan's shadow: the units that the plan books on the
	// node later within bf_window (free now minus the least the plan
	// leaves free on the node from now to the window's end), which no
	// pending job can use now without delaying that reservation. Without
	// backfill, every unit on a node of a partition whose queue is blocked
	// (a pending job there waits on Resources or Priority): the main pass
	// holds such nodes back for the blocked job. Also the units a pending
	// job not limited by policy could take now (its per-node request fits
	// the node and as many such nodes as it needs are free): they wait for
	// that job's turn in the queue (a job submitted since the last cycle,
	// or one the queue order or its placement constraints hold back).
	IdleReserved
	// IdleNoDemand: no pending job that is eligible now (begin time
	// reached, partition up) may use the node and asks for this resource.
	IdleNoDemand
	// IdlePolicy: pending jobs may use the node and some of them fit its
	// free resources now, but every one that fits waits on a policy limit
	// (QOS or association limits, partition MaxTime/MaxNodes, its job
	// array's throttle), not on resources.
	IdlePolicy
	// IdleFragmented: free but in shapes no pending job can use now: no
	// eligible job's per-node request fits the node's free resources
	// (the job needs more per node than the node has free: too few GPUs
	// of the type, CPUs or memory left beside them, not a whole node), or
	// the jobs whose per-node request fits need more such nodes at once
	// than are free.
	IdleFragmented
	// IdleAllocated ("allocated, idle"): allocated to a running job that
	// is allocated but idle under Config.Telemetry.Rule on the node: the
	// job's GPU readings (TelemetryEvent) on every node that reported have
	// stayed below Rule.IdleBelow for Rule.IdleAfter, and so have this
	// node's. Counted are the GPUs it holds there (whole, or shared
	// through shards or MPS: a shared device once, and only when every
	// running job sharing it is idle there) and its CPUs there (a CPU
	// shared by oversubscription once, when every job holding it is
	// idle). The evidence is the readings only, never a clock: a job
	// whose agent stops reporting keeps the state its last reading gave
	// it. Empty when the rule is off (IdleBelow 0) or no reading came; a
	// job without GPU readings (a CPU-only job) is never idle by the rule.
	IdleAllocated
	// NumIdleClasses is the number of classes.
	NumIdleClasses
)

var idleClassNames = [...]string{"unhealthy", "unavailable", "advance-reservation", "reserved", "no-demand", "policy", "fragmented",
	"allocated-idle"}

// String names the class.
func (c IdleClass) String() string { return enumName(c, idleClassNames[:], "IdleClass") }

// IdleCounts holds a count per idle class.
type IdleCounts [NumIdleClasses]int64

// Total sums every class: the idle units, free ones and allocated-idle
// ones (IdleAllocated) alike; Free is the free part.
func (c IdleCounts) Total() int64 {
	var t int64
	for _, v := range c {
		t += v
	}
	return t
}

// Free sums the free classes (all but IdleAllocated): the idle units no
// running job holds (with IdleUnhealthy's unhealthy devices no job holds).
func (c IdleCounts) Free() int64 { return c.Total() - c[IdleAllocated] }

func (c *IdleCounts) add(o IdleCounts) {
	for k, v := range o {
		c[k] += v
	}
}

// NodeIdleCapacity is one node's idle GPUs and CPUs by class, free and
// allocated-idle.
type NodeIdleCapacity struct {
	Node       string
	GPUs, CPUs IdleCounts
}

// IdleReport classifies the idle capacity of the cluster at one instant:
// "an idle GPU is not an available GPU", made measurable.
type IdleReport struct {
	// Time is the instant; PlanTime when the backfill plan read was made
	// (zero without one).
	Time, PlanTime time.Time
	// GPUs and CPUs count idle units per class over the cluster (the sums
	// of Nodes): Total() is every idle unit, Free() the free ones, and
	// [IdleAllocated] the units allocated to jobs that are idle.
	GPUs, CPUs IdleCounts
	// Nodes lists every node with an idle unit (free or allocated-idle),
	// in node order.
	Nodes []NodeIdleCapacity
	// Pending counts the pending jobs eligible now; Limited those of them
	// waiting on a policy limit.
	Pending, Limited int
}

// idleGroup is the demand of one job shape.
type idleGroup struct {
	sh        *shape
	perNode   gres.Vector
	excl      bool
	gpus      bool // asks for GPUs
	unlimited bool // some job of the shape is not limited by policy
	// minNodes is the fewest nodes an unlimited job of the shape needs
	// at once, and fitNodes how many usable nodes outside open
	// reservation windows its per-node request fits now.
	minNodes, fitNodes int
}

// policyLimited reports whether a pending job waits on policy rather
// than resources.
func policyLimited(j *job) bool {
	switch j.Reason {
	case policy.ReasonPartitionTimeLimit, policy.ReasonPartitionNodeLimit, policy.ReasonQOSNotAllowed,
		policy.ReasonAccountNotAllowed, policy.ReasonJobArrayTaskLimit:
		return true
	}
	return j.Reason.IsLimit()
}

// demandNow reports whether a pending job could use free resources now
// if they suited it: not waiting for its begin time, a dependency, a
// hold or a partition that starts nothing, and not bound to an advance
// reservation (whose nodes are classed apart).
func demandNow(now time.Time, j *job, p *partition) bool {
	switch j.Reason {
	case policy.ReasonDependency, policy.ReasonDependencyNeverSatisfied, policy.ReasonJobHeldUser, policy.ReasonJobHeldAdmin:
		return false
	}
	return p.cfg.State != PartitionDown && p.cfg.State != PartitionInactive && !j.Spec.BeginTime.After(now) &&
		j.Spec.Reservation == ""
}

// IdleCapacity classifies every idle GPU and CPU at now (see IdleClass
// for the classes and their order). It reads the nodes' current state,
// the pending jobs' last reasons, with backfill the last cycle's plan,
// and, for IdleAllocated, the running jobs' telemetry under
// Config.Telemetry.Rule; it changes nothing.
func (s *Scheduler) IdleCapacity(now time.Time) IdleReport {
	rep := IdleReport{Time: now}
	gpuID, hasGPU := s.reg.Lookup("gres/gpu")

	// Demand, one group per job shape.
	groups := map[*shape]*idleGroup{}
	var order []*idleGroup
	blockedPart := make([]bool, len(s.parts))
	s.pending.Ascend(func(j *job) bool {
		p := &s.parts[j.part]
		if j.Reason.Blocking() || j.Reason == policy.ReasonPriority {
			blockedPart[j.part] = true
		}
		if !demandNow(now, j, p) {
			return true
		}
		rep.Pending++
		lim := policyLimited(j)
		if lim {
			rep.Limited++
		}
		g := groups[j.shape]
		if g == nil {
			g = &idleGroup{sh: j.shape, perNode: j.perNode, excl: j.Spec.Exclusive, gpus: hasGPU && j.perNode[gpuID] > 0}
			groups[j.shape] = g
			order = append(order, g)
		}
		if !lim && (!g.unlimited || j.nodes < g.minNodes) {
			g.minNodes = j.nodes
		}
		g.unlimited = g.unlimited || !lim
		return true
	})

	var prof *backfill.Profile
	var horizon time.Time
	if last := s.readableProfile(); last != nil {
		prof = last
		rep.PlanTime = prof.Now()
		horizon = prof.Now().Add(s.bf.planner.Config().Window)
	}

	// Nodes in reservation windows: open now, or opening before the
	// horizon (with a plan).
	resvNow := topology.NewNodeSet(len(s.nodes))
	resvSoon := topology.NewNodeSet(len(s.nodes))
	end := now.Add(time.Nanosecond)
	if horizon.After(end) {
		end = horizon
	}
	_ = s.reservationWindows(now, end, func(_ uint64, w policy.Window, nodes []int) error {
		for _, i := range nodes {
			if !w.Start.After(now) {
				resvNow.Add(i)
			} else {
				resvSoon.Add(i)
			}
		}
		return nil
	})
	for _, g := range order {
		if !g.unlimited {
			continue
		}
		for i := g.sh.capable.Next(0); i >= 0; i = g.sh.capable.Next(i + 1) {
			if s.usable.Has(i) && !resvNow.Has(i) && g.fitsFree(&s.nodes[i]) {
				g.fitNodes++
			}
		}
	}

	for i := range s.nodes {
		n := &s.nodes[i]
		var gi, ci IdleCounts
		gFree := int64(0)
		if hasGPU {
			gFree = n.free[gpuID]
		}
		cFree := n.free[gres.CPU]
		// Allocated-idle units; shared devices among them are counted in
		// the free gres/gpu (shares do not take a device whole), so they
		// leave the free count to be counted once.
		aGPU, aCPU, aShared := s.allocatedIdle(i)
		gFree -= aShared
		// Unhealthy devices not in use are outside free already.
		if n.devs != nil {
			for _, d := range n.cfg.Devices.Devices {
				if strings.EqualFold(d.Name, "gpu") && !n.devs.IsHealthy(d.Index) && !n.devs.InUse(d.Index) {
					gi[IdleUnhealthy]++
				}
			}
		}
		switch {
		case gFree <= 0 && cFree <= 0:
		case !s.usable.Has(i):
			gi[IdleUnavailable] += max(gFree, 0)
			ci[IdleUnavailable] += max(cFree, 0)
		case resvNow.Has(i):
			gi[IdleAdvanceReservation] += max(gFree, 0)
			ci[IdleAdvanceReservation] += max(cFree, 0)
		default:
			gRes, cRes := s.reservedIdle(i, now, prof, horizon, blockedPart, gpuID, hasGPU, gFree, cFree)
			class := IdleReserved
			if prof != nil && resvSoon.Has(i) {
				class = IdleAdvanceReservation
			}
			gi[class], ci[class] = gRes, cRes
			if r := gFree - gRes; r > 0 {
				gi[s.demandClass(i, order, true)] += r
			}
			if r := cFree - cRes; r > 0 {
				ci[s.demandClass(i, order, false)] += r
			}
		}
		gi[IdleAllocated], ci[IdleAllocated] = aGPU, aCPU
		if gi.Total() > 0 || ci.Total() > 0 {
			rep.Nodes = append(rep.Nodes, NodeIdleCapacity{Node: n.cfg.Name, GPUs: gi, CPUs: ci})
			rep.GPUs.add(gi)
			rep.CPUs.add(ci)
		}
	}
	return rep
}

// reservedIdle returns how many of node i's idle GPUs and CPUs are held
// for a higher-priority job (see IdleReserved).
func (s *Scheduler) reservedIdle(i int, now time.Time, prof *backfill.Profile, horizon time.Time, blockedPart []bool,
	gpuID gres.ID, hasGPU bool, gFree, cFree int64) (int64, int64) {
	if prof == nil {
		if s.bf != nil {
			return 0, 0 // backfill without a plan yet: nothing is booked
		}
		for p := range s.parts {
			if blockedPart[p] && s.parts[p].nodes.Has(i) {
				return max(gFree, 0), max(cFree, 0)
			}
		}
		return 0, 0
	}
	steps, err := prof.Timeline(i)
	if err != nil {
		return 0, 0
	}
	from := now
	if prof.Now().After(from) {
		from = prof.Now()
	}
	var gNow, cNow, gMin, cMin int64
	first := true
	for k, st := range steps {
		// The step in force at from, and every later one before the horizon.
		if k+1 < len(steps) && !steps[k+1].Start.After(from) {
			continue
		}
		if !first && !st.Start.Before(horizon) {
			break
		}
		g, c := int64(0), st.Free.At(gres.CPU)
		if hasGPU {
			g = st.Free.At(gpuID)
		}
		if first {
			gNow, cNow, gMin, cMin, first = g, c, g, c, false
			continue
		}
		gMin, cMin = min(gMin, g), min(cMin, c)
	}
	return min(max(gFree, 0), max(gNow-gMin, 0)), min(max(cFree, 0), max(cNow-cMin, 0))
}

// fitsFree reports whether the group's per-node request fits node n's
// free resources now (for an exclusive request, on a whole idle node).
func (g *idleGroup) fitsFree(n *node) bool {
	if g.excl && len(n.jobs) > 0 {
		return false
	}
	return g.perNode.Fits(n.free) // an exclusive request too: unhealthy devices are not free
}

// demandClass classifies node i's remaining idle GPUs (gpu set) or CPUs
// by the demand of the pending job shapes: no demand, policy, fragmented,
// or reserved for a job that can use them now (see IdleClass).
func (s *Scheduler) demandClass(i int, groups []*idleGroup, gpu bool) IdleClass {
	n := &s.nodes[i]
	demand, fits, fitsUnlimited := false, false, false
	for _, g := range groups {
		if (gpu && !g.gpus) || !g.sh.capable.Has(i) {
			continue
		}
		demand = true
		if !g.fitsFree(n) {
			continue // it needs more per node than the node has free
		}
		fits = true
		if g.unlimited {
			if g.fitNodes >= g.minNodes {
				return IdleReserved // a job can take it now: it waits for its turn
			}
			fitsUnlimited = true // it needs more such nodes at once than are free
		}
	}
	switch {
	case !demand:
		return IdleNoDemand
	case fits && !fitsUnlimited:
		return IdlePolicy
	}
	return IdleFragmented
}

// String formats the report as a table of classes, GPUs and CPUs: one
// row per class (allocated-idle last), the total of every idle unit, and,
// when some are allocated-idle, the free part of it.
func (r IdleReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Idle capacity at %s", fmtTime(r.Time))
	if !r.PlanTime.IsZero() {
		fmt.Fprintf(&b, " (plan of %s)", fmtTime(r.PlanTime))
	}
	fmt.Fprintf(&b, "; %d pending job(s) eligible, %d limited by policy\n", r.Pending, r.Limited)
	fmt.Fprintf(&b, "  %-20s %8s %8s\n", "class", "GPUs", "CPUs")
	for c := range NumIdleClasses {
		fmt.Fprintf(&b, "  %-20s %8d %8d\n", c, r.GPUs[c], r.CPUs[c])
	}
	fmt.Fprintf(&b, "  %-20s %8d %8d\n", "total", r.GPUs.Total(), r.CPUs.Total())
	if r.GPUs[IdleAllocated] > 0 || r.CPUs[IdleAllocated] > 0 {
		fmt.Fprintf(&b, "  %-20s %8d %8d\n", "  of which free", r.GPUs.Free(), r.CPUs.Free())
	}
	return b.String()
}
