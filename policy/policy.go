package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gres"
)

// PreemptType selects which jobs may preempt which (slurm.conf PreemptType).
type PreemptType uint8

// Preemption types.
const (
	// PreemptNone (the zero value): no preemption.
	PreemptNone PreemptType = iota
	// PreemptPartitionPrio: a job in a partition of strictly higher
	// PriorityTier may preempt jobs of lower-tier partitions.
	PreemptPartitionPrio
	// PreemptQOS: a job may preempt jobs whose QOS is in its QOS's Preempt
	// list (or of its own QOS with PreemptWithin).
	PreemptQOS
)

var preemptTypeNames = [...]string{"preempt/none", "preempt/partition_prio", "preempt/qos"}

// String returns Slurm's spelling ("preempt/qos").
func (t PreemptType) String() string { return enumString(t, preemptTypeNames[:], "PreemptType") }

// ParsePreemptType parses "preempt/none", "preempt/partition_prio" or
// "preempt/qos" (the "preempt/" prefix is optional, case-insensitive).
func ParsePreemptType(s string) (PreemptType, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimPrefix(t, "preempt/")
	for i, n := range preemptTypeNames {
		if t == strings.TrimPrefix(n, "preempt/") {
			return PreemptType(i), nil
		}
	}
	return 0, fmt.Errorf("%w: PreemptType %q: want preempt/none, preempt/partition_prio or preempt/qos", ErrSyntax, s)
}

// RootAccount is the name of the root of the association tree.
const RootAccount = "root"

// Assoc is one association: an account node of the tree (User empty) or a
// user's association with an account (optionally for one partition). Zero
// values mean "not set": limits and QOS lists are inherited from the
// parent account.
type Assoc struct {
	// Account is the account (for a user association: the account the
	// user charges).
	Account string
	// User is the user of a user association; empty for an account.
	User string
	// Partition restricts a user association to one partition; a job uses
	// its partition-specific association when one exists, else the user's
	// general one. Empty: all partitions.
	Partition string
	// Parent is an account association's parent account; empty means
	// root. Ignored for user associations (their parent is Account).
	Parent string
	// Limits are the association's limits.
	Limits AssocLimits
	// QOS lists the QOS the association may use; nil inherits the
	// parent's list, and no list anywhere allows every QOS.
	QOS []string
	// DefaultQOS is the QOS of jobs that name none; empty inherits.
	DefaultQOS string
}

// Config is a cluster's whole policy: QOS, partitions, the association
// tree and cluster-wide preemption settings. The zero value is a valid
// policy with nothing limited.
type Config struct {
	// QOS are the defined QOS.
	QOS []QOS
	// DefaultQOS is the QOS of jobs that name none and whose association
	// has no default. Empty means "normal" when such a QOS exists, else no
	// QOS.
	DefaultQOS string
	// Partitions hold the partitions' policy settings. When empty,
	// partitions are not checked and jobs may name any partition.
	Partitions []Partition
	// Assocs are the associations. When empty, associations are not
	// enforced (any user and account may run, with no association
	// limits); otherwise every job's user/account pair needs one. The root
	// account association is implicit (no limits) unless listed.
	Assocs []Assoc
	// PreemptType selects preemption by partition tier or QOS.
	PreemptType PreemptType
	// PreemptMode is the cluster's preemption mode; the zero value is OFF,
	// which is only valid with PreemptNone.
	PreemptMode PreemptMode
	// PreemptExemptTime is the least run time before any job may be
	// preempted, unless its QOS sets its own.
	PreemptExemptTime time.Duration
	// PreemptOrder is how PreemptVictims chooses among the jobs a
	// preemptor may preempt: the zero value, PreemptOrderLeastLostWork,
	// is Sluice's default (the victims that lose the least work);
	// PreemptOrderSlurm is Slurm's order (lowest QOS priority or partition
	// tier first, then fewest nodes).
	PreemptOrder PreemptOrder
	// SafeLimits is Slurm's AccountingStorageEnforce=safe: a job starts
	// only if its whole TRES × time limit fits the GrpTRESMins / GrpWall
	// budgets, not merely while they are unspent.
	SafeLimits bool
	// EnforcePartLimits rejects at submission jobs that break the
	// partition's MaxTime, MinNodes or MaxNodes (Slurm's
	// EnforcePartLimits=ALL); by default they pend.
	EnforcePartLimits bool
}

