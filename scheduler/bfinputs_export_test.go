package scheduler

// BackfillNoReuse turns off (or on again) what the backfill pass keeps on
// the jobs to build its inputs (bfinputs.go), so that benchmarks can time
// both on one state: the decisions are the same either way.
func BackfillNoReuse(s *Scheduler, off bool) {
	if s.bf != nil {
		s.bf.noReuse = off
	}
}
