package scheduler

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
)

// A snapshot keeps task jobs' spreads: restored, the scheduler reads the
// same, snapshots byte for byte the same, and places the pending task
// jobs as the original does.
func TestSnapshotRoundTripTaskJobs(t *testing.T) {
	nodes := make([]NodeConfig, 4)
	for i := range nodes {
		nodes[i] = NodeConfig{Name: string(rune('a' + i)), CPUs: 16, MemoryMiB: 64 << 10}
	}
	s, err := New(Config{Nodes: nodes, Partitions: []PartitionConfig{{Name: "p", Default: true}}, Backfill: &backfill.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, sp := range []JobSpec{
		{Tasks: 20, MemPerCPUMiB: 100, TimeLimit: time.Hour},
		{Nodes: 1, NodesMax: 2, TimeLimit: 2 * time.Hour},
		{Tasks: 40, TasksPerNode: 14, TimeLimit: time.Hour},
		{Nodes: 2, Tasks: 7, CPUsPerTask: 2, TimeLimit: time.Hour},
		{Nodes: 2, Tasks: 10, Distribution: Distribution{Node: DistPlane, PlaneSize: 4}, TimeLimit: time.Hour},
	} {
		if _, err := s.Submit(t0, sp); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Schedule(t0); err != nil {
		t.Fatal(err)
	}
	r := snapRestore(t, s, t0, RestoreOptions{})
	j, rj := s.jobs[3], r.jobs[3]
	if j.tasks == nil || rj.tasks == nil || rj.tasks.total != 40 || rj.tasks.maxPer != 14 || !rj.tasks.fewest ||
		!rj.tasks.totalVec.Equal(j.tasks.totalVec) || rj.nodes != 3 {
		t.Fatalf("restored spread %+v (nodes %d), want %+v", rj.tasks, rj.nodes, j.tasks)
	}
	if rj := r.jobs[5]; rj.tasks == nil || rj.tasks.plane != 4 {
		t.Fatalf("restored plane job's spread %+v, want plane 4", rj.tasks)
	}
	if err := s.Finish(t0.Add(time.Minute), 1, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(t0.Add(time.Minute), 1, 0); err != nil {
		t.Fatal(err)
	}
	a, err1 := s.Schedule(t0.Add(time.Minute))
	b, err2 := r.Schedule(t0.Add(time.Minute))
	if err1 != nil || err2 != nil || startsByName(a) != startsByName(b) {
		t.Fatalf("restored scheduler decides differently: %s vs %s (%v %v)", startsByName(b), startsByName(a), err2, err1)
	}
	if got := s.jobs[3].Alloc.Total().At(gres.CPU); s.jobs[3].State == JobRunning && got != 40 {
		t.Fatalf("job 3 holds %d CPUs, want 40", got)
	}
}
