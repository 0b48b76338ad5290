// Package explaintest checks Explain's answers by doing what they say.
//
// An explanation makes claims about the future: "expected start T" and
// counterfactuals such as "with a time limit ≤ 1h it starts now". Check
// verifies one by replaying the recorded events (a Log, or any journal's
// entries) into a fresh scheduler up to the explanation's instant,
// applying the change the answer proposes, and running the cluster
// forward under exact run times: nothing new is submitted, and every
// running job ends exactly at its time limit (as COMPLETED, so that
// afterok dependencies are met). The job's start in that replay is
// compared with the claim:
//
//   - a start now must happen at the explanation's instant;
//   - a later start T must happen at or before T.
//
// An answer labelled a promise (Estimate.Bound, Counterfactual.Bound: a
// start now, a reservation, any start under conservative backfill) must
// hold; one labelled an estimate (EASY beyond its reservations, a job
// that a higher-priority job outside the plan may overtake, a change
// that moves the job in the queue) may not, and Verdict.Error measures
// how far off it was.
//
// The package is for tests and benchmarks; it only uses the scheduler's
// public API.
package explaintest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// ErrNotReplayable reports an answer Check cannot verify by replay.
var ErrNotReplayable = errors.New("explaintest: answer not replayable")

// Entry is one recorded event and its time.
type Entry struct {
	At    time.Time
	Event scheduler.Event
}

// Log is a scheduler.EventLog that keeps every event in memory, in order:
// set it with Scheduler.SetEventLog from the scheduler's creation on. The
// zero value is ready to use.
type Log struct {
	entries []Entry
}

// Append records ev at now; it never fails.
func (l *Log) Append(now time.Time, ev scheduler.Event) error {
	l.entries = append(l.entries, Entry{At: now, Event: ev})
	return nil
}

// Entries returns the events recorded so far (the log's own slice: do
// not modify it). Slicing it at Len before later events gives the history
// of an instant.
func (l *Log) Entries() []Entry { return l.entries[:len(l.entries):len(l.entries)] }

// Len returns the number of events recorded.
func (l *Log) Len() int { return len(l.entries) }

// Answer is one claim of an explanation about when its job starts.
type Answer struct {
	Job scheduler.JobID
	// At is the explanation's instant (Explanation.Now).
	At time.Time
	// Counterfactual is the what-if the claim is about; nil for the
	// expected start itself (Explanation.Estimate).
	Counterfactual *scheduler.Counterfactual
	// Start is the claimed start; Now reports a start at At.
	Start time.Time
	Now   bool
	// Bound is the explanation's own label: a promise (true) or an
	// estimate (see scheduler.Estimate.Bound).
	Bound bool
	// Blocker is what the explanation said holds the job: the kind of
	// its last blocker (the one nearest the resources: queue, resources,
	// reservation …), or ok false when none was listed.
	Blocker   scheduler.BlockerKind
	BlockerOK bool
	// Overtakers are the higher-priority jobs outside the plan the
	// explanation named (Estimate.Overtakers): why a later start is not
	// a promise.
	Overtakers []scheduler.Overtaker
	// NotPromised is the explanation's reason for labelling a start the
	// plan reserves an estimate (Estimate.NotPromised or
	// Counterfactual.NotPromised): shared GPUs planned conservatively.
	NotPromised string
}

// Kind names the answer's kind: "estimate", or the counterfactual's kind
// with "now" or "later" ("time-limit now", "partition later").
func (a Answer) Kind() string {
	if a.Counterfactual == nil {
		return "estimate"
	}
	when := "later"
	if a.Now {
		when = "now"
	}
	return a.Counterfactual.Kind.String() + " " + when
}

// BlockerName names the answer's blocker kind, "none" without one.
func (a Answer) BlockerName() string {
	if !a.BlockerOK {
		return "none"
	}
	return a.Blocker.String()
}

