// Package feature parses Slurm's node feature constraints (sbatch
// -C/--constraint) and matches them against the features of a node
// (slurm.conf Features=).
//
// The forms sbatch documents are all read:
//
//   - a single name: "gpu" — every node of the job has it;
//   - AND: "intel&ib" (a comma is read as AND too, as Slurm does);
//   - OR: "intel|amd" — every node has one of them, not necessarily the
//     same one;
//   - parentheses group: "(intel|amd)&ib"; '&' binds tighter than '|';
//   - matching OR: "[rack1|rack2|rack3]" — every node of the job has the
//     same one of the alternatives (each may be a parenthesised
//     expression);
//   - node number: "gpu*4" or "(a|b)*4" — at least that many of the job's
//     nodes satisfy it, the others need not;
//   - multiple counts: "[rack1*2&rack2*4]" (brackets optional) — that
//     many distinct nodes for each term, "[(a|b)*1&c*2]" with
//     parenthesised terms.
//
// A constraint is a Constraint value; Parse reads its text and String
// writes its canonical form, which Parse reads back to an equal value.
// Malformed text returns an error wrapping ErrSyntax that names the
// expression and the byte offset, as Slurm rejects an invalid feature
// specification at submission.
package feature

import (
	"errors"
	"slices"
	"strconv"
	"strings"
)

// Sentinel errors; every error of this package wraps one of them.
var (
	// ErrSyntax reports a malformed constraint (Slurm's "Invalid feature
	// specification").
	ErrSyntax = errors.New("invalid feature specification")
	// ErrTooLarge reports a constraint over MaxLen bytes, nested deeper
	// than MaxDepth or with a count over MaxCount.
	ErrTooLarge = errors.New("feature specification too large")
)

// Limits on what Parse accepts.
const (
	// MaxLen is the longest constraint text read.
	MaxLen = 1 << 12
	// MaxDepth bounds the nesting of parentheses and brackets.
	MaxDepth = 32
	// MaxCount bounds a node count ("gpu*N").
	MaxCount = 1 << 20
)

// Kind is the form of a constraint.
type Kind uint8

// Constraint kinds.
const (
	// KindNone: no constraint (the empty text); every node qualifies.
	KindNone Kind = iota
	// KindFilter: every node of the job satisfies Expr (single names,
	// &, |, parentheses).
	KindFilter
	// KindMatchingOR: every node of the job satisfies the same one of
	// Alternatives ("[a|b|c]").
	KindMatchingOR
	// KindCounts: Groups[k].Count distinct nodes of the job satisfy
	// Groups[k].Expr ("gpu*4", "[a*2&b*4]"); the job's other nodes, if
	// it has more, are unconstrained.
	KindCounts
)

var kindNames = [...]string{KindNone: "none", KindFilter: "filter", KindMatchingOR: "matching-or", KindCounts: "counts"}

// String returns the kind's name ("filter", "matching-or" …).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// op is an expression node's operator.
type op uint8

const (
	opName op = iota
	opAnd
	opOr
)

// Expr is a boolean expression over feature names (names, AND, OR). The
// zero Expr matches every node.
type Expr struct {
	op   op
	name string // opName
	kids []Expr // opAnd, opOr: two or more
}

// Match reports whether a node with these features satisfies e.
func (e Expr) Match(features []string) bool {
	switch e.op {
	case opAnd:
		for _, k := range e.kids {
			if !k.Match(features) {
				return false
			}
		}
		return true
	case opOr:
		for _, k := range e.kids {
			if k.Match(features) {
				return true
			}
		}
		return false
	}
	return e.name == "" || slices.Contains(features, e.name)
}

// IsZero reports whether e is the empty expression (matching every node).
func (e Expr) IsZero() bool { return e.op == opName && e.name == "" }

// String writes e canonically: '&' and '|' with parentheses only where
// an OR sits inside an AND.
func (e Expr) String() string { return string(e.appendTo(nil, false)) }

func (e Expr) appendTo(b []byte, inAnd bool) []byte {
	switch e.op {
	case opName:
		return append(b, e.name...)
	case opAnd:
		for i, k := range e.kids {
			if i > 0 {
				b = append(b, '&')
			}
			b = k.appendTo(b, true)
		}
		return b
	}
	if inAnd {
		b = append(b, '(')
	}
	for i, k := range e.kids {
		if i > 0 {
			b = append(b, '|')
		}
		b = k.appendTo(b, false)
	}
	if inAnd {
		b = append(b, ')')
	}
	return b
}

