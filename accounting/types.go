package accounting

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// AssocID identifies an association. IDs are assigned by the ledger, start
// at 1 and are never reused, even after removal.
type AssocID uint32

// JobID identifies a job. Job IDs must be unique within a ledger (as in a
// Slurm federation, where the cluster is encoded in the ID); 0 is invalid.
type JobID uint64

// AssocKey is the natural key of an association, as in Slurm: cluster,
// account, user ("" for an account association) and optional partition.
// The cluster's root association has Account "root" and no user.
type AssocKey struct {
	Cluster   string `json:"cluster"`
	Account   string `json:"account"`
	User      string `json:"user,omitempty"`
	Partition string `json:"partition,omitempty"`
}

// String formats the key as cluster/account[/user[/partition]].
func (k AssocKey) String() string {
	s := k.Cluster + "/" + k.Account
	if k.User != "" || k.Partition != "" {
		s += "/" + k.User
	}
	if k.Partition != "" {
		s += "/" + k.Partition
	}
	return s
}

// RootAccount is the account name of every cluster's root association.
const RootAccount = "root"

// Assoc is one association: a node of the cluster → account → sub-account
// → user tree, with its fair-share shares, QOS and limits. Each change is
// kept as a version (see Tx.AssocHistory); Since, Removed and Version
// describe the version.
type Assoc struct {
	ID AssocID `json:"id"` // assigned by the ledger; ignored on input
	AssocKey
	// ParentAccount is the parent of an account association ("root" when
	// empty, except for the root itself). It is ignored for user
	// associations, whose parent is always their Account.
	ParentAccount string `json:"parent_account,omitempty"`
	// Parent is the parent association's ID, set by the ledger (0 for a
	// cluster root).
	Parent AssocID `json:"parent,omitempty"`
	// Shares is the raw fair-share value (sacctmgr Fairshare=). 0 means
	// Slurm's default of 1.
	Shares uint32 `json:"shares,omitempty"`
	// DefaultQOS is the QOS a job gets when it names none ("" = none set).
	DefaultQOS string `json:"default_qos,omitempty"`
	// QOS lists the allowed QOS (nil = inherit, as Slurm does).
	QOS []string `json:"qos,omitempty"`
	// Limits are the association's limits; the ledger stores them, the
	// policy package enforces them.
	Limits Limits `json:"limits,omitzero"`

	// Since is when this version took effect (set by the ledger from the
	// now of the call that made it).
	Since time.Time `json:"since"`
	// Removed marks the version that records the removal.
	Removed bool `json:"removed,omitempty"`
	// Version counts the versions of this association, from 1.
	Version uint32 `json:"version"`
}

// Key returns the association's natural key.
func (a Assoc) Key() AssocKey { return a.AssocKey }

// IsUser reports whether a is a user association (a leaf).
func (a Assoc) IsUser() bool { return a.User != "" }

// EffectiveShares returns Shares, or 1 when Shares is 0.
func (a Assoc) EffectiveShares() uint32 {
	if a.Shares == 0 {
		return 1
	}
	return a.Shares
}

// Limits are an association's Slurm limits. TRES limits list only the
// limited resources: an absent name is unlimited, a present 0 allows none.
// Job-count limits are pointers: nil is unlimited (Slurm's default), and a
// value, including 0, is a limit (write new(10)).
type Limits struct {
	GrpTRES        TRES          `json:"grp_tres,omitempty"`          // TRES in use by all running jobs of the subtree
	GrpTRESMins    TRES          `json:"grp_tres_mins,omitempty"`     // TRES-minutes budget of the subtree (see Usage.BudgetTRES)
	GrpTRESRunMins TRES          `json:"grp_tres_run_mins,omitempty"` // TRES × remaining time limit of running jobs
	GrpJobs        *int          `json:"grp_jobs,omitempty"`          // running jobs of the subtree
	GrpSubmitJobs  *int          `json:"grp_submit_jobs,omitempty"`   // pending + running jobs of the subtree
	MaxTRESPerJob  TRES          `json:"max_tres_per_job,omitempty"`
	MaxTRESPerNode TRES          `json:"max_tres_per_node,omitempty"`
	MaxJobs        *int          `json:"max_jobs,omitempty"`        // running jobs per user association
	MaxSubmitJobs  *int          `json:"max_submit_jobs,omitempty"` // pending + running jobs per user association
	MaxWall        time.Duration `json:"max_wall,omitempty"`        // 0 = no limit
}

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool {
	return len(l.GrpTRES) == 0 && len(l.GrpTRESMins) == 0 && len(l.GrpTRESRunMins) == 0 &&
		l.GrpJobs == nil && l.GrpSubmitJobs == nil && len(l.MaxTRESPerJob) == 0 &&
		len(l.MaxTRESPerNode) == 0 && l.MaxJobs == nil && l.MaxSubmitJobs == nil && l.MaxWall == 0
}

