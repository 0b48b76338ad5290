package gres

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// ID identifies one trackable resource (TRES) inside a Registry. IDs are
// dense, start at 0 and never change once assigned, so a Vector built
// against a registry stays valid when the registry grows.
type ID int

// The built-in TRES, present in every Registry at these fixed IDs in
// Slurm's order of always-tracked resources.
const (
	CPU     ID = iota // cpu: logical CPUs.
	Mem               // mem: memory in MiB.
	Energy            // energy: joules.
	Node              // node: whole nodes.
	Billing           // billing: the weighted charge of an allocation.
	numBuiltin
)

// MaxCount is the largest count any single TRES may hold in a Vector
// (2^50). Parsers and arithmetic reject larger values, so sums of many
// vectors can be checked without overflowing int64.
const MaxCount int64 = 1 << 50

// Sentinel errors; use errors.Is to test for them. The concrete errors
// returned by this package wrap one of these and name the offending value.
var (
	// ErrUnknownTRES reports a TRES name that is not in the registry.
	ErrUnknownTRES = errors.New("unknown TRES")
	// ErrInvalidTRES reports a malformed TRES name or value.
	ErrInvalidTRES = errors.New("invalid TRES")
	// ErrOverflow reports arithmetic whose result exceeds MaxCount or is negative.
	ErrOverflow = errors.New("TRES count out of range")
)

// Registry is the set of TRES a cluster tracks: the built-in cpu, mem,
// energy, node and billing, plus any number of GRES (gres/gpu,
// gres/gpu:h100, gres/shard …) and licenses (license/matlab). It maps names
// to dense IDs.
//
// A Registry is not safe for concurrent mutation; lookups may run
// concurrently once registration has finished.
type Registry struct {
	names []string
	index map[string]ID
}

