package accounting

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

const (
	prefixAssoc     = "a:"  // a:<id> → current version (JSON)
	prefixAssocHist = "ah:" // ah:<id>:<version> → version (JSON)
	prefixAssocKey  = "ak:" // ak:<cluster>|<account>|<user>|<partition> → id
)

func assocKeyKey(k AssocKey) string {
	return prefixAssocKey + k.Cluster + "|" + k.Account + "|" + k.User + "|" + k.Partition
}

func (a *Assoc) validate(now time.Time) error {
	if err := validTime("now", now, false); err != nil {
		return err
	}
	f := func(err error) error { return fmt.Errorf("association %s: %w", a.AssocKey, err) }
	for _, c := range []struct {
		field, v string
		opt      bool
	}{{"cluster", a.Cluster, false}, {"account", a.Account, false}, {"user", a.User, true},
		{"partition", a.Partition, true}, {"parent_account", a.ParentAccount, true}, {"default_qos", a.DefaultQOS, true}} {
		if err := validName(c.field, c.v, c.opt); err != nil {
			return f(err)
		}
	}
	if a.Partition != "" && a.User == "" {
		return f(fmt.Errorf("%w: partition %q on an account association (only user associations have a partition)", ErrInvalid, a.Partition))
	}
	if a.User == "" && a.Account == RootAccount && a.ParentAccount != "" {
		return f(fmt.Errorf("%w: the root association has no parent (got %q)", ErrInvalid, a.ParentAccount))
	}
	if a.User == "" && a.ParentAccount == a.Account {
		return f(fmt.Errorf("%w: account is its own parent", ErrInvalid))
	}
	for _, q := range a.QOS {
		if err := validName("qos", q, false); err != nil {
			return f(err)
		}
	}
	if err := a.Limits.Validate(); err != nil {
		return f(err)
	}
	return nil
}

// normalise fills defaults so that equal settings compare equal.
func (a *Assoc) normalise() {
	if a.User == "" && a.Account != RootAccount && a.ParentAccount == "" {
		a.ParentAccount = RootAccount
	}
	if a.User != "" {
		a.ParentAccount = ""
	}
	a.Since = a.Since.Truncate(time.Second).UTC()
	if a.QOS != nil {
		a.QOS = slices.Clone(a.QOS)
		slices.Sort(a.QOS)
		a.QOS = slices.Compact(a.QOS)
	}
	a.Limits = a.Limits.clone()
}

func sameSettings(a, b Assoc) bool {
	return a.AssocKey == b.AssocKey && a.ParentAccount == b.ParentAccount && a.Parent == b.Parent &&
		a.Shares == b.Shares && a.DefaultQOS == b.DefaultQOS && slices.Equal(a.QOS, b.QOS) &&
		limitsEqual(a.Limits, b.Limits)
}

func limitsEqual(a, b Limits) bool {
	pe := func(x, y *int) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.GrpTRES.Equal(b.GrpTRES) && a.GrpTRESMins.Equal(b.GrpTRESMins) && a.GrpTRESRunMins.Equal(b.GrpTRESRunMins) &&
		pe(a.GrpJobs, b.GrpJobs) && pe(a.GrpSubmitJobs, b.GrpSubmitJobs) && a.MaxTRESPerJob.Equal(b.MaxTRESPerJob) &&
		a.MaxTRESPerNode.Equal(b.MaxTRESPerNode) && pe(a.MaxJobs, b.MaxJobs) && pe(a.MaxSubmitJobs, b.MaxSubmitJobs) &&
		a.MaxWall == b.MaxWall
}

func cloneAssoc(a Assoc) Assoc {
	a.QOS = slices.Clone(a.QOS)
	a.Limits = a.Limits.clone()
	return a
}

