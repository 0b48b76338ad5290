package feature

import (
	"errors"
	"fmt"
	"slices"
)

// ErrChangeable reports a constraint that uses changeable features (those
// a node features plugin such as node_features/helpers can change by
// rebooting the node) in a form Slurm does not accept for them.
var ErrChangeable = errors.New("unsupported use of changeable features")

// Changeable returns the changeable features c requests — the names for
// which changeable reports true — sorted, without duplicates (nil when
// it requests none). Slurm's node features plugins accept changeable
// features only as terms of the constraint's outermost AND ("mig7&ib",
// "knl&cache&a2a"): a node is rebooted into all of them together. A
// changeable feature inside an OR, a matching OR ("[a|b]") or a counted
// constraint ("a*2") is refused with an error wrapping ErrChangeable that
// names the feature and the form.
func (c Constraint) Changeable(changeable func(string) bool) ([]string, error) {
	var out []string
	switch c.kind {
	case KindNone:
		return nil, nil
	case KindFilter:
		terms := []Expr{c.expr}
		if c.expr.op == opAnd {
			terms = c.expr.kids
		}
		for _, t := range terms {
			if t.op == opName {
				if changeable(t.name) {
					out = append(out, t.name)
				}
				continue
			}
			if n := firstChangeable(t, changeable); n != "" {
				return nil, fmt.Errorf("constraint %q: changeable feature %q inside an OR (%s): only AND (&) may join changeable features: %w",
					c.String(), n, t.String(), ErrChangeable)
			}
		}
	case KindMatchingOR:
		for _, a := range c.alts {
			if n := firstChangeable(a, changeable); n != "" {
				return nil, fmt.Errorf("constraint %q: changeable feature %q in a matching OR ([...|...]): %w", c.String(), n, ErrChangeable)
			}
		}
	case KindCounts:
		for _, g := range c.groups {
			if n := firstChangeable(g.Expr, changeable); n != "" {
				return nil, fmt.Errorf("constraint %q: changeable feature %q with a node count (*N): %w", c.String(), n, ErrChangeable)
			}
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// firstChangeable returns the first changeable name e mentions ("" for
// none).
func firstChangeable(e Expr, changeable func(string) bool) string {
	for _, n := range e.appendNames(nil) {
		if changeable(n) {
			return n
		}
	}
	return ""
}
