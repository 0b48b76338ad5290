package policy

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gres"
)

// JobID identifies a job in the caller's records (the scheduler's JobID
// converts directly).
type JobID uint64

// AssocKey names one association: an account (User empty) or a user's
// association with an account, optionally for one partition.
type AssocKey struct {
	Account, User, Partition string
}

// maxCounter bounds every aggregate so that sums never overflow int64.
const maxCounter = math.MaxInt64 / 4

// counter is what per-user and per-account QOS limits read.
type counter struct {
	tres   []int64
	jobs   int64 // running
	submit int64 // pending + running
}

// group is what Grp limits read: running TRES and jobs, the TRES × end
// time sum behind GrpTRESRunMins, and the decayed usage the caller reports.
type group struct {
	counter
	runEnd   []i128 // Σ over running jobs of TRES × end (Unix seconds)
	usedMins []int64
	usedWall int64 // seconds
}

type qosUsage struct {
	grp      group
	users    map[string]*counter
	accounts map[string]*counter
}

type jobRec struct {
	sub     Subject
	running bool
	alloc   []int64
	end     int64 // Unix seconds
}

type usedRec struct {
	mins gres.Vector
	wall time.Duration
}

// Usage holds the counters limits are checked against: per QOS (group,
// per user, per account) and per association (subtree), the running TRES,
// running and submitted jobs, TRES × remaining time of running jobs, and
// the decayed TRES-minutes and wall time the caller's ledger reports. The
// scheduler keeps one Usage and tells it about every job: AddJob at
// submission, StartJob/StopJob when it starts and stops running, RemoveJob
// when it leaves the system. Each check then costs O(levels × limits),
// never O(jobs).
//
// A Usage belongs to the Policy that made it; after building a new Policy
// call Rebind. Not safe for concurrent mutation.
type Usage struct {
	p         *Policy
	ntres     int
	qos       []qosUsage
	assoc     []group
	jobs      map[JobID]*jobRec
	usedQOS   map[string]usedRec
	usedAssoc map[AssocKey]usedRec
	// plans counts the jobs of each plan the jobs' subjects hold (of
	// this policy or, after Rebind's fast path, of older ones that count
	// alike), with one job's names: what Rebind checks instead of every
	// job.
	plans map[*plan]*planUse
	// layout counts the moves of the counter and group structures (bind,
	// Rebind's fast path): what a StartCheck's pointers into them are
	// valid for. Per-user and per-account counters, once made, stay
	// where they are until then.
	layout uint64
}

// planUse is how many counted jobs hold a plan, and one job's names.
type planUse struct {
	n   int
	ref JobRef
}

// NewUsage returns empty counters for p.
func (p *Policy) NewUsage() *Usage {
	u := &Usage{jobs: make(map[JobID]*jobRec), usedQOS: make(map[string]usedRec), usedAssoc: make(map[AssocKey]usedRec)}
	u.bind(p)
	return u
}

func (u *Usage) bind(p *Policy) {
	u.layout++
	u.p = p
	u.ntres = p.reg.Len()
	u.qos = make([]qosUsage, len(p.qos))
	for i := range u.qos {
		u.qos[i] = qosUsage{grp: u.newGroup(), users: make(map[string]*counter), accounts: make(map[string]*counter)}
	}
	u.assoc = make([]group, len(p.assocs))
	for i := range u.assoc {
		u.assoc[i] = u.newGroup()
	}
	u.plans = make(map[*plan]*planUse)
}

// usePlan counts one job more (d 1) or fewer (d -1) holding s's plan.
func (u *Usage) usePlan(s Subject, d int) {
	pu := u.plans[s.pl]
	if pu == nil {
		pu = &planUse{ref: s.ref}
		u.plans[s.pl] = pu
	}
	if pu.n += d; pu.n <= 0 {
		delete(u.plans, s.pl)
	}
}

func (u *Usage) newGroup() group {
	return group{counter: counter{tres: make([]int64, u.ntres)}, runEnd: make([]i128, u.ntres), usedMins: make([]int64, u.ntres)}
}

// Policy returns the policy the counters belong to.
func (u *Usage) Policy() *Policy { return u.p }

