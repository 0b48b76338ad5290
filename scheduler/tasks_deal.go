package scheduler

import (
	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
)

// How a task spread's tasks are dealt over its nodes (tasks.go): one per
// node in turn while a node has room, or in blocks for -m plane=<size>;
// and what the backfill plan counts of them.

// evenCounts is each of nodes nodes' task count with room for all: the
// tasks dealt one at a time (ceil or floor of total/nodes) or, for -m
// plane, in blocks.
func (ts *taskSpread) evenCounts(nodes int) []int64 {
	room := make([]int64, nodes)
	for k := range room {
		room[k] = int64(ts.total)
	}
	if out := dealTasks(int64(ts.total), room, ts.plane); out != nil {
		return out
	}
	out := make([]int64, nodes) // fewer tasks than nodes (a node range alone)
	for k := range out {
		out[k] = int64(ts.total / nodes)
		if k < ts.total%nodes {
			out[k]++
		}
	}
	return out
}

// dealTasks shares total tasks over nodes whose rooms are room (parallel),
// one per node in turn while a node has room (Slurm's cyclic distribution
// over nodes) or, with plane, in blocks of plane tasks (Slurm's -m
// plane=<size>, backfill.DealPlanes), and returns each node's count, or
// nil when they do not hold them. Every node gets at least one.
func dealTasks(total int64, room []int64, plane int64) []int64 {
	n := int64(len(room))
	if total < n {
		return nil
	}
	if plane > 0 {
		out := make([]int64, len(room))
		if !backfill.DealPlanes(total, plane, room, out) {
			return nil
		}
		return out
	}
	more := make([]int64, 2*len(room))
	for x, r := range room {
		if r < 1 {
			return nil
		}
		more[x] = r - 1 // beyond the first task every node runs
	}
	out := more[len(room):]
	if !backfill.DealTasks(total-n, more[:len(room)], out) {
		return nil
	}
	for x := range out {
		out[x]++
	}
	return out
}

// bfTasks is the task request the backfill plan counts for job x: its
// task count, each task's TRES beyond a node's first and the most tasks
// per node; zeros where the plan counts bfMin on every node (every task
// on a one-node plan, or ceil(total/nodes) where tasks are not linear).
func (x *job) bfTasks() (tasks int, perTask gres.Vector, maxPer int) {
	if !x.planCountsTasks() {
		return 0, nil, 0
	}
	ts := x.tasks
	return ts.total, ts.perTask, ts.maxPer
}

// bfPlane is the plane size the backfill plan deals job x's tasks in
// (backfill.Request.PlaneSize): -m plane's where the plan counts the
// tasks one by one, else 0.
func (x *job) bfPlane() int {
	if !x.planCountsTasks() {
		return 0
	}
	return int(x.tasks.plane)
}
