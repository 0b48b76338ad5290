package policy

import (
	"cmp"
	"slices"
	"time"

	"github.com/sluicehq/sluice/topology"
)

// PreemptAction is what happens to a preempted job.
type PreemptAction uint8

// Preemption actions.
const (
	// ActionNone: not preempted.
	ActionNone PreemptAction = iota
	// ActionCancel: the job is signalled, then killed after its grace time.
	ActionCancel
	// ActionRequeue: the job is signalled, killed after its grace time and
	// put back in the queue.
	ActionRequeue
	// ActionSuspend: the job is suspended; its memory and GRES stay
	// allocated, only its CPUs are freed, and no work is lost.
	ActionSuspend
)

var actionNames = [...]string{"NONE", "CANCEL", "REQUEUE", "SUSPEND"}

// String returns the action's Slurm name.
func (a PreemptAction) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "PreemptAction(?)"
}

// PreemptOrder is how PreemptVictims chooses victims (Config.PreemptOrder).
type PreemptOrder uint8

// Victim orders.
const (
	// PreemptOrderLeastLostWork (the zero value, Sluice's default): the
	// victims whose preemption loses the least work — GPU-seconds, then
	// CPU-seconds since each one's last checkpoint — found by clearing the
	// cheapest nodes and by taking the cheapest jobs, each made minimal;
	// Slurm's order only breaks ties. A deliberate deviation from Slurm,
	// whose order ignores the work lost.
	PreemptOrderLeastLostWork PreemptOrder = iota
	// PreemptOrderSlurm: Slurm's order (preempt/qos; preempt/partition_prio
	// alike with the partition's PriorityTier): the candidates sorted by
	// the victim's QOS priority, lowest first, then by node count, fewest
	// first (where Slurm leaves ties unordered: the youngest, then the
	// lowest job ID), and taken in that order until the preemptor fits.
	// As Slurm then keeps only the victims on the nodes it allocates, every
	// victim whose removal still lets the preemptor fit is dropped, the
	// last taken first. The work lost is reported, not minimised. The
	// prefix can be long (a 64-node preemptor among single-GPU jobs takes
	// thousands), and making it minimal costs O(kept × log prefix) calls
	// of the placement callback on sets that long.
	PreemptOrderSlurm
)

var preemptOrderNames = [...]string{"least-lost-work", "slurm"}

// String names the order ("least-lost-work", "slurm").
func (o PreemptOrder) String() string { return enumString(o, preemptOrderNames[:], "PreemptOrder") }

// Candidate is a running job that might be preempted, with what victim
// choice needs to count the work its preemption would destroy.
type Candidate struct {
	// Job identifies it.
	Job JobID
	// Subject is its resolved partition and QOS.
	Subject Subject
	// Priority is its job priority (WITHIN and PRIORITY compare it).
	Priority uint32
	// Nodes are the node indices it runs on.
	Nodes []int
	// GPUs and CPUs are what it holds over all its nodes.
	GPUs, CPUs int64
	// Start is when it started running.
	Start time.Time
	// LastCheckpoint is when it last reported a checkpoint (zero: never).
	LastCheckpoint time.Time
	// CheckpointInterval is the checkpoint period it declared (zero:
	// none): it is assumed to checkpoint at Start + k × interval.
	CheckpointInterval time.Duration
	// Requeue reports that the job may be requeued (--requeue); under
	// REQUEUE mode other jobs are cancelled.
	Requeue bool
}

// lastCheckpoint returns the last checkpoint at or before at.
func (c *Candidate) lastCheckpoint(at time.Time) time.Time {
	last := c.Start
	if !c.LastCheckpoint.IsZero() && c.LastCheckpoint.After(last) && !c.LastCheckpoint.After(at) {
		last = c.LastCheckpoint
	}
	if iv := c.CheckpointInterval; iv > 0 && at.After(c.Start) {
		k := at.Sub(c.Start) / iv
		if implied := c.Start.Add(k * iv); implied.After(last) {
			last = implied
		}
	}
	return last
}

