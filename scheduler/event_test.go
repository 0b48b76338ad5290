package scheduler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/priority"
)

// entryRecorder is an EventLog that keeps every entry as its JSON
// encoding, as a journal would.
type entryRecorder struct {
	lines [][]byte
	fail  error
}

func (r *entryRecorder) Append(now time.Time, ev Event) error {
	if r.fail != nil {
		return r.fail
	}
	b, err := json.Marshal(Entry{At: now, Event: ev})
	if err != nil {
		return err
	}
	r.lines = append(r.lines, b)
	return nil
}

// TestEventsReplayIdentically drives random clusters with random events
// (the fuzzer's generator) through the public methods with an EventLog
// attached, then decodes the logged entries and applies them to a fresh
// scheduler built from the same configuration: every event must fail or
// succeed the same way, every cycle must make the same decisions, and the
// final states must be equal. This is the promise the journal, snapshots
// and replication build on: the methods are Apply, the events are data,
// and state is a function of them.
func TestEventsReplayIdentically(t *testing.T) {
	for seed := uint64(0); seed < 12; seed++ {
		src := &fzSource{rng: rand.New(rand.NewPCG(seed, 0xe7e7))}
		c := fzGenCluster(src)
		cfg, err := fzConfig(c)
		require.NoError(t, err)
		a, err := New(cfg)
		require.NoError(t, err)
		rec := &entryRecorder{}
		a.SetEventLog(rec)
		g := newFzGen(src, c)
		var want []string // per logged event: its answer
		for range 300 {
			op := g.next()
			if op.Kind.readOnly() {
				continue
			}
			n := len(rec.lines)
			out := fzCall(a, op)
			require.False(t, out.panicked, "seed %d: %v", seed, out.err)
			if len(rec.lines) == n {
				continue // refused before the log (time went backwards)
			}
			require.Equal(t, n+1, len(rec.lines), "one event per call")
			want = append(want, fmt.Sprintf("%v|%s", out.err, out.res))
			if out.err == nil {
				g.last = max(g.last, op.At)
				g.ids = append(g.ids, out.ids...)
				if op.Kind == fkAddResv {
					g.resvs = append(g.resvs, op.Resv.Name)
				}
			}
		}
		cfg2, err := fzConfig(c)
		require.NoError(t, err)
		b, err := New(cfg2)
		require.NoError(t, err)
		for k, line := range rec.lines {
			var e Entry
			require.NoError(t, json.Unmarshal(line, &e), "seed %d entry %d: %s", seed, k, line)
			res, err := b.Apply(e.At, e.Event)
			got := fmt.Sprintf("%v|%s", err, replayAnswer(e.Event, res))
			require.Equal(t, want[k], got, "seed %d entry %d (%s): %s", seed, k, e.Event.Kind(), line)
		}
		now := b.last
		require.Equal(t, fzDigest(a, now), fzDigest(b, now), "seed %d: final states differ", seed)
	}
}

// replayAnswer renders an Apply result as fzCall renders the method's.
func replayAnswer(ev Event, r Result) string {
	switch e := ev.(type) {
	case ScheduleEvent:
		if r.Cycle == nil {
			return ""
		}
		return fzCycleDigest(*r.Cycle)
	case SubmitEvent:
		if e.Array != "" {
			return fmt.Sprint(r.Jobs)
		}
		return fmt.Sprint(r.Job)
	case DownNodeEvent, TelemetryEvent:
		return fmt.Sprint(r.Jobs)
	}
	return ""
}

func TestApplyRejectsWithoutChange(t *testing.T) {
	s, err := New(Config{
		Nodes:      []NodeConfig{{Name: "n0", CPUs: 4, MemoryMiB: 1024}},
		Partitions: []PartitionConfig{{Name: "p", Default: true}},
	})
	require.NoError(t, err)
	rec := &entryRecorder{}
	s.SetEventLog(rec)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	_, err = s.Apply(t0, nil)
	require.ErrorIs(t, err, ErrInvalidEvent)

	id, err := s.Submit(t0, JobSpec{User: "u", Account: "a", TimeLimit: time.Hour})
	require.NoError(t, err)
	require.Len(t, rec.lines, 1)

	// The log refuses: nothing is applied.
	rec.fail = errors.New("disk full")
	_, err = s.Submit(t0, JobSpec{User: "u", Account: "a", TimeLimit: time.Hour})
	require.ErrorContains(t, err, "disk full")
	p, _ := s.Counts()
	require.Equal(t, 1, p)
	rec.fail = nil

	require.Equal(t, t0, s.LastEventTime())
	// Time going backwards is refused before the log sees it.
	err = s.Cancel(t0.Add(-time.Second), id)
	require.ErrorIs(t, err, ErrTimeWentBackwards)
	require.Len(t, rec.lines, 1)

	// An event the log took but that fails changes nothing.
	err = s.Finish(t0, id, 0)
	require.ErrorIs(t, err, ErrJobState)
	require.Len(t, rec.lines, 2)
	j, _ := s.Job(id)
	require.Equal(t, JobPending, j.State)
}