// Len returns the number of jobs counted (pending and running).
func (u *Usage) Len() int { return len(u.jobs) }

// AddJob counts a submitted job (pending): it adds one to every submit
// counter of its QOS (group, user, account) and associations. Array tasks
// are separate jobs: add each. Errors: ErrDuplicateJob, ErrInvalidRequest
// for a subject of another policy.
func (u *Usage) AddJob(id JobID, s Subject) error {
	if _, dup := u.jobs[id]; dup {
		return fmt.Errorf("policy: job %d: %w", id, ErrDuplicateJob)
	}
	if s.pl == nil || s.pl.owner != u.p {
		return fmt.Errorf("policy: job %d: %w: subject not resolved by this usage's policy", id, ErrInvalidRequest)
	}
	u.jobs[id] = &jobRec{sub: s}
	u.usePlan(s, 1)
	u.each(s, func(c *counter, _ *group) { c.submit++ })
	return nil
}

// StartJob counts job id as running with allocation alloc (the TRES it
// holds, node count included; when alloc's node entry is 0, nodes is used)
// until end (its start plus time limit, for GrpTRESRunMins). The job must
// have been added with AddJob. Suspended jobs keep running in the counters
// (they hold their resources). Errors: ErrUnknownJob, ErrDuplicateJob when
// already running, ErrInvalidRequest for a negative or oversized vector.
func (u *Usage) StartJob(id JobID, alloc gres.Vector, nodes int, end time.Time) error {
	j, ok := u.jobs[id]
	if !ok {
		return fmt.Errorf("policy: start job %d: %w", id, ErrUnknownJob)
	}
	if j.running {
		return fmt.Errorf("policy: start job %d: %w (already running)", id, ErrDuplicateJob)
	}
	if len(alloc) > u.ntres {
		return fmt.Errorf("policy: start job %d: %w: vector of %d TRES, registry has %d", id, ErrInvalidRequest, len(alloc), u.ntres)
	}
	a := make([]int64, u.ntres)
	copy(a, alloc)
	if a[gres.Node] == 0 && nodes > 0 {
		a[gres.Node] = int64(nodes)
	}
	for i, x := range a {
		if x < 0 || x > gres.MaxCount {
			return fmt.Errorf("policy: start job %d: %w: TRES %s = %d", id, ErrInvalidRequest, u.p.reg.Name(gres.ID(i)), x)
		}
	}
	// Refuse before changing anything when an aggregate would overflow.
	var over error
	u.each(j.sub, func(c *counter, _ *group) {
		for i, x := range a {
			if over == nil && c.tres[i] > maxCounter-x {
				over = fmt.Errorf("policy: start job %d: TRES %s aggregate: %w", id, u.p.reg.Name(gres.ID(i)), gres.ErrOverflow)
			}
		}
	})
	if over != nil {
		return over
	}
	j.running, j.alloc, j.end = true, a, end.Unix()
	u.apply(j, 1)
	return nil
}

// StopJob removes job id from the running counters (it ended, was
// requeued or cancelled by preemption); it stays submitted until RemoveJob.
// Errors: ErrUnknownJob; stopping a job that is not running is a no-op.
func (u *Usage) StopJob(id JobID) error {
	j, ok := u.jobs[id]
	if !ok {
		return fmt.Errorf("policy: stop job %d: %w", id, ErrUnknownJob)
	}
	if j.running {
		u.apply(j, -1)
		j.running, j.alloc = false, nil
	}
	return nil
}

// SetEnd changes a running job's expected end (its time limit changed, or
// a GraceTime kill is scheduled). Errors: ErrUnknownJob.
func (u *Usage) SetEnd(id JobID, end time.Time) error {
	j, ok := u.jobs[id]
	if !ok || !j.running {
		return fmt.Errorf("policy: set end of job %d: %w (not running)", id, ErrUnknownJob)
	}
	u.apply(j, -1)
	j.end = end.Unix()
	u.apply(j, 1)
	return nil
}

