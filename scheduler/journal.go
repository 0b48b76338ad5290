package scheduler

import (
	"slices"
	"time"

	"github.com/google/btree"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
)

// journal is the undo log that makes Schedule all-or-nothing. While a
// cycle runs, every change it makes to the scheduler's state is preceded
// by an entry saying how to take it back: the job or node as it was
// before its first change in the cycle, a pending job's reason and
// estimate, a priority, the inverse of a usage-counter update. When the
// cycle fails, rollback replays the entries in reverse and restores what
// begin saved whole (the queue indices, by their copy-on-write clones, and
// a few scalars), which leaves the scheduler exactly as it was before the
// call; when it succeeds, commit drops them. The kept backfill profile is
// derived state: a rollback marks it for a fresh build, which gives the
// same plan. Outside Schedule the journal is off and records nothing
// (events are validated before they change anything).
type journal struct {
	on bool
	// epoch numbers the cycles journaled; a job or node saved in this
	// one carries it, so that only its state before its first change in
	// the cycle is kept (later saves would be overridden anyway).
	epoch   uint64
	entries []undoEntry
	// What the entries point into, reused from cycle to cycle.
	jobs  []job
	nodes []nodeSave
	views []pendingView
	prios []prioSave
	ints  []int
	tres  []priority.TRESFactor
	i64   []int64
	u64   []uint64
	ids   []JobID
	// Saved by begin, the queues (whole) by their first change.
	pending, running *btree.BTreeG[*job]
	last             time.Time
	cycleNo          uint64
	suspended        []*job
	done             int
	events           []Decision
	prio             *prioState
}

// undoKind says which saved state an undo entry restores.
type undoKind uint8

const (
	undoJob      undoKind = iota // jobs[i] is the job before its first change
	undoNode                     // nodes[i] is node before its first change
	undoPending                  // views[i] is a pending job's reason and estimate
	undoPriority                 // prios[i] is a job's priority and breakdown
	undoFunc                     // fn takes back a change of state outside jobs and nodes
	undoUse                      // countUse(j, i, sv) takes back noteUse (without a closure)
)

// undoEntry is one step of the undo log.
type undoEntry struct {
	kind undoKind
	j    *job
	i    int
	fn   func()
	// sv is, for a node, its save in nodes (a node saved again after a
	// savepoint has several); for undoUse, the count to add back.
	sv int
}

// nodeSave is a node's mutable state.
type nodeSave struct {
	// free, cpuUsed and jobs are kept in the journal's arenas (i64, u64,
	// ids) at these offsets, so that saving a node allocates nothing
	// once the arenas have grown.
	free, cpuUsed, jobs [2]int // offset, length
	devs                gres.NodeDevices
}

// pendingView is the part of a pending job each cycle rewrites: its
// reason, eligible time and backfill estimate (the planned nodes at
// ints[off:off+n]).
type pendingView struct {
	reason       policy.Reason
	eligible     time.Time
	expected, at time.Time
	reserved     bool
	off, n       int
	planned      []int
}

// prioSave is a job's priority and breakdown (its TRES factors at
// tres[off:off+n]).
type prioSave struct {
	priority uint32
	b        priority.Breakdown
	off, n   int
}

// prioState is the priority engine's state before a recomputation.
type prioState struct {
	lastCalc time.Time
	tree     *priority.Tree
	assocs   []priority.Association
	// ups takes the tree back when it was updated in place.
	ups []priority.UsageUpdate
}

// begin starts journaling a cycle.
func (s *Scheduler) begin() {
	jr := &s.jr
	jr.on = true
	jr.epoch++
	jr.pending, jr.running = nil, nil // saved by mutPending and mutRunning
	jr.last, jr.cycleNo, jr.done = s.last, s.cycleNo, len(s.done)
	jr.suspended = append(jr.suspended[:0], s.suspended...)
	jr.events = s.eventDecisions
	jr.prio = nil
}

// commit ends a cycle that succeeded: nothing is to be taken back.
func (s *Scheduler) commit() {
	s.jr.reset()
}

// reset turns the journal off and drops what it saved, keeping its
// arrays for the next cycle.
func (jr *journal) reset() {
	jr.on = false
	clear(jr.entries)
	clear(jr.jobs)
	clear(jr.nodes)
	clear(jr.views)
	clear(jr.prios)
	clear(jr.suspended)
	jr.entries, jr.jobs, jr.nodes, jr.views, jr.prios = jr.entries[:0], jr.jobs[:0], jr.nodes[:0], jr.views[:0], jr.prios[:0]
	jr.ints, jr.tres, jr.suspended = jr.ints[:0], jr.tres[:0], jr.suspended[:0]
	jr.i64, jr.u64, jr.ids = jr.i64[:0], jr.u64[:0], jr.ids[:0]
	jr.pending, jr.running, jr.prio, jr.events = nil, nil, nil, nil
}