// LostWork returns the GPU-seconds and CPU-seconds c would lose if killed
// at at: its GPUs (CPUs) × the time since its last checkpoint (reported
// or implied by its interval), or since its start without one.
func (c *Candidate) LostWork(at time.Time) (gpuSeconds, cpuSeconds float64) {
	lost := at.Sub(c.lastCheckpoint(at)).Seconds()
	if lost < 0 {
		lost = 0
	}
	return float64(c.GPUs) * lost, float64(c.CPUs) * lost
}

// Preemptor is the pending job that wants to preempt.
type Preemptor struct {
	// Subject is its resolved partition and QOS.
	Subject Subject
	// Priority is its job priority.
	Priority uint32
	// Nodes are the nodes that could host it (its partition's usable
	// nodes, reservations applied); candidates on no such node are not
	// considered. A zero NodeSet means every node.
	Nodes topology.NodeSet
}

// Victim is a chosen (or possible) preemption.
type Victim struct {
	// Index is the candidate's position in the slice given to
	// PreemptVictims.
	Index int
	// Job is the candidate's job.
	Job JobID
	// Action is what happens to it.
	Action PreemptAction
	// Grace is how long it is signalled before it is killed (CANCEL and
	// REQUEUE); KillAt = now + Grace is when its resources are free.
	Grace  time.Duration
	KillAt time.Time
	// LostGPUSeconds and LostCPUSeconds are the work lost at KillAt since
	// its last checkpoint (zero for SUSPEND: the job resumes later).
	LostGPUSeconds, LostCPUSeconds float64
}

// vic is the pointer-free working form of a Victim (cheap to sort and
// move), with Slurm's tie-break keys.
type vic struct {
	idx    int32
	action PreemptAction
	nodes  int32
	job    JobID
	grace  time.Duration
	gpu    float64
	cpu    float64
	tier   int64 // QOS priority (preempt/qos) or partition tier (partition_prio)
	start  int64
}

func (v *vic) victim(now time.Time) Victim {
	return Victim{Index: int(v.idx), Job: v.job, Action: v.action, Grace: v.grace, KillAt: now.Add(v.grace),
		LostGPUSeconds: v.gpu, LostCPUSeconds: v.cpu}
}

// PreemptPlan is the set of victims that lets a preemptor run.
type PreemptPlan struct {
	// Victims are the jobs to preempt, cheapest first (in Slurm's order
	// under PreemptOrderSlurm).
	Victims []Victim
	// LostGPUSeconds and LostCPUSeconds total the victims' lost work
	// (record them in the ledger and the simulator's metrics).
	LostGPUSeconds, LostCPUSeconds float64
	// ReadyAt is when every victim's resources are free (the latest
	// KillAt); the preemptor starts then.
	ReadyAt time.Time
}

// Preemptable reports whether pre may preempt c at now, and how: the
// PreemptType rule (a strictly higher partition tier; or the victim's QOS
// in the preemptor QOS's Preempt list, or the same QOS with WITHIN and a
// higher job priority; PRIORITY also requires a higher job priority), the
// victim's mode (not OFF), and its PreemptExemptTime (a job that has run
// less is exempt). It does not look at nodes.
func (p *Policy) Preemptable(now time.Time, pre *Preemptor, c *Candidate) (Victim, bool) {
	v, ok := p.preemptable(now, pre, c)
	if !ok {
		return Victim{}, false
	}
	return v.victim(now), true
}

