// Package backfill plans when and where pending jobs will run: a
// time-resource profile of the cluster and a backfill planner (EASY and
// conservative) on top of it that decides which jobs start now and gives
// every other job an expected start time and planned nodes from the same
// plan.
//
// The package knows nothing of accounts, QOS, partitions or node states:
// the caller (the scheduler) turns those into inputs — each node's
// capacity and free resources, the running jobs' expected ends, and per
// pending job the allowed node set, the per-node request, the wall time,
// the earliest start and whether it may hold a reservation. Time always
// comes from the caller; nothing here reads the clock, starts goroutines
// or does I/O, and the same inputs give the same plan.
//
// # Profile
//
// A Profile holds, for every node, its free resources (a vector: CPUs,
// memory, GPU counts per type …) as a step function of time from the
// origin (the caller's now). Resources are partial: jobs share a node as
// long as their vectors fit, unlike Slurm's backfill, which reserves whole
// nodes even for partial-node jobs. Exclusive requests take whole nodes
// and need them idle. GPUs are counted per (typed) GRES; the scheduler
// picks device indices at start time.
//
// Layout (a hybrid): each node has its own small sorted timeline (times
// and free vectors); a github.com/google/btree indexes the global change
// points — the exact seconds at which any node's free vector changes —
// each listing the nodes that change there. The summaries the search
// uses to skip nodes are kept per grid slot (bf_resolution), one for
// every slot that holds a change point, in a second btree; each covers
// the time from its slot's first change point to the next summary's and
// holds two conservative aggregates over it: a superset of the nodes idle
// at some moment of it, and per block of 64 nodes an upper bound of their
// free vectors. A summary can only rule a node out, never accept one (the
// timelines decide), and a booking updates one summary per grid slot it
// spans however many exact change points lie in it. Clone is
// copy-on-write (the btrees clone in O(1), node timelines, change points
// and summaries are copied when first written), so explanations and
// what-if questions plan on clones.
//
// The earliest-fit search for N nodes × a per-node vector for a duration D
// from a time t0:
//
//  1. Scan at t0. Blocks whose summary at t0's slot, or at a few probe
//     slots inside [t0, t0+D), cannot hold the request are skipped without
//     reading their nodes (for exclusive requests the idle sets of those
//     slots are intersected instead); each remaining node's timeline gives
//     the first time x at which it stops holding the request, and the node
//     is feasible if x ≥ t0+D, until x−D.
//  2. Sweep the later change points in time order. A node can only become
//     feasible at a time where its own free resources change, so only the
//     nodes listed at each change point are re-examined (those that the
//     summary of its grid slot does not rule out); feasible nodes
//     drop out when their feasible-start interval ends (a heap). The first
//     time at which N allowed nodes are feasible and the NodeChooser
//     accepts a choice is the answer. When the allowed nodes' own
//     breakpoints are few against the change points (a rack, a node list),
//     the sweep merges those nodes' timelines instead of walking every
//     change point: the same times that can add a feasible node, in order.
//
// A request with Alternatives (Slurm's matching OR, --constraint="[a|b]":
// all nodes from one set) is searched once per set, each search the one
// above within Allowed ∩ the set, and takes the earliest start (the first
// set listed on equal starts): the choice a chooser trying the sets in
// order at every time would make, without reading every candidate at
// every step.
//
// A request may add a Spread: resources the chosen nodes must hold beyond
// N × the per-node vector in total, as they can hold them (Slurm's --gpus,
// the job's GPU total beyond one per node). The search above finds the
// nodes that hold the per-node vector; a choice of N of them fits when
// what each has free beyond it, at its lowest over [t, t+D), covers the
// Spread (the chooser's choice, else the N with the most spare). Such a
// search stops at no first N feasible nodes and retries at every change
// point of a feasible node, whose spare may have grown; it bypasses the
// planner's shape cache. The booking gives each node, in the chosen order,
// as much of what is left as it holds (Fit.Spread, Entry.Spread).
//
// # Exact times and the resolution grid
//
// The profile decides with exact seconds, as Slurm does: a running job
// releases its resources at its exact end (start + time limit; a fraction
// of a second counts as the whole second), a job that starts now holds
// them until exactly now + its limit, and begin times and maintenance
// windows are taken to the second. So an expected start is the exact
// second its blocker ends (as squeue --start shows it), and a lower job
// is backfilled only if, with exact times, it ends by the time a
// reservation needs its resources: a job ending one second after the
// blocker is refused.
//
// The resolution (bf_resolution) only rounds the end of a future
// reservation — a planned job that starts after now — up to the grid
// (multiples of the resolution in Unix time): it holds its resources up
// to resolution − 1 s longer than it needs, which keeps the number of
// change points that reservations add to any window W below W/resolution
// whatever the number of planned jobs. Rounding only ever makes the plan
// more cautious: it can refuse a backfill that exact times would allow
// (one that overlaps only the rounded tail), or plan a job behind a
// reservation a little later than exact times would, never let through a
// job that exact times would refuse. An overdue running job (past its end
// and not released) holds its resources until the first grid point after
// now. With a 1 s resolution the whole plan is exact.
//
// Exact ends cost change points: running jobs add one per distinct end
// second (up to one per running job) rather than one per grid step. The
// summaries, kept per grid slot, bound what that costs bookings (see
// docs/bench/backfill.md); the sweep still visits every exact change
// point.
//
// The sweep stops at the latest acceptable start (the window end) and
// reports FitNever when no change point is left, since nothing changes
// after the last one. A NodeChooser plugs in topology-aware selection; the
// default takes the lowest node indices.
//
// # Planner
//
// Planner.Plan takes the pending jobs in scheduling order and, for each:
// applies the per-group test limits (bf_max_job_user, _part, _assoc,
// _user_part), decides whether the job may hold a reservation (NoReserve,
// bf_min_prio_reserve, bf_min_age_reserve, bf_job_part_count_reserve, and
// in EASY mode the k reservations already taken), searches the profile for
// its earliest fit within bf_window, and then starts it now, reserves its
// future slot in the profile, or records an estimate without a
// reservation. Jobs with --time-min are planned with it and, when they can
// start now, get the longest limit up to their time limit that the plan
// allows. bf_max_job_test and bf_max_job_start stop the pass; Sluice's
// default is no depth limit.
//
// Within one pass the profile only loses free resources, so "a job of this
// shape cannot start before T" carries over to later jobs that need at
// least as much (same per-node vector, exclusivity and allowed set; at
// least as many nodes, as long a wall time, as late an earliest start).
// The planner keeps such facts per shape, with the feasible nodes it saw
// at T; searches start from them, which makes planning the whole queue
// near-linear in its length. The answers are the same as without the
// cache.
//
// Guarantees (tested over thousands of seeded workloads in an event loop
// where every job runs exactly its time limit): in conservative mode no
// job starts later than the first start time it was given; in EASY mode no
// job that held a reservation starts later than that reservation; with
// priority order (not FCFS) a reservation only moves when a job of higher
// priority arrives. No node is ever over-allocated. In EASY mode these
// hold for event times at arbitrary seconds with any resolution; in
// conservative mode exactly with a 1 s resolution. With a coarser grid a
// reserved job's end rounded up frees resources earlier in fact than in
// the plan, a re-plan may then place a job ahead of a later reservation
// differently, and rarely that reservation moves later (1 of about 5,000
// conservative jobs with a 60 s grid and arbitrary event seconds in a
// test) — as in Slurm, which also re-plans from scratch every cycle. No
// start ever delays a reservation of the plan that made it (tested after
// every cycle in the scheduler, with exact times).
//
// # Calling it from a scheduler
//
// After the main pass (which starts jobs in priority order and applies the
// rule that a blocked job holds back its partition) the scheduler:
//
//  1. builds the profile from the state after the main pass (or keeps one
//     up to date, see the next section): pl.NewProfile
//     with every node's schedulable Capacity (Free nil to derive it from
//     the running jobs, or an explicit Free for nodes that are down or
//     partly unusable — a down node has an empty Free) and every running
//     job, including those the main pass just started, with End = start +
//     time limit (zero for no limit);
//  2. blocks maintenance windows with Profile.Block;
//  3. passes all still-pending jobs in priority order, including those the
//     main pass held back, each with Allowed = the nodes of its partition
//     that are up and not drained, minus excluded nodes, intersected with
//     an advance reservation it must use; Earliest = its begin time or
//     reservation start; NoReserve from its QOS; NoEstimate when it keeps a
//     recent expected start from an earlier plan; a job submitted to
//     several partitions as one Job whose Allowed is their union;
//  4. starts plan.Starts (choosing GPU indices on the planned nodes) and
//     shows plan.Entries' Start and Nodes as expected starts.
//
// Plan books starts and reservations into the profile it is given; keep
// that profile (or a Clone taken before planning) to answer what-if
// questions with Profile.EarliestFit.
//
// # Keeping a profile across cycles
//
// Building the profile reads every node and every running job; on a busy
// cluster scheduled every few seconds that is a large share of each cycle.
// A scheduler can instead keep one profile and tell it what changed:
//
//  1. Once (and again after any rebuild): prof := pl.NewProfile(now,
//     nodes, running), then Block for the maintenance windows.
//  2. At each cycle, at time now, before planning:
//     prof.Release(id) for every job that ended since (completed,
//     cancelled, failed, requeued, suspended); prof.AddStarted(Running{ID,
//     End: start + time limit, Allocs}) for the last plan's starts — the
//     plan's booking of each becomes the running job, at no cost when it
//     holds the same; prof.ReleaseReservations() drops the rest of the
//     last plan (prof.ReleaseReservationsExcept(first) keeps the next
//     plan's first job's reservation, which Plan keeps when it finds it
//     again: in EASY the head job's, saving a release and a booking over
//     every change point it spans); prof.Advance(now) forgets the past;
//     prof.AddStarted for every other job started since — by this cycle's
//     main pass, or by hand. A running job whose time limit changed is
//     Released and added again. Maintenance windows that changed:
//     ReleaseBlocks and Block again (or Release the one block).
//  3. plan, err := pl.Plan(prof, jobs) exactly as on a fresh profile, and
//     keep prof for explanations until the next cycle; what-if questions
//     run on prof.Clone().
//
// When nothing the last plan depended on changed — the cycle only brings
// new jobs, queued after the planned ones; no job ended or started (the
// last plan started none), no node changed, the reservation windows are
// the same, the planned jobs' requests are the same, and now is before
// prof.NextChange() and before every expected start and begin time of the
// last plan — step 2 shrinks to prof.Advance(now) and step 3 to
// pl.Extend(prof, last, newJobs), which gives what Plan of the whole list
// would, for the cost of the new jobs (tested against Plan over random
// profiles). The scheduler does this for arrival-only cycles.
//
// A variant plans on prof.Clone() each cycle and books nothing into prof
// itself, which then never needs ReleaseReservations; the clone's
// copy-on-write copies replace that cost (about the same at 10,000 nodes,
// cheaper for conservative plans on small clusters). Searches on a clone
// cannot tighten the shared per-block bounds of prof, though, so on large
// clusters over long runs the recipe above may keep searches faster.
//
// Starts go through AddStarted, not AddRunning, which is for a profile
// whose node free amounts already exclude the job. Rebuild (step 1) when a
// node's Capacity or Free changes other than through jobs — a node goes
// down or comes back, its capacity changes, a device fails — and after any
// error from the calls of step 2, which leave the profile unchanged but
// then no longer match the cluster. Draining a node needs no rebuild: it
// only leaves the node out of Allowed. Neither does a node that joins the
// cluster: prof.AddNode(state) appends it (as the next index, holding no
// job), giving the profile NewProfile would build with it, unless it has
// a resource no node of the profile has (an error: rebuild then). Plan
// the whole queue after it: a request's Allowed must span the new count.
//
// After step 2 the profile answers every question — timelines, earliest
// fits, plans, start decisions ("StatusStart" still means "fits at the
// profile's origin") — exactly as the profile built afresh at now from the
// same nodes and the running jobs would, with the blocks booked again
// (tested against fresh profiles and the reference model over random
// sequences of all these calls, and over simulated cycles with jobs that
// end early or overrun). A running job whose end has passed without a
// Release (it overruns its time limit) is treated as NewProfile treats
// one: it holds its resources until the first grid point after now, and
// each Advance extends it again. Blocks and reservations that began
// before now keep their remaining part; those that ended disappear.
//
// Costs: Advance is proportional to the change points it passes and the
// nodes they list, plus the overdue jobs it extends — not to the number
// of nodes or jobs; Release and AddStarted to the job's nodes and the
// change points its interval spans; ReleaseReservations to the
// reservations it drops, bounded by one sweep over the change points they
// span (see docs/bench/backfill.md for figures). Clone is O(nodes); after
// it, the first write to each shared timeline or change point copies it,
// so a what-if clone makes the next cycle's updates a little dearer.
//
// # Counters
//
// Resources that are on no node — cluster-wide licenses, and the running
// counts that limits bound (jobs or TRES per user, account, QOS) — are
// Counters: each a capacity and a use over time from the origin, which
// the caller builds for each plan (the use now, each running job's hold
// released at its end) and attaches with Profile.SetCounters. A job names
// the counters it takes (Job.Uses); its search alternates between the
// nodes and the counters — the nodes' earliest fit t, then the earliest
// s ≥ t at which every counter holds the job over [s, s+D), then the
// nodes again from s (through the shape cache, as a job whose earliest
// start is s) — until both agree, and its start or reservation books its
// amounts into the counters. So a reservation also holds the counter room
// it needs, no lower job started or reserved later takes it, and the
// guarantees above hold with counters (tested with per-user, per-account,
// group and license counters). Entry.ByCounter says a counter, not the
// nodes, set the start; a job no counter can ever hold is StatusNeverFits
// with ReasonCounter.
//
// Not modelled: job arrays and heterogeneous jobs (the caller expands
// them), preemption, node boot times.
package backfill
