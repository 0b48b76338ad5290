package scheduler

// PlanFromScratch makes every later backfill pass of s plan as if it were
// the scheduler's first: a fresh profile built from the running jobs and
// the node states (no kept profile brought forward with Advance, releases
// and AddStarted), with every running job's profile use computed afresh
// (no job.bfUse), the whole queue planned (the last plan never extended),
// and every planner input built afresh (no kept policy checks or counter
// numbers: bfState.noReuse). TestIncrementalPlanMatchesFull compares a
// scheduler so switched with a normal one, cycle by cycle: whatever the
// backfill pass keeps from one pass to the next must decide exactly as
// not keeping it.
//
// Every cache that lives across passes must be switched off here, so that
// the comparison covers it. (The planner's shape cache, which gives an
// answer again within a pass, lives for one pass: nothing to switch.)
func PlanFromScratch(s *Scheduler) {
	if s.bf != nil {
		s.bf.rebuild = true
		s.bf.noExtend = true
		s.bf.noReuse = true
	}
}

// BackfillReserved reports whether job id, pending, holds a reservation
// of the last backfill plan (its expected start is a booking later jobs
// plan around, not only an estimate): EASY's head job, conservative's
// every planned job.
func BackfillReserved(s *Scheduler, id JobID) bool {
	j, ok := s.jobs[id]
	return ok && j.State == JobPending && j.reserved
}

// MayExtendPlan reports whether the changes noted since the last backfill
// pass of s leave the next pass free to extend the last plan rather than
// plan the whole queue (the part of canExtend that does not depend on the
// next cycle's jobs and windows): there is a last plan, it started
// nothing, no job started or ended since, node capacity did not change
// and s plans incrementally. Tests count such cycles to show that the
// extension path can run. It does not say that the pass will extend:
// canExtend also needs the same jobs at the head of the queue and the
// same reservation windows, and a pass with limit counters (QOS or
// association limits in force, see attachCounters) never extends.
func MayExtendPlan(s *Scheduler) bool {
	b := s.bf
	return b != nil && b.plan != nil && !b.rebuild && !b.noExtend && !b.dirty &&
		len(b.ended) == 0 && len(b.started) == 0 && len(b.plan.Starts) == 0
}
