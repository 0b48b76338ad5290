package backfill

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/btree"
	"github.com/sluicehq/sluice/gres"
)

// JobID identifies one entry of a Profile: a running job, a planned job's
// reservation or a block. The planner uses each pending job's ID for its
// reservation, so IDs must be unique across running and pending jobs.
type JobID uint64

// DefaultResolution is Slurm's bf_resolution default (60 s): the grid to
// which a profile rounds up the end of every future reservation (see
// ProfileOptions.Resolution).
const DefaultResolution = 60 * time.Second

// MaxDuration is the longest interval a profile accepts (100 years); use a
// zero end time for "never ends".
const MaxDuration = 100 * 365 * 24 * time.Hour

const (
	posInf    = math.MaxInt64 / 4 // "never": beyond any representable time
	btreeDeg  = 32
	blockBits = 64 // nodes per summary block: one NodeSet word
)

// NodeState is one node's resources when the profile is built.
//
// Capacity holds what jobs may use on the node (cpu, mem, gres/gpu,
// gres/gpu:<type> …, indexed by gres.ID). Give only resources that are
// shared out per node: leave node, billing and energy at zero, since a
// per-node request that asks for a resource no node has never fits.
//
// Free is what is free now. When Free is nil it is computed as Capacity
// minus the usage of the running jobs passed to NewProfile; when non-nil it
// must already exclude those jobs (what `sinfo` would call free), and it
// may be lower than Capacity minus running usage for resources that are
// unusable (a down node has an empty, non-nil Free). Nodes that must not get
// new work at all (drained, draining) should also be left out of the allowed
// node sets of requests, because their running jobs still release
// resources in the profile when they end.
type NodeState struct {
	Capacity gres.Vector
	Free     gres.Vector
}

// Alloc is one node's share of a job: the node index and the resources the
// job holds there.
type Alloc struct {
	Node int
	Use  gres.Vector
}

// Running is a job that holds resources now and releases them at End, its
// start plus its time limit. A zero End means the job never ends (no time
// limit). End is taken exactly (to the second); an End at or before the
// profile's origin (an overdue job) is treated as the first grid point
// after the origin.
type Running struct {
	ID     JobID
	End    time.Time
	Allocs []Alloc
}

// Reservation is a planned use of resources over [Start, End): one Alloc
// per node.
type Reservation struct {
	ID     JobID
	Start  time.Time
	End    time.Time
	Allocs []Alloc
}

// Step is one segment of a node's free-resource step function: Free holds
// from Start until the next Step's Start (the last Step holds forever).
type Step struct {
	Start time.Time
	Free  gres.Vector
}

// ProfileOptions configures a Profile. The zero value means Slurm's
// defaults.
type ProfileOptions struct {
	// Resolution is the time grid (bf_resolution). The end of a
	// reservation that starts after the origin is rounded up to a
	// multiple of it (its resources are held a little longer: the plan
	// only gets more cautious), which bounds the change points that
	// reservations add to any window to window/Resolution. Everything
	// else is exact to the second: running jobs' ends, starts at the
	// origin and their ends, reservation starts, begin times and blocks.
	// An overdue running job holds until the first grid point after the
	// origin. Zero means DefaultResolution; it must be between 1 s and
	// 1 h and a whole number of seconds.
	Resolution time.Duration
}

type entryKind uint8

const (
	kindRunning entryKind = iota
	kindReserved
	kindBlock
)

// entry is one job's use of the profile, kept to release it later.
// Immutable once inserted, so btree clones can share it.
type entry struct {
	id    JobID
	kind  entryKind
	start int64 // origin for running jobs
	end   int64 // posInf = never
	nodes []int32
	use   []int64 // len(nodes)*a; capacity for blocks
}

// timeline is one node's free resources as a step function: free[k*a:(k+1)*a]
// holds over [times[k], times[k+1]). times[0] is the origin the timeline was
// last trimmed to (at or before the profile's origin: Advance only trims the
// timelines that change) and is never compared; every later time is after
// the profile's origin. The timeline is canonical: adjacent segments differ.
type timeline struct {
	owner *cowToken
	times []int64
	free  []int64
}

// changePoint is a time at which at least one node's free resources change
// (or the origin). It is exact to the second; the summaries the search
// uses to skip nodes are kept per grid slot instead (see summary).
type changePoint struct {
	t     int64
	owner *cowToken
	nodes []int32 // nodes with a breakpoint at t (empty for the origin)
	// up caches, when upOK, the nodes of nodes whose free amounts rise at
	// t on some dimension (see risers), in no particular order. Only the
	// owner fills it in and keeps it right (applyTL's changes fix their
	// nodes' entries; releaseAll clears upOK over its span), and a copy
	// (mutCP) starts without it.
	up   []int32
	upOK bool
}

// cowToken marks ownership for copy-on-write; it has a non-zero size so
// that distinct tokens have distinct addresses.
type cowToken struct{ _ byte }

