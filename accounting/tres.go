package accounting

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gres"
)

// TRES is a set of trackable-resource counts keyed by canonical TRES name
// ("cpu", "mem" in MiB, "node", "billing", "gres/gpu", "gres/gpu:h100",
// "license/matlab"). Records store TRES by name, never by registry ID, so a
// ledger stays valid when a registry assigns different IDs. A missing name
// counts as zero. In limits, a present name with count 0 is a limit of zero
// and an absent name is no limit.
type TRES map[string]int64

// builtinOrder is Slurm's order of the always-tracked TRES, used for
// canonical formatting.
var builtinOrder = map[string]int{"cpu": 0, "mem": 1, "energy": 2, "node": 3, "billing": 4}

// Names returns the names in t in canonical order: cpu, mem, energy, node,
// billing, then all others sorted.
func (t TRES) Names() []string { return tresNames(t) }

// tresNames returns the keys of m in canonical TRES order.
func tresNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.SortFunc(names, compareTRESNames)
	return names
}

func compareTRESNames(a, b string) int {
	ai, aok := builtinOrder[a]
	bi, bok := builtinOrder[b]
	switch {
	case aok && bok:
		return ai - bi
	case aok:
		return -1
	case bok:
		return 1
	}
	return strings.Compare(a, b)
}

// String formats t as Slurm does in sacct's ReqTRES/AllocTRES columns:
// "cpu=4,mem=16384,node=1,billing=4,gres/gpu=2", in canonical order, memory
// in MiB, zero counts included. The empty set formats as "".
func (t TRES) String() string {
	var b strings.Builder
	for i, n := range t.Names() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(t[n], 10))
	}
	return b.String()
}

// Clone returns a copy of t (nil for nil).
func (t TRES) Clone() TRES { return maps.Clone(t) }

// Equal reports whether t and u hold the same counts; zero counts and
// missing names are not distinguished.
func (t TRES) Equal(u TRES) bool {
	for k, v := range t {
		if u[k] != v {
			return false
		}
	}
	for k, v := range u {
		if t[k] != v {
			return false
		}
	}
	return true
}

// Validate checks every name is a valid TRES name in canonical (lower-case)
// spelling and every count is in [0, gres.MaxCount].
func (t TRES) Validate() error {
	return checkEntries(t, func(n string, v int64) error {
		if err := validTRESName(n); err != nil {
			return err
		}
		if v < 0 || v > gres.MaxCount {
			return fmt.Errorf("%w: TRES %s=%d: count out of range [0, %d]", ErrInvalid, n, v, gres.MaxCount)
		}
		return nil
	})
}

