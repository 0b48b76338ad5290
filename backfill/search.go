package backfill

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
)

// NodeChooser picks n nodes out of candidates, every one of which can hold
// the request for its whole duration at the time being tried. It returns
// the chosen node indices (exactly n distinct members of candidates), or
// nil when no acceptable choice exists among them (a topology constraint
// such as "one leaf switch" that these candidates cannot meet), in which
// case the search moves on to later times.
//
// A chooser must be deterministic and must not retain or modify
// candidates. It must also be monotone — if it finds no choice among a set
// of candidates for n nodes, it finds none among any subset for n or more
// nodes — because the planner relies on that to skip searches it already
// knows will fail. A nil NodeChooser picks the n lowest indices.
//
// For a request with a Spread the candidates are the nodes that hold
// PerNode; the planner then verifies that the chooser's choice holds the
// Spread and, when it does not, offers the chooser the Nodes candidates
// with the most spare (see Request.Spread). Such requests bypass the
// planner's shape cache, so monotonicity is not relied on for them.
type NodeChooser func(candidates topology.NodeSet, n int) []int

// Request asks when and where a job fits: Nodes nodes, each with PerNode
// free (or entirely idle when Exclusive), all from Allowed, for Duration
// without interruption, starting no earlier than Earliest and no later
// than Latest.
type Request struct {
	// Nodes is the number of nodes (≥ 1).
	Nodes int
	// PerNode is the resources needed on each node, indexed by gres.ID.
	PerNode gres.Vector
	// Exclusive asks for whole nodes: a node qualifies only while its
	// free resources equal its capacity, and the reservation takes all of
	// it. PerNode must still fit the node's capacity.
	Exclusive bool
	// Allowed is the set of nodes the job may use (partition nodes that
	// are up, minus excluded nodes, intersected with any reservation the
	// job must run in …). A set of length 0 means every node; otherwise
	// its length must equal the profile's node count.
	Allowed topology.NodeSet
	// Duration is the wall time (the time limit); at least 1 s. A start
	// at the origin reserves exactly it; a later start reserves up to the
	// first grid point at or after its end.
	Duration time.Duration
	// Earliest is the earliest acceptable start (begin time, start of an
	// advance reservation …), to the second (a fraction rounds up); zero
	// means the origin.
	Earliest time.Time
	// Latest is the latest acceptable start (the backfill window's end);
	// zero means no limit.
	Latest time.Time
	// Chooser picks among feasible nodes; nil picks the lowest indices.
	Chooser NodeChooser
	// Spread is what the chosen nodes must hold beyond PerNode × Nodes,
	// in total (a job's --gpus total beyond one GPU per node). A node is
	// a candidate while it holds PerNode; each chosen node contributes
	// what it has free beyond PerNode at its lowest over the interval,
	// and a set of nodes fits when those amounts cover Spread. The
	// booking gives each chosen node, in the chosen order, as much of
	// what is left as it holds (Fit.Spread). Nil or all zero: none.
	Spread gres.Vector
	// PreferBusy makes the default chooser (Chooser nil), for a start
	// after the profile's origin, take first the nodes on which the
	// request could not start at the origin — nodes busy now — and only
	// then the lowest indices (Slurm's bf_busy_nodes). Idle nodes then stay
	// free for backfill; classic EASY reserves this way.
	PreferBusy bool
	// Tasks is the request's task count (Slurm's -n) when the nodes hold
	// a variable number of tasks: PerNode is then a node's share with one
	// task, every chosen node runs at least one, and the nodes together
	// hold Tasks, each as many more whole tasks of PerTask as it has spare
	// at its lowest over the interval, at most MaxTasksPerNode in all
	// (--ntasks-per-node; 0: no limit). The tasks are dealt one per node
	// in turn, in the chosen order, while a node has room (Slurm's cyclic
	// distribution over nodes: -N2 -n7 gets 4+3). Fit.Tasks gives each
	// node's count and Fit.Spread its share beyond PerNode. Zero: no task
	// request. Tasks must be at least Nodes and excludes Spread.
	Tasks int
	// PerTask is what each task beyond a node's first adds to its share
	// (CPUs per task, memory per task, GRES per task).
	PerTask gres.Vector
	// MaxTasksPerNode bounds each node's task count (0: no limit).
	// PlaneSize, with Tasks, deals the tasks in blocks of PlaneSize to
	// the chosen nodes in turn instead, each block cut to what a node
	// has room for (Slurm's -m plane=<size>: -N4 -n21 -m plane=4 gets
	// 8+5+4+4); 0: one task at a time. See DealPlanes.
	MaxTasksPerNode int
	PlaneSize       int
	// Required are nodes every choice must include (Slurm's --nodelist,
	// -w, when the job takes more nodes than it lists): a choice without
	// all of them is refused, and the search starts no earlier than the
	// first time each of them can hold the request (its free amounts at
	// that time hold PerNode, or it is idle for an exclusive request),
	// which skips the times at which no choice could succeed. The
	// answer is the same as without the bound. Nil: none.
	Required []int
	// Alternatives, when set, are sets of which the job's nodes must all
	// lie in one (Slurm's matching OR, --constraint="[a|b]": every node
	// with feature a, or every node with b). The answer is the earliest
	// fit of the request within Allowed ∩ each set, the first set listed
	// on equal starts; each set's length must be the profile's node count.
	// Nil: none.
	Alternatives []topology.NodeSet
}

