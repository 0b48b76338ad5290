package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/topology"
)

// Node administration at run time (scontrol create / delete / update
// nodename): AddNodeEvent, RemoveNodeEvent and UpdateNodeEvent, each
// validated as New validates a NodeConfig, each all-or-nothing.
//
// Index policy: a node keeps its index for the scheduler's life. A removed
// node leaves a tombstone — its slot stays, excluded from every node set
// (usable nodes, partitions, job shapes), listed by neither Node nor Nodes,
// its name free for a new node — so allocations, reservations and node
// sets held anywhere stay valid. A new node always takes the next index
// (tombstones are not reused): a long-lived scheduler with heavy node
// churn carries one empty slot per removed node (a few hundred bytes and
// one bit per node set), which a snapshot and restore drop.
//
// Changes hold new starts only: running jobs keep what they hold and are
// never judged again. Removing a node that runs (or holds suspended) jobs,
// or that an advance reservation holds, is refused with ErrNodeInUse, and
// so is an update that would leave a node less than its running jobs
// hold.

// The node administration event kinds.
const (
	KindAddNode    EventKind = "add_node"
	KindRemoveNode EventKind = "remove_node"
	KindUpdateNode EventKind = "update_node"
)

// ErrNodeInUse reports a node change refused because of what the node
// holds: running or suspended jobs (RemoveNode), more than the new
// configuration would offer (UpdateNode), or an advance reservation.
var ErrNodeInUse = errors.New("node in use")

// AddNodeEvent adds a node, up and idle (see AddNode).
type AddNodeEvent struct {
	Node NodeConfig
	// Partitions lists the partitions with an explicit node list that the
	// node joins; it joins every partition whose node list is empty
	// (Nodes=ALL) whatever this says.
	Partitions []string `json:",omitempty"`
	// PoweredDown adds the node POWERED_DOWN, with power saving
	// (Config.Power): a cloud node that exists only once resumed on
	// demand, Slurm's State=CLOUD.
	PoweredDown bool `json:",omitempty"`
}

// Kind returns KindAddNode.
func (AddNodeEvent) Kind() EventKind { return KindAddNode }

func (e AddNodeEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.addNode(now, e)
}

// AddNode adds a node to the running cluster, up and idle, in the given
// partitions and in every partition over all nodes (Nodes=ALL), as
// scontrol create nodename does for a dynamic node. The config is
// validated as New validates one; its name must be new (a removed node's
// name may be reused). Its device and GRES names and types must already
// be in the TRES registry (Slurm likewise needs new GRES types in
// GresTypes before a restart): build the registry with NewRegistry and
// register the names nodes may bring later before New. A cluster with a
// topology (Config.Topology) refuses new nodes, since the graph's
// switches and NVLink domains are fixed at New. The node takes the next
// index; pending jobs may start on it from the next cycle. The backfill
// profile kept between cycles takes the node in (unless it is added
// powered down), so that cycle plans the queue again without rebuilding
// the profile.
func (s *Scheduler) AddNode(now time.Time, nc NodeConfig, partitions ...string) error {
	_, err := s.Apply(now, AddNodeEvent{Node: nc, Partitions: partitions})
	return err
}

// RemoveNodeEvent removes an idle node (see RemoveNode).
type RemoveNodeEvent struct{ Node string }

// Kind returns KindRemoveNode.
func (RemoveNodeEvent) Kind() EventKind { return KindRemoveNode }

func (e RemoveNodeEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.removeNode(now, e.Node)
}

// RemoveNode removes a node (scontrol delete nodename). It is refused
// with ErrNodeInUse while jobs run or are suspended on the node or an
// advance reservation holds it — drain it and wait, or DownNode it first
// (which ends or requeues its jobs) — and with ErrInvalidConfig for the
// last node of the cluster or of a partition with an explicit node list.
// Pending jobs that could only run there stay pending (ReqNodeNotAvail).
func (s *Scheduler) RemoveNode(now time.Time, name string) error {
	_, err := s.Apply(now, RemoveNodeEvent{Node: name})
	return err
}

// UpdateNodeEvent changes a node's configuration (see UpdateNode).
type UpdateNodeEvent struct {
	// Node is the new configuration; its Name names the node.
	Node NodeConfig
	// SetPartitions says whether Partitions replaces the node's
	// memberships of partitions with an explicit node list; without it
	// they stay as they are.
	SetPartitions bool     `json:",omitempty"`
	Partitions    []string `json:",omitempty"`
}