func (p *Policy) preemptable(now time.Time, pre *Preemptor, c *Candidate) (vic, bool) {
	ps, vs := pre.Subject.pl, c.Subject.pl
	if ps == nil || vs == nil || ps.owner != p || vs.owner != p {
		return vic{}, false
	}
	cl := p.cfg.PreemptMode
	var mode PreemptMode
	var grace time.Duration
	var tier int64
	switch p.cfg.PreemptType {
	case PreemptQOS:
		pq, vq := ps.jobQOS, vs.jobQOS
		if pq < 0 || vq < 0 {
			return vic{}, false
		}
		pm := p.qos[pq].PreemptMode
		switch {
		case pq == vq:
			if !(pm.Has(PreemptWithin) || cl.Has(PreemptWithin)) || pre.Priority <= c.Priority {
				return vic{}, false
			}
		case !p.preempts[pq][vq]:
			return vic{}, false
		}
		if (pm.Has(PreemptPriority) || cl.Has(PreemptPriority)) && pre.Priority <= c.Priority {
			return vic{}, false
		}
		mode = p.qos[vq].PreemptMode.Base()
		grace = p.qos[vq].GraceTime
		tier = int64(p.qos[vq].Priority)
	case PreemptPartitionPrio:
		if ps.part < 0 || vs.part < 0 {
			return vic{}, false
		}
		pp, vp := &p.parts[ps.part], &p.parts[vs.part]
		if pp.Tier() <= vp.Tier() {
			return vic{}, false
		}
		if cl.Has(PreemptPriority) && pre.Priority <= c.Priority {
			return vic{}, false
		}
		mode = vp.PreemptMode.Base()
		grace = vp.GraceTime
		tier = int64(vp.Tier())
	default:
		return vic{}, false
	}
	if mode == PreemptModeCluster {
		mode = cl.Base()
	}
	if vs.exempt > 0 && now.Sub(c.Start) < vs.exempt {
		return vic{}, false
	}
	v := vic{job: c.Job, tier: tier, nodes: int32(len(c.Nodes)), start: c.Start.UnixNano()}
	switch mode {
	case PreemptCancel:
		v.action = ActionCancel
	case PreemptRequeue:
		v.action = ActionCancel
		if c.Requeue {
			v.action = ActionRequeue
		}
	case PreemptSuspend:
		v.action = ActionSuspend
		return v, true
	default:
		return vic{}, false
	}
	v.grace = grace
	v.gpu, v.cpu = c.LostWork(now.Add(grace))
	return v, true
}

// cmpVictim orders victims cheapest first: lost GPU-seconds, lost
// CPU-seconds, then Slurm's order (cmpSlurm).
func cmpVictim(a, b *vic) int {
	if c := cmp.Compare(a.gpu, b.gpu); c != 0 {
		return c
	}
	if c := cmp.Compare(a.cpu, b.cpu); c != 0 {
		return c
	}
	return cmpSlurm(a, b)
}

// cmpSlurm is Slurm's victim order: lowest QOS priority or partition
// tier, fewest nodes, then (ties Slurm leaves open) the youngest, then the
// lowest job ID.
func cmpSlurm(a, b *vic) int {
	if c := cmp.Compare(a.tier, b.tier); c != 0 {
		return c
	}
	if c := cmp.Compare(a.nodes, b.nodes); c != 0 {
		return c
	}
	if c := cmp.Compare(b.start, a.start); c != 0 {
		return c
	}
	return cmp.Compare(a.job, b.job)
}

func cmpVic(a, b vic) int { return cmpVictim(&a, &b) }

func cmpSlurmVic(a, b vic) int { return cmpSlurm(&a, &b) }

// MaxNodeIndex bounds the node indices PreemptVictims accepts in
// Candidate.Nodes when Preemptor.Nodes is unset; larger (or negative)
// indices are ignored.
const MaxNodeIndex = 1 << 24

// maxJobOrder bounds the cheapest-jobs-first attempt.
const maxJobOrder = 256

