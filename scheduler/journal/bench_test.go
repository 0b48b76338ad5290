package journal_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/internal/cputime"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/journal"
)

// stream is the benchmarks' event sequence: an open system of submits
// (1–4 tasks of 1–8 CPUs, half with 1–2 GPUs), Schedule cycles, finishes
// and cancels, kept in balance by following what the scheduler decided
// (O(1) per event, unlike workload, which reads every job).
type stream struct {
	rng              *rand.Rand
	now              time.Time
	pending, running []scheduler.JobID
}

func newStream(seed uint64) *stream {
	return &stream{rng: rand.New(rand.NewPCG(seed, 1)), now: t0}
}

func (st *stream) next() scheduler.Event {
	st.now = st.now.Add(time.Duration(1+st.rng.IntN(4000)) * time.Millisecond)
	r := st.rng.IntN(100)
	switch {
	case r < 45 && len(st.pending) > 200, r >= 95 && len(st.pending) > 0:
		i := st.rng.IntN(len(st.pending))
		id := st.pending[i]
		st.pending[i] = st.pending[len(st.pending)-1]
		st.pending = st.pending[:len(st.pending)-1]
		return scheduler.CancelEvent{Job: id}
	case r < 45:
		spec := scheduler.JobSpec{User: "u" + strconv.Itoa(st.rng.IntN(20)), Account: "a",
			Tasks: 1 + st.rng.IntN(4), CPUsPerTask: 1 + st.rng.IntN(8),
			MemPerNodeMiB: int64(1+st.rng.IntN(32)) * 1024, TimeLimit: time.Duration(1+st.rng.IntN(8)) * time.Hour}
		if st.rng.IntN(2) == 0 {
			spec.GRESPerNode = []gres.Request{{Name: "gpu", Count: int64(1 + st.rng.IntN(2))}}
		}
		return scheduler.SubmitEvent{Spec: spec}
	case r < 85 && len(st.running) > 0:
		i := st.rng.IntN(len(st.running))
		id := st.running[i]
		st.running[i] = st.running[len(st.running)-1]
		st.running = st.running[:len(st.running)-1]
		return scheduler.FinishEvent{Job: id, ExitCode: st.rng.IntN(10) / 9}
	}
	return scheduler.ScheduleEvent{}
}

// apply applies the next event to s and follows its result. A rejected
// event (a job the scheduler timed out, say) is part of the stream; only a
// journal failure is an error.
func (st *stream) apply(s *scheduler.Scheduler) error {
	ev := st.next()
	res, err := s.Apply(st.now, ev)
	if errors.Is(err, journal.ErrFailed) || errors.Is(err, journal.ErrClosed) {
		return err
	}
	if _, ok := ev.(scheduler.SubmitEvent); ok {
		st.pending = append(st.pending, res.Job)
	}
	if res.Cycle != nil {
		started := map[scheduler.JobID]bool{}
		for _, x := range res.Cycle.Starts {
			started[x.Job] = true
			st.running = append(st.running, x.Job)
		}
		for _, x := range res.Cycle.Ended {
			for i, id := range st.running {
				if id == x.Job {
					st.running = append(st.running[:i], st.running[i+1:]...)
					break
				}
			}
		}
		kept := st.pending[:0]
		for _, id := range st.pending {
			if !started[id] {
				kept = append(kept, id)
			}
		}
		st.pending = kept
	}
	return nil
}

// benchScheduler is Mixed4 that forgets finished jobs after five minutes.
func benchScheduler() (*scheduler.Scheduler, error) {
	cfg := clustertest.Mixed4()
	cfg.MinJobAge = 5 * time.Minute
	return scheduler.New(cfg)
}

// BenchmarkJournalAppend appends events (taken from a run of the stream,
// so of realistic sizes) to a journal: the cost of journalling, without
// applying them. events/s is the throughput.
func BenchmarkJournalAppend(b *testing.B) {
	s, err := benchScheduler()
	require.NoError(b, err)
	st := newStream(1)
	var events []scheduler.Event
	log := eventRecorder(func(_ time.Time, ev scheduler.Event) { events = append(events, ev) })
	s.SetEventLog(log)
	for range 10000 {
		require.NoError(b, st.apply(s))
	}
	for _, c := range []struct {
		name string
		opts journal.Options
	}{
		{"sync=batched/binary", journal.Options{}},
		{"sync=batched/json", journal.Options{Encoding: journal.EncodingJSON}},
		{"sync=always/binary", journal.Options{Sync: journal.SyncAlways}},
	} {
		b.Run(c.name, func(b *testing.B) {
			j, err := journal.Open(b.TempDir(), c.opts)
			require.NoError(b, err)
			defer j.Close()
			now := t0
			i := 0
			start := time.Now()
			for b.Loop() {
				now = now.Add(time.Millisecond)
				if err := j.Append(now, events[i%len(events)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(i)/time.Since(start).Seconds(), "events/s")
			fs, err := j.Stats()
			require.NoError(b, err)
			b.ReportMetric(float64(fs.FileSize)/float64(i), "bytes/event")
		})
	}
}

type eventRecorder func(now time.Time, ev scheduler.Event)

func (f eventRecorder) Append(now time.Time, ev scheduler.Event) error { f(now, ev); return nil }

// BenchmarkRecover1M recovers a journal of 1,000,000 events of the stream
// (45 % submits, 40 % finishes, 10 % Schedule cycles, 5 % cancels, on the
// Mixed4 cluster), written by a journalled scheduler. Sub-benchmarks:
// open (Open: the checksum scan and buntdb's load), decode (Open and
// Events: decoding every event) and recover (Open and Recover: decoding
// and re-applying every event, the whole recovery). cpu-s is the CPU time
// the process spent (both cores), which a loaded machine inflates less
// than the wall time. Building the journal takes longer than recovering
// it. Run with -benchtime=1x; SLUICE_RECOVER_EVENTS changes the count.
func BenchmarkRecover1M(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("SLUICE_RECOVER_EVENTS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	dir := b.TempDir()
	j, err := journal.Open(dir, journal.Options{})
	require.NoError(b, err)
	s, err := benchScheduler()
	require.NoError(b, err)
	s.SetEventLog(j)
	st := newStream(2)
	start, cpu := time.Now(), cputime.Process()
	for range n {
		if err := st.apply(s); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("wrote %d events in %v, %v CPU (journalled and applied)", n, time.Since(start), cputime.Process()-cpu)
	want := digest(s)
	require.NoError(b, j.Close())
	phase := func(name string, fn func(j *journal.Journal) error) {
		b.Run(name, func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				c0 := cputime.Process()
				j, err := journal.Open(dir, journal.Options{})
				if err == nil {
					err = fn(j)
				}
				cpu += cputime.Process() - c0
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				require.NoError(b, j.Close())
				b.StartTimer()
			}
			b.ReportMetric(float64(n), "events")
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
		})
	}
	phase("open", func(*journal.Journal) error { return nil })
	phase("decode", func(j *journal.Journal) error {
		got := 0
		err := j.Events(0, func(uint64, scheduler.Entry) error { got++; return nil })
		if err == nil && got != n {
			err = fmt.Errorf("decoded %d of %d events", got, n)
		}
		return err
	})
	phase("recover", func(j *journal.Journal) error {
		r, rep, err := j.Recover(journal.RecoverOptions{New: benchScheduler})
		if err == nil && (rep.Replayed != n || digest(r) != want) {
			err = fmt.Errorf("replayed %d of %d events to a different state", rep.Replayed, n)
		}
		return err
	})
}