// Answers returns every claim of ex about a start: its expected start
// (when it has one) and each counterfactual with a start (not the
// fair-share one, which is about a rank).
func Answers(ex scheduler.Explanation) []Answer {
	if ex.State != scheduler.JobPending {
		return nil
	}
	base := Answer{Job: ex.Job, At: ex.Now}
	if n := len(ex.Blockers); n > 0 {
		base.Blocker, base.BlockerOK = ex.Blockers[n-1].Kind, true
	}
	if ex.Estimate != nil {
		base.Overtakers = ex.Estimate.Overtakers
	}
	var out []Answer
	if est := ex.Estimate; est != nil && est.Source != scheduler.EstimateNone && !est.Start.IsZero() {
		a := base
		a.Start, a.Now, a.Bound, a.NotPromised = est.Start, !est.Start.After(ex.Now), est.Bound, est.NotPromised
		out = append(out, a)
	}
	for k := range ex.Counterfactuals {
		cf := &ex.Counterfactuals[k]
		if cf.Kind == scheduler.CounterFairShare || cf.Start.IsZero() {
			continue
		}
		a := base
		a.Counterfactual = cf
		a.Start, a.Now, a.Bound, a.NotPromised = cf.Start, cf.Now, cf.Bound, cf.NotPromised
		out = append(out, a)
	}
	return out
}

// Outcome is what the replay found.
type Outcome uint8

// Outcomes.
const (
	// Held: the job started as claimed.
	Held Outcome = iota
	// Failed: it started later than claimed, or not at all within the
	// horizon.
	Failed
)

var outcomeNames = [...]string{"held", "failed"}

// String names the outcome.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Verdict is the result of checking one answer.
type Verdict struct {
	Answer  Answer
	Outcome Outcome
	// Actual is the job's start in the replay; zero when it did not start
	// within the horizon.
	Actual time.Time
	// AtSubmit reports that the change was applied at the job's
	// submission (a changed GPU request, which JobUpdate cannot carry)
	// rather than at the answer's instant: the job may then start before
	// it, which counts as held.
	AtSubmit bool
}

// Error returns how late the actual start was against the claim (negative:
// early), and false when the job did not start within the horizon.
func (v Verdict) Error() (time.Duration, bool) {
	if v.Actual.IsZero() {
		return 0, false
	}
	return v.Actual.Sub(v.Answer.Start), true
}

// Options bounds a replay.
type Options struct {
	// Horizon is how long after the claimed start the replay goes on
	// looking for the job's actual start (for the error of a failed
	// claim); zero means 7 days.
	Horizon time.Duration
	// MaxCycles bounds the scheduling cycles of the replay after the
	// answer's instant; zero means 10,000.
	MaxCycles int
}

// Check verifies answer a: it builds a scheduler from cfg (the
// configuration the recorded one was created with), applies history —
// the events recorded up to the answer's instant, in order; events that
// failed when recorded fail again and change nothing — applies the
// answer's change at its instant (a time limit or partition by
// UpdateJob; a GPU count or type by replacing the job's request at its
// submission, see Verdict.AtSubmit), and runs cycles forward under exact
// run times until the job starts. It returns ErrNotReplayable for a
// change it cannot apply, and the errors of the replay itself.
func Check(cfg scheduler.Config, history []Entry, a Answer, opts Options) (Verdict, error) {
	if opts.Horizon == 0 {
		opts.Horizon = 7 * 24 * time.Hour
	}
	if opts.MaxCycles == 0 {
		opts.MaxCycles = 10000
	}
	v := Verdict{Answer: a}
	var update *scheduler.JobUpdate
	var spec *scheduler.JobSpec
	if cf := a.Counterfactual; cf != nil {
		switch cf.Kind {
		case scheduler.CounterTimeLimit:
			u := scheduler.JobUpdate{TimeLimit: &cf.Spec.TimeLimit, TimeMin: &cf.Spec.TimeMin}
			update = &u
		case scheduler.CounterPartition:
			u := scheduler.JobUpdate{Partition: &cf.Spec.Partition}
			update = &u
		case scheduler.CounterGPUs, scheduler.CounterGPUType:
			spec, v.AtSubmit = &cf.Spec, true
		default:
			return v, fmt.Errorf("%w: %s", ErrNotReplayable, cf.Kind)
		}
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		return v, fmt.Errorf("explaintest: new scheduler: %w", err)
	}
	var top scheduler.JobID // the highest job ID given so far
	for _, e := range history {
		if e.At.After(a.At) {
			break
		}
		ev := e.Event
		if sub, ok := ev.(scheduler.SubmitEvent); ok && spec != nil && sub.Array == "" && top+1 == a.Job {
			sub.Spec = *spec
			ev = sub
		}
		r, _ := s.Apply(e.At, ev) // a failed event fails again, changing nothing
		top = max(top, r.Job)
		for _, id := range r.Jobs {
			top = max(top, id)
		}
	}
	if update != nil {
		if err := s.UpdateJob(a.At, a.Job, *update); err != nil {
			return v, fmt.Errorf("explaintest: job %d: applying %s: %w", a.Job, a.Kind(), err)
		}
	}
	started, err := run(s, a.Job, a.At, a.Start.Add(opts.Horizon), opts.MaxCycles)
	if err != nil {
		return v, err
	}
	v.Actual = started
	switch {
	case started.IsZero():
		v.Outcome = Failed
	case a.Now && !v.AtSubmit:
		v.Outcome = outcome(started.Equal(a.At))
	default:
		v.Outcome = outcome(!started.After(a.Start))
	}
	return v, nil
}