// Profile is the time-resource profile: for every node 0..n-1, the free
// resources as a step function of time from the origin (the caller's now)
// onwards, built from node capacities and free amounts, running jobs'
// expected ends, and the reservations and blocks added to it.
//
// Resources are partial: every node has a free vector (CPUs, memory, GPU
// counts per type …) per segment, so several jobs share a node as long as
// their vectors fit. GPUs are counted per (typed) GRES; which device
// indices a job gets is decided at start time by the scheduler.
//
// Layout: each node has its own small sorted timeline; a google/btree
// indexes the global change points (every time where any node's free
// vector changes, exact to the second), and another one the summaries,
// one per grid slot that holds a change point, used to skip infeasible
// nodes without reading their timelines: a superset of the nodes idle at
// some moment of the slot and, per block of 64 nodes, an upper bound on
// their free vectors over it. See the package documentation for the
// search.
//
// Clone is copy-on-write and cheap (O(nodes) pointer copies), so
// explanations and what-if questions can plan on a clone.
//
// A profile can be kept from one scheduling cycle to the next instead of
// being rebuilt: Advance moves its origin to the new now, AddStarted and
// Release follow the jobs that start and end, ReleaseReservations drops
// the last plan (see "Keeping a profile across cycles" in the package
// documentation).
//
// A Profile is not safe for concurrent use, but after Clone returns, the
// original and the clone may be used from different goroutines.
type Profile struct {
	origin int64 // caller's now, in whole seconds
	nowT   time.Time
	res    int64
	n      int
	a      int       // number of active dimensions
	active []gres.ID // active dimension → TRES ID
	// isAct[id] says TRES id is active (id < width).
	isAct []bool
	width int     // longest capacity vector
	caps  []int64 // n*a, immutable, shared by clones
	tls   []*timeline
	cps   *btree.BTreeG[*changePoint]
	// sums are the summaries, one per grid slot holding a change point
	// (at least), see summary.
	sums *btree.BTreeG[*summary]
	ents *btree.BTreeG[*entry]
	// idx orders the entries by (kind, end, id), for Advance and
	// ReleaseReservations. Nil until one of them first needs it; then kept
	// up to date by every change to ents.
	idx *btree.BTreeG[*entry]
	cow *cowToken

	// plainScan makes searches ignore the summaries (a plain exact scan
	// of the timelines); tests set it to check that the summaries never
	// change a decision.
	plainScan bool
	// sweep, for tests, forces the narrow sweep (narrow.go) wherever the
	// request has an allowed set (1) or turns it off (-1); 0 decides by
	// cost.
	sweep int8

	probeA, probeB *changePoint
	sumProbe       *summary
	entProbe       *entry
	sc             *scratch
	// ctr is the counter set planned with (SetCounters), nil for none.
	ctr *Counters
}

func cpLess(x, y *changePoint) bool { return x.t < y.t }
func entLess(x, y *entry) bool      { return x.id < y.id }

// idxCmp orders entries by (kind, end, id), the order of Profile.idx.
func idxCmp(x, y *entry) int {
	if c := cmp.Compare(x.kind, y.kind); c != 0 {
		return c
	}
	if c := cmp.Compare(x.end, y.end); c != 0 {
		return c
	}
	return cmp.Compare(x.id, y.id)
}

func idxLess(x, y *entry) bool { return idxCmp(x, y) < 0 }

// NewProfile builds a profile whose origin is now, over nodes (node index
// = position in the slice), with the given running jobs releasing their
// resources at their expected ends. It is the fast way to load many
// running jobs (AddRunning adds one at a time).
func NewProfile(now time.Time, nodes []NodeState, running []Running, opts ProfileOptions) (*Profile, error) {
	res := opts.Resolution
	if res == 0 {
		res = DefaultResolution
	}
	if res < time.Second || res > time.Hour || res%time.Second != 0 {
		return nil, fmt.Errorf("%w: Resolution %v: want a whole number of seconds in [1s, 1h]", ErrInvalidConfig, res)
	}
	if now.IsZero() {
		return nil, fmt.Errorf("%w: now is the zero time", ErrInvalidTime)
	}
	if u := now.Unix(); u >= maxOriginUnix || u <= -maxOriginUnix {
		return nil, fmt.Errorf("%w: now %v out of range", ErrInvalidTime, now)
	}
	p := &Profile{
		origin:   now.Unix(),
		nowT:     now,
		res:      int64(res / time.Second),
		n:        len(nodes),
		cow:      new(cowToken),
		probeA:   &changePoint{},
		probeB:   &changePoint{},
		sumProbe: &summary{},
		entProbe: &entry{},
	}
	if err := p.initDims(nodes); err != nil {
		return nil, err
	}
	a := p.a
	free0 := make([]int64, p.n*a)
	derived := make([]bool, p.n)
	for i, ns := range nodes {
		f := free0[i*a : (i+1)*a]
		if ns.Free == nil {
			copy(f, p.caps[i*a:(i+1)*a])
			derived[i] = true
			continue
		}
		ok, err := p.project(ns.Free, f)
		if err != nil {
			return nil, fmt.Errorf("%w: node %d: Free: %w", ErrInvalidNode, i, err)
		}
		if !ok || !fitsIn(p.caps[i*a:(i+1)*a], f) {
			return nil, fmt.Errorf("%w: node %d: Free %v exceeds Capacity %v", ErrInvalidNode, i, ns.Free, ns.Capacity)
		}
	}

	// Entries for running jobs and the release events they cause.
	type release struct {
		t    int64
		node int32
		ent  int // index into ents
		x    int // alloc index within the entry
	}
	ents := make([]*entry, 0, len(running))
	var rel []release
	seen := make(map[JobID]struct{}, len(running))
	for ri := range running {
		r := &running[ri]
		if _, dup := seen[r.ID]; dup {
			return nil, fmt.Errorf("%w: running job %d appears twice", ErrDuplicateID, r.ID)
		}
		seen[r.ID] = struct{}{}
		e, err := p.newEntry(r.ID, kindRunning, p.origin, p.endOf(r.End), r.Allocs)
		if err != nil {
			return nil, fmt.Errorf("running job %d: %w", r.ID, err)
		}
		for x, nd := range e.nodes {
			u := e.use[x*a : (x+1)*a]
			if derived[nd] {
				f := free0[int(nd)*a : (int(nd)+1)*a]
				for j := range u {
					f[j] -= u[j]
				}
			}
			if e.end < posInf && !isZero(u) {
				rel = append(rel, release{t: e.end, node: nd, ent: len(ents), x: x})
			}
		}
		ents = append(ents, e)
	}
	for i := range p.n {
		for _, v := range free0[i*a : (i+1)*a] {
			if v < 0 {
				return nil, fmt.Errorf("%w: node %d: running jobs use more than its capacity %v", ErrOverAllocation, i, nodes[i].Capacity)
			}
		}
	}

	// Per-node timelines.
	slices.SortFunc(rel, func(x, y release) int {
		if c := cmp.Compare(x.node, y.node); c != 0 {
			return c
		}
		return cmp.Compare(x.t, y.t)
	})
	p.tls = make([]*timeline, p.n)
	var bps []breakpoint
	ri := 0
	for i := range p.n {
		tl := &timeline{owner: p.cow, times: []int64{p.origin}, free: slices.Clone(free0[i*a : (i+1)*a])}
		capI := p.caps[i*a : (i+1)*a]
		for ; ri < len(rel) && int(rel[ri].node) == i; ri++ {
			r := rel[ri]
			last := len(tl.times) - 1
			if tl.times[last] != r.t {
				tl.times = append(tl.times, r.t)
				tl.free = append(tl.free, tl.free[last*a:(last+1)*a]...)
				last++
				bps = append(bps, breakpoint{r.t, int32(i)})
			}
			seg := tl.free[last*a : (last+1)*a]
			e := ents[r.ent]
			u := e.use[r.x*a : (r.x+1)*a]
			for j := range u {
				seg[j] += u[j]
			}
			if !fitsIn(capI, seg) {
				return nil, fmt.Errorf("%w: node %d: free %v after running job %d ends exceeds capacity %v",
					ErrOverAllocation, i, p.expand(seg), e.id, nodes[i].Capacity)
			}
		}
		p.tls[i] = tl
	}

	p.initChangePoints(bps)

	p.ents = btree.NewG(btreeDeg, entLess)
	for _, e := range ents {
		p.ents.ReplaceOrInsert(e)
	}
	return p, nil
}