// FitStatus says how a search ended.
type FitStatus uint8

const (
	// FitBeyondLatest: no start at or before Request.Latest, though the
	// request could fit some day.
	FitBeyondLatest FitStatus = iota
	// FitFound: Fit.Start and Fit.Nodes hold the earliest fit.
	FitFound
	// FitNever: the request cannot fit at any time in this profile (more
	// nodes than allowed nodes that can hold it, a resource no allowed
	// node has, or resources that never become free).
	FitNever
)

// String returns the status name.
func (s FitStatus) String() string {
	switch s {
	case FitBeyondLatest:
		return "beyond-latest"
	case FitFound:
		return "found"
	case FitNever:
		return "never"
	}
	return fmt.Sprintf("FitStatus(%d)", uint8(s))
}

// Fit is the answer to a Request.
type Fit struct {
	Status FitStatus
	// Start is the earliest start; the profile's Now when the job can
	// start immediately.
	Start time.Time
	// End is the end of the interval a reservation would take: Start +
	// Duration for a start at the profile's origin, else rounded up to
	// the resolution grid.
	End time.Time
	// Nodes are the chosen nodes in increasing order for the default
	// chooser, in the chooser's order otherwise.
	Nodes []int
	// Spread is, for a request with a Spread, each chosen node's share of
	// it (parallel to Nodes); nil otherwise. For a request with Tasks it
	// is each node's share beyond PerNode (its tasks beyond the first).
	Spread []gres.Vector
	// Tasks is, for a request with Tasks, each chosen node's task count
	// (parallel to Nodes, each at least 1, summing to Request.Tasks); nil
	// otherwise.
	Tasks []int
}

// query is a validated request in profile units.
type query struct {
	n       int
	req     []int64
	nz      []int // dimensions where req is non-zero
	excl    bool
	allowed topology.NodeSet
	d       int64 // raw duration in seconds
	t0      int64
	latest  int64
	chooser NodeChooser
	// preferBusy: Request.PreferBusy.
	preferBusy bool
	// Hint: at t0, every feasible node below upTo is in cands (ascending);
	// nodes at or above upTo are unknown. Zero values mean "nothing known".
	cands []int32
	upTo  int
	never bool
	// allCapable: every allowed node's capacity holds the request (the
	// planner knows it per shape), so violation need not check it.
	allCapable bool
	// slab is where the chosen node lists are cut from (a planner's
	// entries keep them); nil allocates each.
	slab *[]int
	// ghost, when set, is an entry of the profile the search treats as
	// absent (see ghostOn).
	ghost *ghost
	// cslab is where candidate lists are cut from (a planner's shape
	// cache keeps them for one pass); nil allocates each.
	cslab *[]int32
	// spread is Request.Spread in profile units and sdims its non-zero
	// dimensions (empty without one). After a successful spreadOver,
	// shareOf are the nodes, share their shares (len(shareOf)×a) and use
	// what the request takes on each; left and spareBuf are scratch.
	spread, share, use, left, spareBuf []int64
	sdims                              []int
	shareOf                            []int
	// A task request (Request.Tasks; see tasks.go): taskReq says there is
	// one, tasks counts the tasks beyond one per node, tmax the most of
	// them one node may take, and spread holds PerTask. After a
	// successful tasksOver, ntask holds each node's task count.
	taskReq     bool
	tasks, tmax int64
	plane       int64
	ntask       []int
	// roomBuf is tasksOver's scratch: each node's room, then its deal.
	roomBuf []int64
	// required is Request.Required (see required.go).
	required []int
}

// candList returns an empty candidate list with room for n nodes.
func (q *query) candList(n int) []int32 { return cut(q.cslab, n, 256) }

// cut returns an empty slice with room for n elements cut from *slab (a
// new chunk of at least minChunk when it is full), or a fresh one when
// slab is nil.
func cut[T any](slab *[]T, n, minChunk int) []T {
	if slab == nil {
		return make([]T, 0, n)
	}
	s := *slab
	if cap(s)-len(s) < n {
		s = make([]T, 0, max(2*cap(s), n, minChunk))
	}
	out := s[len(s) : len(s) : len(s)+n]
	*slab = s[:len(s)+n]
	return out
}

// ghost is a booking a search looks through: the planner's kept
// reservation of the job it is planning (see Planner.Plan). Its use is
// added back to its nodes' free amounts over [s, e.end); the summaries of
// the change points do not know that, so its nodes and their blocks bypass
// them, and s and e.end are visited as change points of their own (a
// node's breakpoint there may have merged with another entry's).
type ghost struct {
	e   *entry
	s   int64   // e.start, or the origin when it began before
	pos []int32 // node → index in e.nodes, or -1 (kept, length n)
	blk []bool  // block → holds a ghost node (kept)
	buf []int64
}

