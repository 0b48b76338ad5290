package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gres"
)

// tresClass groups TRES for reason names (Slurm names limits per class).
type tresClass uint8

const (
	classCPU tresClass = iota
	classMem
	classNode
	classEnergy
	classGRES
	classLicense
	classBilling
	numClasses
)

func classOf(name string) tresClass {
	switch {
	case name == "cpu":
		return classCPU
	case name == "mem":
		return classMem
	case name == "node":
		return classNode
	case name == "energy":
		return classEnergy
	case name == "billing":
		return classBilling
	case strings.HasPrefix(name, "license/"):
		return classLicense
	}
	return classGRES
}

// scope says whether a reason belongs to the QOS or association family.
const (
	scopeQOS = iota
	scopeAssoc
	numScopes
)

// limitKind is one limit family. The first numTRESKinds are per-TRES.
type limitKind uint8

const (
	kindGrpTRES limitKind = iota
	kindGrpTRESMins
	kindGrpTRESRunMins
	kindMaxTRESPerJob
	kindMaxTRESPerNode
	kindMaxTRESMinsPerJob
	kindMaxTRESPerUser
	kindMaxTRESPerAccount
	kindMinTRESPerJob
	numTRESKinds

	kindGrpJobs
	kindGrpSubmit
	kindGrpWall
	kindMaxWall
	kindMaxJobsPerUser
	kindMaxJobsPerAccount
	kindMaxSubmitPerUser
	kindMaxSubmitPerAccount
	kindAssocMaxJobs
	kindAssocMaxSubmit
	kindPartMaxTime
	kindPartMinNodes
	kindPartMaxNodes
	kindPartMaxCPUsPerNode
	numKinds
)

var kindNames = [numKinds]string{
	kindGrpTRES: "GrpTRES", kindGrpTRESMins: "GrpTRESMins", kindGrpTRESRunMins: "GrpTRESRunMins",
	kindMaxTRESPerJob: "MaxTRESPerJob", kindMaxTRESPerNode: "MaxTRESPerNode", kindMaxTRESMinsPerJob: "MaxTRESMinsPerJob",
	kindMaxTRESPerUser: "MaxTRESPerUser", kindMaxTRESPerAccount: "MaxTRESPerAccount", kindMinTRESPerJob: "MinTRESPerJob",
	kindGrpJobs: "GrpJobs", kindGrpSubmit: "GrpSubmitJobs", kindGrpWall: "GrpWall", kindMaxWall: "MaxWall",
	kindMaxJobsPerUser: "MaxJobsPerUser", kindMaxJobsPerAccount: "MaxJobsPerAccount",
	kindMaxSubmitPerUser: "MaxSubmitJobsPerUser", kindMaxSubmitPerAccount: "MaxSubmitJobsPerAccount",
	kindAssocMaxJobs: "MaxJobs", kindAssocMaxSubmit: "MaxSubmitJobs",
	kindPartMaxTime: "MaxTime", kindPartMinNodes: "MinNodes", kindPartMaxNodes: "MaxNodes", kindPartMaxCPUsPerNode: "MaxCPUsPerNode",
}

// submitOnly reports kinds checked only at submission.
func (k limitKind) submitOnly() bool {
	return k == kindGrpSubmit || k == kindMaxSubmitPerUser || k == kindMaxSubmitPerAccount || k == kindAssocMaxSubmit
}

// slot is what the hierarchy shadows: the same limit (kind, TRES) set at a
// higher level hides it at lower ones. Association MaxJobs/MaxSubmitJobs
// are the same slot as a QOS's MaxJobsPerUser/MaxSubmitJobsPerUser.
type slot struct {
	kind limitKind
	tres gres.ID
}

func slotOf(k limitKind, t gres.ID) slot {
	switch k {
	case kindAssocMaxJobs:
		k = kindMaxJobsPerUser
	case kindAssocMaxSubmit:
		k = kindMaxSubmitPerUser
	}
	return slot{k, t}
}