// breakpoint is a time at which one node's free resources change.
type breakpoint struct {
	t    int64
	node int32
}

// initChangePoints indexes the timelines' breakpoints bps as the global
// change points (with the origin's) and builds their summaries in one
// sweep over time.
func (p *Profile) initChangePoints(bps []breakpoint) {
	slices.SortFunc(bps, func(x, y breakpoint) int {
		if c := cmp.Compare(x.t, y.t); c != 0 {
			return c
		}
		return cmp.Compare(x.node, y.node)
	})
	cps := []*changePoint{{t: p.origin, owner: p.cow}}
	for k := 0; k < len(bps); {
		cp := &changePoint{t: bps[k].t, owner: p.cow}
		for ; k < len(bps) && bps[k].t == cp.t; k++ {
			cp.nodes = append(cp.nodes, bps[k].node)
		}
		cps = append(cps, cp)
	}
	p.cps = btree.NewG(btreeDeg, cpLess)
	for _, cp := range cps {
		p.cps.ReplaceOrInsert(cp)
	}
	p.buildSummaries(cps)
}

// initDims sets the active dimensions (TRES with capacity on some node)
// and the flat capacity array.
func (p *Profile) initDims(nodes []NodeState) error {
	for i, ns := range nodes {
		p.width = max(p.width, len(ns.Capacity))
		for j, v := range ns.Capacity {
			if v < 0 || v > gres.MaxCount {
				return fmt.Errorf("%w: node %d: Capacity of TRES %d is %d, want [0, %d]", ErrInvalidNode, i, j, v, gres.MaxCount)
			}
		}
	}
	p.isAct = make([]bool, p.width)
	for j := range p.width {
		for _, ns := range nodes {
			if ns.Capacity.At(gres.ID(j)) > 0 {
				p.active = append(p.active, gres.ID(j))
				p.isAct[j] = true
				break
			}
		}
	}
	p.a = len(p.active)
	p.caps = make([]int64, p.n*p.a)
	for i, ns := range nodes {
		for x, id := range p.active {
			p.caps[i*p.a+x] = ns.Capacity.At(id)
		}
	}
	return nil
}

// project copies v's active dimensions into dst. ok is false when v asks
// for a resource no node has; err reports negative or oversized counts.
func (p *Profile) project(v gres.Vector, dst []int64) (ok bool, err error) {
	ok = true
	for j, x := range v {
		if x < 0 || x > gres.MaxCount {
			return false, fmt.Errorf("TRES %d count %d out of [0, %d]", j, x, gres.MaxCount)
		}
		if x != 0 && !p.isActive(gres.ID(j)) {
			ok = false
		}
	}
	for x, id := range p.active {
		dst[x] = v.At(id)
	}
	return ok, nil
}

func (p *Profile) isActive(id gres.ID) bool {
	return int(id) < len(p.isAct) && p.isAct[id]
}

// expand turns an active-dimension slice back into a gres.Vector.
func (p *Profile) expand(v []int64) gres.Vector {
	out := make(gres.Vector, p.width)
	for x, id := range p.active {
		out[id] = v[x]
	}
	return out
}

