package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// Power saving, Slurm's power_save: with Config.Power, a node idle for
// SuspendTime is powered down — the cycle lists it in Cycle.PowerDown, the
// caller runs its SuspendProgram — and shows POWERING_DOWN ("%") for
// SuspendTimeout, then POWERED_DOWN ("~"). A powered-down node is resumed
// on demand: when the backfill plan reserves it for a job (EASY: the
// top jobs; conservative: every job) that would start once it has booted,
// or, without backfill, when the first job of a partition waiting for
// resources fits on it, the cycle lists it in Cycle.PowerUp (the caller
// runs its ResumeProgram) and it shows POWERING_UP ("#") until the caller
// reports it up (NodePoweredUp) or ResumeTimeout passes, which marks it
// DOWN with the reason "ResumeTimeout reached", as Slurm does.
//
// The backfill plan counts a powered-down node as free from the time it
// could have booted (now + ResumeTimeout; a booting node from its resume
// deadline), so expected starts and reservations account for the boot.
//
// Sluice differs from Slurm in one respect: Slurm allocates the job to
// the powered-down nodes at once and shows it CONFIGURING while they boot;
// Sluice keeps the job pending (reason Resources; its planned nodes are
// the booting ones) and starts it in the first cycle after its nodes are
// up, so a job is never started on a node that is not running — the
// caller launches only on nodes it reported up — at the price that a
// higher-priority job arriving meanwhile may take the booted nodes first,
// as it would take any freed node.

// The power saving event kinds.
const (
	KindPowerDownNode EventKind = "power_down_node"
	KindPowerUpNode   EventKind = "power_up_node"
	KindNodePoweredUp EventKind = "node_powered_up"
)

// ErrPowerState reports a power event that is not valid in the node's
// power state (powering up a node that is on, say), or a power event on
// a scheduler without Config.Power.
var ErrPowerState = errors.New("invalid node power state for event")

// PowerConfig turns on power saving (Slurm's SuspendTime and friends).
// Zero values of optional fields mean Slurm's defaults.
type PowerConfig struct {
	// SuspendTime is how long a node must be idle before it is powered
	// down; required (> 0). A node's idle time counts from the first
	// cycle that finds it idle (Slurm counts from its last job's end:
	// the difference is at most one cycle interval, towards keeping a
	// node up longer).
	SuspendTime time.Duration
	// SuspendTimeout is how long powering down takes: the node is
	// POWERING_DOWN for it, then POWERED_DOWN. Zero means 30 s.
	SuspendTimeout time.Duration
	// ResumeTimeout is how long a node may take to boot: a node not
	// reported up by then is marked DOWN. Zero means 60 s.
	ResumeTimeout time.Duration
	// SuspendExcNodes and SuspendExcParts name nodes, and partitions
	// whose nodes, are never powered down for being idle.
	SuspendExcNodes, SuspendExcParts []string
	// ResumeRate and SuspendRate bound how many nodes are powered up
	// and down per minute of the clock (the minutes of Unix time, so
	// that how often Schedule is called does not move the windows).
	// Zero means Slurm's defaults, 300 and 60; a negative value, no limit
	// (Slurm's 0).
	ResumeRate, SuspendRate int
}

// Slurm's power saving defaults.
const (
	DefaultSuspendTimeout = 30 * time.Second
	DefaultResumeTimeout  = 60 * time.Second
	DefaultResumeRate     = 300
	DefaultSuspendRate    = 60
)