// NewRegistry returns a registry holding the built-in TRES and then each of
// extra, registered in order. It fails on the first malformed name.
func NewRegistry(extra ...string) (*Registry, error) {
	r := &Registry{index: make(map[string]ID, int(numBuiltin)+len(extra))}
	for _, n := range []string{"cpu", "mem", "energy", "node", "billing"} {
		r.index[n] = ID(len(r.names))
		r.names = append(r.names, n)
	}
	for _, n := range extra {
		if _, err := r.Register(n); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds name to the registry (if absent) and returns its ID. Valid
// names are the built-ins, "gres/<name>", "gres/<name>:<type>" and
// "license/<name>", where names and types use letters, digits, '_', '-'
// and '.'. Registering a typed GRES also registers its untyped parent
// (gres/gpu:h100 registers gres/gpu), since Slurm accounts both.
func (r *Registry) Register(name string) (ID, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if id, ok := r.index[name]; ok {
		return id, nil
	}
	if err := validName(name); err != nil {
		return 0, err
	}
	if parent, _, typed := SplitGRES(name); typed {
		if _, err := r.Register(parent); err != nil {
			return 0, err
		}
	}
	id := ID(len(r.names))
	r.index[name] = id
	r.names = append(r.names, name)
	return id, nil
}

// Lookup returns the ID of name (case-insensitive) and whether it exists.
func (r *Registry) Lookup(name string) (ID, bool) {
	id, ok := r.index[strings.ToLower(name)]
	return id, ok
}

// MustLookup returns the ID of a name known to be registered. It panics on
// a name that is not, so use it only for names the caller registered itself.
func (r *Registry) MustLookup(name string) ID {
	id, ok := r.Lookup(name)
	if !ok {
		panic(fmt.Sprintf("gres: TRES %q not registered", name))
	}
	return id
}

// Name returns the canonical name of id, or "" when id is out of range.
func (r *Registry) Name(id ID) string {
	if id < 0 || int(id) >= len(r.names) {
		return ""
	}
	return r.names[id]
}

// Len returns the number of registered TRES; valid IDs are 0..Len()-1.
func (r *Registry) Len() int { return len(r.names) }

// Names returns the registered names in ID order. The slice is a copy.
func (r *Registry) Names() []string { return append([]string(nil), r.names...) }

// Parent returns the ID of the untyped parent of a typed GRES
// (gres/gpu for gres/gpu:h100) and true, or false for any other TRES.
func (r *Registry) Parent(id ID) (ID, bool) {
	parent, _, typed := SplitGRES(r.Name(id))
	if !typed {
		return 0, false
	}
	return r.Lookup(parent)
}

// NewVector returns a zero vector sized for the registry.
func (r *Registry) NewVector() Vector { return make(Vector, len(r.names)) }

// SplitGRES splits a GRES TRES name "gres/gpu:h100" into its untyped name
// "gres/gpu" and its type "h100". typed is false for an untyped GRES or any
// other TRES, in which case untyped is name itself.
func SplitGRES(name string) (untyped, typ string, typed bool) {
	if !strings.HasPrefix(name, "gres/") {
		return name, "", false
	}
	base, t, ok := strings.Cut(name, ":")
	if !ok {
		return name, "", false
	}
	return base, t, true
}

func validName(name string) error {
	switch name {
	case "cpu", "mem", "energy", "node", "billing":
		return nil
	}
	kind, rest, ok := strings.Cut(name, "/")
	if !ok {
		return fmt.Errorf("%w: %q: want cpu, mem, energy, node, billing, gres/<name>[:<type>] or license/<name>", ErrUnknownTRES, name)
	}
	switch kind {
	case "gres":
		base, typ, typed := strings.Cut(rest, ":")
		if !validIdent(base) {
			return fmt.Errorf("%w: %q: bad GRES name %q", ErrInvalidTRES, name, base)
		}
		if typed && !validIdent(typ) {
			return fmt.Errorf("%w: %q: bad GRES type %q", ErrInvalidTRES, name, typ)
		}
	case "license":
		if !validIdent(rest) {
			return fmt.Errorf("%w: %q: bad license name %q", ErrInvalidTRES, name, rest)
		}
	default:
		return fmt.Errorf("%w: %q: unknown TRES kind %q", ErrUnknownTRES, name, kind)
	}
	return nil
}

func validIdent(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// Vector is a dense vector of TRES counts indexed by ID. A vector shorter
// than its registry is zero in the missing positions, so vectors made before
// a registry grew stay valid. All counts are in [0, MaxCount] for vectors
// built by this package's parsers and checked arithmetic.
//
// Vectors are plain slices: methods that return a Vector allocate a new one
// unless documented as in-place.
type Vector []int64

// At returns the count of id, or 0 when id is past the end of v.
func (v Vector) At(id ID) int64 {
	if int(id) < len(v) && id >= 0 {
		return v[id]
	}
	return 0
}

// Set returns v with the count of id set to n, growing v when needed.
// It fails when n is negative or above MaxCount.
func (v Vector) Set(id ID, n int64) (Vector, error) {
	if n < 0 || n > MaxCount {
		return v, fmt.Errorf("%w: %d for TRES %d", ErrOverflow, n, id)
	}
	if id < 0 {
		return v, fmt.Errorf("%w: negative TRES id %d", ErrInvalidTRES, id)
	}
	if int(id) >= len(v) {
		nv := make(Vector, int(id)+1)
		copy(nv, v)
		v = nv
	}
	v[id] = n
	return v, nil
}

// Clone returns a copy of v.
func (v Vector) Clone() Vector { return append(Vector(nil), v...) }

// IsZero reports whether every count in v is zero.
func (v Vector) IsZero() bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// Equal reports whether v and w hold the same counts (trailing zeros ignored).
func (v Vector) Equal(w Vector) bool {
	n := max(len(v), len(w))
	for i := range n {
		if v.At(ID(i)) != w.At(ID(i)) {
			return false
		}
	}
	return true
}

// Add returns v+w. It fails with ErrOverflow when a sum exceeds MaxCount.
func (v Vector) Add(w Vector) (Vector, error) {
	out := make(Vector, max(len(v), len(w)))
	copy(out, v)
	if err := out.AddInPlace(w); err != nil {
		return nil, err
	}
	return out, nil
}

// AddInPlace sets v to v+w. w must not be longer than v. On error v is
// unchanged.
func (v Vector) AddInPlace(w Vector) error {
	if len(w) > len(v) {
		for i := len(v); i < len(w); i++ {
			if w[i] != 0 {
				return fmt.Errorf("%w: vector of length %d added into length %d", ErrInvalidTRES, len(w), len(v))
			}
		}
		w = w[:len(v)]
	}
	for i, x := range w {
		if s := v[i] + x; s > MaxCount || s < 0 {
			return fmt.Errorf("%w: TRES %d: %d + %d", ErrOverflow, i, v[i], x)
		}
	}
	for i, x := range w {
		v[i] += x
	}
	return nil
}

// Sub returns v-w. It fails with ErrOverflow when any count would go below
// zero.
func (v Vector) Sub(w Vector) (Vector, error) {
	out := make(Vector, max(len(v), len(w)))
	copy(out, v)
	if err := out.SubInPlace(w); err != nil {
		return nil, err
	}
	return out, nil
}

// SubInPlace sets v to v-w. On error (a count would go negative, or w has
// non-zero counts past the end of v) v is unchanged.
func (v Vector) SubInPlace(w Vector) error {
	for i, x := range w {
		if x == 0 {
			continue
		}
		if i >= len(v) || v[i] < x {
			return fmt.Errorf("%w: TRES %d: %d - %d is negative", ErrOverflow, i, v.At(ID(i)), x)
		}
		if d := v[i] - x; d < 0 || d > MaxCount {
			return fmt.Errorf("%w: TRES %d: %d - %d is out of range", ErrOverflow, i, v[i], x)
		}
	}
	// Every count of w past the end of v is zero (checked above).
	for i, x := range w[:min(len(w), len(v))] {
		v[i] -= x
	}
	return nil
}

// Fits reports whether v fits within capacity: every count of v is at most
// the matching count of capacity. It does not allocate.
func (v Vector) Fits(capacity Vector) bool {
	for i, x := range v {
		if x > 0 && (i >= len(capacity) || x > capacity[i]) {
			return false
		}
	}
	return true
}

// Scale returns v with every count multiplied by k (k ≥ 0). It fails with
// ErrOverflow when a product exceeds MaxCount.
func (v Vector) Scale(k int64) (Vector, error) {
	if k < 0 {
		return nil, fmt.Errorf("%w: negative scale %d", ErrOverflow, k)
	}
	out := make(Vector, len(v))
	for i, x := range v {
		if x != 0 && k > MaxCount/x {
			return nil, fmt.Errorf("%w: TRES %d: %d × %d", ErrOverflow, i, x, k)
		}
		out[i] = x * k
	}
	return out, nil
}

// Min returns the element-wise minimum of v and w.
func (v Vector) Min(w Vector) Vector {
	out := make(Vector, max(len(v), len(w)))
	for i := range out {
		out[i] = min(v.At(ID(i)), w.At(ID(i)))
	}
	return out
}

// Weighted returns Σ v[i]·w[i] as a float64, for billing and priority
// weights. Missing weights count as zero.
func (v Vector) Weighted(w []float64) float64 {
	var s float64
	for i, x := range v {
		if i < len(w) && x != 0 {
			s += float64(x) * w[i]
		}
	}
	if math.IsNaN(s) {
		return 0
	}
	return s
}
