package scheduler

import (
	"fmt"

	"github.com/sluicehq/sluice/backfill"
)

// Explain's searches on the plan (a job's own earliest fit, the what-ifs)
// see the limit counters as the backfill pass plans with them: a start
// that fits the nodes is moved later until every concurrent limit the job
// counts against has room over its run, as backfill's planner does for a
// job with Uses. Without it a what-if ("with a shorter time limit it
// starts now") could promise a start that a limit, or the room a
// higher-priority job's reservation needs of it, forbids.

// maxCounterRounds bounds the alternations of node search and counter
// room in countedFit (each round moves the start later).
const maxCounterRounds = 64

// planUses returns the counters of profile p's set that job x counts
// against, with its amounts and limits, as attachCounters gives them to a
// planned job. A limit without a counter in the set (no planned job reads
// it, or p carries none) is checked at its use now, which nothing in the
// plan releases: room is false when it has none.
func (s *Scheduler) planUses(p *backfill.Profile, x *job) (uses []backfill.Use, room bool) {
	if s.pol == nil {
		return nil, true
	}
	req := s.policyRequest(x)
	ctr := p.Counters()
	for _, sl := range s.pol.p.Slots(&req, s.pol.usage, nil) {
		id, ok := backfill.CounterID(0), false
		if ctr != nil && s.bf != nil {
			id, ok = s.bf.ctr.ids[sl.Key]
		}
		if !ok {
			if sl.Used+sl.Add > sl.Limit {
				return nil, false
			}
			continue
		}
		uses = append(uses, slotUse(id, sl))
	}
	return uses, true
}

// countedFit moves fit, job x's node fit for req on p, later until the
// counters x counts against have room over [start, start+req.Duration),
// searching the nodes again from each such time. A job no counter can
// hold, or one past the rounds, gets FitBeyondLatest: no start the plan
// can promise.
func (s *Scheduler) countedFit(p *backfill.Profile, x *job, req backfill.Request, fit backfill.Fit) (backfill.Fit, error) {
	if fit.Status != backfill.FitFound {
		return fit, nil
	}
	uses, room := s.planUses(p, x)
	if !room {
		return backfill.Fit{Status: backfill.FitBeyondLatest}, nil
	}
	if len(uses) == 0 {
		return fit, nil
	}
	for range maxCounterRounds {
		t, ok, err := p.Counters().Earliest(uses, fit.Start, req.Duration)
		if err != nil {
			return fit, fmt.Errorf("scheduler: job %d: counters: %w", x.ID, err)
		}
		if !ok {
			return backfill.Fit{Status: backfill.FitBeyondLatest}, nil
		}
		if !t.After(fit.Start) {
			return fit, nil
		}
		req.Earliest = t
		if fit, err = p.EarliestFit(req); err != nil || fit.Status != backfill.FitFound {
			return fit, err
		}
	}
	return backfill.Fit{Status: backfill.FitBeyondLatest}, nil
}
