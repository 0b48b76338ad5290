package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// DepType is a dependency type (sbatch --dependency).
type DepType uint8

// Dependency types.
const (
	// DepAfter: the listed jobs have started (or were cancelled before).
	DepAfter DepType = iota
	// DepAfterAny: the listed jobs have ended, in any state.
	DepAfterAny
	// DepAfterOK: the listed jobs completed successfully (exit code 0).
	DepAfterOK
	// DepAfterNotOK: the listed jobs ended in a failed state (non-zero
	// exit, timeout, node failure, cancellation …).
	DepAfterNotOK
	// DepSingleton: no other job of the same user and name is running or
	// pending ahead of this one.
	DepSingleton
)

var depNames = [...]string{"after", "afterany", "afterok", "afternotok", "singleton"}

// String returns the sbatch spelling.
func (t DepType) String() string { return enumString(t, depNames[:], "DepType") }

// DepTerm is one element of a dependency list: a type and its jobs (none
// for singleton).
type DepTerm struct {
	Type DepType
	Jobs []JobID
}

// Dependency is a parsed --dependency value: terms joined by ',' (all must
// hold) or by '?' (any may hold). The zero value has no dependency.
type Dependency struct {
	Terms []DepTerm
	// Any is true for a '?'-separated list.
	Any bool
}

// Dependency parsing bounds.
const (
	maxDepInput = 1 << 16
	maxDepJobs  = 4096
)

// ParseDependency parses Slurm's dependency syntax:
// "afterok:12:13,afterany:14", "afterok:12?afternotok:13", "singleton",
// and a bare "12:13" (afterany). Types: after, afterany, afterok,
// afternotok, singleton (case-insensitive). ',' and '?' may not be mixed;
// "+time" delays and other types (aftercorr, afterburstbuffer, expand) are
// not supported. Job IDs are positive decimal integers. "" is no
// dependency. Errors wrap ErrSyntax and name the element.
func ParseDependency(s string) (Dependency, error) {
	var d Dependency
	t := strings.TrimSpace(s)
	if t == "" {
		return d, nil
	}
	if len(t) > maxDepInput {
		return d, fmt.Errorf("%w: dependency of %d bytes exceeds %d", ErrTooLarge, len(t), maxDepInput)
	}
	hasAnd, hasOr := strings.Contains(t, ","), strings.Contains(t, "?")
	if hasAnd && hasOr {
		return d, fmt.Errorf("%w: dependency %q mixes ',' (all) and '?' (any)", ErrSyntax, s)
	}
	sep := ","
	if hasOr {
		sep, d.Any = "?", true
	}
	total := 0
	for elem := range strings.SplitSeq(t, sep) {
		elem = strings.TrimSpace(elem)
		bad := func(why string) (Dependency, error) {
			return Dependency{}, fmt.Errorf("%w: dependency %q: element %q: %s", ErrSyntax, s, elem, why)
		}
		if elem == "" {
			return bad("empty")
		}
		parts := strings.Split(elem, ":")
		if parts[0] == "" {
			return bad("missing type or job ID")
		}
		term := DepTerm{Type: DepAfterAny}
		ids := parts
		if c := parts[0][0]; c < '0' || c > '9' {
			name := strings.ToLower(parts[0])
			found := false
			for i, n := range depNames {
				if name == n {
					term.Type, found = DepType(i), true
				}
			}
			if !found {
				return bad("unknown or unsupported type " + strconv.Quote(parts[0]))
			}
			ids = parts[1:]
			if term.Type == DepSingleton {
				if len(ids) != 0 {
					return bad("singleton takes no job IDs")
				}
				d.Terms = append(d.Terms, term)
				continue
			}
			if len(ids) == 0 {
				return bad("no job IDs")
			}
		}
		for _, id := range ids {
			if strings.Contains(id, "+") {
				return bad("+time delays are not supported")
			}
			n, err := strconv.ParseUint(id, 10, 63)
			if err != nil || n == 0 || id[0] == '+' {
				return bad("job ID " + strconv.Quote(id) + " is not a positive integer")
			}
			if total++; total > maxDepJobs {
				return Dependency{}, fmt.Errorf("%w: dependency names more than %d jobs", ErrTooLarge, maxDepJobs)
			}
			term.Jobs = append(term.Jobs, JobID(n))
		}
		d.Terms = append(d.Terms, term)
	}
	return d, nil
}

// IsZero reports whether d has no terms.
func (d Dependency) IsZero() bool { return len(d.Terms) == 0 }

// String writes d in canonical form (ParseDependency reads it back).
func (d Dependency) String() string {
	var b strings.Builder
	for i, t := range d.Terms {
		if i > 0 {
			if d.Any {
				b.WriteByte('?')
			} else {
				b.WriteByte(',')
			}
		}
		b.WriteString(t.Type.String())
		for _, j := range t.Jobs {
			b.WriteByte(':')
			b.WriteString(strconv.FormatUint(uint64(j), 10))
		}
	}
	return b.String()
}