// counterScope says which usage counter an entry compares against.
type counterScope uint8

const (
	scNone    counterScope = iota // per-job limit
	scQOS                         // the QOS's group counter
	scQOSUser                     // the QOS's per-user counter
	scQOSAcct                     // the QOS's per-account counter
	scAssoc                       // an association's (subtree) counter
)

// entry is one limit in force for a plan.
type entry struct {
	kind   limitKind
	scope  counterScope
	level  Level
	ent    int32   // QOS, association or partition index where it is set
	ctr    int32   // QOS or association index whose counters it reads
	tres   gres.ID // -1 for non-TRES limits
	limit  int64   // TRES count, TRES-minutes, jobs or seconds
	reason Reason
}

// plan is the compiled hierarchy for one (partition, QOS, user
// association) combination, shared by all jobs that have it.
type plan struct {
	owner       *Policy
	part        int32
	jobQOS      int32
	qosOrder    []int32
	assoc       int32
	path        []int32
	entries     []entry
	denyOnLimit bool
	// partOverride holds the partition-limit override flags of the job's
	// QOS (PartitionOverrides).
	partOverride QOSFlags
	needResv     Constraint // RequiresReservation / ReqResv, Limit "" if none
	threshold    float64    // job QOS UsageThreshold when enforced
	exempt       time.Duration
}

// JobRef names who runs a job and where: the inputs of Policy.Resolve.
type JobRef struct {
	// User and Account identify the job's association.
	User, Account string
	// Partition names the job's partition (required when the policy has
	// partitions).
	Partition string
	// QOS names the job's QOS; empty takes the association's default, then
	// Config.DefaultQOS, then "normal" when defined.
	QOS string
}

// Subject is a job's resolved identity: its partition, QOS order and
// association path, compiled into the limits in force. Get one from
// Policy.Resolve and keep it with the job; it is small and immutable.
type Subject struct {
	ref    JobRef
	pl     *plan
	denied *Blocker // access refusal, nil when allowed
}

// Ref returns the resolved names (QOS filled in with the effective QOS,
// empty when the job has none).
func (s Subject) Ref() JobRef { return s.ref }

// Valid reports whether s came from Resolve.
func (s Subject) Valid() bool { return s.pl != nil }

// partitionOverrideFlags are the QOS flags that lift a partition limit.
const partitionOverrideFlags = QOSPartitionTimeLimit | QOSPartitionMinNodes | QOSPartitionMaxNodes

// PartitionOverrides returns the partition-limit override flags the job's
// QOS (job or partition QOS) have, among QOSPartitionTimeLimit,
// QOSPartitionMinNodes and QOSPartitionMaxNodes: the partition's MaxTime,
// MinNodes or MaxNodes they name does not hold the job (the QOS's and
// associations' own limits still do). A caller that checks the partition
// limits itself, before CheckStart, must skip the ones named here, as
// CheckStart and CheckSubmit do. Zero for a Subject not from Resolve.
func (s Subject) PartitionOverrides() QOSFlags {
	if s.pl == nil {
		return 0
	}
	return s.pl.partOverride
}

