package scheduler

import (
	"cmp"
	"slices"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
)

// Shared GPUs in the backfill plan. The profile plans per-node vectors of
// counts, but on a node that shares devices (gres/shard, gres/mps) the
// counts of the node's TRES do not say what the cycle can give: a GPU with
// shares in use is not free whole though gres/gpu counts it, a GPU
// allocated whole gives no shares though gres/shard counts them, and a
// job's shards (or MPS shares) on a node come from one GPU, so two free
// shards on two GPUs do not hold shard:2. On such a node the profile
// therefore counts, in the node's device TRES (gres/gpu and its typed
// forms, every device of the node) and in gres/shard and gres/mps:
//
//   - gres/gpu (and gres/gpu:<type>): the devices free whole — healthy,
//     neither allocated whole nor with shares in use;
//   - gres/shard and gres/mps: the most free shares any one healthy device
//     not allocated whole has (a device free whole has all of them), the
//     largest request the cycle can place there; the capacity is the most
//     one device offers.
//
// Both are exact over time for the running jobs: the scheduler replays
// the running jobs' ends on the node in deadline order, device by device,
// and gives each job, as what it holds until its end, how much its end
// raises these counts (the last share job of a GPU to end holds its
// gres/gpu, a share job ending while the device keeps a fuller job holds
// no gres/shard). So the plan sees a whole GPU come back when the last
// share job on it ends, and shard:k become possible when one device has k
// free, as the cycle does. Because the uses depend on one another, a start
// or end of a job holding devices on such a node (or a change of its end)
// makes the kept profile re-add every job holding devices there (see
// noteShared).
//
// Between the bookings of one plan the counts stay counts, which makes
// the plan conservative rather than exact there: a booking for shard:k
// takes k from the largest one-device count (so share bookings that
// overlap in time all fit the device that had it, however many other
// devices are free), a whole-GPU booking takes g of gres/gpu, and the
// device claim (backfill_claims.go) keeps the two kinds from both taking
// a node's last whole-free GPU. The plan thus does not start what the
// cycle would refuse (within the limits backfill_claims.go names); but a
// booked share job, once running, may leave more room in its exact view
// than its booking did, and a job ahead may then move earlier in the next
// plan (explaintest's TestVerifiedAnswersShared counts how often a later
// promise breaks under conservative backfill).

// nodeShareUse is the profile's view of a node that shares devices, for
// share generation gen and health generation health: the device TRES
// counted (dims), their free counts now (free, parallel to dims), what
// each running job holding devices on the node holds of them until its
// end (use), and the capacity of gres/shard and gres/mps (the most one
// device offers).
type nodeShareUse struct {
	gen, health uint64
	dims        []gres.ID
	free        []int64
	use         map[JobID][]int64
	capShares   [len(shareNames)]int64
	// capClaim is the node's claim capacity (backfill_claims.go), when
	// the profile has a claim dimension.
	capClaim int64
}

// sharesDevices reports whether node n shares devices: the backfill
// profile then counts its devices as nodeShareUse says.
func (n *node) sharesDevices() bool {
	return n.devs != nil && len(n.cfg.Devices.Shares) > 0
}

// holdsDevices reports whether na holds whole devices or shares.
func (na *NodeAlloc) holdsDevices() bool { return len(na.Devices) > 0 || len(na.Shares) > 0 }

// nodeShares returns the profile's view of node i, which shares devices,
// cached while the share and health generations stay.
func (s *Scheduler) nodeShares(i int) *nodeShareUse {
	if u := s.shareUse[i]; u != nil && u.gen == s.shareGen && u.health == s.healthGen {
		return u
	}
	if s.shareUse == nil {
		s.shareUse = map[int]*nodeShareUse{}
	}
	u := s.computeNodeShares(i)
	s.shareUse[i] = u
	return u
}

