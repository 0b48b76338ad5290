package scheduler

import (
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/sluicehq/sluice/gres"
)

// NodeState is a node's state as sinfo shows it: derived from its
// administrative state (up, drain, down, fail) and from what runs on it.
type NodeState uint8

// Node states.
const (
	// NodeIdle: up, nothing allocated.
	NodeIdle NodeState = iota
	// NodeMixed: up, some resources allocated.
	NodeMixed
	// NodeAllocated: up, every CPU allocated.
	NodeAllocated
	// NodeDraining: drained by an operator, jobs still running; takes no new work.
	NodeDraining
	// NodeDrained: drained and empty.
	NodeDrained
	// NodeDown: unavailable; jobs on it were ended or requeued.
	NodeDown
	// NodeFailing: marked failing by an operator, jobs still running.
	NodeFailing
	// NodeFail: marked failing and empty.
	NodeFail
)

var nodeStateNames = [...]string{
	NodeIdle:      "idle",
	NodeMixed:     "mixed",
	NodeAllocated: "allocated",
	NodeDraining:  "draining",
	NodeDrained:   "drained",
	NodeDown:      "down",
	NodeFailing:   "failing",
	NodeFail:      "fail",
}

// String returns sinfo's long spelling (e.g. "mixed", "drained").
func (s NodeState) String() string { return enumName(s, nodeStateNames[:], "NodeState") }

// Usable reports whether a node in state s may receive new work.
func (s NodeState) Usable() bool { return s <= NodeAllocated }

// adminState is the operator-controlled part of a node's state.
type adminState uint8

const (
	adminUp adminState = iota
	adminDrain
	adminDown
	adminFail
)

// node is the scheduler's runtime view of one node.
type node struct {
	cfg      *NodeConfig
	capacity gres.Vector
	free     gres.Vector
	cpuUsed  []uint64             // bit i set: CPU i allocated
	devs     *gres.NodeDevices    // nil on a node without devices
	devTRES  map[int][2]gres.ID   // device index → its untyped and typed TRES (-1: untyped device)
	devCores map[int]gres.CoreSet // device index → CPUs close to it
	// hasAffinity is set when some device declares the CPUs close to it.
	hasAffinity bool
	admin       adminState
	// autoDrained marks a drain the scheduler made itself because every
	// device failed; it lifts when one recovers.
	autoDrained bool
	reason      string
	since       time.Time
	jobs        []JobID // running jobs, in start order
	// tel holds the devices' last telemetry counters (telemetry.go).
	tel nodeTelemetry
	// touched is the journal epoch the node was last saved in, at
	// saved among the journal's node saves (see Scheduler.saveNode).
	touched uint64
	saved   int
	// removed marks the tombstone of a removed node (see nodeadmin.go).
	removed bool
	// pw is the node's power-saving state (see power.go), boot its reboot
	// into changeable features (reboot.go).
	pw   nodePower
	boot nodeBoot
	// lay is the node's CPU layout (sockets, cores, threads; layout.go).
	lay cpuLayout
	// exclUsers counts the running --exclusive=user jobs on the node, all
	// of user exclUser; users counts the node's jobs by user (see
	// exclusive.go; rebuilt on restore).
	exclUsers int
	exclUser  string
	users     []userJobs
	// sharing counts the running jobs on the node that may share their
	// CPUs (Allocation.OverSubscribe > 1; see oversub.go; rebuilt on
	// restore with the counts above).
	sharing int
	// sharerGen changes (to a new Scheduler.sharerSeq) whenever a sharer on
	// the node starts, ends, is suspended or resumed or has its end moved,
	// and when a rollback restores the node: a sharer's cached profile use
	// (job.bfUseSharerGens) is valid only while its nodes keep their
	// generation.
	sharerGen uint64
}

// userJobs is how many of a node's jobs one user runs.
type userJobs struct {
	user string
	jobs int
}

