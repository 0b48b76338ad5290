package scheduler

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/backfill"
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
// allowed set and the where chooser (no narrowAllowed, no matching-OR
// alternatives, no shortcut for one counted group, the lowest indices
// chosen through anyChoice rather than chooseIn's ascending walk), so
// tests can check that those change no decision.
func WhereNarrowOff(s *Scheduler) { s.whereC.noNarrow = true }

// KeptProfileMismatch brings a clone of the kept backfill profile to now
// as the next cycle would (the changes noted since the last plan applied,
// reservations and blocks released) and compares every node's timeline
// with a profile built afresh at now from profile use computed anew (no
// cache). It returns "" when they are the same or there is no kept
// profile to compare (none yet, or stale: the next cycle rebuilds it).
func KeptProfileMismatch(s *Scheduler, now time.Time) string {
	b := s.bf
	if b == nil || b.last == nil || b.dirty || b.last.NumNodes() != len(s.nodes) {
		return ""
	}
	kept := b.last.Clone()
	if err := s.updateProfile(kept, now, slices.Clone(b.ended), slices.Clone(b.started), nil); err != nil {
		return "update: " + err.Error()
	}
	var running []backfill.Running
	s.running.Ascend(func(j *job) bool {
		use, gen, gens := j.bfUse, j.bfUseHealthGen, j.bfUseSharerGens
		j.bfUse = nil
		running = append(running, s.profileRunningJob(j))
		j.bfUse, j.bfUseHealthGen, j.bfUseSharerGens = use, gen, gens
		return true
	})
	nodes := slices.Clone(s.profileNodes())
	fresh, err := b.planner.NewProfile(now, nodes, running)
	if err != nil {
		return "fresh: " + err.Error()
	}
	for i := range s.nodes {
		kt, err1 := kept.Timeline(i)
		ft, err2 := fresh.Timeline(i)
		if err1 != nil || err2 != nil {
			return fmt.Sprintf("node %d: %v %v", i, err1, err2)
		}
		if !reflect.DeepEqual(kt, ft) {
			return fmt.Sprintf("node %d: kept %+v, fresh %+v", i, kt, ft)
		}
	}
	return ""
}