// computeNodeShares replays the ends of the running jobs holding devices
// on node i (see the comment above).
func (s *Scheduler) computeNodeShares(i int) *nodeShareUse {
	n := &s.nodes[i]
	u := &nodeShareUse{gen: s.shareGen, health: s.healthGen, use: map[JobID][]int64{}}
	pos := map[gres.ID]int{}
	add := func(id gres.ID) {
		if _, ok := pos[id]; !ok && id >= 0 {
			pos[id] = len(u.dims)
			u.dims = append(u.dims, id)
		}
	}
	for _, d := range n.cfg.Devices.Devices {
		ids := n.devTRES[d.Index]
		add(ids[0])
		add(ids[1])
	}
	var shareDim [len(shareNames)]int
	for k, name := range shareNames {
		shareDim[k] = -1
		if !n.devs.HasShares(name) {
			continue
		}
		id := s.reg.MustLookup(deviceTRES(name, ""))
		add(id)
		shareDim[k] = pos[id]
		for _, sh := range n.cfg.Devices.Shares {
			c := int64(sh.Shards)
			if name == gres.MPSName {
				c = int64(sh.MPS)
			}
			if n.devs.IsHealthy(sh.Device) {
				u.capShares[k] = max(u.capShares[k], c)
			}
		}
	}
	// The claim (backfill_claims.go): whole-free devices, and the most
	// free shares of one shared device where the node offers one sharing
	// GRES.
	claimDim, only := -1, -1
	if s.claim1 > 0 {
		add(gres.ID(s.claim1 - 1))
		claimDim = pos[gres.ID(s.claim1-1)]
		switch {
		case shareDim[0] >= 0 && shareDim[1] < 0:
			only = 0
		case shareDim[1] >= 0 && shareDim[0] < 0:
			only = 1
		}
		healthy := int64(0)
		for _, d := range n.cfg.Devices.Devices {
			if n.devs.IsHealthy(d.Index) {
				healthy++
			}
		}
		u.capClaim = healthy * claimUnit
		if only >= 0 {
			u.capClaim += u.capShares[only]
		}
	}
	offered := func(dev int, k int) int64 {
		for _, sh := range n.cfg.Devices.Shares {
			if sh.Device == dev {
				if shareNames[k] == gres.MPSName {
					return int64(sh.MPS)
				}
				return int64(sh.Shards)
			}
		}
		return 0
	}
	// The claim's share term follows the most free shares of a device in
	// use while no device is free whole, is frozen from the first state with
	// one, and is 0 from the first end that makes a device with shares in
	// use now free whole (see backfill_claims.go: a booking must not move
	// between a part-used device and a whole one over its span). first:
	// value's first call (the state now); frozen: the term is frozen at part0.
	first, frozen := true, false
	var part0 int64
	var shared0 []int // the devices with shares in use now
	value := func(devs *gres.NodeDevices) []int64 {
		v := make([]int64, len(u.dims))
		var whole, part int64
		for _, d := range n.cfg.Devices.Devices {
			if !devs.IsHealthy(d.Index) {
				continue
			}
			if !devs.InUse(d.Index) {
				whole++
				ids := n.devTRES[d.Index]
				v[pos[ids[0]]]++
				if ids[1] >= 0 {
					v[pos[ids[1]]]++
				}
			} else if only >= 0 && devs.IsShared(d.Index) {
				part = max(part, offered(d.Index, only)-int64(devs.SharesInUse(d.Index, shareNames[only])))
				if first {
					shared0 = append(shared0, d.Index)
				}
			}
		}
		first = false
		for _, d := range shared0 {
			if !devs.InUse(d) {
				frozen, part0 = true, 0 // a device shared now is free whole again
				break
			}
		}
		switch {
		case frozen:
			part = part0
		case whole > 0:
			frozen, part0 = true, part
		}
		for k, name := range shareNames {
			if shareDim[k] >= 0 {
				v[shareDim[k]] = int64(devs.MaxFreeShares(name))
			}
		}
		if claimDim >= 0 {
			v[claimDim] = whole*claimUnit + part
		}
		return v
	}
	type held struct {
		j  *job
		na *NodeAlloc
	}
	var hs []held
	for _, id := range n.jobs {
		j := s.jobs[id]
		if j == nil || j.State != JobRunning {
			continue // a suspended job's devices do not come back in the plan
		}
		for k := range j.Alloc.Nodes {
			if na := &j.Alloc.Nodes[k]; na.Node == i && na.holdsDevices() {
				hs = append(hs, held{j, na})
			}
		}
	}
	slices.SortFunc(hs, func(a, b held) int {
		return cmp.Or(a.j.deadline.Compare(b.j.deadline), cmp.Compare(a.j.ID, b.j.ID))
	})
	devs := n.devs.Clone()
	prev := value(devs)
	u.free = prev
	for _, h := range hs {
		// Releasing what this scheduler allocated cannot fail; if it
		// did, the devices would simply not come back in the plan.
		if len(h.na.Devices) > 0 && devs.Release(h.na.Devices) != nil {
			continue
		}
		if len(h.na.Shares) > 0 && devs.ReleaseShares(h.na.Shares) != nil {
			continue
		}
		cur := value(devs)
		d := make([]int64, len(cur))
		for k := range cur {
			d[k] = max(cur[k]-prev[k], 0)
		}
		u.use[h.j.ID] = d
		prev = cur
	}
	return u
}