// Kind returns KindUpdateNode.
func (UpdateNodeEvent) Kind() EventKind { return KindUpdateNode }

func (e UpdateNodeEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.updateNode(now, e)
}

// UpdateNode replaces the configuration of node nc.Name (CPUs, memory,
// devices, count-only GRES, features), validated as New validates one;
// read the current one with NodeConfig. Running jobs keep what they hold:
// the update is refused with ErrNodeInUse when the node would have less
// of some TRES than its jobs hold, a CPU id or device index they hold
// would no longer exist, or a held device would change its name or type.
// Device health is kept for the devices that remain. State, reason and
// jobs are unchanged; new starts see the new configuration from the next
// cycle. Features are the active features (scontrol update
// ActiveFeatures=); a node rebooting into changeable features keeps
// booting into them, with the new static features (see RebootNode).
func (s *Scheduler) UpdateNode(now time.Time, nc NodeConfig) error {
	_, err := s.Apply(now, UpdateNodeEvent{Node: nc})
	return err
}

// SetNodePartitions makes node name a member of exactly the given
// partitions among those with an explicit node list (scontrol update
// partitionname=… nodes=…, from the node's side); partitions over all
// nodes always hold it.
func (s *Scheduler) SetNodePartitions(now time.Time, name string, partitions ...string) error {
	nc, ok := s.NodeConfig(name)
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownNode, name)
	}
	_, err := s.Apply(now, UpdateNodeEvent{Node: nc, SetPartitions: true, Partitions: partitions})
	return err
}

// NodeConfig returns a copy of the named node's current configuration.
func (s *Scheduler) NodeConfig(name string) (NodeConfig, bool) {
	i, ok := s.nodeByName[name]
	if !ok {
		return NodeConfig{}, false
	}
	return cloneNodeConfig(*s.nodes[i].cfg), true
}

// cloneNodeConfig returns a deep copy of nc's slices.
func cloneNodeConfig(nc NodeConfig) NodeConfig {
	nc.Features = slices.Clone(nc.Features)
	nc.ChangeableFeatures = slices.Clone(nc.ChangeableFeatures)
	nc.GRES = slices.Clone(nc.GRES)
	nc.Devices = nc.Devices.Clone()
	return nc
}

// checkRegistered reports a device or GRES name of nc that is not in the
// registry (vectors are sized at New: a new name cannot be counted).
func (s *Scheduler) checkRegistered(nc *NodeConfig) error {
	check := func(name, typ, what string) error {
		for _, n := range []string{deviceTRES(name, ""), deviceTRES(name, typ)} {
			if _, ok := s.reg.Lookup(n); !ok {
				return fmt.Errorf("%w: node %q: %s %s is not in the TRES registry (register it before New: see NewRegistry)",
					ErrInvalidConfig, nc.Name, what, n)
			}
		}
		return nil
	}
	for _, d := range nc.Devices.Devices {
		if err := check(d.Name, d.Type, fmt.Sprintf("device %d:", d.Index)); err != nil {
			return err
		}
	}
	for _, g := range nc.GRES {
		if err := check(g.Name, g.Type, "GRES"); err != nil {
			return err
		}
	}
	return nil
}

// validNode validates a node config an event brings.
func (s *Scheduler) validNode(nc *NodeConfig) error {
	if err := nc.validate(); err != nil {
		return err
	}
	return s.checkRegistered(nc)
}

// membership returns, per partition, whether node i (name) is to be a
// member: every partition over all nodes, and those with an explicit list
// named in names (or, with keep, those holding it now). Unknown names are
// an error.
func (s *Scheduler) membership(i int, names []string, keep bool) ([]bool, error) {
	in := make([]bool, len(s.parts))
	for k := range s.parts {
		p := &s.parts[k]
		in[k] = len(p.cfg.Nodes) == 0 || (keep && p.nodes.Has(i))
	}
	if keep {
		return in, nil
	}
	for _, pn := range names {
		k, ok := s.partByName[pn]
		if !ok {
			return nil, fmt.Errorf("%w: %w %q", ErrInvalidConfig, ErrUnknownPartition, pn)
		}
		in[k] = true
	}
	return in, nil
}

// memberOf returns, per partition, whether node i is a member now.
func (s *Scheduler) memberOf(i int) []bool {
	in := make([]bool, len(s.parts))
	for k := range s.parts {
		in[k] = s.parts[k].nodes.Has(i)
	}
	return in
}

