package scheduler

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

// CPU over-subscription (slurm.conf OverSubscribe=YES[:n] and FORCE[:n],
// sbatch --oversubscribe, JobSpec.OverSubscribe), as select/cons_tres
// shares consumable resources: a job of a FORCE partition, or of a YES
// partition that asked --oversubscribe, may be given CPUs that other such
// jobs hold, up to the partition's count of jobs per CPU (the allocation
// unit's CPUs: whole cores under CR_Core, whole sockets under CR_Socket).
// A shared CPU id appears in the allocation of every job sharing it.
// GRES (GPUs and other devices, shards) are never shared, nor is memory:
// Sluice tracks memory as a consumable resource, and Slurm does not
// over-subscribe memory so tracked. A job asking --exclusive gets whole
// nodes whatever its partition says.
//
// Jobs of different partitions never share a CPU: the cons_tres sharing
// table describes sharing among the jobs of one partition ("per
// partition/queue") and does not say how the counts of two partitions
// over the same node combine, so Sluice takes the conservative reading.
// A job takes free CPUs first and shares only for what it still lacks.
//
// The state is the node's CPU mask (a bit set while any job holds the
// CPU) and its free CPU count (CPUs no job holds), as without sharing;
// who shares a CPU is read from the allocations of the jobs on the node,
// which the node counts (node.sharing) so that nodes without sharing jobs
// pay nothing. The allocation records the count it started under
// (Allocation.OverSubscribe).

// shareLimit returns how many jobs may share each CPU job j is given:
// its partition's count under FORCE, or under YES when the job asked
// --oversubscribe; 1 (no sharing) otherwise and for --exclusive jobs.
// The partition's setting is read as it is now, as Slurm reads it when it
// schedules.
func (s *Scheduler) shareLimit(j *job) int {
	if j.part < 0 || j.part >= len(s.parts) {
		return 1
	}
	c := &s.parts[j.part].cfg
	if c.OverSubscribe != policy.OverSubscribeYes && c.OverSubscribe != policy.OverSubscribeForce {
		return 1
	}
	pp := policy.Partition{OverSubscribe: c.OverSubscribe, OverSubscribeCount: c.OverSubscribeCount}
	return pp.ShareCount(j.Spec.OverSubscribe, j.Spec.Exclusive)
}

// cpuCell is what shareCells says of one CPU of a node: how many running
// jobs hold it, the least count of jobs per CPU among them, their
// partition, and whether one of them does not share (or another
// partition's job holds it too).
type cpuCell struct {
	count, limit int
	part         int
	solo         bool
}

// allocOn returns job o's allocation on node n (matched by its config,
// so that a scratch copy of a node matches too), or nil.
func (s *Scheduler) allocOn(o *job, n *node) *NodeAlloc {
	for k := range o.Alloc.Nodes {
		if na := &o.Alloc.Nodes[k]; na.Node < len(s.nodes) && s.nodes[na.Node].cfg == n.cfg {
			return na
		}
	}
	return nil
}

// shareCells returns, per CPU of node n, who holds it among the node's
// jobs other than except (0: none excluded). The slice is scratch of the
// scheduler, valid until the next call.
func (s *Scheduler) shareCells(n *node, except JobID) []cpuCell {
	cells := s.shareBuf[:0]
	for range n.cfg.CPUs {
		cells = append(cells, cpuCell{part: -1})
	}
	s.shareBuf = cells
	for _, id := range n.jobs {
		o := s.jobs[id]
		if o == nil || id == except {
			continue
		}
		na := s.allocOn(o, n)
		if na == nil {
			continue
		}
		for _, c := range na.CPUs {
			if c < 0 || c >= len(cells) {
				continue
			}
			cl := &cells[c]
			cl.count++
			switch {
			case o.Alloc.OverSubscribe <= 1:
				cl.solo = true
			case cl.part >= 0 && cl.part != o.part:
				cl.solo = true
			}
			cl.part = o.part
			if cl.limit == 0 || o.Alloc.OverSubscribe < cl.limit {
				cl.limit = o.Alloc.OverSubscribe
			}
		}
	}
	return cells
}

