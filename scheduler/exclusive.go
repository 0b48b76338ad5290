package scheduler

import (
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
)

// Node sharing by user (sbatch --exclusive=user, JobSpec.ExclusiveUser):
// a node that runs an --exclusive=user job runs only its user's jobs, and
// such a job starts only on nodes that run no other user's job. The node
// counts its running --exclusive=user jobs (node.exclUsers), so the common
// case, a job without the flag on a node without such jobs, costs one
// comparison; the count is kept by commitAllocation and release (with
// their undo) and rebuilt on restore.

// exclUser reports whether the job shares its nodes only with its own
// user's jobs (--exclusive=user, and not whole nodes).
func (j *job) exclUser() bool { return j.Spec.ExclusiveUser && !j.Spec.Exclusive }

// userShareOK reports whether job j may share node n with the jobs on it
// as far as --exclusive=user goes: when j has the flag, every job on the
// node is its user's; when a job on the node has it, j is that user's.
func (s *Scheduler) userShareOK(j *job, n *node) bool {
	if n.exclUsers > 0 && n.exclUser != j.Spec.User {
		return false
	}
	if !j.exclUser() {
		return true
	}
	return len(n.users) == 0 || (len(n.users) == 1 && n.users[0].user == j.Spec.User)
}

// noteUse counts (delta +1) or uncounts (-1) job j on node i: by user,
// and as an --exclusive=user job when it is one; undone with the cycle
// when it fails.
func (s *Scheduler) noteUse(j *job, i, delta int) {
	s.countUse(j, i, delta)
	if s.jr.on {
		s.jr.entries = append(s.jr.entries, undoEntry{kind: undoUse, j: j, i: i, sv: -delta})
	}
}

// countUse is noteUse without the undo.
func (s *Scheduler) countUse(j *job, i, delta int) {
	n := &s.nodes[i]
	u := j.Spec.User
	k := slices.IndexFunc(n.users, func(x userJobs) bool { return x.user == u })
	switch {
	case k < 0 && delta > 0:
		n.users = append(n.users, userJobs{user: u, jobs: delta})
	case k >= 0:
		if n.users[k].jobs += delta; n.users[k].jobs <= 0 {
			n.users = slices.Delete(slices.Clone(n.users), k, k+1) // a copy: a saved node may share the array
		}
	}
	if j.Alloc.OverSubscribe > 1 {
		n.sharing += delta
	}
	if !j.exclUser() {
		return
	}
	n.exclUsers += delta
	n.exclUser = u
	s.exclUserUses += delta
	s.exclNodesStale = true
}

// recountUses rebuilds every node's counts of jobs by user and of
// running --exclusive=user jobs from the jobs on it (after a restore).
func (s *Scheduler) recountUses() {
	s.exclUserUses, s.exclNodesStale = 0, true
	for i := range s.nodes {
		n := &s.nodes[i]
		n.exclUsers, n.exclUser, n.users, n.sharing = 0, "", nil, 0
		for _, id := range n.jobs {
			if o := s.jobs[id]; o != nil {
				s.countUse(o, i, 1)
			}
		}
	}
}

// choiceDecides reports whether node n can host job j only as the choice
// of its CPUs and devices says, counts not being enough: under
// enforce-binding, per socket, or with one thread per core on a node of
// several threads per core.
func (j *job) choiceDecides(n *node) bool {
	return j.Spec.EnforceBinding || j.Spec.GPUsPerSocket > 0 || (j.Spec.Hint.oneThreadPerCore() && n.lay.threads > 1)
}

// validateLayoutRequest checks the spec's layout fields (Distribution,
// Hint, ExclusiveUser); errors wrap ErrInvalidJob.
func (j *JobSpec) validateLayoutRequest() error {
	if err := j.Distribution.validate(); err != nil {
		return err
	}
	if int(j.Hint) >= len(hintNames) {
		return fmt.Errorf("%w: Hint %d unknown", ErrInvalidJob, j.Hint)
	}
	if j.Exclusive && j.ExclusiveUser {
		return fmt.Errorf("%w: Exclusive and ExclusiveUser are exclusive (--exclusive takes one value)", ErrInvalidJob)
	}
	return nil
}