// ghostOn prepares a search of q that treats entry e as absent.
func (p *Profile) ghostOn(q *query, e *entry) {
	g := &p.scratch().ghost
	if len(g.pos) != p.n { // first use (ghostOff resets what ghostOn sets)
		g.pos = make([]int32, p.n)
		for i := range g.pos {
			g.pos[i] = -1
		}
		g.blk = make([]bool, p.nblocks())
		g.buf = make([]int64, p.a)
	}
	g.e, g.s = e, max(e.start, p.origin)
	for x, nd := range e.nodes {
		g.pos[nd] = int32(x)
		g.blk[int(nd)/blockBits] = true
	}
	q.ghost = g
}

// ghostOff undoes ghostOn.
func (p *Profile) ghostOff(q *query) {
	g := q.ghost
	if g == nil {
		return
	}
	for _, nd := range g.e.nodes {
		g.pos[nd] = -1
		g.blk[int(nd)/blockBits] = false
	}
	q.ghost = nil
}

// ghostAt returns the index of node i in the ghost entry, or -1.
func (q *query) ghostAt(i int) int {
	if q.ghost == nil {
		return -1
	}
	return int(q.ghost.pos[i])
}

// freeWith returns the free amounts f of the ghost's node gx (its index
// in the entry) with the ghost's use there added back, in g.buf.
func (g *ghost) freeWith(f []int64, gx int) []int64 {
	a := len(f)
	u := g.e.use[gx*a : (gx+1)*a]
	for x := range f {
		g.buf[x] = f[x] + u[x]
	}
	return g.buf
}

// ghostBlock reports whether block b holds a ghost node.
func (q *query) ghostBlock(b int) bool { return q.ghost != nil && q.ghost.blk[b] }

// nodeList returns an empty list with room for n nodes, from the slab when
// there is one.
func (q *query) nodeList(n int) []int { return cut(q.slab, n, 32) }

// result is a search's answer plus what it learnt about the feasible set
// at the answer's time: every feasible node below upTo is in cands.
type result struct {
	st    FitStatus
	t     int64
	nodes []int
	cands []int32
	upTo  int
}

// maxCands bounds the candidate lists a search reports.
const maxCands = 512

type hitem struct {
	u    int64
	node int32
}

// scratch holds per-profile reusable buffers for searches and updates.
type scratch struct {
	f, tmp, full topology.NodeSet
	u            []int64
	heap         []hitem
	sums         []*summary
	probes       []*summary
	win          []*summary // the sweep's sumWindow
	// The narrow sweep's heap of next breakpoints, each allowed node's
	// position in its timeline, and the nodes changing at one time.
	nheap  []hitem
	cursor []int32
	at     []int32
	rel    relBufs
	plan   *planScratch
	idle   []int
	// Advance's and releaseKind's entry lists and range bounds.
	overdue, expired []*entry
	lo, hi           entry
	ghost            ghost
	// applyTL's and mergeTL's nodes with a new (or merged) breakpoint at
	// the change's start and end; mark is cpRemoveAll's node flags (all
	// false between calls).
	atS, atE []int32
	mark     []bool
	// applyTL's nodes that already had a breakpoint at the start, end.
	oldS, oldE []int32
}

func (p *Profile) scratch() *scratch {
	if p.sc == nil {
		p.sc = &scratch{
			f:    topology.NewNodeSet(p.n),
			tmp:  topology.NewNodeSet(p.n),
			full: topology.FullNodeSet(p.n),
			u:    make([]int64, p.n),
		}
	}
	return p.sc
}

// EarliestFit returns the earliest time at or after r.Earliest (and at or
// before r.Latest) at which r fits for its whole duration, and on which
// nodes. It does not change the profile; book the answer with ReserveFit.
// Cost: a scan of the allowed nodes that the summaries of the start slot
// do not rule out, then one step per node change after it (see the
// package documentation).
func (p *Profile) EarliestFit(r Request) (Fit, error) {
	if len(r.Alternatives) > 0 {
		return p.earliestAlternative(r)
	}
	q, err := p.makeQuery(&r)
	if err != nil {
		return Fit{}, err
	}
	res, err := p.search(q)
	if err != nil {
		return Fit{}, err
	}
	if res.st == FitBeyondLatest && (p.capable(q) < q.n || !p.spreadCapable(q)) {
		res.st = FitNever
	}
	if res.st != FitFound {
		return Fit{Status: res.st}, nil
	}
	return Fit{Status: FitFound, Start: p.timeOf(res.t), End: p.timeOf(p.endAt(res.t, q.d)), Nodes: res.nodes,
		Spread: p.shares(q), Tasks: p.taskCounts(q, len(res.nodes))}, nil
}

