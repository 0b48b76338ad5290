package topology

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxHostlistHosts bounds the number of names one hostlist expression may
// expand to; larger expansions return ErrTooLarge instead of exhausting
// memory.
const MaxHostlistHosts = 1 << 20

// maxHostDigits bounds the digits of one number in a range so that it fits
// an int64 with room to spare.
const maxHostDigits = 18

// ExpandHostlist expands a Slurm hostlist expression into host names, in
// the order written.
//
// Semantics follow Slurm's hostlist expressions:
//
//   - Elements are separated by commas (or whitespace) outside brackets;
//     empty elements are skipped, so "" expands to no names.
//   - A bracket holds a comma list of numbers and ranges: "tux[0-3,8]" is
//     tux0 tux1 tux2 tux3 tux8.
//   - Zero padding is kept: the width of a range is the number of digits of
//     its lower bound, so "n[08-10]" is n08 n09 n10 while "n[8-10]" is n8 n9
//     n10.
//   - Text may follow a bracket ("rack[1-2]a") and several brackets form a
//     cartesian product, first bracket outermost ("r[1-2]n[1-2]" is r1n1 r1n2
//     r2n1 r2n2).
//   - Duplicates are kept (Slurm's hostlist_create does not remove them).
//
// Malformed input (unbalanced or nested brackets, an empty bracket, a
// non-numeric or descending range, numbers over 18 digits) returns an error
// wrapping ErrSyntax that names the expression and the byte offset; an
// expansion over MaxHostlistHosts names wraps ErrTooLarge.
func ExpandHostlist(s string) ([]string, error) {
	var out []string
	total := 0
	start := -1
	depth := 0
	flush := func(end int) error {
		if start < 0 {
			return nil
		}
		tok := s[start:end]
		start = -1
		n, err := expandToken(s, tok, end-len(tok), MaxHostlistHosts-total, &out)
		total += n
		return err
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '[':
			if depth > 0 {
				return nil, fmt.Errorf("hostlist %q: nested '[' at offset %d: %w", s, i, ErrSyntax)
			}
			depth++
			if start < 0 {
				start = i
			}
		case c == ']':
			if depth == 0 {
				return nil, fmt.Errorf("hostlist %q: unmatched ']' at offset %d: %w", s, i, ErrSyntax)
			}
			depth--
		case depth == 0 && (c == ',' || isSpace(c)):
			if err := flush(i); err != nil {
				return nil, err
			}
		default:
			if depth > 0 && isSpace(c) {
				return nil, fmt.Errorf("hostlist %q: whitespace inside brackets at offset %d: %w", s, i, ErrSyntax)
			}
			if start < 0 {
				start = i
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("hostlist %q: unclosed '[': %w", s, ErrSyntax)
	}
	if err := flush(len(s)); err != nil {
		return nil, err
	}
	return out, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// hostRange is one lo-hi range of a bracket, printed with width digits.
type hostRange struct {
	lo, hi int64
	width  int
}

// expandToken expands one element (no top-level commas) whose first byte is
// at offset off of the whole expression s, appending at most limit names.
func expandToken(s, tok string, off, limit int, out *[]string) (int, error) {
	// Split into literal parts and bracket range lists:
	// lit0 [b0] lit1 [b1] … litK.
	var lits []string
	var brackets [][]hostRange
	for {
		i := strings.IndexByte(tok, '[')
		if i < 0 {
			lits = append(lits, tok)
			break
		}
		j := strings.IndexByte(tok[i:], ']') + i // balanced: checked by the caller
		rs, err := parseBracket(s, tok[i+1:j], off+i+1)
		if err != nil {
			return 0, err
		}
		lits = append(lits, tok[:i])
		brackets = append(brackets, rs)
		off += j + 1
		tok = tok[j+1:]
	}
	// Count the product first so that a huge expansion allocates nothing.
	n := 1
	for _, rs := range brackets {
		m := 0
		for _, r := range rs {
			m += int(r.hi - r.lo + 1)
			if m > limit {
				return 0, fmt.Errorf("hostlist %q: expands to more than %d names: %w", s, MaxHostlistHosts, ErrTooLarge)
			}
		}
		if n *= m; n > limit {
			return 0, fmt.Errorf("hostlist %q: expands to more than %d names: %w", s, MaxHostlistHosts, ErrTooLarge)
		}
	}
	if n > limit {
		return 0, fmt.Errorf("hostlist %q: expands to more than %d names: %w", s, MaxHostlistHosts, ErrTooLarge)
	}
	var b []byte
	var rec func(k int)
	rec = func(k int) {
		b = append(b, lits[k]...)
		if k == len(brackets) {
			*out = append(*out, string(b))
			return
		}
		mark := len(b)
		for _, r := range brackets[k] {
			for v := r.lo; v <= r.hi; v++ {
				b = appendPadded(b[:mark], v, r.width)
				rec(k + 1)
			}
		}
	}
	rec(0)
	return n, nil
}

// parseBracket parses "0-3,8" (the text between brackets, starting at byte
// offset off of s).
func parseBracket(s, body string, off int) ([]hostRange, error) {
	if body == "" {
		return nil, fmt.Errorf("hostlist %q: empty brackets at offset %d: %w", s, off, ErrSyntax)
	}
	var rs []hostRange
	for part := range strings.SplitSeq(body, ",") {
		loS, hiS, isRange := strings.Cut(part, "-")
		lo, err := parseHostNumber(s, loS, off)
		if err != nil {
			return nil, err
		}
		hi := lo
		if isRange {
			if hi, err = parseHostNumber(s, hiS, off+len(loS)+1); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, fmt.Errorf("hostlist %q: descending range %q at offset %d: %w", s, part, off, ErrSyntax)
			}
		}
		rs = append(rs, hostRange{lo: lo, hi: hi, width: len(loS)})
		off += len(part) + 1
	}
	return rs, nil
}

func parseHostNumber(s, d string, off int) (int64, error) {
	if d == "" {
		return 0, fmt.Errorf("hostlist %q: missing number at offset %d: %w", s, off, ErrSyntax)
	}
	if len(d) > maxHostDigits {
		return 0, fmt.Errorf("hostlist %q: number %q longer than %d digits at offset %d: %w", s, d, maxHostDigits, off, ErrSyntax)
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return 0, fmt.Errorf("hostlist %q: %q is not a number at offset %d: %w", s, d, off, ErrSyntax)
		}
	}
	v, _ := strconv.ParseInt(d, 10, 64) // ≤ 18 digits: cannot fail
	return v, nil
}

