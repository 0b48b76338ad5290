package journal_test

import (
	"fmt"
	"os"
	"time"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/journal"
)

// A control plane journals its scheduler, compacts the journal with a
// snapshot, and after a restart recovers it: the snapshot, then the
// events after it — the same jobs in the same states, and the next job ID
// where it was.
func Example() {
	dir, err := os.MkdirTemp("", "journal-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	cfg := scheduler.Config{
		Nodes:      []scheduler.NodeConfig{{Name: "n1", CPUs: 8, MemoryMiB: 32768}},
		Partitions: []scheduler.PartitionConfig{{Name: "batch", Default: true, MaxTime: 24 * time.Hour}},
	}
	newScheduler := func() (*scheduler.Scheduler, error) { return scheduler.New(cfg) }
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

	// First run: every event is journalled before it is applied.
	j, err := journal.Open(dir, journal.Options{})
	if err != nil {
		panic(err)
	}
	s, err := newScheduler()
	if err != nil {
		panic(err)
	}
	s.SetEventLog(j)
	for range 3 {
		if _, err := s.Submit(now, scheduler.JobSpec{User: "ann", Tasks: 1, CPUsPerTask: 4, TimeLimit: time.Hour}); err != nil {
			panic(err)
		}
	}
	c, err := s.Schedule(now.Add(time.Second))
	if err != nil {
		panic(err)
	}
	fmt.Printf("cycle of event %d started %d jobs\n", j.LastSeq(), len(c.Starts))
	// Compact: a snapshot of the state replaces the events so far.
	seq, err := j.WriteSnapshot(s)
	if err != nil {
		panic(err)
	}
	fmt.Println("snapshot covers events 1 to", seq)
	if err := s.Finish(now.Add(time.Minute), c.Starts[0].Job, 0); err != nil {
		panic(err)
	}
	if err := j.Close(); err != nil { // or the process is killed
		panic(err)
	}

	// After the restart.
	j, err = journal.Open(dir, journal.Options{})
	if err != nil {
		panic(err)
	}
	defer j.Close()
	s, rep, err := j.Recover(journal.RecoverOptions{New: newScheduler})
	if err != nil {
		panic(err)
	}
	pending, running := s.Counts()
	fmt.Printf("recovered to event %d (snapshot %d + %d replayed): %d running, %d pending\n",
		rep.LastSeq, rep.SnapshotSeq, rep.Replayed, running, pending)
	id, err := s.Submit(now.Add(2*time.Minute), scheduler.JobSpec{User: "bob", Tasks: 1, CPUsPerTask: 1, TimeLimit: time.Hour})
	if err != nil {
		panic(err)
	}
	st, err := j.Stats()
	if err != nil {
		panic(err)
	}
	fmt.Printf("next job %d, journalled as event %d\n", id, st.LastSeq)
	// Output:
	// cycle of event 4 started 2 jobs
	// snapshot covers events 1 to 4
	// recovered to event 5 (snapshot 4 + 1 replayed): 1 running, 1 pending
	// next job 4, journalled as event 6
}