// ReserveFit books under id what EarliestFit returned for req: fit.Nodes
// over [fit.Start, fit.End) — req.Duration from fit.Start, rounded up to the
// grid unless fit.Start is the origin; from fit.Start + req.Duration when
// fit.End is zero — each with
// req.PerNode plus its fit.Spread share, or whole nodes when
// req.Exclusive. Booking fit.End rather
// than fit.Start + req.Duration matters when fit.Start is a Now with a
// fraction of a second, which the profile counts from its whole second.
// It fails like Reserve, and with ErrInvalidRequest when fit was not
// found.
func (p *Profile) ReserveFit(id JobID, req Request, fit Fit) error {
	if fit.Status != FitFound {
		return fmt.Errorf("%w: fit status %v, want found", ErrInvalidRequest, fit.Status)
	}
	if fit.Spread != nil && len(fit.Spread) != len(fit.Nodes) {
		return fmt.Errorf("%w: fit has %d Spread shares for %d nodes", ErrInvalidRequest, len(fit.Spread), len(fit.Nodes))
	}
	allocs := make([]Alloc, len(fit.Nodes))
	for x, i := range fit.Nodes {
		allocs[x] = Alloc{Node: i, Use: req.PerNode}
		if fit.Spread != nil {
			u := req.PerNode.Clone()
			if err := u.AddInPlace(fit.Spread[x]); err != nil {
				return fmt.Errorf("%w: Spread share of node %d: %w", ErrInvalidRequest, i, err)
			}
			allocs[x].Use = u
		}
		if req.Exclusive && i >= 0 && i < p.n {
			allocs[x].Use = p.expand(p.caps[i*p.a : (i+1)*p.a])
		}
	}
	end := fit.End
	if end.IsZero() {
		end = fit.Start.Add(req.Duration)
	}
	return p.Reserve(Reservation{ID: id, Start: fit.Start, End: end, Allocs: allocs})
}

// makeQuery validates r and converts it to profile units.
func (p *Profile) makeQuery(r *Request) (*query, error) {
	return p.fillQuery(&query{}, r)
}

// fillQuery is makeQuery into q, reusing q's buffers (a planner queries
// job after job).
func (p *Profile) fillQuery(q *query, r *Request) (*query, error) {
	*q = query{n: r.Nodes, excl: r.Exclusive, chooser: r.Chooser, preferBusy: r.PreferBusy,
		req: slices.Grow(q.req[:0], p.a)[:p.a], nz: q.nz[:0], slab: q.slab, cslab: q.cslab,
		spread: q.spread, share: q.share[:0], use: q.use[:0], left: q.left, spareBuf: q.spareBuf,
		sdims: q.sdims, shareOf: q.shareOf[:0], ntask: q.ntask[:0], roomBuf: q.roomBuf, required: q.required[:0]}
	if err := p.setRequired(q, r.Required); err != nil {
		return nil, err
	}
	if len(r.Alternatives) > 0 {
		// EarliestFit and the planner search each alternative on its own.
		return nil, fmt.Errorf("%w: Alternatives are not supported here (a heterogeneous job's component, a co-fit)", ErrInvalidRequest)
	}
	if r.Nodes < 1 {
		return nil, fmt.Errorf("%w: Nodes %d, want ≥ 1", ErrInvalidRequest, r.Nodes)
	}
	if r.Duration < time.Second || r.Duration > MaxDuration {
		return nil, fmt.Errorf("%w: Duration %v, want [1s, %v]", ErrInvalidTime, r.Duration, MaxDuration)
	}
	q.d = ceilSecs(r.Duration)
	ok, err := p.project(r.PerNode, q.req)
	if err != nil {
		return nil, fmt.Errorf("%w: PerNode: %w", ErrInvalidRequest, err)
	}
	q.never = !ok // a resource no node has
	if err := p.setSpread(q, r); err != nil {
		return nil, err
	}
	if err := p.setTasks(q, r); err != nil {
		return nil, err
	}
	for j, v := range q.req {
		if v != 0 {
			q.nz = append(q.nz, j)
		}
	}
	if len(q.nz) == 0 {
		// An empty request still must not land on a blocked node, whose
		// free counts are negative: check every dimension.
		for j := range q.req {
			q.nz = append(q.nz, j)
		}
	}
	switch r.Allowed.Len() {
	case 0:
		q.allowed = p.scratch().full
	case p.n:
		q.allowed = r.Allowed
	default:
		return nil, fmt.Errorf("%w: Allowed has length %d, want 0 or %d", ErrInvalidRequest, r.Allowed.Len(), p.n)
	}
	q.t0 = p.origin
	if !r.Earliest.IsZero() {
		q.t0 = max(ceilUnix(r.Earliest), p.origin)
	}
	q.latest = posInf
	if !r.Latest.IsZero() {
		q.latest = r.Latest.Unix()
	}
	return q, nil
}

// fits reports whether free holds the request (req ≤ free on every
// dimension the request uses; a blocked node's counts are all ≤ 0, so it
// fails any request that uses something).
func (q *query) fits(free []int64) bool {
	for _, j := range q.nz {
		if free[j] < q.req[j] {
			return false
		}
	}
	return true
}

