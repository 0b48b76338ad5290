package scheduler

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/topology"
)

// Runtime administration of partitions, QOS and associations: what
// scontrol (create, update, delete partition) and sacctmgr (add, modify,
// delete qos, account, user) do to a running Slurm. Each change is an
// event, validated as New validates the configuration; a change that fails
// changes nothing. Running jobs are never judged again: a lowered limit,
// a partition taken DOWN or a QOS removed from an AllowQOS list holds new
// starts only. The current configuration is what Partitions and
// Policy().Config() return. A scheduler built without a policy (no
// Config.Policy, no partition policy fields) gets one with its first QOS,
// association or partition policy change, which then counts the jobs
// already queued and running; a job naming a QOS or association the new
// policy lacks refuses that change (ErrInUse).

// The administration event kinds.
const (
	KindAddPartition    EventKind = "add_partition"
	KindUpdatePartition EventKind = "update_partition"
	KindRemovePartition EventKind = "remove_partition"
	KindAddQOS          EventKind = "add_qos"
	KindUpdateQOS       EventKind = "update_qos"
	KindRemoveQOS       EventKind = "remove_qos"
	KindPutAssoc        EventKind = "put_assoc"
	KindRemoveAssoc     EventKind = "remove_assoc"
)

// AddPartitionEvent creates a partition (scontrol create partition), after
// the existing ones (see AddPartition).
type AddPartitionEvent struct{ Partition PartitionConfig }

// Kind returns KindAddPartition.
func (AddPartitionEvent) Kind() EventKind { return KindAddPartition }

func (e AddPartitionEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.changePartitions(now, KindAddPartition, e.Partition.Name, func(ps []PartitionConfig) ([]PartitionConfig, error) {
		if _, dup := s.partByName[e.Partition.Name]; dup {
			return nil, fmt.Errorf("%w: partition %q exists (update it instead)", ErrInvalidConfig, e.Partition.Name)
		}
		return moveDefault(append(ps, clonePartitionConfig(e.Partition)), len(ps)), nil
	})
}

// AddPartition creates a partition after the existing ones, validated as
// New validates Config.Partitions (a unique name, known nodes, limits in
// range, policy fields that the policy accepts). Marked Default, it
// becomes the default partition in place of the one that was.
func (s *Scheduler) AddPartition(now time.Time, p PartitionConfig) error {
	_, err := s.Apply(now, AddPartitionEvent{Partition: p})
	return err
}

// UpdatePartitionEvent replaces the configuration of the partition named
// Partition.Name (see UpdatePartition).
type UpdatePartitionEvent struct{ Partition PartitionConfig }

// Kind returns KindUpdatePartition.
func (UpdatePartitionEvent) Kind() EventKind { return KindUpdatePartition }

func (e UpdatePartitionEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.changePartitions(now, KindUpdatePartition, e.Partition.Name, func(ps []PartitionConfig) ([]PartitionConfig, error) {
		i, ok := s.partByName[e.Partition.Name]
		if !ok {
			return nil, fmt.Errorf("%w %q", ErrUnknownPartition, e.Partition.Name)
		}
		ps[i] = clonePartitionConfig(e.Partition)
		return moveDefault(ps, i), nil
	})
}

// UpdatePartition replaces the configuration of the partition p.Name
// (scontrol update PartitionName=…): its state, limits, nodes, priority
// tier and job factor, QOS, access lists, billing and preemption settings.
// Read the current one with Partition, change what is to change, and
// pass it back. Marking it Default makes it the default partition in
// place of the one that was (as scontrol update Default=YES does). Queued and running jobs keep what was decided at their
// submission (time limit, memory defaults, whole-node allocation); from
// the next cycle on they are judged by the new settings: a DOWN partition
// starts nothing, a lower MaxTime holds longer jobs, nodes taken out are
// no longer offered to its jobs (those running there go on), a new tier
// reorders the queue, a new PriorityJobFactor counts at the next priority
// recalculation.
func (s *Scheduler) UpdatePartition(now time.Time, p PartitionConfig) error {
	_, err := s.Apply(now, UpdatePartitionEvent{Partition: p})
	return err
}