// checkPartitionsKeepNodes refuses taking node i out of a partition with
// an explicit node list whose last node it is (an empty list would mean
// every node).
func (s *Scheduler) checkPartitionsKeepNodes(i int, in []bool) error {
	for k := range s.parts {
		p := &s.parts[k]
		if (in == nil || !in[k]) && p.nodes.Has(i) && len(p.cfg.Nodes) == 1 {
			return fmt.Errorf("%w: node %q is the only node of partition %q", ErrInvalidConfig, s.nodes[i].cfg.Name, p.cfg.Name)
		}
	}
	return nil
}

// prioChange is the priority engine's state after a node change: its
// engine (new cluster facts) and per-partition TRES totals. Computed
// before anything changes, so that a failure changes nothing.
type prioChange struct {
	engine   *priority.Engine
	partTRES []gres.Vector
}

// prioAfter computes prioChange for node i going from capacity oldCap
// (nil: a new node) in partitions oldIn to newCap (nil: removed) in
// newIn; nodes is the count of live nodes after the change. Nil without
// multifactor priority.
func (s *Scheduler) prioAfter(oldCap gres.Vector, oldIn []bool, newCap gres.Vector, newIn []bool, nodes int) (*prioChange, error) {
	p := s.prio
	if p == nil {
		return nil, nil
	}
	pt := make([]gres.Vector, len(p.partTRES))
	for k, t := range p.partTRES {
		t = t.Clone()
		if oldCap != nil && oldIn[k] {
			if err := t.SubInPlace(oldCap); err != nil {
				return nil, fmt.Errorf("%w: partition %q totals: %w", ErrInvalidConfig, s.parts[k].cfg.Name, err)
			}
		}
		if newCap != nil && newIn[k] {
			if err := t.AddInPlace(newCap); err != nil {
				return nil, fmt.Errorf("%w: partition %q totals: %w", ErrInvalidConfig, s.parts[k].cfg.Name, err)
			}
		}
		pt[k] = t
	}
	cl := p.engine.Cluster()
	cl.Nodes = uint32(nodes)
	cpus := int64(cl.CPUs)
	if oldCap != nil {
		cpus -= oldCap[gres.CPU]
	}
	if newCap != nil {
		cpus += newCap[gres.CPU]
	}
	if cpus < 0 || cpus > 1<<32-1 {
		return nil, fmt.Errorf("%w: cluster CPU count %d out of range", ErrInvalidConfig, cpus)
	}
	cl.CPUs = uint32(cpus)
	e, err := priority.NewEngine(p.engine.Config(), cl)
	if err != nil {
		return nil, fmt.Errorf("%w: priority: %w", ErrInvalidConfig, err)
	}
	return &prioChange{engine: e, partTRES: pt}, nil
}

// commit installs the change.
func (c *prioChange) commit(s *Scheduler) {
	if c != nil {
		s.prio.engine, s.prio.partTRES = c.engine, c.partTRES
	}
}

// addNode adds node nc (see AddNode).
func (s *Scheduler) addNode(now time.Time, e AddNodeEvent) error {
	if err := s.tick(now); err != nil {
		return err
	}
	nc, parts := cloneNodeConfig(e.Node), e.Partitions
	if e.PoweredDown && s.power == nil {
		return fmt.Errorf("%w: node %q: added powered down, but power saving is off (Config.Power)", ErrPowerState, nc.Name)
	}
	if err := s.validNode(&nc); err != nil {
		return err
	}
	if _, dup := s.nodeByName[nc.Name]; dup {
		return fmt.Errorf("%w: node %q: duplicate name", ErrInvalidConfig, nc.Name)
	}
	if s.graph != nil {
		return fmt.Errorf("%w: node %q: the cluster has a topology (Config.Topology), whose switches and domains are fixed at New: nodes cannot be added",
			ErrInvalidConfig, nc.Name)
	}
	i := len(s.nodes)
	in, err := s.membership(i, parts, false)
	if err != nil {
		return fmt.Errorf("node %q: %w", nc.Name, err)
	}
	nd, err := s.buildNode(nc)
	if err != nil {
		return err
	}
	pc, err := s.prioAfter(nil, nil, nd.capacity, in, len(s.nodeByName)+1)
	if err != nil {
		return fmt.Errorf("node %q: %w", nc.Name, err)
	}
	if s.pol != nil {
		if err := s.pol.resv.Grow(i + 1); err != nil {
			return fmt.Errorf("node %q: %w", nc.Name, err) // cannot happen: the count only grows
		}
	}
	// Nothing fails from here on.
	s.nodes = append(s.nodes, nd)
	s.nodeByName[nc.Name] = i
	s.growNodeSets()
	if e.PoweredDown {
		s.nodes[i].pw = nodePower{state: PowerPoweredDown, at: now}
		s.power.dormant.Add(i)
	} else {
		s.usable.Add(i)
	}
	for k := range s.parts {
		if in[k] {
			p := &s.parts[k]
			p.nodes.Add(i)
			if len(p.cfg.Nodes) > 0 {
				p.cfg.Nodes = append(slices.Clip(p.cfg.Nodes), nc.Name)
			}
		}
	}
	for _, sh := range s.shapes {
		s.judgeNode(sh, i, in[sh.part])
	}
	pc.commit(s)
	// The kept backfill profile takes the node in, unless it is dormant
	// (power saving plans it through its resume windows) or cannot.
	if e.PoweredDown || !s.growProfile(i) {
		s.noteCapacity()
	}
	s.nodeIndexChanged()
	s.recountGPUJobs(in)
	s.last = now
	return nil
}

