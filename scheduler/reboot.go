package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/feature"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// Changeable node features, Slurm's node features plugins
// (node_features/helpers): a node's NodeConfig.Features are its active
// features (Slurm's ActiveFeatures); its ChangeableFeatures are those a
// reboot can make active (Features ∪ ChangeableFeatures is Slurm's
// AvailableFeatures). The features of Features that are not changeable
// are static: a reboot keeps them.
//
// A job whose Constraint names changeable features (only as terms of its
// outermost AND, as Slurm's plugins accept them: feature.Constraint's
// Changeable; other forms are refused at submission) may run on a node
// where they are active, or on one that can be rebooted into them: its
// capable nodes are both. Nodes with the features active are preferred:
// a job is placed on them whenever it can start there now, and a reboot
// is considered only when it cannot (Sluice's reading: Slurm's guides say
// a node "may need" a reboot into the requested modes, not that one is
// made when the modes are active elsewhere). A node is rebooted only
// while idle (Slurm's KNL guide: nodes are rebooted into other modes only
// when no job runs on them).
//
// The reboot reuses power saving's model of a booting node (power.go):
// the cycle lists the node in Cycle.Reboots with the features it boots
// into — the caller runs its RebootProgram — and the node takes no work
// (NodeInfo.Reboot) until the caller reports it up with NodeRebooted,
// which makes those features its active Features (an
// event, so replay and snapshots reproduce the change), or until
// Config.BootTime passes, which marks it DOWN with the reason "reboot
// timed out". The job it was rebooted for stays pending (reason
// Resources, its planned nodes the booting ones) and starts in the first
// cycle after its nodes are up, as a job waiting on a resumed node does
// (Slurm allocates the node at once and shows the job CONFIGURING: see
// power.go for why Sluice does not). Jobs needing the node's old features
// cannot use it while it reboots, nor after, unless they also accept the
// new ones.
//
// Who reboots: without backfill, the main pass — for the first job of a
// partition waiting for resources, placed as if the idle nodes it could
// reboot fitted (no more of them than it is short of); with backfill,
// the plan: a job that enough nodes with its features active fit now is
// planned on those, another with nodes to reboot from now + BootTime
// over all its capable nodes, and the nodes
// of a reservation that need a reboot are rebooted once its start is
// within BootTime. A booting node counts as free from the end of its
// BootTime for the jobs its new features suit, and not at all for the
// others. The plan's start is exact for idle nodes rebooted now; it is
// early by up to BootTime for a busy node that needs a reboot once free,
// and late by up to BootTime for a job that could also start on active
// nodes freed within BootTime. Operators reboot a node with RebootNode
// (scontrol reboot, with ActiveFeatures=) and set its active features
// without a reboot with UpdateNode (scontrol update ActiveFeatures=).

// The changeable feature event kinds.
const (
	KindRebootNode   EventKind = "reboot_node"
	KindNodeRebooted EventKind = "node_rebooted"
)

// DefaultBootTime is helpers.conf's default BootTime.
const DefaultBootTime = 300 * time.Second

// ErrRebootState reports a reboot event that is not valid in the node's
// state: a NodeRebooted for a node not rebooting, a RebootNode for one
// rebooting already, powered down, or into features it cannot have.
var ErrRebootState = errors.New("invalid node state for reboot")

// bootIDBase numbers the profile blocks of rebooting nodes, between the
// power-saving blocks' and the reservation windows'.
const bootIDBase = powerIDBase + 1<<60

// nodeBoot is a node's reboot in progress (until zero: none).
type nodeBoot struct {
	until    time.Time // when BootTime passes
	features []string  // its active features once booted
	job      JobID     // the job it is rebooted for (0: an operator's reboot)
}

// booting reports whether the node is rebooting.
func (n *node) booting() bool { return !n.boot.until.IsZero() }

// bootState is the scheduler's view of the rebooting nodes.
type bootState struct {
	// nodes holds the rebooting nodes, n their count; able is, while n
	// > 0, ableNodes: the nodes up or resumable, and the rebooting ones
	// administratively up (see ableNodes).
	nodes topology.NodeSet
	n     int
	able  topology.NodeSet
	// placing is set while the main pass places a job as if the idle
	// nodes it could reboot fitted (rebootForMainPass).
	placing bool
	// names caches the features changeable on some node, for node
	// generation gen (Scheduler.tierGen).
	names map[string]bool
	gen   uint64
	// planWake is when the earliest backfill reservation that waits to
	// reboot nodes comes within BootTime (and the plan's resolution) of
	// its start (rebootForPlan; see NextWake); zero: none.
	planWake time.Time
}