// moveDefault makes ps[i], when it is marked Default, the only default
// partition: as in Slurm, marking one partition the default takes the
// mark from the one that had it.
func moveDefault(ps []PartitionConfig, i int) []PartitionConfig {
	if ps[i].Default {
		for k := range ps {
			ps[k].Default = k == i
		}
	}
	return ps
}

// RemovePartitionEvent deletes a partition (see RemovePartition).
type RemovePartitionEvent struct{ Name string }

// Kind returns KindRemovePartition.
func (RemovePartitionEvent) Kind() EventKind { return KindRemovePartition }

func (e RemovePartitionEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.changePartitions(now, KindRemovePartition, e.Name, func(ps []PartitionConfig) ([]PartitionConfig, error) {
		i, ok := s.partByName[e.Name]
		if !ok {
			return nil, fmt.Errorf("%w %q", ErrUnknownPartition, e.Name)
		}
		if len(ps) == 1 {
			return nil, fmt.Errorf("%w: partition %q is the last one (at least one is required)", ErrInvalidConfig, e.Name)
		}
		if n := s.liveJobs(func(j *job) bool { return j.part == i }); n > 0 {
			return nil, fmt.Errorf("%w: partition %q holds %d pending or running job(s)", ErrInUse, e.Name, n)
		}
		return slices.Delete(ps, i, i+1), nil
	})
}

// RemovePartition deletes a partition (scontrol delete PartitionName=…).
// It is refused (ErrInUse) while any pending, running or suspended job is
// in it; drain it first (State PartitionDrain) and let its jobs end.
// Finished jobs of the partition keep its name. When it was the default
// partition, the first one becomes the default, as at New.
func (s *Scheduler) RemovePartition(now time.Time, name string) error {
	_, err := s.Apply(now, RemovePartitionEvent{Name: name})
	return err
}

// ErrInUse reports an administrative removal refused because jobs or
// other entities still use what it would remove.
var ErrInUse = errors.New("in use")

// AddQOSEvent creates a QOS (see AddQOS).
type AddQOSEvent struct{ QOS policy.QOS }

// Kind returns KindAddQOS.
func (AddQOSEvent) Kind() EventKind { return KindAddQOS }

func (e AddQOSEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.changePolicy(now, KindAddQOS, e.QOS.Name, func(p *policy.Policy) (*policy.Policy, error) {
		if _, dup := p.QOS(e.QOS.Name); dup {
			return nil, fmt.Errorf("%w: QOS %q exists (update it instead)", ErrInvalidConfig, e.QOS.Name)
		}
		return p.WithQOS(e.QOS)
	})
}

// AddQOS defines a new QOS (sacctmgr add qos), validated as policy.New
// validates Config.QOS: a unique name, limits in range and of known TRES,
// Preempt naming existing QOS without a cycle.
func (s *Scheduler) AddQOS(now time.Time, q policy.QOS) error {
	_, err := s.Apply(now, AddQOSEvent{QOS: q})
	return err
}

// UpdateQOSEvent replaces the definition of the QOS named QOS.Name (see
// UpdateQOS).
type UpdateQOSEvent struct{ QOS policy.QOS }

// Kind returns KindUpdateQOS.
func (UpdateQOSEvent) Kind() EventKind { return KindUpdateQOS }

func (e UpdateQOSEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.changePolicy(now, KindUpdateQOS, e.QOS.Name, func(p *policy.Policy) (*policy.Policy, error) {
		if _, ok := p.QOS(e.QOS.Name); !ok {
			return nil, fmt.Errorf("%w %q", policy.ErrUnknownQOS, e.QOS.Name)
		}
		return p.WithQOS(e.QOS)
	})
}