// PreemptVictims chooses which candidates to preempt so that pre fits:
// by default minimising the work lost, or in Slurm's order under
// Config.PreemptOrder PreemptOrderSlurm. fits reports whether the preemptor can be
// placed once the given victims are gone (the scheduler checks placement,
// topology included, counting SUSPEND victims as freeing CPUs only); it
// must be monotone (more victims never hurt) and must not keep the slice.
//
// Only candidates Preemptable at now that run on at least one node of
// pre.Nodes are considered. Under PreemptOrderSlurm they are sorted in
// Slurm's order, cut to the shortest fitting prefix and made minimal
// (dropping the last taken first); the victims come in that order. By
// default two greedy orders are tried — cheapest jobs
// first, and the nodes whose preemptable jobs cost least to clear first
// (the one that works for multi-node preemptors) — each cut to the
// shortest fitting prefix by galloping search and then made minimal by
// dropping every victim, most expensive first, whose removal still fits.
// The cheaper plan (lost GPU-seconds, then CPU-seconds, then fewer
// victims) wins. The result never holds a victim that could be removed,
// nor an exempt or unpreemptable job. ok is false when no set of
// candidates makes pre fit; a plan with no victims means it fits already.
//
// Cost: one pass over the candidates, a partial selection of the 256
// cheapest, a heap over the allowed nodes drawn lazily, and O(log n +
// victims) calls of fits.
func (p *Policy) PreemptVictims(now time.Time, pre Preemptor, cands []Candidate, fits func([]Victim) bool) (plan PreemptPlan, ok bool) {
	s := &victimSearch{fits: fits, now: now}
	if fits(nil) {
		return PreemptPlan{ReadyAt: now}, true
	}
	allNodes := pre.Nodes.Len() == 0
	// Size per-node tables: by the allowed set, or by the largest node
	// index seen (bounded by MaxNodeIndex; larger indices are ignored).
	nn := pre.Nodes.Len()
	if allNodes {
		for i := range cands {
			for _, n := range cands[i].Nodes {
				if n < MaxNodeIndex {
					nn = max(nn, n+1)
				}
			}
		}
	}
	// Filter to preemptable candidates on at least one allowed node; mark
	// allowed nodes that host a job which cannot be preempted.
	elig := make([]vic, 0, len(cands))
	blocked := make([]bool, nn)
	for i := range cands {
		c := &cands[i]
		on := false
		for _, n := range c.Nodes {
			if on = n >= 0 && n < nn && (allNodes || pre.Nodes.Has(n)); on {
				break
			}
		}
		if !on {
			continue
		}
		v, can := p.preemptable(now, &pre, c)
		if !can {
			for _, n := range c.Nodes {
				if n >= 0 && n < nn {
					blocked[n] = true
				}
			}
			continue
		}
		v.idx = int32(i)
		elig = append(elig, v)
	}
	if len(elig) == 0 {
		return PreemptPlan{}, false
	}
	order := cmpVic
	var best []vic
	if p.cfg.PreemptOrder == PreemptOrderSlurm {
		order = cmpSlurmVic
		slices.SortFunc(elig, order)
		best = s.minimal(s.shortestPrefix(fixedOrder(elig)), order)
	} else {
		best = s.leastLostWork(elig, cands, pre.Nodes, allNodes, blocked)
	}
	if best == nil {
		return PreemptPlan{}, false
	}
	slices.SortFunc(best, order)
	plan = PreemptPlan{Victims: make([]Victim, len(best)), ReadyAt: now}
	for i := range best {
		v := best[i].victim(now)
		plan.Victims[i] = v
		plan.LostGPUSeconds += v.LostGPUSeconds
		plan.LostCPUSeconds += v.LostCPUSeconds
		if v.KillAt.After(plan.ReadyAt) {
			plan.ReadyAt = v.KillAt
		}
	}
	return plan, true
}

// leastLostWork is the default victim choice: the cheaper of the
// node-clearing and the cheapest-jobs-first plans, or nil when none fits.
func (s *victimSearch) leastLostWork(elig []vic, cands []Candidate, allowed topology.NodeSet, allNodes bool, blocked []bool) []vic {
	// Order 2 first: nodes by the cost of clearing them. Its full list is
	// every eligible victim: if no prefix fits, nothing does.
	best := s.minimal(s.shortestPrefix(newNodeOrder(elig, cands, allowed, allNodes, blocked)), cmpVic)
	if best == nil {
		return nil
	}
	// Order 1: cheapest jobs first (a bounded prefix).
	cheap := cheapest(elig, maxJobOrder)
	if got := s.minimal(s.shortestPrefix(fixedOrder(cheap)), cmpVic); got != nil && cmpPlans(got, best) < 0 {
		best = got
	}
	return best
}

