package backfill

import (
	"fmt"
	"math"
	"slices"

	"github.com/sluicehq/sluice/gres"
)

// A request with Tasks (Slurm's -n spread over the job's nodes) is a
// Spread of whole tasks: PerNode is a node's share with one task (every
// chosen node runs at least one), and the chosen nodes must together hold
// the Tasks-Nodes tasks left, each node as many more whole tasks of
// PerTask as it has spare at its lowest over the interval (at most
// MaxTasksPerNode in all). The tasks are dealt one per node in turn, in
// the chosen order, while a node has room (Slurm's cyclic distribution of
// tasks over nodes): -N2 -n7 on two free nodes is 4+3, and -N2 -n5 with
// two GPUs per task on nodes with 8 and 4 free GPUs is 3+2. The search,
// its retries where a candidate's free amounts change, and the booking
// are the Spread's; only the share each node takes differs.

// setTasks projects r's task request into q (after setSpread): q.spread
// holds PerTask in profile units, sdims its non-zero dimensions, q.tasks
// the tasks beyond one per node and q.tmax the most of them one node may
// take.
func (p *Profile) setTasks(q *query, r *Request) error {
	q.tasks, q.tmax, q.taskReq, q.plane = 0, 0, false, 0
	if r.PlaneSize < 0 {
		return fmt.Errorf("%w: PlaneSize %d is negative", ErrInvalidRequest, r.PlaneSize)
	}
	if r.Tasks == 0 && r.PerTask.IsZero() && r.MaxTasksPerNode == 0 {
		return nil
	}
	q.plane = int64(r.PlaneSize)
	q.taskReq = true
	switch {
	case r.Tasks < r.Nodes:
		return fmt.Errorf("%w: Tasks %d fewer than Nodes %d (each node runs at least one)", ErrInvalidRequest, r.Tasks, r.Nodes)
	case !r.Spread.IsZero():
		return fmt.Errorf("%w: Tasks and Spread are exclusive", ErrInvalidRequest)
	case q.plane > 0 && planeBlocks(int64(r.Tasks), q.plane) < int64(r.Nodes):
		// Slurm refuses fewer blocks than nodes (every node gets one).
		return fmt.Errorf("%w: Tasks %d make %d block(s) of PlaneSize %d, fewer than Nodes %d",
			ErrInvalidRequest, r.Tasks, planeBlocks(int64(r.Tasks), q.plane), q.plane, r.Nodes)
	case r.MaxTasksPerNode < 0:
		return fmt.Errorf("%w: MaxTasksPerNode %d is negative", ErrInvalidRequest, r.MaxTasksPerNode)
	case r.MaxTasksPerNode > 0 && int64(r.MaxTasksPerNode)*int64(r.Nodes) < int64(r.Tasks):
		return fmt.Errorf("%w: %d tasks do not fit %d node(s) of at most %d", ErrInvalidRequest, r.Tasks, r.Nodes, r.MaxTasksPerNode)
	}
	q.tasks = int64(r.Tasks - r.Nodes)
	q.tmax = posInf
	if r.MaxTasksPerNode > 0 {
		q.tmax = int64(r.MaxTasksPerNode - 1)
	}
	if q.tasks == 0 || r.PerTask.IsZero() {
		// One task per node, or tasks that need nothing: the per-node
		// request alone decides (sdims stays empty: no Spread). The
		// MaxTasksPerNode bound was checked above.
		return nil
	}
	q.spread = slices.Grow(q.spread[:0], p.a)[:p.a]
	ok, err := p.project(r.PerTask, q.spread)
	if err != nil {
		return fmt.Errorf("%w: PerTask: %w", ErrInvalidRequest, err)
	}
	if !ok {
		q.never = true
	}
	for j, v := range q.spread {
		if v != 0 {
			q.sdims = append(q.sdims, j)
		}
	}
	return nil
}

