package scheduler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// Tasks and node counts, as Slurm's sbatch has them. A job asks for a
// number of tasks (-n), each of CPUsPerTask CPUs (-c), MemPerCPUMiB per
// CPU (--mem-per-cpu) and GRESPerTask (--gpus-per-task); a task is never
// split between nodes. Without a node count (-N) Slurm chooses it: the
// fewest nodes that hold the tasks. With -N min-max it allocates as many
// nodes as it can within the range. Over the chosen nodes the tasks are
// dealt one per node in turn, while a node has room (cons_tres's cyclic
// distribution over nodes): -N2 -n7 takes 4+3 CPUs, and -N2 -n5
// --gpus-per-task=2 on nodes with 8 and 4 free GPUs runs 3+2. With -n,
// --ntasks-per-node is the most tasks one node may run; without it, it is
// every node's count. --ntasks-per-socket bounds a node's tasks by its
// sockets.
//
// Such a job is planned and placed with a per-node minimum (perNode: one
// task, with the per-node GRES) and a taskSpread saying how many tasks go
// where; its node count (job.nodes) is the fewest that could hold it on
// idle nodes (or the range's minimum), which the backfill plan uses. The
// per-node CPU ids and devices are chosen by planShare as for any job.

// taskSpread is how a job with a variable number of tasks per node, or a
// node count range, spreads them.
type taskSpread struct {
	// total is the task count (Tasks); zero for a node range alone
	// (every node runs job.tpn tasks).
	total int
	// maxPer is the most tasks one node may run (TasksPerNode with
	// Tasks); perSocket is TasksPerSocket. Zero: no bound.
	maxPer, perSocket int
	// nodesMax is the most nodes; fewest says the job wants the fewest
	// nodes that hold it (no -N) rather than the most (-N min-max).
	nodesMax int
	fewest   bool
	// plane is -m plane=<size>: the tasks are dealt in blocks of plane
	// (dealTasks); 0 one at a time. Not encoded in snapshots: it is
	// JobSpec.Distribution's.
	plane int64
	// devFixed is the GRES every node takes whatever its tasks (--gres,
	// one of a --gpus total), devTask those of one task.
	devFixed, devTask []gres.Request
	// perTask is what each task beyond a node's first adds to its TRES,
	// when that is the same for every task (nil otherwise: then the
	// backfill plan counts ceil(total/nodes) tasks on each node).
	perTask gres.Vector
	// totalVec is the job's TRES with its tasks dealt over job.nodes
	// nodes, what limits count before it starts.
	totalVec gres.Vector
}

// mostPerNode is the most tasks one node may run: all of them, or
// TasksPerNode when that is fewer.
func (ts *taskSpread) mostPerNode() int64 {
	if ts.maxPer > 0 {
		return min(int64(ts.total), int64(ts.maxPer))
	}
	return int64(ts.total)
}

// planCountsTasks reports whether the backfill plan counts job x's tasks
// one by one (backfill.Request.Tasks): it has a task count, every task
// adds the same TRES (perTask), no per-socket bound, no where request
// (see where_tasks.go), and more than one node. Otherwise the plan counts
// bfMin on every node.
func (x *job) planCountsTasks() bool {
	ts := x.tasks
	return ts != nil && ts.total > 0 && ts.perTask != nil && ts.perSocket == 0 && x.where == nil && x.nodes > 1
}

// ParseNodeCount parses sbatch's -N value: "4" (min = max = 4) or a
// range "2-4". Counts are in [1, MaxNodesPerJob].
func ParseNodeCount(s string) (minNodes, maxNodes int, err error) {
	lo, hi, isRange := strings.Cut(strings.TrimSpace(s), "-")
	num := func(x string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil || n < 1 || n > MaxNodesPerJob {
			return 0, fmt.Errorf("%w: node count %q: want an integer in [1, %d]", ErrInvalidJob, x, MaxNodesPerJob)
		}
		return n, nil
	}
	if minNodes, err = num(lo); err != nil {
		return 0, 0, err
	}
	maxNodes = minNodes
	if isRange {
		if maxNodes, err = num(hi); err != nil {
			return 0, 0, err
		}
		if maxNodes < minNodes {
			return 0, 0, fmt.Errorf("%w: node count %q: maximum below minimum", ErrInvalidJob, s)
		}
	}
	return minNodes, maxNodes, nil
}