// Validate checks every TRES set and that counts and MaxWall are not negative.
func (l Limits) Validate() error {
	// Checked in field order, so that the error is always the same one.
	for _, x := range []struct {
		name string
		t    TRES
	}{{"GrpTRES", l.GrpTRES}, {"GrpTRESMins", l.GrpTRESMins}, {"GrpTRESRunMins", l.GrpTRESRunMins},
		{"MaxTRESPerJob", l.MaxTRESPerJob}, {"MaxTRESPerNode", l.MaxTRESPerNode}} {
		if err := x.t.Validate(); err != nil {
			return fmt.Errorf("limits %s: %w", x.name, err)
		}
	}
	for _, x := range []struct {
		name string
		p    *int
	}{{"GrpJobs", l.GrpJobs}, {"GrpSubmitJobs", l.GrpSubmitJobs}, {"MaxJobs", l.MaxJobs}, {"MaxSubmitJobs", l.MaxSubmitJobs}} {
		if x.p != nil && *x.p < 0 {
			return fmt.Errorf("%w: limits %s=%d is negative (nil means no limit)", ErrInvalid, x.name, *x.p)
		}
	}
	if l.MaxWall < 0 {
		return fmt.Errorf("%w: limits MaxWall=%v is negative", ErrInvalid, l.MaxWall)
	}
	return nil
}

func (l Limits) clone() Limits {
	c := l
	c.GrpTRES, c.GrpTRESMins, c.GrpTRESRunMins = l.GrpTRES.Clone(), l.GrpTRESMins.Clone(), l.GrpTRESRunMins.Clone()
	c.MaxTRESPerJob, c.MaxTRESPerNode = l.MaxTRESPerJob.Clone(), l.MaxTRESPerNode.Clone()
	for _, p := range []**int{&c.GrpJobs, &c.GrpSubmitJobs, &c.MaxJobs, &c.MaxSubmitJobs} {
		if *p != nil {
			v := **p
			*p = &v
		}
	}
	return c
}

// validName checks a cluster, account, user, partition, QOS, reservation
// or node name: 1–128 bytes of printable UTF-8 without spaces, '|' or ','.
func validName(field, s string, optional bool) error {
	if s == "" {
		if optional {
			return nil
		}
		return fmt.Errorf("%w: %s is empty", ErrInvalid, field)
	}
	if len(s) > 128 {
		return fmt.Errorf("%w: %s %q is longer than 128 bytes", ErrInvalid, field, s[:32]+"…")
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrInvalid, field, s)
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == '|' || r == ',' {
			return fmt.Errorf("%w: %s %q contains %q", ErrInvalid, field, s, r)
		}
	}
	return nil
}

// validText checks free text (job names, node lists, reasons): at most
// 4096 bytes of valid UTF-8 without control characters.
func validText(field, s string) error {
	if len(s) > 4096 {
		return fmt.Errorf("%w: %s is longer than 4096 bytes", ErrInvalid, field)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrInvalid, field, s)
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("%w: %s %q contains a control character", ErrInvalid, field, s)
	}
	return nil
}

// minTime and maxTime bound every stored time (after 1970-01-01T00:00:00Z,
// up to 9999-12-31 UTC; the Unix epoch itself encodes "not set");
// records store whole seconds.
var (
	minTime = time.Unix(1, 0)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

func validTime(field string, t time.Time, optional bool) error {
	if t.IsZero() {
		if optional {
			return nil
		}
		return fmt.Errorf("%w: %s is not set", ErrInvalid, field)
	}
	if t.Before(minTime) || t.After(maxTime) {
		return fmt.Errorf("%w: %s %v is outside 1970–9999", ErrInvalid, field, t)
	}
	return nil
}

func validFloat(field string, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%w: %s is %v", ErrInvalid, field, f)
	}
	return nil
}

// String formats the association for logs: its key, ID, parent, shares
// and version.
func (a Assoc) String() string {
	s := fmt.Sprintf("%s (id %d, parent %d, shares %d, v%d)", a.AssocKey, a.ID, a.Parent, a.EffectiveShares(), a.Version)
	if a.Removed {
		s += " removed"
	}
	return s
}