// UpdateQOS replaces a QOS's definition (sacctmgr modify qos): its
// priority, limits, preemption list and mode, grace time, flags. Read the
// current one with Policy().QOS(name). Running jobs are not judged again
// (a lowered limit holds new starts only); a new priority reaches the
// multifactor QOS factor (normalised by the largest QOS priority, which
// follows the change), and pending jobs' priorities at the next
// recalculation (PriorityConfig.CalcPeriod) — unless
// PriorityConfig.QOSPriority gives the QOS priorities, which then stand.
func (s *Scheduler) UpdateQOS(now time.Time, q policy.QOS) error {
	_, err := s.Apply(now, UpdateQOSEvent{QOS: q})
	return err
}

// RemoveQOSEvent deletes a QOS (see RemoveQOS).
type RemoveQOSEvent struct{ Name string }

// Kind returns KindRemoveQOS.
func (RemoveQOSEvent) Kind() EventKind { return KindRemoveQOS }

func (e RemoveQOSEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.changePolicy(now, KindRemoveQOS, e.Name, func(p *policy.Policy) (*policy.Policy, error) {
		if _, ok := p.QOS(e.Name); !ok {
			return nil, fmt.Errorf("%w %q", policy.ErrUnknownQOS, e.Name)
		}
		if n := s.liveJobs(func(j *job) bool { return j.Spec.QOS == e.Name || s.subjectOf(j).Ref().QOS == e.Name }); n > 0 {
			return nil, fmt.Errorf("%w: QOS %q is the QOS of %d pending or running job(s)", ErrInUse, e.Name, n)
		}
		np, err := p.WithoutQOS(e.Name)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInUse, err)
		}
		return np, nil
	})
}

// RemoveQOS deletes a QOS (sacctmgr delete qos). It is refused (ErrInUse)
// while a pending, running or suspended job has it, or while the cluster's
// DefaultQOS, another QOS's Preempt list, a partition (QOS, AllowQOS,
// DenyQOS) or an association (QOS list, DefaultQOS) names it.
func (s *Scheduler) RemoveQOS(now time.Time, name string) error {
	_, err := s.Apply(now, RemoveQOSEvent{Name: name})
	return err
}

// PutAssocEvent adds an association or changes the one with the same
// Account, User and Partition (see PutAssoc).
type PutAssocEvent struct{ Assoc policy.Assoc }

// Kind returns KindPutAssoc.
func (PutAssocEvent) Kind() EventKind { return KindPutAssoc }

func (e PutAssocEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	a := e.Assoc
	return Result{}, s.changePolicy(now, KindPutAssoc, assocName(a.Account, a.User, a.Partition), func(p *policy.Policy) (*policy.Policy, error) {
		np, err := p.WithAssoc(a)
		if err != nil {
			return nil, err
		}
		if len(p.Config().Assocs) == 0 {
			// The first association turns enforcement on: every job in
			// the system must then have one.
			if n := s.liveJobs(func(j *job) bool { return s.resolveUnder(np, j) != nil }); n > 0 {
				return nil, fmt.Errorf("%w: the first association would enforce associations, and %d pending or running job(s) have none", ErrInUse, n)
			}
		}
		return np, nil
	})
}

// PutAssoc adds an account or user association, or changes the existing
// one with the same Account, User and Partition (sacctmgr add/modify
// account and user): its parent account, limits, QOS list, default QOS.
// It is validated as policy.New validates Config.Assocs (the parent and
// the account exist, names are valid, limits in range, QOS known). Jobs
// keep running whatever the new limits; queued jobs are held by them from
// the next cycle. The fair-share shares are not part of the policy: they
// come with the FairShareSource's tree (the ledger's; see package
// scheduler/ledger, which keeps both from one source).
func (s *Scheduler) PutAssoc(now time.Time, a policy.Assoc) error {
	_, err := s.Apply(now, PutAssocEvent{Assoc: a})
	return err
}

// RemoveAssocEvent deletes an association (see RemoveAssoc).
type RemoveAssocEvent struct {
	Account string
	// User is empty for an account association.
	User string `json:",omitempty"`
	// Partition is set for a user's partition-specific association.
	Partition string `json:",omitempty"`
}

