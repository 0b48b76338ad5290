package policy

import (
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/gres"
)

// Request is what limit checks need to know about one job. The scheduler
// builds it once per job (and again when the job changes).
type Request struct {
	// Subject is the job's resolved identity (Policy.Resolve).
	Subject Subject
	// TRES is the whole job's TRES: cpu, mem, node, billing, gres/…,
	// license/…. At start time pass what the job will be allocated when
	// it is known (whole nodes for --exclusive), as Slurm checks the
	// allocation after node selection.
	TRES gres.Vector
	// PerNode is the largest TRES the job uses on any one node.
	PerNode gres.Vector
	// Nodes is the job's node count; it overrides TRES's node entry.
	Nodes int
	// TimeLimit is the job's time limit; zero is read as unlimited
	// (MaxLimitDuration), so time-based limits refuse it.
	TimeLimit time.Duration
	// Tasks is the number of jobs submitted at once (array tasks) that
	// CheckSubmit tests the submit limits with; zero means 1.
	Tasks int
	// Reservation is the reservation the job names, if any (for the
	// QOS RequiresReservation flag and partition ReqResv).
	Reservation string
	// FairShare is the association's fair-share factor in [0, 1], read
	// when HasFairShare is set, against the QOS UsageThreshold.
	FairShare    float64
	HasFairShare bool
}

// jobVal returns what the job asks of TRES t.
func (r *Request) jobVal(t gres.ID) int64 {
	if t == gres.Node && r.Nodes > 0 {
		return int64(r.Nodes)
	}
	return r.TRES.At(t)
}

func (r *Request) seconds() int64 {
	d := r.TimeLimit
	if d <= 0 || d > MaxLimitDuration {
		d = MaxLimitDuration
	}
	return int64((d + time.Second - 1) / time.Second)
}

func (r *Request) minutes() int64 {
	return (r.seconds() + 59) / 60
}

func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

type checkMode uint8

const (
	modeStart checkMode = iota
	modeSubmit
)

// CheckStart reports whether r may start now under the limits, given the
// usage counters: the zero Blocker when it may, else the first limit in
// hierarchy order that holds it, with Slurm's reason and the numbers
// (limit, current usage, what the job adds). u may be nil (no usage). It
// costs O(levels × limits set) and allocates only to describe a blocker.
//
// Access rules come first (AccountNotAllowed, QOSNotAllowed), then the QOS
// UsageThreshold, then the QOS levels, the association levels and the
// partition's own limits. Running jobs are never judged: a limit lowered
// below current usage only holds new starts.
func (p *Policy) CheckStart(now time.Time, r *Request, u *Usage) Blocker {
	return p.check(now, r, u, modeStart, nil)
}

// CheckStartAll is CheckStart reporting every limit that holds r, appended
// to dst: what an explanation lists as "would have to change".
func (p *Policy) CheckStartAll(now time.Time, r *Request, u *Usage, dst []Blocker) []Blocker {
	p.check(now, r, u, modeStart, &dst)
	return dst
}

// CheckSubmit decides whether r may be queued at all. It rejects, with a
// *LimitError wrapping ErrNotAllowed, a job its partition or association
// refuses (AllowAccounts, DenyQOS, the association QOS list, a missing
// reservation under RequiresReservation or ReqResv); with ErrLimit, a job
// that would pass a MaxSubmitJobs*/GrpSubmitJobs limit (r.Tasks jobs at
// once); and, when any of its QOS has DenyOnLimit, a job that on its own
// breaks a limit (Max limits; Grp limits read as Max) — without that flag
// such jobs are accepted and pend. With Config.EnforcePartLimits the
// partition's MaxTime and node limits reject too. Errors wrap
// ErrInvalidRequest for malformed requests.
func (p *Policy) CheckSubmit(r *Request, u *Usage) error {
	if err := p.validRequest(r); err != nil {
		return err
	}
	if d := r.Subject.denied; d != nil {
		return &LimitError{Blocker: *d, err: ErrNotAllowed}
	}
	if c := r.Subject.pl.needResv; c.Limit != "" && r.Reservation == "" {
		return &LimitError{Blocker: Blocker{Constraint: c, Detail: "the job must name a reservation"}, err: ErrNotAllowed}
	}
	b := p.check(time.Time{}, r, u, modeSubmit, nil)
	if b.Blocked() {
		return &LimitError{Blocker: b, err: ErrLimit}
	}
	return nil
}

