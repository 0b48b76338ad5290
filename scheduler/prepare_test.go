package scheduler_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
)

// prepTree is a fair-share tree whose usage is u.
func prepTree(u float64) scheduler.FairShareFunc {
	return func(time.Time) ([]priority.Association, error) {
		return []priority.Association{
			{Account: "root", Shares: 1},
			{Account: "a", Parent: "root", Shares: 1, Usage: u},
			{Account: "a", User: "ann", Shares: 1, Usage: u},
		}, nil
	}
}

func prepScheduler(t *testing.T, src scheduler.FairShareSource) *scheduler.Scheduler {
	t.Helper()
	s, err := scheduler.New(scheduler.Config{
		Nodes:      []scheduler.NodeConfig{{Name: "n1", CPUs: 8, MemoryMiB: 16384}},
		Partitions: []scheduler.PartitionConfig{{Name: "batch", Default: true}},
		Priority: &scheduler.PriorityConfig{Engine: priority.Config{Weights: priority.Weights{FairShare: 1000}},
			CalcPeriod: time.Minute, FairShare: src},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func snapshotBytes(t *testing.T, s *scheduler.Scheduler) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := s.Snapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestPrepare checks Prepare against what Apply logs: a due cycle gets
// the tree of the source given (or the configured one), a cycle that is
// not due and any other event are returned as they are, nothing changes;
// and a scheduler without a source that applies the prepared event ends
// in the state of the one that read its source itself.
func TestPrepare(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	own := prepScheduler(t, prepTree(5))
	before := snapshotBytes(t, own)

	ev, err := own.Prepare(now, scheduler.ScheduleEvent{}, prepTree(9))
	if err != nil {
		t.Fatal(err)
	}
	fs := ev.(scheduler.ScheduleEvent).FairShare
	if fs == nil || fs.Assocs[1].Usage != 9 {
		t.Fatalf("due cycle prepared with %+v, want the given source's tree (usage 9)", fs)
	}
	if ev, err = own.Prepare(now, scheduler.ScheduleEvent{}, nil); err != nil || ev.(scheduler.ScheduleEvent).FairShare.Assocs[1].Usage != 5 {
		t.Fatalf("nil source: %+v, %v; want the configured tree (usage 5)", ev, err)
	}
	if !bytes.Equal(before, snapshotBytes(t, own)) {
		t.Fatal("Prepare changed the scheduler")
	}
	sub := scheduler.SubmitEvent{Spec: scheduler.JobSpec{User: "ann", Account: "a", Tasks: 1, CPUsPerTask: 1, TimeLimit: time.Hour}}
	if got, err := own.Prepare(now, sub, prepTree(9)); err != nil || got.Kind() != scheduler.KindSubmit {
		t.Errorf("submit prepared as %+v, %v", got, err)
	}
	if _, err := own.Prepare(now, nil, nil); !errors.Is(err, scheduler.ErrInvalidEvent) {
		t.Errorf("nil event: %v, want ErrInvalidEvent", err)
	}

	// The replica's way: prepare on one, apply the prepared event on one
	// without a source; the same as Apply reading the source itself.
	bare := prepScheduler(t, nil)
	for _, s := range []*scheduler.Scheduler{own, bare} {
		if _, err := s.Apply(now, sub); err != nil {
			t.Fatal(err)
		}
	}
	prepared, err := bare.Prepare(now, scheduler.ScheduleEvent{}, prepTree(5))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bare.Apply(now, prepared); err != nil {
		t.Fatal(err)
	}
	if _, err := own.Apply(now, scheduler.ScheduleEvent{}); err != nil {
		t.Fatal(err)
	}
	// (Their snapshots differ in one flag: whether a source is set.)
	if a, b := own.Jobs(), bare.Jobs(); !reflect.DeepEqual(a, b) || a[0].Priority == 0 {
		t.Errorf("the prepared cycle applied without a source gives %+v, the cycle that read it %+v", b, a)
	}
	// Not due any more: nothing to read.
	if ev, err := bare.Prepare(now.Add(time.Second), scheduler.ScheduleEvent{}, prepTree(9)); err != nil || ev.(scheduler.ScheduleEvent).FairShare != nil {
		t.Errorf("cycle not due prepared as %+v, %v; want no tree", ev, err)
	}
}
