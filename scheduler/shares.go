package scheduler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/gres"
)

// Shared GPUs (Slurm's gres/shard and gres/mps). A node's inventory may
// share devices (gres.Inventory.Shares): a request for shard:2 or mps:50
// then gets shares on a concrete device (NodeAlloc.Shares), all from one
// device per node as Slurm does by default, and a device with shares in
// use is not given whole as gres/gpu (nor a whole-allocated one shared).
// The shares count as TRES gres/shard and gres/mps like any GRES: in the
// node's capacity, the job's allocation and accounting; the backfill plan
// counts a sharing node's devices as the cycle can give them (whole-free
// GPUs, the most free shares of one GPU, see backfill_shares.go). A node that shares no device keeps the count-only meaning
// of NodeConfig.GRES "shard"/"mps" (counted, no device indices).

// shareNames are the sharing GRES, in a fixed order.
var shareNames = [...]string{gres.ShardName, gres.MPSName}

// validateShares checks that a node does not both count a sharing GRES
// (NodeConfig.GRES) and share devices under that name.
func (n *NodeConfig) validateShares() error {
	for _, g := range n.GRES {
		if !gres.IsSharing(g.Name) {
			continue
		}
		for _, sh := range n.Devices.Shares {
			if (strings.EqualFold(g.Name, gres.MPSName) && sh.MPS > 0) || (strings.EqualFold(g.Name, gres.ShardName) && sh.Shards > 0) {
				return fmt.Errorf("%w: node %q: GRES %q is both counted (GRES) and on devices (Devices.Shares)", ErrInvalidConfig, n.Name, g.Name)
			}
		}
	}
	return nil
}

// registerShares registers gres/shard and gres/mps for a node whose
// devices offer them.
func registerShares(reg *gres.Registry, nc *NodeConfig) error {
	for _, name := range shareNames {
		if shareTotal(nc, name) == 0 {
			continue
		}
		if _, err := reg.Register(deviceTRES(name, "")); err != nil {
			return fmt.Errorf("%w: node %q: %s: %w", ErrInvalidConfig, nc.Name, name, err)
		}
	}
	return nil
}

// shareTotal is how many shares of name the node's devices offer.
func shareTotal(nc *NodeConfig, name string) int64 {
	var t int64
	for _, sh := range nc.Devices.Shares {
		if name == gres.MPSName {
			t += int64(sh.MPS)
		} else {
			t += int64(sh.Shards)
		}
	}
	return t
}

// addShareCapacity adds the node's device shares to its capacity v.
func (s *Scheduler) addShareCapacity(v gres.Vector, nc *NodeConfig) {
	for _, name := range shareNames {
		if t := shareTotal(nc, name); t > 0 {
			v[s.reg.MustLookup(deviceTRES(name, ""))] += t
		}
	}
}

// planShares chooses the shares of request r on node n for plan p: from
// devs (the node's devices, or the dry-run clone of earlier requests of
// the job), all on one device as Slurm does. With more requests to come
// (more), the choice is taken on a clone so that they see it. It returns
// the devices state to go on with and whether the node can host r.
func (s *Scheduler) planShares(n *node, devs *gres.NodeDevices, r gres.Request, more bool, p *nodePlan) (*gres.NodeDevices, bool) {
	gs, err := devs.ChooseShares(gres.ShareRequest{Name: r.Name, Count: int(r.Count)})
	if err != nil {
		return devs, false
	}
	if more {
		if devs == n.devs {
			devs = devs.Clone()
		}
		if devs.AllocateShares(gs) != nil {
			return devs, false
		}
	}
	p.shares = append(p.shares, gs...)
	p.tres[s.reg.MustLookup(deviceTRES(strings.ToLower(r.Name), ""))] += r.Count
	return devs, true
}