// growNodeSets sizes every node set the scheduler keeps for len(s.nodes)
// nodes (the new indices out of them; partition and shape sets keep their
// members).
func (s *Scheduler) growNodeSets() {
	n := len(s.nodes)
	s.usable = grownSet(s.usable, n)
	s.avail, s.cand, s.fit = topology.NewNodeSet(n), topology.NewNodeSet(n), topology.NewNodeSet(n)
	for k := range s.parts {
		s.parts[k].nodes = grownSet(s.parts[k].nodes, n)
	}
	for _, sh := range s.shapes {
		sh.capable = grownSet(sh.capable, n)
		if sh.reboot.Len() > 0 {
			sh.reboot = grownSet(sh.reboot, n)
		}
		sh.stamp = 0
	}
	if s.boot.able.Len() > 0 {
		s.boot.able = grownSet(s.boot.able, n)
	}
	if s.pol != nil {
		s.pol.forbidden = topology.NewNodeSet(n)
	}
	if s.removed.Len() > 0 {
		s.removed = grownSet(s.removed, n)
	}
	if s.power != nil {
		s.power.dormant = grownSet(s.power.dormant, n)
	}
}

// grownSet returns a set of length n holding the members of ns.
func grownSet(ns topology.NodeSet, n int) topology.NodeSet {
	g := topology.NewNodeSet(n)
	g.CopyFrom(ns)
	return g
}

// nodesChanged records that node configuration changed: the kept
// backfill profile is rebuilt (addNode grows it instead), every shape's allowed set recomputed, the
// policy version recomputed.
func (s *Scheduler) nodesChanged() {
	s.noteCapacity()
	s.nodeIndexChanged()
}

// nodeIndexChanged drops what the node list invalidates besides the kept
// backfill profile: the shapes' cached candidate counts and the policy
// version. It recomputes the weight tiers and the claim dimension (the
// kept profile is unreadable once that changes).
func (s *Scheduler) nodeIndexChanged() {
	for _, sh := range s.shapes {
		sh.stamp = 0
	}
	s.policyVersion = ""
	s.refreshWeightTiers()
	s.refreshClaim()
}

// removeNode removes the named node (see RemoveNode).
func (s *Scheduler) removeNode(now time.Time, name string) error {
	i, err := s.nodeIndex(now, name)
	if err != nil {
		return err
	}
	n := &s.nodes[i]
	if len(n.jobs) > 0 {
		return fmt.Errorf("%w: node %q runs jobs %v (drain it and let them end, or down it)", ErrNodeInUse, name, n.jobs)
	}
	if n.booting() {
		return fmt.Errorf("%w: node %q is rebooting (wait for NodeRebooted or its BootTime)", ErrNodeInUse, name)
	}
	if err := s.checkUnreserved(i); err != nil {
		return err
	}
	if len(s.nodeByName) == 1 {
		return fmt.Errorf("%w: node %q is the cluster's last node", ErrInvalidConfig, name)
	}
	if err := s.checkPartitionsKeepNodes(i, nil); err != nil {
		return err
	}
	in := s.memberOf(i)
	if err := s.tombstone(i, name, now); err != nil {
		return err
	}
	s.recountGPUJobs(in)
	s.last = now
	return nil
}

