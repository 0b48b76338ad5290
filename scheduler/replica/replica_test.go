package replica_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/replica"
)

// TestReplicaLeaderKill kills the leader mid-cycle, between proposing a
// ScheduleEvent and handing out its decisions: either after the cycle
// committed and before the consumer took it (the new leader must deliver
// it, with the same index), or while the proposal is in flight (it
// commits or it does not; either way it is delivered exactly when it is
// committed). The killed replica comes back on its stores. After each
// run: one leader, every committed cycle delivered once (by index), all
// digests equal.
func TestReplicaLeaderKill(t *testing.T) {
	seeded(t, 8, func(t *testing.T, seed uint64) {
		c := newCluster(t, 3, testRaft, nil)
		w := newWorkload(c, seed)
		w.steps(10 + int(seed%5))
		for kill := range 2 {
			w.steps(4)
			w.now = w.now.Add(time.Minute) // a priority recalculation is due
			lead := c.leader()
			l := c.members[lead]
			if (seed+uint64(kill))%2 == 0 {
				// Committed, not delivered.
				c.cons.holdOff(l.rep)
				a, err := l.rep.Schedule(w.now)
				if err != nil {
					t.Fatalf("schedule on the leader: %v", err)
				}
				w.cycles = append(w.cycles, a.Index)
				for _, st := range a.Result.Cycle.Starts {
					w.running = append(w.running, st.Job)
				}
			} else {
				// In flight.
				var wg sync.WaitGroup
				wg.Add(1)
				rep, now := l.rep, w.now
				go func() {
					defer wg.Done()
					if a, err := rep.Schedule(now); err == nil {
						c.cons.mu.Lock()
						w.cycles = append(w.cycles, a.Index)
						c.cons.mu.Unlock()
					}
				}()
				time.Sleep(time.Duration(rand.N(2000)) * time.Microsecond)
				c.kill(lead)
				wg.Wait()
			}
			c.kill(lead)
			w.steps(6)
			c.start(lead, false)
		}
		w.settle()
	})
}

// TestReplicaPartition partitions the network in process: the leader
// alone on one side (it cannot commit: what it takes is never applied
// anywhere, and the majority elects a leader and goes on), or a follower
// alone (the majority goes on without it). After healing: one leader,
// nothing lost or duplicated, all digests equal.
func TestReplicaPartition(t *testing.T) {
	seeded(t, 8, func(t *testing.T, seed uint64) {
		c := newCluster(t, 3, testRaft, nil)
		w := newWorkload(c, seed)
		w.steps(8)
		lead := c.leader()
		alone := lead
		if seed%2 == 1 {
			alone = (lead + 1) % 3
		}
		var rest []int
		for i := range 3 {
			if i != alone {
				rest = append(rest, i)
			}
		}
		c.partition([]int{alone}, rest)
		if alone == lead {
			// The minority leader cannot commit.
			w.now = w.now.Add(time.Second)
			_, err := c.members[alone].rep.Propose(w.now, scheduler.SubmitEvent{Spec: scheduler.JobSpec{
				User: "ann", Account: "a", Name: "minority", Tasks: 1, CPUsPerTask: 1, TimeLimit: time.Hour}})
			if err == nil {
				t.Fatal("a leader cut off from the majority committed a submit")
			}
		}
		w.steps(12)
		w.settle()
		for _, m := range c.members {
			err := m.rep.Read(func(s *scheduler.Scheduler) error {
				for _, j := range s.Jobs() {
					if j.Spec.Name == "minority" {
						return fmt.Errorf("job %d submitted on the cut-off leader exists", j.ID)
					}
				}
				return nil
			})
			if err != nil {
				t.Errorf("%s: %v", m.id, err)
			}
		}
	})
}

