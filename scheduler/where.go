package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/feature"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// Where a job may run: JobSpec.Exclude (-x), NodeList (-w), Constraint
// (-C) and Contiguous (--contiguous).
//
// A constraint's per-node part (a filter, and the union of a matching
// OR's alternatives) and the excluded nodes narrow the job's shape: its
// capable nodes, which placement, the backfill plan, preemption and
// Explain all start from. What is not per node — every required node,
// one alternative for all nodes, counted groups, consecutive nodes — is
// the job's where request, applied by one chooser (chooseWhere) around
// the choice the job would otherwise get (least spread under a topology,
// lightest nodes first by Weight): the main pass calls it on the nodes
// that fit now, the backfill plan on the nodes that fit at each time it
// tries. Node features are changed with UpdateNode, an event: shapes are
// re-judged and a job whose constraint no capable node can meet any more
// pends with BadConstraints.

// whereReq is the non-per-node part of a job's request (nil on a job
// without one).
type whereReq struct {
	// required holds the indices of JobSpec.NodeList, ascending.
	required []int
	// cons is the parsed constraint when it is a matching OR or counts
	// (a filter is all in the shape).
	cons feature.Constraint
	// contiguous is JobSpec.Contiguous.
	contiguous bool
	// key names the request for the backfill planner's cache.
	key string
	// sets caches the constraint's node sets (Scheduler.setsOf) for
	// the node generation setsGen.
	sets    *whereSets
	setsGen uint64
}

// parseConstraint parses JobSpec.Constraint, wrapped as an invalid job.
func parseConstraint(text string) (feature.Constraint, error) {
	c, err := feature.Parse(text)
	if err != nil {
		return feature.Constraint{}, fmt.Errorf("%w: Constraint: %w", ErrInvalidJob, err)
	}
	return c, nil
}

