// Package replica runs the scheduler as the state machine of a Raft
// group, so that a control plane of three (or five) replicas survives the
// loss of any minority of them with the same state, exactly.
//
// The scheduler is deterministic and driven by events
// (scheduler.Scheduler.Apply): the same events in the same order, each
// with the same time, give the same state and the same decisions. A
// replica therefore replicates the events, not their effects: every state
// change is a log entry (a scheduler.Entry, in the journal's record form,
// journal.Codec), proposed through the leader (Propose) and applied in log
// order on every replica. Schedule(now) is a log entry too (a
// ScheduleEvent): every replica computes the same cycle, and only the
// leader hands its decisions to the caller (Deliveries).
//
// # Why hashicorp/raft
//
// It is built on github.com/hashicorp/raft rather than go.etcd.io/raft/v3.
// etcd's raft is the protocol core alone: the embedder writes the storage
// of the log, the network transport, snapshot shipping and the loop that
// moves messages between them (the "Ready" loop). hashicorp/raft is a
// whole node: an FSM interface (Apply, Snapshot, Restore) the scheduler
// fits as it is, a TCP transport, an in-memory transport whose
// Disconnect partitions a cluster inside one test process, in-memory,
// file and BoltDB (raft-boltdb) stores, snapshot installation on lagging
// followers, leader leases, pre-vote and membership changes. Sluice needs
// a replicated log, not a Raft toolkit: the least code of its own on the
// path where a bug would split the cluster's state.
//
// # What is replicated
//
// Each replica's state machine is the scheduler and the replica's
// bookkeeping: the index of the last entry applied, the cycles applied,
// and the deliveries not yet acknowledged. Raft snapshots write both
// (the bookkeeping, then Scheduler.Snapshot) and install them with
// Scheduler.Restore. Both are deterministic, so Digest, the sha256 of
// that snapshot, is equal on replicas that applied the same log.
//
// Times come from the proposer and are part of the entry; the leader
// refuses a time before the log's latest (ErrTimeBackwards) and stamps a
// zero time from Config.Clock, so the log's clock never goes back. An
// event that needs input from outside the scheduler takes it in on the
// leader before it is proposed: a ScheduleEvent due to recalculate
// priorities gets its fair-share tree there (scheduler.Scheduler.Prepare,
// from Config.Scheduler's FairShare source, which only the leader reads).
// The replicas' schedulers have a source that refuses, so applying the
// log reads nothing outside it (ScheduleEvents are proposed one at a
// time, each prepared on the state after the one before, so a due
// cycle always carries its tree). An event that fails (an unknown job, say) fails on
// every replica alike and changes nothing; Propose returns its error.
//
// Followers do not forward proposals: Propose and Ack on a follower
// return a *NotLeaderError naming the leader, and the caller sends them
// there. A proposal the leader handed to raft and then lost the
// leadership over has an unknown fate (a new leader may commit it):
// retrying a ScheduleEvent is harmless, a submit should be checked first.
//
// # Decisions: exactly once, keyed by log index
//
// A committed cycle becomes a Delivery, keyed by the log index of its
// ScheduleEvent, and stays in the replicated state until the consumer
// acknowledges it (Ack, itself a log entry of the replica's own, not a
// scheduler event). The leader sends on Deliveries every delivery not
// acknowledged, in index order: after it becomes leader (once it has
// applied the log before its term) it sends those a former leader may
// have sent already, with the same index, then each new one as it is
// applied. Delivery is thus at least once, and exactly once for a
// consumer that acts on each index once: it remembers the indices it has
// acted on (durably, beside what it launched) or makes each action
// idempotent by index (a launch keyed by job ID and start time, which
// the index determines). A delivery is only ever of a committed cycle:
// a leader cut off from the majority cannot commit, so it has nothing
// new to hand out. Its Cycle is the cycle without its Pending list.
//
// # Authoritative and derived
//
// The log is authoritative: what the cluster is, which jobs exist, which
// job holds which CPUs and GPUs of which node, is what the committed
// entries say, applied in order. Everything else is derived from it and
// may be thrown away and rebuilt: each replica's scheduler (rebuilt from
// a snapshot and the entries after it), the plan (the pending jobs'
// expected starts, the backfill reservations, priorities between
// recalculations), and whatever the consumer did outside (launched
// processes, a Kubernetes object) — which must follow the decisions, not
// lead them.
//
// An embedding orchestrator, a Kubernetes operator say, reconciles with
// the log, never the other way round. When both claim a node — the
// operator sees a pod on it, or a node it cordoned, that the scheduler
// does not know, or the scheduler has started a job there that the
// operator has no record of — the operator does not edit the scheduler's
// state to match the world: it proposes the event that tells the
// scheduler what happened (DrainNodeEvent or DownNodeEvent for a node it
// takes away, FinishEvent or RequeueEvent for a job that ended or failed
// to launch, AdmitEvent for work that runs outside and must be counted),
// and acts only on decisions the log delivered. A claim the log does not
// hold is either proposed or undone; a decision the log holds is carried
// out or answered by an event. Since deliveries repeat until
// acknowledged, an operator that crashed between acting and acking is
// handed the decision again under the same index and finds it done.
package replica