// oneThreadFeasible rejects a one-thread-per-core job (--hint=nomultithread)
// whose CPUs on a node outnumber the cores of all but fewer nodes than it
// needs among those able to hold it.
func (s *Scheduler) oneThreadFeasible(j *job) error {
	if !j.Spec.Hint.oneThreadPerCore() || j.Spec.Exclusive {
		return nil
	}
	k, want := 0, j.perNode[gres.CPU]
	for i := j.shape.capable.Next(0); i >= 0 && k < j.nodes; i = j.shape.capable.Next(i + 1) {
		if l := s.nodes[i].lay; l.threads == 1 || int64(l.sockets*l.cores) >= want {
			k++
		}
	}
	if k < j.nodes {
		return fmt.Errorf("%w: %w: --hint=%v: needs %d node(s) with %d cores, only %d exist", ErrInvalidJob, ErrUnsatisfiable, j.Spec.Hint, j.nodes, want, k)
	}
	return nil
}

// userAllowed is allowed, for the backfill plan of job x, without the
// nodes that run --exclusive=user jobs: the plan is cautious there,
// counting on none of them for another job while such a job runs
// (whatever the users: one set per shape, so that the planner's work
// stays shared among the jobs of a shape). An --exclusive=user job
// itself is planned on whole idle nodes (bfJob), so its plan never counts
// on sharing a node with another user's job that would still run then.
// With sh set (the backfill pass: allowed is the shape's allowed set of
// this cycle) the result is cached on the shape. allowed is not changed.
func (s *Scheduler) userAllowed(x *job, allowed topology.NodeSet, sh *shape) topology.NodeSet {
	if s.exclUserUses == 0 || x.exclUser() {
		return allowed
	}
	if s.exclNodesStale {
		s.exclNodes = s.exclNodes[:0]
		for i := range s.nodes {
			if s.nodes[i].exclUsers > 0 {
				s.exclNodes = append(s.exclNodes, i)
			}
		}
		s.exclNodesStale = false
		s.exclGen++
	}
	if sh != nil && sh.userStamp == s.cycleNo+1 && sh.userGen == s.exclGen {
		return sh.userAllowed
	}
	out, cloned := allowed, false
	for _, i := range s.exclNodes {
		if allowed.Has(i) {
			if !cloned {
				out, cloned = allowed.Clone(), true
			}
			out.Remove(i)
		}
	}
	if sh != nil {
		sh.userAllowed, sh.userStamp, sh.userGen = out, s.cycleNo+1, s.exclGen
	}
	return out
}

// freeCoreDeficit is the Deficit.TRES of a one-thread-per-core request:
// how many nodes have that many cores with a free thread.
const freeCoreDeficit = "free core (nomultithread)"

// layoutNeed adds to need what the node layout and --exclusive=user keep
// job j from now: the allowed nodes held by another user (UserExcluded),
// and, for one thread per core, a deficit of free cores where fewer than
// the job's nodes have enough.
func (s *Scheduler) layoutNeed(j *job, allowed topology.NodeSet, need *ResourceNeed) {
	oneThread := j.Spec.Hint.oneThreadPerCore() && !j.Spec.Exclusive
	if s.exclUserUses == 0 && !j.exclUser() && !oneThread {
		return
	}
	want, cores := int(j.perNode[gres.CPU]), 0
	for i := allowed.Next(0); i >= 0; i = allowed.Next(i + 1) {
		n := &s.nodes[i]
		if !s.userShareOK(j, n) {
			need.UserExcluded++
		}
		if oneThread && (n.lay.threads == 1 || n.freeCores() >= want) {
			cores++
		}
	}
	if oneThread && cores < j.nodes {
		need.Deficits = append(need.Deficits, Deficit{TRES: freeCoreDeficit, PerNode: int64(want), Nodes: cores})
	}
}

// freeCores counts the node's cores with a free thread.
func (n *node) freeCores() int {
	k := 0
	for core := range n.lay.sockets * n.lay.cores {
		for t := range n.lay.threads {
			if c := core*n.lay.threads + t; n.cpuUsed[c>>6]&(1<<uint(c&63)) == 0 {
				k++
				break
			}
		}
	}
	return k
}