// resolveHostlists expands hostlist expressions to ascending node
// indices, with duplicates removed; an unknown name or malformed
// expression is an error naming the field.
func (s *Scheduler) resolveHostlists(field string, exprs []string) ([]int, error) {
	var out []int
	for _, x := range exprs {
		names, err := topology.ExpandHostlist(x)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidJob, field, err)
		}
		for _, nm := range names {
			i, ok := s.nodeByName[nm]
			if !ok || s.nodes[i].removed {
				return nil, fmt.Errorf("%w: %s: %w %q", ErrInvalidJob, field, ErrUnknownNode, nm)
			}
			out = append(out, i)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// newWhere builds a job's where request from its spec: nil when it has
// none. excluded are the job's excluded nodes.
func (s *Scheduler) newWhere(spec JobSpec, cons feature.Constraint, excluded []int) (*whereReq, error) {
	req, err := s.resolveHostlists("NodeList", []string{spec.NodeList})
	if err != nil {
		return nil, err
	}
	for _, i := range req {
		if _, x := slices.BinarySearch(excluded, i); x {
			return nil, fmt.Errorf("%w: node %q is both in NodeList and Exclude", ErrInvalidJob, s.nodes[i].cfg.Name)
		}
	}
	return makeWhere(req, cons, spec.Contiguous), nil
}

// makeWhere builds a where request from its parts; nil when there is
// nothing beyond the job's shape.
func makeWhere(required []int, cons feature.Constraint, contiguous bool) *whereReq {
	w := &whereReq{required: required, contiguous: contiguous}
	if k := cons.Kind(); k == feature.KindMatchingOR || k == feature.KindCounts {
		w.cons = cons
	}
	if len(w.required) == 0 && w.cons.IsZero() && !w.contiguous {
		return nil
	}
	w.key = whereKey(w)
	return w
}

// minNodes is the fewest nodes the request implies: every required node,
// the sum of the constraint's counts.
func (w *whereReq) minNodes() int {
	if w == nil {
		return 0
	}
	return max(len(w.required), w.cons.Nodes())
}

// nodeChoice picks k nodes of a set (nil when it cannot): the choice a
// job gets without a where request.
type nodeChoice = backfill.NodeChooser

// baseChoice is job j's choice of nodes without its where request: under
// a topology the least-spread choice meeting its topology constraints
// (relaxed once --switches' max-wait passed), lightest nodes first;
// without one the lightest nodes by Weight, then by index.
func (s *Scheduler) baseChoice(j *job, relaxed bool) nodeChoice {
	if s.graph == nil {
		return s.chooseByWeight
	}
	c := j.constraints()
	return func(cand topology.NodeSet, n int) []int {
		p, ok := s.selectByWeight(cand, n, c)
		if !ok || (!p.Met && !relaxed) {
			return nil
		}
		return p.Nodes.AppendTo(make([]int, 0, n))
	}
}

// selectByWeight is the topology's least-spread choice honouring node
// Weight as Slurm does: the lightest nodes are used first, heavier ones
// only when the lighter cannot make a placement meeting the job's
// constraints (tried tier by tier, each adding the next weight).
func (s *Scheduler) selectByWeight(cand topology.NodeSet, n int, c topology.Constraints) (topology.Placement, bool) {
	if s.tiers == nil {
		p, err := s.graph.Select(cand, n, c)
		return p, err == nil
	}
	sub := topology.NewNodeSet(cand.Len())
	var best topology.Placement
	found := false
	for _, t := range s.tiers {
		for i := cand.Next(0); i >= 0; i = cand.Next(i + 1) {
			if t.Has(i) {
				sub.Add(i)
			}
		}
		if sub.Count() < n {
			continue
		}
		p, err := s.graph.Select(sub, n, c)
		if err != nil {
			continue
		}
		if p.Met {
			return p, true
		}
		if !found {
			best, found = p, true // the lightest placement, should none meet the constraints
		}
	}
	return best, found
}

// whereChooser returns the chooser of a job with a where request (nil
// for a job without one), with its cache key.
func (s *Scheduler) whereChooser(j *job, base nodeChoice, baseKey string) (backfill.NodeChooser, string) {
	w := j.where
	if w == nil {
		return nil, ""
	}
	// Made once per job and base key (a chooser of the same key chooses
	// the same, the planner's contract): the plan asks for it every
	// cycle. A new key gets a new chooser, so that one a kept plan holds
	// keeps its base.
	if b := j.whereBF; b != nil && b.w == w && b.baseKey == baseKey {
		b.base = base
		return b.fn, b.key
	}
	b := &whereBF{w: w, base: base, baseKey: baseKey, key: w.key + " " + baseKey}
	b.fn = func(cand topology.NodeSet, n int) []int { return s.chooseWhere(j, cand, n, b.base) }
	j.whereBF = b
	return b.fn, b.key
}

// whereBF is a job's where chooser for the backfill plan around the base
// choice of key baseKey, with its cache key.
type whereBF struct {
	w       *whereReq
	base    nodeChoice
	baseKey string
	key     string
	fn      backfill.NodeChooser
}

// chooseWhere picks n nodes of cand meeting j's where request, each
// choice made by base; nil when cand cannot meet it. The nodes are
// ascending, in a new slice; cand is not changed.
func (s *Scheduler) chooseWhere(j *job, cand topology.NodeSet, n int, base nodeChoice) []int {
	w := j.where
	for _, i := range w.required {
		if !cand.Has(i) {
			return nil
		}
	}
	ws := s.setsOf(w)
	if w.cons.Kind() != feature.KindMatchingOR {
		return s.chooseIn(j, ws, cand, n, base, nil)
	}
	// Matching OR: all nodes with the same alternative, the first (in
	// the order written) that gives a choice.
	sub := scratchSet(&s.whereC.alt, cand.Len())
	for _, a := range ws.alts {
		sub.CopyFrom(cand)
		sub.IntersectWith(a)
		if out := s.chooseIn(j, ws, sub, n, base, nil); out != nil {
			return out
		}
	}
	return nil
}

// chooseIn picks n nodes of cand: the required ones, then for each
// counted group the nodes it still needs, then the rest, each choice made
// by base (nil: the lowest indices, as anyChoice, read off in one walk);
// contiguous requests take the lightest window of n consecutive nodes that
// holds them all (and, with h, whose rooms hold the tasks). ws is the
// constraint's node sets; the result is a new slice.
func (s *Scheduler) chooseIn(j *job, ws *whereSets, cand topology.NodeSet, n int, base nodeChoice, h *taskHold) []int {
	w := j.where
	for _, i := range w.required {
		if !cand.Has(i) {
			return nil
		}
	}
	if cand.Count() < n {
		return nil
	}
	if w.contiguous {
		return s.chooseContiguous(j, ws, cand, n, h)
	}
	c := &s.whereC
	out := append(c.out[:0], w.required...)
	defer func() { c.out = out[:0] }()
	// Required nodes count toward the first group they satisfy.
	need, _ := w.groupNeed(ws, c.need)
	c.need = need
	rest := scratchSet(&c.rest, cand.Len()) // the candidates not taken
	rest.CopyFrom(cand)
	for _, i := range out {
		rest.Remove(i)
	}
	var sub topology.NodeSet // with base: scratch
	if base != nil {
		sub = scratchSet(&c.sub, cand.Len())
	}
	// take adds k candidates not taken yet, members of g (any node when g
	// is the empty set), to out; false when there are too few.
	take := func(g topology.NodeSet, k int) bool {
		if base == nil {
			// The lowest indices (anyChoice), read off rest in one
			// ascending walk instead of set operations over every node.
			for i := rest.Next(0); i >= 0 && k > 0; i = rest.Next(i + 1) {
				if g.Len() == 0 || g.Has(i) {
					out = append(out, i)
					rest.Remove(i)
					k--
				}
			}
			return k == 0
		}
		from := rest
		if g.Len() > 0 {
			sub.CopyFrom(rest)
			sub.IntersectWith(g)
			from = sub
		}
		pick := base(from, k)
		if pick == nil {
			return false
		}
		for _, i := range pick {
			rest.Remove(i)
		}
		out = append(out, pick...)
		return true
	}
	for k := range need {
		if need[k] > 0 && !take(ws.groups[k], need[k]) {
			return nil
		}
	}
	if k := n - len(out); k < 0 || k > 0 && !take(topology.NodeSet{}, k) {
		return nil
	}
	slices.Sort(out)
	return slices.Clone(out)
}

// chooseContiguous picks the window of n consecutive node indices, all
// in cand, holding every required node and meeting the counted groups,
// with the least total Weight (then the lowest first index); with h, only
// a window whose rooms hold the tasks.
func (s *Scheduler) chooseContiguous(j *job, ws *whereSets, cand topology.NodeSet, n int, h *taskHold) []int {
	w := j.where
	bestAt, bestW := -1, int64(0)
	run := 0
	var sum, room int64 // the Weight and task room of the last min(run, n) nodes
	for i := 0; i < cand.Len(); i++ {
		if !cand.Has(i) {
			run, sum, room = 0, 0, 0
			continue
		}
		sum += s.nodes[i].cfg.weight()
		if h != nil {
			room += h.room[i]
		}
		if run++; run > n {
			sum -= s.nodes[i-n].cfg.weight()
			if h != nil {
				room -= h.room[i-n]
			}
		}
		if run < n {
			continue
		}
		if h != nil && h.total > 0 && room < h.total {
			continue
		}
		lo := i - n + 1
		if len(w.required) > 0 && (w.required[0] < lo || w.required[len(w.required)-1] > i) {
			continue
		}
		if !s.windowMeetsCounts(w, ws, lo, i) {
			continue
		}
		if bestAt < 0 || sum < bestW {
			bestAt, bestW = lo, sum
		}
	}
	if bestAt < 0 {
		return nil
	}
	out := make([]int, n)
	for k := range out {
		out[k] = bestAt + k
	}
	return out
}

// windowMeetsCounts reports whether the nodes lo..hi can be assigned to
// the counted groups (each node to one group, greedily in order).
func (s *Scheduler) windowMeetsCounts(w *whereReq, ws *whereSets, lo, hi int) bool {
	if len(w.cons.Groups()) == 0 {
		return true
	}
	need := w.groupCounts(s.whereC.need)
	s.whereC.need = need
	for i := lo; i <= hi; i++ {
		ws.countToward(need, i)
	}
	for _, x := range need {
		if x > 0 {
			return false
		}
	}
	return true
}

// whereFeasible reports whether job j's where request could ever be met
// on its capable nodes (ignoring what is in use or down): Submit refuses
// a job for which it is false, a pending one waits with BadConstraints.
func (s *Scheduler) whereFeasible(j *job) bool {
	if j.where == nil {
		return true
	}
	if j.tasks != nil {
		return s.whereTasks(j, j.shape.capable, s.anyChoiceFn(), s.capacityRoom(j)) != nil
	}
	return s.chooseWhere(j, j.shape.capable, j.nodes, s.anyChoice) != nil
}

// anyChoice is the plain choice of k nodes: the lowest indices.
func (s *Scheduler) anyChoice(cand topology.NodeSet, k int) []int {
	if cand.Count() < k {
		return nil
	}
	return cand.FirstN(make([]int, 0, k), k)
}

// anyChoiceFn is anyChoice as a nodeChoice, made once.
func (s *Scheduler) anyChoiceFn() nodeChoice {
	if s.whereC.anyFn == nil {
		s.whereC.anyFn = s.anyChoice
	}
	return s.whereC.anyFn
}

// unavailableRequired returns the job's required nodes that are not
// usable now (down, drained, powered down, failing), for the reason
// ReqNodeNotAvail and Explain's "UnavailableNodes:" list.
func (s *Scheduler) unavailableRequired(j *job) []int {
	if j.where == nil {
		return nil
	}
	var out []int
	for _, i := range j.where.required {
		if !s.ableNodes().Has(i) {
			out = append(out, i)
		}
	}
	return out
}

// checkWhere refuses at submission a job whose required nodes cannot hold
// it or whose where request no set of its capable nodes meets (Slurm's
// "Requested node configuration is not available").
func (s *Scheduler) checkWhere(j *job) error {
	if j.where == nil {
		return nil
	}
	for _, i := range j.where.required {
		if !j.shape.capable.Has(i) {
			return fmt.Errorf("%w: %w: NodeList node %q cannot hold the job in partition %q (not in it, or without the request's resources or the Constraint's features)",
				ErrInvalidJob, ErrUnsatisfiable, s.nodes[i].cfg.Name, j.Partition)
		}
	}
	if !s.whereFeasible(j) {
		return fmt.Errorf("%w: %w: no %d node(s) of partition %q meet NodeList %q, Constraint %q and Contiguous %t together",
			ErrInvalidJob, ErrUnsatisfiable, j.nodes, j.Partition, j.Spec.NodeList, j.Spec.Constraint, j.Spec.Contiguous)
	}
	return nil
}

// restoreWhere derives a restored job's constraint and where request
// from its spec and the required nodes its snapshot record holds (as
// resolved at submission: a node named there may have been removed
// since).
func (s *Scheduler) restoreWhere(j *job) error {
	cons, err := parseConstraint(j.Spec.Constraint)
	if err != nil {
		return err
	}
	j.cons = cons
	j.where = makeWhere(j.restoreRequired, cons, j.Spec.Contiguous)
	j.restoreRequired = nil
	return nil
}

// whereKey names a where request for the backfill planner's cache.
func whereKey(w *whereReq) string {
	var b strings.Builder
	b.WriteString("where")
	for _, i := range w.required {
		fmt.Fprintf(&b, " %d", i)
	}
	if !w.cons.IsZero() {
		b.WriteString(" c=")
		b.WriteString(w.cons.String())
	}
	if w.contiguous {
		b.WriteString(" contiguous")
	}
	return b.String()
}

// placeWhere is place for a job with a where request: the nodes of cand
// that fit now, chosen by chooseWhere around the job's base choice (with a
// task spread, by whereTasks: the node count that holds its tasks). A
// --gpus total must then be held by the nodes chosen.
func (s *Scheduler) placeWhere(now time.Time, j *job, cand topology.NodeSet) ([]int, float64) {
	s.fit.Reset()
	for i := cand.Next(0); i >= 0; i = cand.Next(i + 1) {
		if s.fitsNow(j, i) {
			s.fit.Add(i)
		}
	}
	base := s.baseChoice(j, switchesRelaxed(now, j))
	var nodes []int
	if j.tasks != nil {
		nodes = s.whereTasks(j, s.fit, base, s.freeRoom(j))
	} else {
		nodes = s.chooseWhere(j, s.fit, j.nodes, base)
	}
	if nodes == nil {
		return nil, 0
	}
	if len(j.extra) > 0 {
		if _, ok := s.spreadExtra(j, nodes); !ok {
			return nil, 0
		}
	}
	s.placed = append(s.placed[:0], nodes...)
	q := 1.0
	if s.graph != nil {
		q = s.graph.Quality(topology.NodeSetOf(len(s.nodes), nodes...), j.Spec.NVLinkDomain).Score
	}
	return s.placed, q
}

// switchesRelaxed reports whether job j has waited its --switches
// max-wait, so that a placement missing its topology constraints is
// accepted.
func switchesRelaxed(now time.Time, j *job) bool {
	return j.Spec.SwitchesMaxWait > 0 && !j.EligibleTime.IsZero() && now.Sub(j.EligibleTime) >= j.Spec.SwitchesMaxWait
}

// bfWhere gives the backfill plan's job bj the chooser of x's where
// request around the choice it has (its topology or weight chooser;
// without one the least-spread choice under a topology, else the lowest
// indices, the planner's own). A caller's own backfill.Config.Chooser is
// not consulted for such a job.
func (s *Scheduler) bfWhere(now time.Time, x *job, bj *backfill.Job) {
	base, key := bj.Chooser, bj.ChooserKey
	if base == nil && s.graph != nil {
		base, key = s.baseChoice(x, switchesRelaxed(now, x)), "topo"
	}
	if alts := s.whereAlternatives(x); alts != nil {
		// A plain matching OR: the planner searches each alternative with
		// the base choice (chooseWhere's choice: the first alternative
		// that gives one, at the earliest time one does).
		bj.Chooser, bj.ChooserKey = base, key
		bj.Alternatives = alts
		return
	}
	narrowed, ok := s.narrowAllowed(x, bj.Allowed, len(bj.Spread) > 0 || bj.Tasks > 0, len(bj.Components) > 0)
	bj.Allowed = narrowed
	if w := x.where; base == nil && len(w.required) > 0 && w.cons.IsZero() && !w.contiguous &&
		len(bj.Spread) == 0 && bj.Tasks == 0 && len(bj.Components) == 0 {
		// Only required nodes, the rest in index order: the where chooser
		// would take them and the lowest other candidates, which is the
		// planner's own choice with Required (withRequired; PreferBusy
		// does not apply to it) — and the planner's scan at a start can
		// then stop at those lowest ones instead of reading every node.
		bj.Required = w.required
		return
	}
	if ok && s.oneGroupWhole(x) {
		// One counted group giving every node (-C "rack1*2" on two
		// nodes): the narrowed set is that group's nodes, and the where
		// chooser would make the base choice among them.
		bj.Chooser, bj.ChooserKey = base, key
		return
	}
	if base == nil {
		key = "index" // (chooseIn's lowest indices: base nil)
		if s.whereC.noNarrow {
			base = s.anyChoiceFn() // the same choice by chooseIn's set operations
		}
	}
	bj.Chooser, bj.ChooserKey = s.whereChooser(x, base, key)
	// The chooser takes every required node: the plan need not look
	// before they can all hold the job (backfill.Job.Required).
	bj.Required = x.where.required
}

// oneGroupWhole reports, for job x whose allowed set narrowAllowed has
// narrowed, whether x's where request is one counted group that gives all
// of x's nodes, and nothing else to meet (no required nodes, not
// contiguous, not a matching OR): every choice of x.nodes nodes of the
// group then meets it. The narrowing already found the required nodes
// and what the groups need to make x.nodes, so with no required nodes
// the one group gives them all; its count is not taken again.
func (s *Scheduler) oneGroupWhole(x *job) bool {
	w := x.where
	return w.cons.Kind() != feature.KindMatchingOR && len(w.required) == 0 && !w.contiguous && len(s.setsOf(w).groups) == 1
}

// whereAlternatives returns the node sets of job x's matching OR
// (--constraint="[a|b]") when the plan can search them as alternatives
// (backfill.Job.Alternatives): a constraint with nothing else to meet — no
// required nodes, no counted groups, not contiguous — on a job that is not
// a heterogeneous job's component; nil otherwise.
func (s *Scheduler) whereAlternatives(x *job) []topology.NodeSet {
	w := x.where
	if w == nil || s.whereC.noNarrow || w.cons.Kind() != feature.KindMatchingOR || len(w.required) > 0 || w.contiguous || x.HetJobID != 0 {
		return nil
	}
	ws := s.setsOf(w)
	if len(ws.groups) > 0 {
		return nil
	}
	return ws.alts
}

// whereReason is why job j cannot start for where it may run, checked
// each cycle before placing: BadConstraints when no set of its capable
// nodes could ever meet its constraint and required nodes (features
// changed since submission), ReqNodeNotAvail when a required node is not
// up; ReasonNone otherwise.
func (s *Scheduler) whereReason(j *job) policy.Reason {
	if j.where == nil && j.cons.IsZero() {
		return policy.ReasonNone
	}
	if !s.whereSatisfiable(j) {
		return policy.ReasonBadConstraints
	}
	if len(s.unavailableRequired(j)) > 0 {
		return policy.ReasonReqNodeNotAvail
	}
	return policy.ReasonNone
}

// whereSatisfiable is whereFeasible with enough capable nodes, cached on
// the job until its shape or a node changes.
func (s *Scheduler) whereSatisfiable(j *job) bool {
	if j.whereShape != j.shape || j.whereGen != s.tierGen {
		j.whereOK = j.shape.capable.Count() >= j.nodes && s.whereFeasible(j)
		j.whereShape, j.whereGen = j.shape, s.tierGen
	}
	return j.whereOK
}

// requiredReserved returns the required nodes of job j that reservations
// keep it off now (the forbidden set candidates left), for
// ReqNodeNotAvail.
func (s *Scheduler) requiredReserved(j *job) []int {
	if j.where == nil || len(j.where.required) == 0 || s.pol == nil || s.pol.resv.Len() == 0 {
		return nil
	}
	var out []int
	for _, i := range j.where.required {
		if s.pol.forbidden.Has(i) {
			out = append(out, i)
		}
	}
	return out
}
