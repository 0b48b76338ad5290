package policy

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// QOSFlags are a QOS's Slurm flags.
type QOSFlags uint32

// QOS flags, with sacctmgr's spelling.
const (
	// QOSDenyOnLimit rejects at submission a job that on its own breaks a
	// limit (Max limits, and Grp limits read as Max), instead of letting it
	// pend forever.
	QOSDenyOnLimit QOSFlags = 1 << iota
	// QOSEnforceUsageThreshold makes the QOS's UsageThreshold hold jobs of
	// associations whose fair-share factor is below it (QOSUsageThreshold).
	QOSEnforceUsageThreshold
	// QOSNoDecay: the QOS's GrpTRESMins usage does not decay (read by the
	// accounting ledger; policy only carries it).
	QOSNoDecay
	// QOSNoReserve: the planner makes no backfill reservation for jobs of
	// this QOS (preemptable "standby" work).
	QOSNoReserve
	// QOSOverPartQOS: the job QOS's limits take precedence over the
	// partition QOS's.
	QOSOverPartQOS
	// QOSPartitionMaxNodes: jobs of this QOS are not bound by the
	// partition's MaxNodes.
	QOSPartitionMaxNodes
	// QOSPartitionMinNodes: jobs of this QOS are not bound by the
	// partition's MinNodes.
	QOSPartitionMinNodes
	// QOSPartitionTimeLimit: jobs of this QOS are not bound by the
	// partition's MaxTime (the QOS's and associations' MaxWall still are).
	QOSPartitionTimeLimit
	// QOSRequiresReservation: jobs of this QOS must name a reservation.
	QOSRequiresReservation
	// QOSUsageFactorSafe: UsageFactor applies to Safe-mode budget checks
	// too (read by the caller's accounting; policy only carries it).
	QOSUsageFactorSafe
	numQOSFlags = iota
)

var qosFlagNames = [numQOSFlags]string{
	"DenyOnLimit", "EnforceUsageThreshold", "NoDecay", "NoReserve", "OverPartQOS",
	"PartitionMaxNodes", "PartitionMinNodes", "PartitionTimeLimit", "RequiresReservation", "UsageFactorSafe",
}

// Has reports whether every flag of g is set in f.
func (f QOSFlags) Has(g QOSFlags) bool { return f&g == g }

// String returns the flags comma-separated in sacctmgr's spelling, or "".
func (f QOSFlags) String() string { return flagsString(f, qosFlagNames[:]) }

// ParseQOSFlags parses a comma-separated flag list ("DenyOnLimit,NoReserve",
// case-insensitive). "" and "None" are no flags. Unknown flags wrap
// ErrSyntax.
func ParseQOSFlags(s string) (QOSFlags, error) {
	if t := strings.TrimSpace(s); t == "" || strings.EqualFold(t, "none") {
		return 0, nil
	}
	f, bad, ok := parseFlags[QOSFlags](s, qosFlagNames[:])
	if !ok {
		return 0, fmt.Errorf("%w: QOS flags %q: unknown flag %q", ErrSyntax, s, bad)
	}
	return f, nil
}

// flagsString lists the flags set in f, bit i named names[i],
// comma-separated, followed by any bits past the names as one hex value.
func flagsString[F ~uint32](f F, names []string) string {
	var parts []string
	for i, n := range names {
		if f&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if rest := f &^ (1<<len(names) - 1); rest != 0 {
		parts = append(parts, fmt.Sprintf("0x%x", uint32(rest)))
	}
	return strings.Join(parts, ",")
}

// parseFlags parses a comma-separated list of flag names (names[i] is bit
// i, matched case-insensitively, blanks around a name ignored); ok is
// false, with the offending name, when one is unknown.
func parseFlags[F ~uint32](s string, names []string) (f F, bad string, ok bool) {
	for tok := range strings.SplitSeq(s, ",") {
		tok = strings.TrimSpace(tok)
		i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, tok) })
		if i < 0 {
			return 0, tok, false
		}
		f |= 1 << i
	}
	return f, "", true
}

// PreemptMode is how a preempted job is stopped, plus Slurm's modifiers.
// The low bits hold the base mode (Cluster, Off, Cancel, Requeue, Suspend);
// PreemptGang, PreemptWithin and PreemptPriority may be or-ed in.
type PreemptMode uint8

