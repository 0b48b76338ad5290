package ledger

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// The accounting ledger is the one source of truth of the association
// tree: its associations carry the fair-share shares (which FairShare
// feeds to the priority engine) and the limits, QOS lists and default QOS
// (which PolicyAssocs converts for the policy). Build Config.Policy.Assocs
// with PolicyAssocs at start, and bring a running scheduler to the
// ledger's tree after sacctmgr-like changes with SyncAssocs.

// PolicyAssocs returns the current associations of cluster in l as the
// policy takes them (policy.Config.Assocs), in the ledger's ID order
// (creation order, so that associations added later come after the
// others): account, user, partition, parent account, QOS list, default
// QOS, and the limits, with TRES limits resolved against reg (the
// scheduler's registry, scheduler.NewRegistry). A TRES the registry does
// not know is an error naming the association and the limit. The shares
// are not part of the policy: FairShare reads them from the same ledger.
func PolicyAssocs(l accounting.Ledger, cluster string, reg *gres.Registry) ([]policy.Assoc, error) {
	var out []policy.Assoc
	err := l.View(func(tx accounting.Tx) error {
		assocs := func(f func(accounting.Assoc) bool) error { return tx.Assocs(cluster, false, f) }
		return forEach(assocs, func(a accounting.Assoc) error {
			pa, err := policyAssoc(a, reg)
			if err != nil {
				return err
			}
			out = append(out, pa)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: associations of cluster %q: %w", cluster, err)
	}
	return out, nil
}

// policyAssoc converts one ledger association.
func policyAssoc(a accounting.Assoc, reg *gres.Registry) (policy.Assoc, error) {
	out := policy.Assoc{Account: a.Account, User: a.User, Partition: a.Partition, DefaultQOS: a.DefaultQOS, QOS: slices.Clone(a.QOS)}
	if a.User == "" && a.Account != accounting.RootAccount && a.ParentAccount != accounting.RootAccount {
		out.Parent = a.ParentAccount
	}
	l := &a.Limits
	tres := []struct {
		name string
		src  accounting.TRES
		dst  *policy.TRESLimits
	}{{"GrpTRES", l.GrpTRES, &out.Limits.GrpTRES}, {"GrpTRESMins", l.GrpTRESMins, &out.Limits.GrpTRESMins},
		{"GrpTRESRunMins", l.GrpTRESRunMins, &out.Limits.GrpTRESRunMins}, {"MaxTRESPerJob", l.MaxTRESPerJob, &out.Limits.MaxTRESPerJob},
		{"MaxTRESPerNode", l.MaxTRESPerNode, &out.Limits.MaxTRESPerNode}}
	for _, t := range tres {
		if len(t.src) == 0 {
			continue
		}
		v, err := policy.NewTRESLimits(reg, t.src)
		if err != nil {
			return policy.Assoc{}, fmt.Errorf("association %s: %s: %w", a.AssocKey, t.name, err)
		}
		*t.dst = v
	}
	out.Limits.GrpJobs, out.Limits.GrpSubmitJobs = cloneInt(l.GrpJobs), cloneInt(l.GrpSubmitJobs)
	out.Limits.MaxJobs, out.Limits.MaxSubmitJobs = cloneInt(l.MaxJobs), cloneInt(l.MaxSubmitJobs)
	out.Limits.MaxWall = l.MaxWall
	return out, nil
}

func cloneInt(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// SyncAssocs brings the associations of running scheduler s to those of
// cluster in l, as events (PutAssoc, RemoveAssoc) applied at now: every
// association the ledger has that s lacks or holds otherwise is put —
// accounts parents first, then users, in the ledger's order — then every
// one s holds that the ledger no longer has is removed, users first, then
// accounts children first. The diff is a function of the two trees only,
// so replaying the same sync gives the same events. It returns how many
// events it applied. It stops at the first event s refuses (a removal
// while jobs of the association are pending or running: ErrInUse), with
// the events before it applied, each whole: call it again once the jobs
// have ended. An association the scheduler's policy never listed
// explicitly (the implicit root) is left alone.
func SyncAssocs(now time.Time, l accounting.Ledger, cluster string, s *scheduler.Scheduler) (int, error) {
	p := s.Policy()
	if p == nil {
		return 0, fmt.Errorf("ledger: sync associations: %w: the scheduler has no policy", scheduler.ErrInvalidConfig)
	}
	want, err := PolicyAssocs(l, cluster, s.Registry())
	if err != nil {
		return 0, err
	}
	have := p.Config().Assocs
	key := func(a policy.Assoc) policy.AssocKey {
		return policy.AssocKey{Account: a.Account, User: a.User, Partition: a.Partition}
	}
	haveBy := make(map[policy.AssocKey]policy.Assoc, len(have))
	for _, a := range have {
		haveBy[key(a)] = a
	}
	wantBy := make(map[policy.AssocKey]bool, len(want))
	var puts []policy.Assoc
	for _, a := range want {
		wantBy[key(a)] = true
		if h, ok := haveBy[key(a)]; !ok || !sameAssoc(h, a) {
			puts = append(puts, a)
		}
	}
	var removes []policy.Assoc
	for _, a := range have {
		if !wantBy[key(a)] {
			removes = append(removes, a)
		}
	}
	n := 0
	for _, a := range parentsFirst(puts, have) {
		if err := s.PutAssoc(now, a); err != nil {
			return n, fmt.Errorf("ledger: sync associations: %w", err)
		}
		n++
	}
	order := parentsFirst(removes, have)
	slices.Reverse(order)
	for _, a := range order {
		if err := s.RemoveAssoc(now, a.Account, a.User, a.Partition); err != nil {
			return n, fmt.Errorf("ledger: sync associations: %w", err)
		}
		n++
	}
	return n, nil
}

// sameAssoc reports whether two associations of the same key hold the
// same settings (a top-level account's parent "" and "root" alike).
func sameAssoc(a, b policy.Assoc) bool {
	if a.Parent == accounting.RootAccount {
		a.Parent = ""
	}
	if b.Parent == accounting.RootAccount {
		b.Parent = ""
	}
	return reflect.DeepEqual(a, b)
}

// parentsFirst orders as: accounts by their depth in the tree the final
// parents make (an account before its sub-accounts; ties in list order),
// then user associations in list order. Parents are looked up in as
// first, then in others.
func parentsFirst(as, others []policy.Assoc) []policy.Assoc {
	parent := map[string]string{}
	for _, set := range [][]policy.Assoc{others, as} {
		for _, a := range set {
			if a.User == "" {
				parent[a.Account] = a.Parent
			}
		}
	}
	depth := func(acct string) int {
		d := 0
		for a := acct; a != "" && a != accounting.RootAccount && d <= len(parent); d++ {
			a = parent[a]
		}
		return d
	}
	out := slices.Clone(as)
	slices.SortStableFunc(out, func(x, y policy.Assoc) int {
		switch {
		case (x.User == "") != (y.User == ""):
			if x.User == "" {
				return -1
			}
			return 1
		case x.User == "":
			return depth(x.Account) - depth(y.Account)
		}
		return 0
	})
	return out
}