// validate checks the power config against the node and partition names.
func (c *PowerConfig) validate(nodes map[string]int, parts map[string]bool) error {
	switch {
	case c.SuspendTime <= 0 || c.SuspendTime > MaxTimeLimit:
		return fmt.Errorf("%w: Power.SuspendTime %v out of range (0, %v]", ErrInvalidConfig, c.SuspendTime, MaxTimeLimit)
	case c.SuspendTimeout < 0 || c.SuspendTimeout > MaxTimeLimit:
		return fmt.Errorf("%w: Power.SuspendTimeout %v out of range", ErrInvalidConfig, c.SuspendTimeout)
	case c.ResumeTimeout < 0 || c.ResumeTimeout > MaxTimeLimit:
		return fmt.Errorf("%w: Power.ResumeTimeout %v out of range", ErrInvalidConfig, c.ResumeTimeout)
	}
	for _, n := range c.SuspendExcNodes {
		if _, ok := nodes[n]; !ok {
			return fmt.Errorf("%w: Power.SuspendExcNodes: %w %q", ErrInvalidConfig, ErrUnknownNode, n)
		}
	}
	for _, p := range c.SuspendExcParts {
		if !parts[p] {
			return fmt.Errorf("%w: Power.SuspendExcParts: %w %q", ErrInvalidConfig, ErrUnknownPartition, p)
		}
	}
	return nil
}

// PowerState is a node's power state, Slurm's power-saving node flags.
type PowerState uint8

// Power states.
const (
	// PowerOn: running (no flag).
	PowerOn PowerState = iota
	// PowerPoweringDown: being powered down (Slurm's POWERING_DOWN, "%").
	PowerPoweringDown
	// PowerPoweredDown: powered down, resumable on demand (POWERED_DOWN, "~").
	PowerPoweredDown
	// PowerPoweringUp: booting (POWERING_UP, "#").
	PowerPoweringUp
)

var powerStateNames = [...]string{"ON", "POWERING_DOWN", "POWERED_DOWN", "POWERING_UP"}

// String returns Slurm's flag name ("ON" for a running node).
func (p PowerState) String() string { return enumName(p, powerStateNames[:], "PowerState") }

// Suffix returns sinfo's state suffix: "%", "~", "#", or "" when on.
func (p PowerState) Suffix() string {
	switch p {
	case PowerPoweringDown:
		return "%"
	case PowerPoweredDown:
		return "~"
	case PowerPoweringUp:
		return "#"
	}
	return ""
}

// nodePower is a node's power-saving state.
type nodePower struct {
	state PowerState
	// at is when POWERING_DOWN ends, POWERING_UP times out, or (POWERED_DOWN)
	// when the node went down.
	at time.Time
	// idleSince is when a cycle first found the node idle (zero: busy, or
	// not seen idle yet).
	idleSince time.Time
}

// powerState is the scheduler's power-saving state.
type powerState struct {
	cfg PowerConfig // with defaults filled in
	exc map[string]bool
	// excParts are the partitions in SuspendExcParts.
	excParts []int
	// dormant holds the nodes whose power state is not on.
	dormant topology.NodeSet
	// able is, for the cycle running, the nodes up or resumable (dormant
	// and administratively up); wake, for the main pass without
	// backfill, the resumable nodes no job ahead has claimed or held
	// back.
	able, wake topology.NodeSet
	// The rate windows: when each opened, and how many nodes went up and
	// down in it.
	upWindow, downWindow time.Time
	// planWake is, after a backfill pass, when the first reservation of
	// the plan on resumable nodes not woken yet comes close enough to
	// wake them (zero: none); derived, not stored.
	planWake   time.Time
	ups, downs int
}

func (s *Scheduler) initPower(c PowerConfig) {
	if c.SuspendTimeout == 0 {
		c.SuspendTimeout = DefaultSuspendTimeout
	}
	if c.ResumeTimeout == 0 {
		c.ResumeTimeout = DefaultResumeTimeout
	}
	if c.ResumeRate == 0 {
		c.ResumeRate = DefaultResumeRate
	}
	if c.SuspendRate == 0 {
		c.SuspendRate = DefaultSuspendRate
	}
	c.SuspendExcNodes, c.SuspendExcParts = slices.Clone(c.SuspendExcNodes), slices.Clone(c.SuspendExcParts)
	p := &powerState{cfg: c, exc: map[string]bool{}, dormant: topology.NewNodeSet(len(s.nodes))}
	for _, n := range c.SuspendExcNodes {
		p.exc[n] = true
	}
	for _, pn := range c.SuspendExcParts {
		p.excParts = append(p.excParts, s.partByName[pn])
	}
	s.power = p
}