func (p *Policy) validRequest(r *Request) error {
	switch {
	case r.Subject.pl == nil:
		return fmt.Errorf("policy: %w: request has no Subject (use Policy.Resolve)", ErrInvalidRequest)
	case r.Subject.pl.owner != p:
		return fmt.Errorf("policy: %w: Subject was resolved by another Policy", ErrInvalidRequest)
	case r.Nodes < 0 || r.Tasks < 0 || r.TimeLimit < 0:
		return fmt.Errorf("policy: %w: negative Nodes %d, Tasks %d or TimeLimit %v", ErrInvalidRequest, r.Nodes, r.Tasks, r.TimeLimit)
	case len(r.TRES) > p.reg.Len() || len(r.PerNode) > p.reg.Len():
		return fmt.Errorf("policy: %w: TRES vector longer than the registry (%d)", ErrInvalidRequest, p.reg.Len())
	}
	for _, v := range []gres.Vector{r.TRES, r.PerNode} {
		for i, x := range v {
			if x < 0 || x > gres.MaxCount {
				return fmt.Errorf("policy: %w: TRES %s = %d out of range", ErrInvalidRequest, p.reg.Name(gres.ID(i)), x)
			}
		}
	}
	return nil
}

var blockMisuse = Blocker{Constraint: Constraint{Reason: ReasonAccountingPolicy, Limit: "Usage"}}

// check returns the first blocker of r in hierarchy order. With all
// non-nil it appends every blocker to *all instead and returns the zero
// Blocker.
func (p *Policy) check(now time.Time, r *Request, u *Usage, mode checkMode, all *[]Blocker) Blocker {
	// emit reports whether b is the answer (first-blocker mode); in
	// all-blockers mode it collects b and the check goes on.
	emit := func(b Blocker) bool {
		if all == nil {
			return true
		}
		*all = append(*all, b)
		return false
	}
	pl := r.Subject.pl
	if pl == nil || pl.owner != p || (u != nil && u.p != p) {
		b := blockMisuse
		b.Detail = "request subject or usage counters belong to another policy (Resolve again, or Usage.Rebind)"
		if emit(b) {
			return b
		}
		return Blocker{}
	}
	if mode == modeStart {
		if d := r.Subject.denied; d != nil {
			if emit(*d) {
				return *d
			}
		}
		if c := pl.needResv; c.Limit != "" && r.Reservation == "" {
			b := Blocker{Constraint: c, Detail: "the job must name a reservation"}
			if emit(b) {
				return b
			}
		}
		if pl.threshold > 0 && r.HasFairShare && r.FairShare < pl.threshold {
			q := &p.qos[pl.jobQOS]
			b := Blocker{Constraint: Constraint{Reason: ReasonQOSUsageThreshold, Limit: "UsageThreshold", Level: LevelJobQOS, Entity: q.Name},
				Detail: fmt.Sprintf("association fair-share %.4g is below %.4g", r.FairShare, pl.threshold)}
			if emit(b) {
				return b
			}
		}
	}
	tasks := int64(max(r.Tasks, 1))
	nowSec := now.Unix()
	for i := range pl.entries {
		e := &pl.entries[i]
		usage, add, bad, ok := p.eval(e, nowSec, r, u, mode, tasks)
		if !ok || !bad {
			continue
		}
		if b := p.blocker(e, r, usage, add); emit(b) {
			return b
		}
	}
	return Blocker{}
}