// shareable reports whether job j, sharing up to limit jobs per CPU, may
// be given a CPU held as cl says.
func shareable(j *job, limit int, cl cpuCell) bool {
	return cl.count > 0 && !cl.solo && cl.part == j.part && cl.count < min(cl.limit, limit)
}

// shareMask returns, for job j sharing up to limit jobs per CPU, node n's
// CPU mask with the CPUs j may share cleared (the free ones are clear
// already); nil when j shares nothing there.
func (s *Scheduler) shareMask(j *job, n *node, limit int) []uint64 {
	if limit <= 1 || n.sharing == 0 {
		return nil
	}
	var mask []uint64
	for c, cl := range s.shareCells(n, 0) {
		if !shareable(j, limit, cl) {
			continue
		}
		if mask == nil {
			mask = slices.Clone(n.cpuUsed)
		}
		mask[c>>6] &^= 1 << uint(c&63)
	}
	return mask
}

// shareableCPUs counts the CPUs of node n that job j, sharing up to
// limit jobs per CPU, may share: the CPUs shareMask clears, without
// building the mask.
func (s *Scheduler) shareableCPUs(j *job, n *node, limit int) int {
	if limit <= 1 || n.sharing == 0 {
		return 0
	}
	k := 0
	for _, cl := range s.shareCells(n, 0) {
		if shareable(j, limit, cl) {
			k++
		}
	}
	return k
}

// fitsFree reports whether node n's free resources hold the request v of
// job j, counting the CPUs it may share.
func (s *Scheduler) fitsFree(j *job, n *node, v gres.Vector) bool {
	if v.Fits(n.free) {
		return true
	}
	limit := s.shareLimit(j)
	if limit <= 1 || n.sharing == 0 || v[gres.CPU] <= n.free[gres.CPU] {
		return false
	}
	k := v[gres.CPU]
	v[gres.CPU] = 0
	ok := v.Fits(n.free)
	v[gres.CPU] = k
	if !ok {
		return false
	}
	return k <= n.free[gres.CPU]+int64(s.shareableCPUs(j, n, limit))
}

// takeCPUs marks the allocation's CPUs held on node n and charges its TRES
// to the node's free resources, counting only the CPUs no job held
// before (the others are shared). It returns the charge's error.
func (n *node) takeCPUs(na *NodeAlloc) error {
	var shared int64 // CPUs some job held before; marked in the same walk
	for _, c := range na.CPUs {
		w, bit := &n.cpuUsed[c>>6], uint64(1)<<uint(c&63)
		if *w&bit != 0 {
			shared++
		}
		*w |= bit
	}
	k := na.TRES[gres.CPU]
	na.TRES[gres.CPU] = max(k-shared, 0)
	err := n.charge(na.TRES)
	na.TRES[gres.CPU] = k
	return err
}

// dropCPUs clears, of the CPUs ids job id held on node n, those no other
// job on the node holds, and returns how many it cleared: the CPUs that
// come back free.
func (s *Scheduler) dropCPUs(n *node, id JobID, ids []int) int64 {
	if n.sharing == 0 {
		n.releaseCPUs(ids)
		return int64(len(ids))
	}
	cells := s.shareCells(n, id)
	var k int64
	for _, c := range ids {
		if c >= 0 && c < len(cells) && cells[c].count > 0 {
			continue // still shared by another job
		}
		n.cpuUsed[c>>6] &^= 1 << uint(c&63)
		k++
	}
	return k
}

// sharersChanged is told that sharer j (Allocation.OverSubscribe > 1)
// starts, ends, is suspended or resumed, or has its end moved: which
// holder of a shared CPU keeps it longest (sharedCPUUse) may change for
// every other running sharer on j's nodes. It gives those nodes a new
// share generation (invalidating the sharers' cached profile use) and has
// the kept backfill profile re-add the other running sharers there, as
// it re-adds a job whose end moved; j itself the caller notes. The kept
// profile then holds what a fresh build would, without a rebuild.
func (s *Scheduler) sharersChanged(j *job) {
	for _, na := range j.Alloc.Nodes {
		s.saveNode(na.Node) // a rollback gives the node a new generation
		n := &s.nodes[na.Node]
		s.sharerSeq++
		n.sharerGen = s.sharerSeq
		if s.bf == nil {
			continue
		}
		for _, id := range n.jobs {
			o := s.jobs[id]
			if o == nil || o == j || o.State != JobRunning || o.Alloc.OverSubscribe <= 1 {
				continue
			}
			s.noteEnded(o)
			s.noteStarted(o)
		}
	}
}

