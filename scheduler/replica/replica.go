package replica

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/journal"
)

// ErrNotLeader reports a proposal or an acknowledgement made to a replica
// that is not the leader; the error is a *NotLeaderError naming the
// leader when one is known.
var ErrNotLeader = errors.New("replica: not the leader")

// ErrTimeBackwards reports a proposal whose time is before the latest
// time in the log: the log's times never go backwards.
var ErrTimeBackwards = errors.New("replica: time before the log's latest")

// ErrInvalidConfig reports a Config that New cannot use.
var ErrInvalidConfig = errors.New("replica: invalid config")

// NotLeaderError is ErrNotLeader with the leader this replica knows of
// (empty when there is none, during an election): the caller sends the
// proposal there.
type NotLeaderError struct {
	ID      raft.ServerID
	Address raft.ServerAddress
}

// Error names the leader.
func (e *NotLeaderError) Error() string {
	if e.Address == "" {
		return "replica: not the leader, and no leader is known"
	}
	return fmt.Sprintf("replica: not the leader; the leader is %s at %s", e.ID, e.Address)
}

// Unwrap returns ErrNotLeader.
func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

// Config configures one replica. Every replica of a cluster gets the same
// Scheduler (or Initial) configuration; the rest is its own.
type Config struct {
	// ID is the replica's Raft server ID.
	ID raft.ServerID
	// Scheduler is the configuration of the state every replica starts
	// from (scheduler.New). Its Priority.FairShare source is read by the
	// leader only, when it prepares a ScheduleEvent (see
	// scheduler.Scheduler.Prepare); the replicas' schedulers get a
	// source that refuses, so that applying the log reads nothing from
	// outside. The site-factor hook and a backfill chooser are kept, and
	// given to Restore.
	Scheduler scheduler.Config
	// Initial, when set, is the state every replica starts from instead:
	// a scheduler snapshot (Scheduler.Snapshot, or a journal's), the way
	// to move a single-process scheduler under Raft. Scheduler then only
	// supplies the hooks, and must have those the snapshotted scheduler
	// had (a fair-share source, a site factor, a backfill chooser), as
	// scheduler.Restore requires.
	Initial []byte
	// Raft is the Raft configuration; nil is raft.DefaultConfig() with
	// logging off. LocalID is set to ID.
	Raft *raft.Config
	// The stores and the transport. LogStore and StableStore must be
	// durable for a replica that restarts with its data (raft-boltdb, for
	// one); in-memory ones make a restart a join from nothing.
	LogStore      raft.LogStore
	StableStore   raft.StableStore
	SnapshotStore raft.SnapshotStore
	Transport     raft.Transport
	// ApplyTimeout bounds the wait for raft to take a proposal (raft's
	// enqueue timeout) and for the leader's barrier; default 10 s.
	ApplyTimeout time.Duration
	// Clock stamps a proposal whose time is zero. Nil: such a proposal
	// is refused.
	Clock func() time.Time
	// DeliveryPoll is how often the delivery loop looks at the replica's
	// Raft state besides when a cycle is applied; default 10 ms.
	DeliveryPoll time.Duration
}

// Replica is one member of a replicated scheduler: the scheduler is the
// state machine of a Raft group. Its methods are safe for concurrent use.
type Replica struct {
	raft      *raft.Raft
	fsm       *fsm
	codec     *journal.Codec
	fairShare scheduler.FairShareSource
	timeout   time.Duration
	clock     func() time.Time
	poll      time.Duration

	// propMu orders proposals: they are stamped and handed to raft one
	// at a time, so the log's times only go up. schedMu keeps one
	// ScheduleEvent in flight, so each is prepared on the state after the
	// one before it.
	propMu    sync.Mutex
	schedMu   sync.Mutex
	floor     time.Time
	readyTerm uint64

	deliveries chan Delivery
	stop       chan struct{}
	done       chan struct{}
	stopOnce   sync.Once
}