// Resolve looks up ref's partition, QOS and association and returns the
// Subject that CheckSubmit, CheckStart, Usage and preemption take. Errors
// wrap ErrUnknownPartition, ErrUnknownQOS or ErrUnknownAccount and name the
// value. Access rules (AllowAccounts, QOS lists …) are not errors here:
// CheckSubmit rejects and CheckStart pends on them.
//
// Resolve caches compiled plans in p and is therefore not safe for
// concurrent use.
func (p *Policy) Resolve(ref JobRef) (Subject, error) {
	part := int32(-1)
	if len(p.parts) > 0 {
		i, ok := p.partByName[ref.Partition]
		if !ok {
			return Subject{}, fmt.Errorf("policy: job of user %q: %w %q", ref.User, ErrUnknownPartition, ref.Partition)
		}
		part = i
	}
	ua := int32(-1)
	if len(p.assocs) > 0 {
		i, ok := p.userAssoc[userKey{ref.User, ref.Account, ref.Partition}]
		if !ok {
			i, ok = p.userAssoc[userKey{ref.User, ref.Account, ""}]
		}
		if !ok {
			return Subject{}, fmt.Errorf("policy: %w: user %q has no association with account %q", ErrUnknownAccount, ref.User, ref.Account)
		}
		ua = i
	}
	q := int32(-1)
	switch {
	case ref.QOS != "":
		i, ok := p.qosByName[ref.QOS]
		if !ok {
			return Subject{}, fmt.Errorf("policy: job of user %q: %w %q", ref.User, ErrUnknownQOS, ref.QOS)
		}
		q = i
	case ua >= 0 && p.assocs[ua].defaultQOS >= 0:
		q = p.assocs[ua].defaultQOS
	default:
		q = p.defaultQOS
	}
	if q >= 0 {
		ref.QOS = p.qos[q].Name
	}
	key := planKey{part, q, ua}
	pl, ok := p.plans[key]
	if !ok {
		pl = p.buildPlan(part, q, ua)
		p.plans[key] = pl
	}
	return Subject{ref: ref, pl: pl, denied: p.access(pl, ref)}, nil
}

func (p *Policy) tresReason(scope int, k limitKind, t gres.ID) Reason {
	if int(t) < len(p.classes) {
		if r := limitReasonTable[scope][k][p.classes[t]]; r != ReasonNone {
			return r
		}
	}
	if scope == scopeQOS {
		return ReasonQOSResourceLimit
	}
	return ReasonAssociationResourceLimit
}

func intLimit(p *int) (int64, bool) {
	if p == nil {
		return 0, false
	}
	return int64(*p), true
}

func durLimit(d time.Duration) (int64, bool) {
	if d <= 0 {
		return 0, false
	}
	return int64((d + time.Second - 1) / time.Second), true
}