// Reboot is a node a cycle reboots into changeable features (the caller
// runs its RebootProgram, then reports it with NodeRebooted), the job it
// is rebooted for, and the active features it boots into.
type Reboot struct {
	Node     string
	Job      JobID
	Features []string
}

// NodeReboot is a node's reboot in progress, as NodeInfo shows it.
type NodeReboot struct {
	// Until is when BootTime passes: a node not reported booted by then
	// is marked DOWN.
	Until time.Time
	// Job is the job the node is rebooted for (0: an operator's reboot).
	Job JobID `json:",omitempty"`
	// Features are its active features once booted.
	Features []string
}

// validateChangeable checks ChangeableFeatures: feature names, each once.
func (n *NodeConfig) validateChangeable() error {
	for k, f := range n.ChangeableFeatures {
		c, err := feature.Parse(f)
		if err != nil || c.Kind() != feature.KindFilter || c.String() != f || len(c.Names()) != 1 {
			return fmt.Errorf("%w: node %q: ChangeableFeatures[%d] %q is not a feature name", ErrInvalidConfig, n.Name, k, f)
		}
		if slices.Contains(n.ChangeableFeatures[:k], f) {
			return fmt.Errorf("%w: node %q: ChangeableFeatures lists %q twice", ErrInvalidConfig, n.Name, f)
		}
	}
	return nil
}