// tombstone turns node i into the tombstone of a node named name, removed
// at since (see removeNode, and Restore, which rebuilds tombstones from a
// placeholder node). It fails, changing nothing, only when the priority
// engine refuses the cluster without the node.
func (s *Scheduler) tombstone(i int, name string, since time.Time) error {
	n := &s.nodes[i]
	oldIn := s.memberOf(i)
	pc, err := s.prioAfter(n.capacity, oldIn, nil, nil, len(s.nodeByName)-1)
	if err != nil {
		return fmt.Errorf("node %q: %w", name, err)
	}
	// Nothing fails from here on.
	pc.commit(s)
	delete(s.nodeByName, n.cfg.Name)
	if s.removed.Len() == 0 {
		s.removed = topology.NewNodeSet(len(s.nodes))
	}
	s.removed.Add(i)
	s.usable.Remove(i)
	for k := range s.parts {
		p := &s.parts[k]
		if p.nodes.Has(i) {
			p.nodes.Remove(i)
			if len(p.cfg.Nodes) > 0 {
				p.cfg.Nodes = slices.DeleteFunc(slices.Clone(p.cfg.Nodes), func(x string) bool { return x == name })
			}
		}
	}
	for _, sh := range s.shapes {
		s.judgeNode(sh, i, false)
	}
	if s.power != nil {
		s.power.dormant.Remove(i)
	}
	// The tombstone: nothing to offer, its name kept for what still
	// refers to the index (a finished job's allocation, a stale plan).
	*n = node{cfg: &NodeConfig{Name: name}, capacity: make(gres.Vector, len(n.capacity)), free: make(gres.Vector, len(n.free)),
		admin: adminDown, reason: "removed", since: since, removed: true}
	if s.bf != nil && i < len(s.bf.nodes) {
		clear(s.bf.nodes[i].Capacity)
	}
	s.nodesChanged()
	return nil
}

// checkUnreserved refuses a change to node i while an advance reservation
// holds it.
func (s *Scheduler) checkUnreserved(i int) error {
	if s.pol == nil {
		return nil
	}
	for _, r := range s.pol.resv.All() {
		if r.Nodes.Has(i) {
			return fmt.Errorf("%w: node %q is in reservation %q", ErrNodeInUse, s.nodes[i].cfg.Name, r.Name)
		}
	}
	return nil
}

// updateNode applies an UpdateNodeEvent (see UpdateNode).
func (s *Scheduler) updateNode(now time.Time, e UpdateNodeEvent) error {
	i, err := s.nodeIndex(now, e.Node.Name)
	if err != nil {
		return err
	}
	nc := cloneNodeConfig(e.Node)
	if err := s.validNode(&nc); err != nil {
		return err
	}
	n := &s.nodes[i]
	name := nc.Name
	in, err := s.membership(i, e.Partitions, !e.SetPartitions)
	if err != nil {
		return fmt.Errorf("node %q: %w", name, err)
	}
	if err := s.checkPartitionsKeepNodes(i, in); err != nil {
		return err
	}
	nd, err := s.buildNode(nc)
	if err != nil {
		return err
	}
	if err := s.carryUse(n, &nd); err != nil {
		return err
	}
	oldIn := s.memberOf(i)
	pc, err := s.prioAfter(n.capacity, oldIn, nd.capacity, in, len(s.nodeByName))
	if err != nil {
		return fmt.Errorf("node %q: %w", name, err)
	}
	// Nothing fails from here on.
	pc.commit(s)
	if n.booting() {
		// The reboot changes the changeable features only: it boots into
		// the new static ones (reboot.go).
		n.boot.features = bootFeatures(nd.cfg, n.cfg.changeableOf(n.boot.features))
	}
	n.cfg, n.capacity, n.free, n.cpuUsed = nd.cfg, nd.capacity, nd.free, nd.cpuUsed
	n.devs, n.devTRES, n.devCores, n.hasAffinity = nd.devs, nd.devTRES, nd.devCores, nd.hasAffinity
	n.lay = nd.lay
	if n.autoDrained && n.admin == adminDrain && (n.devs == nil || len(n.allUnhealthy()) < len(n.cfg.Devices.Devices)) {
		// The drain the scheduler made because every device failed lifts
		// once the node has a healthy device (or none to fail), as a
		// recovering device lifts it.
		s.applyAdmin(now, i, adminUp, "")
	}
	for k := range s.parts {
		p := &s.parts[k]
		if in[k] == oldIn[k] {
			continue
		}
		if in[k] {
			p.nodes.Add(i)
			p.cfg.Nodes = append(slices.Clip(p.cfg.Nodes), name)
		} else {
			p.nodes.Remove(i)
			p.cfg.Nodes = slices.DeleteFunc(slices.Clone(p.cfg.Nodes), func(x string) bool { return x == name })
		}
	}
	for _, sh := range s.shapes {
		s.judgeNode(sh, i, in[sh.part])
	}
	if s.bf != nil && i < len(s.bf.nodes) {
		c := n.capacity.Clone()
		c[gres.Node] = 0
		s.bf.nodes[i].Capacity = c
	}
	s.nodesChanged()
	for k := range in {
		in[k] = in[k] || oldIn[k]
	}
	s.recountGPUJobs(in)
	s.last = now
	return nil
}