// buildPlan applies Slurm's hierarchy: partition QOS → job QOS (swapped by
// OverPartQOS) → user association → accounts up to root → partition. For
// each limit slot the first level that sets it wins, except that every
// association's Grp limits apply (unless a QOS sets the same slot) and the
// partition's MaxTime/MinNodes/MaxNodes always bind too (unless the QOS
// flags lift them).
func (p *Policy) buildPlan(part, jobQOS, ua int32) *plan {
	pl := &plan{owner: p, part: part, jobQOS: jobQOS, assoc: ua}
	partQOS := int32(-1)
	if part >= 0 {
		partQOS = p.parts[part].qos
	}
	switch {
	case partQOS >= 0 && jobQOS >= 0 && partQOS != jobQOS:
		if p.qos[jobQOS].Flags.Has(QOSOverPartQOS) {
			pl.qosOrder = []int32{jobQOS, partQOS}
		} else {
			pl.qosOrder = []int32{partQOS, jobQOS}
		}
	case jobQOS >= 0:
		pl.qosOrder = []int32{jobQOS}
	case partQOS >= 0:
		pl.qosOrder = []int32{partQOS}
	}
	if ua >= 0 {
		pl.path = p.assocs[ua].path
	}
	taken := make(map[slot]bool)
	var partFlags QOSFlags
	pl.exempt = p.cfg.PreemptExemptTime
	exemptSet := false
	for _, q := range pl.qosOrder {
		qc := &p.qos[q]
		lvl := LevelPartitionQOS // a partition QOS that is also the job's is the job QOS
		if q == jobQOS {
			lvl = LevelJobQOS
		}
		partFlags |= qc.Flags
		if qc.Flags.Has(QOSDenyOnLimit) {
			pl.denyOnLimit = true
		}
		if qc.Flags.Has(QOSRequiresReservation) && pl.needResv.Limit == "" {
			pl.needResv = Constraint{Reason: ReasonQOSNotAllowed, Limit: "RequiresReservation", Level: lvl, Entity: qc.Name}
		}
		if !exemptSet && qc.PreemptExemptTime > 0 {
			pl.exempt, exemptSet = qc.PreemptExemptTime, true
		}
		add := func(k limitKind, sc counterScope, t gres.ID, v int64, r Reason) {
			s := slotOf(k, t)
			if taken[s] {
				return
			}
			taken[s] = true
			pl.entries = append(pl.entries, entry{kind: k, scope: sc, level: lvl, ent: q, ctr: q, tres: t, limit: v, reason: r})
		}
		l := &qc.Limits
		counts := []struct {
			k  limitKind
			sc counterScope
			v  *int
			r  Reason
		}{{kindGrpJobs, scQOS, l.GrpJobs, ReasonQOSGrpJobsLimit}, {kindGrpSubmit, scQOS, l.GrpSubmitJobs, ReasonQOSGrpSubmitJobsLimit},
			{kindMaxJobsPerUser, scQOSUser, l.MaxJobsPerUser, ReasonQOSMaxJobsPerUserLimit},
			{kindMaxJobsPerAccount, scQOSAcct, l.MaxJobsPerAccount, ReasonMaxJobsPerAccount},
			{kindMaxSubmitPerUser, scQOSUser, l.MaxSubmitJobsPerUser, ReasonQOSMaxSubmitJobPerUserLimit},
			{kindMaxSubmitPerAccount, scQOSAcct, l.MaxSubmitJobsPerAccount, ReasonMaxSubmitJobsPerAccount}}
		for _, c := range counts {
			if v, ok := intLimit(c.v); ok {
				add(c.k, c.sc, -1, v, c.r)
			}
		}
		if v, ok := durLimit(l.GrpWall); ok {
			add(kindGrpWall, scQOS, -1, v, ReasonQOSGrpWallLimit)
		}
		if v, ok := durLimit(l.MaxWall); ok {
			add(kindMaxWall, scNone, -1, v, ReasonQOSMaxWallDurationPerJobLimit)
		}
		tres := []struct {
			k  limitKind
			sc counterScope
			l  TRESLimits
		}{{kindGrpTRES, scQOS, l.GrpTRES}, {kindGrpTRESMins, scQOS, l.GrpTRESMins}, {kindGrpTRESRunMins, scQOS, l.GrpTRESRunMins},
			{kindMaxTRESMinsPerJob, scNone, l.MaxTRESMinsPerJob}, {kindMaxTRESPerJob, scNone, l.MaxTRESPerJob},
			{kindMaxTRESPerNode, scNone, l.MaxTRESPerNode}, {kindMaxTRESPerUser, scQOSUser, l.MaxTRESPerUser},
			{kindMaxTRESPerAccount, scQOSAcct, l.MaxTRESPerAccount}, {kindMinTRESPerJob, scNone, l.MinTRESPerJob}}
		for _, c := range tres {
			for t, v := range c.l.All() {
				add(c.k, c.sc, t, v, p.tresReason(scopeQOS, c.k, t))
			}
		}
	}
	if jobQOS >= 0 {
		if q := &p.qos[jobQOS]; q.Flags.Has(QOSEnforceUsageThreshold) && q.UsageThreshold > 0 {
			pl.threshold = q.UsageThreshold
		}
	}
	if ua >= 0 {
		p.planAssoc(pl, ua, jobQOS, taken)
	}
	pl.partOverride = partFlags & partitionOverrideFlags
	if part >= 0 {
		pc := &p.parts[part]
		addP := func(k limitKind, t gres.ID, v int64, r Reason) {
			pl.entries = append(pl.entries, entry{kind: k, level: LevelPartition, ent: part, ctr: -1, tres: t, limit: v, reason: r})
		}
		if v, ok := durLimit(pc.MaxTime); ok && !pl.partOverride.Has(QOSPartitionTimeLimit) {
			addP(kindPartMaxTime, -1, v, ReasonPartitionTimeLimit)
		}
		if pc.MinNodes > 0 && !pl.partOverride.Has(QOSPartitionMinNodes) {
			addP(kindPartMinNodes, gres.Node, int64(pc.MinNodes), ReasonPartitionNodeLimit)
		}
		if pc.MaxNodes > 0 && !pl.partOverride.Has(QOSPartitionMaxNodes) {
			addP(kindPartMaxNodes, gres.Node, int64(pc.MaxNodes), ReasonPartitionNodeLimit)
		}
		if pc.MaxCPUsPerNode > 0 {
			addP(kindPartMaxCPUsPerNode, gres.CPU, int64(pc.MaxCPUsPerNode), ReasonPartitionConfig)
		}
		if pc.ReqResv && pl.needResv.Limit == "" {
			pl.needResv = Constraint{Reason: ReasonReservation, Limit: "ReqResv", Level: LevelPartition, Entity: pc.Name}
		}
	}
	return pl
}