// appendPadded appends v in decimal, left-padded with zeros to width.
func appendPadded(b []byte, v int64, width int) []byte {
	var tmp [20]byte
	d := strconv.AppendInt(tmp[:0], v, 10)
	for i := len(d); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, d...)
}

// hostName is a name split into a prefix and an optional numeric suffix.
type hostName struct {
	prefix string
	digits string // "" when the name has no numeric suffix
	num    int64
}

func splitHostName(name string) hostName {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) || len(name)-i > maxHostDigits {
		return hostName{prefix: name}
	}
	v, _ := strconv.ParseInt(name[i:], 10, 64)
	return hostName{prefix: name[:i], digits: name[i:], num: v}
}

// CompareHostnames orders host names the way CompressHostlist lists them:
// by prefix (the name without its trailing digits), names without a number
// first, then by number, then by digit count ("n1" before "n01" before
// "n2"). It returns -1, 0 or +1.
func CompareHostnames(a, b string) int {
	return compareHostName(splitHostName(a), splitHostName(b))
}

func compareHostName(x, y hostName) int {
	if c := cmp.Compare(x.prefix, y.prefix); c != 0 {
		return c
	}
	if (x.digits == "") != (y.digits == "") {
		if x.digits == "" {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(x.num, y.num); c != 0 {
		return c
	}
	return cmp.Compare(len(x.digits), len(y.digits))
}

// CompressHostlist returns the canonical Slurm hostlist expression for a set
// of names: sorted by CompareHostnames, duplicates removed, runs of
// consecutive numbers with a common prefix folded into ranges ("tux0, tux1,
// tux2, tux3, tux8" → "tux[0-3,8]"), zero padding kept ("n08 n09 n10" →
// "n[08-10]"; "n8 n09" stay apart as "n[8,09]"). A single name is written
// without brackets. ExpandHostlist of the result yields the sorted, unique
// names.
//
// A name that is empty or contains '[', ']', ',' or whitespace cannot be
// written in a hostlist and returns an error wrapping ErrSyntax.
func CompressHostlist(names []string) (string, error) {
	hs := make([]hostName, 0, len(names))
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, "[], \t\r\n") {
			return "", fmt.Errorf("hostlist: host name %q cannot appear in a hostlist: %w", n, ErrSyntax)
		}
		hs = append(hs, splitHostName(n))
	}
	slices.SortFunc(hs, compareHostName)
	hs = slices.CompactFunc(hs, func(a, b hostName) bool { return compareHostName(a, b) == 0 })

	var b strings.Builder
	for i := 0; i < len(hs); {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		h := hs[i]
		if h.digits == "" {
			b.WriteString(h.prefix)
			i++
			continue
		}
		j := i
		for j < len(hs) && hs[j].prefix == h.prefix && hs[j].digits != "" {
			j++
		}
		b.WriteString(h.prefix)
		if j-i == 1 {
			b.WriteString(h.digits)
			i = j
			continue
		}
		b.WriteByte('[')
		var buf []byte
		for k := i; k < j; {
			lo := hs[k]
			w := len(lo.digits)
			e := k + 1
			for e < j && hs[e].num == hs[e-1].num+1 && string(appendPadded(buf[:0], hs[e].num, w)) == hs[e].digits {
				e++
			}
			if k > i {
				b.WriteByte(',')
			}
			b.WriteString(lo.digits)
			if e-k > 1 {
				b.WriteByte('-')
				b.WriteString(hs[e-1].digits)
			}
			k = e
		}
		b.WriteByte(']')
		i = j
	}
	return b.String(), nil
}