// Validate checks the whole configuration against reg and returns an
// error naming the first bad entity and field.
func (c *Config) Validate(reg *gres.Registry) error {
	_, err := New(reg, *c)
	return err
}

type partC struct {
	Partition
	qos       int32 // partition QOS, -1 none
	billing   gres.BillingWeights
	allowAcct map[string]bool
	denyAcct  map[string]bool
	allowQOS  []bool // nil: all
	denyQOS   []bool
}

type assocC struct {
	Assoc
	parent     int32   // -1 for root
	path       []int32 // self, parent, …, root
	level      Level
	display    string
	allowedQOS []bool // effective; nil = all
	defaultQOS int32  // effective; -1 none
}

type userKey struct{ user, account, partition string }

type planKey struct{ part, qos, assoc int32 }

// Policy is a validated, compiled Config: QOS, partitions and the
// association tree indexed for O(levels × limits) checks. Build it with
// New; change policy by building a new one and calling Usage.Rebind.
//
// Resolve fills an internal cache and is not safe for concurrent use;
// every other method only reads the Policy.
type Policy struct {
	reg        *gres.Registry
	cfg        Config
	qos        []QOS
	qosByName  map[string]int32
	parts      []partC
	partByName map[string]int32
	assocs     []assocC
	acctByName map[string]int32
	userAssoc  map[userKey]int32
	classes    []tresClass
	preempts   [][]bool // [preemptor][victim] from Preempt lists
	defaultQOS int32
	plans      map[planKey]*plan
	// rebased caches Rebase: the plan of this policy that each plan of
	// an older one maps to.
	rebased map[*plan]rebased

	// preemptDepth is, per QOS, the length of the longest chain of QOS it
	// may preempt (a preempts b preempts c: a 2, b 1, c 0).
	preemptDepth []int32
}

