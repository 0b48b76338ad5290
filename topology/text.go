package topology

import (
	"fmt"
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
