package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Level is where in Slurm's limit hierarchy (or elsewhere) a constraint
// comes from.
type Level uint8

// Levels, in Slurm's order of precedence for limits.
const (
	// LevelNone: no constraint.
	LevelNone Level = iota
	// LevelPartitionQOS: the partition's QOS.
	LevelPartitionQOS
	// LevelJobQOS: the job's own QOS.
	LevelJobQOS
	// LevelUser: the job's user association.
	LevelUser
	// LevelAccount: an account association (the job's account or an
	// ancestor).
	LevelAccount
	// LevelRoot: the root (cluster) association.
	LevelRoot
	// LevelPartition: the partition's own settings.
	LevelPartition
	// LevelReservation: an advance reservation.
	LevelReservation
	// LevelDependency: a job dependency.
	LevelDependency
	// LevelArray: a job array's throttle.
	LevelArray
)

// enumString returns names[k], or "typ(k)" for a value past the end of
// names (the String method of policy's enum types).
func enumString[K ~uint8](k K, names []string, typ string) string {
	if int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("%s(%d)", typ, uint8(k))
}

var levelNames = [...]string{"none", "partition QOS", "job QOS", "user association", "account association",
	"root association", "partition", "reservation", "dependency", "job array"}

// String names the level.
func (l Level) String() string { return enumString(l, levelNames[:], "Level") }

// Unit says what a constraint's numbers count.
type Unit uint8

// Units of Constraint.Value, Blocker.Usage and Blocker.Request.
const (
	// UnitNone: the constraint has no numbers (an access rule).
	UnitNone Unit = iota
	// UnitCount: an amount of the TRES named by Constraint.TRES (mem in
	// MiB).
	UnitCount
	// UnitJobs: a number of jobs.
	UnitJobs
	// UnitSeconds: a duration in seconds (time limits, wall-clock budgets).
	UnitSeconds
	// UnitTRESMinutes: TRES × minutes of the TRES named by Constraint.TRES.
	UnitTRESMinutes
)

var unitNames = [...]string{"", "", "jobs", "seconds", "TRES-minutes"}

// String names the unit.
func (u Unit) String() string { return enumString(u, unitNames[:], "Unit") }

// Constraint is one limit or rule in force for a job: which limit, where it
// is set and its value. Policy's Subject.Constraints lists those the
// hierarchy leaves in force.
type Constraint struct {
	// Reason is the Slurm reason a job pending on this constraint shows.
	Reason Reason
	// Limit is the limit's Slurm name: GrpTRES, GrpTRESMins,
	// GrpTRESRunMins, GrpJobs, GrpSubmitJobs, GrpWall, MaxTRESPerJob,
	// MaxTRESPerNode, MaxTRESMinsPerJob, MaxTRESPerUser, MaxTRESPerAccount,
	// MaxJobsPerUser, MaxJobsPerAccount, MaxSubmitJobsPerUser,
	// MaxSubmitJobsPerAccount, MinTRESPerJob, MaxWall, MaxJobs,
	// MaxSubmitJobs (associations), MaxTime, MinNodes, MaxNodes,
	// MaxCPUsPerNode (partitions), AllowAccounts, DenyAccounts, AllowQOS,
	// DenyQOS, QOS (association QOS list), RequiresReservation, ReqResv,
	// UsageThreshold; for reservations, dependencies and arrays see their
	// Blocker producers.
	Limit string
	// Level and Entity say where it is set: the QOS, association
	// ("account physics", "user alice in account physics"), partition or
	// reservation name.
	Level  Level
	Entity string
	// TRES names the resource of a TRES limit ("gres/gpu:h100"); empty
	// otherwise.
	TRES string
	// Unit says what Value counts.
	Unit Unit
	// Value is the limit.
	Value int64
}

// Blocker is a Constraint that stops a job now, with the numbers that
// explain it: the usage it counts and what this job would add. The zero
// value (Reason None) means nothing blocks.
type Blocker struct {
	Constraint
	// Holder is whose usage the limit counts: "QOS gpu" (all its jobs),
	// "user alice", "account physics", "account physics (subtree)".
	// Empty for per-job limits.
	Holder string
	// Usage is the current usage the limit counts (0 for per-job limits).
	Usage int64
	// Request is what this job asks or would add, in Unit.
	Request int64
	// Detail is free text for blockers without numbers (which account or
	// QOS was refused, which dependency waits).
	Detail string
}

// Blocked reports whether b blocks the job.
func (b Blocker) Blocked() bool { return b.Reason != ReasonNone }

// String explains the blocker in one line, e.g.
//
//	QOSMaxGRESPerUser: job QOS gpu MaxTRESPerUser gres/gpu=8; user alice uses 6, job asks 4
func (b Blocker) String() string {
	if !b.Blocked() {
		return "None"
	}
	var s strings.Builder
	s.WriteString(b.Reason.String())
	s.WriteString(": ")
	if b.Level != LevelNone {
		s.WriteString(b.Level.String())
		s.WriteByte(' ')
	}
	if b.Entity != "" {
		s.WriteString(b.Entity)
		s.WriteByte(' ')
	}
	s.WriteString(b.Limit)
	if b.Unit != UnitNone {
		if b.TRES != "" {
			s.WriteByte(' ')
			s.WriteString(b.TRES)
		}
		s.WriteByte('=')
		s.WriteString(b.Unit.format(b.Value))
		if b.Holder != "" {
			fmt.Fprintf(&s, "; %s uses %s", b.Holder, b.Unit.format(b.Usage))
			fmt.Fprintf(&s, ", job adds %s", b.Unit.format(b.Request))
		} else {
			fmt.Fprintf(&s, "; job asks %s", b.Unit.format(b.Request))
		}
	}
	if b.Detail != "" {
		s.WriteString(": ")
		s.WriteString(b.Detail)
	}
	return s.String()
}

func (u Unit) format(v int64) string {
	switch u {
	case UnitSeconds:
		return FormatDuration(time.Duration(v) * time.Second)
	case UnitJobs:
		return strconv.FormatInt(v, 10) + " jobs"
	case UnitTRESMinutes:
		return strconv.FormatInt(v, 10) + " TRES-min"
	}
	return strconv.FormatInt(v, 10)
}

// LimitError is the error CheckSubmit returns for a job it rejects. It
// wraps ErrLimit (a limit) or ErrNotAllowed (an access rule) and carries
// the Blocker.
type LimitError struct {
	Blocker Blocker
	err     error
}

// Error describes the rejection, naming the limit, its level and entity.
func (e *LimitError) Error() string {
	return fmt.Sprintf("policy: %v: %s", e.err, e.Blocker)
}

// Unwrap returns the sentinel (ErrLimit or ErrNotAllowed).
func (e *LimitError) Unwrap() error { return e.err }