// Jobs returns every job d names, in order (with repeats).
func (d Dependency) Jobs() []JobID {
	var out []JobID
	for _, t := range d.Terms {
		out = append(out, t.Jobs...)
	}
	return out
}

// Outcome is what a dependee job has done so far, as the caller's records
// say.
type Outcome uint8

// Outcomes.
const (
	// OutcomePending: not started yet.
	OutcomePending Outcome = iota
	// OutcomeRunning: running (or suspended).
	OutcomeRunning
	// OutcomeCompleted: ended with exit code 0.
	OutcomeCompleted
	// OutcomeFailed: ended otherwise (non-zero exit, timeout, node
	// failure, preempted, out of memory) after starting.
	OutcomeFailed
	// OutcomeCancelled: cancelled (before or after it started).
	OutcomeCancelled
)

var outcomeNames = [...]string{"PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED"}

// String names the outcome.
func (o Outcome) String() string { return enumString(o, outcomeNames[:], "Outcome") }

// DepState is the state of a dependency.
type DepState uint8

// Dependency states.
const (
	// DepSatisfied: the job may run (as far as dependencies go).
	DepSatisfied DepState = iota
	// DepWaiting: not yet satisfied (ReasonDependency).
	DepWaiting
	// DepNever: can never be satisfied (ReasonDependencyNeverSatisfied).
	DepNever
)

// termState evaluates one dependee against one type.
func termState(t DepType, o Outcome) DepState {
	ended := o >= OutcomeCompleted
	switch t {
	case DepAfter:
		if o == OutcomePending {
			return DepWaiting
		}
		return DepSatisfied
	case DepAfterAny:
		if ended {
			return DepSatisfied
		}
	case DepAfterOK:
		if o == OutcomeCompleted {
			return DepSatisfied
		}
		if ended {
			return DepNever
		}
	case DepAfterNotOK:
		if o == OutcomeFailed || o == OutcomeCancelled {
			return DepSatisfied
		}
		if o == OutcomeCompleted {
			return DepNever
		}
	}
	return DepWaiting
}

// Evaluate decides d given lookup, which reports each dependee's outcome
// (false: the job is unknown, which can never satisfy it), and
// singletonClear, the caller's answer for a singleton term. It returns the
// state and, unless satisfied, a Blocker with ReasonDependency or
// ReasonDependencyNeverSatisfied naming the term and job that decides it.
// ',' lists need every term; '?' lists need one.
func (d Dependency) Evaluate(lookup func(JobID) (Outcome, bool), singletonClear bool) (DepState, Blocker) {
	if d.IsZero() {
		return DepSatisfied, Blocker{}
	}
	var waitDetail, neverDetail, waitEntity, neverEntity string
	sat, never := 0, 0
	for _, t := range d.Terms {
		st, detail := DepSatisfied, ""
		if t.Type == DepSingleton {
			if !singletonClear {
				st, detail = DepWaiting, "another job of the same user and name is ahead"
			}
		}
		for _, j := range t.Jobs {
			o, ok := lookup(j)
			js := DepNever
			if ok {
				js = termState(t.Type, o)
			}
			if js > st {
				st = js
				if ok {
					detail = fmt.Sprintf("job %d is %s", j, o)
				} else {
					detail = fmt.Sprintf("job %d is unknown", j)
				}
			}
			if st == DepNever {
				break
			}
		}
		switch st {
		case DepSatisfied:
			sat++
		case DepNever:
			never++
			if neverDetail == "" {
				neverDetail, neverEntity = detail, Dependency{Terms: []DepTerm{t}}.String()
			}
		default:
			if waitDetail == "" {
				waitDetail, waitEntity = detail, Dependency{Terms: []DepTerm{t}}.String()
			}
		}
	}
	blk := func(r Reason, entity, detail string) Blocker {
		return Blocker{Constraint: Constraint{Reason: r, Limit: "Dependency", Level: LevelDependency, Entity: entity}, Detail: detail}
	}
	switch {
	case d.Any && sat > 0, !d.Any && sat == len(d.Terms):
		return DepSatisfied, Blocker{}
	case d.Any && never == len(d.Terms), !d.Any && never > 0:
		return DepNever, blk(ReasonDependencyNeverSatisfied, neverEntity, neverDetail)
	}
	return DepWaiting, blk(ReasonDependency, waitEntity, waitDetail)
}

// CheckDependency is the submission check for job self: every named job
// must be known to lookup, and none may be self. Errors wrap ErrUnknownJob
// or ErrSyntax and name the job.
func CheckDependency(self JobID, d Dependency, lookup func(JobID) (Outcome, bool)) error {
	for _, j := range d.Jobs() {
		if j == self && self != 0 {
			return fmt.Errorf("policy: dependency %q: %w: job %d depends on itself", d, ErrSyntax, j)
		}
		if _, ok := lookup(j); !ok {
			return fmt.Errorf("policy: dependency %q: %w %d", d, ErrUnknownJob, j)
		}
	}
	return nil
}