func outcome(held bool) Outcome {
	if held {
		return Held
	}
	return Failed
}

// run drives s from now under exact run times until job id starts or
// until passes, and returns its start (zero if it did not start). Each
// step completes the running jobs whose time limit is reached and runs a
// cycle; the next step is the earliest instant at which anything can
// change: a running job's end, a pending job's begin time or expected
// start, a reservation's start or end.
func run(s *scheduler.Scheduler, id scheduler.JobID, now, until time.Time, maxCycles int) (time.Time, error) {
	for range maxCycles {
		if j, ok := s.Job(id); !ok {
			return time.Time{}, fmt.Errorf("explaintest: job %d is unknown", id)
		} else if !j.StartTime.IsZero() && j.State != scheduler.JobPending {
			return j.StartTime, nil
		}
		jobs := s.Jobs()
		for _, j := range jobs {
			if j.State == scheduler.JobRunning && !j.StartTime.Add(j.TimeLimit).After(now) {
				if err := s.Finish(now, j.ID, 0); err != nil {
					return time.Time{}, fmt.Errorf("explaintest: finishing job %d: %w", j.ID, err)
				}
			}
		}
		if _, err := s.Schedule(now); err != nil {
			return time.Time{}, fmt.Errorf("explaintest: cycle at %s: %w", now, err)
		}
		if j, _ := s.Job(id); j.State != scheduler.JobPending {
			if j.StartTime.IsZero() {
				return time.Time{}, nil // ended without starting (cancelled)
			}
			return j.StartTime, nil
		}
		next := nextInstant(s, now)
		if next.IsZero() || next.After(until) {
			return time.Time{}, nil
		}
		now = next
	}
	return time.Time{}, nil
}

// nextInstant is the earliest instant after now at which the state of s
// can change without an event from outside.
func nextInstant(s *scheduler.Scheduler, now time.Time) time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, j := range s.Jobs() {
		switch j.State {
		case scheduler.JobRunning:
			consider(j.StartTime.Add(j.TimeLimit))
		case scheduler.JobPending:
			consider(j.Spec.BeginTime)
			consider(j.ExpectedStart)
		}
	}
	for _, r := range s.Reservations() {
		consider(r.Start)
		consider(r.Start.Add(r.Duration))
		if r.Flags.Has(policy.ResvDaily) || r.Flags.Has(policy.ResvWeekly) {
			period := 24 * time.Hour
			if r.Flags.Has(policy.ResvWeekly) {
				period *= 7
			}
			if k := now.Sub(r.Start) / period; k >= 0 {
				consider(r.Start.Add((k + 1) * period))
				consider(r.Start.Add(k*period + r.Duration))
				consider(r.Start.Add((k+1)*period + r.Duration))
			}
		}
	}
	return next
}

// Tally counts verdicts per answer kind.
type Tally struct {
	Offered, Held, Failed int
}

// Counts tallies verdicts by Answer.Kind.
func Counts(vs []Verdict) map[string]Tally {
	out := map[string]Tally{}
	for _, v := range vs {
		t := out[v.Answer.Kind()]
		t.Offered++
		if v.Outcome == Held {
			t.Held++
		} else {
			t.Failed++
		}
		out[v.Answer.Kind()] = t
	}
	return out
}

// Kinds returns the keys of a tally in order.
func Kinds(t map[string]Tally) []string {
	ks := make([]string, 0, len(t))
	for k := range t {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