// sharedCPUUse returns how many of job j's CPUs on node n the backfill
// profile charges to it: each CPU once, to the job that holds it longest
// (the latest deadline, then the highest ID), so that the profile frees
// a shared CPU when its last holder ends and never counts it twice. A
// suspended job holding CPUs (SuspendJob keeps them) holds them longest:
// the profile counts them in the node's free resources, never freed.
func (s *Scheduler) sharedCPUUse(j *job, n *node, na *NodeAlloc) int64 {
	if n.sharing <= 1 {
		return int64(len(na.CPUs))
	}
	owned := make(map[int]bool, len(na.CPUs))
	for _, c := range na.CPUs {
		owned[c] = true
	}
	for _, id := range n.jobs {
		o := s.jobs[id]
		if o == nil || o == j || (o.State != JobRunning && o.State != JobSuspended) {
			continue
		}
		later := o.State == JobSuspended || o.deadline.After(j.deadline) || (o.deadline.Equal(j.deadline) && o.ID > j.ID)
		if !later {
			continue
		}
		if ona := s.allocOn(o, n); ona != nil {
			for _, c := range ona.CPUs {
				delete(owned, c)
			}
		}
	}
	return int64(len(owned))
}

// popCPUs counts the set bits of a CPU mask.
func popCPUs(mask []uint64) int64 {
	var k int
	for _, w := range mask {
		k += bits.OnesCount64(w)
	}
	return int64(k)
}

// freedShared sets, on tmp (a scratch copy of node n), the CPU mask and
// free CPU count the node would have with the victims' CPUs freed: a CPU
// a victim shares with a job that stays remains held. tmp's free vector
// is copied first.
func (s *Scheduler) freedShared(n, tmp *node, victims []freedAlloc) {
	gone := make(map[JobID]bool, len(victims))
	for _, v := range victims {
		gone[v.job] = true
	}
	tmp.cpuUsed = make([]uint64, len(n.cpuUsed))
	for _, id := range n.jobs {
		if gone[id] {
			continue
		}
		if o := s.jobs[id]; o != nil {
			if na := s.allocOn(o, n); na != nil {
				tmp.markCPUs(na.CPUs)
			}
		}
	}
	tmp.free = tmp.free.Clone()
	tmp.free[gres.CPU] = n.free[gres.CPU] + popCPUs(n.cpuUsed) - popCPUs(tmp.cpuUsed)
}

// checkSharing verifies that every CPU held by more than one job is held
// only by jobs of one partition that may share it, no more of them than
// the least of their counts allows (after a restore; the fuzz checks call
// it too). Errors name the node and the CPU.
func (s *Scheduler) checkSharing() error {
	for i := range s.nodes {
		n := &s.nodes[i]
		if len(n.jobs) < 2 {
			continue
		}
		for c, cl := range s.shareCells(n, 0) {
			if cl.count > 1 && (cl.solo || cl.count > cl.limit) {
				return fmt.Errorf("node %s: CPU %d held by %d jobs, shared by at most %d of one partition that may share (OverSubscribe)",
					n.cfg.Name, c, cl.count, max(cl.limit, 1))
			}
		}
	}
	return nil
}

// freeFor returns node n's free resources as job j may use them: n.free,
// or, where j may share CPUs that jobs on n hold, a copy counting those
// CPUs free too (the task spread and per-job spread size their requests
// with it).
func (s *Scheduler) freeFor(j *job, n *node) gres.Vector {
	if n.sharing == 0 {
		return n.free
	}
	limit := s.shareLimit(j)
	if limit <= 1 {
		return n.free
	}
	extra := s.shareableCPUs(j, n, limit)
	if extra == 0 {
		return n.free
	}
	f := n.free.Clone()
	f[gres.CPU] += int64(extra)
	return f
}