func (t *kvTx) PutAssoc(now time.Time, a Assoc) (Assoc, error) {
	if err := t.writable(); err != nil {
		return Assoc{}, err
	}
	if err := a.validate(now); err != nil {
		return Assoc{}, err
	}
	a.normalise()
	now = now.Truncate(time.Second).UTC()
	cur, err := t.LookupAssoc(a.AssocKey)
	switch {
	case errors.Is(err, ErrNotFound):
		return t.addAssoc(now, a)
	case err != nil:
		return Assoc{}, err
	}
	next := cur
	next.Shares, next.DefaultQOS, next.QOS, next.Limits = a.Shares, a.DefaultQOS, a.QOS, a.Limits
	if !cur.IsUser() && a.ParentAccount != cur.ParentAccount {
		p, err := t.LookupAssoc(AssocKey{Cluster: a.Cluster, Account: a.ParentAccount})
		if err != nil {
			return Assoc{}, fmt.Errorf("association %s: parent account %q: %w", a.AssocKey, a.ParentAccount, err)
		}
		if err := t.checkNoCycle(cur.ID, p.ID); err != nil {
			return Assoc{}, err
		}
		next.ParentAccount, next.Parent = p.Account, p.ID
	}
	if sameSettings(cur, next) {
		return cloneAssoc(cur), nil
	}
	return t.writeVersion(now, cur, next)
}

func (t *kvTx) addAssoc(now time.Time, a Assoc) (Assoc, error) {
	var parent Assoc
	switch {
	case a.User == "" && a.Account == RootAccount:
		// the root has no parent
	case a.User == "":
		var err error
		if parent, err = t.LookupAssoc(AssocKey{Cluster: a.Cluster, Account: a.ParentAccount}); errors.Is(err, ErrNotFound) && a.ParentAccount == RootAccount {
			parent, err = t.addAssoc(now, Assoc{AssocKey: AssocKey{Cluster: a.Cluster, Account: RootAccount}})
		}
		if err != nil {
			return Assoc{}, fmt.Errorf("association %s: parent account %q: %w", a.AssocKey, a.ParentAccount, err)
		}
	default:
		var err error
		if parent, err = t.LookupAssoc(AssocKey{Cluster: a.Cluster, Account: a.Account}); err != nil {
			return Assoc{}, fmt.Errorf("association %s: account %q: %w", a.AssocKey, a.Account, err)
		}
	}
	n, err := t.nextSeq(keyAssocSeq)
	if err != nil {
		return Assoc{}, err
	}
	if n > math.MaxUint32 {
		return Assoc{}, fmt.Errorf("%w: association IDs exhausted", ErrInvalid)
	}
	a.ID, a.Parent, a.Version, a.Since, a.Removed = AssocID(n), parent.ID, 1, now, false
	if err := t.set(assocKeyKey(a.AssocKey), hex8(uint32(a.ID))); err != nil {
		return Assoc{}, err
	}
	return a, t.storeAssoc(a)
}

func (t *kvTx) storeAssoc(a Assoc) error {
	t.assocChanged(a.ID)
	if err := t.setJSON(prefixAssocHist+hex8(uint32(a.ID))+":"+hex8(a.Version), a); err != nil {
		return err
	}
	if a.Removed {
		return t.del(prefixAssoc + hex8(uint32(a.ID)))
	}
	return t.setJSON(prefixAssoc+hex8(uint32(a.ID)), a)
}

func (t *kvTx) writeVersion(now time.Time, cur, next Assoc) (Assoc, error) {
	if now.Before(cur.Since) {
		return Assoc{}, fmt.Errorf("%w: association %s: change at %v is before its last change at %v", ErrInvalid, cur.AssocKey, now, cur.Since)
	}
	next.Version, next.Since = cur.Version+1, now
	if next.AssocKey != cur.AssocKey {
		if _, err := t.LookupAssoc(next.AssocKey); err == nil {
			return Assoc{}, fmt.Errorf("%w: association %s", ErrExists, next.AssocKey)
		} else if !errors.Is(err, ErrNotFound) {
			return Assoc{}, err
		}
		if err := t.del(assocKeyKey(cur.AssocKey)); err != nil {
			return Assoc{}, err
		}
		if err := t.set(assocKeyKey(next.AssocKey), hex8(uint32(next.ID))); err != nil {
			return Assoc{}, err
		}
	}
	return cloneAssoc(next), t.storeAssoc(next)
}

// checkNoCycle fails if parent is id or inside id's subtree.
func (t *kvTx) checkNoCycle(id, parent AssocID) error {
	for p, n := parent, 0; p != 0; n++ {
		if p == id {
			return fmt.Errorf("%w: moving association %d under %d would make a cycle", ErrInvalid, id, parent)
		}
		if n > maxDepth {
			return corruptKey(prefixAssoc+hex8(uint32(p)), "association tree deeper than %d", maxDepth)
		}
		a, err := t.Assoc(p)
		if err != nil {
			return err
		}
		p = a.Parent
	}
	return nil
}

