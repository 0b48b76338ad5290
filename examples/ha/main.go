// Command ha runs a replicated Sluice control plane: three replicas of
// the scheduler in one Raft group (package scheduler/replica) on
// loopback TCP, and a client that submits jobs through whichever replica
// leads, runs scheduling cycles and finishes jobs. Midway the leader is
// killed right after a cycle committed and its decisions were acted on,
// before the launcher's acknowledgement: a new leader is elected, hands
// the unacknowledged decisions out again under the same log index, and
// the launcher, which acts on each index once, skips them: every job is
// started exactly once.
//
//	go run ./examples/ha
//	go run ./examples/ha -jobs 60 -seed 7
//
// Each replica here is a goroutine with its own TCP listener, in-memory
// Raft stores and a launcher consumer reading its Deliveries (only the
// leader's ever delivers). In a real deployment each is a process on its
// own machine, with raft-boltdb stores so that a restart keeps its log.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/replica"
)

func main() {
	var o options
	flag.IntVar(&o.jobs, "jobs", 30, "jobs to submit")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the job mix")
	flag.Parse()
	if _, err := run(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "ha:", err)
		os.Exit(1)
	}
}

type options struct {
	jobs int
	seed uint64
}

// report is what a run shows, for the test.
type report struct {
	oldLeader, newLeader raft.ServerID
	// heldIndex is the cycle committed under the old leader and not
	// acknowledged when it was killed.
	heldIndex uint64
	// deliveredBy maps each delivered index to the replicas that handed
	// it out.
	deliveredBy map[uint64][]raft.ServerID
	cycles      uint64 // cycles committed
	started     int    // jobs the launcher started
	startsSeen  int    // jobs the cycles started (from the proposals' results)
	receipts    int    // deliveries received, repeats included
	digestsOK   bool   // the live replicas' digests are equal
}

// node is one replica with its transport.
type node struct {
	id    raft.ServerID
	rep   *replica.Replica
	trans *raft.NetworkTransport
	done  chan struct{}
}

// launcher is the orchestrator's side: it acts on each delivery once, by
// index, and acknowledges it through the replica that delivered it.
type launcher struct {
	mu      sync.Mutex
	out     io.Writer
	acted   map[uint64][]raft.ServerID
	started map[scheduler.JobID]uint64 // job → index that started it
	recv    int
	// noAck names a replica whose consumer acts but does not ack: it is
	// about to die with its replica, between acting and acknowledging.
	noAck raft.ServerID
}

func (l *launcher) consume(n *node) {
	defer close(n.done)
	for d := range n.rep.Deliveries() {
		l.act(n.id, d)
		l.mu.Lock()
		crashing := l.noAck == n.id
		l.mu.Unlock()
		if !crashing {
			_ = n.rep.Ack(d.Index) // a deposed leader refuses: the next one delivers again
		}
	}
}

// act launches a delivery's starts, once per index.
func (l *launcher) act(by raft.ServerID, d replica.Delivery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recv++
	seen := l.acted[d.Index] != nil
	l.acted[d.Index] = append(l.acted[d.Index], by)
	if seen {
		fmt.Fprintf(l.out, "  %s delivered index %d again: already acted on, skipped\n", by, d.Index)
		return
	}
	for _, st := range d.Cycle.Starts {
		if prev, dup := l.started[st.Job]; dup {
			fmt.Fprintf(l.out, "  DUPLICATE start of job %d (index %d and %d)\n", st.Job, prev, d.Index)
			continue
		}
		l.started[st.Job] = d.Index
	}
	if len(d.Cycle.Starts)+len(d.Cycle.Ended) > 0 {
		fmt.Fprintf(l.out, "  %s delivered index %d: %d starts, %d ended\n", by, d.Index, len(d.Cycle.Starts), len(d.Cycle.Ended))
	}
}

