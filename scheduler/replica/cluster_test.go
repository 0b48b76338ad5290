package replica_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/replica"
)

// t0 is the scenarios' start time.
var t0 = clustertest.Epoch

// testRaft is a Raft configuration with short timeouts, so elections take
// milliseconds (nothing asserts how many).
func testRaft() *raft.Config {
	c := raft.DefaultConfig()
	c.HeartbeatTimeout = 50 * time.Millisecond
	c.ElectionTimeout = 50 * time.Millisecond
	c.LeaderLeaseTimeout = 50 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.Logger = hclog.NewNullLogger()
	return c
}

// testConfig is the replicas' scheduler: the Mixed4 cluster with
// multifactor priority and a fair-share source of the replica's own that
// gives each replica a different tree. Applying the log must not read it
// (only the leader prepares a cycle with it), or the replicas' digests
// would differ.
func testConfig(id string) scheduler.Config {
	c := clustertest.Mixed4()
	bias := float64(len(id)*7 + int(id[len(id)-1]))
	c.Priority = &scheduler.PriorityConfig{
		Engine:     priority.Config{Weights: priority.Weights{Age: 1000, FairShare: 10000, JobSize: 100}},
		CalcPeriod: 30 * time.Second,
		FairShare: scheduler.FairShareFunc(func(now time.Time) ([]priority.Association, error) {
			u := float64(now.Sub(t0)/time.Second) + bias
			return []priority.Association{
				{Account: "root", Shares: 1},
				{Account: "a", Parent: "root", Shares: 2, Usage: u},
				{Account: "b", Parent: "root", Shares: 1, Usage: u / 3},
				{Account: "a", User: "ann", Shares: 1, Usage: u},
				{Account: "b", User: "bob", Shares: 1, Usage: u / 3},
			}, nil
		}),
	}
	return c
}

// member is one replica of a test cluster and what it runs on.
type member struct {
	id     raft.ServerID
	addr   raft.ServerAddress
	trans  *raft.InmemTransport
	logs   raft.LogStore
	stable *raft.InmemStore
	snaps  *raft.InmemSnapshotStore
	rep    *replica.Replica
	done   chan struct{} // the consumer of its deliveries has stopped
}

// cluster is an in-process Raft group on in-memory transports.
type cluster struct {
	t       testing.TB
	raftCfg func() *raft.Config
	// slow, when set, wraps each member's log store.
	slow    func(raft.LogStore) raft.LogStore
	members []*member
	cons    *consumer
	cut     map[[2]int]bool // links cut by partition
	// initial, when set, is the scheduler snapshot every member starts
	// from (replica.Config.Initial) instead of testConfig.
	initial []byte
	hooks   bool
}

func newCluster(t testing.TB, n int, raftCfg func() *raft.Config, slow func(raft.LogStore) raft.LogStore) *cluster {
	return newClusterOf(&cluster{t: t, raftCfg: raftCfg, slow: slow}, n)
}

// newClusterFrom starts a cluster whose members start from a scheduler
// snapshot, taken with testConfig's hooks (its fair-share source) when
// hooks is set, else with none.
func newClusterFrom(t testing.TB, n int, raftCfg func() *raft.Config, initial []byte, hooks bool) *cluster {
	return newClusterOf(&cluster{t: t, raftCfg: raftCfg, initial: initial, hooks: hooks}, n)
}

func newClusterOf(c *cluster, n int) *cluster {
	t := c.t
	c.cons, c.cut = newConsumer(), map[[2]int]bool{}
	for i := range n {
		id := raft.ServerID("r" + strconv.Itoa(i))
		c.members = append(c.members, &member{id: id, addr: raft.ServerAddress("mem-" + string(id))})
	}
	for i := range c.members {
		c.start(i, true)
	}
	var servers []raft.Server
	for _, m := range c.members {
		servers = append(servers, raft.Server{ID: m.id, Address: m.addr})
	}
	if err := c.members[0].rep.Bootstrap(servers...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.shutdown)
	return c
}