// Kind returns KindRemoveAssoc.
func (RemoveAssocEvent) Kind() EventKind { return KindRemoveAssoc }

func (e RemoveAssocEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	k := policy.AssocKey{Account: e.Account, User: e.User, Partition: e.Partition}
	return Result{}, s.changePolicy(now, KindRemoveAssoc, assocName(e.Account, e.User, e.Partition), func(p *policy.Policy) (*policy.Policy, error) {
		if k.User != "" {
			// An account's jobs are its users' (an account with users is
			// refused below).
			n := s.liveJobs(func(j *job) bool { a, ok := s.subjectOf(j).Association(); return ok && a == k })
			if n > 0 {
				return nil, fmt.Errorf("%w: association %s has %d pending or running job(s)", ErrInUse, assocName(e.Account, e.User, e.Partition), n)
			}
		}
		if k.User == "" {
			if n := p.Children(k.Account); n > 0 {
				return nil, fmt.Errorf("%w: %s has %d child association(s) (sub-accounts or users); remove them first", ErrInUse, assocName(e.Account, "", ""), n)
			}
		}
		np, err := p.WithoutAssoc(k)
		if err != nil {
			return nil, err
		}
		// A job of a removed partition-specific association would fall
		// back to the user's general one; none may be left without.
		if n := s.liveJobs(func(j *job) bool { return s.resolveUnder(np, j) != nil }); n > 0 {
			return nil, fmt.Errorf("%w: %d pending or running job(s) would have no association", ErrInUse, n)
		}
		return np, nil
	})
}

// RemoveAssoc deletes an association (sacctmgr delete account or user).
// It is refused (ErrInUse) while jobs of it are pending, running or
// suspended, or while an account still has sub-accounts or users. The decayed usage reported for it is forgotten.
func (s *Scheduler) RemoveAssoc(now time.Time, account, user, partition string) error {
	_, err := s.Apply(now, RemoveAssocEvent{Account: account, User: user, Partition: partition})
	return err
}

func assocName(account, user, partition string) string {
	switch {
	case user == "":
		return "account " + strconv.Quote(account)
	case partition == "":
		return fmt.Sprintf("user %q in account %q", user, account)
	}
	return fmt.Sprintf("user %q in account %q partition %q", user, account, partition)
}

// Partitions returns the current configuration of every partition, in
// index order (as at New, with runtime changes applied; PriorityTier and
// PriorityJobFactor with their defaults filled in).
func (s *Scheduler) Partitions() []PartitionConfig {
	out := make([]PartitionConfig, len(s.parts))
	for i := range s.parts {
		out[i] = clonePartitionConfig(s.parts[i].cfg)
	}
	return out
}

// Partition returns the current configuration of the named partition.
func (s *Scheduler) Partition(name string) (PartitionConfig, bool) {
	i, ok := s.partByName[name]
	if !ok {
		return PartitionConfig{}, false
	}
	return clonePartitionConfig(s.parts[i].cfg), true
}

func clonePartitionConfig(p PartitionConfig) PartitionConfig {
	p.Nodes = slices.Clone(p.Nodes)
	p.AllowAccounts, p.DenyAccounts = slices.Clone(p.AllowAccounts), slices.Clone(p.DenyAccounts)
	p.AllowQOS, p.DenyQOS = slices.Clone(p.AllowQOS), slices.Clone(p.DenyQOS)
	return p
}

// liveJobs counts the pending, running and suspended jobs for which f holds.
func (s *Scheduler) liveJobs(f func(*job) bool) int {
	n := 0
	for _, j := range s.jobs {
		switch j.State {
		case JobPending, JobRunning, JobSuspended:
			if f(j) {
				n++
			}
		}
	}
	return n
}

// currentPolicy returns the scheduler's policy, or, when it has none
// (Config.Policy nil at New), the empty policy over its partitions that a
// first policy change starts from.
func (s *Scheduler) currentPolicy() (*policy.Policy, error) {
	if s.pol != nil {
		return s.pol.p, nil
	}
	var cfg policy.Config
	for i := range s.parts {
		cfg.Partitions = append(cfg.Partitions, s.parts[i].cfg.policyPartition())
	}
	p, err := policy.New(s.reg, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: policy: %w", ErrInvalidConfig, err)
	}
	return p, nil
}

