package backfill

import "time"

// JobRequest is the profile request the planner searches for job j, a
// plain job or one component of a heterogeneous job (Job.Components),
// planned for d from earliest: j's per-node request (PerNode), Spread,
// task spread (Tasks, PerTask, MaxTasksPerNode: Slurm's -n without -N;
// PlaneSize: -m plane), required nodes (Required: -w), a matching OR's
// sets (Alternatives),
// exclusivity and allowed nodes, its Chooser or else Config.Chooser, and
// Config.BusyNodes (bf_busy_nodes). Latest is left zero (no bound). Every
// search the planner makes for a job uses this request, so a caller
// asking what the plan's profile holds for j alone (an explanation's
// "could start alone at") asks the same question the plan did.
func (pl *Planner) JobRequest(j *Job, d time.Duration, earliest time.Time) Request {
	chooser := pl.cfg.Chooser
	if j.Chooser != nil {
		chooser = j.Chooser
	}
	return Request{
		Nodes: j.Nodes, PerNode: j.PerNode, Spread: j.Spread, Exclusive: j.Exclusive, Allowed: j.Allowed,
		Duration: d, Earliest: earliest, Chooser: chooser, PreferBusy: pl.cfg.BusyNodes,
		Tasks: j.Tasks, PerTask: j.PerTask, MaxTasksPerNode: j.MaxTasksPerNode, PlaneSize: j.PlaneSize,
		Required: j.Required, Alternatives: j.Alternatives,
	}
}