// waitActed waits until the launcher has acted on index i.
func (l *launcher) waitActed(i uint64) {
	for {
		l.mu.Lock()
		done := l.acted[i] != nil
		l.mu.Unlock()
		if done {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func config() scheduler.Config {
	var nodes []scheduler.NodeConfig
	for i := range 4 {
		nodes = append(nodes, scheduler.NodeConfig{Name: fmt.Sprintf("n%d", i+1), CPUs: 32, MemoryMiB: 128 * 1024})
	}
	return scheduler.Config{Nodes: nodes, Partitions: []scheduler.PartitionConfig{{Name: "batch", Default: true}}}
}

func raftConfig() *raft.Config {
	c := raft.DefaultConfig()
	c.HeartbeatTimeout = 100 * time.Millisecond
	c.ElectionTimeout = 100 * time.Millisecond
	c.LeaderLeaseTimeout = 100 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.Logger = hclog.NewNullLogger()
	return c
}

// start starts three replicas on loopback TCP and bootstraps them.
func start(l *launcher) ([]*node, error) {
	var nodes []*node
	var servers []raft.Server
	for i := range 3 {
		trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 3, time.Second, io.Discard)
		if err != nil {
			return nodes, err
		}
		id := raft.ServerID(fmt.Sprintf("r%d", i+1))
		rep, err := replica.New(replica.Config{
			ID: id, Scheduler: config(), Raft: raftConfig(),
			LogStore: raft.NewInmemStore(), StableStore: raft.NewInmemStore(),
			SnapshotStore: raft.NewInmemSnapshotStore(), Transport: trans,
			ApplyTimeout: 2 * time.Second,
		})
		if err != nil {
			_ = trans.Close()
			return nodes, err
		}
		n := &node{id: id, rep: rep, trans: trans, done: make(chan struct{})}
		nodes = append(nodes, n)
		servers = append(servers, raft.Server{ID: id, Address: trans.LocalAddr()})
		go l.consume(n)
	}
	return nodes, nodes[0].rep.Bootstrap(servers...)
}

// client proposes through whichever replica leads: it asks any, and
// follows the leader a follower names.
type client struct {
	nodes []*node
}

func (c *client) propose(now time.Time, ev scheduler.Event) (replica.Applied, *node, error) {
	deadline := time.Now().Add(10 * time.Second)
	n := c.nodes[0]
	for time.Now().Before(deadline) {
		if n == nil || n.rep == nil {
			n = c.any()
		}
		a, err := n.rep.Propose(now, ev)
		var nl *replica.NotLeaderError
		switch {
		case err == nil, a.Index != 0:
			return a, n, err
		case errors.As(err, &nl):
			n = c.byAddr(nl.Address)
			if n == nil {
				time.Sleep(10 * time.Millisecond) // an election is on
			}
		case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrRaftShutdown):
			return a, n, err
		default:
			return a, n, err
		}
	}
	return replica.Applied{}, nil, fmt.Errorf("no leader took the %s event", ev.Kind())
}

func (c *client) any() *node {
	for _, n := range c.nodes {
		if n.rep != nil {
			return n
		}
	}
	return nil
}

func (c *client) byAddr(a raft.ServerAddress) *node {
	for _, n := range c.nodes {
		if n.rep != nil && n.trans.LocalAddr() == a {
			return n
		}
	}
	return nil
}

func run(w io.Writer, o options) (report, error) {
	rep := report{}
	l := &launcher{out: w, acted: map[uint64][]raft.ServerID{}, started: map[scheduler.JobID]uint64{}}
	nodes, err := start(l)
	defer func() {
		for _, n := range nodes {
			if n.rep != nil {
				_ = n.rep.Shutdown()
				<-n.done
				_ = n.trans.Close()
			}
		}
	}()
	if err != nil {
		return rep, err
	}
	for _, n := range nodes {
		fmt.Fprintf(w, "replica %s on %s\n", n.id, n.trans.LocalAddr())
	}
	c := &client{nodes: nodes}
	rng := rand.New(rand.NewPCG(o.seed, 3))
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	var running []scheduler.JobID
	submitted := 0
	phase := func(jobs int) error {
		for range jobs {
			now = now.Add(time.Duration(1+rng.IntN(30)) * time.Second)
			spec := scheduler.JobSpec{User: "ann", Account: "a", Tasks: 1, CPUsPerTask: 4 + 4*rng.IntN(4),
				TimeLimit: time.Duration(1+rng.IntN(3)) * time.Hour}
			if _, _, err := c.propose(now, scheduler.SubmitEvent{Spec: spec}); err != nil {
				return fmt.Errorf("submit: %w", err)
			}
			submitted++
			if submitted%5 == 0 {
				if err := cycle(c, &now, &running, &rep); err != nil {
					return err
				}
			}
			if len(running) > 0 && rng.IntN(3) == 0 {
				k := rng.IntN(len(running))
				if _, _, err := c.propose(now, scheduler.FinishEvent{Job: running[k]}); err != nil {
					return fmt.Errorf("finish: %w", err)
				}
				running = slices.Delete(running, k, k+1)
			}
		}
		return nil
	}
	fmt.Fprintln(w, "phase 1: submit, schedule, finish")
	if err := phase(o.jobs / 2); err != nil {
		return rep, err
	}

	// Kill the leader between a cycle's commit and its delivery.
	now = now.Add(time.Second)
	a, leader, err := c.propose(now, scheduler.SubmitEvent{Spec: scheduler.JobSpec{User: "ann", Account: "a",
		Tasks: 1, CPUsPerTask: 1, TimeLimit: time.Hour}})
	if err != nil {
		return rep, err
	}
	_ = a
	rep.oldLeader = leader.id
	l.mu.Lock()
	l.noAck = leader.id
	l.mu.Unlock()
	now = now.Add(time.Second)
	a, err = leader.rep.Schedule(now)
	if err != nil {
		return rep, fmt.Errorf("schedule on the leader: %w", err)
	}
	rep.heldIndex = a.Index
	rep.startsSeen += len(a.Result.Cycle.Starts)
	for _, st := range a.Result.Cycle.Starts {
		running = append(running, st.Job)
	}
	l.waitActed(a.Index)
	fmt.Fprintf(w, "cycle at index %d committed on leader %s (%d starts) and acted on; killing %s before the ack\n",
		a.Index, leader.id, len(a.Result.Cycle.Starts), leader.id)
	killed := time.Now()
	if err := leader.rep.Shutdown(); err != nil {
		return rep, err
	}
	<-leader.done
	_ = leader.trans.Close()
	leader.rep = nil
	for leaderOf(nodes) == nil {
		time.Sleep(5 * time.Millisecond)
	}
	nl := leaderOf(nodes)
	rep.newLeader = nl.id
	fmt.Fprintf(w, "new leader %s elected after %v\n", nl.id, time.Since(killed).Round(time.Millisecond))

	fmt.Fprintln(w, "phase 2: the same through the new leader")
	if err := phase(o.jobs - o.jobs/2); err != nil {
		return rep, err
	}
	for len(running) > 0 {
		now = now.Add(time.Minute)
		if _, _, err := c.propose(now, scheduler.FinishEvent{Job: running[0]}); err != nil {
			return rep, err
		}
		running = running[1:]
		if err := cycle(c, &now, &running, &rep); err != nil {
			return rep, err
		}
	}

	// Wait for every delivery to be acknowledged and the followers to
	// catch up, then compare.
	var last replica.Stats
	for deadline := time.Now().Add(10 * time.Second); ; {
		n := leaderOf(nodes)
		if n != nil {
			last = n.rep.Stats()
			caught := true
			for _, m := range nodes {
				if m.rep != nil && m.rep.Stats() != last {
					caught = false
				}
			}
			if caught && last.Undelivered == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			return rep, fmt.Errorf("deliveries not acknowledged: %+v", last)
		}
		time.Sleep(5 * time.Millisecond)
	}
	var digests [][32]byte
	for _, n := range nodes {
		if n.rep != nil {
			d, err := n.rep.Digest()
			if err != nil {
				return rep, err
			}
			digests = append(digests, d)
		}
	}
	rep.digestsOK = len(digests) == 2 && digests[0] == digests[1]
	l.mu.Lock()
	rep.deliveredBy, rep.started, rep.receipts = l.acted, len(l.started), l.recv
	l.mu.Unlock()
	rep.cycles = last.Cycles
	fmt.Fprintf(w, "index %d was handed out by %v\n", rep.heldIndex, rep.deliveredBy[rep.heldIndex])
	fmt.Fprintf(w, "%d cycles committed, %d delivered (%d receipts), %d jobs started by the cycles, %d launched\n",
		rep.cycles, len(rep.deliveredBy), rep.receipts, rep.startsSeen, rep.started)
	fmt.Fprintf(w, "replicas' state digests equal: %v (%x)\n", rep.digestsOK, digests[0][:8])
	return rep, nil
}

// cycle runs a cycle through the leader.
func cycle(c *client, now *time.Time, running *[]scheduler.JobID, rep *report) error {
	*now = now.Add(time.Second)
	a, _, err := c.propose(*now, scheduler.ScheduleEvent{})
	if err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	rep.startsSeen += len(a.Result.Cycle.Starts)
	for _, st := range a.Result.Cycle.Starts {
		*running = append(*running, st.Job)
	}
	return nil
}

func leaderOf(nodes []*node) *node {
	for _, n := range nodes {
		if n.rep != nil && n.rep.IsLeader() {
			return n
		}
	}
	return nil
}
