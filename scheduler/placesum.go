package scheduler

import (
	"slices"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
)

// Placement summaries: which nodes hold a class of jobs now.
//
// place asks fitsNow of every candidate node (with a topology, of every
// one: the graph chooses among all the nodes that fit). Over one main
// pass, most jobs of a class (same shape, exclusive or not, and the few
// request fields fitsNow reads beyond it) get the same answer from a node
// until the node changes, and the pass changes only the nodes it starts
// jobs on (or frees, preempting). fitMemo keeps, per class, the nodes of
// the shape that fit now by counts and those whose answer depends on more
// than the class (the device or CPU choice, shared CPUs, --exclusive=user
// jobs on the node, a reboot), which are asked again each time; a node is
// judged for a class when a job of it first asks about the node. Every
// node change of the pass goes through saveNode (the journal must see it
// to take it back), which notes the node as dirty; a class forgets its
// judgement of its dirty nodes before it is used. The memo lives for one pass of
// Schedule: begun empty when the pass starts and not used after it, it is
// a pure cache, and a rollback has nothing of it to restore.

// fitMemo is the main pass's summaries (see above).
type fitMemo struct {
	// on is set while the main pass runs: the memo may be used, and
	// saveNode notes the nodes it is told of in dirty.
	on bool
	// off turns the memo off for good (tests: the plain scan decides).
	off bool
	// classes[:n] are the pass's classes; the rest keep their sets for
	// reuse.
	classes []*fitClass
	n       int
	dirty   []int
	// extra and tmp are fitSet's scratch.
	extra, tmp topology.NodeSet
	// served counts the jobs the memo answered for (tests).
	served uint64
}

// fitClass is one class of jobs and what the memo knows of its shape's
// nodes now.
type fitClass struct {
	sh        *shape
	exclusive bool
	oneThread bool
	devs      bool
	perNode   gres.Vector
	// judged holds the capable nodes judged since they last changed (a
	// node is judged when a job of the class first asks about it): of
	// them, fit holds those that fit by counts, recheck those that fitsNow
	// must judge for each job; a judged node in neither does not fit.
	judged, fit, recheck topology.NodeSet
	// seen is how many of the memo's dirty nodes the sets reflect.
	seen int
}

// begin starts the memo for a main pass (on set) or stops it.
func (m *fitMemo) begin(on bool) {
	m.on = on && !m.off
	m.n = 0
	m.dirty = m.dirty[:0]
}

// touched notes that node i is about to change.
func (m *fitMemo) touched(i int) {
	if m.on && m.n > 0 {
		m.dirty = append(m.dirty, i)
	}
}

// fitClassOf returns the memo's class for job j, brought up to date, or
// nil when the memo does not serve the job: outside the main pass, or for
// a job whose every node answer depends on the choice of its CPUs and
// devices (enforce-binding, per socket) or on the users of the nodes
// (--exclusive=user).
func (s *Scheduler) fitClassOf(j *job) *fitClass {
	m := &s.fits
	if !m.on || !s.inPass || j.shape == nil || j.exclUser() || j.Spec.EnforceBinding || j.Spec.GPUsPerSocket > 0 {
		return nil
	}
	one, devs := j.Spec.Hint.oneThreadPerCore(), len(j.devReq) > 0
	for _, c := range m.classes[:m.n] {
		if c.sh == j.shape && c.exclusive == j.Spec.Exclusive && c.oneThread == one && c.devs == devs && slices.Equal(c.perNode, j.perNode) {
			for _, i := range m.dirty[c.seen:] {
				c.judged.Remove(i) // judged again when asked about
			}
			c.seen = len(m.dirty)
			m.served++
			return c
		}
	}
	if m.n == len(m.classes) {
		m.classes = append(m.classes, &fitClass{})
	}
	c := m.classes[m.n]
	m.n++
	*c = fitClass{sh: j.shape, exclusive: j.Spec.Exclusive, oneThread: one, devs: devs,
		perNode: append(c.perNode[:0], j.perNode...), judged: c.judged, fit: c.fit, recheck: c.recheck, seen: len(m.dirty)}
	if c.judged.Len() != len(s.nodes) {
		c.judged, c.fit, c.recheck = topology.NewNodeSet(len(s.nodes)), topology.NewNodeSet(len(s.nodes)), topology.NewNodeSet(len(s.nodes))
	} else {
		c.judged.Reset()
		c.fit.Reset()
		c.recheck.Reset()
	}
	m.served++
	return c
}