func (n *node) state() NodeState {
	busy := len(n.jobs) > 0
	switch n.admin {
	case adminDrain:
		if busy {
			return NodeDraining
		}
		return NodeDrained
	case adminDown:
		return NodeDown
	case adminFail:
		if busy {
			return NodeFailing
		}
		return NodeFail
	}
	switch {
	case !busy:
		return NodeIdle
	case n.free[gres.CPU] == 0:
		return NodeAllocated
	}
	return NodeMixed
}

// freeCPUs returns up to k free CPU ids, lowest first, taking those in
// prefer first; with only set, it takes none outside prefer. It changes
// nothing.
func (n *node) freeCPUs(k int, prefer gres.CoreSet, only bool) []int {
	return n.freeCPUsInto(make([]int, 0, k), k, prefer, only)
}

// freeCPUsInto is freeCPUs filling out (emptied first; given room for k,
// it allocates nothing).
func (n *node) freeCPUsInto(out []int, k int, prefer gres.CoreSet, only bool) []int {
	out = out[:0]
	if prefer.IsEmpty() {
		return n.lowestFreeCPUs(out, k)
	}
	for pass := 0; pass < 2 && len(out) < k; pass++ {
		if pass == 1 && (only || prefer.IsEmpty()) {
			break
		}
		for c := 0; c < n.cfg.CPUs && len(out) < k; c++ {
			if n.cpuUsed[c>>6]&(1<<uint(c&63)) != 0 {
				continue
			}
			inPrefer := prefer.Has(c)
			if (pass == 0 && !prefer.IsEmpty() && !inPrefer) || (pass == 1 && inPrefer) {
				continue
			}
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// lowestFreeCPUs appends to out the lowest free CPU ids, ascending, until
// out holds k: freeCPUsInto without a preference, a word of the used-CPU
// mask at a time (a whole node's CPUs are listed for every exclusive
// node an allocation takes).
func (n *node) lowestFreeCPUs(out []int, k int) []int {
	cpus := n.cfg.CPUs
	for w := 0; w*64 < cpus && len(out) < k; w++ {
		free := ^n.cpuUsed[w]
		base := w * 64
		if rest := cpus - base; rest < 64 {
			free &= 1<<uint(rest) - 1
		}
		if free == ^uint64(0) && k-len(out) >= 64 {
			l := len(out)
			out = slices.Grow(out, 64)[:l+64]
			for b, run := 0, out[l:l+64]; b < 64; b++ {
				run[b] = base + b
			}
			continue
		}
		for ; free != 0 && len(out) < k; free &= free - 1 {
			out = append(out, base+bits.TrailingZeros64(free))
		}
	}
	return out
}

// markCPUs marks the given CPU ids used.
func (n *node) markCPUs(ids []int) {
	for _, c := range ids {
		n.cpuUsed[c>>6] |= 1 << uint(c&63)
	}
}

// hasDevices reports whether the node has tracked devices named name.
func (n *node) hasDevices(name string) bool {
	total, _, _ := n.devs.Counts(name, "")
	return total > 0
}

func (n *node) releaseCPUs(ids []int) {
	for _, c := range ids {
		n.cpuUsed[c>>6] &^= 1 << uint(c&63)
	}
}

func (n *node) removeJob(id JobID) {
	for i, j := range n.jobs {
		if j == id {
			n.jobs = append(n.jobs[:i], n.jobs[i+1:]...)
			return
		}
	}
}

// NodeInfo is a read-only snapshot of a node, as sinfo/scontrol show it.
type NodeInfo struct {
	Index int
	Name  string
	State NodeState
	// Reason is the operator's reason for drain/down/fail, and Since when
	// it was set.
	Reason string
	Since  time.Time
	// Capacity and Free are the node's TRES (cpu, mem, node, gres…).
	Capacity, Free gres.Vector
	// Jobs are the running jobs, in start order.
	Jobs []JobID
	// FreeDevices lists the free, healthy device indices.
	FreeDevices []int
	// UnhealthyDevices lists the device indices reported unhealthy; they
	// are never allocated.
	UnhealthyDevices []int

	// tres names Capacity's and Free's TRES in MarshalJSON (nil in a
	// NodeInfo built by hand).
	tres []string
	// Power is the node's power state with power saving (Config.Power):
	// sinfo shows it as the state's suffix (PowerState.Suffix, "idle~").
	// A node not PowerOn takes no work.
	Power PowerState
	// ActiveFeatures are the node's active features (NodeConfig.Features)
	// and AvailableFeatures those it can have (with its
	// ChangeableFeatures), as scontrol show node names them.
	ActiveFeatures    []string `json:",omitempty"`
	AvailableFeatures []string `json:",omitempty"`
	// Reboot is the node's reboot into changeable features in progress
	// (nil: none); the node takes no work meanwhile (see reboot.go).
	Reboot *NodeReboot `json:",omitempty"`
}

// freeDevices returns the free, healthy device indices of every kind.
func (n *node) freeDevices() []int {
	if n.devs == nil {
		return nil
	}
	var out []int
	for k, d := range n.cfg.Devices.Devices {
		if !n.devs.InUse(d.Index) && n.devs.IsHealthy(d.Index) {
			if out == nil {
				out = make([]int, 0, len(n.cfg.Devices.Devices)-k) // one allocation
			}
			out = append(out, d.Index)
		}
	}
	return out
}

// subDeviceTRES takes the TRES of device d out of v.
func (n *node) subDeviceTRES(v gres.Vector, d int) {
	ids := n.devTRES[d]
	v[ids[0]]--
	if ids[1] >= 0 {
		v[ids[1]]--
	}
}

// addDeviceTRES adds the TRES of the given devices to v.
func (n *node) addDeviceTRES(v gres.Vector, idx []int) {
	for _, d := range idx {
		ids := n.devTRES[d]
		v[ids[0]]++
		if ids[1] >= 0 {
			v[ids[1]]++
		}
	}
}

// charge takes an allocation's TRES out of the node's free resources. The
// node TRES is not consumed: it counts nodes for accounting, and a node
// shared by many jobs is still one node (Exclusive jobs take everything
// else instead).
func (n *node) charge(alloc gres.Vector) error {
	k := alloc[gres.Node]
	alloc[gres.Node] = 0
	err := n.free.SubInPlace(alloc)
	alloc[gres.Node] = k
	return err
}

// refund gives an allocation's TRES back to the node's free resources.
func (n *node) refund(alloc gres.Vector) error {
	k := alloc[gres.Node]
	alloc[gres.Node] = 0
	err := n.free.AddInPlace(alloc)
	alloc[gres.Node] = k
	return err
}

// deviceVector returns the TRES of the given devices.
func (n *node) deviceVector(v gres.Vector, idx []int) gres.Vector {
	out := make(gres.Vector, len(v))
	n.addDeviceTRES(out, idx)
	return out
}

// unhealthy returns the unhealthy device indices among idx.
func (n *node) unhealthy(idx []int) []int {
	var out []int
	for _, d := range idx {
		if !n.devs.IsHealthy(d) {
			out = append(out, d)
		}
	}
	return out
}

// allUnhealthy returns every unhealthy device index of the node.
func (n *node) allUnhealthy() []int {
	if n.devs == nil {
		return nil
	}
	var out []int
	for _, d := range n.cfg.Devices.Devices {
		if !n.devs.IsHealthy(d.Index) {
			out = append(out, d.Index)
		}
	}
	return out
}

// freeCoreSet returns the node's free CPUs as a CoreSet.
func (n *node) freeCoreSet() gres.CoreSet {
	ids := n.freeCPUs(n.cfg.CPUs, gres.CoreSet{}, false)
	cs, err := gres.CoreSetOf(ids...)
	if err != nil { // CPU ids are bounded by Config.Validate
		panic(fmt.Sprintf("scheduler: node %s: %v", n.cfg.Name, err))
	}
	return cs
}