// FormatNodeCount is ParseNodeCount's inverse: "4" or "2-4".
func FormatNodeCount(minNodes, maxNodes int) string {
	if maxNodes <= minNodes {
		return strconv.Itoa(minNodes)
	}
	return strconv.Itoa(minNodes) + "-" + strconv.Itoa(maxNodes)
}

// resolveTasks checks the spec's task and node fields and returns the
// job's (minimum) node count, the tasks each node runs at least, and its
// task spread (nil when every node runs the same tasks).
func resolveTasks(spec *JobSpec) (nodes int, tpn int64, ts *taskSpread, err error) {
	bad := func(format string, a ...any) (int, int64, *taskSpread, error) {
		return 0, 0, nil, fmt.Errorf("%w: %s", ErrInvalidJob, fmt.Sprintf(format, a...))
	}
	switch {
	case spec.NodesMax < 0 || spec.NodesMax > MaxNodesPerJob:
		return bad("NodesMax %d out of range [0, %d]", spec.NodesMax, MaxNodesPerJob)
	case spec.NodesMax > 0 && spec.NodesMax < spec.Nodes:
		return bad("NodesMax %d below Nodes %d (-N %d-%d)", spec.NodesMax, spec.Nodes, spec.Nodes, spec.NodesMax)
	case spec.TasksPerNode < 0 || spec.TasksPerNode > MaxTasksPerJob:
		return bad("TasksPerNode %d out of range [0, %d]", spec.TasksPerNode, MaxTasksPerJob)
	case spec.TasksPerSocket < 0 || spec.TasksPerSocket > MaxTasksPerJob:
		return bad("TasksPerSocket %d out of range [0, %d]", spec.TasksPerSocket, MaxTasksPerJob)
	case spec.MemPerCPUMiB < 0 || spec.MemPerCPUMiB > gres.MaxCount>>20:
		return bad("MemPerCPUMiB %d out of range", spec.MemPerCPUMiB)
	case spec.MemPerCPUMiB > 0 && (spec.MemPerNodeMiB > 0 || spec.MemPerGPUMiB > 0):
		return bad("MemPerCPUMiB excludes MemPerNodeMiB and MemPerGPUMiB (--mem-per-cpu, --mem, --mem-per-gpu)")
	}
	for _, r := range spec.GRESPerTask {
		if t := int64(spec.Tasks); r.Count > 0 && t > gres.MaxCount/r.Count {
			return bad("GRESPerTask: GRES %s count %d × %d tasks overflows", r.Name, r.Count, t)
		}
	}
	minN := max(spec.Nodes, 1)
	if spec.Nodes == 0 && spec.Tasks > 0 && spec.TasksPerNode > 0 {
		minN = (spec.Tasks + spec.TasksPerNode - 1) / spec.TasksPerNode
	}
	plane := spec.planeSize()
	maxN := spec.NodesMax
	switch {
	case maxN > 0:
	case spec.Nodes > 0 || spec.Tasks == 0:
		maxN = minN
	default:
		maxN = max(spec.Tasks, minN) // each node runs at least one task
	}
	maxN = min(maxN, MaxNodesPerJob)
	if spec.Tasks == 0 {
		tpn = int64(max(spec.TasksPerNode, 1))
		if maxN == minN && spec.TasksPerSocket == 0 {
			return minN, tpn, nil, nil
		}
		// A node range (or tasks bounded per socket): every node runs
		// tpn tasks, the count of nodes varies. (A GRESPerJob's range is
		// resolved to one count before: gpucount.go.)
		return minN, tpn, &taskSpread{perSocket: spec.TasksPerSocket, nodesMax: maxN}, nil
	}
	if spec.Tasks < minN {
		return bad("Tasks %d fewer than Nodes %d", spec.Tasks, minN)
	}
	if plane > 0 && len(spec.GRESPerJob) == 0 {
		// -m plane=<size>: every node gets a block at least; Slurm
		// refuses fewer blocks than nodes ("too few processes for the
		// requested {plane, node} distribution").
		blocks := (spec.Tasks + plane - 1) / plane
		if minN > blocks {
			return bad("Tasks %d make %d block(s) of plane=%d, fewer than the %d node(s) the job needs", spec.Tasks, blocks, plane, minN)
		}
		maxN = min(maxN, blocks)
	}
	if spec.TasksPerNode > 0 && int64(spec.TasksPerNode)*int64(maxN) < int64(spec.Tasks) {
		return bad("Tasks %d do not fit %d node(s) of TasksPerNode %d", spec.Tasks, maxN, spec.TasksPerNode)
	}
	if len(spec.GRESPerJob) > 0 {
		// A --gpus total spreads on its own (spreadExtra): the node count
		// is fixed (chosen before for a job without -N or with a range:
		// gpucount.go) and each node runs ceil(Tasks/Nodes) tasks.
		n := max(spec.Nodes, 1)
		if spec.Tasks < n {
			return bad("Tasks %d fewer than Nodes %d", spec.Tasks, n)
		}
		return n, int64((spec.Tasks + n - 1) / n), nil, nil
	}
	if maxN == minN && spec.TasksPerSocket == 0 && (spec.Tasks == minN || minN == 1) {
		// One task per node, or every task on the one node.
		return minN, int64(spec.Tasks / minN), nil, nil
	}
	return minN, 1, &taskSpread{total: spec.Tasks, maxPer: spec.TasksPerNode, perSocket: spec.TasksPerSocket,
		nodesMax: maxN, fewest: spec.Nodes == 0, plane: int64(plane)}, nil
}