const maxDepth = 64

func (t *kvTx) MoveAssoc(now time.Time, id, parent AssocID) (Assoc, error) {
	if err := t.writable(); err != nil {
		return Assoc{}, err
	}
	if err := validTime("now", now, false); err != nil {
		return Assoc{}, err
	}
	now = now.Truncate(time.Second).UTC()
	cur, err := t.Assoc(id)
	if err != nil {
		return Assoc{}, err
	}
	p, err := t.Assoc(parent)
	if err != nil {
		return Assoc{}, fmt.Errorf("new parent: %w", err)
	}
	switch {
	case cur.Parent == 0:
		return Assoc{}, fmt.Errorf("%w: the root association %s cannot move", ErrInvalid, cur.AssocKey)
	case p.IsUser():
		return Assoc{}, fmt.Errorf("%w: new parent %s is a user association", ErrInvalid, p.AssocKey)
	case p.Cluster != cur.Cluster:
		return Assoc{}, fmt.Errorf("%w: new parent %s is in another cluster than %s", ErrInvalid, p.AssocKey, cur.AssocKey)
	}
	if err := t.checkNoCycle(id, parent); err != nil {
		return Assoc{}, err
	}
	next := cur
	next.Parent = parent
	if cur.IsUser() {
		next.Account = p.Account
	} else {
		next.ParentAccount = p.Account
	}
	if sameSettings(cur, next) {
		return cloneAssoc(cur), nil
	}
	return t.writeVersion(now, cur, next)
}