// resolveUnder reports whether job j resolves under policy p (its
// subject rebased, or its names resolved when it has none).
func (s *Scheduler) resolveUnder(p *policy.Policy, j *job) error {
	if j.subject.Valid() {
		_, err := p.Rebase(j.subject)
		return err
	}
	_, err := p.Resolve(j.policyRef())
	return err
}

// planCreate, when the scheduler has no policy yet, makes the policy
// state a first change creates: usage counters holding every live job
// (pending ones submitted, running ones with their allocation until their
// deadline), each job's subject, the singleton counts, no reservations.
// A live job that does not resolve under the new policy (a QOS or
// association it names does not exist there) refuses the change.
func (s *Scheduler) planCreate(c *adminChange) error {
	if s.pol != nil || c.pol == nil {
		return nil
	}
	st := &polState{
		p: c.pol, usage: c.pol.NewUsage(), resv: policy.NewReservations(len(s.nodes)),
		forbidden: topology.NewNodeSet(len(s.nodes)), singletons: map[[2]string]int{},
	}
	ids := make([]JobID, 0, len(s.jobs))
	for id, j := range s.jobs {
		if j.State == JobPending || j.State == JobRunning || j.State == JobSuspended {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		j := s.jobs[id]
		sub, err := c.pol.Resolve(j.policyRef())
		if err != nil {
			return fmt.Errorf("%w: job %d: %w", ErrInUse, id, err)
		}
		if err := st.usage.AddJob(policy.JobID(id), sub); err != nil {
			return fmt.Errorf("job %d: %w", id, err)
		}
		if j.State != JobPending {
			if err := st.usage.StartJob(policy.JobID(id), s.addLicenseTRES(j, j.Alloc.Total()), len(j.Alloc.Nodes), j.deadline); err != nil {
				return fmt.Errorf("job %d: %w", id, err)
			}
			st.singletons[[2]string{j.Spec.User, j.Spec.Name}]++
		}
		c.jobs, c.subjects = append(c.jobs, j), append(c.subjects, sub)
	}
	c.create = st
	return nil
}

// adminChange is a validated administrative change, which commit applies.
type adminChange struct {
	// parts are the new partitions (nil: unchanged), defPart the default;
	// removed is the index of a removed partition (-1 none), from maps
	// each new index to the old one (-1: added), and reshape marks (by
	// new index) the partitions whose node set changed.
	parts   []partition
	defPart int
	removed int
	from    []int
	reshape []bool
	// retier says a partition's PriorityTier changed (jobs move in the
	// queue).
	retier bool
	// pol is the new policy (nil: unchanged); create, when the scheduler
	// had none, is the policy state made for it, with each live job's
	// subject (in subjects, parallel to jobs).
	pol      *policy.Policy
	create   *polState
	jobs     []*job
	subjects []policy.Subject
	// engine and partTRES are the priority engine and the partitions'
	// TRES totals for the new cluster facts (nil: unchanged).
	engine   *priority.Engine
	partTRES []gres.Vector
}

// changePolicy validates and applies a change of QOS or associations:
// build makes the new policy from the current one (its errors change
// nothing).
func (s *Scheduler) changePolicy(now time.Time, kind EventKind, what string, build func(*policy.Policy) (*policy.Policy, error)) error {
	if err := s.tick(now); err != nil {
		return err
	}
	cur, err := s.currentPolicy()
	if err != nil {
		return fmt.Errorf("scheduler: %s %s: %w", kind, what, err)
	}
	np, err := build(cur)
	if err != nil {
		return fmt.Errorf("scheduler: %s %s: %w", kind, what, err)
	}
	c := &adminChange{removed: -1, pol: np}
	if err := s.planCreate(c); err != nil {
		return fmt.Errorf("scheduler: %s %s: %w", kind, what, err)
	}
	if err := s.planPriority(c); err != nil {
		return fmt.Errorf("scheduler: %s %s: %w", kind, what, err)
	}
	s.commitAdmin(now, c)
	return nil
}

// changePartitions validates and applies a change of the partitions:
// edit returns the new list from (a copy of) the current one.
func (s *Scheduler) changePartitions(now time.Time, kind EventKind, what string, edit func([]PartitionConfig) ([]PartitionConfig, error)) error {
	if err := s.tick(now); err != nil {
		return err
	}
	c, err := s.planPartitions(kind, edit)
	if err != nil {
		return fmt.Errorf("scheduler: %s %q: %w", kind, what, err)
	}
	s.commitAdmin(now, c)
	return nil
}

// planPartitions validates the partition list edit makes, as New does,
// and builds the change: the partitions (an unchanged one keeps its node
// set), the policy when partition policy changed, the priority facts.
func (s *Scheduler) planPartitions(kind EventKind, edit func([]PartitionConfig) ([]PartitionConfig, error)) (*adminChange, error) {
	cfgs, err := edit(s.Partitions())
	if err != nil {
		return nil, err
	}
	c := &adminChange{removed: -1}
	if kind == KindRemovePartition {
		for i := range s.parts {
			if i >= len(cfgs) || cfgs[i].Name != s.parts[i].cfg.Name {
				c.removed = i
				break
			}
		}
	}
	// from maps a new index to the partition it was (-1: added).
	c.from = make([]int, len(cfgs))
	for i := range c.from {
		switch {
		case c.removed >= 0 && i >= c.removed:
			c.from[i] = i + 1
		case i < len(s.parts):
			c.from[i] = i
		default:
			c.from[i] = -1
		}
	}
	names := make(map[string]bool, len(cfgs))
	defaults, policyChanged := 0, c.removed >= 0 || len(cfgs) != len(s.parts)
	c.parts = make([]partition, len(cfgs))
	c.reshape = make([]bool, len(cfgs))
	pols := make([]policy.Partition, len(cfgs))
	n := len(s.nodes)
	for i := range cfgs {
		pc := &cfgs[i]
		if pc.PriorityTier == 0 {
			pc.PriorityTier = 1
		}
		if pc.PriorityJobFactor == 0 {
			pc.PriorityJobFactor = 1
		}
		if names[pc.Name] {
			return nil, fmt.Errorf("%w: partition %q: duplicate name", ErrInvalidConfig, pc.Name)
		}
		names[pc.Name] = true
		if err := pc.validate(i, func(nn string) bool { _, ok := s.nodeByName[nn]; return ok }); err != nil {
			return nil, err
		}
		if pc.Default {
			defaults++
			c.defPart = i
		}
		policyChanged = policyChanged || (s.pol == nil && pc.hasPolicy())
		pols[i] = pc.policyPartition()
		nodes := topology.NewNodeSet(n)
		if len(pc.Nodes) == 0 {
			nodes.Fill() // every node, less the tombstones of removed ones
			nodes.Subtract(s.removed)
		}
		for _, nn := range pc.Nodes {
			nodes.Add(s.nodeByName[nn])
		}
		if o := c.from[i]; o >= 0 {
			was := &s.parts[o]
			if was.nodes.Equal(nodes) {
				nodes = was.nodes
			} else {
				c.reshape[i] = true
			}
			if !reflect.DeepEqual(was.cfg.policyPartition(), pols[i]) {
				policyChanged = true
			}
			c.retier = c.retier || was.cfg.PriorityTier != pc.PriorityTier
		}
		c.parts[i] = partition{cfg: *pc, nodes: nodes}
	}
	if defaults > 1 {
		return nil, fmt.Errorf("%w: %d partitions marked Default, at most one allowed", ErrInvalidConfig, defaults)
	}
	if (s.pol != nil && policyChanged) || (s.pol == nil && policyChanged && slices.ContainsFunc(cfgs, func(p PartitionConfig) bool { return p.hasPolicy() })) {
		cur, err := s.currentPolicy()
		if err != nil {
			return nil, err
		}
		if c.pol, err = cur.WithPartitions(pols); err != nil {
			return nil, fmt.Errorf("%w: policy: %w", ErrInvalidConfig, err)
		}
		if err := s.planCreate(c); err != nil {
			return nil, err
		}
	}
	if err := s.planPriority(c); err != nil {
		return nil, err
	}
	return c, nil
}

// planPriority computes the priority engine's cluster facts (largest
// PriorityJobFactor and QOS priority) and the partitions' TRES totals
// for the change, and a new engine when they differ.
func (s *Scheduler) planPriority(c *adminChange) error {
	p := s.prio
	if p == nil {
		return nil
	}
	parts := s.parts
	if c.parts != nil {
		parts = c.parts
		c.partTRES = make([]gres.Vector, len(parts))
		for i := range parts {
			if o := c.from[i]; o >= 0 && !c.reshape[i] {
				c.partTRES[i] = p.partTRES[o]
				continue
			}
			t := s.reg.NewVector()
			for n := parts[i].nodes.Next(0); n >= 0; n = parts[i].nodes.Next(n + 1) {
				if err := t.AddInPlace(s.nodes[n].capacity); err != nil {
					return fmt.Errorf("%w: partition %q: %w", ErrInvalidConfig, parts[i].cfg.Name, err)
				}
			}
			c.partTRES[i] = t
		}
	}
	cl := p.engine.Cluster()
	cl.MaxPartitionJobFactor = 0
	for i := range parts {
		cl.MaxPartitionJobFactor = max(cl.MaxPartitionJobFactor, uint16(parts[i].cfg.PriorityJobFactor))
	}
	pol := c.pol
	if pol == nil && s.pol != nil {
		pol = s.pol.p
	}
	if p.cfg.QOSPriority == nil && pol != nil {
		cl.MaxQOSPriority = 0
		for _, q := range pol.Config().QOS {
			cl.MaxQOSPriority = max(cl.MaxQOSPriority, q.Priority)
		}
	}
	if cl == p.engine.Cluster() {
		return nil
	}
	e, err := priority.NewEngine(p.engine.Config(), cl)
	if err != nil {
		return fmt.Errorf("%w: priority: %w", ErrInvalidConfig, err)
	}
	c.engine = e
	return nil
}

// compactEvery is how many policy generations a job's subject may lag
// behind before a change rebases every job (see commitAdmin).
const compactEvery = 32

// commitAdmin applies a validated change. Only what it touches is
// rebuilt: the shapes of partitions whose nodes changed (all of them when
// a partition's removal renumbers the others), the queue position of
// jobs whose tier or preemption rank changed. A policy change moves the
// usage counters (policy.Usage.Rebind, which keeps them when the QOS and
// association layout stays), and bumps the policy generation: each job's
// subject is rebased when next read (subjectOf), so a change of limits,
// priorities or flags costs no pass over the jobs — unless it can change
// their preemption ranks (the queue order), or every compactEvery
// generations, when every job is rebased at once (which lets the older
// policies go).
func (s *Scheduler) commitAdmin(now time.Time, c *adminChange) {
	if c.parts != nil {
		// After the jobs are renumbered and reshaped below (gpurecount.go).
		defer s.recountGPUJobs(nil)
	}
	if c.parts != nil {
		s.parts, s.defPart = c.parts, c.defPart
		clear(s.partByName)
		for i := range s.parts {
			s.partByName[s.parts[i].cfg.Name] = i
		}
	}
	// Jobs are visited only when partitions were renumbered, a node set or
	// a tier changed; a partition's state or limits need no pass.
	eager := c.removed >= 0 || c.retier || slices.Contains(c.reshape, true)
	if c.create != nil {
		s.pol = c.create
		for k, j := range c.jobs {
			sub := c.subjects[k]
			j.subject, j.subjGen, j.Spec.QOS, j.preemptRank = sub, 0, sub.Ref().QOS, sub.PreemptRank()
			if j.State == JobRunning {
				j.usageTotal, j.usageEnd = j.Alloc.Total(), j.deadline
			}
		}
	} else if c.pol != nil {
		old := s.pol.p
		if dropped := s.pol.usage.Rebind(c.pol); len(dropped) > 0 {
			// Every removal checked its jobs: none can be left unresolved.
			panic(fmt.Sprintf("scheduler: policy change dropped jobs %v from the usage counters", dropped))
		}
		s.pol.p = c.pol
		s.pol.gen++
		if !c.pol.SamePreemptRanks(old) || s.pol.gen-s.pol.compacted >= compactEvery {
			eager = true
		}
	}
	if c.engine != nil {
		s.prio.engine = c.engine
	}
	if c.partTRES != nil && s.prio != nil {
		s.prio.partTRES = c.partTRES
	}
	reshape := c.removed >= 0 || slices.Contains(c.reshape, true)
	if reshape {
		s.dropShapes(c)
	}
	s.policyVersion = ""
	s.last = now
	if !eager {
		return
	}
	if s.pol != nil {
		s.pol.usage.Compact()
		s.pol.compacted = s.pol.gen
	}
	for _, j := range s.jobs {
		if c.removed >= 0 {
			switch {
			case j.part == c.removed:
				j.part = -1 // finished: its partition is gone
			case j.part > c.removed:
				j.part--
			}
		}
		s.refreshJob(c, j, reshape)
	}
}

// refreshJob brings job j to a committed change: its shape, tier, policy
// subject and preemption rank, moving it in the queue when its key changed.
func (s *Scheduler) refreshJob(c *adminChange, j *job, reshape bool) {
	if j.part < 0 {
		j.subject = policy.Subject{}
		return
	}
	if reshape && (c.removed >= 0 || c.reshape[j.part]) {
		j.shape = s.shapeOf(j.part, j.perNode, j.Spec.Exclusive, j.excluded, j.cons)
	}
	tier, rank := s.parts[j.part].cfg.PriorityTier, j.preemptRank
	if s.pol != nil {
		rank = s.subjectOf(j).PreemptRank()
	}
	if tier == j.tier && rank == j.preemptRank {
		return
	}
	queued := j.State == JobPending
	if queued {
		s.mutPending().Delete(j)
	}
	j.tier, j.preemptRank = tier, rank
	if queued {
		s.mutPending().ReplaceOrInsert(j)
	}
}

// subjectOf returns job j's policy subject under the current policy,
// rebasing it first (policy.Policy.Rebase, a map lookup) when the policy
// changed since it was resolved. A job whose partition, QOS or
// association is gone (a finished one: removals refuse while live jobs
// use them) gets the zero Subject, which no limit holds.
func (s *Scheduler) subjectOf(j *job) policy.Subject {
	if s.pol == nil || j.subjGen == s.pol.gen {
		return j.subject
	}
	if !j.subject.Valid() {
		j.subjGen = s.pol.gen
		return j.subject
	}
	ns, err := s.pol.p.Rebase(j.subject)
	if err != nil {
		ns = policy.Subject{}
	}
	j.subject, j.subjGen = ns, s.pol.gen
	return ns
}

// dropShapes forgets the cached shapes of the partitions whose nodes
// changed (every shape when a removal renumbered the partitions); the
// jobs' shapes are then rebuilt by refreshJob.
func (s *Scheduler) dropShapes(c *adminChange) {
	if c.removed >= 0 {
		clear(s.shapes)
		return
	}
	for k := range s.shapes {
		if p := shapeKeyPart(k); p < len(c.reshape) && c.reshape[p] {
			delete(s.shapes, k)
		}
	}
}

// shapeKeyPart returns the partition index a shape key starts with.
func shapeKeyPart(k string) int {
	n := 0
	for i := 0; i < len(k) && k[i] >= '0' && k[i] <= '9'; i++ {
		n = n*10 + int(k[i]-'0')
	}
	return n
}