// takes reports whether a node with free amounts free and capacity capI
// can take the request: entirely idle for an exclusive one.
func (q *query) takes(free, capI []int64) bool {
	if q.excl {
		return equalVec(free, capI)
	}
	return q.fits(free)
}

// useOn is what the request takes on node i: the per-node request, or the
// whole node for an exclusive one.
func (p *Profile) useOn(q *query, i int) []int64 {
	if q.hasSpread() {
		if u := p.spreadUse(q, i); u != nil {
			return u
		}
	}
	if q.excl {
		return p.caps[i*p.a : (i+1)*p.a]
	}
	return q.req
}

// capable counts the allowed nodes whose capacity can hold the request.
func (p *Profile) capable(q *query) int {
	if q.never {
		return 0
	}
	a := p.a
	c := 0
	for i := q.allowed.Next(0); i >= 0; i = q.allowed.Next(i + 1) {
		if q.fits(p.caps[i*a : (i+1)*a]) {
			c++
		}
	}
	return c
}

// endAt is the end of the interval a job of raw duration d starting at t
// reserves: exactly t+d for a start at the origin (the job starts now and
// ends then), else the first grid point at or after t+d (a reservation,
// held a little longer than it needs).
func (p *Profile) endAt(t, d int64) int64 { return p.resvEnd(t, t+d) }

// durAt is the length of the interval a job of raw duration d starting at
// t reserves (see endAt).
func (p *Profile) durAt(t, d int64) int64 { return p.endAt(t, d) - t }

// lastStart is the latest start after the origin at which a job of raw
// duration d reserves no time at or after x (its end rounded up to the
// grid at most x): floorRes(x) - d; posInf for x = posInf.
func (p *Profile) lastStart(x, d int64) int64 {
	if x >= posInf {
		return posInf
	}
	return p.floorRes(x) - d
}

// violation returns the first time ≥ t at which node i cannot hold the
// request (free below req, or not idle for exclusive requests), or posInf
// when there is none before bound.
func (p *Profile) violation(i int, t, bound int64, q *query) int64 {
	a := p.a
	capI := p.caps[i*a : (i+1)*a]
	if !q.allCapable && !q.fits(capI) {
		return t
	}
	if gx := q.ghostAt(i); gx >= 0 {
		return p.violationGhost(i, t, bound, q, gx)
	}
	tl := p.tls[i]
	k := tl.seg(t)
	for first := true; k < len(tl.times); k++ {
		if !first && tl.times[k] >= bound {
			return posInf
		}
		if !q.takes(tl.free[k*a:(k+1)*a], capI) {
			if first {
				return t
			}
			return tl.times[k]
		}
		first = false
	}
	return posInf
}

// violationGhost is violation for a node of the ghost entry: its free
// amounts plus the ghost's use over [g.s, g.e.end), piece by piece.
func (p *Profile) violationGhost(i int, t, bound int64, q *query, gx int) int64 {
	a := p.a
	g := q.ghost
	capI := p.caps[i*a : (i+1)*a]
	tl := p.tls[i]
	k := tl.seg(t)
	for at := t; ; {
		segEnd := int64(posInf)
		if k+1 < len(tl.times) {
			segEnd = tl.times[k+1]
		}
		end := segEnd
		if g.s > at && g.s < end {
			end = g.s
		}
		if g.e.end > at && g.e.end < end {
			end = g.e.end
		}
		if at != t && at >= bound {
			return posInf
		}
		f := tl.free[k*a : (k+1)*a]
		if at >= g.s && at < g.e.end {
			f = g.freeWith(f, gx)
		}
		if !q.takes(f, capI) {
			return at
		}
		if end >= posInf {
			return posInf
		}
		at = end
		if at >= segEnd {
			k++
		}
	}
}

