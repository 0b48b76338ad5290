package scheduler

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/policy"
)

// HetExplanation explains a component of a heterogeneous job
// (Explanation.Het): the job's components, and which of them the job
// waits for. The components start together, so a pending job starts when
// its last component can: Blocking is that component, the one whose own
// earliest start (Alone, as if the others did not exist) is the latest,
// and its Reason says what holds it.
type HetExplanation struct {
	// HetJobID is the leader's ID; Offset the explained component's.
	HetJobID JobID
	Offset   int
	// Start is the common expected start of the pending components (the
	// last plan's); zero without an estimate.
	Start time.Time
	// Components lists every component still known, in offset order.
	Components []HetComponent
	// Blocking is the offset of the component the pending job waits for
	// (-1 when none can be named: the job is not pending, no plan is at
	// hand, or every component could start now and Limit holds the job).
	Blocking int
	// Limit names the concurrent limit or license pool that the pending
	// components exceed together, though none may alone (Slurm counts
	// them all against the job's limits, as they start together), and
	// by how much: "its heterogeneous job's components together ask
	// gres/gpu=8 with 4 in use, above MaxTRESPerUser gres/gpu=8 (user
	// u)". Empty when no such limit holds the job.
	Limit string
	// Never says that the components exceed Limit even with no other
	// job running: the job can then never start as it is.
	Never bool
}

// HetComponent is one component in a HetExplanation.
type HetComponent struct {
	Job    JobID
	Offset int
	State  JobState
	Reason policy.Reason
	// Alone is when the pending component could start on its own on the
	// last plan's profile (without the other components, and without
	// the job's own reservations); zero when it never fits in the
	// window, when it is not pending, or without a plan.
	Alone time.Time
	// PlannedNodes are its nodes in the last plan.
	PlannedNodes []string
}

// explainHet builds the heterogeneous-job part of j's explanation.
func (s *Scheduler) explainHet(now time.Time, j *job) *HetExplanation {
	h := s.hets[j.HetJobID]
	if h == nil {
		return nil
	}
	he := &HetExplanation{HetJobID: j.HetJobID, Offset: j.HetJobOffset, Blocking: -1}
	prof := s.readableProfile()
	if prof != nil {
		prof = prof.Clone()
		for _, c := range h.comps {
			if c != nil && prof.Has(backfill.JobID(c.ID)) && c.State == JobPending {
				_ = prof.Release(backfill.JobID(c.ID)) // the job's own reservation
			}
		}
	}
	if pend := s.hetPending(j); len(pend) > 1 {
		if held, never := s.hetLimits(pend, true); never.ok {
			he.Limit, he.Never = hetLimitText(never.sl, never.sum, 0), true
		} else if held.ok {
			he.Limit = hetLimitText(held.sl, held.sum, held.sl.Used)
		}
	}
	var latest time.Time
	window := time.Time{}
	if s.bf != nil {
		window = now.Add(s.bf.planner.Config().Window)
	}
	for _, c := range h.comps {
		if c == nil {
			continue
		}
		hc := HetComponent{Job: c.ID, Offset: c.HetJobOffset, State: c.State, Reason: c.Reason}
		if c.State == JobPending {
			if he.Start.IsZero() {
				he.Start = c.ExpectedStart
			}
			hc.PlannedNodes = s.snapshot(c).PlannedNodes
			if prof != nil && !prof.Now().After(now) {
				// The search the plan made for the component (planHet
				// plans each with its full TimeLimit).
				bj := s.bfJob(now, c, s.allowedNodes(c.shape), c.shape)
				req := s.bf.planner.JobRequest(&bj, bj.TimeLimit, maxTime(bj.Earliest, now))
				req.Latest = window
				fit, err := prof.EarliestFit(req)
				if err == nil && fit.Status == backfill.FitFound {
					hc.Alone = fit.Start
				}
				if err == nil && (fit.Status != backfill.FitFound || fit.Start.After(latest)) {
					// Never fitting in the window blocks most.
					if fit.Status != backfill.FitFound {
						latest = farFuture
					} else {
						latest = fit.Start
					}
					he.Blocking = c.HetJobOffset
				}
			}
		}
		he.Components = append(he.Components, hc)
	}
	if he.Limit != "" && !latest.After(now) {
		he.Blocking = -1 // every component could start now: the limit holds the job
	}
	return he
}

// farFuture ranks a component that never fits after every one that does.
var farFuture = time.Unix(1<<40, 0)

// write appends the part of Explanation.String about the heterogeneous
// job.
func (he *HetExplanation) write(b *strings.Builder, now time.Time) {
	fmt.Fprintf(b, "  Heterogeneous job %d+%d (component %d of %d): its components start together", he.HetJobID, he.Offset, he.Offset+1, len(he.Components))
	if !he.Start.IsZero() {
		fmt.Fprintf(b, ", expected %s", at(he.Start, now))
	}
	b.WriteString("\n")
	if he.Limit != "" {
		if he.Never {
			fmt.Fprintf(b, "    It can never start as it is: %s even with no other job running\n", he.Limit)
		} else {
			fmt.Fprintf(b, "    It waits on a limit: %s\n", he.Limit)
		}
	}
	for _, c := range he.Components {
		fmt.Fprintf(b, "    %d+%d (job %d) %s", he.HetJobID, c.Offset, c.Job, c.State)
		if c.State == JobPending {
			fmt.Fprintf(b, ": %s", c.Reason)
			if !c.Alone.IsZero() {
				fmt.Fprintf(b, ", alone it could start %s", at(c.Alone, now))
			}
			if c.Offset == he.Blocking {
				b.WriteString(" — the job waits for this component")
			}
		}
		b.WriteString("\n")
	}
}
