package sim_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
	"github.com/sluicehq/sluice/scheduler/sim/swf"
)

// entryLog records every event a scheduler applies.
type entryLog struct{ entries []scheduler.Entry }

func (l *entryLog) Append(now time.Time, ev scheduler.Event) error {
	l.entries = append(l.entries, scheduler.Entry{At: now, Event: ev})
	return nil
}

// limitSource gives the first n jobs of src.
type limitSource struct {
	src sim.Source
	n   int
}

func (l *limitSource) Next() (sim.Job, bool, error) {
	if l.n <= 0 {
		return sim.Job{}, false, nil
	}
	l.n--
	return l.src.Next()
}

// resultDigest is an applied event's result as text.
func resultDigest(r scheduler.Result, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "err %v job %d jobs %v\n", err, r.Job, r.Jobs)
	if c := r.Cycle; c != nil {
		fmt.Fprintf(&b, "now %s\nended %+v\nstarts %+v\npending %+v\nresumed %v\npreempt %+v\n",
			c.Now.Format(time.RFC3339Nano), c.Ended, c.Starts, c.Pending, c.Resumed, c.Preemptions)
		for _, d := range c.Decisions {
			fmt.Fprintf(&b, "decision %s\n", d)
		}
	}
	return b.String()
}

// stateDigest is a scheduler's observable state as text.
func stateDigest(s *scheduler.Scheduler) string {
	var b strings.Builder
	for _, j := range s.Jobs() {
		fmt.Fprintf(&b, "job %+v\n", j)
	}
	for _, n := range s.Nodes() {
		fmt.Fprintf(&b, "node %+v\n", n)
	}
	p, r := s.Counts()
	fmt.Fprintf(&b, "counts %d %d policy %s\n", p, r, s.PolicyVersion())
	return b.String()
}

// TestSnapshotRestoreSameDecisions replays the KTH-SP2 trace (from
// ../shared/traces; skipped when absent) under EASY and conservative
// backfill, records every event the simulator applies, then applies the
// same events to a fresh scheduler, snapshotting it at random points:
// each restored scheduler, fed the events after its snapshot, must
// answer every one as the uninterrupted scheduler does and end in the
// same state.
func TestSnapshotRestoreSameDecisions(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "traces", "KTH-SP2", "log.swf"))
	if os.IsNotExist(err) {
		t.Skip("trace KTH-SP2/log.swf not available (it lives in ../shared/traces, outside the repository)")
	}
	if err != nil {
		t.Fatal(err)
	}
	maxJobs := 6000
	if testing.Short() {
		maxJobs = 1500
	}
	for _, p := range []sim.Policy{sim.EASY, sim.Conservative} {
		t.Run(string(p), func(t *testing.T) {
			rd, err := swf.NewReader(bytes.NewReader(data), swf.Options{})
			if err != nil {
				t.Fatal(err)
			}
			m, err := swf.MachineFor(rd.Header(), 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := m.Config()
			if err != nil {
				t.Fatal(err)
			}
			opt := sim.Options{DiscardJobs: true, DiscardSeries: true}
			if err := p.Apply(&cfg, &opt); err != nil {
				t.Fatal(err)
			}
			a, err := scheduler.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			log := &entryLog{}
			a.SetEventLog(log)
			if _, err := sim.Run(a, &limitSource{swf.Source(rd, m), maxJobs}, opt); err != nil {
				t.Fatal(err)
			}
			n := len(log.entries)
			rng := rand.New(rand.NewPCG(uint64(n), 16))
			points := []int{1 + rng.IntN(n/4), n/4 + rng.IntN(n/4), n/2 + rng.IntN(n/4), 3*n/4 + rng.IntN(n/4)}
			slices.Sort(points)
			b, err := scheduler.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			type follower struct {
				s  *scheduler.Scheduler
				at int
			}
			var fs []follower
			for i, e := range log.entries {
				if len(points) > 0 && points[0] == i {
					points = points[1:]
					var buf bytes.Buffer
					if err := b.Snapshot(&buf); err != nil {
						t.Fatal(err)
					}
					c, err := scheduler.Restore(&buf, scheduler.RestoreOptions{})
					if err != nil {
						t.Fatalf("restore at event %d: %v", i, err)
					}
					if got, want := stateDigest(c), stateDigest(b); got != want {
						t.Fatalf("restored at event %d: state differs", i)
					}
					fs = append(fs, follower{c, i})
				}
				want := resultDigest(b.Apply(e.At, e.Event))
				for _, f := range fs {
					if got := resultDigest(f.s.Apply(e.At, e.Event)); got != want {
						t.Fatalf("restored at event %d of %d, event %d (%s at %s) answered differently:\n got %.2000s\nwant %.2000s",
							f.at, n, i, e.Event.Kind(), e.At.Format(time.RFC3339), got, want)
					}
				}
			}
			want := stateDigest(b)
			if want != stateDigest(a) {
				t.Fatal("the replay of the recorded events ends in another state than the simulation")
			}
			for _, f := range fs {
				if stateDigest(f.s) != want {
					t.Fatalf("restored at event %d: final state differs", f.at)
				}
			}
			t.Logf("%d events, restored at %d points", n, len(fs))
		})
	}
}