// Power returns the power-saving configuration in force (defaults filled
// in), or nil without Config.Power.
func (s *Scheduler) Power() *PowerConfig {
	if s.power == nil {
		return nil
	}
	c := s.power.cfg
	c.SuspendExcNodes, c.SuspendExcParts = slices.Clone(c.SuspendExcNodes), slices.Clone(c.SuspendExcParts)
	return &c
}

// setPower moves node i to power state st (at: see nodePower), keeping
// s.usable and the dormant set in step, journaled inside a cycle.
func (s *Scheduler) setPower(i int, st PowerState, at time.Time) {
	s.savePower(i)
	n := &s.nodes[i]
	n.pw.state, n.pw.at, n.pw.idleSince = st, at, time.Time{}
	if st == PowerOn {
		s.power.dormant.Remove(i)
		if n.admin == adminUp && !n.booting() {
			s.usable.Add(i)
		}
	} else {
		s.power.dormant.Add(i)
		s.usable.Remove(i)
	}
	s.noteCapacity()
}

// savePower records how to take back a change to node i's power and
// administrative state inside a cycle.
func (s *Scheduler) savePower(i int) {
	if !s.jr.on {
		return
	}
	n := &s.nodes[i]
	pw, admin, reason, since, auto := n.pw, n.admin, n.reason, n.since, n.autoDrained
	usable, dormant := s.usable.Has(i), s.power.dormant.Has(i)
	s.onUndo(func() {
		n := &s.nodes[i]
		n.pw, n.admin, n.reason, n.since, n.autoDrained = pw, admin, reason, since, auto
		setMember(s.usable, i, usable)
		setMember(s.power.dormant, i, dormant)
	})
}

func setMember(ns topology.NodeSet, i int, in bool) {
	if in {
		ns.Add(i)
	} else {
		ns.Remove(i)
	}
}

// takeRate reports whether one more node may go up (or down) at now
// under ResumeRate (SuspendRate), counting it if so. The rates count per
// minute of the clock (rateWindow), so that how often Schedule is called
// does not move the windows.
func (s *Scheduler) takeRate(now time.Time, up bool) bool {
	p := s.power
	rate, window, count := p.cfg.SuspendRate, &p.downWindow, &p.downs
	if up {
		rate, window, count = p.cfg.ResumeRate, &p.upWindow, &p.ups
	}
	if rate < 0 {
		return true
	}
	if w := rateWindow(now); !window.Equal(w) {
		*window, *count = w, 0
	}
	if *count >= rate {
		return false
	}
	*count++
	return true
}

// rateWindow is the minute of the clock holding t, the window SuspendRate
// and ResumeRate count in.
func rateWindow(t time.Time) time.Time { return t.Truncate(time.Minute) }

// powerBegin runs the power timers at the start of a cycle — POWERING_DOWN
// nodes whose SuspendTimeout passed are POWERED_DOWN, POWERING_UP nodes
// whose ResumeTimeout passed are DOWN — and computes the cycle's able and
// wake sets.
func (s *Scheduler) powerBegin(now time.Time, cyc *Cycle) {
	p := s.power
	if p == nil {
		return
	}
	if s.jr.on {
		uw, dw, ups, downs, pw := p.upWindow, p.downWindow, p.ups, p.downs, p.planWake
		s.onUndo(func() { p.upWindow, p.downWindow, p.ups, p.downs, p.planWake = uw, dw, ups, downs, pw })
	}
	p.planWake = time.Time{}
	for i := p.dormant.Next(0); i >= 0; i = p.dormant.Next(i + 1) {
		n := &s.nodes[i]
		if n.pw.at.After(now) {
			continue
		}
		switch n.pw.state {
		case PowerPoweringDown:
			s.setPower(i, PowerPoweredDown, n.pw.at)
		case PowerPoweringUp:
			at := n.pw.at
			s.setPower(i, PowerPoweredDown, at)
			n.admin, n.reason, n.since, n.autoDrained = adminDown, "ResumeTimeout reached", at, false
			cyc.ResumeTimedOut = append(cyc.ResumeTimedOut, n.cfg.Name)
		}
	}
	if p.able.Len() != len(s.nodes) {
		p.able, p.wake = topology.NewNodeSet(len(s.nodes)), topology.NewNodeSet(len(s.nodes))
	}
	p.wake.Reset()
	for i := p.dormant.Next(0); i >= 0; i = p.dormant.Next(i + 1) {
		if s.nodes[i].admin == adminUp {
			p.wake.Add(i)
		}
	}
	p.able.CopyFrom(s.usable)
	p.able.UnionWith(p.wake)
}