// carryShares moves the shares the jobs on node n hold onto nd, its new
// state (see carryUse); ErrNodeInUse when nd cannot hold them.
func (s *Scheduler) carryShares(n, nd *node) error {
	for _, id := range n.jobs {
		j := s.jobs[id]
		if j == nil {
			continue
		}
		for _, na := range j.Alloc.Nodes {
			if len(na.Shares) == 0 || na.Name != n.cfg.Name {
				continue
			}
			if nd.devs == nil {
				return fmt.Errorf("%w: node %q: job %d holds shares %v and the new configuration has no devices", ErrNodeInUse, nd.cfg.Name, id, na.Shares)
			}
			if err := nd.devs.AllocateShares(na.Shares); err != nil {
				return fmt.Errorf("%w: node %q: job %d's shares: %w", ErrNodeInUse, nd.cfg.Name, id, err)
			}
		}
	}
	return nil
}

// sharesFree reports whether the node can take the shares gs now.
func (n *node) sharesFree(gs []gres.ShareGrant) bool {
	return n.devs != nil && n.devs.Clone().AllocateShares(gs) == nil
}

// releaseShares gives back a job's shares on the node. They were
// allocated by this scheduler, so failing means corrupt state.
func (n *node) releaseShares(id JobID, gs []gres.ShareGrant) {
	if len(gs) == 0 || n.devs == nil {
		return
	}
	if err := n.devs.ReleaseShares(gs); err != nil {
		panic(fmt.Sprintf("scheduler: releasing shares %v of job %d on %s: %v", gs, id, n.cfg.Name, err))
	}
}

// hasShares reports whether some node of the allocation holds shares.
func (a *Allocation) hasShares() bool {
	for k := range a.Nodes {
		if len(a.Nodes[k].Shares) > 0 {
			return true
		}
	}
	return false
}

// allocShares writes the shares of every node of a (snapshot minor 2).
func (e *senc) allocShares(a *Allocation) {
	for k := range a.Nodes {
		gs := a.Nodes[k].Shares
		e.uvarint(uint64(len(gs)))
		for _, g := range gs {
			e.int(g.Device)
			e.sym(g.Name)
			e.int(g.Count)
		}
	}
}

// allocShares reads what senc.allocShares wrote into a's nodes.
func (d *sdec) allocShares(a *Allocation) {
	for k := range a.Nodes {
		n := d.count()
		if n == 0 || d.err != nil {
			continue
		}
		gs := make([]gres.ShareGrant, n)
		for i := range gs {
			gs[i] = gres.ShareGrant{Device: d.int(), Name: d.sym(), Count: d.int()}
		}
		a.Nodes[k].Shares = gs
	}
}

// freeOf is how much of TRES d node n can give one job now: its free
// count, except on a node that shares devices: there a device with
// shares in use is not free whole (gres/gpu counts only devices neither
// allocated nor shared), and a job's shards or MPS shares come from one
// device, so they count the most any one device has free. This is what
// Explain's deficits count.
func (s *Scheduler) freeOf(n *node, d gres.ID) int64 {
	if n.devs == nil || n.cfg.Devices.Shares == nil {
		return n.free[d]
	}
	name, ok := strings.CutPrefix(s.reg.Name(d), "gres/")
	if !ok {
		return n.free[d]
	}
	if gres.IsSharing(name) && n.devs.HasShares(name) {
		return int64(n.devs.MaxFreeShares(name))
	}
	name, typ, _ := strings.Cut(name, ":")
	if n.hasDevices(name) {
		return min(n.free[d], int64(n.devs.Free(name, typ)))
	}
	return n.free[d]
}

// DeviceIndices returns every device index the job may use on the node:
// its whole devices and the devices it holds shares on, increasing (the
// indices whose files an enforcer allows, gres.Discovery.FilesFor).
func (na NodeAlloc) DeviceIndices() []int {
	if len(na.Shares) == 0 {
		return slices.Clone(na.Devices)
	}
	out := append(slices.Clone(na.Devices), gres.ShareDevices(na.Shares)...)
	slices.Sort(out)
	return slices.Compact(out)
}

// sharedChoice reports whether only the device choice can tell that node
// n holds job j: the node shares devices and the job asks for devices or
// shares. Its TRES counts do not say which devices are shared (gres/gpu
// counts a GPU with shares in use, gres/shard the shards of a GPU
// allocated whole) nor that a job's shares must come from one device.
func sharedChoice(j *job, n *node) bool {
	return n.cfg.Devices.Shares != nil && len(j.devReq) > 0
}