// checkEntries runs check on every entry of m and returns the error of
// the first bad entry in key order, so that the same input always names
// the same entry (map order is random; the sort is paid only on error).
func checkEntries[V any](m map[string]V, check func(string, V) error) error {
	for k, v := range m {
		if check(k, v) != nil {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if err := check(k, m[k]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// validTRESName accepts the names gres.Registry.Register accepts, in
// canonical lower case: cpu, mem, energy, node, billing,
// gres/<name>[:<type>] and license/<name>, where names and types are 1–64
// of [a-z0-9_.-]. (A fuzz test checks it against gres.Registry.)
func validTRESName(n string) error {
	if _, ok := builtinOrder[n]; ok {
		return nil
	}
	kind, rest, ok := strings.Cut(n, "/")
	bad := !ok
	switch {
	case bad:
	case kind == "gres":
		base, typ, typed := strings.Cut(rest, ":")
		bad = !validIdent(base) || typed && !validIdent(typ)
	case kind == "license":
		bad = !validIdent(rest)
	default:
		bad = true
	}
	if bad {
		return fmt.Errorf("%w: TRES name %q: want cpu, mem, energy, node, billing, gres/<name>[:<type>] or license/<name> in lower case", ErrInvalid, n)
	}
	return nil
}

func validIdent(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// ParseTRES parses a Slurm TRES string such as
// "cpu=4,mem=16G,node=1,gres/gpu:h100=2,license/matlab=1". Names are
// case-insensitive and stored lower-case. Counts are non-negative integers;
// memory accepts the suffixes K, M, G, T, P (powers of 1024; the stored
// unit is MiB, so K must give a whole number of MiB). A repeated name is an
// error. The empty string parses to an empty set.
func ParseTRES(s string) (TRES, error) {
	t := TRES{}
	s = strings.TrimSpace(s)
	if s == "" {
		return t, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("%w: TRES %q: item %q lacks '='", ErrInvalid, s, part)
		}
		name = strings.ToLower(strings.TrimSpace(name))
		if err := validTRESName(name); err != nil {
			return nil, fmt.Errorf("TRES %q: %w", s, err)
		}
		if _, dup := t[name]; dup {
			return nil, fmt.Errorf("%w: TRES %q: %s given twice", ErrInvalid, s, name)
		}
		n, err := parseTRESCount(name, strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("%w: TRES %q: %s: %w", ErrInvalid, s, name, err)
		}
		t[name] = n
	}
	return t, nil
}

func parseTRESCount(name, v string) (int64, error) {
	if v == "" {
		return 0, fmt.Errorf("empty count")
	}
	mult := int64(1)
	if name == "mem" {
		switch v[len(v)-1] {
		case 'K', 'k':
			mult = -1024 // divide
		case 'M', 'm':
			mult = 1
		case 'G', 'g':
			mult = 1 << 10
		case 'T', 't':
			mult = 1 << 20
		case 'P', 'p':
			mult = 1 << 30
		}
		if c := v[len(v)-1]; c < '0' || c > '9' {
			v = v[:len(v)-1]
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad count %q", v)
	}
	switch {
	case mult < 0:
		if n%1024 != 0 {
			return 0, fmt.Errorf("%dK is not a whole number of MiB", n)
		}
		n /= 1024
	case mult > 1:
		if n > gres.MaxCount/mult {
			return 0, fmt.Errorf("count %q exceeds %d", v, gres.MaxCount)
		}
		n *= mult
	}
	if n > gres.MaxCount {
		return 0, fmt.Errorf("count %d exceeds %d", n, gres.MaxCount)
	}
	return n, nil
}

// Vector converts t into a vector over reg. Names not in reg fail with
// gres.ErrUnknownTRES (wrapped), unless register is true, in which case
// they are added to reg.
func (t TRES) Vector(reg *gres.Registry, register bool) (gres.Vector, error) {
	v := reg.NewVector()
	for _, n := range t.Names() {
		id, ok := reg.Lookup(n)
		if !ok {
			if !register {
				return nil, fmt.Errorf("TRES %q: %w", n, gres.ErrUnknownTRES)
			}
			var err error
			if id, err = reg.Register(n); err != nil {
				return nil, err
			}
		}
		var err error
		if v, err = v.Set(id, t[n]); err != nil {
			return nil, fmt.Errorf("TRES %q: %w", n, err)
		}
	}
	return v, nil
}

// TRESFromVector converts a vector over reg into a name→count map, leaving
// out zero counts.
func TRESFromVector(reg *gres.Registry, v gres.Vector) TRES {
	t := TRES{}
	for i, x := range v {
		if x != 0 {
			if n := reg.Name(gres.ID(i)); n != "" {
				t[n] = x
			}
		}
	}
	return t
}

// addScaled adds k·u into t (k ≥ 0), saturating at math.MaxInt64.
func (t TRES) addScaled(u TRES, k int64) {
	for n, v := range u {
		t[n] = satAdd(t[n], satMul(v, k))
	}
}

func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		if (a > 0) == (b > 0) {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return p
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	if b < 0 && a < math.MinInt64-b {
		return math.MinInt64
	}
	return a + b
}

// Usage vectors.

// TRESFloat is a set of real-valued TRES quantities keyed by canonical TRES
// name, used for decayed usage (TRES-seconds).
type TRESFloat map[string]float64

// Clone returns a copy of t (nil for nil).
func (t TRESFloat) Clone() TRESFloat { return maps.Clone(t) }

// Names returns the names in t in canonical TRES order.
func (t TRESFloat) Names() []string { return tresNames(t) }
