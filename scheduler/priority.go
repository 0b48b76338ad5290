package scheduler

import (
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/priority"
)

// PriorityConfig turns on Slurm's multifactor priority (PriorityType=
// priority/multifactor). Without it (Config.Priority nil) every job has
// priority 0 and the queue is first come, first served.
type PriorityConfig struct {
	// Engine holds the weights (PriorityWeight*), PriorityMaxAge,
	// PriorityFavorSmall, PriorityFlags, TRES weights and the optional
	// site-factor hook. Its Registry is set by the scheduler: TRES weight
	// names must be TRES the cluster has.
	Engine priority.Config
	// CalcPeriod is PriorityCalcPeriod: how often fair-share is refreshed
	// and every pending job's priority recomputed. Zero means 5 minutes.
	// New jobs get a priority at submit.
	//
	// The recalculations happen at fixed boundaries of the caller's
	// clock, CalcEpoch + k·CalcPeriod (by default multiples of CalcPeriod
	// in Unix time), not CalcPeriod after the last one: the first
	// Schedule call at or after a boundary recomputes every priority as of
	// the boundary — ages are measured to it, the FairShareSource is asked
	// for its tree as of it — so how often the caller calls Schedule
	// changes no priority (see the package documentation, "Periodic work").
	// A call that comes after several boundaries were passed without one
	// computes the latest boundary's priorities only.
	CalcPeriod time.Duration
	// CalcEpoch is the origin of the recalculation boundaries; zero means
	// the Unix epoch. Slurm recalculates every PriorityCalcPeriod from
	// the time slurmctld started: setting CalcEpoch to the controller's
	// start time gives Slurm's phase.
	CalcEpoch time.Time `json:",omitzero"`
	// FairShare supplies the association tree with its decayed usage
	// (usually read from the accounting ledger). Nil leaves the fair-share
	// factor at 0.
	FairShare FairShareSource
	// DampeningFactor is FairShareDampeningFactor for classic fair-share.
	DampeningFactor uint16
	// QOSPriority gives each QOS name its priority, the QOS factor's input.
	QOSPriority map[string]uint32
}

// FairShareSource supplies the association tree and its decayed usage
// (raw usage of each association's subtree, sshare's RawUsage) as of the
// time it is given: the priority recalculation boundary, which may be
// before the time of the Schedule call that asks (see
// PriorityConfig.CalcPeriod). A source whose answer depends only on that
// time and on the usage recorded up to it keeps priorities independent of
// when Schedule is called.
// It is the seam between the pure scheduler and the ledger: an
// implementation may read a database, and its errors are returned by
// Schedule. The scheduler keeps nothing of the returned slice (it copies
// what it needs), so an implementation may reuse it from call to call.
type FairShareSource interface {
	FairShareTree(now time.Time) ([]priority.Association, error)
}

// FairShareFunc adapts a function to FairShareSource.
type FairShareFunc func(now time.Time) ([]priority.Association, error)

// FairShareTree calls f.
func (f FairShareFunc) FairShareTree(now time.Time) ([]priority.Association, error) { return f(now) }

const defaultCalcPeriod = 5 * time.Minute

// prio is the scheduler's priority state.
type prio struct {
	cfg    PriorityConfig
	engine *priority.Engine
	tree   *priority.Tree
	// assocs is the association list tree was last computed from (its
	// own copy, without TRESUsage, which a tree that is not in the
	// dominant-share mode ignores), and ups the update scratch: a list
	// with the same structure only updates the tree's usage.
	assocs []priority.Association
	ups    []priority.UsageUpdate
	// in is computePriority's input, reused (the engine takes a pointer,
	// which would otherwise move each job's input to the heap).
	in priority.Job
	// lastCalc is the boundary (see calcBoundary) of the last
	// recalculation; zero before the first.
	lastCalc time.Time
	partTRES []gres.Vector // per partition: total TRES, the TRES factors' denominators
}

func (s *Scheduler) initPriority(pc *PriorityConfig) error {
	if pc.CalcPeriod < 0 {
		return fmt.Errorf("%w: Priority.CalcPeriod %v is negative", ErrInvalidConfig, pc.CalcPeriod)
	}
	if pc.CalcPeriod == 0 {
		pc.CalcPeriod = defaultCalcPeriod
	}
	cl := priority.Cluster{Nodes: uint32(len(s.nodes))}
	for i := range s.nodes {
		cl.CPUs += uint32(s.nodes[i].cfg.CPUs)
	}
	p := &prio{cfg: *pc, partTRES: make([]gres.Vector, len(s.parts))}
	for i := range s.parts {
		cl.MaxPartitionJobFactor = max(cl.MaxPartitionJobFactor, uint16(s.parts[i].cfg.PriorityJobFactor))
		t := s.reg.NewVector()
		for n := s.parts[i].nodes.Next(0); n >= 0; n = s.parts[i].nodes.Next(n + 1) {
			if err := t.AddInPlace(s.nodes[n].capacity); err != nil {
				return fmt.Errorf("%w: partition %q: %w", ErrInvalidConfig, s.parts[i].cfg.Name, err)
			}
		}
		p.partTRES[i] = t
	}
	for _, q := range pc.QOSPriority {
		cl.MaxQOSPriority = max(cl.MaxQOSPriority, q)
	}
	if s.pol != nil && pc.QOSPriority == nil {
		for _, q := range s.pol.p.Config().QOS {
			cl.MaxQOSPriority = max(cl.MaxQOSPriority, q.Priority)
		}
	}
	ec := pc.Engine
	ec.Registry = s.reg
	e, err := priority.NewEngine(ec, cl)
	if err != nil {
		return fmt.Errorf("%w: priority: %w", ErrInvalidConfig, err)
	}
	p.engine = e
	s.prio = p
	return nil
}