// New starts a replica. It neither bootstraps nor joins a cluster: call
// Bootstrap on one replica of a new cluster (or add it with raft's
// AddVoter on the leader). On error nothing is started.
func New(cfg Config) (*Replica, error) {
	if cfg.ID == "" || cfg.LogStore == nil || cfg.StableStore == nil || cfg.SnapshotStore == nil || cfg.Transport == nil {
		return nil, fmt.Errorf("%w: ID, LogStore, StableStore, SnapshotStore and Transport are required", ErrInvalidConfig)
	}
	if cfg.ApplyTimeout < 0 || cfg.DeliveryPoll < 0 {
		return nil, fmt.Errorf("%w: negative ApplyTimeout or DeliveryPoll", ErrInvalidConfig)
	}
	sc := cfg.Scheduler
	var src scheduler.FairShareSource
	ropts := scheduler.RestoreOptions{}
	if sc.Priority != nil {
		pc := *sc.Priority
		src = pc.FairShare
		if src != nil {
			// The replicas' schedulers get a source that refuses: the
			// log carries the tree (Prepare on the leader), and an entry
			// without one fails alike everywhere rather than reading a
			// replica's own source.
			pc.FairShare, ropts.FairShare = noSource{}, noSource{}
		}
		sc.Priority = &pc
		ropts.SiteFactor = pc.Engine.Site
	}
	if sc.Backfill != nil {
		ropts.BackfillChooser = sc.Backfill.Chooser
	}
	s, err := initial(sc, cfg.Initial, ropts)
	if err != nil {
		return nil, err
	}
	codec, err := journal.NewCodec(journal.EncodingBinary)
	if err != nil {
		return nil, err
	}
	rc := raft.DefaultConfig()
	rc.Logger = hclog.NewNullLogger()
	if cfg.Raft != nil {
		c := *cfg.Raft
		rc = &c
	}
	rc.LocalID = cfg.ID
	f := &fsm{s: s, codec: codec, restore: ropts, notify: make(chan struct{}, 1)}
	rf, err := raft.NewRaft(rc, f, cfg.LogStore, cfg.StableStore, cfg.SnapshotStore, cfg.Transport)
	if err != nil {
		return nil, fmt.Errorf("replica %s: %w", cfg.ID, err)
	}
	r := &Replica{
		raft: rf, fsm: f, codec: codec, fairShare: src,
		timeout: cfg.ApplyTimeout, clock: cfg.Clock, poll: cfg.DeliveryPoll,
		deliveries: make(chan Delivery), stop: make(chan struct{}), done: make(chan struct{}),
	}
	if r.timeout == 0 {
		r.timeout = 10 * time.Second
	}
	if r.poll == 0 {
		r.poll = 10 * time.Millisecond
	}
	go r.deliverLoop()
	return r, nil
}

// noSource is the replicas' fair-share source: the tree comes in the
// log, never from it.
type noSource struct{}

// FairShareTree refuses.
func (noSource) FairShareTree(time.Time) ([]priority.Association, error) {
	return nil, errors.New("replica: a cycle's fair-share tree must come in its log entry")
}

// initial builds the starting state: Initial's snapshot, or New(sc).
func initial(sc scheduler.Config, snap []byte, ropts scheduler.RestoreOptions) (*scheduler.Scheduler, error) {
	if snap == nil {
		s, err := scheduler.New(sc)
		if err != nil {
			return nil, fmt.Errorf("%w: scheduler: %w", ErrInvalidConfig, err)
		}
		return s, nil
	}
	s, err := scheduler.Restore(bytes.NewReader(snap), ropts)
	if err != nil {
		return nil, fmt.Errorf("%w: initial snapshot: %w", ErrInvalidConfig, err)
	}
	return s, nil
}

// Bootstrap makes a new cluster of the servers given (this replica among
// them). Call it on one replica, once; raft refuses it where there is
// state already (raft.ErrCantBootstrap).
func (r *Replica) Bootstrap(servers ...raft.Server) error {
	if err := r.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		return fmt.Errorf("replica: bootstrap: %w", err)
	}
	return nil
}

// Applied is what a committed proposal gave.
type Applied struct {
	// Index is the entry's log index; for a ScheduleEvent, the key of
	// its Delivery.
	Index uint64
	// At is the time the entry was stamped with.
	At time.Time
	// Result is the scheduler's (Result.Cycle for a ScheduleEvent,
	// Pending included).
	Result scheduler.Result
}