// rollback takes back every change of the failed cycle, newest first.
func (s *Scheduler) rollback() {
	s.undoFrom(0)
	s.rollbackRest()
}

// undoFrom replays the undo entries from the k-th on, newest first.
func (s *Scheduler) undoFrom(from int) {
	jr := &s.jr
	for k := len(jr.entries) - 1; k >= from; k-- {
		e := &jr.entries[k]
		switch e.kind {
		case undoJob:
			*e.j = jr.jobs[e.i]
		case undoNode:
			s.fits.touched(e.i) // a savepoint's rollback in a pass: the summaries judge it again
			n := &s.nodes[e.i]
			sv := &jr.nodes[e.sv]
			copy(n.free, jr.i64[sv.free[0]:sv.free[0]+sv.free[1]]) // a node's vector and CPU mask keep their length
			copy(n.cpuUsed, jr.u64[sv.cpuUsed[0]:sv.cpuUsed[0]+sv.cpuUsed[1]])
			n.jobs = append(n.jobs[:0], jr.ids[sv.jobs[0]:sv.jobs[0]+sv.jobs[1]]...)
			if n.devs != nil {
				*n.devs = sv.devs
			}
			s.sharerSeq++
			n.sharerGen = s.sharerSeq // sharers' profile use cached since is stale
		case undoPending:
			v := &jr.views[e.i]
			j := e.j
			j.Reason, j.EligibleTime, j.ExpectedStart, j.EstimatedAt, j.reserved = v.reason, v.eligible, v.expected, v.at, v.reserved
			j.planned = append(v.planned[:0], jr.ints[v.off:v.off+v.n]...)
		case undoPriority:
			p := &jr.prios[e.i]
			tres := append(e.j.breakdown.TRES[:0], jr.tres[p.off:p.off+p.n]...)
			e.j.breakdown = p.b
			e.j.breakdown.TRES = tres
			e.j.Priority = p.priority
		case undoFunc:
			e.fn()
		case undoUse:
			s.countUse(e.j, e.i, e.sv)
		}
	}
}

// rollbackRest is rollback after the entries: what begin saved whole,
// and the cycle's scratch and caches.
func (s *Scheduler) rollbackRest() {
	jr := &s.jr
	if jr.pending != nil {
		s.pending = jr.pending
	}
	if jr.running != nil {
		s.running = jr.running
	}
	s.last, s.cycleNo = jr.last, jr.cycleNo
	clear(s.done[jr.done:])
	s.done = s.done[:jr.done]
	s.suspended = append(s.suspended[:0], jr.suspended...)
	s.eventDecisions = jr.events
	if p := jr.prio; p != nil {
		s.prio.lastCalc = p.lastCalc
		if s.prio.tree != p.tree {
			s.prio.tree = p.tree
		} else if len(p.ups) > 0 {
			_ = s.prio.tree.UpdateUsage(p.ups...) // the usages it held a moment ago: valid
		}
		s.prio.assocs = append(s.prio.assocs[:0], p.assocs...)
	}
	// Scratch and caches of the cycle.
	s.inPass = false
	clear(s.deferred)
	clear(s.rekey)
	s.deferred, s.rekey = s.deferred[:0], s.rekey[:0]
	for _, sh := range s.shapes {
		sh.stamp = 0 // cycle numbers repeat: the per-cycle cache is stale
	}
	s.shareGen++ // the share views may have seen what was taken back
	if b := s.bf; b != nil {
		// The kept profile and the last plan may have moved on: the next
		// cycle builds both afresh, which gives the same plan.
		b.plan, b.spare, b.dirty = nil, nil, true
	}
	jr.reset()
}

// touch saves job j before the cycle first changes it (beyond its pending
// view and priority, see notePending and notePriority). A running job's
// allocation is copied, since suspending and resuming it change the
// allocation in place.
func (s *Scheduler) touch(j *job) {
	jr := &s.jr
	if !jr.on || j.touched == jr.epoch {
		return
	}
	j.touched = jr.epoch
	jr.jobs = append(jr.jobs, *j)
	if j.State == JobRunning || j.State == JobSuspended {
		jr.jobs[len(jr.jobs)-1].Alloc = copyAlloc(j.Alloc)
	}
	jr.entries = append(jr.entries, undoEntry{kind: undoJob, j: j, i: len(jr.jobs) - 1})
}

// notePending saves a pending job's reason, eligible time and estimate
// before the cycle first changes one of them.
func (s *Scheduler) notePending(j *job) {
	jr := &s.jr
	if !jr.on || j.viewed == jr.epoch {
		return
	}
	j.viewed = jr.epoch
	jr.views = append(jr.views, pendingView{
		reason: j.Reason, eligible: j.EligibleTime, expected: j.ExpectedStart, at: j.EstimatedAt,
		reserved: j.reserved, off: len(jr.ints), n: len(j.planned), planned: j.planned,
	})
	jr.ints = append(jr.ints, j.planned...)
	jr.entries = append(jr.entries, undoEntry{kind: undoPending, j: j, i: len(jr.views) - 1})
}

