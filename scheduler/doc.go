// Package scheduler is Sluice's cluster model and scheduling cycle: the
// composition of the resource vocabulary (gres), placement (topology),
// multifactor priority (priority), policy (limits, reservations,
// preemption, dependencies), and the backfill planner (backfill).
//
// A Scheduler holds nodes, partitions and jobs. The caller owns the loop
// and the clock: it applies events with the current time — Submit,
// SubmitArray, SubmitHet (a heterogeneous job: components started
// together), Cancel, Finish, Requeue, Checkpoint, DrainNode, FailNode,
// DownNode, ResumeNode, SetDeviceHealth, AddReservation, and the job
// control scontrol does: Hold and Release, UpdateJob, SuspendJob and
// ResumeJob, RequeueJob (requeue, requeuehold, requeue of a finished job),
// RequeueExcluding (a launch failure kept off its node) — and calls
// Schedule(now), which returns a Cycle: the jobs to start (nodes, CPU ids,
// GPU indices, time limit), the jobs it ended (time limits, preemption
// grace over), the preemptions to carry out, every pending job with its
// Slurm reason and expected start, and an audit record of every decision.
// Partitions, QOS and associations change at runtime too, each change an
// event validated as New validates the configuration (AddPartition,
// UpdatePartition, RemovePartition, AddQOS, UpdateQOS, RemoveQOS,
// PutAssoc, RemoveAssoc; removals refused with ErrInUse while jobs use
// what they would remove); running jobs are never judged again.
// An event that is invalid returns an error wrapping one of the package's
// sentinel errors and changes nothing. Schedule is all-or-nothing too: a
// cycle that fails (a fair-share source or the backfill planner
// refusing) is taken back from an undo journal, and the scheduler is left
// exactly as it was before the call.
//
// Each cycle runs, in order: end expired jobs; recompute priorities when
// a PriorityCalcPeriod boundary has passed; a main pass over the queue in Slurm's
// order (jobs that may preempt before the jobs they may preempt,
// reservation jobs — MAGNETIC ones included, inside the reservation —,
// partition tier, priority, submit time, job ID)
// that starts what fits — policy and limits checked first, topology-aware
// placement, best-connected GPUs, CPUs close to them, preemption when the
// job may preempt — and, as Slurm's main scheduler, stops a partition at
// its first job that waits for resources; then, with Config.Backfill, a
// backfill pass that plans every pending job on a time-resource profile
// kept from cycle to cycle, starts what does not delay the reservations,
// and gives every other job its expected start. The pass does only the
// work a change calls for, with the decisions of planning everything
// afresh: a cycle that only brings new jobs extends the last plan with
// them when nothing it depended on changed, the first job's reservation
// stays when its search finds it again, the plan's starts become the
// running jobs without being booked twice, each pending job keeps its
// policy request compiled from pass to pass (its limits read afresh), a
// search's answer serves every later job asking the same while the pass
// books elsewhere, and the main pass asks per-class summaries of the
// nodes that fit now instead of judging every candidate node for every
// job. With Config.EstimateInterval
// an expected start without a reservation stands until the next multiple
// of the interval in Unix time (as squeue --start shows the last backfill
// pass's): such a job is then only tested for a start now, which decides
// the same, and Job.EstimatedAt says how old its estimate is.
//
// Heterogeneous jobs are started by the backfill pass only, as in Slurm.
// This differs from Slurm in one deliberate way: Slurm's main scheduler
// ignores them, so a lower-priority job may start there on the nodes a
// heterogeneous job's backfill reservation holds and push it back; in
// Sluice each component the main pass leaves waiting stops its partition
// (or reservation) as any job waiting for resources does, so the jobs
// behind it are left to the backfill pass, which starts them only where
// they do not delay the heterogeneous job (its expected start under
// conservative backfill is then a promise, Estimate.Bound). A
// heterogeneous job the backfill pass may not plan now (a component held,
// over its partition's or QOS's limits, or waiting on a dependency) stops
// nothing, as a plain job in that state.
//
// Nodes change at run time, each change an event validated as New
// validates a node: AddNode, RemoveNode (refused while jobs run or a
// reservation holds the node; the slot stays as a tombstone, so indices
// never move) and UpdateNode (CPUs, memory, devices, GRES, features,
// partitions; never below what running jobs hold). Running jobs are never
// judged again: a change holds new starts only. With Config.Power, idle
// nodes are powered down after SuspendTime and resumed on demand, Slurm's
// power saving: Cycle.PowerDown and Cycle.PowerUp say which nodes to
// suspend and to boot, NodePoweredUp reports a node up, and the backfill
// plan counts a powered-down node free from the time it could have booted
// (see power.go for how Sluice's pending-while-booting differs from
// Slurm's CONFIGURING). Nodes with NodeConfig.ChangeableFeatures are
// rebooted into the changeable features a job's Constraint needs when no
// node with them active can take it (Cycle.Reboots, NodeRebooted,
// Config.BootTime; see reboot.go), the same way.
//
// Explain answers why a job waits (every blocker, with evidence), when it
// will start, and what would let it start sooner, each answer verified by
// re-planning; IdleCapacity says why idle GPUs are idle. Everything the
// scheduler decides is derived from data it keeps, deterministically: the
// same events at the same times give the same decisions.
//
// # Sharing CPUs and allocation units
//
// A partition's OverSubscribe=FORCE[:n] lets its jobs share CPUs, up to
// n jobs per CPU (4 when n is not given); YES[:n] does so for the jobs
// that ask (JobSpec.OverSubscribe, sbatch --oversubscribe); NO and
// EXCLUSIVE never do, nor does an --exclusive job. A job takes free
// CPUs first and shares for what it still lacks, the CPUs with the
// fewest holders first; a shared CPU id is in every sharer's allocation
// and each counts it in its TRES cpu, as Slurm's AllocTRES does. GPUs
// and other GRES are never shared, nor is memory (Sluice always tracks
// memory as a consumable resource, and Slurm does not over-subscribe
// memory so tracked). Jobs of different partitions never share a CPU:
// Slurm documents sharing per partition and not how two partitions'
// counts over one node combine, so Sluice takes the conservative
// reading. Explain's ResourceNeed.OverSubscribe says when sharing was
// counted in what fits now.
//
// The backfill plan is conservative about sharing: a running job's
// shared CPU counts once, held until its last holder ends, and a pending
// job is planned on free CPUs only, never on CPUs it could share. So the
// plan never starts a job by sharing (the main pass does, in queue
// order), and the expected start of a job that could share is the time
// enough CPUs come free, which may be later than the start it gets.
//
// Config.SelectTypeParameters is the unit CPUs are allocated in: CR_CPU
// (Sluice's default: hardware threads), CR_Core (Slurm's default,
// CR_Core_Memory: whole cores, so a one-CPU task on a node of two threads
// per core gets and is charged both threads) or CR_Socket (whole
// sockets). The node, accounting, the backfill plan and Explain all count
// a job's CPUs in whole units; with OverSubscribe the shared unit is the
// core or socket.
//
// # Periodic work
//
// Nothing the scheduler does depends on how often Schedule is called.
// What Slurm does on timers happens here at fixed instants of the
// caller's clock, each evaluated as of that instant, whichever call
// first reaches it: priorities and the fair-share tree are recomputed at
// the boundaries PriorityConfig.CalcEpoch + k·CalcPeriod (multiples of
// CalcPeriod in Unix time by default), as of the boundary (ages measured
// to it, the FairShareSource asked for its tree as of it); SuspendRate and
// ResumeRate count per minute of the clock; an EstimateInterval estimate
// stands until the next multiple of the interval. Reservation windows,
// begin times and time limits are instants already.
//
// An instant with an event is one at which the caller applies an event
// (a submission, an end, a cancel, an administrative change …). An
// instant where time alone changes something is one at which, with no
// event, a Schedule call could decide differently from a call just
// before it: a periodic boundary above, a pending job's begin time (a
// requeue delay included), a running job's time limit or preemption
// grace end, a reservation window opening or closing, a job's
// SwitchesMaxWait or bf_min_age_reserve age being reached, and with power
// saving a node's SuspendTime of idleness, SuspendTimeout or
// ResumeTimeout, a rate window's next minute, or a backfill reservation
// on powered-down nodes coming within ResumeTimeout of its start.
// Cycle.NextWake (and Scheduler.NextWake) is the earliest such instant
// after the cycle. Every other instant is an instant with no event.
//
// The guarantee: a caller that calls Schedule after the events of every
// instant and at every NextWake gets exactly the same starts (time, job,
// nodes), ends, pending reasons and priorities as one that also calls it
// at any number of instants with no event. For that a cycle is a fixed
// point: when jobs it starts change the judgement of a job it judged
// before them (a limit their user reached holds a job that held its
// partition back for resources; a start satisfies an after: dependency),
// it runs further passes at the same instant until nothing changes, so
// an immediate second call starts nothing. Jobs a preemption of the call requeued
// are judged by the next call (they keep the reason Preempted for this
// one): the cycle's NextWake is then its own instant, Now. What remains time-relative is the backfill window
// (bf_window, measured from now): moving it only adds reservations, which
// starts nothing. Explain and expected starts are views as of the call.
//
// This differs from Slurm, whose controller recalculates priorities
// every PriorityCalcPeriod from its own start (set CalcEpoch to the
// controller's start time to get that phase), runs its main scheduler
// on events and every sched_interval and its backfill every bf_interval,
// so that when a job starts there depends on the timers' phase and on
// how long each pass took.
//
// # Events as data
//
// Every state change is an Event value (SubmitEvent, CancelEvent,
// FinishEvent, ScheduleEvent …), and every mutating method is a call of
// Apply with one: Submit(now, spec) is Apply(now, SubmitEvent{Spec: spec}).
// Apply checks the clock, hands the event to the EventLog set with
// SetEventLog (a journal, a replication log: write-ahead, so a log that
// refuses applies nothing), then applies it. An Entry (an event with its
// time) encodes as readable JSON with a stable kind tag, so a log of
// entries can be stored, shipped to a replica, audited, and applied again
// to a scheduler built from the same configuration, which then holds the
// same state and makes the same decisions, bit for bit.
//
// # Snapshots
//
// Snapshot writes the scheduler's whole authoritative state — the
// configuration as it stands, every node's administrative state and
// device health, every job with its allocation (CPU ids, GPU indices) and
// its queue bookkeeping, the reservations, the fair-share inputs, the ID
// counters, the time of the last event, and the backfill profile the last
// cycle kept (what Explain and IdleCapacity read between cycles) — and
// Restore rebuilds a scheduler that decides exactly as the original would
// have: the same cycles, explanations and job records for the same events
// from there on. Derived state (plans, caches) is rebuilt, not stored.
// Functions and interfaces of the configuration (the fair-share source,
// the site-factor hook, a backfill chooser) are not data: RestoreOptions
// supplies them again. The format is versioned (a newer major version is
// refused with ErrSnapshotVersion), sectioned and checksummed per section;
// registry-bound values are written by TRES name. A truncated or corrupt
// snapshot is an error wrapping ErrCorruptSnapshot that names the section
// and the byte offset, never a partial state. A journal (package
// scheduler/journal) is a snapshot plus the events after it. A caller that
// keeps its own records instead re-admits each running job with its
// allocation with Admit (an AdmitEvent).
//
// A Scheduler is not safe for concurrent use.
package scheduler
