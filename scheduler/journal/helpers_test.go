package journal_test

import (
	"bufio"
	"bytes"
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
	var pending, running []scheduler.JobID
	for _, j := range s.Jobs() {
		switch j.State {
		case scheduler.JobPending:
			pending = append(pending, j.ID)
		case scheduler.JobRunning:
			running = append(running, j.ID)
		}
	}
	pick := func(ids []scheduler.JobID) scheduler.JobID {
		if len(ids) == 0 {
			return scheduler.JobID(1 + rng.IntN(5)) // unknown or ended: rejected
		}
		return ids[rng.IntN(len(ids))]
	}
	node := nodeNames[rng.IntN(len(nodeNames))]
	r := rng.IntN(100)
	if r < 35 && len(pending) > 30 {
		r = 75 // keep the queue short: cancel instead
	}
	switch {
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

// entryLog is a test Snapshotter: its snapshot is the list of entries
// applied so far, and replayLog restores one by replaying them onto a new
// scheduler. (It stands in for Scheduler.Snapshot and scheduler.Restore.)
type entryLog struct {
	next    *journal.Journal
	entries []scheduler.Entry
	seq     uint64 // the sequence number of the last append
}

func (l *entryLog) Append(now time.Time, ev scheduler.Event) error {
	seq, err := l.next.AppendSeq(now, ev)
	if err != nil {
		return err
	}
	l.entries = append(l.entries, scheduler.Entry{At: now, Event: ev})
	l.seq = seq
	return nil
}

// recover recovers l's journal and makes l its scheduler's event log,
// holding every entry since the first.
func (l *entryLog) recover() (*scheduler.Scheduler, journal.RecoverReport, error) {
	l.entries = nil
	opts := journal.RecoverOptions{New: newScheduler, Restore: func(r io.Reader) (*scheduler.Scheduler, error) {
		var b bytes.Buffer
		s, err := replayLog(io.TeeReader(r, &b))
		if err != nil {
			return nil, err
		}
		for _, line := range bytes.Split(bytes.TrimSpace(b.Bytes()), []byte("\n")) {
			var e scheduler.Entry
			if err := json.Unmarshal(line, &e); err != nil {
				return nil, err
			}
			l.entries = append(l.entries, e)
		}
		return s, nil
	}}
	s, rep, err := l.next.Recover(opts)
	if err != nil {
		return nil, rep, err
	}
	err = l.next.Events(rep.SnapshotSeq, func(_ uint64, e scheduler.Entry) error {
		l.entries = append(l.entries, e)
		return nil
	})
	s.SetEventLog(l)
	l.seq = rep.LastSeq
	return s, rep, err
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

// recoverOpts recovers onto newScheduler or from an entryLog snapshot.
var recoverOpts = journal.RecoverOptions{New: newScheduler, Restore: replayLog}

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
