package scheduler

import (
	"slices"

	"github.com/sluicehq/sluice/gres"
)

// cpuRequest is a job's CPU request on one node, what the per-node CPU
// selection (node.selectCPUs) takes.
type cpuRequest struct {
	// count is how many CPUs to select.
	count int
	// tasks is how many tasks the job has on the node; their CPUs
	// (count/tasks each, rounded up) are kept on one socket where the
	// method allows. Zero (or more than count): one CPU per task.
	tasks int
	// dist is the method over sockets: DistBlock, DistCyclic (DistDefault
	// means cyclic, Slurm's default) or DistFCyclic.
	dist DistMethod
	// oneThread takes at most one CPU of each core (--hint=nomultithread).
	oneThread bool
	// whole, with oneThread, takes only cores whose every thread is free
	// (the cores of a CR_Core allocation, see selectUnits).
	whole bool
	// prefer are CPUs taken first (those close to the job's devices);
	// with only set, none outside them are taken.
	prefer gres.CoreSet
	only   bool
}

// cpuRequestOf is job j's CPU request for k CPUs on a node, preferring
// near (only near, when only).
func cpuRequestOf(j *job, k int, near gres.CoreSet, only bool) cpuRequest {
	tasks := int(j.tpn)
	if j.tasks != nil {
		// Tasks spread over the nodes (tasks.go): this node runs as many
		// as its CPUs hold whole tasks.
		tasks = max(k/max(j.Spec.CPUsPerTask, 1), 1)
	}
	return cpuRequest{count: k, tasks: tasks, dist: j.Spec.Distribution.socketMethod(),
		oneThread: j.Spec.Hint.oneThreadPerCore(), prefer: near, only: only}
}

// selectCPUs is the per-node CPU selection: it returns up to r.count free
// CPU ids of the node, in increasing order, chosen as Slurm's cons_tres
// allocates CPUs within a node (it changes nothing; the caller checks the
// count it got). The CPUs in r.prefer are taken first: the method runs
// over them, then over the other free CPUs for what is still missing
// (unless r.only). Over sockets:
//
//   - block takes the lowest free ids (filling socket 0 first);
//   - cyclic (the default) deals the tasks to the sockets in turn, from
//     socket 0, each task's CPUs on the next socket that has room for them
//     all, the lowest free ids there; a task no socket has room for takes
//     one CPU from each socket in turn;
//   - fcyclic deals each CPU to the next socket in turn.
//
// So a 4-task job on an idle node of 2 sockets × 8 cores gets 0,1,8,9
// (cyclic) or 0-3 (block), and 6 tasks on 2 × 4 cores get 0-2,4-6, as
// Slurm's CPU management guide shows. With r.oneThread it takes at most
// one thread of each core (the lowest free one). out is emptied first;
// given room for r.count it allocates nothing on a node whose method
// needs no socket lists.
func (n *node) selectCPUs(out []int, r cpuRequest) []int {
	out = out[:0]
	if r.count <= 0 {
		return out
	}
	oneThread := r.oneThread && n.lay.threads > 1
	if !oneThread && (r.dist == DistBlock || n.lay.flat()) {
		return n.freeCPUsInto(out, r.count, r.prefer, r.only)
	}
	g := 1 // CPUs per task, kept on one socket
	if r.dist != DistFCyclic {
		tasks := r.tasks
		if tasks <= 0 || tasks > r.count {
			tasks = r.count
		}
		g = (r.count + tasks - 1) / tasks
	}
	sel := cpuSelection{n: n, oneThread: oneThread, whole: oneThread && r.whole, g: g, block: r.dist == DistBlock}
	for pass := 0; pass < 2 && len(out) < r.count; pass++ {
		if pass == 1 && (r.only || r.prefer.IsEmpty()) {
			break
		}
		inPrefer := func(c int) bool { return true }
		if !r.prefer.IsEmpty() {
			want := pass == 0
			inPrefer = func(c int) bool { return r.prefer.Has(c) == want }
		}
		out = sel.run(out, r.count, inPrefer)
	}
	slices.Sort(out)
	return out
}

// cpuSelection is one run of selectCPUs over a node's sockets.
type cpuSelection struct {
	n         *node
	oneThread bool
	whole     bool // only cores with every thread free
	g         int  // CPUs per task
	block     bool // block over sockets (with oneThread)
	// lists holds each socket's eligible CPUs, lowest first, socket s's
	// at lists[start[s]:start[s+1]]; pos[s] is how many it has given.
	lists      []int
	start, pos []int
}

// run appends to out, up to count in all, CPUs that are free and
// eligible (ok), laid over the sockets by the method. ok excludes what out
// holds already: the first pass starts from an empty out and the second
// admits only CPUs outside the preferred set the first one took from.
func (sel *cpuSelection) run(out []int, count int, ok func(int) bool) []int {
	n, l := sel.n, sel.n.lay
	coreTaken := func(core int) bool {
		for _, c := range out {
			if l.coreOf(c) == core {
				return true
			}
		}
		return false
	}
	sel.lists, sel.start, sel.pos = sel.lists[:0], append(sel.start[:0], 0), sel.pos[:0]
	for s := range l.sockets {
		for core := s * l.cores; core < (s+1)*l.cores; core++ {
			if sel.oneThread && coreTaken(core) {
				continue
			}
			if sel.whole && n.coreBusy(core) {
				continue
			}
			for t := range l.threads {
				c := core*l.threads + t
				if n.cpuUsed[c>>6]&(1<<uint(c&63)) != 0 || !ok(c) {
					continue
				}
				sel.lists = append(sel.lists, c)
				if sel.oneThread {
					break // one thread of each core
				}
			}
		}
		sel.start = append(sel.start, len(sel.lists))
		sel.pos = append(sel.pos, 0)
	}
	avail := func(s int) int { return sel.start[s+1] - sel.start[s] - sel.pos[s] }
	take := func(s int) {
		out = append(out, sel.lists[sel.start[s]+sel.pos[s]])
		sel.pos[s]++
	}
	if sel.block {
		for s := 0; s < l.sockets && len(out) < count; s++ {
			for avail(s) > 0 && len(out) < count {
				take(s)
			}
		}
		return out
	}
	next := 0 // the socket the next task goes to
	for len(out) < count {
		want := min(sel.g, count-len(out))
		s := -1
		for i := range l.sockets {
			if avail((next+i)%l.sockets) >= want {
				s = (next + i) % l.sockets
				break
			}
		}
		if s >= 0 {
			for range want {
				take(s)
			}
			next = (s + 1) % l.sockets
			continue
		}
		// No socket has room for the whole task: one CPU from each socket
		// in turn.
		got := 0
		for i := 0; got < want && i < l.sockets*want; i++ {
			if t := (next + i) % l.sockets; avail(t) > 0 {
				take(t)
				got++
			}
		}
		if got == 0 {
			break // nothing eligible is left
		}
		next = (next + 1) % l.sockets
	}
	return out
}

// coreBusy reports whether a thread of core (Slurm's core index) is held.
func (n *node) coreBusy(core int) bool {
	for t := range n.lay.threads {
		if c := core*n.lay.threads + t; n.cpuUsed[c>>6]&(1<<uint(c&63)) != 0 {
			return true
		}
	}
	return false
}