func (t *kvTx) RemoveAssoc(now time.Time, id AssocID) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := validTime("now", now, false); err != nil {
		return err
	}
	now = now.Truncate(time.Second).UTC()
	cur, err := t.Assoc(id)
	if err != nil {
		return err
	}
	var child *Assoc
	err = t.Assocs(cur.Cluster, false, func(a Assoc) bool {
		if a.Parent == id {
			child = &a
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	if child != nil {
		return fmt.Errorf("%w: association %s still has child %s", ErrInUse, cur.AssocKey, child.AssocKey)
	}
	if now.Before(cur.Since) {
		return fmt.Errorf("%w: association %s: removal at %v is before its last change at %v", ErrInvalid, cur.AssocKey, now, cur.Since)
	}
	if err := t.del(assocKeyKey(cur.AssocKey)); err != nil {
		return err
	}
	next := cur
	next.Version, next.Since, next.Removed = cur.Version+1, now, true
	return t.storeAssoc(next)
}

func (t *kvTx) Assoc(id AssocID) (Assoc, error) {
	var a Assoc
	ok, err := t.getJSON(prefixAssoc+hex8(uint32(id)), &a)
	if err != nil {
		return Assoc{}, err
	}
	if !ok {
		return Assoc{}, fmt.Errorf("%w: association %d", ErrNotFound, id)
	}
	return a, nil
}

func (t *kvTx) LookupAssoc(k AssocKey) (Assoc, error) {
	v, ok, err := t.get(assocKeyKey(k))
	if err != nil {
		return Assoc{}, err
	}
	if !ok {
		return Assoc{}, fmt.Errorf("%w: association %s", ErrNotFound, k)
	}
	id, okp := parseHex(v)
	if !okp || id == 0 || id > math.MaxUint32 {
		return Assoc{}, corruptKey(assocKeyKey(k), "bad association ID %q", v)
	}
	a, err := t.Assoc(AssocID(id))
	if errors.Is(err, ErrNotFound) {
		return Assoc{}, corruptKey(assocKeyKey(k), "names missing association %d", id)
	}
	return a, err
}

// versions returns every version of id, oldest first (shared: do not modify).
func (t *kvTx) versions(id AssocID) ([]Assoc, error) {
	if !t.assocDirty {
		t.l.cacheMu.Lock()
		v, ok := t.l.assocCache[id]
		t.l.cacheMu.Unlock()
		if ok {
			return v, nil
		}
	} else if v, ok := t.assocLocal[id]; ok {
		return v, nil
	}
	p := prefixAssocHist + hex8(uint32(id)) + ":"
	var out []Assoc
	err := ascendRecords(t.r, p, prefixEnd(p), decodeJSON[Assoc], func(a Assoc) bool {
		out = append(out, a)
		return true
	})
	if err != nil {
		return nil, err
	}
	if t.assocDirty {
		if t.assocLocal == nil {
			t.assocLocal = map[AssocID][]Assoc{}
		}
		t.assocLocal[id] = out
	} else {
		t.l.cacheMu.Lock()
		if t.l.assocCache == nil {
			t.l.assocCache = map[AssocID][]Assoc{}
		}
		t.l.assocCache[id] = out
		t.l.cacheMu.Unlock()
	}
	return out, nil
}

func (t *kvTx) assocChanged(id AssocID) {
	t.assocDirty = true
	delete(t.assocLocal, id)
}

func (t *kvTx) AssocHistory(id AssocID) ([]Assoc, error) {
	vs, err := t.versions(id)
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("%w: association %d", ErrNotFound, id)
	}
	out := make([]Assoc, len(vs))
	for i, a := range vs {
		out[i] = cloneAssoc(a)
	}
	return out, nil
}

func (t *kvTx) AssocAt(id AssocID, at time.Time) (Assoc, error) {
	a, ok, err := t.assocAt(id, at)
	if err != nil {
		return Assoc{}, err
	}
	if !ok {
		return Assoc{}, fmt.Errorf("%w: association %d at %v", ErrNotFound, id, at)
	}
	return cloneAssoc(a), nil
}

func (t *kvTx) assocAt(id AssocID, at time.Time) (Assoc, bool, error) {
	vs, err := t.versions(id)
	if err != nil {
		return Assoc{}, false, err
	}
	i, _ := slices.BinarySearchFunc(vs, at, func(a Assoc, at time.Time) int {
		if a.Since.After(at) {
			return 1
		}
		return -1
	})
	if i == 0 || vs[i-1].Removed {
		return Assoc{}, false, nil
	}
	return vs[i-1], true, nil
}

// assocAtOrLast returns the version of id in effect at time at, or its
// last version when none was (before it was added or after it was
// removed); ErrNotFound when id never existed.
func (t *kvTx) assocAtOrLast(id AssocID, at time.Time) (Assoc, error) {
	a, ok, err := t.assocAt(id, at)
	if err != nil || ok {
		return a, err
	}
	vs, err := t.versions(id)
	if err != nil {
		return Assoc{}, err
	}
	if len(vs) == 0 {
		return Assoc{}, fmt.Errorf("%w: association %d", ErrNotFound, id)
	}
	return vs[len(vs)-1], nil
}

// chainAt returns id and its ancestors as they were at time at (falling
// back to the current tree for associations that did not exist then).
func (t *kvTx) chainAt(id AssocID, at time.Time) ([]AssocID, error) {
	chain := make([]AssocID, 0, 5)
	for p := id; p != 0; {
		if len(chain) > maxDepth {
			return nil, corruptKey(prefixAssoc+hex8(uint32(id)), "association tree deeper than %d", maxDepth)
		}
		chain = append(chain, p)
		a, err := t.assocAtOrLast(p, at)
		if err != nil {
			return nil, err
		}
		p = a.Parent
	}
	return chain, nil
}

func (t *kvTx) Assocs(cluster string, removed bool, fn func(Assoc) bool) error {
	var list []Assoc
	err := ascendRecords(t.r, prefixAssoc, prefixEnd(prefixAssoc), decodeJSON[Assoc], func(a Assoc) bool {
		if cluster == "" || a.Cluster == cluster {
			list = append(list, a)
		}
		return true
	})
	if err != nil {
		return err
	}
	if removed {
		last := map[AssocID]Assoc{}
		err := ascendRecords(t.r, prefixAssocHist, prefixEnd(prefixAssocHist), decodeJSON[Assoc], func(a Assoc) bool {
			last[a.ID] = a
			return true
		})
		if err != nil {
			return err
		}
		for _, a := range last {
			if a.Removed && (cluster == "" || a.Cluster == cluster) {
				list = append(list, a)
			}
		}
		slices.SortFunc(list, func(a, b Assoc) int { return cmp.Compare(a.ID, b.ID) })
	}
	for _, a := range list {
		if !fn(a) {
			return nil
		}
	}
	return nil
}