// refreshPriorities rebuilds the fair-share tree and recomputes every
// pending job's priority, as of the recalculation boundary at or before
// now, when no recalculation was made for that boundary yet.
//
// The fair-share tree is fs, the one the cycle's event carries: Apply
// read it from the FairShareSource into the event (see ScheduleEvent),
// so the source is never asked here; nil leaves the tree as it is.
func (s *Scheduler) refreshPriorities(now time.Time, fs *FairShareTree) error {
	p := s.prio
	if !s.priorityDue(now) {
		return nil
	}
	s.notePrioState()
	if fs != nil {
		if err := p.updateTree(fs.Assocs); err != nil {
			return fmt.Errorf("scheduler: fair-share tree: %w", err)
		}
		s.notePrioTree()
	}
	at := p.calcBoundary(now)
	p.lastCalc = at
	jobs := make([]*job, 0, s.pending.Len())
	s.pending.Ascend(func(j *job) bool { jobs = append(jobs, j); return true })
	s.mutPending().Clear(false)
	for _, j := range jobs {
		s.notePriority(j)
		if err := s.computePriority(at, j); err != nil {
			// Inputs were validated at submit; restore the queue and report.
			for _, j := range jobs {
				s.mutPending().ReplaceOrInsert(j)
			}
			return err
		}
		s.mutPending().ReplaceOrInsert(j)
	}
	return nil
}

// priorityDue reports whether a cycle at now recomputes priorities: the
// boundary at or before now has had no recalculation (or none was made
// yet).
func (s *Scheduler) priorityDue(now time.Time) bool {
	p := s.prio
	return p != nil && (p.lastCalc.IsZero() || p.lastCalc.Before(p.calcBoundary(now)))
}

// calcBoundary is the last recalculation boundary at or before t:
// CalcEpoch + k·CalcPeriod.
func (p *prio) calcBoundary(t time.Time) time.Time {
	epoch := p.cfg.CalcEpoch
	if epoch.IsZero() {
		epoch = unixEpoch()
	}
	return periodStart(t, epoch, p.cfg.CalcPeriod)
}

// FairShareTree is the fair-share input of one priority recalculation:
// the associations with their decayed usage, as a FairShareSource
// returned them.
type FairShareTree struct {
	Assocs []priority.Association
}

// readFairShare returns the fair-share tree a cycle at now recomputes
// priorities with, read from the FairShareSource as of the recalculation
// boundary (a copy: the source may reuse its slice), or nil when no
// recalculation is due or there is no source.
func (s *Scheduler) readFairShare(now time.Time) (*FairShareTree, error) {
	if !s.priorityDue(now) {
		return nil, nil
	}
	return readFairShareFrom(s.prio.cfg.FairShare, s.prio.calcBoundary(now))
}

// readFairShareFrom reads src's tree as of now (a copy); nil for a nil
// source.
func readFairShareFrom(src FairShareSource, now time.Time) (*FairShareTree, error) {
	if src == nil {
		return nil, nil
	}
	assocs, err := src.FairShareTree(now)
	if err != nil {
		return nil, fmt.Errorf("scheduler: fair-share tree: %w", err)
	}
	out := &FairShareTree{Assocs: slices.Clone(assocs)}
	for k := range out.Assocs {
		if m := out.Assocs[k].TRESUsage; m != nil {
			out.Assocs[k].TRESUsage = slices.Clone(m)
		}
	}
	return out, nil
}

// updateTree brings the fair-share tree to assocs: when only usage changed
// since the last list (the same associations in the same order, with the
// same parents and shares) the tree's UpdateUsage recomputes what the
// changes touch, which is bit for bit what a new tree computes; otherwise
// a new tree is built. On error the tree is left as it was.
func (p *prio) updateTree(assocs []priority.Association) error {
	if p.tree != nil && sameAssocShape(p.assocs, assocs) {
		ups := p.ups[:0]
		for k := range assocs {
			if u := assocs[k].Usage; u != p.assocs[k].Usage {
				ups = append(ups, priority.UsageUpdate{Index: k, Usage: u})
			}
		}
		p.ups = ups
		if err := p.tree.UpdateUsage(ups...); err != nil {
			return err
		}
	} else {
		tree, err := p.newTree(assocs)
		if err != nil {
			return err
		}
		p.tree = tree
	}
	// Keep a copy: the source may reuse what it returned.
	p.assocs = append(p.assocs[:0], assocs...)
	for k := range p.assocs {
		p.assocs[k].TRESUsage = nil
	}
	return nil
}