// New validates cfg against reg (TRES names in limits and billing
// weights) and compiles it. Errors wrap ErrInvalidConfig (or
// ErrCyclicPreempt, ErrUnknownQOS, ErrUnknownPartition, ErrUnknownAccount)
// and name the entity and field.
func New(reg *gres.Registry, cfg Config) (*Policy, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: nil TRES registry", ErrInvalidConfig)
	}
	cfg, err := bindConfig(reg, cfg)
	if err != nil {
		return nil, err
	}
	p := &Policy{
		reg: reg, cfg: cfg,
		qosByName:  make(map[string]int32, len(cfg.QOS)),
		partByName: make(map[string]int32, len(cfg.Partitions)),
		acctByName: make(map[string]int32),
		userAssoc:  make(map[userKey]int32),
		plans:      make(map[planKey]*plan),
		defaultQOS: -1,
	}
	p.classes = make([]tresClass, reg.Len())
	for i := range p.classes {
		p.classes[i] = classOf(reg.Name(gres.ID(i)))
	}
	if err := p.compileQOS(); err != nil {
		return nil, err
	}
	if err := p.compileCluster(); err != nil {
		return nil, err
	}
	if err := p.compilePartitions(); err != nil {
		return nil, err
	}
	if err := p.compileAssocs(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Policy) compileQOS() error {
	n := len(p.cfg.QOS)
	p.qos = make([]QOS, n)
	for i := range p.cfg.QOS {
		q := &p.cfg.QOS[i]
		if err := q.Validate(); err != nil {
			return err
		}
		if err := p.checkTRES(q.Limits.Limits, q.Limits.MaxTRESPerUser, q.Limits.MaxTRESPerAccount, q.Limits.MinTRESPerJob); err != nil {
			return fmt.Errorf("%w: QOS %q: %w", ErrInvalidConfig, q.Name, err)
		}
		if _, dup := p.qosByName[q.Name]; dup {
			return fmt.Errorf("%w: QOS %q defined twice", ErrInvalidConfig, q.Name)
		}
		p.qosByName[q.Name] = int32(i)
		p.qos[i] = *q
		p.qos[i].Preempt = slices.Clone(q.Preempt)
	}
	p.preempts = make([][]bool, n)
	for i := range p.qos {
		p.preempts[i] = make([]bool, n)
		for _, v := range p.qos[i].Preempt {
			j, ok := p.qosByName[v]
			if !ok {
				return fmt.Errorf("%w: QOS %q: Preempt names %w %q", ErrInvalidConfig, p.qos[i].Name, ErrUnknownQOS, v)
			}
			p.preempts[i][j] = true
		}
	}
	// Reject cycles in the Preempt graph (a preempts b preempts … a).
	state := make([]uint8, n) // 0 new, 1 on stack, 2 done
	var stack []int
	var visit func(i int) error
	visit = func(i int) error {
		state[i] = 1
		stack = append(stack, i)
		for j := range n {
			if !p.preempts[i][j] {
				continue
			}
			switch state[j] {
			case 1:
				k := slices.Index(stack, j)
				names := make([]string, 0, len(stack)-k+1)
				for _, s := range stack[k:] {
					names = append(names, p.qos[s].Name)
				}
				names = append(names, p.qos[j].Name)
				return fmt.Errorf("%w: %s", ErrCyclicPreempt, strings.Join(names, " → "))
			case 0:
				if err := visit(j); err != nil {
					return err
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = 2
		return nil
	}
	for i := range n {
		if state[i] == 0 {
			if err := visit(i); err != nil {
				return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
			}
		}
	}
	p.preemptDepth = make([]int32, n)
	depthKnown := make([]bool, n)
	var depth func(i int) int32
	depth = func(i int) int32 { // the graph is acyclic (checked above)
		if !depthKnown[i] {
			for j := range n {
				if p.preempts[i][j] {
					p.preemptDepth[i] = max(p.preemptDepth[i], depth(j)+1)
				}
			}
			depthKnown[i] = true
		}
		return p.preemptDepth[i]
	}
	for i := range n {
		depth(i)
	}
	switch {
	case p.cfg.DefaultQOS != "":
		q, ok := p.qosByName[p.cfg.DefaultQOS]
		if !ok {
			return fmt.Errorf("%w: DefaultQOS: %w %q", ErrInvalidConfig, ErrUnknownQOS, p.cfg.DefaultQOS)
		}
		p.defaultQOS = q
	default:
		if q, ok := p.qosByName["normal"]; ok {
			p.defaultQOS = q
		}
	}
	return nil
}

func (p *Policy) compileCluster() error {
	c := &p.cfg
	if c.PreemptType > PreemptQOS {
		return fmt.Errorf("%w: PreemptType %d invalid", ErrInvalidConfig, c.PreemptType)
	}
	if !c.PreemptMode.valid() {
		return fmt.Errorf("%w: PreemptMode %d invalid", ErrInvalidConfig, uint8(c.PreemptMode))
	}
	if c.PreemptType != PreemptNone && c.PreemptMode.Base() <= PreemptOff {
		return fmt.Errorf("%w: PreemptMode %s is only valid with PreemptType preempt/none (set CANCEL, REQUEUE or SUSPEND)", ErrInvalidConfig, c.PreemptMode)
	}
	if err := validDuration("PreemptExemptTime", c.PreemptExemptTime); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if c.PreemptOrder > PreemptOrderSlurm {
		return fmt.Errorf("%w: PreemptOrder %s invalid", ErrInvalidConfig, c.PreemptOrder)
	}
	return nil
}

func (p *Policy) compilePartitions() error {
	p.parts = make([]partC, len(p.cfg.Partitions))
	for i := range p.cfg.Partitions {
		src := &p.cfg.Partitions[i]
		if err := src.Validate(); err != nil {
			return err
		}
		if _, dup := p.partByName[src.Name]; dup {
			return fmt.Errorf("%w: partition %q defined twice", ErrInvalidConfig, src.Name)
		}
		p.partByName[src.Name] = int32(i)
		pc := partC{Partition: *src, qos: -1}
		if src.QOS != "" {
			q, ok := p.qosByName[src.QOS]
			if !ok {
				return fmt.Errorf("%w: partition %q: QOS: %w %q", ErrInvalidConfig, src.Name, ErrUnknownQOS, src.QOS)
			}
			pc.qos = q
		}
		bw, err := p.reg.ParseBillingWeights(src.TRESBillingWeights)
		if err != nil {
			return fmt.Errorf("%w: partition %q: TRESBillingWeights: %w", ErrInvalidConfig, src.Name, err)
		}
		pc.billing = bw
		pc.allowAcct = nameSet(src.AllowAccounts)
		pc.denyAcct = nameSet(src.DenyAccounts)
		if pc.allowQOS, err = p.qosSet(src.Name, "AllowQOS", src.AllowQOS); err != nil {
			return err
		}
		if pc.denyQOS, err = p.qosSet(src.Name, "DenyQOS", src.DenyQOS); err != nil {
			return err
		}
		p.parts[i] = pc
	}
	return nil
}

// nameSet returns the set of names, or nil for an empty list or "ALL".
func nameSet(names []string) map[string]bool {
	if len(names) == 0 {
		return nil
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		if strings.EqualFold(n, "ALL") {
			return nil
		}
		m[n] = true
	}
	return m
}

func (p *Policy) qosSet(part, field string, names []string) ([]bool, error) {
	if len(names) == 0 {
		return nil, nil
	}
	set := make([]bool, len(p.qos))
	for _, n := range names {
		if strings.EqualFold(n, "ALL") {
			return nil, nil
		}
		q, ok := p.qosByName[n]
		if !ok {
			return nil, fmt.Errorf("%w: partition %q: %s: %w %q", ErrInvalidConfig, part, field, ErrUnknownQOS, n)
		}
		set[q] = true
	}
	return set, nil
}

// checkTRES checks that every TRES limit names a TRES of the registry.
func (p *Policy) checkTRES(l Limits, more ...TRESLimits) error {
	all := append([]TRESLimits{l.GrpTRES, l.GrpTRESMins, l.GrpTRESRunMins, l.MaxTRESPerJob, l.MaxTRESPerNode, l.MaxTRESMinsPerJob}, more...)
	for _, t := range all {
		if !t.Bound() {
			return fmt.Errorf("TRES limits decoded from text are not bound to a registry (see TRESLimits.Bind)")
		}
		if id := t.maxID(); int(id) >= p.reg.Len() {
			return fmt.Errorf("TRES id %d is not in the registry (%w)", id, gres.ErrUnknownTRES)
		}
	}
	return nil
}

func (p *Policy) compileAssocs() error {
	src := p.cfg.Assocs
	if len(src) == 0 {
		return nil
	}
	// Account associations first, so users can find their account.
	hasRoot := false
	for i := range src {
		if src[i].User == "" && src[i].Account == RootAccount {
			hasRoot = true
		}
	}
	if !hasRoot {
		p.assocs = append(p.assocs, assocC{Assoc: Assoc{Account: RootAccount}, parent: -1})
		p.acctByName[RootAccount] = 0
	}
	for i := range src {
		a := &src[i]
		if a.User != "" {
			continue
		}
		if err := p.validateAssoc(a); err != nil {
			return err
		}
		if _, dup := p.acctByName[a.Account]; dup {
			return fmt.Errorf("%w: account association %q defined twice", ErrInvalidConfig, a.Account)
		}
		if a.Partition != "" {
			return fmt.Errorf("%w: account association %q: Partition is only for user associations", ErrInvalidConfig, a.Account)
		}
		idx := int32(len(p.assocs))
		p.acctByName[a.Account] = idx
		p.assocs = append(p.assocs, assocC{Assoc: *a, parent: -1})
	}
	for i := range p.assocs {
		a := &p.assocs[i]
		if a.Account == RootAccount {
			if a.Parent != "" {
				return fmt.Errorf("%w: account association %q: the root has no parent (got %q)", ErrInvalidConfig, RootAccount, a.Parent)
			}
			continue
		}
		parent := a.Parent
		if parent == "" {
			parent = RootAccount
		}
		pi, ok := p.acctByName[parent]
		if !ok {
			return fmt.Errorf("%w: account association %q: Parent: %w %q", ErrInvalidConfig, a.Account, ErrUnknownAccount, parent)
		}
		a.parent = pi
	}
	for _, a := range src {
		if a.User == "" {
			continue
		}
		if err := p.validateAssoc(&a); err != nil {
			return err
		}
		acct, ok := p.acctByName[a.Account]
		if !ok {
			return fmt.Errorf("%w: user association %q/%q: %w %q", ErrInvalidConfig, a.User, a.Account, ErrUnknownAccount, a.Account)
		}
		if a.Partition != "" && len(p.parts) > 0 {
			if _, ok := p.partByName[a.Partition]; !ok {
				return fmt.Errorf("%w: user association %q/%q: Partition: %w %q", ErrInvalidConfig, a.User, a.Account, ErrUnknownPartition, a.Partition)
			}
		}
		k := userKey{a.User, a.Account, a.Partition}
		if _, dup := p.userAssoc[k]; dup {
			return fmt.Errorf("%w: user association %q/%q/%q defined twice", ErrInvalidConfig, a.User, a.Account, a.Partition)
		}
		idx := int32(len(p.assocs))
		p.userAssoc[k] = idx
		p.assocs = append(p.assocs, assocC{Assoc: a, parent: acct})
	}
	// Paths (self → root), levels, display names, inherited QOS lists; a
	// cycle among account parents shows as a path longer than the tree.
	for i := range p.assocs {
		a := &p.assocs[i]
		for j := int32(i); j >= 0; j = p.assocs[j].parent {
			if len(a.path) > len(p.assocs) {
				return fmt.Errorf("%w: account association %q: Parent chain forms a cycle", ErrInvalidConfig, a.Account)
			}
			a.path = append(a.path, j)
		}
		switch {
		case a.User != "":
			a.level = LevelUser
			a.display = "user " + a.User + " in account " + a.Account
			if a.Partition != "" {
				a.display += " partition " + a.Partition
			}
		case a.Account == RootAccount:
			a.level = LevelRoot
			a.display = "account " + RootAccount
		default:
			a.level = LevelAccount
			a.display = "account " + a.Account
		}
		a.defaultQOS = -1
		for _, j := range a.path {
			anc := &p.assocs[j]
			if a.allowedQOS == nil && anc.QOS != nil {
				set := make([]bool, len(p.qos))
				for _, n := range anc.QOS {
					q, ok := p.qosByName[n]
					if !ok {
						return fmt.Errorf("%w: %s: QOS list: %w %q", ErrInvalidConfig, anc.displayName(), ErrUnknownQOS, n)
					}
					set[q] = true
				}
				a.allowedQOS = set
			}
			if a.defaultQOS < 0 && anc.DefaultQOS != "" {
				q, ok := p.qosByName[anc.DefaultQOS]
				if !ok {
					return fmt.Errorf("%w: %s: DefaultQOS: %w %q", ErrInvalidConfig, anc.displayName(), ErrUnknownQOS, anc.DefaultQOS)
				}
				a.defaultQOS = q
			}
		}
		if a.defaultQOS >= 0 && a.allowedQOS != nil && !a.allowedQOS[a.defaultQOS] {
			return fmt.Errorf("%w: %s: DefaultQOS %q is not in its QOS list", ErrInvalidConfig, a.displayName(), p.qos[a.defaultQOS].Name)
		}
	}
	return nil
}

func (a *assocC) displayName() string {
	if a.User != "" {
		return fmt.Sprintf("user association %q/%q", a.User, a.Account)
	}
	return fmt.Sprintf("account association %q", a.Account)
}

func (p *Policy) validateAssoc(a *Assoc) error {
	who := fmt.Sprintf("account association %q", a.Account)
	if a.User != "" {
		who = fmt.Sprintf("user association %q/%q", a.User, a.Account)
		if err := validName(a.User); err != nil {
			return fmt.Errorf("%w: %s: User: %w", ErrInvalidConfig, who, err)
		}
	}
	if err := validName(a.Account); err != nil {
		return fmt.Errorf("%w: association: Account: %w", ErrInvalidConfig, err)
	}
	if err := a.Limits.Validate(); err != nil {
		return fmt.Errorf("%s: %w", who, err)
	}
	if err := p.checkTRES(a.Limits.Limits); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidConfig, who, err)
	}
	return nil
}

// Registry returns the TRES registry the policy was built against.
func (p *Policy) Registry() *gres.Registry { return p.reg }

// Config returns a copy of the configuration the policy was built from.
func (p *Policy) Config() Config { return p.cfg }

// QOS returns the named QOS.
func (p *Policy) QOS(name string) (QOS, bool) {
	i, ok := p.qosByName[name]
	if !ok {
		return QOS{}, false
	}
	return p.qos[i], true
}

// Partition returns the named partition's policy.
func (p *Policy) Partition(name string) (Partition, bool) {
	i, ok := p.partByName[name]
	if !ok {
		return Partition{}, false
	}
	return p.parts[i].Partition, true
}

// BillingWeights returns the partition's compiled TRESBillingWeights (the
// zero value when unset or the partition is unknown).
func (p *Policy) BillingWeights(partition string) gres.BillingWeights {
	i, ok := p.partByName[partition]
	if !ok {
		return gres.BillingWeights{}
	}
	return p.parts[i].billing
}

// AccountPath returns the account chain of account, from it up to the
// root ("physics", "science", "root"), or nil when associations are not
// enforced or the account is unknown.
func (p *Policy) AccountPath(account string) []string {
	i, ok := p.acctByName[account]
	if !ok {
		return nil
	}
	out := make([]string, 0, len(p.assocs[i].path))
	for _, j := range p.assocs[i].path {
		out = append(out, p.assocs[j].Account)
	}
	return out
}