// TestReplicaFollowerRestartFromNothing stops a follower, compacts the
// leader's log past what it has, and starts it again on empty stores: it
// must be brought up by a snapshot install (Scheduler.Snapshot/Restore
// under raft's InstallSnapshot) and end with the others' digest.
func TestReplicaFollowerRestartFromNothing(t *testing.T) {
	cfg := func() *raft.Config {
		c := testRaft()
		c.TrailingLogs = 2
		c.SnapshotThreshold = 1 << 20 // snapshots only when asked
		return c
	}
	seeded(t, 5, func(t *testing.T, seed uint64) {
		c := newCluster(t, 3, cfg, nil)
		w := newWorkload(c, seed)
		w.steps(10)
		lead := c.leader()
		f := (lead + 1 + int(seed%2)) % 3
		c.kill(f)
		w.steps(15)
		lead = c.leader()
		if err := c.members[lead].rep.Raft().Snapshot().Error(); err != nil {
			t.Fatal(err)
		}
		c.start(f, true)
		w.steps(5)
		w.settle()
		if snaps, err := c.members[f].snaps.List(); err != nil || len(snaps) == 0 {
			t.Errorf("the restarted follower holds no installed snapshot (%v)", err)
		}
	})
}

// slowStore is a LogStore on a slow disk: every write waits.
type slowStore struct {
	raft.LogStore
	mu    sync.Mutex
	rng   *rand.Rand
	delay time.Duration
}

func (s *slowStore) wait() {
	s.mu.Lock()
	d := time.Duration(s.rng.Int64N(int64(s.delay)))
	s.mu.Unlock()
	time.Sleep(d)
}

func (s *slowStore) StoreLog(l *raft.Log) error { s.wait(); return s.LogStore.StoreLog(l) }

func (s *slowStore) StoreLogs(ls []*raft.Log) error { s.wait(); return s.LogStore.StoreLogs(ls) }

// TestReplicaSlowDisk runs the workload with every log write delayed (up
// to several milliseconds, longer than a heartbeat sometimes takes) and a
// leader kill: the invariants hold as on fast disks.
func TestReplicaSlowDisk(t *testing.T) {
	seeded(t, 5, func(t *testing.T, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 7))
		slow := func(ls raft.LogStore) raft.LogStore {
			return &slowStore{LogStore: ls, rng: rand.New(rand.NewPCG(rng.Uint64(), 1)), delay: 8 * time.Millisecond}
		}
		c := newCluster(t, 3, testRaft, slow)
		w := newWorkload(c, seed)
		w.steps(15)
		lead := c.leader()
		c.kill(lead)
		w.steps(10)
		c.start(lead, false)
		w.settle()
	})
}

// TestReplicaNotLeader checks that a follower refuses a proposal and an
// ack, naming the leader.
func TestReplicaNotLeader(t *testing.T) {
	c := newCluster(t, 3, testRaft, nil)
	lead := c.leader()
	f := c.members[(lead+1)%3].rep
	_, err := f.Propose(t0, scheduler.ScheduleEvent{})
	var nl *replica.NotLeaderError
	if !errors.As(err, &nl) || !errors.Is(err, replica.ErrNotLeader) {
		t.Fatalf("follower propose: %v, want a NotLeaderError", err)
	}
	if nl.ID != c.members[lead].id || nl.Address != c.members[lead].addr {
		t.Errorf("follower names %s at %s, the leader is %s at %s", nl.ID, nl.Address, c.members[lead].id, c.members[lead].addr)
	}
	if err := f.Ack(1); !errors.Is(err, replica.ErrNotLeader) {
		t.Errorf("follower ack: %v, want ErrNotLeader", err)
	}
}