// Propose appends ev at now to the log through this replica, which must
// be the leader (otherwise a *NotLeaderError naming the leader: proposals
// are not forwarded, the caller sends them there), and returns once every
// replica may apply it and this one has. A zero now is stamped with
// Config.Clock, raised to the log's latest time if the clock is behind; a
// now before the log's latest time is refused (ErrTimeBackwards). A
// ScheduleEvent is prepared here (its fair-share input read) before it
// is proposed. The scheduler's error, when the event fails, is returned
// with the Applied: it failed on every replica alike and changed nothing.
//
// An error from raft after the entry was handed over (leadership lost,
// shutdown) leaves its fate unknown: a new leader may still commit it.
// Retrying a ScheduleEvent is harmless (a committed one is delivered
// anyway); a caller retrying a submit should check first that its job is
// not there.
func (r *Replica) Propose(now time.Time, ev scheduler.Event) (Applied, error) {
	if ev == nil {
		return Applied{}, fmt.Errorf("replica: propose: %w: nil event", scheduler.ErrInvalidEvent)
	}
	if _, ok := ev.(scheduler.ScheduleEvent); ok {
		r.schedMu.Lock()
		defer r.schedMu.Unlock()
	}
	fut, at, err := r.submit(now, ev)
	if err != nil {
		return Applied{}, err
	}
	if err := r.wait(fut); err != nil {
		return Applied{}, r.raftError(ev.Kind(), err)
	}
	resp, _ := fut.Response().(response)
	return Applied{Index: fut.Index(), At: at, Result: resp.res}, resp.err
}

// Schedule proposes a ScheduleEvent at now: the cycle runs on every
// replica; its decisions come out of the leader's Deliveries.
func (r *Replica) Schedule(now time.Time) (Applied, error) {
	return r.Propose(now, scheduler.ScheduleEvent{})
}

// submit stamps, prepares and encodes ev and hands it to raft.
func (r *Replica) submit(now time.Time, ev scheduler.Event) (raft.ApplyFuture, time.Time, error) {
	r.propMu.Lock()
	defer r.propMu.Unlock()
	if err := r.ready(); err != nil {
		return nil, now, err
	}
	switch {
	case now.IsZero() && r.clock == nil:
		return nil, now, fmt.Errorf("replica: propose %s: zero time and no Clock", ev.Kind())
	case now.IsZero():
		if now = r.clock(); now.Before(r.floor) {
			now = r.floor
		}
	case now.Before(r.floor):
		return nil, now, fmt.Errorf("%w: %s at %s, the log is at %s", ErrTimeBackwards, ev.Kind(),
			now.Format(time.RFC3339Nano), r.floor.Format(time.RFC3339Nano))
	}
	r.fsm.mu.Lock()
	prepared, err := r.fsm.s.Prepare(now, ev, r.fairShare)
	r.fsm.mu.Unlock()
	if err != nil {
		return nil, now, fmt.Errorf("replica: prepare %s: %w", ev.Kind(), err)
	}
	data, err := r.codec.AppendEntry([]byte{recEntry}, scheduler.Entry{At: now, Event: prepared})
	if err != nil {
		return nil, now, fmt.Errorf("replica: encode %s: %w", ev.Kind(), err)
	}
	fut := r.raft.Apply(data, r.timeout)
	r.floor = now
	return fut, now, nil
}

// ready checks that this replica leads and, once per term, that it has
// applied everything before its term (raft's barrier), so that its state
// and the log's latest time are the log's.
func (r *Replica) ready() error {
	if r.raft.State() != raft.Leader {
		return r.notLeader()
	}
	term := r.raft.CurrentTerm()
	if term == r.readyTerm {
		return nil
	}
	if err := r.wait(r.raft.Barrier(r.timeout)); err != nil {
		return r.raftError("barrier", err)
	}
	// Every entry before the term is applied now: the log's latest time
	// is the state's (entries this replica proposed in an earlier term
	// and that were not committed are gone).
	r.floor = r.fsm.latest()
	r.readyTerm = term
	return nil
}