// RemoveJob forgets job id (it finished, was cancelled or purged): it
// leaves the running counters if it was running, and the submit counters.
// Errors: ErrUnknownJob.
func (u *Usage) RemoveJob(id JobID) error {
	j, ok := u.jobs[id]
	if !ok {
		return fmt.Errorf("policy: remove job %d: %w", id, ErrUnknownJob)
	}
	if j.running {
		u.apply(j, -1)
	}
	u.each(j.sub, func(c *counter, _ *group) { c.submit-- })
	u.usePlan(j.sub, -1)
	delete(u.jobs, id)
	return nil
}

// apply adds (sign 1) or removes (-1) a running job's allocation.
func (u *Usage) apply(j *jobRec, sign int64) {
	u.each(j.sub, func(c *counter, g *group) {
		c.jobs += sign
		for i, x := range j.alloc {
			if x == 0 {
				continue
			}
			c.tres[i] += sign * x
			if g != nil {
				d := mul64(x, j.end)
				if sign < 0 {
					d = d.neg()
				}
				g.runEnd[i] = g.runEnd[i].add(d)
			}
		}
	})
}

// each calls f on every counter a job of subject s touches: each of its
// QOS's group, user and account counters, and each association on its
// path (g is nil for per-user/account counters).
func (u *Usage) each(s Subject, f func(c *counter, g *group)) {
	for _, q := range s.pl.qosOrder {
		qu := &u.qos[q]
		f(&qu.grp.counter, &qu.grp)
		f(u.mapCounter(qu.users, s.ref.User), nil)
		f(u.mapCounter(qu.accounts, s.ref.Account), nil)
	}
	for _, a := range s.pl.path {
		g := &u.assoc[a]
		f(&g.counter, g)
	}
}

func (u *Usage) mapCounter(m map[string]*counter, k string) *counter {
	c, ok := m[k]
	if !ok {
		c = &counter{tres: make([]int64, u.ntres)}
		m[k] = c
	}
	return c
}

// SetQOSUsed records a QOS's decayed usage from the caller's ledger: the
// TRES-minutes GrpTRESMins reads and the wall time GrpWall reads. Call it
// whenever the ledger recomputes usage (e.g. each decay period). Errors:
// ErrUnknownQOS, ErrInvalidRequest for negative values.
func (u *Usage) SetQOSUsed(qos string, tresMins gres.Vector, wall time.Duration) error {
	q, ok := u.p.qosByName[qos]
	if !ok {
		return fmt.Errorf("policy: set usage: %w %q", ErrUnknownQOS, qos)
	}
	if err := u.setUsed(&u.qos[q].grp, tresMins, wall); err != nil {
		return fmt.Errorf("policy: set usage of QOS %q: %w", qos, err)
	}
	u.usedQOS[qos] = usedRec{slices.Clone(tresMins), wall}
	return nil
}

// SetAssocUsed records an association's decayed usage (its whole subtree,
// as the ledger computes it), like SetQOSUsed. Errors: ErrUnknownAccount.
func (u *Usage) SetAssocUsed(key AssocKey, tresMins gres.Vector, wall time.Duration) error {
	a, ok := u.p.assocIndex(key)
	if !ok {
		return fmt.Errorf("policy: set usage: %w %+v", ErrUnknownAccount, key)
	}
	if err := u.setUsed(&u.assoc[a], tresMins, wall); err != nil {
		return fmt.Errorf("policy: set usage of association %+v: %w", key, err)
	}
	u.usedAssoc[key] = usedRec{slices.Clone(tresMins), wall}
	return nil
}

func (u *Usage) setUsed(g *group, mins gres.Vector, wall time.Duration) error {
	if len(mins) > u.ntres {
		return fmt.Errorf("%w: vector of %d TRES, registry has %d", ErrInvalidRequest, len(mins), u.ntres)
	}
	if wall < 0 {
		return fmt.Errorf("%w: negative wall time %v", ErrInvalidRequest, wall)
	}
	for i, x := range mins {
		if x < 0 {
			return fmt.Errorf("%w: negative TRES-minutes %d for %s", ErrInvalidRequest, x, u.p.reg.Name(gres.ID(i)))
		}
	}
	clear(g.usedMins)
	copy(g.usedMins, mins)
	g.usedWall = int64(wall / time.Second)
	return nil
}

