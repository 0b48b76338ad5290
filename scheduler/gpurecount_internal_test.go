package scheduler

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
)

// recountCluster is 4 nodes of 16 CPUs and 4 GPUs (2 per socket), with
// backfill, and a --gpus=8 job held pending, its count 2.
func recountCluster(t *testing.T) (*Scheduler, JobID) {
	t.Helper()
	var nodes []NodeConfig
	for _, name := range []string{"g0", "g1", "g2", "g3"} {
		var inv gres.Inventory
		for i := range 4 {
			inv.Devices = append(inv.Devices, gres.Device{Index: i, Name: "gpu", Type: "a100", NUMA: i / 2, Socket: i / 2})
		}
		nodes = append(nodes, NodeConfig{Name: name, CPUs: 16, MemoryMiB: 64 * 1024, Devices: inv})
	}
	s, err := New(Config{Nodes: nodes, Partitions: []PartitionConfig{{Name: "gpu", Default: true}}, Backfill: &backfill.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.Submit(fzEpoch, JobSpec{GRESPerJob: []gres.Request{{Name: "gpu", Count: 8}}, Hold: true, TimeLimit: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.jobs[id].nodes; got != 2 {
		t.Fatalf("chosen count %d, want 2", got)
	}
	return s, id
}

// halve returns node name's configuration with its socket 0 GPUs only.
func halve(t *testing.T, s *Scheduler, name string) NodeConfig {
	t.Helper()
	nc, ok := s.NodeConfig(name)
	if !ok {
		t.Fatalf("no node %s", name)
	}
	nc.Devices.Devices = nc.Devices.Devices[:2]
	return nc
}

// A node event that fails leaves the recount undone with everything else:
// the state reads the same, and the job's derived request too.
func TestGPURecountFailedEventChangesNothing(t *testing.T) {
	s, id := recountCluster(t)
	// A running job holds g3's 4 GPUs: halving g3 is refused.
	hog, err := s.Submit(fzEpoch, JobSpec{NodeList: "g3", GRESPerNode: []gres.Request{{Name: "gpu", Count: 4}}, TimeLimit: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Schedule(fzEpoch); err != nil {
		t.Fatal(err)
	}
	if s.jobs[hog].State != JobRunning {
		t.Fatalf("hog %v", s.jobs[hog].State)
	}
	for _, name := range []string{"g0", "g1", "g2"} {
		if err := s.UpdateNode(fzEpoch, halve(t, s, name)); err != nil {
			t.Fatal(err)
		}
	}
	// 2+2+2+4 GPUs: 8 take g3 and two others, 3 nodes.
	j := s.jobs[id]
	if j.nodes != 3 {
		t.Fatalf("count %d after three halvings, want 3", j.nodes)
	}
	before := fzDigest(s, fzEpoch)
	per, bfMin, sh := j.perNode.Clone(), j.bfMin.Clone(), j.shape
	err = s.UpdateNode(fzEpoch, halve(t, s, "g3"))
	if !errors.Is(err, ErrNodeInUse) {
		t.Fatalf("UpdateNode g3: %v, want ErrNodeInUse", err)
	}
	if after := fzDigest(s, fzEpoch); after != before {
		t.Fatalf("failed event changed the state: %s", fzDiff(after, before))
	}
	if j.nodes != 3 || !j.perNode.Equal(per) || !j.bfMin.Equal(bfMin) || j.shape != sh {
		t.Fatalf("failed event changed the job's request: nodes %d", j.nodes)
	}
	// Removing g3 (it runs a job) fails too.
	if err := s.RemoveNode(fzEpoch, "g3"); !errors.Is(err, ErrNodeInUse) {
		t.Fatalf("RemoveNode g3: %v, want ErrNodeInUse", err)
	}
	if after := fzDigest(s, fzEpoch); after != before {
		t.Fatalf("failed RemoveNode changed the state: %s", fzDiff(after, before))
	}
}

// A recomputed job survives a snapshot round trip: its count and derived
// request read back as they were, and it starts as the original does.
func TestGPURecountSnapshotRoundTrip(t *testing.T) {
	s, id := recountCluster(t)
	for _, name := range []string{"g0", "g1", "g2", "g3"} {
		if err := s.UpdateNode(fzEpoch, halve(t, s, name)); err != nil {
			t.Fatal(err)
		}
	}
	j := s.jobs[id]
	if j.nodes != 4 {
		t.Fatalf("recounted %d, want 4", j.nodes)
	}
	r := snapRestore(t, s, fzEpoch, RestoreOptions{})
	rj := r.jobs[id]
	if rj.nodes != 4 || !rj.perNode.Equal(j.perNode) || !rj.bfPer.Equal(j.bfPer) || !rj.bfMin.Equal(j.bfMin) || !rj.bfSpread.Equal(j.bfSpread) {
		t.Fatalf("restored job: nodes %d perNode %v bfMin %v, want %d %v %v", rj.nodes, rj.perNode, rj.bfMin, j.nodes, j.perNode, j.bfMin)
	}
	for _, x := range []*Scheduler{s, r} {
		if err := x.Release(fzEpoch, id); err != nil {
			t.Fatal(err)
		}
		if _, err := x.Schedule(fzEpoch.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := fzDigest(s, fzEpoch.Add(time.Minute)), fzDigest(r, fzEpoch.Add(time.Minute)); a != b {
		t.Fatalf("restored scheduler diverges: %s", fzDiff(b, a))
	}
	if got := s.jobs[id]; got.State != JobRunning || len(got.Alloc.Nodes) != 4 {
		t.Fatalf("job %v on %d nodes, want running on 4", got.State, len(got.Alloc.Nodes))
	}
}

// fzCheckGPUCount checks that every pending job whose count a --gpus
// total chose holds the count gpuNodeCount chooses on the nodes as they
// are now, or, when no count can run it, any count (gpurecount.go).
func fzCheckGPUCount(s *Scheduler) error {
	var bad error
	s.pending.Ascend(func(j *job) bool {
		if !gpuCountChosen(j.Spec) || j.part < 0 {
			return true
		}
		if nj, err := s.gpuNodeCount(j.Spec, false, j); err == nil && nj.nodes != j.nodes {
			bad = fmt.Errorf("pending job %d: --gpus count %d, the nodes now give %d", j.ID, j.nodes, nj.nodes)
			return false
		}
		return true
	})
	return bad
}