// search runs the earliest-fit sweep. See the package documentation.
func (p *Profile) search(q *query) (result, error) {
	if q.never || q.n > p.n {
		return result{st: FitNever}, nil
	}
	p.requiredBound(q)
	if q.t0 > q.latest {
		return result{st: FitBeyondLatest}, nil
	}
	sc := p.scratch()
	a := p.a
	F := sc.f
	F.Reset()
	count := 0
	sc.heap = sc.heap[:0]
	// A node stays feasible from where it becomes so until lastStart of
	// its first violation: the reserved end of a later start is on the
	// grid. Violations are looked for up to the end a start at the latest
	// would reserve.
	bound := int64(posInf)
	if q.latest < posInf {
		bound = p.endAt(max(q.latest, p.origin+1), q.d)
	}
	add := func(i int, x int64) {
		F.Add(i)
		count++
		u := p.lastStart(x, q.d)
		sc.u[i] = u
		if u < posInf {
			heapPush(&sc.heap, hitem{u: u, node: int32(i)})
		}
	}
	// found reports the answer at t with F complete below upTo.
	found := func(t int64, nodes []int, upTo int) result {
		r := result{st: FitFound, t: t, nodes: nodes, upTo: upTo, cands: q.candList(min(count, maxCands))}
		for i := F.Next(0); i >= 0 && i < upTo; i = F.Next(i + 1) {
			if len(r.cands) == maxCands {
				r.upTo = i
				break
			}
			r.cands = append(r.cands, int32(i))
		}
		return r
	}

	// 1. Scan at t0: first the nodes the hint names, then every allowed
	// node from q.upTo on, using the summaries of t0's slot (and of a few
	// probe slots inside [t0, t0+d)) to skip nodes that cannot fit. The
	// default chooser stops at the first n feasible nodes, which are the
	// lowest.
	t0 := q.t0
	d0 := p.durAt(t0, q.d)
	b0 := max(bound, t0+d0)
	// early: the default chooser's answer is complete once the scan has
	// found n feasible nodes, the lowest; with required nodes, once they
	// are all feasible (checked first, below) and the lowest others fill
	// up the count (withRequired's choice).
	early := q.chooser == nil && !q.hasSpread()
	// The scan at t0 looks for violations only up to t0+d0 (b1): that
	// decides whether a node is feasible at t0, and an answer at t0 needs
	// no more. Only when the sweep goes on does a feasible node's first
	// violation up to b0 matter (when it leaves the feasible set); it is
	// then looked for from t0+d0 on (settle), the rest of the same walk.
	// A search that ends at t0 — a job whose required node frees at t0,
	// the common case of a where request — so reads each candidate's
	// timeline over the job's own interval rather than to the window's end.
	b1 := t0 + d0
	// take0 adds node i, whose first violation from t0 before b1 is x
	// (posInf when none), when it is feasible at t0, and reports whether
	// the default chooser's answer is complete: the first n feasible
	// nodes, the lowest, are all below i+1.
	take0 := func(i int, x int64) bool {
		if x < b1 || F.Has(i) { // (a required node is taken first)
			return false
		}
		F.Add(i)
		count++
		return early && count >= q.n
	}
	// settle gives every node of F (the feasible set at t0) its first
	// violation up to b0, as add would have, before the sweep.
	settle := func() {
		for i := F.Next(0); i >= 0; i = F.Next(i + 1) {
			x := int64(posInf)
			if b0 > b1 {
				x = p.violation(i, b1, b0, q)
			}
			u := p.lastStart(x, q.d)
			sc.u[i] = u
			if u < posInf {
				heapPush(&sc.heap, hitem{u: u, node: int32(i)})
			}
		}
	}
	lowest := func(upTo int) result {
		if len(q.required) > 0 {
			return found(t0, q.withRequired(F), upTo)
		}
		return found(t0, F.FirstN(q.nodeList(q.n), q.n), upTo)
	}
	if early && len(q.required) > 0 {
		// The required nodes first: the early answer needs them all; if
		// one cannot hold the request at t0 the scan is the full one.
		for _, i := range q.required {
			if !q.allowed.Has(i) || p.violation(i, t0, b1, q) < b1 {
				early = false
				break
			}
		}
		if early {
			for _, i := range q.required {
				if take0(i, posInf) {
					return lowest(0), nil
				}
			}
		}
	}
	for _, nd := range q.cands {
		if i := int(nd); take0(i, p.violation(i, t0, b1, q)) {
			return lowest(i + 1), nil
		}
	}
	s0 := p.sumFloor(t0)
	s0End := int64(math.MinInt64) // the end of s0's range, once needed
	// The probe slots, found when a block passes s0's summaries.
	var probes []*summary
	probed := false
	probe := func() []*summary {
		if !probed {
			probed = true
			probes = sc.probes[:0]
			for _, off := range [...]int64{d0 / 4, d0 / 2, 3 * d0 / 4, d0 - 1} {
				pr := p.sumFloor(t0 + off)
				if pr != s0 && !slices.Contains(probes, pr) {
					probes = append(probes, pr)
				}
			}
			sc.probes = probes
		}
		return probes
	}
	if q.excl {
		cand := sc.tmp
		cand.CopyFrom(q.allowed)
		if !p.plainScan {
			cand.IntersectWith(s0.idle)
			for _, pr := range probe() {
				cand.IntersectWith(pr.idle)
			}
		}
		if g := q.ghost; g != nil { // the idle sets count the ghost
			for _, nd := range g.e.nodes {
				if q.allowed.Has(int(nd)) {
					cand.Add(int(nd))
				}
			}
		}
		for i := cand.Next(q.upTo); i >= 0; i = cand.Next(i + 1) {
			if take0(i, p.violation(i, t0, b1, q)) {
				return lowest(i + 1), nil
			}
		}
	} else {
		atOrigin := t0 == p.origin // a node's first segment holds at t0
		for i := q.allowed.Next(q.upTo); i >= 0; {
			b := i / blockBits
			ghostB := q.ghostBlock(b)
			if !ghostB && !p.blockMayFit(s0, probe, b, q) {
				i = q.allowed.Next((b + 1) * blockBits)
				continue
			}
			end := (b + 1) * blockBits
			anyAtT0 := false
			for ; i >= 0 && i < end; i = q.allowed.Next(i + 1) {
				if atOrigin && !ghostB && !q.fits(p.tls[i].free[:a]) {
					continue // busy now: violation would say t0
				}
				x := p.violation(i, t0, b1, q)
				if x > t0 {
					anyAtT0 = true
				}
				if take0(i, x) {
					return lowest(i + 1), nil
				}
			}
			if !anyAtT0 && !ghostB {
				if s0End == math.MinInt64 {
					s0End = p.sumEnd(s0.t)
				}
				p.tightenBlock(s0, s0End, b)
			}
		}
	}
	if count >= q.n {
		nodes, err := p.choose(q, F, t0)
		if err != nil {
			return result{}, err
		}
		if nodes != nil {
			return found(t0, nodes, p.n), nil
		}
	}

	settle()

	// 2. Sweep the later change points: a node can only become feasible
	// where its own free resources change; feasible nodes drop out when
	// their feasible-start interval ends. When only t0 was allowed (a test
	// for a start now) the first step ends it: beyond the latest if
	// anything changes later, else never.
	var (
		res  = result{st: FitNever}
		ferr error
	)
	// step examines time t: the nodes listed (a change point's, nil for a
	// ghost's own time) with the summary sm of t's slot, and every ghost
	// node when all is set. It reports whether the sweep is over (res
	// set, or ferr).
	step := func(t int64, nodes []int32, sm *summary, all bool) bool {
		if t > q.latest {
			res.st = FitBeyondLatest
			return true
		}
		for len(sc.heap) > 0 && sc.heap[0].u < t {
			h := heapPop(&sc.heap)
			if i := int(h.node); F.Has(i) && sc.u[i] == h.u {
				F.Remove(i)
				count--
			}
		}
		added := false
		// A Spread request is tried again where a candidate's free
		// amounts change: its spare may have grown.
		touched := false
		end := p.endAt(t, q.d)
		g := q.ghost
		lists := [2][]int32{nodes, nil}
		if all {
			lists[1] = g.e.nodes
		}
		for _, list := range lists {
			for _, nd := range list {
				i := int(nd)
				if !q.allowed.Has(i) {
					continue
				}
				if F.Has(i) {
					touched = touched || q.hasSpread()
					continue
				}
				// Cheap rejections from the slot's summaries before
				// reading the node's timeline (a ghost node, the only
				// kind a ghost's own time lists, bypasses them).
				if p.plainScan || sm == nil {
					// No summaries: the timeline decides.
				} else if g == nil || g.pos[i] < 0 {
					if q.excl {
						if !sm.idle.Has(i) {
							continue
						}
					} else if b := i / blockBits; !q.fits(sm.bmax[b*a : (b+1)*a]) {
						continue
					}
				}
				if x := p.violation(i, t, max(bound, end), q); x >= end {
					add(i, x)
					added = true
				}
			}
		}
		if (added || touched) && count >= q.n {
			nodes, err := p.choose(q, F, t)
			if err != nil {
				ferr = err
				return true
			}
			if nodes != nil {
				res = found(t, nodes, p.n)
				return true
			}
		}
		return false
	}
	// The ghost's start and end, when after t0, are visited too.
	var virt [2]int64
	nv, vi := 0, 0
	if g := q.ghost; g != nil {
		for _, v := range [...]int64{g.s, g.e.end} {
			if v > t0 && v < posInf && (nv == 0 || v != virt[nv-1]) {
				virt[nv] = v
				nv++
			}
		}
	}
	done := false
	// visit steps to time t, after the ghost's times before it, with the
	// nodes changing at t and the summary of t's slot (nil: none).
	visit := func(t int64, nodes []int32, sm *summary) bool {
		for vi < nv && virt[vi] < t {
			if done = step(virt[vi], nil, nil, true); done {
				return false
			}
			vi++
		}
		all := vi < nv && virt[vi] == t
		if all {
			vi++
		}
		done = step(t, nodes, sm, all)
		return !done
	}
	narrow := p.narrowWorth(q)
	win := sumWindow{p: p, buf: sc.win[:0]}
	if narrow {
		p.sweepNarrow(q, t0, func(t int64, nodes []int32) bool { return visit(t, nodes, win.at(t)) })
	} else {
		// Only a node whose free amounts rise at a change point can
		// become feasible there, unless the request is exclusive or
		// has a Spread (see risers).
		risers := !q.excl && !q.hasSpread() && !p.plainScan
		p.probeB.t = t0 + 1
		p.cps.AscendGreaterOrEqual(p.probeB, func(cp *changePoint) bool {
			nodes := cp.nodes
			if risers {
				nodes = p.risers(cp)
			}
			return visit(cp.t, nodes, win.at(cp.t))
		})
	}
	clear(win.buf)
	sc.win = win.buf[:0]
	for ; !done && vi < nv; vi++ {
		done = step(virt[vi], nil, nil, true)
	}
	if ferr != nil {
		return result{}, ferr
	}
	if !done && narrow && q.latest < posInf && p.lastChange() > max(t0, q.latest) {
		// The walk would have reached a change point past the latest
		// start (naming other nodes) before running out.
		res.st = FitBeyondLatest
	}
	// FitNever when no change point is left: nothing changes any more.
	return res, nil
}