func (p *Policy) assocIndex(k AssocKey) (int32, bool) {
	if k.User == "" {
		i, ok := p.acctByName[k.Account]
		return i, ok
	}
	i, ok := p.userAssoc[userKey{k.User, k.Account, k.Partition}]
	return i, ok
}

// Rebind moves the counters to a new policy (limits or QOS changed): every
// job is resolved again under p (Policy.Rebase) and recounted, and the
// reported decayed usage (GrpTRESMins, GrpWall) is carried over by name.
// Jobs whose partition, QOS or association no longer resolves are dropped
// and returned (sorted); running jobs are never affected otherwise — a
// lowered limit only holds new starts.
//
// When p keeps the old policy's QOS and associations where they were
// (the same names at the same indices, new ones after them, the same
// account tree) and every job's QOS and association path are what they
// were, the counters stay as they are and only the jobs' subjects move:
// a change of limits, priorities, flags or partitions costs a map lookup
// per job, not a recount.
func (u *Usage) Rebind(p *Policy) (dropped []JobID) {
	if p == u.p {
		return nil
	}
	if u.rebindInPlace(p) {
		return nil
	}
	old := u.jobs
	u.jobs = make(map[JobID]*jobRec, len(old))
	u.p.rebased = nil
	u.bind(p)
	ids := make([]JobID, 0, len(old))
	for id := range old {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		j := old[id]
		s, err := p.Rebase(j.sub)
		if err != nil || u.AddJob(id, s) != nil {
			dropped = append(dropped, id)
			continue
		}
		if j.running {
			nj := u.jobs[id]
			nj.running, nj.alloc, nj.end = true, j.alloc, j.end
			if len(nj.alloc) != u.ntres {
				a := make([]int64, u.ntres)
				copy(a, nj.alloc)
				nj.alloc = a
			}
			u.apply(nj, 1)
		}
	}
	for _, name := range sortedKeys(u.usedQOS, func(a, b string) int { return strings.Compare(a, b) }) {
		r := u.usedQOS[name]
		if u.SetQOSUsed(name, r.mins, r.wall) != nil {
			delete(u.usedQOS, name)
		}
	}
	for _, k := range sortedKeys(u.usedAssoc, compareAssocKey) {
		r := u.usedAssoc[k]
		if u.SetAssocUsed(k, r.mins, r.wall) != nil {
			delete(u.usedAssoc, k)
		}
	}
	return dropped
}

// rebindInPlace is Rebind's fast path: when p keeps the counters' layout
// (see Rebind) and every plan the jobs hold resolves under p to a plan
// with the same QOS and association path, the counters stay, the jobs
// keep their subjects (which count exactly as their rebased ones would;
// Rebind and Rebase move them later), empty counters are added for the
// QOS and associations p adds, and it reports true. It changes nothing
// when it reports false.
func (u *Usage) rebindInPlace(p *Policy) bool {
	o := u.p
	if p.reg != o.reg || len(p.qos) < len(o.qos) || len(p.assocs) < len(o.assocs) {
		return false
	}
	for i := range o.qos {
		if p.qos[i].Name != o.qos[i].Name {
			return false
		}
	}
	for i := range o.assocs {
		a, b := &o.assocs[i], &p.assocs[i]
		if a.Account != b.Account || a.User != b.User || a.Partition != b.Partition || !slices.Equal(a.path, b.path) {
			return false
		}
	}
	for pl, use := range u.plans {
		s, err := p.Rebase(Subject{ref: use.ref, pl: pl})
		if err != nil || !slices.Equal(s.pl.qosOrder, pl.qosOrder) || !slices.Equal(s.pl.path, pl.path) {
			return false
		}
		if (pl.part < 0 && len(p.parts) > 0) || (pl.assoc < 0 && len(p.assocs) > 0) {
			return false // each job's names count: recount
		}
	}
	u.p = p
	u.layout++ // the slices below may move
	for range len(p.qos) - len(o.qos) {
		u.qos = append(u.qos, qosUsage{grp: u.newGroup(), users: make(map[string]*counter), accounts: make(map[string]*counter)})
	}
	for range len(p.assocs) - len(o.assocs) {
		u.assoc = append(u.assoc, u.newGroup())
	}
	o.rebased = nil // o's own cache is not needed any more
	return true
}