// powerUp starts booting node i for a job (rate permitting), listing it
// in the cycle. Only a POWERED_DOWN node is woken; one still powering
// down is woken by a later cycle.
func (s *Scheduler) powerUp(now time.Time, i int, cyc *Cycle, j JobID) {
	if s.nodes[i].pw.state != PowerPoweredDown || !s.takeRate(now, true) {
		return
	}
	s.setPower(i, PowerPoweringUp, now.Add(s.power.cfg.ResumeTimeout))
	cyc.PowerUp = append(cyc.PowerUp, PowerUp{Node: s.nodes[i].cfg.Name, Job: j})
}

// PowerUp is a node a cycle powers up (the caller runs its resume
// program) and the job it is woken for.
type PowerUp struct {
	Node string
	Job  JobID
}

// wakeForMainPass is the main pass's resume on demand (without backfill,
// which plans with booting nodes instead): job j, the first of its
// partition to wait for resources, is placed as if the resumable nodes
// not claimed yet in this cycle were up; when that placement uses some,
// they are powered up and every node of it is held for j for the rest of
// the pass.
func (s *Scheduler) wakeForMainPass(now time.Time, j *job, cyc *Cycle) {
	p := s.power
	if p == nil || s.bf != nil || j.Spec.Reservation != "" || !p.wake.Intersects(j.shape.capable) {
		return
	}
	s.cand.CopyFrom(s.avail)
	s.cand.UnionWith(p.wake)
	s.cand.IntersectWith(j.shape.capable)
	if _, r := s.constrainByReservations(now, j, s.cand, false); r != policy.ReasonNone {
		return
	}
	nodes, _ := s.place(now, j, s.cand)
	if !slices.ContainsFunc(nodes, p.wake.Has) {
		return
	}
	for _, i := range nodes {
		if p.wake.Has(i) {
			s.powerUp(now, i, cyc, j.ID)
			p.wake.Remove(i)
		}
		s.avail.Remove(i)
	}
}

// powerWindows adds, for the backfill profile, a block on every resumable
// node until it could have booted: now + ResumeTimeout for a powered-down
// node (after SuspendTimeout for one still powering down), its resume
// deadline for a booting one.
func (s *Scheduler) powerWindows(now time.Time, windows []bfWindow) []bfWindow {
	p := s.power
	if p == nil {
		return windows
	}
	for i := p.dormant.Next(0); i >= 0; i = p.dormant.Next(i + 1) {
		n := &s.nodes[i]
		if n.admin != adminUp {
			continue // offers nothing: not in any job's allowed nodes
		}
		end := now.Add(p.cfg.ResumeTimeout)
		switch n.pw.state {
		case PowerPoweringDown:
			end = n.pw.at.Add(p.cfg.ResumeTimeout)
		case PowerPoweringUp:
			end = n.pw.at
		}
		windows = append(windows, bfWindow{id: powerIDBase + uint64(i), w: policy.Window{Start: now, End: end}, nodes: []int{i}})
	}
	return windows
}