// blockMayFit reports whether the summaries allow some node of block b to
// hold the request at slot s0 and at every probe slot (which probe finds
// when first asked).
func (p *Profile) blockMayFit(s0 *summary, probe func() []*summary, b int, q *query) bool {
	if p.plainScan {
		return true
	}
	a := p.a
	if !q.fits(s0.bmax[b*a : (b+1)*a]) {
		return false
	}
	for _, pr := range probe() {
		if !q.fits(pr.bmax[b*a : (b+1)*a]) {
			return false
		}
	}
	return true
}

// choose applies the request's chooser to the feasible set at time t.
// The default chooser takes the lowest indices; with Request.PreferBusy,
// for a start after the profile's origin (a reservation) it takes first
// the nodes on which the request could not start at the origin (busy now),
// so that the nodes usable now stay free for backfill.
func (p *Profile) choose(q *query, F topology.NodeSet, t int64) ([]int, error) {
	if !q.requiredIn(F) {
		return nil, nil
	}
	if q.hasSpread() {
		return p.chooseSpread(q, F, t)
	}
	return p.choosePlain(q, F, t)
}

// choosePlain is choose without the Spread: the chooser's choice.
func (p *Profile) choosePlain(q *query, F topology.NodeSet, t int64) ([]int, error) {
	if q.chooser == nil && len(q.required) > 0 {
		return q.withRequired(F), nil
	}
	if q.chooser == nil {
		if !q.preferBusy || t <= p.origin {
			return F.FirstN(q.nodeList(q.n), q.n), nil
		}
		// One pass: busy nodes in index order, and the lowest idle ones
		// aside to fill up with.
		out := q.nodeList(q.n)
		sc := p.scratch()
		idle := sc.idle[:0]
		for i := F.Next(0); i >= 0 && len(out) < q.n; i = F.Next(i + 1) {
			if !p.usableAtOrigin(i, q) {
				out = append(out, i)
			} else if len(idle) < q.n {
				idle = append(idle, i)
			}
		}
		// Merge the two ascending runs, from the back.
		b, k := len(out), q.n-len(out)
		out = out[:q.n]
		for i, j, w := b-1, k-1, q.n-1; j >= 0; w-- {
			if i >= 0 && out[i] > idle[j] {
				out[w] = out[i]
				i--
			} else {
				out[w] = idle[j]
				j--
			}
		}
		sc.idle = idle
		return out, nil
	}
	nodes := q.chooser(F, q.n)
	if nodes == nil {
		return nil, nil
	}
	if len(nodes) != q.n {
		return nil, fmt.Errorf("%w: chooser returned %d nodes, want %d", ErrInvalidRequest, len(nodes), q.n)
	}
	s := slices.Clone(nodes)
	slices.Sort(s)
	for x, i := range s {
		if !F.Has(i) || (x > 0 && s[x-1] == i) {
			return nil, fmt.Errorf("%w: chooser returned node %d, not a distinct candidate", ErrInvalidRequest, i)
		}
	}
	return append(q.nodeList(q.n), nodes...), nil
}

