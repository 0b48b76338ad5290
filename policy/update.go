package policy

import (
	"fmt"
	"slices"
)

// A Policy is immutable: a runtime change (sacctmgr's add, modify and
// delete of QOS and associations, scontrol's partition updates) builds a
// new Policy from a changed Config and moves what refers to the old one
// over to it:
//
//	p2, err := p.WithQOS(q)      // or With, WithoutQOS, WithAssoc, …
//	if err != nil { … }          // p, its subjects and usage are untouched
//	dropped := usage.Rebind(p2)  // the counters, jobs and reported usage
//	sub, err = p2.Rebase(sub)    // each job's Subject the caller keeps
//
// Every With* method validates the whole new configuration as New does
// and fails without changing anything. Rebind and Rebase carry the
// running jobs over as they are: a lowered limit holds new starts only.

// With validates cfg against p's TRES registry and compiles it, as New
// does: the policy a runtime change produces. p itself is unchanged.
func (p *Policy) With(cfg Config) (*Policy, error) {
	return New(p.reg, cfg)
}

// WithQOS returns the policy with q added, or replacing the QOS of the
// same name (its place in the list, and so its index, kept).
func (p *Policy) WithQOS(q QOS) (*Policy, error) {
	cfg := p.cfg
	cfg.QOS = slices.Clone(cfg.QOS)
	if i, ok := p.qosByName[q.Name]; ok {
		cfg.QOS[i] = q
	} else {
		cfg.QOS = append(cfg.QOS, q)
	}
	return p.With(cfg)
}

// WithoutQOS returns the policy without the named QOS. It fails with
// ErrUnknownQOS when there is none, and with the validation error naming
// the entity when anything still names it (the cluster's DefaultQOS,
// another QOS's Preempt list, a partition, an association).
func (p *Policy) WithoutQOS(name string) (*Policy, error) {
	i, ok := p.qosByName[name]
	if !ok {
		return nil, fmt.Errorf("policy: remove QOS: %w %q", ErrUnknownQOS, name)
	}
	cfg := p.cfg
	cfg.QOS = slices.Delete(slices.Clone(cfg.QOS), int(i), int(i)+1)
	np, err := p.With(cfg)
	if err != nil {
		return nil, fmt.Errorf("policy: remove QOS %q: still named: %w", name, err)
	}
	return np, nil
}

// WithPartitions returns the policy with parts as its partitions.
func (p *Policy) WithPartitions(parts []Partition) (*Policy, error) {
	cfg := p.cfg
	cfg.Partitions = slices.Clone(parts)
	return p.With(cfg)
}

// WithAssoc returns the policy with association a added, or replacing the
// association of the same key (Account, User, Partition) in its place.
func (p *Policy) WithAssoc(a Assoc) (*Policy, error) {
	cfg := p.cfg
	cfg.Assocs = slices.Clone(cfg.Assocs)
	k := AssocKey{Account: a.Account, User: a.User, Partition: a.Partition}
	if i := assocPos(cfg.Assocs, k); i >= 0 {
		cfg.Assocs[i] = a
	} else {
		cfg.Assocs = append(cfg.Assocs, a)
	}
	return p.With(cfg)
}

// WithoutAssoc returns the policy without the association k. It fails
// with ErrUnknownAccount when there is none, and with ErrInvalidConfig
// while k is an account that still has children (sub-accounts or users):
// remove them first. Removing the last association turns association
// enforcement off (see Config.Assocs).
func (p *Policy) WithoutAssoc(k AssocKey) (*Policy, error) {
	i := assocPos(p.cfg.Assocs, k)
	if i < 0 {
		return nil, fmt.Errorf("policy: remove association %+v: %w", k, ErrUnknownAccount)
	}
	if k.User == "" {
		if n := p.Children(k.Account); n > 0 {
			return nil, fmt.Errorf("%w: remove account association %q: it has %d child association(s); remove them first", ErrInvalidConfig, k.Account, n)
		}
	}
	cfg := p.cfg
	cfg.Assocs = slices.Delete(slices.Clone(cfg.Assocs), i, i+1)
	return p.With(cfg)
}

// Children returns the number of associations whose parent is account:
// its sub-accounts and its users' associations.
func (p *Policy) Children(account string) int {
	n := 0
	for _, a := range p.cfg.Assocs {
		switch {
		case a.User != "":
			if a.Account == account {
				n++
			}
		case a.Account != RootAccount && a.Account != account:
			parent := a.Parent
			if parent == "" {
				parent = RootAccount
			}
			if parent == account {
				n++
			}
		}
	}
	return n
}