// initTasks completes a new job's task spread once its per-node minimum
// and shape are known: the GRES per task, whether every task adds the
// same TRES, the node count (the fewest capable nodes that hold the tasks
// when idle, for a job without -N), and whether any such set exists.
func (s *Scheduler) initTasks(j *job) error {
	ts := j.tasks
	spec := j.Spec
	spec.GRESPerTask = nil
	fixed, _, err := mergeDeviceRequests(spec, int64(j.nodes), 0)
	if err != nil {
		return err
	}
	ts.devFixed = fixed
	for _, r := range j.Spec.GRESPerTask {
		ts.devTask = addRequests(ts.devTask, []gres.Request{r})
	}
	if ts.total == 0 {
		return s.tasksFeasible(j)
	}
	// Linear when one node's TRES with the most tasks is the first
	// task's plus that many times the second's (the TRES are convex in
	// the task count: max of linear terms), which the plan then counts
	// exactly.
	one, two, all := s.reg.NewVector(), s.reg.NewVector(), s.reg.NewVector()
	most := ts.mostPerNode()
	if err := s.taskVector(j, 1, one); err != nil {
		return err
	}
	if err := s.taskVector(j, min(2, most), two); err != nil {
		return err
	}
	if err := s.taskVector(j, most, all); err != nil {
		return err
	}
	d, err := two.Sub(one)
	if err == nil && most > 1 {
		want, err1 := d.Scale(most - 1)
		if err1 == nil && want.AddInPlace(one) == nil && slices.Equal(want, all) {
			ts.perTask = d
		}
	}
	if err := s.tasksFeasible(j); err != nil {
		return err
	}
	if !j.planCountsTasks() {
		// The plan cannot count these tasks one by one: it counts the
		// most a node gets when they are dealt over roomy nodes
		// (ceil(total/nodes), or the first node's blocks for -m plane:
		// -n 10 plane=4 on 2 nodes is 6+4, so 6) on each node (cautious:
		// a set whose rooms all hold that deals it so). On one
		// node that is exact (every task there), and the planner's
		// shape cache serves it as any per-node request.
		v := s.reg.NewVector()
		if err := s.taskVector(j, slices.Max(ts.evenCounts(j.nodes)), v); err != nil {
			return err
		}
		v[gres.Node] = 0
		j.bfPer, j.bfMin = v, v
	}
	// The limits' view: the tasks dealt over the minimum node count.
	ts.totalVec = s.reg.NewVector()
	v := s.reg.NewVector()
	for _, n := range ts.evenCounts(j.nodes) {
		if err := s.taskVector(j, n, v); err != nil {
			return err
		}
		if err := ts.totalVec.AddInPlace(v); err != nil {
			return fmt.Errorf("%w: the job's TRES overflow: %w", ErrInvalidJob, err)
		}
		clear(v)
	}
	return nil
}