// bootFeatures returns the active features of node config nc after a
// reboot into the changeable features want: its static features (those
// of Features not changeable) and want.
func bootFeatures(nc *NodeConfig, want []string) []string {
	out := make([]string, 0, len(nc.Features)+len(want))
	for _, f := range nc.Features {
		if !slices.Contains(nc.ChangeableFeatures, f) {
			out = append(out, f)
		}
	}
	for _, f := range want {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// rebootInto returns the active features node n would need to be
// rebooted into to meet the shape's constraint (nil when a reboot cannot
// make it meet it, or it is not changeable there).
func (sh *shape) rebootInto(n *node) []string {
	ch := n.cfg.ChangeableFeatures
	if len(ch) == 0 || sh.cons.Kind() != feature.KindFilter {
		return nil
	}
	want, err := sh.cons.Changeable(func(f string) bool { return slices.Contains(ch, f) })
	if err != nil || len(want) == 0 {
		return nil
	}
	if f := bootFeatures(n.cfg, want); sh.cons.Match(f) {
		return f
	}
	return nil
}

// judgeNode sets whether node i (member: in the shape's partition, not
// removed) is capable for shape sh — its request fits the node and its
// active features meet the constraint's per-node part, or would once
// rebooted into the constraint's changeable features — and whether it
// needs that reboot (sh.reboot).
func (s *Scheduler) judgeNode(sh *shape, i int, member bool) {
	n := &s.nodes[i]
	active := member && sh.holds(i, n)
	later := member && !active && sh.perNode.Fits(n.capacity) && !slices.Contains(sh.excluded, i) && sh.rebootInto(n) != nil
	setMember(sh.capable, i, active || later)
	if later && sh.reboot.Len() == 0 {
		sh.reboot = topology.NewNodeSet(sh.capable.Len())
	}
	if sh.reboot.Len() > 0 {
		setMember(sh.reboot, i, later)
	}
}

// needsReboot reports whether node i is capable for the shape only once
// rebooted into other features.
func (sh *shape) needsReboot(i int) bool { return sh.reboot.Has(i) }

// rebootFits reports whether node n, which a job can use only once
// rebooted, counts as fitting now: only while the main pass places a job
// for a reboot, and only idle (Slurm reboots a node only when no job runs
// on it; a rebooting node is idle).
func (s *Scheduler) rebootFits(n *node) bool {
	return s.boot.placing && len(n.jobs) == 0
}

// activeOnly returns allowed without the shape's nodes that need a
// reboot (allowed itself when there are none), in scratch: preemption
// frees only nodes whose features suit the job now.
func (s *Scheduler) activeOnly(sh *shape, allowed topology.NodeSet) topology.NodeSet {
	if !allowed.Intersects(sh.reboot) {
		return allowed
	}
	out := allowed.Clone()
	out.Subtract(sh.reboot)
	return out
}

// changeableNames reports whether feature f is changeable on some node.
func (s *Scheduler) changeableName(f string) bool {
	b := &s.boot
	if b.names == nil || b.gen != s.tierGen {
		b.names = map[string]bool{}
		for i := range s.nodes {
			if !s.nodes[i].removed {
				for _, c := range s.nodes[i].cfg.ChangeableFeatures {
					b.names[c] = true
				}
			}
		}
		b.gen = s.tierGen
	}
	return b.names[f]
}

// checkChangeable refuses at submission a constraint that uses features
// changeable on some node in a form Slurm's node features plugins refuse
// (inside an OR, a matching OR or a count).
func (s *Scheduler) checkChangeable(cons feature.Constraint) error {
	if cons.IsZero() {
		return nil
	}
	if _, err := cons.Changeable(s.changeableName); err != nil {
		return fmt.Errorf("%w: Constraint: %w", ErrInvalidJob, err)
	}
	return nil
}

// ableNodes returns the nodes a job may be planned on this cycle: up,
// resumable with power saving, or rebooting (administratively up). The
// set is shared and must not be modified.
func (s *Scheduler) ableNodes() topology.NodeSet {
	base := s.usable
	if s.power != nil {
		base = s.power.able
	}
	b := &s.boot
	if b.n == 0 {
		return base
	}
	if b.able.Len() != len(s.nodes) {
		b.able = topology.NewNodeSet(len(s.nodes))
	}
	b.able.CopyFrom(base)
	for i := b.nodes.Next(0); i >= 0; i = b.nodes.Next(i + 1) {
		if s.nodes[i].admin == adminUp {
			b.able.Add(i)
		}
	}
	return b.able
}

// saveBoot records how to take back a change to node i's reboot and
// administrative state inside a cycle.
func (s *Scheduler) saveBoot(i int) {
	if !s.jr.on {
		return
	}
	n := &s.nodes[i]
	boot, admin, reason, since, auto := n.boot, n.admin, n.reason, n.since, n.autoDrained
	usable, in, count := s.usable.Has(i), s.boot.nodes.Has(i), s.boot.n
	s.onUndo(func() {
		n := &s.nodes[i]
		n.boot, n.admin, n.reason, n.since, n.autoDrained = boot, admin, reason, since, auto
		setMember(s.usable, i, usable)
		if s.boot.nodes.Len() > 0 {
			setMember(s.boot.nodes, i, in)
		}
		s.boot.n = count
	})
}

// setBooting records node i as rebooting as b says: the booting set and
// count, and the node out of the usable set (startReboot, loadBoots).
func (s *Scheduler) setBooting(i int, b nodeBoot) {
	s.nodes[i].boot = b
	if s.boot.nodes.Len() != len(s.nodes) {
		s.boot.nodes = grownSet(s.boot.nodes, len(s.nodes))
	}
	s.boot.nodes.Add(i)
	s.boot.n++
	s.usable.Remove(i)
}

// startReboot starts rebooting idle node i into the active features
// features, for job j (0: an operator's); it takes no work until
// NodeRebooted or BootTime. Listed in cyc when one is given.
func (s *Scheduler) startReboot(now time.Time, i int, features []string, j JobID, cyc *Cycle) {
	s.saveBoot(i)
	n := &s.nodes[i]
	s.setBooting(i, nodeBoot{until: now.Add(s.bootTime), features: features, job: j})
	s.noteCapacity()
	if cyc != nil {
		cyc.Reboots = append(cyc.Reboots, Reboot{Node: n.cfg.Name, Job: j, Features: slices.Clone(features)})
	}
}

// endBoot ends node i's reboot: it is usable again if administratively
// up and on.
func (s *Scheduler) endBoot(i int) {
	n := &s.nodes[i]
	n.boot = nodeBoot{}
	s.boot.nodes.Remove(i)
	s.boot.n--
	if n.admin == adminUp && n.pw.state == PowerOn && !n.removed {
		s.usable.Add(i)
	}
	s.noteCapacity()
}

// bootBegin marks DOWN, at the start of a cycle, the rebooting nodes
// whose BootTime passed ("reboot timed out", Slurm's reason), listing
// them in the cycle.
func (s *Scheduler) bootBegin(now time.Time, cyc *Cycle) {
	if b := &s.boot; !b.planWake.IsZero() {
		if s.jr.on {
			pw := b.planWake
			s.onUndo(func() { b.planWake = pw })
		}
		b.planWake = time.Time{} // set again by this cycle's plan
	}
	if s.boot.n == 0 {
		return
	}
	for i := s.boot.nodes.Next(0); i >= 0; i = s.boot.nodes.Next(i + 1) {
		n := &s.nodes[i]
		if n.boot.until.After(now) {
			continue
		}
		s.saveBoot(i)
		at := n.boot.until
		n.admin, n.reason, n.since, n.autoDrained = adminDown, "reboot timed out", at, false
		s.endBoot(i)
		cyc.RebootTimedOut = append(cyc.RebootTimedOut, n.cfg.Name)
	}
}

// rebootForMainPass is the main pass's reboot on demand (without
// backfill, which plans reboots instead): job j, the first of its
// partition to wait for resources, is placed as if the idle nodes it
// could reboot fitted; when that placement uses some, they are rebooted
// into its features and every node of it is held for j for the rest of
// the pass.
func (s *Scheduler) rebootForMainPass(now time.Time, j *job, cyc *Cycle) {
	sh := j.shape
	if s.bf != nil || sh.reboot.Len() == 0 || j.Spec.Reservation != "" || len(j.extra) > 0 {
		return
	}
	s.cand.CopyFrom(s.avail)
	// The nodes rebooting already into features that suit the job count
	// too, so that a job waiting for its reboot reboots no other node.
	for i := s.boot.nodes.Next(0); s.boot.n > 0 && i >= 0; i = s.boot.nodes.Next(i + 1) {
		if n := &s.nodes[i]; n.admin == adminUp && sh.cons.Match(n.boot.features) {
			s.cand.Add(i)
		}
	}
	s.cand.IntersectWith(sh.capable)
	if !s.cand.Intersects(sh.reboot) {
		return
	}
	if _, r := s.constrainByReservations(now, j, s.cand, false); r != policy.ReasonNone || s.cand.Count() < j.nodes {
		return
	}
	s.boot.placing = true
	nodes, _ := s.place(now, j, s.fewestReboots(j, s.cand))
	if nodes == nil {
		nodes, _ = s.place(now, j, s.cand)
	}
	s.boot.placing = false
	if !slices.ContainsFunc(nodes, sh.needsReboot) {
		return
	}
	nodes = slices.Clone(nodes) // s.placed is reused
	for _, i := range nodes {
		if sh.needsReboot(i) && !s.nodes[i].booting() {
			s.startReboot(now, i, sh.rebootInto(&s.nodes[i]), j.ID, cyc)
		}
		s.avail.Remove(i)
	}
}

// fewestReboots returns the candidates cand of job j, placed for a
// reboot (boot.placing), with only as many idle nodes still to reboot as
// the nodes that fit it without a new reboot leave it short of, the
// lightest first (a new set), so
// that a placement reboots no more nodes than it must (as Slurm weighs
// nodes needing a reboot last: knl.conf NodeRebootWeight).
func (s *Scheduler) fewestReboots(j *job, cand topology.NodeSet) topology.NodeSet {
	sh := j.shape
	fresh := func(i int) bool { return sh.needsReboot(i) && !s.nodes[i].booting() }
	short := j.nodes
	for i := cand.Next(0); i >= 0 && short > 0; i = cand.Next(i + 1) {
		if !fresh(i) && s.fitsNow(j, i) {
			short--
		}
	}
	out := cand.Clone()
	s.byWeight(cand, func(i int) bool {
		if fresh(i) {
			if short > 0 && s.fitsNow(j, i) {
				short--
			} else {
				out.Remove(i)
			}
		}
		return true
	})
	return out
}

// copyBootAllowed sets x.bootAllowed, the scratch set bfReboot narrows,
// to a copy of allowed, sizing it first.
func (x *job) copyBootAllowed(allowed topology.NodeSet) {
	if x.bootAllowed.Len() != allowed.Len() {
		x.bootAllowed = topology.NewNodeSet(allowed.Len())
	}
	x.bootAllowed.CopyFrom(allowed)
}

// bfReboot adjusts the backfill plan's job bj for reboots: a booting
// node counts only for jobs its new features suit; a job that enough
// nodes with its features active fit now is planned on the nodes needing
// no new reboot, and another with nodes to reboot from now + BootTime
// (see the comment at the top).
func (s *Scheduler) bfReboot(now time.Time, x *job, bj *backfill.Job) {
	sh := x.shape
	if len(bj.Components) > 0 || bj.Allowed.Len() == 0 {
		return
	}
	var drop []int
	if s.boot.n > 0 {
		for i := s.boot.nodes.Next(0); i >= 0; i = s.boot.nodes.Next(i + 1) {
			if bj.Allowed.Has(i) && !sh.cons.Match(s.nodes[i].boot.features) {
				drop = append(drop, i)
			}
		}
	}
	if len(drop) > 0 {
		x.copyBootAllowed(bj.Allowed)
		for _, i := range drop {
			x.bootAllowed.Remove(i)
		}
		bj.Allowed = x.bootAllowed
	}
	if !bj.Allowed.Intersects(sh.reboot) {
		return
	}
	// Enough allowed nodes with the features active fit the job now: it
	// is planned on the nodes that need no new reboot, with no BootTime
	// delay (a delay moving with the clock would hold off its start now
	// for ever).
	free := 0
	for i := bj.Allowed.Next(0); i >= 0 && free < x.nodes; i = bj.Allowed.Next(i + 1) {
		if n := &s.nodes[i]; !sh.needsReboot(i) && s.usable.Has(i) && s.fitsFree(x, n, x.perNode) {
			free++
		}
	}
	if free >= x.nodes {
		if len(drop) == 0 { // else bj.Allowed is x.bootAllowed already
			x.copyBootAllowed(bj.Allowed)
		}
		for i := sh.reboot.Next(0); i >= 0; i = sh.reboot.Next(i + 1) {
			if !s.nodes[i].booting() {
				x.bootAllowed.Remove(i)
			}
		}
		bj.Allowed = x.bootAllowed
		return
	}
	if at := now.Add(s.bootTime); bj.Earliest.Before(at) {
		bj.Earliest = at
	}
}

// rebootForPlan reboots the nodes that need it for the jobs the backfill
// plan reserved (each component of a heterogeneous job), once their start
// is within BootTime (and the plan's resolution), when idle; jobs are the
// plan's jobs, by entry.
func (s *Scheduler) rebootForPlan(now time.Time, plan *backfill.Plan, jobs []*job, cyc *Cycle) {
	lead := s.bootTime + s.bf.planner.Config().Resolution
	for k := range plan.Entries {
		e := &plan.Entries[k]
		if e.Status != backfill.StatusReserved || k >= len(jobs) || jobs[k] == nil {
			continue
		}
		if len(e.Components) == 0 {
			s.rebootForEntry(now, lead, e.Start, jobs[k], e.Nodes, cyc)
			continue
		}
		for c := range e.Components {
			if cj := s.jobs[JobID(e.Components[c].ID)]; cj != nil && cj.State == JobPending {
				s.rebootForEntry(now, lead, e.Start, cj, e.Components[c].Nodes, cyc)
			}
		}
	}
}

// rebootForEntry reboots the idle nodes among nodes that pending job j,
// reserved to start on them at start, needs rebooted, when start is
// within lead of now; a later start is noted in boot.planWake.
func (s *Scheduler) rebootForEntry(now time.Time, lead time.Duration, start time.Time, j *job, nodes []int, cyc *Cycle) {
	sh := j.shape
	if sh.reboot.Len() == 0 {
		return
	}
	if start.After(now.Add(lead)) {
		// Its nodes are rebooted when its start comes this close (see
		// NextWake).
		if w := start.Add(-lead); slices.ContainsFunc(nodes, func(i int) bool { return sh.needsReboot(i) && !s.nodes[i].booting() }) &&
			(s.boot.planWake.IsZero() || w.Before(s.boot.planWake)) {
			s.boot.planWake = w
		}
		return
	}
	for _, i := range nodes {
		n := &s.nodes[i]
		if sh.needsReboot(i) && s.usable.Has(i) && len(n.jobs) == 0 && !n.booting() {
			s.startReboot(now, i, sh.rebootInto(n), j.ID, cyc)
		}
	}
}

// bootWindows adds, for the backfill profile, a block on every rebooting
// node administratively up until its BootTime passes.
func (s *Scheduler) bootWindows(now time.Time, windows []bfWindow) []bfWindow {
	for i := s.boot.nodes.Next(0); s.boot.n > 0 && i >= 0; i = s.boot.nodes.Next(i + 1) {
		n := &s.nodes[i]
		if n.admin == adminUp && n.boot.until.After(now) {
			windows = append(windows, bfWindow{id: bootIDBase + uint64(i), w: policy.Window{Start: now, End: n.boot.until}, nodes: []int{i}})
		}
	}
	return windows
}

// bootWakes offers w the rebooting nodes' BootTime deadlines and when a
// backfill reservation comes within BootTime of its start (planWake).
func (s *Scheduler) bootWakes(w *wakeSet) {
	w.add(s.boot.planWake)
	for i := s.boot.nodes.Next(0); s.boot.n > 0 && i >= 0; i = s.boot.nodes.Next(i + 1) {
		w.add(s.nodes[i].boot.until)
	}
}