// carryUse moves what the jobs on node n hold onto nd, its new state: the
// CPU ids, the devices in use (which must remain, with the same name and
// type) and the TRES they hold; the health of the devices that remain is
// kept. It refuses (ErrNodeInUse) when nd cannot hold them, and changes
// only nd.
func (s *Scheduler) carryUse(n *node, nd *node) error {
	name := nd.cfg.Name
	// CPU ids.
	for w, bits := range n.cpuUsed {
		if bits == 0 {
			continue
		}
		if w >= len(nd.cpuUsed) || (w == len(nd.cpuUsed)-1 && nd.cfg.CPUs%64 != 0 && bits>>(uint(nd.cfg.CPUs)%64) != 0) {
			return fmt.Errorf("%w: node %q: running jobs hold CPU ids beyond the new %d CPUs", ErrNodeInUse, name, nd.cfg.CPUs)
		}
		nd.cpuUsed[w] = bits
	}
	// What the jobs hold: capacity − free − the unhealthy devices no job
	// holds (outside free, see setDeviceHealth).
	held, err := n.capacity.Sub(n.free)
	if err != nil {
		return fmt.Errorf("scheduler: node %q: free exceeds capacity: %w", name, err)
	}
	held[gres.Node] = 0
	var sickFree []int
	if n.devs != nil {
		for _, d := range n.cfg.Devices.Devices {
			if !n.devs.IsHealthy(d.Index) && !n.devs.InUse(d.Index) {
				sickFree = append(sickFree, d.Index)
			}
		}
		if err := held.SubInPlace(n.deviceVector(held, sickFree)); err != nil {
			return fmt.Errorf("scheduler: node %q: unhealthy devices not counted: %w", name, err)
		}
	}
	// Devices: those in use must remain as they are; health carries over.
	var inUse, sick []int
	if n.devs != nil {
		for _, d := range n.cfg.Devices.Devices {
			k := slices.IndexFunc(nd.cfg.Devices.Devices, func(x gres.Device) bool { return x.Index == d.Index })
			same := k >= 0 && nd.cfg.Devices.Devices[k].Name == d.Name && nd.cfg.Devices.Devices[k].Type == d.Type
			if n.devs.InUse(d.Index) {
				if !same {
					return fmt.Errorf("%w: node %q: device %d (%s) is in use and must stay as it is", ErrNodeInUse, name, d.Index, deviceTRES(d.Name, d.Type))
				}
				if !n.devs.IsShared(d.Index) { // shares are carried by carryShares
					inUse = append(inUse, d.Index)
				}
			}
			if k >= 0 && !n.devs.IsHealthy(d.Index) {
				sick = append(sick, d.Index)
			}
		}
	}
	if nd.devs != nil {
		if err := nd.devs.Allocate(inUse); err != nil {
			return fmt.Errorf("%w: node %q: devices in use: %w", ErrNodeInUse, name, err)
		}
		for _, d := range sick {
			if err := nd.devs.SetHealthy(d, false); err != nil {
				return fmt.Errorf("scheduler: node %q: device %d health: %w", name, d, err)
			}
		}
	}
	if err := s.carryShares(n, nd); err != nil {
		return err
	}
	// Free: the new capacity less what the jobs hold and the unhealthy
	// devices no job holds.
	free := nd.capacity.Clone()
	if err := free.SubInPlace(held); err != nil {
		return fmt.Errorf("%w: node %q: running jobs hold %s, more than the new configuration offers (%s)",
			ErrNodeInUse, name, s.reg.FormatTRES(held), s.reg.FormatTRES(nd.capacity))
	}
	var idle []int
	for _, d := range sick {
		if !slices.Contains(inUse, d) {
			idle = append(idle, d)
		}
	}
	if nd.devs != nil && len(idle) > 0 {
		if err := free.SubInPlace(nd.deviceVector(free, idle)); err != nil {
			return fmt.Errorf("scheduler: node %q: unhealthy devices: %w", name, err)
		}
	}
	nd.free = free
	return nil
}