func (p *Profile) nblocks() int { return (p.n + blockBits - 1) / blockBits }

// blockMaxFrom sets dst to the element-wise maximum of the free vectors in
// cur (n*a flat) over the nodes of block b.
func (p *Profile) blockMaxFrom(cur []int64, b int, dst []int64) {
	a := p.a
	lo, hi := b*blockBits, min((b+1)*blockBits, p.n)
	for x := range dst {
		dst[x] = math.MinInt64
	}
	for i := lo; i < hi; i++ {
		f := cur[i*a : (i+1)*a]
		for x := range dst {
			dst[x] = max(dst[x], f[x])
		}
	}
}

// newEntry validates allocs and builds an entry over [start, end).
func (p *Profile) newEntry(id JobID, kind entryKind, start, end int64, allocs []Alloc) (*entry, error) {
	if len(allocs) == 0 {
		return nil, fmt.Errorf("%w: no Allocs", ErrInvalidRequest)
	}
	a := p.a
	e := &entry{id: id, kind: kind, start: start, end: end, nodes: make([]int32, len(allocs)), use: make([]int64, len(allocs)*a)}
	for x, al := range allocs {
		if al.Node < 0 || al.Node >= p.n {
			return nil, fmt.Errorf("%w: Allocs[%d].Node %d out of range [0, %d)", ErrInvalidNode, x, al.Node, p.n)
		}
		e.nodes[x] = int32(al.Node)
		ok, err := p.project(al.Use, e.use[x*a:(x+1)*a])
		if err != nil {
			return nil, fmt.Errorf("%w: Allocs[%d].Use: %w", ErrInvalidRequest, x, err)
		}
		if !ok || !fitsIn(p.caps[al.Node*a:(al.Node+1)*a], e.use[x*a:(x+1)*a]) {
			return nil, fmt.Errorf("%w: Allocs[%d].Use %v exceeds node %d capacity", ErrOverAllocation, x, al.Use, al.Node)
		}
	}
	sorted := slices.Clone(e.nodes)
	slices.Sort(sorted)
	for x := 1; x < len(sorted); x++ {
		if sorted[x] == sorted[x-1] {
			return nil, fmt.Errorf("%w: node %d appears twice in Allocs", ErrInvalidRequest, sorted[x])
		}
	}
	return e, nil
}

// Now returns the profile's origin, the caller's now.
func (p *Profile) Now() time.Time { return p.nowT }

// Resolution returns the time grid of the profile.
func (p *Profile) Resolution() time.Duration { return time.Duration(p.res) * time.Second }

// NumNodes returns the number of nodes.
func (p *Profile) NumNodes() int { return p.n }

// NumChangePoints returns the number of distinct times (the origin
// included) at which some node's free resources change.
func (p *Profile) NumChangePoints() int { return p.cps.Len() }

// Len returns the number of entries (running jobs, reservations, blocks).
func (p *Profile) Len() int { return p.ents.Len() }

// Clone returns a copy-on-write copy of p: O(nodes) pointer copies; nodes,
// change points and entries are copied only when one side writes them.
// Clone must not run concurrently with other use of p; afterwards p and
// the clone are independent.
func (p *Profile) Clone() *Profile {
	c := *p
	c.tls = slices.Clone(p.tls)
	c.cps = p.cps.Clone()
	c.sums = p.sums.Clone()
	c.ents = p.ents.Clone()
	if p.idx != nil {
		c.idx = p.idx.Clone()
	}
	p.cow = new(cowToken)
	c.cow = new(cowToken)
	c.probeA, c.probeB, c.sumProbe, c.entProbe = &changePoint{}, &changePoint{}, &summary{}, &entry{}
	c.sc = nil
	c.ctr = p.ctr.Clone()
	return &c
}

// endOf converts an end time to profile seconds exactly (a fraction of
// a second counts as the whole second: resources are held a little
// longer, never shorter), never at or before the origin: an overdue end
// moves to the first grid point after it. The zero time means never.
func (p *Profile) endOf(t time.Time) int64 {
	if t.IsZero() {
		return posInf
	}
	s := ceilUnix(t)
	if s <= p.origin {
		return p.ceilRes(p.origin + 1)
	}
	return s
}

// resvEnd is the stored end of a reservation over [start, end) in profile
// seconds: exact for one that starts at the origin (a start, which becomes
// the running job), otherwise rounded up to the resolution grid. Rounding
// only ever holds resources longer than the plan needs, so that it makes
// the plan more cautious, never less.
func (p *Profile) resvEnd(start, end int64) int64 {
	if start <= p.origin {
		return end
	}
	return p.ceilRes(end)
}

