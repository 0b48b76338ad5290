package replica_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/replica"
)

// consumer plays the orchestrator: it takes every member's deliveries,
// keeps the first decisions per index, counts receipts and acknowledges
// through the member that delivered.
type consumer struct {
	mu       sync.Mutex
	got      map[uint64]string // index → decisions (summary)
	receipts int
	mismatch []string
	// hold, when set for a member, stops its deliveries being read;
	// paused says the consumer has stopped reading them.
	hold, paused map[*replica.Replica]bool
	// dead marks the members being shut down.
	dead map[*replica.Replica]bool
	// starts are the jobs started, by the deliveries taken.
	starts []scheduler.JobID
}

func newConsumer() *consumer {
	return &consumer{got: map[uint64]string{}, hold: map[*replica.Replica]bool{}, paused: map[*replica.Replica]bool{}, dead: map[*replica.Replica]bool{}}
}

func (c *consumer) run(rep *replica.Replica, done chan struct{}) {
	defer close(done)
	for {
		c.mu.Lock()
		held := c.hold[rep]
		c.paused[rep] = held
		c.mu.Unlock()
		if held {
			c.mu.Lock()
			dead := c.dead[rep]
			c.mu.Unlock()
			if dead {
				for range rep.Deliveries() { // lost with the consumer's process
				}
				return
			}
			time.Sleep(time.Millisecond)
			continue
		}
		select {
		case d, ok := <-rep.Deliveries():
			if !ok {
				return
			}
			c.take(d)
			_ = rep.Ack(d.Index) // refused by a deposed leader: the next one delivers it again
		case <-time.After(time.Millisecond):
		}
	}
}

// holdOff stops the consumer taking rep's deliveries, and returns once it
// has stopped.
func (c *consumer) holdOff(rep *replica.Replica) {
	c.mu.Lock()
	c.hold[rep] = true
	c.mu.Unlock()
	for {
		c.mu.Lock()
		p := c.paused[rep]
		c.mu.Unlock()
		if p {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (c *consumer) take(d replica.Delivery) {
	sum := summary(d.Cycle)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.receipts++
	if old, ok := c.got[d.Index]; ok {
		if old != sum {
			c.mismatch = append(c.mismatch, fmt.Sprintf("index %d: %s, then %s", d.Index, old, sum))
		}
		return
	}
	c.got[d.Index] = sum
	for _, st := range d.Cycle.Starts {
		c.starts = append(c.starts, st.Job)
	}
}

// summary is a cycle's decisions in a comparable form.
func summary(cy scheduler.Cycle) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", cy.Now.Format(time.RFC3339Nano))
	for _, s := range cy.Starts {
		fmt.Fprintf(&b, " start %d %v", s.Job, s.Alloc.NodeNames())
		for _, n := range s.Alloc.Nodes {
			fmt.Fprintf(&b, "%v%v", n.CPUs, n.Devices)
		}
	}
	for _, e := range cy.Ended {
		fmt.Fprintf(&b, " end %d %v", e.Job, e.State)
	}
	for _, p := range cy.Preemptions {
		fmt.Fprintf(&b, " preempt %d", p.Victim)
	}
	fmt.Fprintf(&b, " resumed %v decisions %d", cy.Resumed, len(cy.Decisions))
	return b.String()
}

// check compares what was delivered with what was committed.
func (c *consumer) check(t testing.TB, st replica.Stats) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mismatch) > 0 {
		t.Errorf("an index delivered with different decisions: %v", c.mismatch)
	}
	if uint64(len(c.got)) != st.Cycles || st.Acked != st.Cycles {
		t.Errorf("%d cycles committed, %d acknowledged, %d distinct delivered (%d receipts)",
			st.Cycles, st.Acked, len(c.got), c.receipts)
	}
	if dup := len(c.starts) - len(uniq(c.starts)); dup != 0 {
		t.Errorf("%d jobs started twice among distinct deliveries", dup)
	}
}

func uniq(ids []scheduler.JobID) []scheduler.JobID {
	s := slices.Clone(ids)
	slices.Sort(s)
	return slices.Compact(s)
}

// workload drives a cluster with a seeded mix of submits, cycles and
// finishes through whichever member leads.
type workload struct {
	c       *cluster
	rng     *rand.Rand
	now     time.Time
	running []scheduler.JobID
	// cycles are the indices of the cycles the client saw committed.
	cycles []uint64
}

func newWorkload(c *cluster, seed uint64) *workload {
	return &workload{c: c, rng: rand.New(rand.NewPCG(seed, 21)), now: t0}
}

// step proposes one event.
func (w *workload) step() {
	w.c.t.Helper()
	w.now = w.now.Add(time.Duration(1+w.rng.IntN(20)) * time.Second)
	var ev scheduler.Event
	switch r := w.rng.IntN(10); {
	case r < 5:
		user, acct := "ann", "a"
		if w.rng.IntN(2) == 0 {
			user, acct = "bob", "b"
		}
		ev = scheduler.SubmitEvent{Spec: scheduler.JobSpec{User: user, Account: acct, Tasks: 1,
			CPUsPerTask: 1 + w.rng.IntN(32), TimeLimit: time.Duration(1+w.rng.IntN(4)) * time.Hour}}
	case r < 7 && len(w.running) > 0:
		k := w.rng.IntN(len(w.running))
		ev = scheduler.FinishEvent{Job: w.running[k]}
		w.running = slices.Delete(w.running, k, k+1)
	default:
		ev = scheduler.ScheduleEvent{}
	}
	w.propose(ev)
}

// steps proposes n events.
func (w *workload) steps(n int) {
	w.c.t.Helper()
	for range n {
		w.step()
	}
}

// settle settles the cluster (see cluster.settle) and checks that every
// cycle the client saw committed was delivered.
func (w *workload) settle() {
	w.c.t.Helper()
	w.c.settle()
	w.checkSeen()
}

func (w *workload) propose(ev scheduler.Event) {
	w.c.t.Helper()
	a, err := w.c.propose(w.now, ev)
	if errors.Is(err, errUnknown) {
		return
	}
	if a.Result.Cycle != nil {
		w.cycles = append(w.cycles, a.Index)
		for _, st := range a.Result.Cycle.Starts {
			w.running = append(w.running, st.Job)
		}
	}
}

// checkSeen checks that every cycle the client saw committed was
// delivered.
func (w *workload) checkSeen() {
	w.c.t.Helper()
	w.c.cons.mu.Lock()
	defer w.c.cons.mu.Unlock()
	for _, i := range w.cycles {
		if _, ok := w.c.cons.got[i]; !ok {
			w.c.t.Errorf("cycle at index %d committed but never delivered", i)
		}
	}
}
