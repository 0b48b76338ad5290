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
	Jobs []DepJob
}

// DepJob is one job a dependency term names. As in Slurm, the ID of a job
// array (its ArrayJobID) names every task of the array: afterok waits for
// all of them to succeed, afterany for all to end, afternotok for all to
// end with at least one failed, after for all to have started. One task
// is named "ID_Task" (sbatch's "12_3").
type DepJob struct {
	// ID is the job's ID, or the array's.
	ID JobID
	// Task is the index of the one task of array ID named, when HasTask.
	Task    int
	HasTask bool
}

// String writes "12", or "12_3" for a task.
func (j DepJob) String() string {
	s := strconv.FormatUint(uint64(j.ID), 10)
	if j.HasTask {
		s += "_" + strconv.Itoa(j.Task)
	}
	return s
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
// "afterok:12_3" (task 3 of array 12) and a bare "12:13" (afterany).
// Types: after, afterany, afterok, afternotok, singleton
// (case-insensitive). ',' and '?' may not be mixed; "+time" delays, task
// ranges ("12_[1-3]") and other types (aftercorr, afterburstbuffer,
// expand) are not supported. Job IDs are positive decimal integers, task
// indices non-negative ones below MaxMaxArraySize. "" is no dependency.
// Errors wrap ErrSyntax and name the element.
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
			job, task, hasTask := strings.Cut(id, "_")
			n, err := strconv.ParseUint(job, 10, 63)
			if err != nil || n == 0 || job[0] == '+' {
				return bad("job ID " + strconv.Quote(job) + " is not a positive integer")
			}
			ref := DepJob{ID: JobID(n), HasTask: hasTask}
			if hasTask {
				k, err := strconv.Atoi(task)
				if err != nil || k < 0 || k >= MaxMaxArraySize || task[0] == '+' || task[0] == '-' {
					return bad("array task " + strconv.Quote(task) + " is not an index (task ranges are not supported)")
				}
				ref.Task = k
			}
			if total++; total > maxDepJobs {
				return Dependency{}, fmt.Errorf("%w: dependency names more than %d jobs", ErrTooLarge, maxDepJobs)
			}
			term.Jobs = append(term.Jobs, ref)
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
			b.WriteString(j.String())
		}
	}
	return b.String()
}

// Jobs returns every job d names, in order (with repeats).
func (d Dependency) Jobs() []DepJob {
	var out []DepJob
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

// Outcomes counts jobs by outcome: Outcomes[OutcomeFailed] is how many
// failed. It is what a DepLookup reports for one DepJob: a single job
// (one count), or every task of a job array.
type Outcomes [len(outcomeNames)]int

// OneOutcome returns the counts of a single job with outcome o.
func OneOutcome(o Outcome) Outcomes {
	var c Outcomes
	if int(o) < len(c) {
		c[o] = 1
	}
	return c
}

// total returns how many jobs c counts.
func (c Outcomes) total() int {
	n := 0
	for _, k := range c {
		n += k
	}
	return n
}

// String describes the counts: "RUNNING" for one job, "2 COMPLETED,
// 1 RUNNING" for several.
func (c Outcomes) String() string {
	var b strings.Builder
	n := c.total()
	for o, k := range c {
		if k == 0 {
			continue
		}
		if n == 1 {
			return Outcome(o).String()
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d %s", k, Outcome(o))
	}
	return b.String()
}

// DepLookup reports what the jobs one DepJob names have done, as the
// caller's records say: a job's outcome counted once; for the ID of a job
// array, the outcomes of all its tasks; for a task (HasTask), that task's.
// False means the caller knows no such job or task, which can never
// satisfy a dependency.
type DepLookup func(DepJob) (Outcomes, bool)

// JobLookup adapts a per-job lookup for callers without job arrays: a
// DepJob names the one job of its ID; a task reference is unknown.
func JobLookup(f func(JobID) (Outcome, bool)) DepLookup {
	return func(j DepJob) (Outcomes, bool) {
		if j.HasTask {
			return Outcomes{}, false
		}
		o, ok := f(j.ID)
		return OneOutcome(o), ok
	}
}

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

// termState evaluates one dependee — a job, or every task of an array,
// counted by outcome — against one type. Like Slurm, it decides afterok
// and afternotok on an array once every task has ended.
func termState(t DepType, c Outcomes) DepState {
	active := c[OutcomePending] + c[OutcomeRunning]
	failed := c[OutcomeFailed] + c[OutcomeCancelled]
	switch {
	case t == DepAfter:
		if c[OutcomePending] > 0 {
			return DepWaiting
		}
		return DepSatisfied
	case active > 0:
		return DepWaiting
	case t == DepAfterAny, t == DepAfterOK && failed == 0, t == DepAfterNotOK && failed > 0:
		return DepSatisfied
	case t == DepAfterOK, t == DepAfterNotOK:
		return DepNever
	}
	return DepWaiting
}

// Evaluate decides d given lookup, which reports what each dependee has
// done (false: unknown, which can never satisfy it), and singletonClear,
// the caller's answer for a singleton term. It returns the state and,
// unless satisfied, a Blocker with ReasonDependency or
// ReasonDependencyNeverSatisfied naming the term and job that decides it.
// ',' lists need every term; '?' lists need one.
func (d Dependency) Evaluate(lookup DepLookup, singletonClear bool) (DepState, Blocker) {
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
			c, ok := lookup(j)
			js := DepNever
			if ok {
				js = termState(t.Type, c)
			}
			if js > st {
				st = js
				switch {
				case !ok:
					detail = fmt.Sprintf("job %s is unknown", j)
				case c.total() == 1:
					detail = fmt.Sprintf("job %s is %s", j, c)
				default:
					detail = fmt.Sprintf("job array %s: tasks %s", j, c)
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
// or array task must be known to lookup, and none may be self. Errors
// wrap ErrUnknownJob or ErrSyntax and name the job.
func CheckDependency(self JobID, d Dependency, lookup DepLookup) error {
	for _, j := range d.Jobs() {
		if j.ID == self && self != 0 {
			return fmt.Errorf("policy: dependency %q: %w: job %s depends on itself", d, ErrSyntax, j)
		}
		if _, ok := lookup(j); !ok {
			return fmt.Errorf("policy: dependency %q: %w %s", d, ErrUnknownJob, j)
		}
	}
	return nil
}