// runLength returns how long, from t, every node in nodes can keep holding
// the request, capped at limit seconds.
func (p *Profile) runLength(q *query, nodes []int, t, limit int64) int64 {
	end := t + limit
	for _, i := range nodes {
		x := int64(0)
		if q.hasSpread() {
			x = p.holdsUntil(q, i, p.useOn(q, i), t, end) // its share too
		} else {
			x = p.violation(i, t, end, q)
		}
		if x < end {
			end = x
		}
	}
	return end - t
}

// ---- a small binary heap of (u, node), min on u then node ----

func hless(x, y hitem) bool { return x.u < y.u || (x.u == y.u && x.node < y.node) }

func heapPush(h *[]hitem, it hitem) {
	s := append(*h, it)
	j := len(s) - 1
	for j > 0 {
		par := (j - 1) / 2
		if !hless(s[j], s[par]) {
			break
		}
		s[j], s[par] = s[par], s[j]
		j = par
	}
	*h = s
}

func heapPop(h *[]hitem) hitem {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	j := 0
	for {
		l := 2*j + 1
		if l >= len(s) {
			break
		}
		m := l
		if r := l + 1; r < len(s) && hless(s[r], s[l]) {
			m = r
		}
		if !hless(s[m], s[j]) {
			break
		}
		s[j], s[m] = s[m], s[j]
		j = m
	}
	*h = s
	return top
}

// usableAtOrigin reports whether node i could take the request at the
// profile's origin.
func (p *Profile) usableAtOrigin(i int, q *query) bool {
	a := p.a
	f := p.tls[i].free[:a]
	if gx := q.ghostAt(i); gx >= 0 && q.ghost.s <= p.origin {
		f = q.ghost.freeWith(f, gx)
	}
	return q.takes(f, p.caps[i*a:(i+1)*a])
}
