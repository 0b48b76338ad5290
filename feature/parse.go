package feature

import (
	"fmt"
	"strings"
)

// Parse reads a constraint in sbatch's --constraint syntax (see the
// package documentation). Surrounding whitespace is ignored; "" is no
// constraint. Counts ("*N", 1 ≤ N ≤ MaxCount) are accepted only on the
// terms of the outermost AND list, every term of which then needs one;
// a matching OR ("[a|b]") may hold no counts; brackets enclose the whole
// constraint. Anything else is an error wrapping ErrSyntax (or
// ErrTooLarge) that names the text and the byte offset.
func Parse(s string) (Constraint, error) {
	s = strings.TrimSpace(s)
	if len(s) > MaxLen {
		return Constraint{}, fmt.Errorf("constraint of %d bytes (at most %d): %w", len(s), MaxLen, ErrTooLarge)
	}
	if s == "" {
		return Constraint{}, nil
	}
	p := parser{s: s}
	bracketed := s[0] == '['
	if bracketed {
		p.pos = 1
	}
	top, err := p.or(0)
	if err != nil {
		return Constraint{}, err
	}
	if bracketed {
		if p.pos >= len(s) || s[p.pos] != ']' {
			return Constraint{}, p.fail("expected ']'")
		}
		p.pos++
	}
	if p.pos != len(s) {
		return Constraint{}, p.fail("unexpected %q", s[p.pos])
	}
	return p.classify(top, bracketed)
}

// term is a parsed term with its count (0: none); a list node holds its
// operator and terms.
type term struct {
	expr  Expr
	count int
	at    int // byte offset, for errors
}

// list is an AND or OR list of terms at the outermost level.
type list struct {
	op    op
	terms []term
}

type parser struct {
	s     string
	pos   int
	depth int
}

func (p *parser) fail(format string, args ...any) error {
	return fmt.Errorf("constraint %q: %s at offset %d: %w", p.s, fmt.Sprintf(format, args...), p.pos, ErrSyntax)
}

func (p *parser) peek() byte {
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

// or parses and-lists joined by '|'. At level 0 (the outermost) it keeps
// the terms with their counts; deeper, counts are refused.
func (p *parser) or(level int) (list, error) {
	first, err := p.and(level)
	if err != nil {
		return list{}, err
	}
	if p.peek() != '|' {
		return first, nil
	}
	out := list{op: opOr, terms: []term{first.asTerm()}}
	for p.peek() == '|' {
		p.pos++
		l, err := p.and(level)
		if err != nil {
			return list{}, err
		}
		out.terms = append(out.terms, l.asTerm())
	}
	return out, nil
}

// asTerm folds an AND list into one term (its count, if a single term).
func (l list) asTerm() term {
	if len(l.terms) == 1 {
		return l.terms[0]
	}
	t := term{expr: join(opAnd, l.terms), at: l.terms[0].at}
	for _, x := range l.terms {
		if x.count > 0 {
			t.count = -1 // a count inside an OR: refused by classify
		}
	}
	return t
}

// join builds an AND or OR of the terms' expressions, flattening nested
// lists of the same operator.
func join(o op, ts []term) Expr {
	e := Expr{op: o}
	for _, t := range ts {
		if t.expr.op == o {
			e.kids = append(e.kids, t.expr.kids...)
		} else {
			e.kids = append(e.kids, t.expr)
		}
	}
	return e
}

// and parses counted terms joined by '&' or ','.
func (p *parser) and(level int) (list, error) {
	out := list{op: opAnd}
	for {
		t, err := p.term(level)
		if err != nil {
			return list{}, err
		}
		out.terms = append(out.terms, t)
		if c := p.peek(); c != '&' && c != ',' {
			return out, nil
		}
		p.pos++
	}
}

// term parses a name or a parenthesised expression, with an optional
// "*count".
func (p *parser) term(level int) (term, error) {
	t := term{at: p.pos}
	switch c := p.peek(); {
	case c == '(':
		if p.depth++; p.depth > MaxDepth {
			return term{}, fmt.Errorf("constraint %q: nested deeper than %d at offset %d: %w", p.s, MaxDepth, p.pos, ErrTooLarge)
		}
		p.pos++
		l, err := p.or(level + 1)
		if err != nil {
			return term{}, err
		}
		if p.peek() != ')' {
			return term{}, p.fail("expected ')'")
		}
		p.pos++
		p.depth--
		if l.op == opOr {
			t.expr = join(opOr, l.terms)
		} else {
			t.expr = l.asTerm().expr
		}
	case validName(c):
		start := p.pos
		for p.pos < len(p.s) && validName(p.s[p.pos]) {
			p.pos++
		}
		t.expr = Expr{op: opName, name: p.s[start:p.pos]}
	case c == 0:
		return term{}, p.fail("missing feature name")
	default:
		return term{}, p.fail("unexpected %q", c)
	}
	if p.peek() != '*' {
		return t, nil
	}
	if level > 0 {
		return term{}, p.fail("a count inside parentheses")
	}
	p.pos++
	start := p.pos
	n := 0
	for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		if n = n*10 + int(p.s[p.pos]-'0'); n > MaxCount {
			return term{}, fmt.Errorf("constraint %q: count over %d at offset %d: %w", p.s, MaxCount, start, ErrTooLarge)
		}
		p.pos++
	}
	if p.pos == start || n == 0 {
		return term{}, p.fail("count must be a positive number")
	}
	t.count = n
	return t, nil
}

// classify turns the outermost list into a Constraint.
func (p *parser) classify(top list, bracketed bool) (Constraint, error) {
	counted := 0
	for _, t := range top.terms {
		if t.count != 0 {
			counted++
		}
	}
	if counted > 0 {
		if top.op == opOr {
			p.pos = top.terms[0].at
			return Constraint{}, p.fail("counts in an OR")
		}
		if counted != len(top.terms) {
			for _, t := range top.terms {
				if t.count == 0 {
					p.pos = t.at
				}
			}
			return Constraint{}, p.fail("every term of a counted constraint needs a count")
		}
		c := Constraint{kind: KindCounts}
		for _, t := range top.terms {
			c.groups = append(c.groups, Group{Expr: t.expr, Count: t.count})
		}
		return c, nil
	}
	if top.op == opOr && bracketed {
		c := Constraint{kind: KindMatchingOR}
		for _, t := range top.terms {
			c.alts = append(c.alts, t.expr)
		}
		return c, nil
	}
	if len(top.terms) == 1 {
		return Constraint{kind: KindFilter, expr: top.terms[0].expr}, nil
	}
	return Constraint{kind: KindFilter, expr: join(top.op, top.terms)}, nil
}