// holdWake keeps the resumable nodes of a partition whose queue is
// blocked from the later jobs of the main pass, as the partition's up
// nodes are (see evaluate).
func (s *Scheduler) holdWake(nodes topology.NodeSet) {
	if s.power != nil {
		s.power.wake.Subtract(nodes)
	}
}

// powerIDBase numbers the profile blocks of resumable nodes, below the
// reservation windows' and far above any job ID.
const powerIDBase = 1 << 61

// wakeForPlan powers up the resumable nodes the backfill plan reserved
// for a job that starts once they have booted.
func (s *Scheduler) wakeForPlan(now time.Time, plan *backfill.Plan, cyc *Cycle) {
	p := s.power
	if p == nil || p.dormant.IsEmpty() {
		return
	}
	lead := p.cfg.ResumeTimeout + s.bf.planner.Config().Resolution
	soon := now.Add(lead)
	for k := range plan.Entries {
		e := &plan.Entries[k]
		if e.Status != backfill.StatusReserved {
			continue
		}
		if e.Start.After(soon) {
			// Its nodes are woken when its start comes this close (see
			// NextWake).
			if slices.ContainsFunc(e.Nodes, func(i int) bool { return p.dormant.Has(i) && s.nodes[i].admin == adminUp }) {
				if w := e.Start.Add(-lead); p.planWake.IsZero() || w.Before(p.planWake) {
					p.planWake = w
				}
			}
			continue
		}
		for _, i := range e.Nodes {
			if p.dormant.Has(i) && s.nodes[i].admin == adminUp {
				s.powerUp(now, i, cyc, JobID(e.ID))
			}
		}
	}
}

// powerEnd, at the end of a cycle, notes when nodes became idle and powers
// down those idle for SuspendTime (rate permitting), listing them in the
// cycle.
func (s *Scheduler) powerEnd(now time.Time, cyc *Cycle) {
	p := s.power
	if p == nil {
		return
	}
	for i := s.usable.Next(0); i >= 0; i = s.usable.Next(i + 1) {
		n := &s.nodes[i]
		busy := len(n.jobs) > 0
		switch {
		case busy && !n.pw.idleSince.IsZero(), !busy && n.pw.idleSince.IsZero():
			s.savePower(i)
			n.pw.idleSince = time.Time{}
			if !busy {
				n.pw.idleSince = now
			}
		case !busy && now.Sub(n.pw.idleSince) >= p.cfg.SuspendTime && !s.suspendExcluded(i) && s.takeRate(now, false):
			s.setPower(i, PowerPoweringDown, now.Add(p.cfg.SuspendTimeout))
			cyc.PowerDown = append(cyc.PowerDown, n.cfg.Name)
		}
	}
}

// suspendExcluded reports whether node i is never powered down for being
// idle (SuspendExcNodes, SuspendExcParts).
func (s *Scheduler) suspendExcluded(i int) bool {
	p := s.power
	if p.exc[s.nodes[i].cfg.Name] {
		return true
	}
	for _, k := range p.excParts {
		if s.parts[k].nodes.Has(i) {
			return true
		}
	}
	return false
}

// PowerDownNodeEvent powers an idle node down (see PowerDownNode).
type PowerDownNodeEvent struct{ Node string }

// Kind returns KindPowerDownNode.
func (PowerDownNodeEvent) Kind() EventKind { return KindPowerDownNode }

func (e PowerDownNodeEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.powerDownNode(now, e.Node)
}

// PowerDownNode powers a node down now, scontrol update state=power_down:
// it is POWERING_DOWN for SuspendTimeout, then POWERED_DOWN, and resumed
// on demand like one powered down for being idle; the caller runs its
// suspend program. A node that runs jobs is refused (ErrNodeInUse; Slurm
// would power it down once they end: drain it first); one already down
// or powering down is refused with ErrPowerState, one rebooting into
// changeable features with ErrRebootState. A booting node may be powered
// down (its boot is abandoned).
func (s *Scheduler) PowerDownNode(now time.Time, name string) error {
	_, err := s.Apply(now, PowerDownNodeEvent{Node: name})
	return err
}

