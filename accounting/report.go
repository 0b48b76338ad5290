package accounting

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Utilization is sreport's cluster utilisation for one TRES over a time
// range, in TRES-seconds. Reported = Allocated + Down + PlannedDown +
// Idle + Planned; OverCommitted is eligible waiting time beyond what was
// idle.
type Utilization struct {
	Cluster string    `json:"cluster"`
	TRES    string    `json:"tres"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	// Allocated: used by jobs, plus unused time of active reservations
	// (except maintenance ones).
	Allocated int64 `json:"allocated"`
	// Down: nodes down or drained (NodeDown events).
	Down int64 `json:"down"`
	// PlannedDown: NodePlannedDown events and unused time of maintenance
	// reservations without IgnoreJobs.
	PlannedDown int64 `json:"planned_down"`
	// Idle: none of the others.
	Idle int64 `json:"idle"`
	// Planned (sreport's "Reserved" before Slurm 23.02): idle time while
	// eligible jobs waited.
	Planned       int64 `json:"planned"`
	OverCommitted int64 `json:"over_committed"`
	// Reported: total capacity × time (from Capacity records).
	Reported int64 `json:"reported"`
}

// Percent returns v as a percentage of Reported (0 when nothing was
// reported).
func (u Utilization) Percent(v int64) float64 {
	if u.Reported == 0 {
		return 0
	}
	return 100 * float64(v) / float64(u.Reported)
}

// reportRange clips [from, to) to whole hours and to the last complete
// hour before now.
func reportRange(c cal, from, to, now time.Time) (int64, int64, error) {
	if err := validTime("from", from, false); err != nil {
		return 0, 0, err
	}
	if err := validTime("to", to, false); err != nil {
		return 0, 0, err
	}
	if err := validTime("now", now, false); err != nil {
		return 0, 0, err
	}
	f, t := c.hourStart(from.Unix()), c.hourStart(min(to.Unix(), now.Unix()))
	return f, max(f, t), nil
}

// hourly is a series of per-hour TRES-seconds over [from, to).
type hourly struct {
	hours []int64 // start of each hour
	end   int64   // end of the last hour (0 when there is none)
	vals  []int64
}

func newHourly(c cal, from, to int64) *hourly {
	h := &hourly{}
	x := from
	for ; x < to; x = c.nextHour(x) {
		h.hours = append(h.hours, x)
	}
	if len(h.hours) > 0 {
		h.end = x
	}
	h.vals = make([]int64, len(h.hours))
	return h
}

// like returns an empty series over the same hours as h.
func (h *hourly) like() *hourly {
	return &hourly{hours: h.hours, end: h.end, vals: make([]int64, len(h.vals))}
}

// hourEnd returns the end of hour i (the start of the next one).
func (h *hourly) hourEnd(i int) int64 {
	if i+1 < len(h.hours) {
		return h.hours[i+1]
	}
	return h.end
}

// addSpan adds count per second of [s, e) into the buckets.
func (h *hourly) addSpan(s, e, count int64) {
	if count == 0 || len(h.hours) == 0 {
		return
	}
	s, e = max(s, h.hours[0]), min(e, h.end)
	if e <= s {
		return
	}
	i, _ := slices.BinarySearch(h.hours, s)
	if i == len(h.hours) || h.hours[i] > s {
		i--
	}
	for ; i < len(h.hours) && h.hours[i] < e; i++ {
		lo, hi := max(s, h.hours[i]), min(e, h.hourEnd(i))
		if hi > lo {
			h.vals[i] = satAdd(h.vals[i], satMul(count, hi-lo))
		}
	}
}

// addAt adds v to the bucket starting at hour start.
func (h *hourly) addAt(start, v int64) {
	if i, ok := slices.BinarySearch(h.hours, start); ok {
		h.vals[i] = satAdd(h.vals[i], v)
	}
}

// ClusterUtilization computes sreport's cluster utilisation of TRES tres
// ("" = cpu) for cluster over [from, to), clipped to whole hours and to
// the last complete hour before now. It reads the cluster root's hourly
// rollups (finished jobs), the open jobs (running time up to now and
// pending time), capacity records, node events and reservations.
func ClusterUtilization(tx Tx, cluster string, from, to, now time.Time, tres string) (Utilization, error) {
	if tres == "" {
		tres = "cpu"
	}
	if err := validTRESName(tres); err != nil {
		return Utilization{}, err
	}
	c := cal{tx.Location()}
	lo, hi, err := reportRange(c, from, to, now)
	if err != nil {
		return Utilization{}, err
	}
	u := Utilization{Cluster: cluster, TRES: tres, From: time.Unix(lo, 0).UTC(), To: time.Unix(hi, 0).UTC()}
	root, err := tx.LookupAssoc(AssocKey{Cluster: cluster, Account: RootAccount})
	if err != nil {
		return u, fmt.Errorf("utilization: %w", err)
	}
	alloc := newHourly(c, lo, hi)
	wait, rep, down, pdown := alloc.like(), alloc.like(), alloc.like(), alloc.like()
	err = tx.Rollups(root.ID, LevelHour, time.Unix(lo, 0), time.Unix(hi, 0), func(r Rollup) bool {
		alloc.addAt(r.Start.Unix(), r.TRESSeconds[tres])
		wait.addAt(r.Start.Unix(), r.WaitTRESSeconds[tres])
		return true
	})
	if err != nil {
		return u, err
	}
	resvRunning := map[string]*hourly{}
	err = tx.Jobs(JobQuery{Cluster: cluster, OpenOnly: true}, func(j JobRecord) bool {
		if j.Start.IsZero() {
			wait.addSpan(j.waitStart().Unix(), hi, j.waitTRES()[tres])
			return true
		}
		alloc.addSpan(j.Start.Unix(), hi, j.AllocTRES[tres])
		if j.Reservation != "" {
			h := resvRunning[j.Reservation]
			if h == nil {
				h = alloc.like()
				resvRunning[j.Reservation] = h
			}
			h.addSpan(j.Start.Unix(), hi, j.AllocTRES[tres])
		}
		return true
	})
	if err != nil {
		return u, err
	}
	caps, err := tx.Capacities(cluster)
	if err != nil {
		return u, err
	}
	for i, cp := range caps {
		end := hi
		if i+1 < len(caps) {
			end = caps[i+1].Since.Unix()
		}
		rep.addSpan(cp.Since.Unix(), end, cp.TRES[tres])
	}
	err = tx.NodeEvents(cluster, time.Unix(lo, 0), time.Unix(hi, 0), func(e NodeEvent) bool {
		end := hi
		if !e.End.IsZero() {
			end = e.End.Unix()
		}
		h := down
		if e.State == NodePlannedDown {
			h = pdown
		}
		h.addSpan(e.Start.Unix(), end, e.TRES[tres])
		return true
	})
	if err != nil {
		return u, err
	}
	var resvs []Reservation
	err = tx.Reservations(cluster, time.Unix(lo, 0), time.Unix(hi, 0), func(r Reservation) bool {
		resvs = append(resvs, r)
		return true
	})
	if err != nil {
		return u, err
	}
	for _, r := range resvs {
		held := alloc.like()
		held.addSpan(r.Start.Unix(), r.End.Unix(), r.TRES[tres])
		used := alloc.like()
		ru, err := tx.ReservationUsage(cluster, r.Name, time.Unix(lo, 0), time.Unix(hi, 0))
		if err != nil {
			return u, err
		}
		for _, x := range ru {
			used.addAt(x.Start.Unix(), x.TRESSeconds[tres])
		}
		if h := resvRunning[r.Name]; h != nil {
			for i, v := range h.vals {
				used.vals[i] += v
			}
		}
		target := alloc
		if r.Maint && !r.IgnoreJobs {
			target = pdown
		}
		for i := range held.vals {
			if held.vals[i] > 0 {
				target.vals[i] = satAdd(target.vals[i], max(0, held.vals[i]-used.vals[i]))
			}
		}
	}
	for i := range rep.vals {
		total := rep.vals[i]
		d := min(down.vals[i], total)
		pd := min(pdown.vals[i], total-d)
		a := min(alloc.vals[i], total-d-pd)
		idle := total - d - pd - a
		pl := min(wait.vals[i], idle)
		u.Reported += total
		u.Down += d
		u.PlannedDown += pd
		u.Allocated += a
		u.Idle += idle - pl
		u.Planned += pl
		u.OverCommitted += wait.vals[i] - pl
	}
	return u, nil
}

// UsageRow is one association's usage over a range (sreport's
// AccountUtilizationByUser / a chargeback line).
type UsageRow struct {
	Assoc   AssocID  `json:"assoc"`
	Key     AssocKey `json:"key"`
	Depth   int      `json:"depth"` // 0 for the cluster root
	Removed bool     `json:"removed,omitempty"`
	Jobs    int64    `json:"jobs"`
	// TRESSeconds is allocated TRES-seconds (billing-seconds under
	// "billing"), including the running part of open jobs.
	TRESSeconds TRES `json:"tres_seconds"`
}

// Hours returns TRESSeconds[name] in TRES-hours.
func (r UsageRow) Hours(name string) float64 { return float64(r.TRESSeconds[name]) / 3600 }

// treeNode is an association (current, or its last version if removed).
type treeNode struct {
	a        Assoc
	children []*treeNode
}

// assocTree returns the cluster root of all associations ever in cluster,
// removed ones included (under their last parent), children sorted users
// first, then by account, user and partition.
func assocTree(tx Tx, cluster string, withRemoved bool) (*treeNode, error) {
	nodes := map[AssocID]*treeNode{}
	err := tx.Assocs(cluster, withRemoved, func(a Assoc) bool {
		nodes[a.ID] = &treeNode{a: a}
		return true
	})
	if err != nil {
		return nil, err
	}
	var root *treeNode
	ids := make([]AssocID, 0, len(nodes))
	for id := range nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		n := nodes[id]
		if n.a.Parent == 0 {
			root = n
			continue
		}
		if p := nodes[n.a.Parent]; p != nil {
			p.children = append(p.children, n)
		}
	}
	if root == nil {
		return nil, fmt.Errorf("%w: cluster %q has no root association", ErrNotFound, cluster)
	}
	var sortRec func(n *treeNode)
	sortRec = func(n *treeNode) {
		slices.SortFunc(n.children, func(x, y *treeNode) int {
			if x.a.IsUser() != y.a.IsUser() {
				if x.a.IsUser() {
					return -1
				}
				return 1
			}
			return cmp.Or(cmp.Compare(x.a.Account, y.a.Account), cmp.Compare(x.a.User, y.a.User),
				cmp.Compare(x.a.Partition, y.a.Partition), cmp.Compare(x.a.ID, y.a.ID))
		})
		for _, c := range n.children {
			sortRec(c)
		}
	}
	sortRec(root)
	return root, nil
}

// AccountUsage returns the usage of every association of cluster over
// [from, to) (whole hours, up to the last complete hour before now) in
// tree order: the root (the cluster total), then each account followed by
// its users and sub-accounts. Removed associations with usage are
// included. Each row covers its whole subtree as it was when the jobs ran.
// Rows with no usage are left out unless all is set. Running jobs count up
// to the end of the range.
func AccountUsage(tx Tx, cluster string, from, to, now time.Time, all bool) ([]UsageRow, error) {
	c := cal{tx.Location()}
	lo, hi, err := reportRange(c, from, to, now)
	if err != nil {
		return nil, err
	}
	root, err := assocTree(tx, cluster, true)
	if err != nil {
		return nil, err
	}
	running := map[AssocID]TRES{}
	err = tx.Jobs(JobQuery{Cluster: cluster, OpenOnly: true}, func(j JobRecord) bool {
		if j.Start.IsZero() || j.Start.Unix() >= hi {
			return true
		}
		secs := hi - max(j.Start.Unix(), lo)
		if secs <= 0 {
			return true
		}
		chain, cerr := chainOf(tx, j.Assoc, j.Start)
		if cerr != nil {
			err = cerr
			return false
		}
		for _, id := range chain {
			if running[id] == nil {
				running[id] = TRES{}
			}
			running[id].addScaled(j.AllocTRES, secs)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	totals, err := prefetchTotals(tx, root, lo, hi)
	if err != nil {
		return nil, err
	}
	var rows []UsageRow
	var walk func(n *treeNode, depth int) error
	walk = func(n *treeNode, depth int) error {
		tot, err := totals(n.a.ID, time.Unix(lo, 0), time.Unix(hi, 0))
		if err != nil {
			return err
		}
		tot.TRESSeconds.addScaled(running[n.a.ID], 1)
		if all || tot.Jobs > 0 || len(tot.TRESSeconds) > 0 {
			rows = append(rows, UsageRow{Assoc: n.a.ID, Key: n.a.AssocKey, Depth: depth, Removed: n.a.Removed,
				Jobs: tot.Jobs, TRESSeconds: tot.TRESSeconds})
		}
		for _, ch := range n.children {
			if err := walk(ch, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return rows, walk(root, 0)
}

// chainOf returns id and its ancestors at time at, through the Tx
// interface.
func chainOf(tx Tx, id AssocID, at time.Time) ([]AssocID, error) {
	if k, ok := tx.(*kvTx); ok {
		return k.chainAt(id, at)
	}
	var chain []AssocID
	for p := id; p != 0 && len(chain) <= maxDepth; {
		chain = append(chain, p)
		a, err := tx.AssocAt(p, at)
		if err != nil {
			h, herr := tx.AssocHistory(p)
			if herr != nil {
				return nil, herr
			}
			a = h[len(h)-1]
		}
		p = a.Parent
	}
	return chain, nil
}

// UserUsage is one user's usage over a range, summed over their
// associations.
type UserUsage struct {
	User        string   `json:"user"`
	Accounts    []string `json:"accounts"`
	Jobs        int64    `json:"jobs"`
	TRESSeconds TRES     `json:"tres_seconds"`
}

// TopUsers returns the n users of cluster with the most TRES-seconds of
// tres ("" = cpu) over [from, to) (as AccountUsage), most first, ties by
// user name; n ≤ 0 returns all.
func TopUsers(tx Tx, cluster string, from, to, now time.Time, tres string, n int) ([]UserUsage, error) {
	if tres == "" {
		tres = "cpu"
	}
	rows, err := AccountUsage(tx, cluster, from, to, now, false)
	if err != nil {
		return nil, err
	}
	by := map[string]*UserUsage{}
	for _, r := range rows {
		if r.Key.User == "" {
			continue
		}
		u := by[r.Key.User]
		if u == nil {
			u = &UserUsage{User: r.Key.User, TRESSeconds: TRES{}}
			by[r.Key.User] = u
		}
		if !slices.Contains(u.Accounts, r.Key.Account) {
			u.Accounts = append(u.Accounts, r.Key.Account)
		}
		u.Jobs += r.Jobs
		u.TRESSeconds.addScaled(r.TRESSeconds, 1)
	}
	out := make([]UserUsage, 0, len(by))
	for _, u := range by {
		slices.Sort(u.Accounts)
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b UserUsage) int {
		return cmp.Or(cmp.Compare(b.TRESSeconds[tres], a.TRESSeconds[tres]), cmp.Compare(a.User, b.User))
	})
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out, nil
}

// ShareNode is one row of the sshare-like tree: an association with its
// raw and normalised shares and its usage. The fair-share factor itself is
// computed by package priority from these numbers.
type ShareNode struct {
	Assoc Assoc `json:"assoc"`
	// RawShares is the configured shares (sshare RawShares).
	RawShares uint32 `json:"raw_shares"`
	// NormShares is RawShares / Σ siblings' RawShares × the parent's
	// NormShares (the root has 1): sshare NormShares.
	NormShares float64 `json:"norm_shares"`
	// Usage is the subtree's decayed usage and budgets at the tree's time.
	Usage Usage `json:"usage"`
	// NormUsage is Usage.Raw / the root's Usage.Raw (0 when the root has
	// none): sshare NormUsage.
	NormUsage float64      `json:"norm_usage"`
	Children  []*ShareNode `json:"children,omitempty"`
}

// ShareTree builds the sshare-like tree of cluster's current associations
// with usage as of now.
func ShareTree(tx Tx, cluster string, now time.Time) (*ShareNode, error) {
	root, err := assocTree(tx, cluster, false)
	if err != nil {
		return nil, err
	}
	var build func(n *treeNode, norm float64) (*ShareNode, error)
	build = func(n *treeNode, norm float64) (*ShareNode, error) {
		u, err := tx.Usage(n.a.ID, now)
		if err != nil {
			return nil, err
		}
		s := &ShareNode{Assoc: n.a, RawShares: n.a.EffectiveShares(), NormShares: norm, Usage: u}
		var sum float64
		for _, c := range n.children {
			sum += float64(c.a.EffectiveShares())
		}
		for _, c := range n.children {
			ch, err := build(c, norm*float64(c.a.EffectiveShares())/sum)
			if err != nil {
				return nil, err
			}
			s.Children = append(s.Children, ch)
		}
		return s, nil
	}
	tree, err := build(root, 1)
	if err != nil {
		return nil, err
	}
	total := tree.Usage.Raw
	tree.Walk(func(n *ShareNode, _ int) bool {
		if total > 0 {
			n.NormUsage = min(n.Usage.Raw/total, 1)
		}
		return true
	})
	return tree, nil
}

// Walk calls fn for n and every descendant depth-first in order, with its
// depth (0 for n), until fn returns false.
func (n *ShareNode) Walk(fn func(n *ShareNode, depth int) bool) {
	var rec func(x *ShareNode, d int) bool
	rec = func(x *ShareNode, d int) bool {
		if !fn(x, d) {
			return false
		}
		for _, c := range x.Children {
			if !rec(c, d+1) {
				return false
			}
		}
		return true
	}
	rec(n, 0)
}
