package scheduler

// RebuildProfileEveryCycle makes the backfill pass build a fresh profile
// every cycle instead of keeping one, so tests can check that both give
// the same decisions.
func RebuildProfileEveryCycle(s *Scheduler) {
	if s.bf != nil {
		s.bf.rebuild = true
	}
}