// PowerUpNodeEvent powers a node up (see PowerUpNode).
type PowerUpNodeEvent struct{ Node string }

// Kind returns KindPowerUpNode.
func (PowerUpNodeEvent) Kind() EventKind { return KindPowerUpNode }

func (e PowerUpNodeEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.powerUpNode(now, e.Node)
}

// PowerUpNode starts booting a POWERED_DOWN node now, scontrol update
// state=power_up: it is POWERING_UP until NodePoweredUp reports it up or
// ResumeTimeout passes (then DOWN); the caller runs its resume program.
// Any other power state is refused with ErrPowerState.
func (s *Scheduler) PowerUpNode(now time.Time, name string) error {
	_, err := s.Apply(now, PowerUpNodeEvent{Node: name})
	return err
}

// NodePoweredUpEvent reports that a node has booted (see NodePoweredUp).
type NodePoweredUpEvent struct{ Node string }

// Kind returns KindNodePoweredUp.
func (NodePoweredUpEvent) Kind() EventKind { return KindNodePoweredUp }

func (e NodePoweredUpEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.nodePoweredUp(now, e.Node)
}

// NodePoweredUp reports that a POWERING_UP (or POWERED_DOWN) node has
// booted and registered: it is on again, and takes work from the next
// cycle if it is administratively up (a node the resume timeout marked
// DOWN stays down until ResumeNode, as in Slurm). Other states are
// refused with ErrPowerState.
func (s *Scheduler) NodePoweredUp(now time.Time, name string) error {
	_, err := s.Apply(now, NodePoweredUpEvent{Node: name})
	return err
}

// powerNode checks the time and the power config and returns the node's
// index.
func (s *Scheduler) powerNode(now time.Time, name string) (int, error) {
	i, err := s.nodeIndex(now, name)
	if err != nil {
		return 0, err
	}
	if s.power == nil {
		return 0, fmt.Errorf("%w: node %q: power saving is off (Config.Power)", ErrPowerState, name)
	}
	return i, nil
}

func (s *Scheduler) powerDownNode(now time.Time, name string) error {
	i, err := s.powerNode(now, name)
	if err != nil {
		return err
	}
	n := &s.nodes[i]
	switch {
	case n.pw.state == PowerPoweringDown || n.pw.state == PowerPoweredDown:
		return fmt.Errorf("%w: node %q is %s", ErrPowerState, name, n.pw.state)
	case len(n.jobs) > 0:
		return fmt.Errorf("%w: node %q runs jobs %v: power it down once they end", ErrNodeInUse, name, n.jobs)
	case n.booting():
		return fmt.Errorf("%w: node %q is rebooting into features %v: power it down once it has booted", ErrRebootState, name, n.boot.features)
	}
	s.setPower(i, PowerPoweringDown, now.Add(s.power.cfg.SuspendTimeout))
	s.last = now
	return nil
}

func (s *Scheduler) powerUpNode(now time.Time, name string) error {
	i, err := s.powerNode(now, name)
	if err != nil {
		return err
	}
	n := &s.nodes[i]
	if n.pw.state != PowerPoweredDown {
		return fmt.Errorf("%w: node %q is %s, only a POWERED_DOWN node can be powered up", ErrPowerState, name, n.pw.state)
	}
	s.setPower(i, PowerPoweringUp, now.Add(s.power.cfg.ResumeTimeout))
	s.last = now
	return nil
}

func (s *Scheduler) nodePoweredUp(now time.Time, name string) error {
	i, err := s.powerNode(now, name)
	if err != nil {
		return err
	}
	n := &s.nodes[i]
	if n.pw.state != PowerPoweringUp && n.pw.state != PowerPoweredDown {
		return fmt.Errorf("%w: node %q is %s, not powering up", ErrPowerState, name, n.pw.state)
	}
	s.setPower(i, PowerOn, time.Time{})
	s.last = now
	return nil
}