// Preemption modes and modifiers.
const (
	// PreemptModeCluster (the zero value) inherits the cluster's mode
	// (Config.PreemptMode); as a cluster mode it means OFF.
	PreemptModeCluster PreemptMode = iota
	// PreemptOff: jobs are never preempted.
	PreemptOff
	// PreemptCancel: the victim is cancelled (after GraceTime).
	PreemptCancel
	// PreemptRequeue: the victim is requeued if it may be (--requeue),
	// else cancelled (after GraceTime).
	PreemptRequeue
	// PreemptSuspend: the victim is suspended; it keeps its memory and
	// GRES (GPUs stay allocated) and resumes when the preemptor ends. Only
	// CPUs are freed.
	PreemptSuspend
	preemptBaseMask PreemptMode = 7

	// PreemptGang is accepted for compatibility (SUSPEND,GANG); Sluice
	// does not time-slice, so it changes nothing.
	PreemptGang PreemptMode = 1 << 3
	// PreemptWithin lets a QOS preempt jobs of the same QOS, when the
	// preemptor's job priority is higher (set on the preemptor's QOS or
	// the cluster mode).
	PreemptWithin PreemptMode = 1 << 4
	// PreemptPriority additionally requires the preemptor's job priority
	// to be higher than the victim's (set on the preemptor's QOS or the
	// cluster mode).
	PreemptPriority PreemptMode = 1 << 5
	preemptFlagMask             = PreemptGang | PreemptWithin | PreemptPriority
)

var preemptBaseNames = [...]string{"CLUSTER", "OFF", "CANCEL", "REQUEUE", "SUSPEND"}

// Base returns the mode without modifiers.
func (m PreemptMode) Base() PreemptMode { return m & preemptBaseMask }

// Has reports whether modifier flag is set.
func (m PreemptMode) Has(flag PreemptMode) bool { return m&flag == flag }

// String returns Slurm's spelling, e.g. "REQUEUE" or "SUSPEND,GANG".
func (m PreemptMode) String() string {
	s := enumString(m.Base(), preemptBaseNames[:], "PreemptMode")
	for _, f := range []struct {
		f PreemptMode
		n string
	}{{PreemptGang, "GANG"}, {PreemptWithin, "WITHIN"}, {PreemptPriority, "PRIORITY"}} {
		if m.Has(f.f) {
			s += "," + f.n
		}
	}
	return s
}

// ParsePreemptMode parses Slurm's PreemptMode syntax: one base mode
// (CLUSTER, OFF, CANCEL, REQUEUE, SUSPEND) and any of GANG, WITHIN,
// PRIORITY, comma-separated and case-insensitive. Modifiers alone (e.g.
// "WITHIN") keep the base CLUSTER. Errors wrap ErrSyntax.
func ParsePreemptMode(s string) (PreemptMode, error) {
	var m PreemptMode
	base := false
	for tok := range strings.SplitSeq(s, ",") {
		tok = strings.ToUpper(strings.TrimSpace(tok))
		switch tok {
		case "GANG":
			m |= PreemptGang
			continue
		case "WITHIN":
			m |= PreemptWithin
			continue
		case "PRIORITY":
			m |= PreemptPriority
			continue
		}
		idx := -1
		for i, n := range preemptBaseNames {
			if tok == n {
				idx = i
			}
		}
		if idx < 0 {
			return 0, fmt.Errorf("%w: PreemptMode %q: unknown mode %q", ErrSyntax, s, tok)
		}
		if base {
			return 0, fmt.Errorf("%w: PreemptMode %q: more than one base mode", ErrSyntax, s)
		}
		base = true
		m |= PreemptMode(idx)
	}
	return m, nil
}

func (m PreemptMode) valid() bool {
	return m&^(preemptBaseMask|preemptFlagMask) == 0 && m.Base() <= PreemptSuspend
}