// eval computes one entry: usage counted, what the job adds, whether it is
// violated, and whether the entry applies in this mode at all.
func (p *Policy) eval(e *entry, now int64, r *Request, u *Usage, mode checkMode, tasks int64) (usage, add int64, bad, applies bool) {
	submit := mode == modeSubmit
	deny := submit && r.Subject.pl.denyOnLimit
	if e.kind.submitOnly() {
		if !submit {
			return 0, 0, false, false
		}
		c := u.counterFor(e, r)
		if c != nil {
			usage = c.submit
		}
		return usage, tasks, satAdd(usage, tasks) > e.limit, true
	}
	if submit {
		part := e.kind >= kindPartMaxTime
		if !(deny && !part) && !(part && p.cfg.EnforcePartLimits && e.kind != kindPartMaxCPUsPerNode) {
			return 0, 0, false, false
		}
	}
	t := e.tres
	if t >= 0 && e.kind <= kindMaxTRESPerAccount && e.kind != kindMaxTRESPerNode && r.jobVal(t) == 0 {
		// A job asking none of a TRES is never held by that TRES's limits
		// (a CPU job ignores an exhausted GPU budget): skip it before
		// looking up any counter.
		return 0, 0, false, false
	}
	var g *group
	var c *counter
	if !submit {
		c = u.counterFor(e, r)
		if e.scope == scQOS || e.scope == scAssoc {
			g = u.groupFor(e)
		}
	}
	usage, add, bad = p.evalRead(e, now, r, c, g, submit)
	return usage, add, bad, true
}

// evalRead is eval past the checks of whether the entry applies: the
// entry read from counter c and group g (those u.counterFor and
// u.groupFor give; nil in submit mode or without usage).
func (p *Policy) evalRead(e *entry, now int64, r *Request, c *counter, g *group, submit bool) (usage, add int64, bad bool) {
	t := e.tres
	switch e.kind {
	case kindGrpTRES, kindMaxTRESPerUser, kindMaxTRESPerAccount:
		add = r.jobVal(t)
		if c != nil {
			usage = c.tres[t]
		}
		return usage, add, satAdd(usage, add) > e.limit
	case kindGrpTRESMins:
		add = satMul(r.jobVal(t), r.minutes())
		if submit {
			return 0, add, add > e.limit
		}
		if g != nil {
			usage = g.usedMins[t]
		}
		if p.cfg.SafeLimits {
			return usage, add, satAdd(usage, add) > e.limit
		}
		return usage, add, usage >= e.limit
	case kindGrpTRESRunMins:
		add = satMul(r.jobVal(t), r.minutes())
		if g != nil {
			usage = g.runMins(int(t), now)
		}
		return usage, add, satAdd(usage, add) > e.limit
	case kindMaxTRESPerJob, kindPartMaxNodes:
		add = r.jobVal(t)
		return 0, add, add > e.limit
	case kindMinTRESPerJob, kindPartMinNodes:
		add = r.jobVal(t)
		return 0, add, add < e.limit
	case kindMaxTRESPerNode, kindPartMaxCPUsPerNode:
		add = r.PerNode.At(t)
		return 0, add, add > e.limit
	case kindMaxTRESMinsPerJob:
		add = satMul(r.jobVal(t), r.minutes())
		return 0, add, add > e.limit
	case kindGrpJobs, kindMaxJobsPerUser, kindMaxJobsPerAccount, kindAssocMaxJobs:
		if c != nil {
			usage = c.jobs
		}
		return usage, 1, usage+1 > e.limit
	case kindGrpWall:
		add = r.seconds()
		if submit {
			return 0, add, add > e.limit
		}
		if g != nil {
			usage = g.usedWall
		}
		if p.cfg.SafeLimits {
			return usage, add, satAdd(usage, add) > e.limit
		}
		return usage, add, usage >= e.limit
	case kindMaxWall, kindPartMaxTime:
		add = r.seconds()
		return 0, add, add > e.limit
	}
	return 0, 0, false
}

// counterFor returns the counter an entry reads, or nil (no usage yet).
func (u *Usage) counterFor(e *entry, r *Request) *counter {
	if u == nil {
		return nil
	}
	switch e.scope {
	case scQOS:
		return &u.qos[e.ctr].grp.counter
	case scQOSUser:
		return u.qos[e.ctr].users[r.Subject.ref.User]
	case scQOSAcct:
		return u.qos[e.ctr].accounts[r.Subject.ref.Account]
	case scAssoc:
		return &u.assoc[e.ctr].counter
	}
	return nil
}

func (u *Usage) groupFor(e *entry) *group {
	if u == nil {
		return nil
	}
	if e.scope == scQOS {
		return &u.qos[e.ctr].grp
	}
	return &u.assoc[e.ctr]
}

