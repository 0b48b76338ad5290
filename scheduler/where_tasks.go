package scheduler

import (
	"cmp"
	"slices"

	"github.com/sluicehq/sluice/feature"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// A job with both a where request (where.go: -w NodeList, a matching-OR or
// counted -C Constraint, --contiguous) and a task spread (tasks.go: -n
// without -N, -N min-max, uneven tasks per node) is chosen by one
// mechanism: the where chooser picks the node set for a node count, the
// task spreader's rooms (taskRoom) decide whether that set holds the
// tasks, and the count is searched within the job's range — upward from
// the fewest that could hold them for a job without -N (Slurm chooses the
// node count to fit the tasks), downward from the most for -N min-max
// (Slurm allocates as many as it can). At each count the where chooser is
// tried first around the job's own choice (lightest nodes, least spread),
// then around the nodes with the most room, so that `-w n1 -n 40` on
// 16-CPU nodes takes n1 and the two lightest others (the sbatch -w page:
// the job is allocated additional nodes as needed), and `-C 'a|b' -n 40`
// takes the first alternative whose nodes hold the tasks. Once chosen, the
// tasks are dealt over the nodes as for any task spread (taskReqs), so
// CPU ids, devices, accounting and the backfill plan's counts are the
// task spreader's.
//
// The cycle (placeWhere), preemption, Explain and submission (with the
// nodes' capacities: the job's node count for the backfill plan is the
// fewest that hold it idle) all call whereTasks. The backfill plan (and
// Explain's re-plans) call the plain where chooser for that count and
// count ceil(Tasks/nodes) tasks on each planned node (cautious: never
// fewer than the cycle deals there; planCountsTasks): the planner's own
// task search, when the chooser's choice does not hold the tasks, ranks
// every candidate by room at every time it tries, and a where request
// rejects that ranking whenever its required or counted nodes are not
// among the roomiest — a 20,000-job queue of such jobs took minutes per
// cycle (NOTES-spread.md). A job the plan starts gets its tasks dealt
// over the planned nodes by their free resources then (taskReqs).

// taskHold is what a where choice for a task spread must hold: the
// chosen nodes' rooms (how many of the job's tasks each can run, indexed
// by node, every one at least 1) summing to total; total zero for a node
// range alone (every node runs the same tasks).
type taskHold struct {
	room  []int64
	total int64
}

// holds reports whether nodes (nil: no choice) hold the tasks: dealt one
// per node in turn while a node has room, as dealTasks does, they do when
// there are no more nodes than tasks and the rooms sum to the tasks.
func (h *taskHold) holds(nodes []int) bool {
	if nodes == nil {
		return false
	}
	if h.total == 0 {
		return true
	}
	if int64(len(nodes)) > h.total {
		return false
	}
	var sum int64
	for _, i := range nodes {
		sum += h.room[i]
	}
	return sum >= h.total
}

// maxWhereTaskCounts bounds the node counts whereTasks tries for one set
// of candidates (one matching-OR alternative): it starts from a count the
// rooms prove necessary (every required node and the fewest others with
// the most room), so a count is missed only when the where request's
// groups take nodes with little room; the job then waits (Resources) as
// when the nodes are busy.
const maxWhereTaskCounts = 32

// taskMinNodes is the fewest nodes job j's spec allows (minNodesOf).
func (j *job) taskMinNodes() int { return minNodesOf(&j.Spec) }

// minNodesOf is the fewest nodes spec allows: -N (at least 1), or the
// tasks over --ntasks-per-node.
func minNodesOf(spec *JobSpec) int {
	n := max(spec.Nodes, 1)
	if spec.Tasks > 0 && spec.TasksPerNode > 0 {
		n = max(n, (spec.Tasks+spec.TasksPerNode-1)/spec.TasksPerNode)
	}
	return n
}

// freeRoom returns node i's room for job j's tasks with its free
// resources now.
func (s *Scheduler) freeRoom(j *job) func(i int) int64 {
	return func(i int) int64 { return s.taskRoom(j, &s.nodes[i], s.nodes[i].free, false) }
}

// capacityRoom returns node i's room for job j's tasks when it is idle.
func (s *Scheduler) capacityRoom(j *job) func(i int) int64 {
	return func(i int) int64 { return s.taskRoom(j, &s.nodes[i], s.nodes[i].capacity, true) }
}

// whereTasks picks, for job j with a where request and a task spread,
// nodes of fit that meet the where request and hold the tasks, each
// node's room given by room (0: not even one task fits), every choice
// made around base; nil when none does. The nodes are ascending, in a new
// slice; fit is not changed.
func (s *Scheduler) whereTasks(j *job, fit topology.NodeSet, base nodeChoice, room func(i int) int64) []int {
	w := j.where
	c := &s.whereC
	if len(c.room) != len(s.nodes) {
		c.room = make([]int64, len(s.nodes))
	}
	sub := scratchSet(&c.tasks, fit.Len())
	for i := fit.Next(0); i >= 0; i = fit.Next(i + 1) {
		if r := room(i); r > 0 {
			c.room[i] = r
			sub.Add(i)
		}
	}
	for _, i := range w.required {
		if !sub.Has(i) {
			return nil
		}
	}
	h := &taskHold{room: c.room, total: int64(j.tasks.total)}
	ws := s.setsOf(w)
	if w.cons.Kind() != feature.KindMatchingOR {
		return s.tasksIn(j, ws, sub, base, h)
	}
	// Matching OR: all nodes with the same alternative, the first (in
	// the order written) whose nodes hold the tasks.
	alt := scratchSet(&c.tasksAlt, fit.Len())
	for _, a := range ws.alts {
		alt.CopyFrom(sub)
		alt.IntersectWith(a)
		if out := s.tasksIn(j, ws, alt, base, h); out != nil {
			return out
		}
	}
	return nil
}

// tasksIn is whereTasks among cand (every node with room), for one
// alternative: the node counts of the job's range, fewest first (no -N)
// or most first (-N min-max), each tried around base and then around the
// nodes with the most room.
func (s *Scheduler) tasksIn(j *job, ws *whereSets, cand topology.NodeSet, base nodeChoice, h *taskHold) []int {
	ts := j.tasks
	w := j.where
	hi := min(ts.nodesMax, cand.Count())
	if h.total > 0 {
		hi = min(hi, int(min(h.total, int64(MaxNodesPerJob))))
	}
	if pc := &s.parts[j.part].cfg; pc.MaxNodes > 0 && !s.subjectOf(j).PartitionOverrides().Has(policy.QOSPartitionMaxNodes) {
		hi = min(hi, pc.MaxNodes) // the partition's MaxNodes bounds the count Slurm chooses
	}
	lo := max(j.taskMinNodes(), w.minNodes())
	if h.total > 0 && ts.fewest {
		lo = max(lo, s.tasksLowerBound(w, cand, h))
	}
	if lo > hi {
		return nil
	}
	rb := s.roomBase(base, h)
	for k := 0; k < maxWhereTaskCounts && lo+k <= hi; k++ {
		n := lo + k
		if !ts.fewest {
			n = hi - k
		}
		if out := s.chooseIn(j, ws, cand, n, base, h); h.holds(out) {
			return out
		}
		if out := s.chooseIn(j, ws, cand, n, rb, h); h.holds(out) {
			return out
		}
	}
	return nil
}

// tasksLowerBound is the fewest nodes of cand that could hold the tasks
// with every required node among them: the required nodes and then the
// others with the most room (cand.Count()+1 when even all do not).
func (s *Scheduler) tasksLowerBound(w *whereReq, cand topology.NodeSet, h *taskHold) int {
	left := h.total
	for _, i := range w.required {
		left -= h.room[i]
	}
	if left <= 0 {
		return len(w.required)
	}
	c := &s.whereC
	rooms := c.rooms[:0]
	for i := cand.Next(0); i >= 0; i = cand.Next(i + 1) {
		if _, req := slices.BinarySearch(w.required, i); !req {
			rooms = append(rooms, h.room[i])
		}
	}
	slices.SortFunc(rooms, func(a, b int64) int { return cmp.Compare(b, a) })
	k := 0
	for k < len(rooms) && left > 0 {
		left -= rooms[k]
		k++
	}
	c.rooms = rooms[:0]
	if left > 0 {
		return cand.Count() + 1
	}
	return len(w.required) + k
}

// roomBase is base choosing among the k nodes of its candidates with the
// most room (ties in allocation order: lightest, then lowest index).
func (s *Scheduler) roomBase(base nodeChoice, h *taskHold) nodeChoice {
	if base == nil {
		base = s.anyChoice // (chooseIn's lowest indices)
	}
	return func(cand topology.NodeSet, k int) []int {
		if cand.Count() <= k {
			return base(cand, k)
		}
		c := &s.whereC
		order := c.order[:0]
		s.byWeight(cand, func(i int) bool {
			order = append(order, i)
			return true
		})
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(h.room[b], h.room[a]) })
		top := scratchSet(&c.top, cand.Len())
		for _, i := range order[:k] {
			top.Add(i)
		}
		c.order = order[:0]
		return base(top, k)
	}
}

// whereChoosable reports whether the nodes of fit (each holding the job's
// minimum now) meet job j's where request now, its tasks included.
func (s *Scheduler) whereChoosable(j *job, fit topology.NodeSet) bool {
	if j.tasks != nil {
		return s.whereTasks(j, fit, s.anyChoiceFn(), s.freeRoom(j)) != nil
	}
	return s.chooseWhere(j, fit, j.nodes, s.anyChoice) != nil
}