// tasksFeasible sets, for a job without -N, its node count to the fewest
// capable nodes that could hold its tasks when idle, and rejects a job no
// set of at most nodesMax capable nodes could ever hold.
func (s *Scheduler) tasksFeasible(j *job) error {
	ts := j.tasks
	// The fewest nodes can be no fewer than the tasks over the most one
	// node may run: once that many nodes run that many, the scan stops.
	most := max(ts.mostPerNode(), 1)
	enough := max(int((int64(ts.total)+most-1)/most), j.nodes)
	if ts.perSocket > 0 {
		enough = len(s.nodes) + 1 // the bound per node differs by its sockets: look at all
	}
	var rooms []int64
	full := 0
	for i := j.shape.capable.Next(0); i >= 0 && full < enough; i = j.shape.capable.Next(i + 1) {
		n := &s.nodes[i]
		if r := s.taskRoom(j, n, n.capacity, true); r > 0 {
			rooms = append(rooms, r)
			if r >= most || ts.total == 0 {
				full++
			}
		}
	}
	if ts.total == 0 {
		if len(rooms) < j.nodes {
			return fmt.Errorf("%w: %w: needs %d node(s) that hold %d task(s) within TasksPerSocket %d in partition %q, only %d exist",
				ErrInvalidJob, ErrUnsatisfiable, j.nodes, j.tpn, ts.perSocket, j.Partition, len(rooms))
		}
		return nil
	}
	slices.SortFunc(rooms, func(a, b int64) int { return int(b - a) })
	need, k := int64(ts.total), 0
	var sum int64
	for k < len(rooms) && k < ts.nodesMax && (sum < need || k < j.nodes) {
		sum += rooms[k]
		k++
	}
	if sum < need || k < j.nodes {
		return fmt.Errorf("%w: %w: %d task(s) of %s need more than %d node(s) of partition %q hold (at most %d of %d task(s) fit)",
			ErrInvalidJob, ErrUnsatisfiable, ts.total, s.reg.FormatTRES(j.perNode), ts.nodesMax, j.Partition, sum, ts.total)
	}
	if ts.fewest {
		j.nodes = k
	}
	if j.where != nil {
		// Where it may run (where_tasks.go) may take more nodes: the
		// fewest that meet it and hold the tasks idle (checkWhere refuses
		// the job when none do).
		if nodes := s.whereTasks(j, j.shape.capable, s.anyChoiceFn(), s.capacityRoom(j)); nodes != nil && ts.fewest {
			j.nodes = len(nodes)
		}
	}
	return nil
}

// taskDevReq returns the GRES a node running k of job j's tasks takes.
func (j *job) taskDevReq(k int64) []gres.Request {
	ts := j.tasks
	if len(ts.devTask) == 0 {
		return ts.devFixed
	}
	more := slices.Clone(ts.devTask)
	for i := range more {
		more[i].Count *= k
	}
	return addRequests(ts.devFixed, more)
}

