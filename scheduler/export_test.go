package scheduler

// RebuildProfileEveryCycle makes the backfill pass build a fresh profile
// every cycle instead of keeping one, so tests can check that both give
// the same decisions.
func RebuildProfileEveryCycle(s *Scheduler) {
	if s.bf != nil {
		s.bf.rebuild = true
	}
}

// ReplanEveryCycle makes the backfill pass plan the whole queue every
// cycle, never extending the last plan, so benchmarks can measure a cycle
// after something changed even when nothing did.
func ReplanEveryCycle(s *Scheduler) {
	if s.bf != nil {
		s.bf.noExtend = true
	}
}