// ceilUnix is t in Unix seconds, rounded up to a whole second.
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// ceilSecs is d in seconds, rounded up to a whole second.
func ceilSecs(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// startOf converts a start time to profile seconds: exact, a fraction of a
// second dropped (resources are taken a little earlier), but not before
// the origin. The zero time means the origin.
func (p *Profile) startOf(t time.Time) int64 {
	if t.IsZero() {
		return p.origin
	}
	return max(t.Unix(), p.origin)
}

func (p *Profile) ceilRes(s int64) int64 {
	if s >= posInf || p.res == 1 {
		return s
	}
	q := s / p.res
	if q*p.res < s {
		q++
	}
	return q * p.res
}

func (p *Profile) floorRes(s int64) int64 {
	if p.res == 1 {
		return s
	}
	q := s / p.res
	if q*p.res > s {
		q--
	}
	return q * p.res
}

// timeOf converts profile seconds to a time.Time in the caller's
// location; the origin is reported as the caller's now itself.
func (p *Profile) timeOf(s int64) time.Time {
	if s == p.origin {
		return p.nowT
	}
	if s >= posInf {
		return time.Time{}
	}
	return time.Unix(s, 0).In(p.nowT.Location())
}

// AddRunning adds one running job that releases its resources at r.End.
// The free amounts the profile was built with must already exclude it
// (for nodes built with a nil Free, use NewProfile's running list instead);
// for a job that starts after the profile was built, use AddStarted.
// It fails, leaving p unchanged, when the ID is taken, an Alloc is
// malformed, or the release would push a node above its capacity.
func (p *Profile) AddRunning(r Running) error {
	if p.hasID(r.ID) {
		return fmt.Errorf("%w: %d", ErrDuplicateID, r.ID)
	}
	e, err := p.newEntry(r.ID, kindRunning, p.origin, p.endOf(r.End), r.Allocs)
	if err != nil {
		return fmt.Errorf("running job %d: %w", r.ID, err)
	}
	if e.end < posInf {
		for x, nd := range e.nodes {
			if !p.fitsAdded(int(nd), e.use[x*p.a:(x+1)*p.a], e.end, posInf) {
				return fmt.Errorf("%w: running job %d: node %d would exceed its capacity after the job ends", ErrOverAllocation, r.ID, nd)
			}
		}
		p.change(e.nodes, e.use, e.end, posInf, +1)
	}
	p.addEntry(e)
	return nil
}

// Reserve books r's resources over [r.Start, r.End): from the start's
// whole second (but not before the origin) to the end, rounded up to the
// resolution grid unless the reservation starts at the origin (a start:
// its end is the running job's, exact). It fails, leaving p unchanged, when the ID is taken, an Alloc is
// malformed, or some node lacks the free resources for part of the
// interval (ErrOverAllocation).
func (p *Profile) Reserve(r Reservation) error {
	if p.hasID(r.ID) {
		return fmt.Errorf("%w: %d", ErrDuplicateID, r.ID)
	}
	if r.Start.IsZero() || r.End.IsZero() {
		return fmt.Errorf("%w: reservation %d: Start and End must be set", ErrInvalidTime, r.ID)
	}
	if !r.End.After(r.Start) {
		return fmt.Errorf("%w: reservation %d: End %v not after Start %v", ErrInvalidTime, r.ID, r.End, r.Start)
	}
	if r.End.Sub(r.Start) > MaxDuration {
		return fmt.Errorf("%w: reservation %d: longer than %v", ErrInvalidTime, r.ID, MaxDuration)
	}
	if !r.End.After(p.nowT) {
		return fmt.Errorf("%w: reservation %d: End %v not after the profile origin %v", ErrInvalidTime, r.ID, r.End, p.nowT)
	}
	start := p.startOf(r.Start)
	e, err := p.newEntry(r.ID, kindReserved, start, p.resvEnd(start, p.endOf(r.End)), r.Allocs)
	if err != nil {
		return fmt.Errorf("reservation %d: %w", r.ID, err)
	}
	return p.insertReserved(e)
}

// insertReserved checks that e fits and books it.
func (p *Profile) insertReserved(e *entry) error {
	a := p.a
	for x, nd := range e.nodes {
		if !p.fitsInterval(int(nd), e.use[x*a:(x+1)*a], e.start, e.end) {
			return fmt.Errorf("%w: reservation %d: node %d lacks free resources in [%v, %v)",
				ErrOverAllocation, e.id, nd, p.timeOf(e.start), p.timeOf(e.end))
		}
	}
	if e.start > p.origin {
		// A future reservation leaves the summaries alone: taking
		// resources keeps every idle set a superset and every block
		// maximum an upper bound, so they stay valid, only looser for
		// exclusive requests (scans tighten block maxima again, and a
		// release recomputes its nodes exactly). Updating them cost a
		// pass over every summary the reservation spans, per node, on
		// every booking, while conservative passes release all of
		// them before the next one. A start at the origin still
		// updates them: it usually becomes a running job and holds
		// its nodes until it ends.
		p.applyTL(e.nodes, e.use, e.start, e.end, -1)
		p.mergeTL(e.nodes, e.use, e.start, e.end)
	} else {
		p.change(e.nodes, e.use, e.start, e.end, -1)
	}
	p.addEntry(e)
	return nil
}

// Block makes nodes unusable over [start, end) whatever runs on them —
// a maintenance window or a node that will be taken down: their whole
// capacity is taken for the interval, so no request that needs any
// resource of those nodes fits across it, while running jobs that overlap
// it stay as they are. A zero end means forever. Release(id) lifts the
// block.
func (p *Profile) Block(id JobID, start, end time.Time, nodes []int) error {
	if p.hasID(id) {
		return fmt.Errorf("%w: %d", ErrDuplicateID, id)
	}
	s, e := p.startOf(start), p.endOf(end)
	if !end.IsZero() && (!end.After(start) || end.Sub(start) > MaxDuration || !end.After(p.nowT)) {
		return fmt.Errorf("%w: block %d: want Start < End, End after the origin, length at most %v", ErrInvalidTime, id, MaxDuration)
	}
	allocs := make([]Alloc, len(nodes))
	for x, nd := range nodes {
		allocs[x].Node = nd
		if nd >= 0 && nd < p.n {
			allocs[x].Use = p.expand(p.caps[nd*p.a : (nd+1)*p.a])
		}
	}
	ent, err := p.newEntry(id, kindBlock, s, e, allocs)
	if err != nil {
		return fmt.Errorf("block %d: %w", id, err)
	}
	p.change(ent.nodes, ent.use, ent.start, ent.end, -1)
	p.addEntry(ent)
	return nil
}

// Release removes an entry: a running job that ended early (its resources
// are free from the origin on), a reservation, or a block.
func (p *Profile) Release(id JobID) error {
	e, ok := p.entryOf(id)
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownID, id)
	}
	p.change(e.nodes, e.use, e.start, e.end, +1)
	p.dropEntry(e)
	return nil
}