// QOS is a quality of service: a priority, preemption rights and limits a
// job gets by naming it (or by running in a partition that has it as its
// partition QOS). Zero values mean Slurm's defaults, as documented.
type QOS struct {
	// Name identifies the QOS (required; letters, digits, '_', '-', '.').
	Name string
	// Priority is the QOS's priority (the multifactor QOS factor and the
	// preempt/qos victim order).
	Priority uint32
	// UsageFactor scales the usage jobs of this QOS are charged; nil means
	// Slurm's default 1, a pointer to 0 makes the QOS free. Read by the
	// accounting ledger; see EffectiveUsageFactor.
	UsageFactor *float64
	// UsageThreshold is the least fair-share factor (0..1] an association
	// must have for its jobs of this QOS to start, enforced with the
	// EnforceUsageThreshold flag. Zero is unset.
	UsageThreshold float64
	// LimitFactor multiplies the association TRES limits (Grp and Max)
	// applied to jobs of this QOS. Zero means 1.
	LimitFactor float64
	// GraceTime is how long a preempted job of this QOS (CANCEL/REQUEUE,
	// preempt/qos) is signalled before it is killed.
	GraceTime time.Duration
	// Preempt lists the QOS whose jobs this QOS's jobs may preempt
	// (preempt/qos). It must not name the QOS itself (use PreemptWithin)
	// and the lists must not form a cycle.
	Preempt []string
	// PreemptMode is how jobs of this QOS are preempted (the zero value
	// inherits the cluster's), plus WITHIN/PRIORITY for what this QOS's
	// jobs may preempt.
	PreemptMode PreemptMode
	// PreemptExemptTime is the least run time before a job of this QOS may
	// be preempted; zero inherits Config.PreemptExemptTime. A partition
	// QOS's value beats the job QOS's unless the job QOS has OverPartQOS.
	PreemptExemptTime time.Duration
	// Flags are the QOS's flags.
	Flags QOSFlags
	// Limits are the QOS's limits.
	Limits QOSLimits
}

// EffectiveUsageFactor returns UsageFactor, or 1 when unset.
func (q *QOS) EffectiveUsageFactor() float64 {
	if q.UsageFactor == nil {
		return 1
	}
	return *q.UsageFactor
}

// Validate checks the QOS on its own (names in Preempt are checked against
// the other QOS by New) and returns an error naming the QOS and field.
func (q *QOS) Validate() error {
	f := func(format string, a ...any) error {
		return fmt.Errorf("%w: QOS %q: %s", ErrInvalidConfig, q.Name, fmt.Sprintf(format, a...))
	}
	if err := validName(q.Name); err != nil {
		return fmt.Errorf("%w: QOS: %w", ErrInvalidConfig, err)
	}
	if u := q.UsageFactor; u != nil && (*u < 0 || math.IsNaN(*u) || math.IsInf(*u, 0)) {
		return f("UsageFactor %v must be a finite number ≥ 0", *u)
	}
	if t := q.UsageThreshold; t < 0 || t > 1 || math.IsNaN(t) {
		return f("UsageThreshold %v out of range [0, 1]", t)
	}
	if l := q.LimitFactor; l < 0 || math.IsNaN(l) || math.IsInf(l, 0) {
		return f("LimitFactor %v must be a finite number ≥ 0", l)
	}
	if err := validDuration("GraceTime", q.GraceTime); err != nil {
		return f("%v", err)
	}
	if err := validDuration("PreemptExemptTime", q.PreemptExemptTime); err != nil {
		return f("%v", err)
	}
	if !q.PreemptMode.valid() {
		return f("PreemptMode %d is not a valid mode", uint8(q.PreemptMode))
	}
	if q.Flags&^(1<<numQOSFlags-1) != 0 {
		return f("unknown Flags bits %s", q.Flags)
	}
	seen := make(map[string]bool, len(q.Preempt))
	for _, n := range q.Preempt {
		switch {
		case n == q.Name:
			return f("Preempt lists the QOS itself; use PreemptMode WITHIN to preempt within a QOS")
		case seen[n]:
			return f("Preempt lists %q twice", n)
		}
		seen[n] = true
	}
	if err := q.Limits.Validate(); err != nil {
		return fmt.Errorf("QOS %q: %w", q.Name, err)
	}
	return nil
}

// validName accepts Slurm-style entity names.
func validName(s string) error {
	if s == "" {
		return fmt.Errorf("empty name")
	}
	if len(s) > 128 {
		return fmt.Errorf("name %.16q… longer than 128 bytes", s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.', c == '@':
		default:
			return fmt.Errorf("name %q: byte %q not allowed (letters, digits, '_', '-', '.', '@')", s, c)
		}
	}
	return nil
}