// newTree builds the fair-share tree of assocs with the configured
// algorithm (each association's usage is its subtree's).
func (p *prio) newTree(assocs []priority.Association) (*priority.Tree, error) {
	return priority.NewTree(assocs, priority.TreeOptions{
		Flags: p.cfg.Engine.Flags, DampeningFactor: p.cfg.DampeningFactor, UsageIncludesDescendants: true,
	})
}

// sameAssocShape reports whether two association lists hold the same
// associations in the same order with the same parents and shares: they
// differ at most in usage.
func sameAssocShape(a, b []priority.Association) bool {
	return slices.EqualFunc(a, b, func(x, y priority.Association) bool {
		return x.Account == y.Account && x.User == y.User && x.Partition == y.Partition && x.Parent == y.Parent &&
			x.Shares == y.Shares && x.SharesParent == y.SharesParent
	})
}

// computePriority sets j.Priority and its breakdown. j must not be in the
// pending index while its priority changes.
func (s *Scheduler) computePriority(now time.Time, j *job) error {
	p := s.prio
	in := &p.in
	var err error
	if *in, err = s.priorityInput(j); err != nil {
		return fmt.Errorf("scheduler: job %d: %w", j.ID, err)
	}
	in.PrevPriority = j.breakdown.Priority // the computed one, under a hold or a fixed priority too
	if p.tree != nil {
		if i, ok := p.tree.Lookup(j.Spec.Account, j.Spec.User); ok {
			in.FairShare = p.tree.Factor(i)
		}
	}
	if err := p.engine.ComputeInto(now, in, &j.breakdown); err != nil {
		return fmt.Errorf("scheduler: job %d: %w", j.ID, err)
	}
	j.Priority = j.overridePriority(j.breakdown.Priority)
	return nil
}

// PriorityBreakdown returns the multifactor breakdown behind a pending
// job's priority (what sprio shows), as of the last recomputation. It
// reports false for an unknown job or when multifactor priority is off.
func (s *Scheduler) PriorityBreakdown(id JobID) (priority.Breakdown, bool) {
	j, ok := s.jobs[id]
	if !ok || s.prio == nil {
		return priority.Breakdown{}, false
	}
	b := j.breakdown
	b.TRES = append([]priority.TRESFactor(nil), b.TRES...)
	return b, true
}

// Sprio formats the pending jobs' priorities like Slurm's sprio, in queue
// order. It returns "" when multifactor priority is off.
func (s *Scheduler) Sprio(f priority.SprioFormat) string {
	if s.prio == nil {
		return ""
	}
	rows := make([]priority.SprioRow, 0, s.pending.Len())
	s.pending.Ascend(func(j *job) bool {
		b := j.breakdown
		rows = append(rows, priority.SprioRow{
			JobID: uint64(j.ID), Partition: j.Partition, User: j.Spec.User, Account: j.Spec.Account, QOS: j.Spec.QOS, Breakdown: &b,
		})
		return true
	})
	return s.prio.engine.FormatSprio(rows, f)
}

// Shares returns the sshare-like rows of the fair-share tree as of the
// last recomputation, or nil when there is none.
func (s *Scheduler) Shares() []priority.ShareRow {
	if s.prio == nil || s.prio.tree == nil {
		return nil
	}
	return s.prio.tree.Shares()
}

// Sshare formats the fair-share tree like Slurm's sshare, or returns ""
// when there is none.
func (s *Scheduler) Sshare(f priority.ShareFormat) string {
	if s.prio == nil || s.prio.tree == nil {
		return ""
	}
	return s.prio.tree.Format(f)
}

// qosPriority is the job's QOS priority: from PriorityConfig.QOSPriority
// when set, else from the policy's QOS.
func (s *Scheduler) qosPriority(j *job) uint32 {
	if s.prio.cfg.QOSPriority != nil || s.pol == nil {
		return s.prio.cfg.QOSPriority[j.Spec.QOS]
	}
	return s.subjectOf(j).QOSPriority()
}

// priorityInput is the priority engine's input for j (as computePriority
// builds it), without the fair-share factor.
func (s *Scheduler) priorityInput(j *job) (priority.Job, error) {
	p := s.prio
	part := &s.parts[j.part]
	total, err := j.totalRequest()
	if err != nil {
		return priority.Job{}, err
	}
	return priority.Job{
		ID: uint64(j.ID), Submit: j.SubmitTime, AccrueStart: j.EligibleTime, Nodes: uint32(j.nodes),
		CPUs: uint32(min(total[gres.CPU], 1<<31)), TimeLimit: j.TimeLimit, PartitionMaxTime: part.cfg.MaxTime,
		PartitionJobFactor: uint16(part.cfg.PriorityJobFactor), QOSPriority: s.qosPriority(j),
		TRES: total, PartitionTRES: p.partTRES[j.part], Nice: int64(j.Spec.Nice),
	}, nil
}
