// Package policy holds Sluice's scheduling policy: the pending reasons a
// job can carry (with Slurm's spelling, so squeue users read the same
// words), QOS and partitions, Slurm's limit hierarchy, advance
// reservations, preemption that counts the work it destroys, job
// dependencies and arrays. It is pure: no I/O, no clock (every call that
// needs the time takes now), no goroutines; the scheduler owns the state
// and calls in.
//
// # Limits
//
// New compiles a Config (QOS, partitions, the association tree) against a
// gres.Registry. Resolve turns a job's user, account, partition and QOS
// into a Subject: its QOS order and association path with the limits in
// force already worked out, in Slurm's hierarchy — partition QOS, job QOS
// (the two swapped by OverPartQOS), user association, account
// associations up to the root, partition. For each limit the first level
// that sets it wins; every association's Grp limits apply (a tighter
// account limit binds even when the user's is looser), except that a QOS
// setting the same limit overrides the associations' (Slurm's "QOS limits
// override association limits"); the partition's MaxTime, MinNodes and
// MaxNodes always bind too unless the QOS flags lift them. Typed GRES
// limits (gres/gpu:h100) hold typed requests only.
//
// A Usage keeps the counters the limits read (running TRES, running and
// submitted jobs, TRES × remaining time, and the decayed TRES-minutes and
// wall time the ledger reports), so a check costs O(levels × limits),
// never O(jobs). CheckSubmit rejects what may never be queued
// (MaxSubmitJobs*, access rules, and with DenyOnLimit any limit the job
// breaks on its own); CheckStart says why a queued job may not start now,
// as a Blocker: Slurm's reason (QOSMaxGRESPerUser, AssocGrpGRES,
// QOSGrpGRESMinutes, …) plus the limit, where it is set, its value, whose
// usage it counts, that usage and what the job adds. Running jobs are
// never judged: lowering a limit only holds new starts.
//
// # Reservations
//
// Reservations holds advance reservations — by node list, node count or
// TRES total (nodes picked by a caller's NodeChooser), recurring or not,
// with MAINT, IGNORE_JOBS, FLEX, MAGNETIC, REPLACE, REPLACE_DOWN and
// OVERLAP — validated against each other. Constrain gives the nodes a job
// may not use over an interval and the deadline of its own reservation;
// EarliestStart moves a job past the windows that block its nodes;
// IdleCapacity reports the capacity reservations strand.
//
// # Preemption
//
// Preemptable applies PreemptType (partition_prio or qos with Preempt
// lists, WITHIN, PRIORITY), the victim's mode (CANCEL, REQUEUE, SUSPEND),
// GraceTime and PreemptExemptTime. PreemptVictims chooses the cheapest
// set of victims — cost being the GPU-seconds (then CPU-seconds) lost
// since each job's last checkpoint — that lets the preemptor fit, as
// judged by a caller's placement callback, and never more victims than
// needed. Config.PreemptOrder PreemptOrderSlurm takes Slurm's order
// instead (lowest QOS priority or partition tier, then fewest nodes).
//
// # Dependencies and arrays
//
// ParseDependency and Dependency.Evaluate handle after, afterany, afterok,
// afternotok and singleton with ',' and '?' lists; a job array's ID stands
// for all its tasks and "12_3" for one. ParseArray handles --array
// ranges, steps and the %throttle.
//
// # Runtime changes
//
// A Policy is immutable. With (and WithQOS, WithoutQOS, WithAssoc,
// WithoutAssoc, WithPartitions) validates and compiles a changed Config;
// Usage.Rebind moves the counters to it — in place, with no pass over the
// jobs, when the QOS and association layout stays — carrying the reported
// GrpTRESMins and GrpWall usage by name; Policy.Rebase moves a kept
// Subject, at one map lookup per distinct plan. Running jobs are never
// judged again: a lowered limit holds new starts only.
//
// Every decision the scheduler makes carries one of these reasons, so an
// explanation is data the scheduler kept, not a guess made afterwards.
//
// # Encodings
//
// Reasons, modes and flags encode as their Slurm strings
// (encoding.TextMarshaler), durations as Slurm times (Duration), and TRES
// limits as "gres/gpu=16,cpu=256"; the structs holding durations (QOS,
// Partition, Reservation, Config) have JSON methods writing them so. TRES
// limits decoded without a registry are unbound until New (or
// TRESLimits.Bind) binds them; docs/encodings.md lists every form.
package policy