// setReason sets a pending job's reason, journaled.
func (s *Scheduler) setReason(j *job, r policy.Reason) {
	if j.Reason != r {
		s.notePending(j)
		j.Reason = r
	}
}

// notePriority saves a job's priority and breakdown before the cycle
// recomputes them.
func (s *Scheduler) notePriority(j *job) {
	jr := &s.jr
	if !jr.on {
		return
	}
	jr.prios = append(jr.prios, prioSave{priority: j.Priority, b: j.breakdown, off: len(jr.tres), n: len(j.breakdown.TRES)})
	jr.tres = append(jr.tres, j.breakdown.TRES...)
	jr.entries = append(jr.entries, undoEntry{kind: undoPriority, j: j, i: len(jr.prios) - 1})
}

// notePrioState saves the priority engine's state before the cycle
// recomputes priorities; notePrioTree, after the fair-share tree was
// brought to the new usage, says how to take the tree back.
func (s *Scheduler) notePrioState() {
	jr := &s.jr
	if !jr.on || jr.prio != nil {
		return
	}
	p := s.prio
	jr.prio = &prioState{lastCalc: p.lastCalc, tree: p.tree, assocs: slices.Clone(p.assocs)}
}

func (s *Scheduler) notePrioTree() {
	jr := &s.jr
	if !jr.on || jr.prio == nil || s.prio.tree != jr.prio.tree {
		return // a new tree: rollback puts the old one back
	}
	for _, u := range s.prio.ups {
		jr.prio.ups = append(jr.prio.ups, priority.UsageUpdate{Index: u.Index, Usage: jr.prio.assocs[u.Index].Usage})
	}
}

// mutPending returns the pending queue for a change, saving it first (a
// copy-on-write clone) when this is the journaled cycle's first change to
// it; cycles that leave the queue alone pay nothing.
func (s *Scheduler) mutPending() *btree.BTreeG[*job] {
	if s.jr.on && s.jr.pending == nil {
		s.jr.pending = s.pending.Clone()
	}
	return s.pending
}

// mutRunning is mutPending for the running queue.
func (s *Scheduler) mutRunning() *btree.BTreeG[*job] {
	if s.jr.on && s.jr.running == nil {
		s.jr.running = s.running.Clone()
	}
	return s.running
}

// saveNode saves node i before the cycle first changes it.
func (s *Scheduler) saveNode(i int) {
	s.fits.touched(i) // the pass's placement summaries judge it again (placesum.go)
	jr := &s.jr
	n := &s.nodes[i]
	if !jr.on || n.touched == jr.epoch {
		return
	}
	n.touched = jr.epoch
	sv := nodeSave{free: [2]int{len(jr.i64), len(n.free)}, cpuUsed: [2]int{len(jr.u64), len(n.cpuUsed)},
		jobs: [2]int{len(jr.ids), len(n.jobs)}}
	jr.i64 = append(jr.i64, n.free...)
	jr.u64 = append(jr.u64, n.cpuUsed...)
	jr.ids = append(jr.ids, n.jobs...)
	if n.devs != nil {
		sv.devs = n.devs.Copy() // shares in use are not aliased
	}
	n.saved = len(jr.nodes)
	jr.nodes = append(jr.nodes, sv)
	jr.entries = append(jr.entries, undoEntry{kind: undoNode, i: i, sv: n.saved})
}

// onUndo records how to take back a change the cycle just made outside
// jobs and nodes (usage counters, array counts).
func (s *Scheduler) onUndo(fn func()) {
	if s.jr.on {
		s.jr.entries = append(s.jr.entries, undoEntry{kind: undoFunc, fn: fn})
	}
}

// savepoint marks the journaled cycle's state, for rollbackTo: a part of
// the cycle that may have to be taken back alone (the components of a
// heterogeneous job, started all or none). The journal's epoch moves on,
// so that what the part changes is saved again as it is now (rollback
// of the whole cycle replays the older saves after the newer ones).
// The part must not change the queues.
type savepoint struct {
	entries, bfStarted, bfEnded int
}

func (s *Scheduler) savepoint() savepoint {
	jr := &s.jr
	jr.epoch++
	sp := savepoint{entries: len(jr.entries)}
	if s.bf != nil {
		sp.bfStarted, sp.bfEnded = len(s.bf.started), len(s.bf.ended)
	}
	return sp
}

// rollbackTo takes back every change made since savepoint sp.
func (s *Scheduler) rollbackTo(sp savepoint) {
	jr := &s.jr
	s.undoFrom(sp.entries)
	clear(jr.entries[sp.entries:])
	jr.entries = jr.entries[:sp.entries]
	s.shareGen++ // the share views may have seen what was taken back
	if b := s.bf; b != nil {
		clear(b.started[sp.bfStarted:])
		b.started, b.ended = b.started[:sp.bfStarted], b.ended[:sp.bfEnded]
	}
}