func TestEntryJSON(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 5, time.UTC)
	b, err := json.Marshal(Entry{At: t0, Event: FinishEvent{Job: 7, ExitCode: 3}})
	require.NoError(t, err)
	require.JSONEq(t, `{"at":"2026-12-01T10:00:00.000000005Z","kind":"finish","event":{"Job":7,"ExitCode":3}}`, string(b))
	var e Entry
	require.NoError(t, json.Unmarshal(b, &e))
	require.Equal(t, Entry{At: t0, Event: FinishEvent{Job: 7, ExitCode: 3}}, e)

	for _, bad := range []struct{ in, want string }{
		{`{"at":"2026-12-01T10:00:00Z","kind":"explode","event":{}}`, `unknown event kind "explode"`},
		{`{"at":"2026-12-01T10:00:00Z","kind":"finish"}`, "has no event"},
		{`{"at":"2026-12-01T10:00:00Z","kind":"finish","event":null}`, "has no event"},
		{`{"at":"2026-12-01T10:00:00Z","kind":"finish","event":{"Job":"x"}}`, "finish event"},
		{`{"at":"2026-12-01T10:00:00Z","kind":"finish","event":{"Jbo":1}}`, `unknown field "Jbo"`},
		{`{"at":"yesterday","kind":"finish","event":{}}`, "entry"},
	} {
		e := Entry{At: t0}
		err := json.Unmarshal([]byte(bad.in), &e)
		require.ErrorIs(t, err, ErrInvalidEvent, bad.in)
		require.True(t, strings.Contains(err.Error(), bad.want), "%s: %v", bad.in, err)
		require.Equal(t, Entry{At: t0}, e, "a failed decode leaves the entry")
	}
	_, err = json.Marshal(Entry{At: t0})
	require.ErrorIs(t, err, ErrInvalidEvent)
}

// TestScheduleEventCarriesFairShare: the fair-share tree a cycle reads
// from its source is part of the ScheduleEvent, so a replay decides the
// same although the source (a ledger whose usage moved on) now answers
// differently.
func TestScheduleEventCarriesFairShare(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	calls := 0
	tree := func(bias float64) FairShareFunc {
		return func(time.Time) ([]priority.Association, error) {
			calls++
			u := bias * float64(calls)
			return []priority.Association{
				{Account: "root", Shares: 1},
				{Account: "a", Parent: "root", Shares: 1}, {Account: "b", Parent: "root", Shares: 1},
				{Account: "a", User: "ann", Shares: 1, Usage: u * 1000},
				{Account: "b", User: "bob", Shares: 1, Usage: 1000},
			}, nil
		}
	}
	cfg := func(src FairShareSource) Config {
		return Config{
			Nodes:      []NodeConfig{{Name: "n0", CPUs: 4, MemoryMiB: 1024}},
			Partitions: []PartitionConfig{{Name: "p", Default: true}},
			Priority: &PriorityConfig{Engine: priority.Config{Weights: priority.Weights{FairShare: 10000}},
				CalcPeriod: time.Minute, FairShare: src},
		}
	}
	a, err := New(cfg(tree(1)))
	require.NoError(t, err)
	rec := &entryRecorder{}
	a.SetEventLog(rec)
	var want []string
	for k := range 12 {
		now := t0.Add(time.Duration(k) * 30 * time.Second)
		for _, u := range []string{"ann", "bob"} {
			acct := map[string]string{"ann": "a", "bob": "b"}[u]
			_, err := a.Submit(now, JobSpec{User: u, Account: acct, CPUsPerTask: 4, TimeLimit: time.Minute})
			require.NoError(t, err)
		}
		c, err := a.Schedule(now)
		require.NoError(t, err)
		want = append(want, fzCycleDigest(c))
	}
	// The replay's source answers otherwise: it must not be asked.
	b, err := New(cfg(tree(-3)))
	require.NoError(t, err)
	asked := calls
	var got []string
	for _, line := range rec.lines {
		var e Entry
		require.NoError(t, json.Unmarshal(line, &e))
		r, err := b.Apply(e.At, e.Event)
		require.NoError(t, err)
		if r.Cycle != nil {
			got = append(got, fzCycleDigest(*r.Cycle))
		}
	}
	require.Equal(t, want, got)
	require.Equal(t, asked, calls, "the replay read the fair-share source")
	require.Contains(t, string(rec.lines[2]), `"FairShare":{"Assocs":[`)
}

func TestLastEventTimeSurvivesSnapshot(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	s, err := New(Config{
		Nodes:      []NodeConfig{{Name: "n0", CPUs: 4, MemoryMiB: 1024}},
		Partitions: []PartitionConfig{{Name: "p", Default: true}},
	})
	require.NoError(t, err)
	require.True(t, s.LastEventTime().IsZero())
	_, err = s.Schedule(t0.Add(time.Minute))
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, s.Snapshot(&b))
	r, err := Restore(&b, RestoreOptions{})
	require.NoError(t, err)
	require.Equal(t, t0.Add(time.Minute), r.LastEventTime())
	_, err = r.Schedule(t0)
	require.ErrorIs(t, err, ErrTimeWentBackwards)
}