// start starts member i on a new transport: with new, empty stores when
// fresh (a machine that lost its disk), else on the stores it had.
func (c *cluster) start(i int, fresh bool) {
	m := c.members[i]
	if fresh || m.logs == nil {
		m.logs, m.stable, m.snaps = raft.NewInmemStore(), raft.NewInmemStore(), raft.NewInmemSnapshotStore()
		if c.slow != nil {
			m.logs = c.slow(m.logs)
		}
	}
	_, m.trans = raft.NewInmemTransport(m.addr)
	sc := testConfig(string(m.id))
	if c.initial != nil && !c.hooks {
		sc = scheduler.Config{}
	}
	rep, err := replica.New(replica.Config{
		ID: m.id, Scheduler: sc, Initial: c.initial, Raft: c.raftCfg(),
		LogStore: m.logs, StableStore: m.stable, SnapshotStore: m.snaps, Transport: m.trans,
		ApplyTimeout: 2 * time.Second,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	m.rep = rep
	c.relink()
	m.done = make(chan struct{})
	go c.cons.run(rep, m.done)
}

// relink connects every pair of running members whose link is not cut.
func (c *cluster) relink() {
	for i, a := range c.members {
		for j, b := range c.members {
			if i == j || a.rep == nil || b.rep == nil {
				continue
			}
			if c.cut[[2]int{i, j}] {
				a.trans.Disconnect(b.addr)
			} else {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
}

// kill stops member i (its stores stay, for a restart).
func (c *cluster) kill(i int) {
	m := c.members[i]
	if m.rep == nil {
		return
	}
	c.cons.mu.Lock()
	c.cons.dead[m.rep] = true
	c.cons.mu.Unlock()
	if err := m.rep.Shutdown(); err != nil {
		c.t.Errorf("shutdown %s: %v", m.id, err)
	}
	<-m.done
	m.rep = nil
	for _, o := range c.members {
		if o.rep != nil {
			o.trans.Disconnect(m.addr)
		}
	}
}

// partition cuts every link between the groups.
func (c *cluster) partition(groups ...[]int) {
	clear(c.cut)
	for gi, g := range groups {
		for gj, h := range groups {
			if gi == gj {
				continue
			}
			for _, i := range g {
				for _, j := range h {
					c.cut[[2]int{i, j}] = true
				}
			}
		}
	}
	c.relink()
}

// heal restores every link.
func (c *cluster) heal() {
	clear(c.cut)
	c.relink()
}

func (c *cluster) shutdown() {
	for i := range c.members {
		c.kill(i)
	}
}

// leader waits until exactly one running member leads, every running
// member that can reach it names it, and it can commit (a barrier), and
// returns it. The wait is bounded by a generous deadline, a hang guard
// rather than a timing assertion.
func (c *cluster) leader() int {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if i, ok := c.oneLeader(); ok {
			if c.members[i].rep.Raft().Barrier(time.Second).Error() == nil {
				return i
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("no single leader: %s", c.describe())
	return -1
}

func (c *cluster) oneLeader() (int, bool) {
	lead := -1
	for i, m := range c.members {
		if m.rep != nil && m.rep.IsLeader() && !c.cutOff(i) {
			if lead >= 0 {
				return -1, false
			}
			lead = i
		}
	}
	if lead < 0 {
		return -1, false
	}
	for i, m := range c.members {
		if m.rep == nil || c.cut[[2]int{i, lead}] {
			continue
		}
		if id, _ := m.rep.Leader(); id != c.members[lead].id {
			return -1, false
		}
	}
	return lead, true
}

// cutOff reports whether member i is in a minority partition.
func (c *cluster) cutOff(i int) bool {
	reach := 1
	for j, m := range c.members {
		if j != i && m.rep != nil && !c.cut[[2]int{i, j}] {
			reach++
		}
	}
	return reach <= len(c.members)/2
}

func (c *cluster) describe() string {
	var b strings.Builder
	for _, m := range c.members {
		if m.rep == nil {
			fmt.Fprintf(&b, "%s down; ", m.id)
			continue
		}
		id, _ := m.rep.Leader()
		fmt.Fprintf(&b, "%s %s (leader %q, applied %d); ", m.id, m.rep.Raft().State(), id, m.rep.Stats().Applied)
	}
	return b.String()
}

// propose proposes ev through whichever member leads, retrying while
// there is none or the leader changed before the entry was taken. It
// returns the scheduler's error of an entry that was committed; an
// entry whose fate raft left unknown (leadership lost after it was
// handed over) is reported with errUnknown.
func (c *cluster) propose(now time.Time, ev scheduler.Event) (replica.Applied, error) {
	c.t.Helper()
	for range 200 {
		i := c.leader()
		a, err := c.members[i].rep.Propose(now, ev)
		switch {
		case err == nil, a.Index != 0:
			return a, err
		case errors.Is(err, replica.ErrNotLeader):
			continue
		case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrRaftShutdown):
			return a, fmt.Errorf("%w: %w", errUnknown, err)
		case errors.Is(err, replica.ErrTimeBackwards):
			return a, err
		}
		c.t.Fatalf("propose %s: %v", ev.Kind(), err)
	}
	c.t.Fatalf("propose %s: no leader took it", ev.Kind())
	return replica.Applied{}, nil
}

var errUnknown = errors.New("fate unknown")

// settle heals the network, waits for one leader, for every delivery to
// be acknowledged and every replica to have applied the whole log, then
// checks the invariants: no delivery lost or duplicated (after the
// consumer's dedup by index, and no index delivered with different
// decisions), every committed cycle delivered, every replica's digest
// equal. It returns the leader.
func (c *cluster) settle() int {
	c.t.Helper()
	c.heal()
	lead := c.leader()
	deadline := time.Now().Add(30 * time.Second)
	for {
		lead = c.leader()
		l := c.members[lead].rep
		st := l.Stats()
		done := st.Undelivered == 0
		for _, m := range c.members {
			if m.rep != nil && m.rep.Stats().Applied != st.Applied {
				done = false
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("not settled: leader stats %+v; %s", st, c.describe())
		}
		time.Sleep(5 * time.Millisecond)
	}
	st := c.members[lead].rep.Stats()
	c.cons.check(c.t, st)
	var want [32]byte
	for i, m := range c.members {
		if m.rep == nil {
			continue
		}
		d, err := m.rep.Digest()
		if err != nil {
			c.t.Fatal(err)
		}
		if i == lead {
			want = d
		}
		if m.rep.Stats() != st {
			c.t.Errorf("%s stats %+v, leader's %+v", m.id, m.rep.Stats(), st)
		}
		defer func() {
			if d != want {
				c.t.Errorf("%s digest %x, leader's %x", m.id, d[:8], want[:8])
			}
		}()
	}
	return lead
}

// seeded runs fn as a subtest per seed, runs(t, def) of them.
func seeded(t *testing.T, def int, fn func(t *testing.T, seed uint64)) {
	for seed := range uint64(runs(t, def)) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { fn(t, seed) })
	}
}

// runs is the number of seeded runs of each fault test: a few by
// default, SLUICE_REPLICA_RUNS for more.
func runs(t *testing.T, def int) int {
	if v := os.Getenv("SLUICE_REPLICA_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SLUICE_REPLICA_RUNS=%q: want a positive count", v)
		}
		return n
	}
	if testing.Short() {
		return 1
	}
	return def
}