// judgeFit files node i (capable for the class's shape) in c's sets, as
// fitsNow would judge job j of the class there now: in fit when it
// holds j by counts alone, in recheck when the answer depends on more
// than the class, in neither when it cannot hold j. The tests are
// fitsNow's, in its order, for a job of the class.
func (s *Scheduler) judgeFit(j *job, c *fitClass, i int) {
	c.judged.Add(i)
	c.fit.Remove(i)
	c.recheck.Remove(i)
	n := &s.nodes[i]
	switch {
	case c.sh.needsReboot(i) || n.exclUsers > 0 || n.sharing > 0:
		// A reboot (judged while placing for one), another user's
		// --exclusive=user job, CPUs the job may share: not the class's
		// to say.
		c.recheck.Add(i)
	case c.exclusive && len(n.jobs) > 0:
	case !s.fitsFree(j, n, j.perNode):
		// Without shared CPUs on the node: the counts of its free TRES.
	case (c.oneThread && n.lay.threads > 1) || (c.devs && n.cfg.Devices.Shares != nil) || n.lay.unitSize(s.crUnit) > 1:
		// choiceDecides, sharedChoice, cpuChoiceDecides: the choice
		// decides, for each job.
		c.recheck.Add(i)
	default:
		c.fit.Add(i)
	}
}

// fitsNowIn reports fitsNow(j, i) for a node i of cand, through the
// class c of job j (nil: the memo does not serve it, fitsNow judges).
func (s *Scheduler) fitsNowIn(j *job, c *fitClass, i int) bool {
	if c == nil {
		return s.fitsNow(j, i)
	}
	if !c.judged.Has(i) && c.sh.capable.Has(i) {
		s.judgeFit(j, c, i)
	}
	if c.fit.Has(i) {
		return true
	}
	if c.recheck.Has(i) || !c.sh.capable.Has(i) {
		return s.fitsNow(j, i)
	}
	return false
}

// fitSet fills s.fit with the nodes of cand where job j (of class c; nil:
// one the memo does not serve) fits now — those where fitsNow holds — and
// returns how many.
func (s *Scheduler) fitSet(j *job, c *fitClass, cand topology.NodeSet) int {
	if c == nil {
		s.fit.Reset()
		k := 0
		for i := cand.Next(0); i >= 0; i = cand.Next(i + 1) {
			if s.fitsNow(j, i) {
				s.fit.Add(i)
				k++
			}
		}
		return k
	}
	m := &s.fits
	if m.extra.Len() != cand.Len() {
		m.extra, m.tmp = topology.NewNodeSet(cand.Len()), topology.NewNodeSet(cand.Len())
	}
	// Judge the capable nodes of cand not judged yet.
	m.tmp.CopyFrom(cand)
	m.tmp.IntersectWith(c.sh.capable)
	m.tmp.Subtract(c.judged)
	for i := m.tmp.Next(0); i >= 0; i = m.tmp.Next(i + 1) {
		s.judgeFit(j, c, i)
	}
	s.fit.CopyFrom(cand)
	s.fit.IntersectWith(c.fit)
	k := s.fit.Count()
	// The nodes fitsNow judges: those to recheck, and any not capable
	// (none, when cand comes from the shape's capable nodes).
	m.extra.CopyFrom(cand)
	m.extra.Subtract(c.sh.capable)
	m.tmp.CopyFrom(cand)
	m.tmp.IntersectWith(c.recheck)
	m.extra.UnionWith(m.tmp)
	for i := m.extra.Next(0); i >= 0; i = m.extra.Next(i + 1) {
		if s.fitsNow(j, i) {
			s.fit.Add(i)
			k++
		}
	}
	return k
}