// appendNames appends the feature names e mentions.
func (e Expr) appendNames(out []string) []string {
	if e.op == opName {
		if e.name != "" {
			return append(out, e.name)
		}
		return out
	}
	for _, k := range e.kids {
		out = k.appendNames(out)
	}
	return out
}

// Group is one term of a counted constraint: Count distinct nodes that
// satisfy Expr.
type Group struct {
	Expr  Expr
	Count int
}

// Constraint is a parsed --constraint. The zero value is no constraint.
type Constraint struct {
	kind   Kind
	expr   Expr    // KindFilter
	alts   []Expr  // KindMatchingOR: two or more
	groups []Group // KindCounts: one or more
}

// Kind returns the constraint's form.
func (c Constraint) Kind() Kind { return c.kind }

// IsZero reports whether c is no constraint.
func (c Constraint) IsZero() bool { return c.kind == KindNone }

// Expr returns a KindFilter constraint's expression (the zero Expr for
// other kinds).
func (c Constraint) Expr() Expr { return c.expr }

// Alternatives returns a KindMatchingOR constraint's alternatives, in
// the order written (nil for other kinds). The slice must not be
// modified.
func (c Constraint) Alternatives() []Expr { return c.alts }

// Groups returns a KindCounts constraint's groups, in the order written
// (nil for other kinds). The slice must not be modified.
func (c Constraint) Groups() []Group { return c.groups }

// Nodes returns the fewest nodes a job with this constraint needs: the
// sum of a KindCounts constraint's counts, 0 for the other kinds.
func (c Constraint) Nodes() int {
	n := 0
	for _, g := range c.groups {
		n += g.Count
	}
	return n
}

// Match reports whether a node with these features may be one of a
// job's nodes under c: it satisfies the filter, or one of the
// alternatives; a counted constraint leaves the job's extra nodes free,
// so every node may be one.
func (c Constraint) Match(features []string) bool {
	switch c.kind {
	case KindFilter:
		return c.expr.Match(features)
	case KindMatchingOR:
		for _, a := range c.alts {
			if a.Match(features) {
				return true
			}
		}
		return false
	}
	return true
}

// Names returns the feature names c mentions, sorted, without
// duplicates.
func (c Constraint) Names() []string {
	out := c.expr.appendNames(nil)
	for _, a := range c.alts {
		out = a.appendNames(out)
	}
	for _, g := range c.groups {
		out = g.Expr.appendNames(out)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// String writes c canonically ("" for none; matching OR and multiple
// counts in brackets, a single count without).
func (c Constraint) String() string {
	var b []byte
	switch c.kind {
	case KindFilter:
		b = c.expr.appendTo(b, false)
	case KindMatchingOR:
		b = append(b, '[')
		for i, a := range c.alts {
			if i > 0 {
				b = append(b, '|')
			}
			b = a.appendTo(b, true)
		}
		b = append(b, ']')
	case KindCounts:
		br := len(c.groups) > 1
		if br {
			b = append(b, '[')
		}
		for i, g := range c.groups {
			if i > 0 {
				b = append(b, '&')
			}
			paren := g.Expr.op != opName
			if paren {
				b = append(b, '(')
			}
			b = g.Expr.appendTo(b, false)
			if paren {
				b = append(b, ')')
			}
			b = append(b, '*')
			b = strconv.AppendInt(b, int64(g.Count), 10)
		}
		if br {
			b = append(b, ']')
		}
	}
	return string(b)
}

// MarshalText writes String.
func (c Constraint) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses text with Parse.
func (c *Constraint) UnmarshalText(b []byte) error {
	x, err := Parse(string(b))
	if err != nil {
		return err
	}
	*c = x
	return nil
}

// validName reports whether b may appear in a feature name: printable
// ASCII other than the operators, brackets, parentheses and whitespace.
func validName(b byte) bool {
	return b > ' ' && b < 0x7f && !strings.ContainsRune("&|,[]()*", rune(b))
}