// TestReplicaTimeNeverGoesBack checks the log's clock: a proposal before
// the latest time is refused and not logged; a zero time is stamped by
// the Clock, raised to the log's latest when the clock is behind.
func TestReplicaTimeNeverGoesBack(t *testing.T) {
	c := newCluster(t, 1, testRaft, nil)
	r := c.members[c.leader()].rep
	if _, err := r.Schedule(t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	before := r.Stats()
	if _, err := r.Schedule(t0); !errors.Is(err, replica.ErrTimeBackwards) {
		t.Fatalf("schedule an hour back: %v, want ErrTimeBackwards", err)
	}
	if r.Stats() != before {
		t.Errorf("a refused proposal changed the state: %+v, then %+v", before, r.Stats())
	}
	if _, err := r.Schedule(time.Time{}); err == nil {
		t.Error("a zero time without a Clock was accepted")
	}
}

// TestReplicaTimeFloorSurvivesFailover checks that the floor is the
// log's, not the leader's: an entry that failed to apply (its time is
// not the scheduler's clock) still bounds what a new leader accepts.
func TestReplicaTimeFloorSurvivesFailover(t *testing.T) {
	c := newCluster(t, 3, testRaft, nil)
	late := t0.Add(2 * time.Hour)
	if a, err := c.propose(late, scheduler.CancelEvent{Job: 424242}); !errors.Is(err, scheduler.ErrUnknownJob) || a.Index == 0 {
		t.Fatalf("cancel of an unknown job: index %d, %v", a.Index, err)
	}
	lead := c.leader()
	c.kill(lead)
	if _, err := c.propose(t0.Add(time.Hour), scheduler.ScheduleEvent{}); !errors.Is(err, replica.ErrTimeBackwards) {
		t.Fatalf("new leader took a time before the failed entry's: %v, want ErrTimeBackwards", err)
	}
	if _, err := c.propose(late, scheduler.ScheduleEvent{}); err != nil {
		t.Fatalf("new leader refused the log's latest time: %v", err)
	}
	c.start(lead, false)
	c.settle()
}

// TestReplicaClockStamps checks that a zero time is stamped from
// Config.Clock, and raised to the log's latest when the clock is behind.
func TestReplicaClockStamps(t *testing.T) {
	addr, trans := raft.NewInmemTransport("")
	clock := t0.Add(time.Hour)
	r, err := replica.New(replica.Config{ID: "c0", Scheduler: testConfig("c0"), Raft: testRaft(),
		LogStore: raft.NewInmemStore(), StableStore: raft.NewInmemStore(), SnapshotStore: raft.NewInmemSnapshotStore(),
		Transport: trans, Clock: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown()
	go func() {
		for d := range r.Deliveries() {
			_ = r.Ack(d.Index)
		}
	}()
	if err := r.Bootstrap(raft.Server{ID: "c0", Address: addr}); err != nil {
		t.Fatal(err)
	}
	for !r.IsLeader() {
		time.Sleep(time.Millisecond)
	}
	a, err := r.Schedule(time.Time{})
	if err != nil || !a.At.Equal(clock) || !a.Result.Cycle.Now.Equal(clock) {
		t.Fatalf("zero time stamped %v (cycle at %v), %v; want the clock's %v", a.At, a.Result.Cycle, err, clock)
	}
	ahead := clock.Add(time.Hour)
	if _, err := r.Schedule(ahead); err != nil {
		t.Fatal(err)
	}
	if a, err = r.Schedule(time.Time{}); err != nil || !a.At.Equal(ahead) {
		t.Errorf("clock behind the log: stamped %v, %v; want the log's latest %v", a.At, err, ahead)
	}
}

// TestReplicaFailedEventChangesNothing checks that an event that fails
// fails on every replica and leaves the scheduler as it was.
func TestReplicaFailedEventChangesNothing(t *testing.T) {
	c := newCluster(t, 3, testRaft, nil)
	w := newWorkload(c, 1)
	w.steps(6)
	c.settle()
	snap := func(r *replica.Replica) string {
		var b []byte
		_ = r.Read(func(s *scheduler.Scheduler) error {
			var buf bytesBuffer
			err := s.Snapshot(&buf)
			b = buf
			return err
		})
		return string(b)
	}
	before := snap(c.members[0].rep)
	a, err := c.propose(w.now, scheduler.CancelEvent{Job: 999999})
	if !errors.Is(err, scheduler.ErrUnknownJob) || a.Index == 0 {
		t.Fatalf("cancel of an unknown job: index %d, %v; want it committed and failed with ErrUnknownJob", a.Index, err)
	}
	c.settle()
	for _, m := range c.members {
		if snap(m.rep) != before {
			t.Errorf("%s: the failed event changed the scheduler", m.id)
		}
	}
}

// bytesBuffer is an io.Writer into a byte slice.
type bytesBuffer []byte

func (b *bytesBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

// TestReplicaRedeliverAfterSnapshot keeps the deliveries unacknowledged
// (the consumer is stopped everywhere), snapshots the leader, brings a
// follower up from nothing by that snapshot, and hands it the
// leadership: the unacknowledged deliveries live in the replicated state
// (the snapshot), so the new leader hands them out, under the indices of
// their cycles.
func TestReplicaRedeliverAfterSnapshot(t *testing.T) {
	cfg := func() *raft.Config {
		c := testRaft()
		c.TrailingLogs = 2
		c.SnapshotThreshold = 1 << 20
		return c
	}
	c := newCluster(t, 3, cfg, nil)
	w := newWorkload(c, 5)
	w.steps(4)
	c.settle()
	for _, m := range c.members {
		c.cons.holdOff(m.rep)
	}
	lead := c.leader()
	f := (lead + 1) % 3
	c.kill(f)
	w.steps(20)
	held := c.members[lead].rep.Stats().Undelivered
	if held == 0 {
		t.Fatal("no cycle is waiting for delivery")
	}
	if err := c.members[lead].rep.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	c.start(f, true)
	c.cons.holdOff(c.members[f].rep)
	for c.members[f].rep.Stats().Applied != c.members[lead].rep.Stats().Applied {
		time.Sleep(time.Millisecond)
	}
	if got := c.members[f].rep.Stats().Undelivered; got != held {
		t.Fatalf("the installed follower holds %d undelivered, the leader %d", got, held)
	}
	m := c.members[f]
	if err := c.members[lead].rep.Raft().LeadershipTransferToServer(m.id, m.addr).Error(); err != nil {
		t.Fatal(err)
	}
	if c.leader() != f {
		t.Fatalf("leadership not moved to %s: %s", m.id, c.describe())
	}
	c.cons.mu.Lock()
	before := len(c.cons.got)
	clear(c.cons.hold)
	c.cons.mu.Unlock()
	w.settle()
	c.cons.mu.Lock()
	defer c.cons.mu.Unlock()
	if len(c.cons.got)-before != held {
		t.Errorf("%d deliveries taken after the move, %d were held", len(c.cons.got)-before, held)
	}
}

// TestReplicaInitialSnapshot starts a group from a snapshot of a
// scheduler that ran alone with a fair-share source (Config.Initial):
// the replicas carry on from its state, a follower restarted from
// nothing is installed from a Raft snapshot of it, and all end equal.
func TestReplicaInitialSnapshot(t *testing.T) {
	s, err := scheduler.New(testConfig("solo"))
	if err != nil {
		t.Fatal(err)
	}
	spec := scheduler.JobSpec{User: "ann", Account: "a", Tasks: 1, CPUsPerTask: 8, TimeLimit: time.Hour}
	for range 3 {
		if _, err := s.Submit(t0, spec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Schedule(t0); err != nil {
		t.Fatal(err)
	}
	var snap bytesBuffer
	if err := s.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	cfg := func() *raft.Config {
		c := testRaft()
		c.TrailingLogs = 2
		c.SnapshotThreshold = 1 << 20
		return c
	}
	c := newClusterFrom(t, 3, cfg, snap, true)
	w := newWorkload(c, 3)
	w.now = t0.Add(time.Hour)
	w.steps(10)
	lead := c.leader()
	f := (lead + 2) % 3
	c.kill(f)
	w.steps(10)
	if err := c.members[c.leader()].rep.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	c.start(f, true)
	w.settle()
	err = c.members[f].rep.Read(func(s *scheduler.Scheduler) error {
		if j, ok := s.Job(1); !ok || j.State == scheduler.JobPending {
			return fmt.Errorf("job 1, started before replication, is %+v", j.State)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