// planeBlocks is ceil(tasks/plane) without overflow (tasks ≥ 0, plane ≥ 1).
func planeBlocks(tasks, plane int64) int64 {
	b := tasks / plane
	if tasks%plane != 0 {
		b++
	}
	return b
}

// hasTasks reports whether the query spreads tasks (rather than a Spread
// total).
func (q *query) hasTasks() bool { return q.tasks > 0 && len(q.sdims) > 0 }

// taskRoom is how many whole tasks beyond the first fit in spare (the
// request's dimensions only), at most q.tmax.
func (q *query) taskRoom(spare []int64) int64 {
	n := q.tmax
	for _, j := range q.sdims {
		n = min(n, max(spare[j], 0)/q.spread[j])
	}
	return n
}

// DealTasks shares extra tasks over nodes whose rooms are room
// (parallel), one per node in turn while a node has room (Slurm's cyclic
// distribution of tasks over nodes), into out (parallel); it reports
// false when the rooms do not hold them. The planner deals a Tasks
// request's tasks beyond one per node this way, and so does a caller
// placing such a job now.
func DealTasks(extra int64, room, out []int64) bool {
	if len(out) < len(room) || extra < 0 || roomSum(room, extra, extra) < extra {
		return false
	}
	// The level L where the turns stop: every node takes min(room, L-1),
	// then the first nodes with room ≥ L one more each.
	lo, hi := int64(0), extra
	for lo < hi {
		mid := lo + (hi-lo)/2
		if roomSum(room, extra, mid) >= extra {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	var given int64
	for x, r := range room {
		out[x] = min(r, max(lo-1, 0))
		given += out[x]
	}
	for x, r := range room {
		if given == extra {
			break
		}
		if r >= lo && lo > 0 {
			out[x]++
			given++
		}
	}
	return given == extra
}

// DealPlanes shares total tasks over nodes whose rooms are room
// (parallel, each node's whole room), in blocks of plane tasks to each
// node in turn, a block cut to the node's room left and to the tasks
// left (Slurm's plane distribution: -N4 -n21 -m plane=4 on roomy nodes
// is 8+5+4+4), into out (parallel); it reports false when the rooms do
// not hold them or a node would get none. Submission bounds a plane
// job's nodes by ceil(total/plane) (Slurm refuses fewer blocks than
// nodes), so that every node gets a task whenever the rooms hold them.
func DealPlanes(total, plane int64, room, out []int64) bool {
	if plane < 1 || total < 0 || len(out) < len(room) || roomSum(room, total, total) < total {
		return false
	}
	// After k whole rounds every node holds min(room, k·plane): find the
	// last k at which that is still at most total, then deal the next
	// round in order until the tasks run out.
	lo, hi := int64(0), total/plane+1
	reach := func(k int64) int64 {
		// k·plane, or just past total where it is (no room exceeds
		// MaxInt64, so min(room, reach) is the same).
		switch {
		case k <= total/plane:
			return k * plane
		case total < math.MaxInt64:
			return total + 1
		}
		return total
	}
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if !roomsExceed(room, total, reach(mid)) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	left := total
	for x, r := range room {
		out[x] = min(r, reach(lo))
		left -= out[x]
	}
	for x, r := range room {
		c := min(plane, r-out[x], left)
		out[x] += c
		left -= c
	}
	if left != 0 {
		return false
	}
	for _, c := range out {
		if c < 1 {
			return false
		}
	}
	return true
}

// roomsExceed reports whether the rooms, each cut to [0, level], sum to
// more than total (without overflow).
func roomsExceed(room []int64, total, level int64) bool {
	var sum int64
	for _, r := range room {
		v := max(min(r, level), 0)
		if v > total-sum {
			return true
		}
		sum += v
	}
	return false
}

// roomSum is the sum of the rooms, each cut to [0, level], or limit
// once it reaches limit (so that many nodes of huge rooms cannot overflow
// it).
func roomSum(room []int64, limit, level int64) int64 {
	var sum int64
	for _, r := range room {
		if v := max(min(r, level), 0); v < limit-sum {
			sum += v
		} else {
			return limit
		}
	}
	return sum
}

// tasksOver is spreadOver for a task request: nodes, in this order, hold
// the tasks beyond one per node over [s, e) when their spare rooms do.
func (p *Profile) tasksOver(q *query, nodes []int, s, e int64) bool {
	a := p.a
	n := len(nodes)
	spare := q.spare(a)
	q.roomBuf = slices.Grow(q.roomBuf[:0], 2*n)[:2*n]
	room := q.roomBuf
	for x, i := range nodes {
		p.spareOn(q, i, s, e, spare)
		room[x] = q.taskRoom(spare)
	}
	got := room[n:]
	if q.plane > 0 {
		// Blocks over every task, each node's first included.
		for x := range n {
			room[x]++
		}
		if !DealPlanes(q.tasks+int64(n), q.plane, room[:n], got) {
			return false
		}
		for x := range got {
			got[x]--
		}
	} else if !DealTasks(q.tasks, room[:n], got) {
		return false
	}
	q.share = slices.Grow(q.share[:0], n*a)[:n*a]
	clear(q.share)
	q.ntask = slices.Grow(q.ntask[:0], n)[:n]
	for x := range nodes {
		q.ntask[x] = int(got[x]) + 1
		for _, j := range q.sdims {
			q.share[x*a+j] = got[x] * q.spread[j]
		}
	}
	return true
}

// tasksCapable is spreadCapable for a task request: the Nodes allowed
// nodes with the most room beyond one task, at capacity, hold the tasks.
func (p *Profile) tasksCapable(q *query) bool {
	a := p.a
	// top holds the q.n largest rooms seen, ascending; any q.n nodes
	// whose rooms hold the tasks prove it, so the scan stops there.
	top := make([]int64, 0, min(q.n, 64))
	var sum int64
	spare := q.spare(a)
	for i := q.allowed.Next(0); i >= 0; i = q.allowed.Next(i + 1) {
		c := p.caps[i*a : (i+1)*a]
		if !q.fits(c) {
			continue
		}
		for _, j := range q.sdims {
			spare[j] = c[j] - q.req[j]
		}
		r := q.taskRoom(spare)
		switch {
		case len(top) < q.n:
			k, _ := slices.BinarySearch(top, r)
			top = slices.Insert(top, k, r)
			sum += r
		case r > top[0]:
			sum += r - top[0]
			top = top[1:]
			k, _ := slices.BinarySearch(top, r)
			top = slices.Insert(top, k, r)
		}
		if len(top) == q.n && sum >= q.tasks {
			return true
		}
	}
	return false
}

// taskCounts returns each chosen node's task count (parallel to the last
// successful choice's nodes), or nil for a request without tasks.
func (p *Profile) taskCounts(q *query, nodes int) []int {
	if !q.taskReq {
		return nil
	}
	if !q.hasTasks() && q.plane > 0 {
		// Tasks that need nothing beyond the first: dealt in blocks.
		room, got := make([]int64, nodes), make([]int64, nodes)
		for x := range room {
			room[x] = q.tmax + 1
		}
		out := make([]int, nodes)
		if DealPlanes(q.tasks+int64(nodes), q.plane, room, got) {
			for x := range out {
				out[x] = int(got[x])
			}
			return out
		}
	}
	if !q.hasTasks() {
		// Every node one task plus an equal part of what needs nothing.
		out := make([]int, nodes)
		per, rest := q.tasks/int64(nodes), q.tasks%int64(nodes)
		for x := range out {
			out[x] = 1 + int(per)
			if int64(x) < rest {
				out[x]++
			}
		}
		return out
	}
	return slices.Clone(q.ntask)
}

// taskVectorOK checks a task request's vector counts.
func taskVectorOK(v gres.Vector) error {
	for k, c := range v {
		if c < 0 || c > gres.MaxCount {
			return fmt.Errorf("PerTask TRES %d count %d out of [0, %d]", k, c, gres.MaxCount)
		}
	}
	return nil
}