// Compact moves every counted job's subject to the usage's policy, so
// that the older policies Rebind's fast path left them on can be freed.
// It costs a map lookup per job; counts do not change.
func (u *Usage) Compact() {
	for _, j := range u.jobs {
		if j.sub.pl.owner == u.p {
			continue
		}
		s, err := u.p.Rebase(j.sub)
		if err != nil {
			continue // cannot happen after rebindInPlace; keep what counts
		}
		u.usePlan(j.sub, -1)
		j.sub = s
		u.usePlan(s, 1)
	}
}

func compareAssocKey(a, b AssocKey) int {
	if c := strings.Compare(a.Account, b.Account); c != 0 {
		return c
	}
	if c := strings.Compare(a.User, b.User); c != 0 {
		return c
	}
	return strings.Compare(a.Partition, b.Partition)
}

// sortedKeys returns m's keys in cmp order.
func sortedKeys[K comparable, V any](m map[K]V, cmp func(a, b K) int) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, cmp)
	return out
}

// GroupUsage is a snapshot of one QOS's or association's counters.
type GroupUsage struct {
	// Running is the TRES held by running jobs.
	Running gres.Vector
	// Jobs and Submitted count running, and pending plus running, jobs.
	Jobs, Submitted int64
	// RunMins is Σ TRES × remaining time limit (minutes) of running jobs
	// at the given instant (what GrpTRESRunMins reads).
	RunMins gres.Vector
	// UsedMins and UsedWall are the decayed usage last reported.
	UsedMins gres.Vector
	UsedWall time.Duration
}

func (u *Usage) snapshot(g *group, now time.Time) GroupUsage {
	out := GroupUsage{Running: slices.Clone(gres.Vector(g.tres)), Jobs: g.jobs, Submitted: g.submit,
		RunMins: make(gres.Vector, u.ntres), UsedMins: slices.Clone(gres.Vector(g.usedMins)),
		UsedWall: time.Duration(g.usedWall) * time.Second}
	for i := range out.RunMins {
		out.RunMins[i] = g.runMins(i, now.Unix())
	}
	return out
}

// runMins returns Σ TRES_i × (end − now) over running jobs, in minutes.
func (g *group) runMins(i int, now int64) int64 {
	return g.runEnd[i].sub(mul64(g.tres[i], now)).divClamp(60)
}

// QOSUsage returns the named QOS's group counters at now.
func (u *Usage) QOSUsage(qos string, now time.Time) (GroupUsage, bool) {
	q, ok := u.p.qosByName[qos]
	if !ok {
		return GroupUsage{}, false
	}
	return u.snapshot(&u.qos[q].grp, now), true
}

// AssocUsage returns an association's (subtree) counters at now.
func (u *Usage) AssocUsage(key AssocKey, now time.Time) (GroupUsage, bool) {
	a, ok := u.p.assocIndex(key)
	if !ok {
		return GroupUsage{}, false
	}
	return u.snapshot(&u.assoc[a], now), true
}

// QOSUserUsage returns a user's running TRES, running jobs and submitted
// jobs in a QOS (what MaxTRESPerUser, MaxJobsPerUser and
// MaxSubmitJobsPerUser read).
func (u *Usage) QOSUserUsage(qos, user string) (running gres.Vector, jobs, submitted int64) {
	return u.qosSide(qos, user, true)
}

// QOSAccountUsage is QOSUserUsage for an account (the Per-Account limits).
func (u *Usage) QOSAccountUsage(qos, account string) (running gres.Vector, jobs, submitted int64) {
	return u.qosSide(qos, account, false)
}

func (u *Usage) qosSide(qos, name string, user bool) (gres.Vector, int64, int64) {
	q, ok := u.p.qosByName[qos]
	if !ok {
		return nil, 0, 0
	}
	m := u.qos[q].accounts
	if user {
		m = u.qos[q].users
	}
	c, ok := m[name]
	if !ok {
		return make(gres.Vector, u.ntres), 0, 0
	}
	return slices.Clone(gres.Vector(c.tres)), c.jobs, c.submit
}
