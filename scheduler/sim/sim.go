// Package sim drives the real scheduler on a virtual clock: jobs arrive at
// their submit times, run for their actual run times (or until their time
// limit, when the scheduler ends them), and the scheduler is invoked after
// every batch of events, exactly as an embedding control plane would call
// it. The simulator adds no scheduling logic of its own: what it measures
// is what the scheduler decides.
//
// Events at the same instant are applied in a fixed order: first the
// completions (by job ID), then the arrivals (in workload order), then one
// scheduling cycle. Jobs that reach their time limit are ended by that
// cycle, at their deadline.
package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

// Job is one workload entry: what was asked for, when, and how long it
// really runs.
type Job struct {
	Spec scheduler.JobSpec
	// Submit is the arrival time.
	Submit time.Time
	// Runtime is how long the job runs once started. A runtime at or past
	// the time limit means the scheduler ends it at the limit (TIMEOUT).
	Runtime time.Duration
	// ExitCode is reported when the job finishes before its limit.
	ExitCode int
}

// Source yields workload jobs in non-decreasing submit order. Next returns
// false at the end; an error stops the simulation.
type Source interface {
	Next() (Job, bool, error)
}

// SliceSource is a Source over a slice already sorted by submit time.
type SliceSource struct {
	Jobs []Job
	i    int
}

// Next returns the next job of the slice.
func (s *SliceSource) Next() (Job, bool, error) {
	if s.i >= len(s.Jobs) {
		return Job{}, false, nil
	}
	s.i++
	return s.Jobs[s.i-1], true, nil
}

// Options tune a run. The zero value runs the whole workload.
type Options struct {
	// OnCycle, when set, is called after every scheduling cycle with the
	// scheduler (for snapshots) and the cycle's decisions.
	OnCycle func(s *scheduler.Scheduler, c scheduler.Cycle)
	// OnSubmitError, when set, decides what to do with a job the scheduler
	// rejects: return nil to skip it (it is counted in Result.Rejected),
	// or an error to stop. When unset, rejected jobs are skipped.
	OnSubmitError func(j Job, err error) error
}

// JobResult is what happened to one workload job.
type JobResult struct {
	// Index is the job's position in the workload (0-based).
	Index int
	ID    scheduler.JobID
	Job   Job
	// Start and End are the simulated start and end times.
	Start, End time.Time
	State      scheduler.JobState
	// Nodes is how many nodes it ran on; GPUs how many GPU devices.
	Nodes, GPUs int
}

// Wait returns how long the job waited in the queue.
func (r JobResult) Wait() time.Duration { return r.Start.Sub(r.Job.Submit) }

// Result is the outcome of a run.
type Result struct {
	// Jobs lists every job that ran, in order of completion.
	Jobs []JobResult
	// Rejected counts workload jobs the scheduler refused at submit.
	Rejected int
	// Cycles counts scheduling cycles; Start and End bound the simulated span.
	Cycles     int
	Start, End time.Time
}

// ErrStuck reports a simulation that ended with jobs still pending while
// nothing was running and nothing was left to arrive: they can never start.
var ErrStuck = errors.New("sim: jobs pending with nothing running or arriving")

// Run replays src on s until every job has ended. s should be fresh (no
// jobs yet); its clock is driven by the workload's submit times.
func Run(s *scheduler.Scheduler, src Source, opt Options) (Result, error) {
	var res Result
	var q eventQueue
	index := map[scheduler.JobID]int{}
	jobs := map[scheduler.JobID]Job{}
	next, haveNext, err := src.Next()
	if err != nil {
		return res, fmt.Errorf("sim: reading workload: %w", err)
	}
	res.Start = next.Submit
	arrivals := 0
	for haveNext || q.Len() > 0 {
		// The next instant is the earliest of the next arrival and the next completion.
		var now time.Time
		switch {
		case !haveNext:
			now = q.peek().at
		case q.Len() == 0 || next.Submit.Before(q.peek().at):
			now = next.Submit
		default:
			now = q.peek().at
		}
		for q.Len() > 0 && !q.peek().at.After(now) {
			ev := heap.Pop(&q).(event)
			if !ev.timeout {
				if err := s.Finish(now, ev.id, jobs[ev.id].ExitCode); err != nil {
					return res, fmt.Errorf("sim: finishing job %d at %s: %w", ev.id, now, err)
				}
				res.Jobs = append(res.Jobs, result(s, ev.id, index[ev.id], jobs[ev.id]))
				delete(jobs, ev.id)
				delete(index, ev.id)
			}
		}
		for haveNext && !next.Submit.After(now) {
			id, err := s.Submit(now, next.Spec)
			if err != nil {
				if opt.OnSubmitError != nil {
					if err := opt.OnSubmitError(next, err); err != nil {
						return res, err
					}
				}
				res.Rejected++
			} else {
				index[id] = arrivals
				jobs[id] = next
			}
			arrivals++
			prev := next.Submit
			next, haveNext, err = src.Next()
			if err != nil {
				return res, fmt.Errorf("sim: reading workload: %w", err)
			}
			if haveNext && next.Submit.Before(prev) {
				return res, fmt.Errorf("sim: workload job %d submitted at %s, before the previous job (%s)", arrivals, next.Submit, prev)
			}
		}
		cyc, err := s.Schedule(now)
		if err != nil {
			return res, fmt.Errorf("sim: cycle at %s: %w", now, err)
		}
		res.Cycles++
		for _, e := range cyc.Ended {
			res.Jobs = append(res.Jobs, result(s, e.Job, index[e.Job], jobs[e.Job]))
			delete(jobs, e.Job)
			delete(index, e.Job)
		}
		for _, st := range cyc.Starts {
			j := jobs[st.Job]
			sj, _ := s.Job(st.Job)
			if j.Runtime < sj.TimeLimit {
				heap.Push(&q, event{at: now.Add(j.Runtime), id: st.Job})
			} else {
				heap.Push(&q, event{at: now.Add(sj.TimeLimit), id: st.Job, timeout: true})
			}
		}
		if opt.OnCycle != nil {
			opt.OnCycle(s, cyc)
		}
		res.End = now
		if !haveNext && q.Len() == 0 && len(cyc.Pending) > 0 {
			return res, fmt.Errorf("%w: %d job(s), first %d (%s)", ErrStuck, len(cyc.Pending), cyc.Pending[0].Job, cyc.Pending[0].Reason)
		}
	}
	return res, nil
}

func result(s *scheduler.Scheduler, id scheduler.JobID, idx int, j Job) JobResult {
	sj, _ := s.Job(id)
	r := JobResult{Index: idx, ID: id, Job: j, Start: sj.StartTime, End: sj.EndTime, State: sj.State, Nodes: len(sj.Alloc.Nodes)}
	for _, na := range sj.Alloc.Nodes {
		r.GPUs += len(na.Devices)
	}
	return r
}

type event struct {
	at      time.Time
	id      scheduler.JobID
	timeout bool
}

// eventQueue is a min-heap of completions ordered by time, then job ID.
type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].id < q[j].id
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }

// Push implements heap.Interface.
func (q *eventQueue) Push(x any) { *q = append(*q, x.(event)) }

// Pop implements heap.Interface.
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}
func (q eventQueue) peek() event { return q[0] }