// assocPos returns the index in as of the association with key k, or -1.
func assocPos(as []Assoc, k AssocKey) int {
	return slices.IndexFunc(as, func(a Assoc) bool {
		return a.Account == k.Account && a.User == k.User && a.Partition == k.Partition
	})
}

// Association returns the key of the association s resolved to (a user's
// association, partition-specific when the job's partition has one), and
// false when associations are not enforced or s is not resolved.
func (s Subject) Association() (AssocKey, bool) {
	if s.pl == nil || s.pl.assoc < 0 {
		return AssocKey{}, false
	}
	a := &s.pl.owner.assocs[s.pl.assoc]
	return AssocKey{Account: a.Account, User: a.User, Partition: a.Partition}, true
}

// rebased is what Rebase found for the subjects of one plan of an older
// policy.
type rebased struct {
	pl     *plan
	err    error
	denied *Blocker // the access refusal, when it depends on the plan only
}

// Rebase resolves s, a Subject of an older policy, again under p: its
// user, account, partition and QOS (the effective QOS it resolved to; a
// job that had none takes the defaults as Resolve does) as they stand in
// p. A Subject of p is returned as it is. Subjects that shared a plan
// share the work: each distinct plan is resolved once per policy, so
// rebasing every job of a large queue costs a map lookup per job. Errors
// are Resolve's (the job's partition, QOS or association is gone).
//
// Rebase caches in p, like Resolve, and is not safe for concurrent use.
func (p *Policy) Rebase(s Subject) (Subject, error) {
	old := s.pl
	if old == nil {
		return Subject{}, fmt.Errorf("policy: rebase: %w: subject not resolved", ErrInvalidRequest)
	}
	if old.owner == p {
		return s, nil
	}
	ref := s.ref
	if old.jobQOS < 0 {
		ref.QOS = ""
	}
	// A plan of the old policy names its partition, QOS and user
	// association, and so the new plan, unless the old policy left the
	// partition or the association out (then each job's names count).
	if (old.part < 0 && len(p.parts) > 0) || (old.assoc < 0 && len(p.assocs) > 0) {
		return p.Resolve(ref)
	}
	if p.rebased == nil {
		p.rebased = make(map[*plan]rebased)
	}
	r, ok := p.rebased[old]
	if !ok {
		sub, err := p.Resolve(ref)
		r = rebased{pl: sub.pl, err: err}
		if err == nil && sub.pl.assoc >= 0 {
			r.denied = sub.denied // names the association's account and the plan's QOS only
		}
		p.rebased[old] = r
	}
	if r.err != nil {
		return p.Resolve(ref) // the error with this job's names
	}
	if r.pl.jobQOS >= 0 {
		ref.QOS = p.qos[r.pl.jobQOS].Name
	}
	out := Subject{ref: ref, pl: r.pl, denied: r.denied}
	if r.pl.assoc < 0 {
		out.denied = p.access(r.pl, ref)
	}
	return out, nil
}

// SamePreemptRanks reports whether every job has the same
// Subject.PreemptRank under p as under o, so that a caller ordering its
// queue by rank need not reorder it: both have no preemption, or the same
// preemption type with the same ranks — under PreemptQOS the same QOS in
// the same order with the same preemption depths and the same defaults
// (cluster and associations), under PreemptPartitionPrio the same
// partitions with the same tiers. It may report false for policies whose
// ranks happen to agree.
func (p *Policy) SamePreemptRanks(o *Policy) bool {
	if p.cfg.PreemptType != o.cfg.PreemptType {
		return false
	}
	switch p.cfg.PreemptType {
	case PreemptQOS:
		if len(p.qos) != len(o.qos) || p.defaultQOS != o.defaultQOS || len(p.assocs) != len(o.assocs) {
			return false
		}
		for i := range p.qos {
			if p.qos[i].Name != o.qos[i].Name || p.preemptDepth[i] != o.preemptDepth[i] {
				return false
			}
		}
		for i := range p.assocs {
			a, b := &p.assocs[i], &o.assocs[i]
			if a.Account != b.Account || a.User != b.User || a.Partition != b.Partition || a.defaultQOS != b.defaultQOS {
				return false
			}
		}
	case PreemptPartitionPrio:
		if len(p.parts) != len(o.parts) {
			return false
		}
		for i := range p.parts {
			if p.parts[i].Name != o.parts[i].Name || p.parts[i].Tier() != o.parts[i].Tier() {
				return false
			}
		}
	}
	return true
}