// constraint describes entry e.
func (p *Policy) constraint(e *entry) Constraint {
	c := Constraint{Reason: e.reason, Limit: kindNames[e.kind], Level: e.level, Value: e.limit}
	switch e.level {
	case LevelPartitionQOS, LevelJobQOS:
		c.Entity = p.qos[e.ent].Name
	case LevelUser, LevelAccount, LevelRoot:
		c.Entity = p.assocs[e.ent].display
	case LevelPartition:
		c.Entity = p.parts[e.ent].Name
	}
	switch e.kind {
	case kindGrpTRESMins, kindGrpTRESRunMins, kindMaxTRESMinsPerJob:
		c.Unit = UnitTRESMinutes
	case kindGrpJobs, kindGrpSubmit, kindMaxJobsPerUser, kindMaxJobsPerAccount, kindMaxSubmitPerUser,
		kindMaxSubmitPerAccount, kindAssocMaxJobs, kindAssocMaxSubmit:
		c.Unit = UnitJobs
	case kindGrpWall, kindMaxWall, kindPartMaxTime:
		c.Unit = UnitSeconds
	default:
		c.Unit = UnitCount
	}
	if e.tres >= 0 {
		c.TRES = p.reg.Name(e.tres)
	}
	return c
}

func (p *Policy) blocker(e *entry, r *Request, usage, add int64) Blocker {
	b := Blocker{Constraint: p.constraint(e), Usage: usage, Request: add}
	switch e.scope {
	case scQOS:
		b.Holder = "QOS " + p.qos[e.ctr].Name
	case scQOSUser:
		b.Holder = "user " + r.Subject.ref.User
	case scQOSAcct:
		b.Holder = "account " + r.Subject.ref.Account
	case scAssoc:
		a := &p.assocs[e.ctr]
		b.Holder = a.display
		if a.User == "" {
			b.Holder += " (subtree)"
		}
	}
	return b
}

// Constraints lists the limits in force for s after the hierarchy has
// been applied — the first level that sets each limit, every
// association's Grp limits, the partition's bounds — in check order,
// followed by any access refusal. It is what "which limits apply to me"
// answers, and the data behind the resource_limits example: a partition
// QOS MaxJobsPerUser=20 with a user association MaxJobs=4 and
// MaxSubmitJobs=50 yields MaxJobsPerUser=20 (partition QOS) and
// MaxSubmitJobs=50 (user association).
func (p *Policy) Constraints(s Subject) []Constraint {
	if s.pl == nil || s.pl.owner != p {
		return nil
	}
	out := make([]Constraint, 0, len(s.pl.entries)+1)
	for i := range s.pl.entries {
		out = append(out, p.constraint(&s.pl.entries[i]))
	}
	if s.denied != nil {
		out = append(out, s.denied.Constraint)
	}
	return out
}

// DenyOnLimit reports whether any QOS of s has the DenyOnLimit flag.
func (s Subject) DenyOnLimit() bool { return s.pl != nil && s.pl.denyOnLimit }

// NoReserve reports whether the job's QOS (job or partition QOS) has the
// NoReserve flag: the planner should make no backfill reservation for it.
func (s Subject) NoReserve() bool {
	if s.pl == nil {
		return false
	}
	for _, q := range s.pl.qosOrder {
		if s.pl.owner.qos[q].Flags.Has(QOSNoReserve) {
			return true
		}
	}
	return false
}

// PreemptRank orders jobs as Slurm's queue sort does with preemption on,
// where a job that may preempt another is considered before it: a job
// whose rank is higher comes first. Under PreemptQOS it is the length of
// the longest chain of QOS the job's QOS may preempt (so a job ranks
// above every job it may preempt); under PreemptPartitionPrio its
// partition's PriorityTier; 0 without preemption or a resolved subject.
func (s Subject) PreemptRank() int {
	if s.pl == nil {
		return 0
	}
	p := s.pl.owner
	switch p.cfg.PreemptType {
	case PreemptQOS:
		if q := s.pl.jobQOS; q >= 0 {
			return int(p.preemptDepth[q])
		}
	case PreemptPartitionPrio:
		if s.pl.part >= 0 {
			return p.parts[s.pl.part].Tier()
		}
	}
	return 0
}

// QOSPriority returns the job QOS's priority (0 without a QOS).
func (s Subject) QOSPriority() uint32 {
	if s.pl == nil || s.pl.jobQOS < 0 {
		return 0
	}
	return s.pl.owner.qos[s.pl.jobQOS].Priority
}