// access checks the partition's account and QOS rules and the
// association's QOS list; it returns nil when the job may run here.
func (p *Policy) access(pl *plan, ref JobRef) *Blocker {
	if pl.part >= 0 {
		pc := &p.parts[pl.part]
		var accts []string
		if pl.assoc >= 0 {
			for _, a := range p.assocs[pl.assoc].path[1:] {
				accts = append(accts, p.assocs[a].Account)
			}
		} else {
			accts = []string{ref.Account}
		}
		deny := func(r Reason, limit, detail string) *Blocker {
			return &Blocker{Constraint: Constraint{Reason: r, Limit: limit, Level: LevelPartition, Entity: pc.Name}, Detail: detail}
		}
		switch {
		case pc.allowAcct != nil:
			ok := false
			for _, a := range accts {
				ok = ok || pc.allowAcct[a]
			}
			if !ok {
				return deny(ReasonAccountNotAllowed, "AllowAccounts", fmt.Sprintf("account %q is not allowed", ref.Account))
			}
		case pc.denyAcct != nil:
			for _, a := range accts {
				if pc.denyAcct[a] {
					return deny(ReasonAccountNotAllowed, "DenyAccounts", fmt.Sprintf("account %q is denied (as %q)", ref.Account, a))
				}
			}
		}
		switch {
		case pc.allowQOS != nil:
			if pl.jobQOS < 0 || !pc.allowQOS[pl.jobQOS] {
				return deny(ReasonQOSNotAllowed, "AllowQOS", fmt.Sprintf("QOS %q is not allowed", ref.QOS))
			}
		case pc.denyQOS != nil:
			if pl.jobQOS >= 0 && pc.denyQOS[pl.jobQOS] {
				return deny(ReasonQOSNotAllowed, "DenyQOS", fmt.Sprintf("QOS %q is denied", ref.QOS))
			}
		}
	}
	if pl.assoc >= 0 && pl.jobQOS >= 0 {
		a := &p.assocs[pl.assoc]
		if a.allowedQOS != nil && !a.allowedQOS[pl.jobQOS] {
			return &Blocker{Constraint: Constraint{Reason: ReasonQOSNotAllowed, Limit: "QOS", Level: LevelUser, Entity: a.display},
				Detail: fmt.Sprintf("QOS %q is not in the association's QOS list", ref.QOS)}
		}
	}
	return nil
}