// taskVector writes into v (zeroed) the TRES a node running k of job j's
// tasks needs.
func (s *Scheduler) taskVector(j *job, k int64, v gres.Vector) error {
	if k > MaxTasksPerJob {
		return fmt.Errorf("%w: %d tasks on a node", ErrInvalidJob, k)
	}
	for _, r := range j.tasks.devTask {
		if r.Count > 0 && k > gres.MaxCount/r.Count {
			return fmt.Errorf("%w: GRESPerTask %s × %d tasks overflows", ErrInvalidJob, r.Name, k)
		}
	}
	return s.nodeVectorN(j, k, j.taskDevReq(k), v)
}

// nodeSockets is the number of CPU sockets of node n the scheduler knows
// (those its devices name; 1 when none does).
func nodeSockets(n *node) int64 {
	if n.cfg.Sockets > 0 {
		return int64(n.lay.sockets) // the declared layout (layout.go)
	}
	if n.devs == nil {
		return 1
	}
	// Distinct sockets, counted without allocating (taskRoom runs per node
	// per job; a node has few devices).
	devs, k := n.cfg.Devices.Devices, 0
	for x, d := range devs {
		if d.Socket >= 0 && !slices.ContainsFunc(devs[:x], func(e gres.Device) bool { return e.Socket == d.Socket }) {
			k++
		}
	}
	return int64(max(k, 1))
}

