package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// MarshalText encodes the set as its length and its members as ranges,
// "LEN:{RANGES}", e.g. "16:{0-3,7}"; the zero set is "0:{}". It is the
// form a NodeSet takes in JSON (an event naming reserved nodes).
func (s NodeSet) MarshalText() ([]byte, error) {
	return []byte(strconv.Itoa(s.n) + ":" + s.String()), nil
}

// UnmarshalText decodes MarshalText's form. A malformed text, a length
// above MaxNodes, or a member outside [0, length) is an error wrapping
// ErrSyntax (or ErrTooLarge), and the set is left unchanged.
func (s *NodeSet) UnmarshalText(b []byte) error {
	text := string(b)
	ln, body, ok := strings.Cut(text, ":")
	if !ok || !strings.HasPrefix(body, "{") || !strings.HasSuffix(body, "}") {
		return fmt.Errorf("%w: node set %q: want LEN:{RANGES}", ErrSyntax, text)
	}
	n, err := strconv.Atoi(ln)
	if err != nil || n < 0 {
		return fmt.Errorf("%w: node set %q: length %q", ErrSyntax, text, ln)
	}
	if n > MaxNodes {
		return fmt.Errorf("%w: node set %q: length %d above %d", ErrTooLarge, text, n, MaxNodes)
	}
	out := NewNodeSet(n)
	body = body[1 : len(body)-1]
	if body != "" {
		for tok := range strings.SplitSeq(body, ",") {
			lo, hi, isRange := strings.Cut(tok, "-")
			a, errA := strconv.Atoi(lo)
			z := a
			var errZ error
			if isRange {
				z, errZ = strconv.Atoi(hi)
			}
			if errA != nil || errZ != nil || a < 0 || z < a || z >= n {
				return fmt.Errorf("%w: node set %q: member %q not in [0, %d)", ErrSyntax, text, tok, n)
			}
			for i := a; i <= z; i++ {
				out.Add(i)
			}
		}
	}
	*s = out
	return nil
}