// NextChange returns the first time after the origin at which some node's
// free resources change (a running job's end, a reservation's or block's
// start or end), or the zero time when none ever does. Until then the
// profile stands still: advancing it to an earlier time changes nothing
// but its origin.
func (p *Profile) NextChange() time.Time {
	var out time.Time
	p.probeA.t = p.origin + 1
	p.cps.AscendGreaterOrEqual(p.probeA, func(cp *changePoint) bool {
		out = p.timeOf(cp.t)
		return false
	})
	return out
}

// Has reports whether the profile holds an entry with this ID.
func (p *Profile) Has(id JobID) bool { return p.hasID(id) }

func (p *Profile) hasID(id JobID) bool {
	p.entProbe.id = id
	return p.ents.Has(p.entProbe)
}

// entryOf returns the entry with this ID, and whether there is one.
func (p *Profile) entryOf(id JobID) (*entry, bool) {
	p.entProbe.id = id
	return p.ents.Get(p.entProbe)
}

// Reservation returns the entry with this ID as a Reservation (a running
// job's Start is the origin, and so is the Start of one that began before
// the origin; End is zero for "never"), and whether it exists.
func (p *Profile) Reservation(id JobID) (Reservation, bool) {
	e, ok := p.entryOf(id)
	if !ok {
		return Reservation{}, false
	}
	r := Reservation{ID: e.id, Start: p.timeOf(max(e.start, p.origin)), End: p.timeOf(e.end), Allocs: make([]Alloc, len(e.nodes))}
	for x, nd := range e.nodes {
		r.Allocs[x] = Alloc{Node: int(nd), Use: p.expand(e.use[x*p.a : (x+1)*p.a])}
	}
	return r, true
}

// FreeAt returns node's free resources at time t (the origin's for times
// before it). Blocked resources show as negative counts.
func (p *Profile) FreeAt(node int, t time.Time) (gres.Vector, error) {
	if node < 0 || node >= p.n {
		return nil, fmt.Errorf("%w: node %d out of range [0, %d)", ErrInvalidNode, node, p.n)
	}
	s := max(t.Unix(), p.origin)
	tl := p.tls[node]
	k := tl.seg(s)
	return p.expand(tl.free[k*p.a : (k+1)*p.a]), nil
}

// Timeline returns node's free resources as steps; the first starts at the
// origin.
func (p *Profile) Timeline(node int) ([]Step, error) {
	if node < 0 || node >= p.n {
		return nil, fmt.Errorf("%w: node %d out of range [0, %d)", ErrInvalidNode, node, p.n)
	}
	tl := p.tls[node]
	out := make([]Step, len(tl.times))
	for k, t := range tl.times {
		out[k] = Step{Start: p.timeOf(max(t, p.origin)), Free: p.expand(tl.free[k*p.a : (k+1)*p.a])}
	}
	return out, nil
}

// ---- timeline primitives ----

// seg returns the index of the segment holding t (t ≥ origin).
func (tl *timeline) seg(t int64) int {
	lo, hi := 0, len(tl.times)
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if tl.times[m] <= t {
			lo = m
		} else {
			hi = m
		}
	}
	return lo
}

// split makes t a breakpoint (t > origin) and reports whether it was new.
func (tl *timeline) split(t int64, a int) bool {
	k := tl.seg(t)
	if tl.times[k] == t {
		return false
	}
	k++
	tl.times = slices.Insert(tl.times, k, t)
	tl.free = append(tl.free, make([]int64, a)...)
	copy(tl.free[(k+1)*a:], tl.free[k*a:len(tl.free)-a])
	copy(tl.free[k*a:(k+1)*a], tl.free[(k-1)*a:k*a])
	return true
}

// mergeAt removes breakpoint t when the segments on both sides are equal,
// and reports whether it did.
func (tl *timeline) mergeAt(t int64, a int) bool {
	k := tl.seg(t)
	if k == 0 || tl.times[k] != t || !equalVec(tl.free[k*a:(k+1)*a], tl.free[(k-1)*a:k*a]) {
		return false
	}
	tl.times = slices.Delete(tl.times, k, k+1)
	tl.free = slices.Delete(tl.free, k*a, (k+1)*a)
	return true
}

func (p *Profile) mutTL(i int) *timeline {
	tl := p.tls[i]
	if tl.owner != p.cow {
		tl = &timeline{owner: p.cow, times: slices.Clone(tl.times), free: slices.Clone(tl.free)}
		p.tls[i] = tl
	}
	return tl
}

// fitsInterval reports whether node i can take use throughout [s, e), by
// the search's rule (see holds).
func (p *Profile) fitsInterval(i int, use []int64, s, e int64) bool {
	a := p.a
	tl := p.tls[i]
	for k := tl.seg(s); k < len(tl.times) && tl.times[k] < e; k++ {
		if !holds(tl.free[k*a:(k+1)*a], use) {
			return false
		}
	}
	return true
}