// taskRoom returns how many of job j's tasks node n could run with free
// resources free (0 when not even its minimum fits), within the job's
// bounds per node and per socket and, for one thread per core, by the
// node's cores (all of them when idle, else those with a free thread). A
// job with a node range alone gets 1 where the node holds its per-node
// request.
func (s *Scheduler) taskRoom(j *job, n *node, free gres.Vector, idle bool) int64 {
	ts := j.tasks
	if !j.perNode.Fits(free) {
		return 0
	}
	most := ts.mostPerNode()
	if ts.perSocket > 0 {
		cap := int64(ts.perSocket) * nodeSockets(n)
		if ts.total == 0 {
			if j.tpn > cap {
				return 0
			}
			return 1
		}
		most = min(most, cap)
	}
	if ts.total == 0 {
		return 1
	}
	if j.Spec.Hint.oneThreadPerCore() && !j.Spec.Exclusive && n.lay.threads > 1 {
		// One thread per core (--hint=nomultithread, layout.go): the
		// node's cores, or those with a free thread, bound its CPUs.
		cores := int64(n.lay.sockets * n.lay.cores)
		if !idle {
			cores = int64(n.freeCores())
		}
		if most = min(most, cores/int64(max(j.Spec.CPUsPerTask, 1))); most < 1 {
			return 0
		}
	}
	if ts.perTask != nil {
		r := most
		for id, c := range ts.perTask {
			if c > 0 && id != int(gres.Node) {
				r = min(r, 1+(free[id]-j.perNode[id])/c)
			}
		}
		return max(r, 1)
	}
	// Not linear: the largest count that fits, by bisection (the TRES
	// grow with the count).
	v := s.reg.NewVector()
	lo, hi := int64(1), most
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		clear(v)
		if s.taskVector(j, mid, v) == nil && v.Fits(free) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// taskReqs returns each node's request when job j's tasks are dealt over
// nodes (in this order) as their free resources allow, or as the backfill
// plan booked them (j.planTasks); false when the nodes do not hold them.
// A job with a node range alone gets nil, true (every node takes
// perNode).
func (s *Scheduler) taskReqs(j *job, nodes []int) ([]nodeReq, bool) {
	ts := j.tasks
	if ts.total == 0 {
		for _, i := range nodes {
			if s.taskRoom(j, &s.nodes[i], s.freeFor(j, &s.nodes[i]), false) < 1 {
				return nil, false
			}
		}
		return nil, true
	}
	var counts []int64
	if j.planTasks != nil && len(j.planTasks) == len(nodes) {
		counts = make([]int64, len(nodes))
		for k, c := range j.planTasks {
			counts[k] = int64(c)
		}
	} else {
		room := make([]int64, len(nodes))
		for k, i := range nodes {
			room[k] = s.taskRoom(j, &s.nodes[i], s.freeFor(j, &s.nodes[i]), false)
		}
		if counts = dealTasks(int64(ts.total), room, ts.plane); counts == nil {
			return nil, false
		}
	}
	reqs := make([]nodeReq, len(nodes))
	for k, i := range nodes {
		reqs[k].devReq = j.taskDevReq(counts[k])
		reqs[k].vec = s.reg.NewVector()
		if err := s.nodeVectorN(j, counts[k], reqs[k].devReq, reqs[k].vec); err != nil {
			return nil, false
		}
		if !s.fitsFree(j, &s.nodes[i], reqs[k].vec) {
			return nil, false
		}
	}
	return reqs, true
}

// nodeReqs returns each node's request for job j on nodes when it differs
// from node to node (a task spread, a GRESPerJob spread), nil when every
// node takes perNode; false when the nodes do not hold the job.
func (s *Scheduler) nodeReqs(j *job, nodes []int) ([]nodeReq, bool) {
	if j.tasks != nil {
		return s.taskReqs(j, nodes)
	}
	return s.spreadExtra(j, nodes)
}

// placeTasks is place for a job with a task spread: among the nodes of
// cand that hold its minimum now, the fewest (no -N) or the most (-N
// min-max) that hold its tasks, lightest and lowest first; with a
// topology, the graph's least-spread choice among them.
func (s *Scheduler) placeTasks(now time.Time, j *job, cand topology.NodeSet) ([]int, float64) {
	return s.chooseTasks(now, j, cand, func(i int) bool { return s.fitsNow(j, i) })
}

// taskFit is a node that can run some of a job's tasks now, and how many.
type taskFit struct {
	node int
	room int64
}

// scanTasks lists the nodes of set (those check accepts; nil: all) that
// can run some of job j's tasks now, in allocation order. With early set
// it stops once the nodes listed hold the tasks on enough nodes (the
// fewest it wants, or NodesMax of them), and reports whether it saw all.
func (s *Scheduler) scanTasks(j *job, set topology.NodeSet, check func(int) bool, early bool, fit []taskFit) ([]taskFit, bool) {
	ts := j.tasks
	need := int64(ts.total)
	want := ts.nodesMax
	if ts.fewest {
		want = j.nodes
	}
	var sum int64
	complete := true
	s.byWeight(set, func(i int) bool {
		if check == nil || check(i) {
			if r := s.taskRoom(j, &s.nodes[i], s.freeFor(j, &s.nodes[i]), false); r > 0 {
				fit = append(fit, taskFit{i, r})
				sum += r
			}
		}
		if early && len(fit) >= want && sum >= need {
			complete = false
			return false
		}
		return true
	})
	return fit, complete
}

// chooseTasks is placeTasks among the nodes of set that check accepts
// (nil: all, each holding the job's minimum): it reads the nodes' free
// resources as they are (see withFree), and returns the nodes in
// s.placed, or nil. Without a topology it first looks only as far as
// the first nodes that hold the tasks.
func (s *Scheduler) chooseTasks(now time.Time, j *job, set topology.NodeSet, check func(int) bool) ([]int, float64) {
	if s.graph == nil {
		fit, complete := s.scanTasks(j, set, check, true, nil)
		if nodes, q := s.chooseTasksAmong(now, j, fit); nodes != nil || complete {
			return nodes, q
		}
	}
	fit, _ := s.scanTasks(j, set, check, false, nil)
	return s.chooseTasksAmong(now, j, fit)
}

// chooseTasksAmong is chooseTasks among the nodes of fit.
func (s *Scheduler) chooseTasksAmong(now time.Time, j *job, fit []taskFit) ([]int, float64) {
	ts := j.tasks
	hi := min(ts.nodesMax, len(fit))
	if pc := &s.parts[j.part].cfg; pc.MaxNodes > 0 && !s.subjectOf(j).PartitionOverrides().Has(policy.QOSPartitionMaxNodes) {
		hi = min(hi, pc.MaxNodes) // the partition's MaxNodes bounds the count Slurm chooses
	}
	if hi < j.nodes {
		return nil, 0
	}
	// byRoom: the nodes with the most room first (stable: lightest, then
	// lowest index among equals).
	byRoom := slices.Clone(fit)
	slices.SortStableFunc(byRoom, func(a, b taskFit) int { return int(b.room - a.room) })
	lo := j.nodes // the fewest that can hold the tasks now
	var sum int64
	for k := range byRoom[:hi] {
		if sum >= int64(ts.total) && k >= j.nodes {
			break
		}
		sum += byRoom[k].room
		lo = max(lo, k+1)
	}
	if sum < int64(ts.total) {
		return nil, 0
	}
	pick := func(k int) []int {
		// The first k in allocation order when they hold the tasks, else
		// the k with the most room; in index order.
		out := make([]int, 0, k)
		var got int64
		for _, f := range fit[:k] {
			out = append(out, f.node)
			got += f.room
		}
		if got < int64(ts.total) {
			out = out[:0]
			for _, f := range byRoom[:k] {
				out = append(out, f.node)
			}
		}
		slices.Sort(out)
		return out
	}
	counts := []int{lo}
	if !ts.fewest {
		counts = []int{hi}
	}
	if s.graph != nil {
		// The graph may refuse a count (--switches, segments): try a few.
		counts = counts[:0]
		for k := 0; k < 4; k++ {
			c := lo + k
			if !ts.fewest {
				c = hi - k
			}
			if c >= lo && c <= hi {
				counts = append(counts, c)
			}
		}
	}
	for _, k := range counts {
		nodes := pick(k)
		if s.graph == nil {
			if _, ok := s.taskReqs(j, nodes); ok {
				s.placed = append(s.placed[:0], nodes...)
				return s.placed, 1
			}
			continue
		}
		s.fit.Reset()
		for _, f := range fit {
			s.fit.Add(f.node)
		}
		p, err := s.graph.Select(s.fit, k, j.constraints())
		if err == nil {
			s.placed = p.Nodes.AppendTo(s.placed[:0])
			if _, ok := s.taskReqs(j, s.placed); !ok || !p.Met {
				// The least-spread nodes do not hold the tasks (or miss
				// the constraint): the graph chooses among those that do.
				s.fit.Reset()
				for _, i := range nodes {
					s.fit.Add(i)
				}
				p, err = s.graph.Select(s.fit, k, j.constraints())
			}
		}
		if err != nil {
			continue
		}
		if !p.Met && (j.Spec.SwitchesMaxWait == 0 || now.Sub(j.EligibleTime) < j.Spec.SwitchesMaxWait) {
			continue
		}
		s.placed = p.Nodes.AppendTo(s.placed[:0])
		if _, ok := s.taskReqs(j, s.placed); ok {
			return s.placed, p.Quality.Score
		}
	}
	return nil, 0
}

// RequestedTRES returns the TRES job id asks for in all (sacct's
// ReqTRES), as its limits count them: its per-node request on each of its
// nodes plus a GRESPerJob total beyond one per node, or, for a job whose
// tasks spread over a variable number of nodes, its tasks dealt over the
// fewest nodes that hold them. False when the job is unknown.
func (s *Scheduler) RequestedTRES(id JobID) (gres.Vector, bool) {
	j, ok := s.jobs[id]
	if !ok {
		return nil, false
	}
	t, err := j.totalRequest()
	if err != nil {
		return nil, false
	}
	return t.Clone(), true
}