func cmpPlans(a, b []vic) int {
	var ag, ac, bg, bc float64
	for i := range a {
		ag, ac = ag+a[i].gpu, ac+a[i].cpu
	}
	for i := range b {
		bg, bc = bg+b[i].gpu, bc+b[i].cpu
	}
	if c := cmp.Compare(ag, bg); c != 0 {
		return c
	}
	if c := cmp.Compare(ac, bc); c != 0 {
		return c
	}
	if c := cmp.Compare(len(a), len(b)); c != 0 {
		return c
	}
	// Same cost and size: Slurm's order decides (lower QOS priority or
	// tier, fewer nodes, younger …), victim by victim, cheapest first.
	x, y := slices.Clone(a), slices.Clone(b)
	slices.SortFunc(x, cmpVic)
	slices.SortFunc(y, cmpVic)
	for i := range x {
		if c := cmpVictim(&x[i], &y[i]); c != 0 {
			return c
		}
	}
	return 0
}

// cheapest returns the k cheapest victims, sorted, without sorting all.
func cheapest(vs []vic, k int) []vic {
	if len(vs) <= k {
		out := slices.Clone(vs)
		slices.SortFunc(out, cmpVic)
		return out
	}
	// Max-heap of the k cheapest seen so far.
	h := make([]vic, 0, k)
	worse := func(i, j int) bool { return cmpVictim(&h[i], &h[j]) > 0 } // max at root
	for i := range vs {
		switch {
		case len(h) < k:
			h = append(h, vs[i])
			for j := len(h) - 1; j > 0; {
				par := (j - 1) / 2
				if !worse(j, par) {
					break
				}
				h[j], h[par] = h[par], h[j]
				j = par
			}
		case cmpVictim(&vs[i], &h[0]) < 0:
			h[0] = vs[i]
			for j := 0; ; {
				l, m := 2*j+1, j
				if l < len(h) && worse(l, m) {
					m = l
				}
				if r := l + 1; r < len(h) && worse(r, m) {
					m = r
				}
				if m == j {
					break
				}
				h[j], h[m] = h[m], h[j]
				j = m
			}
		}
	}
	slices.SortFunc(h, cmpVic)
	return h
}

// prefixSource yields a victim order cut at allowed prefix lengths
// (stops), possibly computed lazily.
type prefixSource interface {
	// stop returns the i-th allowed prefix length, false past the end.
	stop(i int) (int, bool)
	// order returns the order computed so far (at least up to the stops
	// returned).
	order() []vic
}

// fixedOrder is a fully computed order where every prefix is allowed.
type fixedOrder []vic

func (f fixedOrder) stop(i int) (int, bool) { return i + 1, i < len(f) }
func (f fixedOrder) order() []vic           { return f }

type nodeCost struct {
	gpu, cpu float64
	node     int32
	first    int32 // head of its victim list in links
	blocked  bool
}

func (a *nodeCost) less(b *nodeCost) bool {
	if a.blocked != b.blocked {
		return !a.blocked
	}
	if a.gpu != b.gpu {
		return a.gpu < b.gpu
	}
	if a.cpu != b.cpu {
		return a.cpu < b.cpu
	}
	return a.node < b.node
}

type link struct{ v, next int32 }

// nodeOrder lists eligible victims node by node, the nodes sorted by
// (hosts an unpreemptable job, lost GPU-seconds, lost CPU-seconds to clear
// them, index); a victim appears at its first node, and each node's
// victims cheapest first. Nodes are drawn from a heap only as far as the
// search asks, so a 64-node preemptor on a 10,000-node cluster orders a
// few hundred nodes, not all.
type nodeOrder struct {
	elig  []vic
	costs []nodeCost // min-heap of the nodes not drawn yet
	links []link
	seen  []bool
	ord   []vic
	stops []int
}

func newNodeOrder(elig []vic, cands []Candidate, allowed topology.NodeSet, all bool, blocked []bool) *nodeOrder {
	o := &nodeOrder{elig: elig, seen: make([]bool, len(elig))}
	idx := make([]int32, len(blocked)) // node → position in costs + 1
	o.costs = make([]nodeCost, 0, len(blocked))
	o.links = make([]link, 0, len(elig)+len(elig)/2)
	for vi := range elig {
		v := &elig[vi]
		for _, n := range cands[v.idx].Nodes {
			if n < 0 || n >= len(blocked) || (!all && !allowed.Has(n)) {
				continue
			}
			k := int(idx[n]) - 1
			if k < 0 {
				k = len(o.costs)
				idx[n] = int32(k + 1)
				o.costs = append(o.costs, nodeCost{node: int32(n), blocked: blocked[n], first: -1})
			}
			c := &o.costs[k]
			c.gpu += v.gpu
			c.cpu += v.cpu
			o.links = append(o.links, link{int32(vi), c.first})
			c.first = int32(len(o.links) - 1)
		}
	}
	for i := len(o.costs)/2 - 1; i >= 0; i-- {
		o.down(i)
	}
	return o
}

