package scheduler

import (
	"time"
)

// noteLostRun counts in Job.LostWorkGPUSeconds the work of running (or
// suspended) job j's current run, ended at now without its work kept:
// its GPUs × the time since its last checkpoint in this run (or its
// start). The caller has touched j (or is outside a cycle). A
// preemption victim (j.preempting, in its grace time or being ended by
// endPreempted) is skipped: the preemption plan counted its loss, grace
// time included, so a failure, node failure or requeue in its grace time
// does not count it again.
func (s *Scheduler) noteLostRun(j *job, now time.Time) {
	if (j.State != JobRunning && j.State != JobSuspended) || j.preempting {
		return
	}
	from := j.StartTime
	if j.LastCheckpoint.After(from) {
		from = j.LastCheckpoint
	}
	if !now.After(from) {
		return
	}
	if g := s.allocGPUs(j); g > 0 {
		j.LostWorkGPUSeconds += float64(g) * now.Sub(from).Seconds()
	}
}

// allocGPUs counts the whole GPU devices of j's allocation.
func (s *Scheduler) allocGPUs(j *job) int {
	c := 0
	for _, na := range j.Alloc.Nodes {
		n := &s.nodes[na.Node]
		for _, d := range na.Devices {
			if n.isGPU(d) {
				c++
			}
		}
	}
	return c
}

// lostOnRequeue notes the loss of a run requeued (see requeue), for any
// reason: a preempted job's loss, which the preemption plan counted
// (with its grace time) in LostGPUSeconds and LostWorkGPUSeconds, is
// skipped by noteLostRun (j.preempting), not by the reason, since a
// heterogeneous job's other components are requeued with the preempted
// component's reason (regroupHets) and lose their own work.
func (s *Scheduler) lostOnRequeue(j *job, now time.Time) {
	s.noteLostRun(j, now)
}

// lostOnEnd notes the loss of a run ended in state st (see endJob): a
// node failure, a time limit or a failure loses the run's work.
func (s *Scheduler) lostOnEnd(j *job, st JobState, at time.Time) {
	switch st {
	case JobNodeFail, JobTimeout, JobFailed:
		s.noteLostRun(j, at)
	}
}
