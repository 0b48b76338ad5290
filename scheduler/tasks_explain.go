package scheduler

import (
	"slices"

	"github.com/sluicehq/sluice/topology"
)

// tasksNeed adds to need, for a job with a task spread, its task count,
// node range and how many of its tasks the nodes of fit (each holding one
// task now) hold: the NodesMax of them with the most room. It reports
// whether that falls short of the tasks.
func (s *Scheduler) tasksNeed(j *job, fit topology.NodeSet, need *ResourceNeed) bool {
	ts := j.tasks
	need.Tasks, need.NodesMax = ts.total, ts.nodesMax
	rooms := make([]int64, 0, fit.Count())
	for i := fit.Next(0); i >= 0; i = fit.Next(i + 1) {
		rooms = append(rooms, s.taskRoom(j, &s.nodes[i], s.freeFor(j, &s.nodes[i]), false))
	}
	slices.SortFunc(rooms, func(a, b int64) int { return int(b - a) })
	var room int64
	for _, r := range rooms[:min(ts.nodesMax, len(rooms))] {
		room += r
	}
	need.TaskRoom = int(min(room, int64(ts.total)))
	return room < int64(ts.total)
}
