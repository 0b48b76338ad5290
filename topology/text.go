package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseDomainMode parses "any", "one" or "balanced" (case-insensitive; ""
// is DomainAny). Errors wrap ErrSyntax and name the value.
func ParseDomainMode(s string) (DomainMode, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return DomainAny, nil
	}
	for m := DomainAny; m <= DomainBalanced; m++ {
		if strings.EqualFold(t, m.String()) {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w: DomainMode %q: want any, one or balanced", ErrSyntax, s)
}

// MarshalText writes "any", "one" or "balanced"; an unknown mode is an
// error.
func (m DomainMode) MarshalText() ([]byte, error) {
	if m > DomainBalanced {
		return nil, fmt.Errorf("%w: DomainMode(%d) has no name", ErrSyntax, uint8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText reads what ParseDomainMode accepts.
func (m *DomainMode) UnmarshalText(b []byte) error {
	v, err := ParseDomainMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// MarshalText writes the set as String does followed by its capacity:
// "{0-3,7}/16" holds indices 0 to 3 and 7 of a 16-node cluster. The zero
// set (capacity 0) is "".
func (s NodeSet) MarshalText() ([]byte, error) {
	if s.n == 0 {
		return nil, nil
	}
	return []byte(s.String() + "/" + strconv.Itoa(s.n)), nil
}

// UnmarshalText reads the form MarshalText writes. Indices must be
// ascending, distinct and below the capacity, which is at most MaxNodes;
// errors wrap ErrSyntax (ErrTooLarge for a capacity above MaxNodes).
func (s *NodeSet) UnmarshalText(b []byte) error {
	in := string(b)
	if in == "" {
		*s = NodeSet{}
		return nil
	}
	bad := func(why string) error { return fmt.Errorf("%w: node set %q: %s", ErrSyntax, in, why) }
	body, capText, ok := strings.Cut(in, "}/")
	body, open := strings.CutPrefix(body, "{")
	if !ok || !open {
		return bad("want {ranges}/capacity")
	}
	n, err := strconv.Atoi(capText)
	switch {
	case err != nil || n < 0 || capText != strconv.Itoa(n):
		return bad("capacity must be a decimal count")
	case n > MaxNodes:
		return fmt.Errorf("%w: node set %q: capacity above %d", ErrTooLarge, in, MaxNodes)
	}
	out := NewNodeSet(n)
	next := 0 // the least index the next range may start at
	if body != "" {
		for r := range strings.SplitSeq(body, ",") {
			lo, hi, isRange := strings.Cut(r, "-")
			a, errA := strconv.Atoi(lo)
			c := a
			var errC error
			if isRange {
				c, errC = strconv.Atoi(hi)
			}
			if errA != nil || errC != nil || lo != strconv.Itoa(a) || (isRange && (hi != strconv.Itoa(c) || c <= a)) {
				return bad(fmt.Sprintf("range %q: want i or i-j with i < j", r))
			}
			if a < next || c >= n {
				return bad(fmt.Sprintf("range %q: indices must ascend, apart, below %d", r, n))
			}
			for i := a; i <= c; i++ {
				out.Add(i)
			}
			next = c + 2 // adjacent ranges are written as one
		}
	}
	*s = out
	return nil
}