// fitsAdded reports whether node i stays within capacity when use is added
// over [s, e).
func (p *Profile) fitsAdded(i int, use []int64, s, e int64) bool {
	a := p.a
	tl := p.tls[i]
	capI := p.caps[i*a : (i+1)*a]
	for k := tl.seg(s); k < len(tl.times) && tl.times[k] < e; k++ {
		f := tl.free[k*a : (k+1)*a]
		for j := range use {
			if f[j]+use[j] > capI[j] {
				return false
			}
		}
	}
	return true
}

// ---- change points ----

func (p *Profile) cpGet(t int64) (*changePoint, bool) {
	p.probeA.t = t
	return p.cps.Get(p.probeA)
}

// cpFloor returns the change point with the greatest time ≤ t.
func (p *Profile) cpFloor(t int64) *changePoint {
	p.probeA.t = t
	return floorItem(p.cps, p.probeA)
}

// floorItem returns the greatest item of tr at or below probe (the zero
// value when there is none).
func floorItem[T any](tr *btree.BTreeG[T], probe T) T {
	var out T
	tr.DescendLessOrEqual(probe, func(x T) bool {
		out = x
		return false
	})
	return out
}

func (p *Profile) mutCP(cp *changePoint) *changePoint {
	if cp.owner == p.cow {
		return cp
	}
	c := p.copyCP(cp.t, slices.Clone(cp.nodes))
	p.cps.ReplaceOrInsert(c)
	return c
}

// copyCP returns a change point of this profile at t listing nodes (the
// caller inserts it).
func (p *Profile) copyCP(t int64, nodes []int32) *changePoint {
	return &changePoint{t: t, owner: p.cow, nodes: nodes}
}

// cpAddAll records that nodes have a new breakpoint at t (a booking's
// start or end), looking the change point up once and creating it when
// needed, with a summary for its grid slot when the slot has none (see
// sumEnsure).
func (p *Profile) cpAddAll(t int64, nodes []int32) {
	if len(nodes) == 0 {
		return
	}
	cp, ok := p.cpGet(t)
	if !ok {
		cp = &changePoint{t: t, owner: p.cow}
		p.cps.ReplaceOrInsert(cp)
		p.sumEnsure(t)
	} else {
		cp = p.mutCP(cp)
	}
	cp.nodes = append(cp.nodes, nodes...)
	if cp.upOK && cp.owner == p.cow {
		for _, nd := range nodes {
			if p.rises(int(nd), t) {
				cp.up = append(cp.up, nd)
			}
		}
	}
}

// rises reports whether node i's free amounts rise at t on some
// dimension (true when t is not one of its breakpoints).
func (p *Profile) rises(i int, t int64) bool {
	a := p.a
	tl := p.tls[i]
	k := tl.seg(t)
	if k == 0 || tl.times[k] != t {
		return true
	}
	cur, prev := tl.free[k*a:(k+1)*a], tl.free[(k-1)*a:k*a]
	for j := range cur {
		if cur[j] > prev[j] {
			return true
		}
	}
	return false
}

// cpRefresh fixes the cached risers of the change point at t for the
// nodes nds, whose free amounts changed there.
func (p *Profile) cpRefresh(t int64, nds []int32) {
	if len(nds) == 0 {
		return
	}
	cp, ok := p.cpGet(t)
	if !ok || cp.owner != p.cow || !cp.upOK {
		return
	}
	for _, nd := range nds {
		x := slices.Index(cp.up, nd)
		switch r := p.rises(int(nd), t); {
		case r && x < 0:
			cp.up = append(cp.up, nd)
		case !r && x >= 0:
			cp.up[x] = cp.up[len(cp.up)-1]
			cp.up = cp.up[:len(cp.up)-1]
		}
	}
}

// cpTouchedIn is cpTouched for every change point in [lo, hi].
func (p *Profile) cpTouchedIn(lo, hi int64) {
	p.probeA.t = lo
	p.cps.AscendGreaterOrEqual(p.probeA, func(cp *changePoint) bool {
		if cp.t > hi {
			return false
		}
		if cp.owner == p.cow {
			cp.upOK = false
		}
		return true
	})
}

// risers returns the nodes of cp whose free amounts rise at cp.t on some
// dimension: a superset of those that can become able to hold a request
// there (one that is not exclusive and has no Spread). A node whose free
// amounts only fall or stay at t and that can hold such a request from t
// could already from t-1. The list is cached in cp when p owns it (else
// all of cp.nodes is returned).
func (p *Profile) risers(cp *changePoint) []int32 {
	if cp.owner != p.cow {
		return cp.nodes
	}
	if cp.upOK {
		return cp.up
	}
	up := cp.up[:0]
	for _, nd := range cp.nodes {
		if p.rises(int(nd), cp.t) {
			up = append(up, nd)
		}
	}
	cp.up, cp.upOK = up, true
	return up
}

// cpApply registers breakpoints (time, node) at any times with the change
// points — added, or removed when add is false — one cpAddAll or
// cpRemoveAll per time. It sorts pts by time, keeping each time's nodes in
// their order, and returns buf (the node lists) for reuse.
func (p *Profile) cpApply(pts []relPoint, add bool, buf []int32) []int32 {
	slices.SortStableFunc(pts, func(x, y relPoint) int { return cmp.Compare(x.t, y.t) })
	for k := 0; k < len(pts); {
		t := pts[k].t
		buf = buf[:0]
		for ; k < len(pts) && pts[k].t == t; k++ {
			buf = append(buf, pts[k].node)
		}
		if add {
			p.cpAddAll(t, buf)
		} else {
			p.cpRemoveAll(t, buf)
		}
	}
	return buf
}

