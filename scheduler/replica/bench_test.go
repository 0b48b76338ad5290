package replica_test

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/replica"
)

// tcpReplicas starts n replicas on loopback TCP transports and returns
// them with the leader first.
func tcpReplicas(b *testing.B, n int) []*replica.Replica {
	b.Helper()
	var reps []*replica.Replica
	var servers []raft.Server
	for i := range n {
		trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 3, time.Second, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		id := raft.ServerID("t" + strconv.Itoa(i))
		r, err := replica.New(replica.Config{ID: id, Scheduler: testConfig(string(id)), Raft: testRaft(),
			LogStore: raft.NewInmemStore(), StableStore: raft.NewInmemStore(),
			SnapshotStore: raft.NewInmemSnapshotStore(), Transport: trans})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = r.Shutdown(); _ = trans.Close() })
		go func() {
			for d := range r.Deliveries() {
				_ = r.Ack(d.Index)
			}
		}()
		reps = append(reps, r)
		servers = append(servers, raft.Server{ID: id, Address: trans.LocalAddr()})
	}
	if err := reps[0].Bootstrap(servers...); err != nil {
		b.Fatal(err)
	}
	for {
		for i, r := range reps {
			if r.IsLeader() && r.Raft().Barrier(time.Second).Error() == nil {
				reps[0], reps[i] = reps[i], reps[0]
				return reps
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// commit proposes b.N submits on the leader from par goroutines (1: one
// at a time, each waiting for its commit) and reports committed events
// per second.
func commit(b *testing.B, leader *replica.Replica, par int) {
	var clock atomic.Int64
	spec := scheduler.JobSpec{User: "ann", Account: "a", Tasks: 1, CPUsPerTask: 1, TimeLimit: time.Hour}
	start := time.Now()
	b.ResetTimer()
	if par == 1 {
		for i := 0; b.Loop(); i++ {
			if _, err := leader.Propose(t0.Add(time.Duration(i)*time.Millisecond), scheduler.SubmitEvent{Spec: spec}); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		b.SetParallelism(par)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				for {
					now := t0.Add(time.Duration(clock.Add(1)) * time.Millisecond)
					_, err := leader.Propose(now, scheduler.SubmitEvent{Spec: spec})
					if errors.Is(err, replica.ErrTimeBackwards) {
						continue // another goroutine stamped a later time first
					}
					if err != nil {
						b.Error(err)
						return
					}
					break
				}
			}
		})
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkReplicaCommit measures committed events per second at three
// replicas on loopback: on raft's in-memory transport and on TCP, one
// proposer at a time (each waits for its commit: latency bound) and 32
// at once (raft batches them).
func BenchmarkReplicaCommit(b *testing.B) {
	for _, tr := range []string{"inmem", "tcp"} {
		for _, par := range []int{1, 16} {
			name := tr + "/serial"
			if par > 1 {
				name = tr + "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				var leader *replica.Replica
				if tr == "tcp" {
					leader = tcpReplicas(b, 3)[0]
				} else {
					c := newCluster(b, 3, testRaft, nil)
					leader = c.members[c.leader()].rep
				}
				commit(b, leader, par)
			})
		}
	}
}

// BenchmarkReplicaFailover measures failover: from the leader's shutdown
// to a new leader's first committed proposal, at the tests' Raft timeouts
// (heartbeat and election 50 ms). The killed replica comes back on its
// stores between iterations (not timed).
func BenchmarkReplicaFailover(b *testing.B) {
	c := newCluster(b, 3, testRaft, nil)
	now := t0
	var total time.Duration
	n := 0
	for b.Loop() {
		lead := c.leader()
		start := time.Now()
		c.kill(lead)
		now = now.Add(time.Second)
		for {
			if _, err := c.propose(now, scheduler.ScheduleEvent{}); err == nil {
				break
			}
			now = now.Add(time.Millisecond)
		}
		total += time.Since(start)
		n++
		b.StopTimer()
		c.start(lead, false)
		c.leader()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(n), "failover-ms")
}

// BenchmarkReplicaSnapshotInstall measures Raft snapshots at the standard
// scale (clustertest.StandardState: 10,000 nodes, about 40,000 jobs
// running and 100,000 pending): three replicas start from that state
// (Config.Initial) and run a few cycles, the leader snapshots and
// compacts its log (timed: snapshot-ms, and the snapshot's size), then a
// fourth replica on empty stores is added (raft's AddNonvoter) and
// brought up by the snapshot install, on the in-memory transport (timed
// until it has applied the leader's last entry: install-ms). restore-ms
// is Scheduler.Restore of the standard state alone, the part of an
// install that is the scheduler's.
func BenchmarkReplicaSnapshotInstall(b *testing.B) {
	s, now, err := clustertest.StandardState(40000, 100000, 1)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.Snapshot(&buf); err != nil {
		b.Fatal(err)
	}
	s = nil
	initial := buf.Bytes()
	t := time.Now()
	if _, err := scheduler.Restore(bytes.NewReader(initial), scheduler.RestoreOptions{}); err != nil {
		b.Fatal(err)
	}
	restoreMS := float64(time.Since(t).Microseconds()) / 1000 // the scheduler's part of an install
	cfg := func() *raft.Config {
		c := testRaft()
		c.TrailingLogs = 2
		c.SnapshotThreshold = 1 << 30
		// Applying a cycle or a restore at this scale takes a second or
		// more on a busy machine: longer leases than the tests'.
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 2*time.Second, 2*time.Second, time.Second
		return c
	}
	var snapMS, installMS, size float64
	n := 0
	for b.Loop() {
		b.StopTimer()
		c := newClusterFrom(b, 3, cfg, initial, false)
		lead := c.leader()
		for i := range 3 {
			if _, err := c.propose(now.Add(time.Duration(i+1)*time.Second), scheduler.ScheduleEvent{}); err != nil {
				b.Fatal(err)
			}
		}
		l := c.members[lead].rep
		b.StartTimer()
		t = time.Now()
		if err := l.Raft().Snapshot().Error(); err != nil {
			b.Fatal(err)
		}
		snapMS += float64(time.Since(t).Microseconds()) / 1000
		metas, err := c.members[lead].snaps.List()
		if err != nil || len(metas) == 0 {
			b.Fatalf("no snapshot stored: %v", err)
		}
		size += float64(metas[0].Size)
		c.members = append(c.members, &member{id: "r3", addr: "mem-r3"})
		c.start(3, true)
		t = time.Now()
		if err := l.Raft().AddNonvoter("r3", "mem-r3", 0, 0).Error(); err != nil {
			b.Fatal(err)
		}
		for c.members[3].rep.Stats().Applied != l.Stats().Applied {
			time.Sleep(time.Millisecond)
		}
		installMS += float64(time.Since(t).Microseconds()) / 1000
		n++
		b.StopTimer()
		if snaps, err := c.members[3].snaps.List(); err != nil || len(snaps) == 0 {
			b.Fatalf("the new replica holds no installed snapshot (%v)", err)
		}
		c.shutdown()
		b.StartTimer()
	}
	b.ReportMetric(snapMS/float64(n), "snapshot-ms")
	b.ReportMetric(installMS/float64(n), "install-ms")
	b.ReportMetric(size/float64(n), "snapshot-bytes")
	b.ReportMetric(restoreMS, "restore-ms")
}
