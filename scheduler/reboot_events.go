package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/policy"
)

// The reboot events (see reboot.go), and what Explain and NodeInfo say
// about reboots.

// RebootNodeEvent reboots an idle node, into changeable features when
// Features names some (see RebootNode).
type RebootNodeEvent struct {
	Node     string
	Features []string `json:",omitempty"`
}

// Kind returns KindRebootNode.
func (RebootNodeEvent) Kind() EventKind { return KindRebootNode }

func (e RebootNodeEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.rebootNode(now, e.Node, e.Features)
}

// RebootNode reboots an idle node now, scontrol reboot (with
// ActiveFeatures= when features are given): it boots into its static
// features and the given changeable ones (each one of its
// ChangeableFeatures; none keeps its active features), taking no work
// until NodeRebooted reports it up or BootTime passes (then DOWN); the
// caller runs its RebootProgram. A node that runs jobs is refused with
// ErrNodeInUse (Slurm's reboot ASAP would wait for them: drain it
// first); one rebooting already or not powered on, or a feature it
// cannot have, with ErrRebootState. Its administrative state is kept.
func (s *Scheduler) RebootNode(now time.Time, name string, features ...string) error {
	_, err := s.Apply(now, RebootNodeEvent{Node: name, Features: features})
	return err
}

// NodeRebootedEvent reports that a rebooting node has booted (see
// NodeRebooted).
type NodeRebootedEvent struct{ Node string }

// Kind returns KindNodeRebooted.
func (NodeRebootedEvent) Kind() EventKind { return KindNodeRebooted }

func (e NodeRebootedEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.nodeRebooted(now, e.Node)
}

// NodeRebooted reports that a rebooting node has booted and registered:
// the features it was rebooted into become its active Features (Slurm's
// ActiveFeatures), and it takes work from the next cycle if it is
// administratively up. A node not rebooting is refused with
// ErrRebootState (one whose BootTime passed is DOWN already: ResumeNode
// it, as in Slurm).
func (s *Scheduler) NodeRebooted(now time.Time, name string) error {
	_, err := s.Apply(now, NodeRebootedEvent{Node: name})
	return err
}

func (s *Scheduler) rebootNode(now time.Time, name string, features []string) error {
	i, err := s.nodeIndex(now, name)
	if err != nil {
		return err
	}
	n := &s.nodes[i]
	switch {
	case n.booting():
		return fmt.Errorf("%w: node %q is rebooting already", ErrRebootState, name)
	case n.pw.state != PowerOn:
		return fmt.Errorf("%w: node %q is %s", ErrRebootState, name, n.pw.state)
	case len(n.jobs) > 0:
		return fmt.Errorf("%w: node %q runs jobs %v: reboot it once they end", ErrNodeInUse, name, n.jobs)
	}
	for _, f := range features {
		if !slices.Contains(n.cfg.ChangeableFeatures, f) {
			return fmt.Errorf("%w: node %q: feature %q is not one of its ChangeableFeatures %v", ErrRebootState, name, f, n.cfg.ChangeableFeatures)
		}
	}
	target := slices.Clone(n.cfg.Features)
	if len(features) > 0 {
		target = bootFeatures(n.cfg, features)
	}
	s.startReboot(now, i, target, 0, nil)
	s.last = now
	return nil
}

func (s *Scheduler) nodeRebooted(now time.Time, name string) error {
	i, err := s.nodeIndex(now, name)
	if err != nil {
		return err
	}
	n := &s.nodes[i]
	if !n.booting() {
		return fmt.Errorf("%w: node %q is not rebooting", ErrRebootState, name)
	}
	// Nothing fails from here on.
	nc := cloneNodeConfig(*n.cfg)
	nc.Features = slices.Clone(n.boot.features)
	n.cfg = &nc
	s.endBoot(i)
	for _, sh := range s.shapes {
		s.judgeNode(sh, i, s.parts[sh.part].nodes.Has(i))
	}
	s.nodesChanged()
	s.last = now
	return nil
}

// nodeRebootInfo is node n's reboot as NodeInfo shows it (nil: none).
func nodeRebootInfo(n *node) *NodeReboot {
	if !n.booting() {
		return nil
	}
	return &NodeReboot{Until: n.boot.until, Job: n.boot.job, Features: slices.Clone(n.boot.features)}
}

// availableFeatures is Slurm's AvailableFeatures of node config nc: its
// active features, then its changeable ones not active.
func availableFeatures(nc *NodeConfig) []string {
	out := slices.Clone(nc.Features)
	for _, f := range nc.ChangeableFeatures {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// rebootBlocker is Explain's blocker of a job whose constraint needs
// changeable features active on more nodes than have them: the nodes
// rebooting for it, or that a reboot is needed and on how many nodes it
// is possible.
func (s *Scheduler) rebootBlocker(j *job) (Blocker, bool) {
	sh := j.shape
	if sh.reboot.Len() == 0 || !s.whereSatisfiable(j) {
		return Blocker{}, false
	}
	var booting []int
	var want []string
	for i := s.boot.nodes.Next(0); s.boot.n > 0 && i >= 0; i = s.boot.nodes.Next(i + 1) {
		if n := &s.nodes[i]; n.boot.job == j.ID {
			booting = append(booting, i)
		}
	}
	able := s.ableNodes()
	active, rebootable := 0, 0
	for i := sh.capable.Next(0); i >= 0; i = sh.capable.Next(i + 1) {
		switch {
		case !able.Has(i):
		case sh.needsReboot(i):
			rebootable++
			if want == nil {
				want = s.nodes[i].cfg.changeableOf(sh.rebootInto(&s.nodes[i]))
			}
		default:
			active++
		}
	}
	if len(booting) > 0 {
		names := s.nodeNames(booting)
		n := &s.nodes[booting[0]]
		return Blocker{Kind: BlockerResources, Reason: policy.ReasonResources, Nodes: names,
			Detail: fmt.Sprintf("node(s) %s rebooting for it into features %s (BootTime %s, up by %s at the latest); it starts once they report booted",
				compactNames(names), strings.Join(n.boot.features, ","), fmtDur(s.bootTime), fmtTime(n.boot.until))}, true
	}
	if active >= j.nodes || rebootable == 0 {
		return Blocker{}, false
	}
	return Blocker{Kind: BlockerResources, Reason: policy.ReasonResources,
		Detail: fmt.Sprintf("Constraint %q needs changeable feature(s) %s: %d up node(s) have them active, %d more can be rebooted into them (BootTime %s) once idle; a reboot is needed",
			j.Spec.Constraint, strings.Join(want, ","), active, rebootable, fmtDur(s.bootTime))}, true
}

// changeableOf returns the changeable features of nc among features.
func (nc *NodeConfig) changeableOf(features []string) []string {
	var out []string
	for _, f := range features {
		if slices.Contains(nc.ChangeableFeatures, f) {
			out = append(out, f)
		}
	}
	return out
}
