package scheduler

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
)

// admitCluster is a small GPU cluster with backfill and a policy.
func admitCluster(t *testing.T) Config {
	t.Helper()
	cfg, err := fzConfig(fzCluster{
		Nodes: []fzNode{{Sockets: 2, CoresPerSocket: 4, GPUsPerSocket: 2, GPUType: "a100", Links: true, MemGiB: 64},
			{Sockets: 2, CoresPerSocket: 4, GPUsPerSocket: 2, GPUType: "a100", Links: true, MemGiB: 64},
			{Sockets: 1, CoresPerSocket: 8, MemGiB: 32}},
		Parts:    []fzPart{{Default: true, DefaultTime: 3600}},
		Backfill: 2, Policy: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// admitOf is the AdmitEvent that re-admits running job j as its Job
// record describes it.
func admitOf(j Job) AdmitEvent {
	ev := AdmitEvent{Spec: j.Spec, ID: j.ID, Start: j.StartTime, TimeLimit: j.TimeLimit}
	for _, na := range j.Alloc.Nodes {
		ev.Nodes = append(ev.Nodes, AdmitNode{Node: na.Name, CPUs: na.CPUs, MemoryMiB: na.MemoryMiB, Devices: na.Devices})
	}
	return ev
}

// TestAdmitRunningJobs runs jobs on one scheduler, re-admits each on a
// fresh one from its Job record, and checks that the second holds the
// same nodes, jobs and usage and decides the next cycles as the first.
func TestAdmitRunningJobs(t *testing.T) {
	t0 := fzEpoch
	a, err := New(admitCluster(t))
	if err != nil {
		t.Fatal(err)
	}
	specs := []JobSpec{
		{User: "ann", CPUsPerTask: 3, GRESPerNode: []gres.Request{{Name: "gpu", Count: 2}}, TimeLimit: time.Hour},
		{User: "bob", Nodes: 2, CPUsPerTask: 2, GRESPerNode: []gres.Request{{Name: "gpu", Count: 1}}, TimeLimit: 2 * time.Hour},
		{User: "cy", Exclusive: true, TimeLimit: 30 * time.Minute, Partition: "p0"},
		{User: "ann", CPUsPerTask: 1, MemPerNodeMiB: 1024, TimeLimit: 45 * time.Minute},
	}
	for _, sp := range specs {
		if _, err := a.Submit(t0, sp); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Schedule(t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(5 * time.Minute)
	b, err := New(admitCluster(t))
	if err != nil {
		t.Fatal(err)
	}
	admitted := 0
	for _, j := range a.Jobs() {
		if j.State != JobRunning {
			continue
		}
		id, err := b.Admit(now, admitOf(j))
		if err != nil {
			t.Fatalf("admit job %d: %v", j.ID, err)
		}
		if id != j.ID {
			t.Fatalf("admitted job %d as %d", j.ID, id)
		}
		admitted++
	}
	if admitted < 3 {
		t.Fatalf("only %d jobs ran; the test wants most of them running", admitted)
	}
	// The pending ones are submitted again, in the same order.
	for _, j := range a.Jobs() {
		if j.State == JobPending {
			t.Fatalf("job %d pends; the test wants every job running", j.ID)
		}
	}
	for k, s := range []*Scheduler{a, b} {
		if _, err := s.Submit(now, JobSpec{User: "bob", CPUsPerTask: 4, GRESPerNode: []gres.Request{{Name: "gpu", Count: 2}}, TimeLimit: time.Hour}); err != nil {
			t.Fatalf("scheduler %d: %v", k, err)
		}
	}
	for _, at := range []time.Duration{6 * time.Minute, 31 * time.Minute, 61 * time.Minute, 3 * time.Hour} {
		ca, err := a.Schedule(t0.Add(at))
		if err != nil {
			t.Fatal(err)
		}
		cb, err := b.Schedule(t0.Add(at))
		if err != nil {
			t.Fatal(err)
		}
		// The audit records name the policy and queue position; the
		// decisions themselves must agree.
		ca.Decisions, cb.Decisions = nil, nil
		if da, db := fzCycleDigest(ca), fzCycleDigest(cb); da != db {
			t.Fatalf("cycle at +%v: re-admitted scheduler decides differently: %s", at, fzDiff(db, da))
		}
	}
	for _, n := range a.Nodes() {
		m, _ := b.Node(n.Name)
		if n.State != m.State || !n.Free.Equal(m.Free) {
			t.Fatalf("node %s: %v free %v, re-admitted %v free %v", n.Name, n.State, n.Free, m.State, m.Free)
		}
	}
}

// TestAdmitRejectsWhatDoesNotHold checks each refusal, and that a refused
// admission changes nothing.
func TestAdmitRejectsWhatDoesNotHold(t *testing.T) {
	t0 := fzEpoch
	s, err := New(admitCluster(t))
	if err != nil {
		t.Fatal(err)
	}
	gpu2 := JobSpec{User: "ann", CPUsPerTask: 2, GRESPerNode: []gres.Request{{Name: "gpu", Count: 2}}, TimeLimit: time.Hour}
	ok := AdmitEvent{Spec: gpu2, Start: t0, Nodes: []AdmitNode{{Node: "n0", CPUs: []int{0, 1}, Devices: []int{0, 1}}}}
	if _, err := s.Admit(t0.Add(time.Minute), ok); err != nil {
		t.Fatalf("valid admission: %v", err)
	}
	if err := s.SetDeviceHealth(t0.Add(time.Minute), "n1", 3, false, "xid 79"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DownNode(t0.Add(time.Minute), "n2", "gone"); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(2 * time.Minute)
	with := func(f func(e *AdmitEvent)) AdmitEvent {
		e := AdmitEvent{Spec: gpu2, Start: t0, Nodes: []AdmitNode{{Node: "n1", CPUs: []int{4, 5}, Devices: []int{2, 3}}}}
		f(&e)
		return e
	}
	for name, ev := range map[string]AdmitEvent{
		"CPU in use":        with(func(e *AdmitEvent) { e.Nodes[0] = AdmitNode{Node: "n0", CPUs: []int{1, 2}, Devices: []int{2, 3}} }),
		"device in use":     with(func(e *AdmitEvent) { e.Nodes[0] = AdmitNode{Node: "n0", CPUs: []int{4, 5}, Devices: []int{1, 2}} }),
		"unhealthy device":  with(func(*AdmitEvent) {}),
		"unknown device":    with(func(e *AdmitEvent) { e.Nodes[0].Devices = []int{2, 9} }),
		"unknown node":      with(func(e *AdmitEvent) { e.Nodes[0].Node = "nope" }),
		"down node":         with(func(e *AdmitEvent) { e.Spec.GRESPerNode = nil; e.Nodes[0] = AdmitNode{Node: "n2", CPUs: []int{0, 1}} }),
		"too few nodes":     with(func(e *AdmitEvent) { e.Spec.Nodes = 2; e.Nodes[0].Devices = []int{2} }),
		"short of request":  with(func(e *AdmitEvent) { e.Nodes[0].Devices = []int{2} }),
		"CPU out of range":  with(func(e *AdmitEvent) { e.Nodes[0].CPUs = []int{4, 99} }),
		"CPU twice":         with(func(e *AdmitEvent) { e.Nodes[0].CPUs = []int{4, 4} }),
		"ID already used":   with(func(e *AdmitEvent) { e.ID = 1 }),
		"start in future":   with(func(e *AdmitEvent) { e.Start = now.Add(time.Second) }),
		"no start":          with(func(e *AdmitEvent) { e.Start = time.Time{} }),
		"invalid spec":      with(func(e *AdmitEvent) { e.Spec.CPUsPerTask = -1 }),
		"unknown partition": with(func(e *AdmitEvent) { e.Spec.Partition = "nope" }),
	} {
		before := fzDigest(s, now)
		if _, err := s.Admit(now, ev); err == nil {
			t.Errorf("%s: admitted", name)
		} else if !errors.Is(err, ErrInvalidJob) {
			t.Errorf("%s: error %v does not wrap ErrInvalidJob", name, err)
		}
		if after := fzDigest(s, now); after != before {
			t.Errorf("%s: a refused admission changed the state: %s", name, fzDiff(after, before))
		}
	}
}

// TestAdmitEventJSON checks that an AdmitEvent travels as an Entry.
func TestAdmitEventJSON(t *testing.T) {
	in := Entry{At: fzEpoch, Event: AdmitEvent{Spec: JobSpec{User: "ann", TimeLimit: time.Hour}, ID: 7, Start: fzEpoch.Add(-time.Minute),
		Nodes: []AdmitNode{{Node: "n0", CPUs: []int{0, 1}, MemoryMiB: 512, Devices: []int{1}}}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Entry
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	b2, _ := json.Marshal(out)
	if string(b) != string(b2) || out.Event.Kind() != KindAdmit {
		t.Fatalf("round trip: %s, then %s", b, b2)
	}
}