// shareProfileNode writes node i's device counts, as the profile plans a
// node that shares devices, into its profile capacity c and free f.
func (s *Scheduler) shareProfileNode(i int, c, f gres.Vector) {
	u := s.nodeShares(i)
	for k, name := range shareNames {
		if u.capShares[k] > 0 || s.nodes[i].devs.HasShares(name) {
			c[s.reg.MustLookup(deviceTRES(name, ""))] = u.capShares[k]
		}
	}
	if s.claim1 > 0 {
		c[s.claim1-1] = u.capClaim
	}
	if f == nil {
		return
	}
	for k, id := range u.dims {
		f[id] = u.free[k]
	}
}

// shareProfileUse rewrites the device counts of job j's use v of node i,
// which shares devices, as the profile plans them.
func (s *Scheduler) shareProfileUse(j *job, i int, v gres.Vector) {
	u := s.nodeShares(i) // v holds the claim dimension (profileAlloc)
	d := u.use[j.ID]
	for k, id := range u.dims {
		if d == nil {
			v[id] = 0
		} else {
			v[id] = d[k]
		}
	}
}

// noteShared records, when job j holds devices on nodes that share them,
// that the profile's view of those nodes changed (its start, end, or a
// change of its end): the cached views are stale, and every other running
// job holding devices there is released from the kept profile and added
// again with its new use, after j's own change.
func (s *Scheduler) noteShared(j *job) {
	b := s.bf
	touched := false
	defer func() {
		if touched {
			s.shareGen++
		}
	}()
	for k := range j.Alloc.Nodes {
		na := &j.Alloc.Nodes[k]
		if na.Node < 0 || na.Node >= len(s.nodes) || !na.holdsDevices() || !s.nodes[na.Node].sharesDevices() {
			continue
		}
		touched = true
		if b == nil {
			continue
		}
		for _, id := range s.nodes[na.Node].jobs {
			o := s.jobs[id]
			if o == nil || o == j || o.State != JobRunning {
				continue
			}
			for x := range o.Alloc.Nodes {
				if ona := &o.Alloc.Nodes[x]; ona.Node == na.Node && ona.holdsDevices() {
					b.ended = append(b.ended, o.ID)
					b.started = append(b.started, o)
					break
				}
			}
		}
	}
}

// sharedUse reports whether job j's profile use depends on other jobs:
// it holds devices on a node that shares them.
func (s *Scheduler) sharedUse(j *job) bool {
	for k := range j.Alloc.Nodes {
		na := &j.Alloc.Nodes[k]
		if na.holdsDevices() && s.nodes[na.Node].sharesDevices() {
			return true
		}
	}
	return false
}

// profileAlloc is the backfill Alloc of job j's use u of node i: u, or,
// on a node that shares devices, u with its device counts rewritten.
func (s *Scheduler) profileAlloc(j *job, i int, u gres.Vector) backfill.Alloc {
	if s.nodes[i].sharesDevices() {
		u = s.withClaim(u)
		s.shareProfileUse(j, i, u)
	}
	return backfill.Alloc{Node: i, Use: u}
}