func (o *nodeOrder) down(i int) {
	h := o.costs
	for {
		l, m := 2*i+1, i
		if l < len(h) && h[l].less(&h[m]) {
			m = l
		}
		if r := l + 1; r < len(h) && h[r].less(&h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (o *nodeOrder) stop(i int) (int, bool) {
	for len(o.stops) <= i && len(o.costs) > 0 {
		top := o.costs[0]
		last := len(o.costs) - 1
		o.costs[0] = o.costs[last]
		o.costs = o.costs[:last]
		o.down(0)
		from := len(o.ord)
		for l := top.first; l >= 0; l = o.links[l].next {
			if vi := o.links[l].v; !o.seen[vi] {
				o.seen[vi] = true
				o.ord = append(o.ord, o.elig[vi])
			}
		}
		if len(o.ord) == from {
			continue
		}
		slices.SortFunc(o.ord[from:], cmpVic)
		o.stops = append(o.stops, len(o.ord))
	}
	if i < len(o.stops) {
		return o.stops[i], true
	}
	return 0, false
}

func (o *nodeOrder) order() []vic { return o.ord }

type victimSearch struct {
	fits func([]Victim) bool
	now  time.Time
	buf  []Victim
}

// ok calls fits on vs.
func (s *victimSearch) ok(vs []vic) bool {
	s.buf = s.buf[:0]
	for i := range vs {
		s.buf = append(s.buf, vs[i].victim(s.now))
	}
	return s.fits(s.buf)
}

// shortestPrefix returns the shortest allowed prefix of src's order that
// fits, by galloping then binary search over the stops; nil when not even
// the whole order fits.
func (s *victimSearch) shortestPrefix(src prefixSource) []vic {
	lo, hi := -1, -1 // stop lo does not fit (-1: none tried); stop hi fits
	for step := 1; ; step *= 2 {
		i := lo + step
		n, ok := src.stop(i)
		if !ok {
			// Past the end: try the whole order.
			last := i - 1
			for ; last > lo; last-- {
				if _, ok := src.stop(last); ok {
					break
				}
			}
			if last <= lo {
				return nil
			}
			n, _ = src.stop(last)
			if !s.ok(src.order()[:n]) {
				return nil
			}
			hi = last
			break
		}
		if s.ok(src.order()[:n]) {
			hi = i
			break
		}
		lo = i
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		n, _ := src.stop(mid)
		if s.ok(src.order()[:n]) {
			hi = mid
		} else {
			lo = mid
		}
	}
	n, _ := src.stop(hi)
	return slices.Clone(src.order()[:n])
}

// minimal drops, last in order first (the most expensive, or the last
// Slurm would take), every victim whose removal keeps the set fitting.
// With a monotone fits the result is minimal: removing any one victim
// makes the preemptor not fit. Victims are tried in runs that double
// while whole runs can go and halve when one cannot, which drops exactly
// what trying them one by one would (a run goes only if each of its
// victims would, fits being monotone) in O(kept × log n) calls of fits
// rather than n — what a long prefix in Slurm's order needs.
func (s *victimSearch) minimal(vs []vic, order func(a, b vic) int) []vic {
	if vs == nil {
		return nil
	}
	slices.SortFunc(vs, func(a, b vic) int { return order(b, a) })
	rest := make([]vic, 0, len(vs))
	run := 1
	for i := 0; i < len(vs); {
		n := min(run, len(vs)-i)
		rest = append(append(rest[:0], vs[:i]...), vs[i+n:]...)
		switch {
		case s.ok(rest):
			vs = slices.Delete(vs, i, i+n)
			run *= 2
		case n > 1:
			run = n / 2
		default:
			i++
		}
	}
	return vs
}