// cpRemoveAll records that the nodes gone no longer have a breakpoint at
// t, in one pass over the change point's node list (which keeps its
// order), deleting the change point when no node has one there.
func (p *Profile) cpRemoveAll(t int64, gone []int32) {
	if len(gone) == 0 || t == p.origin {
		return
	}
	cp, ok := p.cpGet(t)
	if !ok {
		return
	}
	sc := p.scratch()
	if len(sc.mark) != p.n {
		sc.mark = make([]bool, p.n)
	}
	for _, i := range gone {
		sc.mark[i] = true
	}
	left := 0
	for _, i := range cp.nodes {
		if !sc.mark[i] {
			left++
		}
	}
	if left < len(cp.nodes) {
		if left == 0 {
			p.cps.Delete(cp)
			p.sumDropped(t)
		} else {
			cp = p.mutCP(cp)
			cp.nodes = slices.DeleteFunc(cp.nodes, func(i int32) bool { return sc.mark[i] })
			if cp.upOK {
				cp.up = slices.DeleteFunc(cp.up, func(i int32) bool { return sc.mark[i] })
			}
		}
	}
	for _, i := range gone {
		sc.mark[i] = false
	}
}

// change adds sign*use (per alloc) to the free resources of the entry's
// nodes over [s, e), keeping timelines canonical and the summaries
// valid. Callers have checked the result stays sensible.
func (p *Profile) change(nodes []int32, use []int64, s, e int64, sign int64) {
	s = max(s, p.origin)
	if e <= s {
		return
	}
	p.applyTL(nodes, use, s, e, sign)
	p.updateSummaries(nodes, use, s, e, sign)
	p.mergeTL(nodes, use, s, e)
}

// applyTL adds sign*use to the nodes' timelines over [s, e) (s ≥ origin,
// e > s), splitting them at s and e and registering new breakpoints with
// the change points (a grid slot that gets its first change point copies
// its predecessor's summary).
func (p *Profile) applyTL(nodes []int32, use []int64, s, e int64, sign int64) {
	a := p.a
	sc := p.scratch()
	atS, atE := sc.atS[:0], sc.atE[:0]
	// The nodes that already had a breakpoint at s, at e.
	oldS, oldE := sc.oldS[:0], sc.oldE[:0]
	for x, nd := range nodes {
		u := use[x*a : (x+1)*a]
		if isZero(u) {
			continue
		}
		tl := p.mutTL(int(nd))
		if s > p.origin {
			if tl.split(s, a) {
				atS = append(atS, nd)
			} else {
				oldS = append(oldS, nd)
			}
		}
		if e < posInf {
			if tl.split(e, a) {
				atE = append(atE, nd)
			} else {
				oldE = append(oldE, nd)
			}
		}
		kb := len(tl.times)
		if e < posInf {
			kb = tl.seg(e)
		}
		for k := tl.seg(s); k < kb; k++ {
			f := tl.free[k*a : (k+1)*a]
			for j := range u {
				f[j] += sign * u[j]
			}
		}
	}
	// The change point at s first: a summary created for e's slot copies
	// its predecessor's, which may be the one created for s's. Both
	// keep their cached risers right.
	p.cpAddAll(s, atS)
	p.cpAddAll(e, atE)
	p.cpRefresh(s, oldS)
	p.cpRefresh(e, oldE)
	sc.atS, sc.atE, sc.oldS, sc.oldE = atS, atE, oldS[:0], oldE[:0]
}

// mergeTL removes the breakpoints at s and e that applyTL made redundant.
func (p *Profile) mergeTL(nodes []int32, use []int64, s, e int64) {
	a := p.a
	sc := p.scratch()
	atS, atE := sc.atS[:0], sc.atE[:0]
	for x, nd := range nodes {
		if isZero(use[x*a : (x+1)*a]) {
			continue
		}
		tl := p.tls[nd]
		if e < posInf && tl.mergeAt(e, a) {
			atE = append(atE, nd)
		}
		if s > p.origin && tl.mergeAt(s, a) {
			atS = append(atS, nd)
		}
	}
	p.cpRemoveAll(e, atE)
	p.cpRemoveAll(s, atS)
	sc.atS, sc.atE = atS, atE
}

// ---- vector helpers on active dimensions ----

// holds reports whether free can take use the way the search decides it
// (query.fits): use ≤ free on every dimension use needs, and on every
// dimension when use is empty. A dimension use does not need may be
// negative (over-booked by a started job, see AddStarted) without
// stopping it; a blocked node has no positive dimension, so nothing that
// needs something fits there.
func holds(free, use []int64) bool {
	needs := false
	for j, u := range use {
		if u != 0 {
			needs = true
			if free[j] < u {
				return false
			}
		}
	}
	if needs {
		return true
	}
	for _, f := range free {
		if f < 0 {
			return false
		}
	}
	return true
}

// fitsIn reports whether req ≤ free element-wise.
func fitsIn(free, req []int64) bool {
	for j, r := range req {
		if free[j] < r {
			return false
		}
	}
	return true
}

func equalVec(x, y []int64) bool {
	for j := range x {
		if x[j] != y[j] {
			return false
		}
	}
	return true
}

func isZero(x []int64) bool {
	for _, v := range x {
		if v != 0 {
			return false
		}
	}
	return true
}