// wait waits for raft's answer, or for Shutdown: raft does not answer a
// future that its shutdown caught between commit and apply, and then the
// goroutine waiting for it stays until the process ends.
func (r *Replica) wait(f raft.Future) error {
	ch := make(chan error, 1)
	go func() { ch <- f.Error() }()
	select {
	case err := <-ch:
		return err
	case <-r.stop:
		return raft.ErrRaftShutdown
	}
}

func (r *Replica) notLeader() error {
	addr, id := r.raft.LeaderWithID()
	return &NotLeaderError{ID: id, Address: addr}
}

// raftError wraps an error raft gave for what.
func (r *Replica) raftError(what any, err error) error {
	if errors.Is(err, raft.ErrNotLeader) {
		return fmt.Errorf("replica: %s: %w", what, r.notLeader())
	}
	return fmt.Errorf("replica: %s: %w", what, err)
}

// Ack acknowledges deliveries by index, with a log entry: once it is
// committed no leader hands them out again. Acknowledging an index
// twice, or one that is not a delivery, is harmless. It must be called
// on the leader (a *NotLeaderError otherwise).
func (r *Replica) Ack(indices ...uint64) error {
	if len(indices) == 0 {
		return nil
	}
	r.propMu.Lock()
	if err := r.ready(); err != nil {
		r.propMu.Unlock()
		return err
	}
	fut := r.raft.Apply(encodeAck(indices), r.timeout)
	r.propMu.Unlock()
	if err := r.wait(fut); err != nil {
		return r.raftError("ack", err)
	}
	return nil
}

// Deliveries returns the channel the leader hands each cycle's decisions
// out on, in log order. Only a replica that leads sends: after it
// becomes leader it sends every delivery not acknowledged yet (those a
// former leader may have sent already, with the same Index), then each
// new one as its cycle is applied. The channel is closed by Shutdown.
// The consumer must not change what it receives.
func (r *Replica) Deliveries() <-chan Delivery { return r.deliveries }

// IsLeader reports whether this replica is the leader now.
func (r *Replica) IsLeader() bool { return r.raft.State() == raft.Leader }

// Leader returns the leader this replica knows of; empty during an
// election.
func (r *Replica) Leader() (raft.ServerID, raft.ServerAddress) {
	addr, id := r.raft.LeaderWithID()
	return id, addr
}

// Raft returns the underlying raft node, for membership changes
// (AddVoter, RemoveServer), snapshots and statistics.
func (r *Replica) Raft() *raft.Raft { return r.raft }

// Read calls fn with the replica's scheduler, which fn must only read
// (queries: Job, Jobs, Explain, Snapshot …): no entry is applied
// meanwhile. A follower's state may lag the leader's; on the leader after
// a committed Propose it holds that entry.
func (r *Replica) Read(fn func(s *scheduler.Scheduler) error) error {
	r.fsm.mu.Lock()
	defer r.fsm.mu.Unlock()
	return fn(r.fsm.s)
}

// Stats is the replica's replicated bookkeeping.
type Stats struct {
	// Applied is the log index of the last command applied.
	Applied uint64
	// Cycles counts the cycles applied; Acked the deliveries
	// acknowledged; Undelivered those still waiting.
	Cycles, Acked uint64
	Undelivered   int
}

// Stats returns the replica's bookkeeping.
func (r *Replica) Stats() Stats {
	r.fsm.mu.Lock()
	defer r.fsm.mu.Unlock()
	st := r.fsm.st
	return Stats{Applied: st.Applied, Cycles: st.Cycles, Acked: st.Acked, Undelivered: len(st.Undelivered)}
}

// Digest returns the sha256 of the replica's state as a snapshot writes
// it (the replica's bookkeeping and Scheduler.Snapshot, both
// deterministic): replicas that applied the same log have the same
// digest.
func (r *Replica) Digest() ([32]byte, error) { return r.fsm.digest() }

// Shutdown stops the delivery loop and the raft node, and closes
// Deliveries. The stores and the transport are the caller's to close.
func (r *Replica) Shutdown() error {
	var err error
	r.stopOnce.Do(func() {
		close(r.stop)
		err = r.raft.Shutdown().Error()
		<-r.done
	})
	if err != nil {
		return fmt.Errorf("replica: shutdown: %w", err)
	}
	return nil
}