// planAssoc adds the association levels: every level's Grp limits, and the
// user's Max limits inherited from the closest ancestor that sets them;
// slots a QOS already set are skipped (QOS limits override association
// limits). A job QOS LimitFactor scales the association TRES limits.
func (p *Policy) planAssoc(pl *plan, ua, jobQOS int32, taken map[slot]bool) {
	factor := 0.0
	if jobQOS >= 0 {
		factor = p.qos[jobQOS].LimitFactor
	}
	scale := func(v int64) int64 {
		if factor <= 0 || factor == 1 {
			return v
		}
		f := float64(v) * factor
		if f >= float64(gres.MaxCount) {
			return gres.MaxCount
		}
		return int64(f)
	}
	add := func(k limitKind, sc counterScope, a int32, t gres.ID, v int64, r Reason) {
		if taken[slotOf(k, t)] {
			return
		}
		pl.entries = append(pl.entries, entry{kind: k, scope: sc, level: p.assocs[a].level, ent: a, ctr: a, tres: t, limit: v, reason: r})
	}
	grp := func(a int32) {
		l := &p.assocs[a].Limits
		if v, ok := intLimit(l.GrpJobs); ok {
			add(kindGrpJobs, scAssoc, a, -1, v, ReasonAssocGrpJobsLimit)
		}
		if v, ok := intLimit(l.GrpSubmitJobs); ok {
			add(kindGrpSubmit, scAssoc, a, -1, v, ReasonAssocGrpSubmitJobsLimit)
		}
		if v, ok := durLimit(l.GrpWall); ok {
			add(kindGrpWall, scAssoc, a, -1, v, ReasonAssocGrpWallLimit)
		}
		for t, v := range l.GrpTRES.All() {
			add(kindGrpTRES, scAssoc, a, t, scale(v), p.tresReason(scopeAssoc, kindGrpTRES, t))
		}
		for t, v := range l.GrpTRESMins.All() {
			add(kindGrpTRESMins, scAssoc, a, t, v, p.tresReason(scopeAssoc, kindGrpTRESMins, t))
		}
		for t, v := range l.GrpTRESRunMins.All() {
			add(kindGrpTRESRunMins, scAssoc, a, t, v, p.tresReason(scopeAssoc, kindGrpTRESRunMins, t))
		}
	}
	path := p.assocs[ua].path
	grp(ua)
	// Max limits: the closest association on the path that sets each slot.
	seen := make(map[slot]bool)
	for _, a := range path {
		l := &p.assocs[a].Limits
		one := func(k limitKind, sc counterScope, t gres.ID, v int64, ok bool, r Reason) {
			s := slotOf(k, t)
			if !ok || seen[s] {
				return
			}
			seen[s] = true
			if !taken[s] {
				pl.entries = append(pl.entries, entry{kind: k, scope: sc, level: p.assocs[a].level, ent: a, ctr: ua, tres: t, limit: v, reason: r})
			}
		}
		v, ok := intLimit(l.MaxJobs)
		one(kindAssocMaxJobs, scAssoc, -1, v, ok, ReasonAssocMaxJobsLimit)
		v, ok = intLimit(l.MaxSubmitJobs)
		one(kindAssocMaxSubmit, scAssoc, -1, v, ok, ReasonAssocMaxSubmitJobLimit)
		v, ok = durLimit(l.MaxWall)
		one(kindMaxWall, scNone, -1, v, ok, ReasonAssocMaxWallDurationPerJobLimit)
		for t, x := range l.MaxTRESPerJob.All() {
			one(kindMaxTRESPerJob, scNone, t, scale(x), true, p.tresReason(scopeAssoc, kindMaxTRESPerJob, t))
		}
		for t, x := range l.MaxTRESPerNode.All() {
			one(kindMaxTRESPerNode, scNone, t, scale(x), true, p.tresReason(scopeAssoc, kindMaxTRESPerNode, t))
		}
		for t, x := range l.MaxTRESMinsPerJob.All() {
			one(kindMaxTRESMinsPerJob, scNone, t, x, true, p.tresReason(scopeAssoc, kindMaxTRESMinsPerJob, t))
		}
	}
	for _, a := range path[1:] {
		grp(a)
	}
}
