package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

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

// SetCycleFault makes every later Schedule call f at the end of its cycle
// (after the backfill pass) and fail with the error f returns, so tests
// can check that a failed cycle changes nothing. Nil removes it.
func SetCycleFault(s *Scheduler, f func() error) { s.cycleFault = f }

// UsageDigest formats the policy usage counters of every QOS (group,
// per-user, per-account), the singleton counts and the array task counts,
// for tests comparing two schedulers' state.
func UsageDigest(s *Scheduler, now time.Time) string {
	var b strings.Builder
	if s.pol != nil {
		fmt.Fprintf(&b, "jobs %d singletons %v\n", s.pol.usage.Len(), s.pol.singletons)
		for _, q := range s.pol.p.Config().QOS {
			g, _ := s.pol.usage.QOSUsage(q.Name, now)
			fmt.Fprintf(&b, "qos %s %+v\n", q.Name, g)
			for _, who := range []string{"ann", "bob", "cy", "a", "b", ""} {
				r, n, sub := s.pol.usage.QOSUserUsage(q.Name, who)
				ra, na, suba := s.pol.usage.QOSAccountUsage(q.Name, who)
				fmt.Fprintf(&b, "  %s: %v %d %d / %v %d %d\n", who, r, n, sub, ra, na, suba)
			}
		}
	}
	ids := make([]JobID, 0, len(s.arrays))
	for id := range s.arrays {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(&b, "array %d %+v\n", id, *s.arrays[id])
	}
	return b.String()
}

// SettlePasses returns how many further passes Schedule calls have run to
// settle their cycles (see settle).
func SettlePasses(s *Scheduler) uint64 { return s.settlePasses }

// WhereNarrowOff makes the backfill plan give where jobs their whole
// allowed set (no narrowAllowed), so tests can check that narrowing
// changes no decision.
func WhereNarrowOff(s *Scheduler) { s.whereC.noNarrow = true }
