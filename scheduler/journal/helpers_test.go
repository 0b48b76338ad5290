package journal_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/journal"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// newScheduler is the scheduler every test journals: four GPU nodes, two
// partitions.
func newScheduler() (*scheduler.Scheduler, error) { return scheduler.New(clustertest.Mixed4()) }

// workload generates a seeded random event sequence: event k is a
// function of the seed, k and the scheduler's state only, so two
// schedulers in the same state get the same next event, and a process
// that recovered event k continues with event k+1.
type workload struct {
	seed uint64
	k    uint64 // the last event generated
}

func newWorkload(seed uint64) *workload { return &workload{seed: seed} }

// clone returns a workload that generates what w would from here on.
func (w *workload) clone() *workload { c := *w; return &c }

var nodeNames = []string{"h100-01", "h100-02", "a100-01", "a100-02"}

// next returns the next event and its time for scheduler s.
func (w *workload) next(s *scheduler.Scheduler) (time.Time, scheduler.Event) {
	w.k++
	rng := rand.New(rand.NewPCG(w.seed, w.k))
	now := t0.Add(time.Duration(w.k)*time.Minute + time.Duration(rng.IntN(60))*time.Second)
	var pending, held, running, suspended []scheduler.JobID
	for _, j := range s.Jobs() {
		switch j.State {
		case scheduler.JobPending:
			pending = append(pending, j.ID)
			if j.Hold != 0 {
				held = append(held, j.ID)
			}
		case scheduler.JobRunning:
			running = append(running, j.ID)
		case scheduler.JobSuspended:
			suspended = append(suspended, j.ID)
		}
	}
	pick := func(ids []scheduler.JobID) scheduler.JobID {
		if len(ids) == 0 {
			return scheduler.JobID(1 + rng.IntN(5)) // unknown or ended: rejected
		}
		return ids[rng.IntN(len(ids))]
	}
	node := nodeNames[rng.IntN(len(nodeNames))]
	r := rng.IntN(112)
	if r < 35 && len(pending) > 30 {
		r = 75 // keep the queue short: cancel instead
	}
	switch {
	case r >= 100:
		return now, w.jobControl(rng, r-100, pending, held, running, suspended, pick)
	case r < 35:
		spec := scheduler.JobSpec{
			User: []string{"ann", "bob", "cy"}[rng.IntN(3)], Account: "a",
			Tasks: 1 + rng.IntN(4), CPUsPerTask: 1 + rng.IntN(8),
			MemPerNodeMiB: int64(1+rng.IntN(64)) * 1024,
			TimeLimit:     time.Duration(10+rng.IntN(240)) * time.Minute,
		}
		if rng.IntN(2) == 0 {
			spec.GRESPerNode = []gres.Request{{Name: "gpu", Count: int64(1 + rng.IntN(4))}}
		}
		if rng.IntN(5) == 0 {
			spec.Partition = "h100"
		}
		ev := scheduler.SubmitEvent{Spec: spec}
		if rng.IntN(10) == 0 {
			ev.Array = fmt.Sprintf("0-%d", 1+rng.IntN(3))
		}
		return now, ev
	case r < 55:
		return now, scheduler.ScheduleEvent{}
	case r < 72:
		return now, scheduler.FinishEvent{Job: pick(running), ExitCode: rng.IntN(3) / 2}
	case r < 78:
		return now, scheduler.CancelEvent{Job: pick(append(pending, running...))}
	case r < 81:
		return now, scheduler.RequeueEvent{Job: pick(running)}
	case r < 84:
		return now, scheduler.CheckpointEvent{Job: pick(running)}
	case r < 88:
		return now, scheduler.DrainNodeEvent{Node: node, Reason: "maintenance"}
	case r < 93:
		return now, scheduler.ResumeNodeEvent{Node: node}
	case r < 95:
		return now, scheduler.DownNodeEvent{Node: node, Reason: "not responding"}
	case r < 97:
		return now, scheduler.FailNodeEvent{Node: node, Reason: "ecc"}
	default:
		return now, scheduler.DeviceHealthEvent{Node: node, Index: rng.IntN(8), Healthy: rng.IntN(2) == 0, Reason: "xid 79"}
	}
}

// jobControl returns one of the job control events: holds and releases,
// updates of pending jobs, admin suspends and resumes, requeues (held or
// not) of running or finished jobs.
func (w *workload) jobControl(rng *rand.Rand, r int, pending, held, running, suspended []scheduler.JobID, pick func([]scheduler.JobID) scheduler.JobID) scheduler.Event {
	switch r {
	case 0, 1:
		return scheduler.HoldEvent{Job: pick(pending), Admin: rng.IntN(2) == 0}
	case 2, 3:
		return scheduler.ReleaseEvent{Job: pick(held), Admin: rng.IntN(2) == 0}
	case 4, 5:
		limit, nice := time.Duration(5+rng.IntN(120))*time.Minute, rng.IntN(200)-100
		return scheduler.UpdateJobEvent{Job: pick(pending), JobUpdate: scheduler.JobUpdate{TimeLimit: &limit, Nice: &nice}}
	case 6, 7:
		return scheduler.SuspendJobEvent{Job: pick(running)}
	case 8, 9:
		return scheduler.ResumeJobEvent{Job: pick(suspended)}
	default:
		return scheduler.RequeueJobEvent{Job: pick(running), Hold: rng.IntN(2) == 0}
	}
}

// step applies the workload's next event to s and returns a digest of
// what it decided.
func (w *workload) step(s *scheduler.Scheduler) (string, error) {
	now, ev := w.next(s)
	res, err := s.Apply(now, ev)
	if errors.Is(err, journal.ErrFailed) || errors.Is(err, journal.ErrClosed) {
		return "", err
	}
	if err != nil {
		return "rejected " + string(ev.Kind()), nil // a rejected event is part of the sequence
	}
	if res.Cycle != nil {
		b, err := json.Marshal(res.Cycle.Starts)
		return string(b), err
	}
	return fmt.Sprintf("%s %d %v", ev.Kind(), res.Job, res.Jobs), nil
}

// digest is the observable state of a scheduler.
func digest(s *scheduler.Scheduler) string {
	p, r := s.Counts()
	return fmt.Sprintf("jobs %+v\nnodes %+v\ncounts %d %d\nresv %+v", s.Jobs(), s.Nodes(), p, r, s.Reservations())
}

// entryLog is a Snapshotter of the caller's own: its snapshot is the list
// of entries applied so far, and replayLog restores one by replaying them
// onto a new scheduler.
type entryLog struct {
	next    scheduler.EventLog
	entries []scheduler.Entry
}

func (l *entryLog) Append(now time.Time, ev scheduler.Event) error {
	if err := l.next.Append(now, ev); err != nil {
		return err
	}
	l.entries = append(l.entries, scheduler.Entry{At: now, Event: ev})
	return nil
}

func (l *entryLog) Snapshot(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, e := range l.entries {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return nil
}

func replayLog(r io.Reader) (*scheduler.Scheduler, error) {
	s, err := newScheduler()
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var e scheduler.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, err
		}
		_, _ = s.Apply(e.At, e.Event)
	}
	return s, sc.Err()
}

// recoverOpts recovers onto newScheduler, or from the scheduler's snapshot.
var recoverOpts = journal.RecoverOptions{New: newScheduler}

// run applies n workload events to a journalled s, returning the
// decisions' digests.
func run(t testing.TB, w *workload, s *scheduler.Scheduler, n int) []string {
	t.Helper()
	out := make([]string, 0, n)
	for range n {
		d, err := w.step(s)
		require.NoError(t, err)
		out = append(out, d)
	}
	return out
}
