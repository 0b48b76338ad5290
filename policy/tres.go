package policy

import (
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gres"
)

// TRESLimits is a sparse set of per-TRES limits, as Slurm's GrpTRES,
// MaxTRESPerJob … hold them: only the listed TRES are limited, and a listed
// 0 allows none (GrpTRES=gres/gpu=0 forbids GPUs). The zero value limits
// nothing. A TRESLimits is immutable once built; copies share storage
// safely.
//
// Typed GRES limits are separate entries: a limit on gres/gpu:h100 applies
// to the gres/gpu:h100 count of a request only, so a job asking for untyped
// gres/gpu is not held by it (Slurm's rule), while gres/gpu limits apply to
// typed and untyped requests alike (a typed request also counts its parent;
// see gres.Registry.RequestVector).
//
// A TRESLimits has a text form (MarshalText, hence JSON) with TRES names,
// "gres/gpu=16,cpu=256". Decoding it needs no registry: UnmarshalText
// gives an unbound value, which holds the names and counts but limits
// nothing until it is bound to a registry (Bind; New binds every limit of
// its Config). Limits built against a registry (ParseTRESLimits,
// NewTRESLimits) carry their names; those built from IDs (TRESLimitsOf,
// With) write an unnamed TRES as gres.TRESName does ("tres7"), which Bind
// reads back as that ID.
type TRESLimits struct {
	ids  []gres.ID // ascending
	vals []int64
	// names[i] is the registry name of ids[i] ("" when not known); nil
	// when no name is known.
	names []string
	// unbound holds the decoded name=count elements of a value that
	// UnmarshalText made and Bind has not bound; ids is then nil.
	unbound []namedLimit
}

// ParseTRESLimits parses a Slurm limit string such as
// "cpu=256,mem=1T,gres/gpu=16,gres/gpu:h100=8" against reg. Counts follow
// gres.Registry.ParseTRES (mem in MiB with K/M/G/T/P suffixes, other counts
// with binary suffixes). A count of -1, "UNLIMITED" or "INFINITE" leaves that
// TRES unlimited, as sacctmgr's "cpu=-1" does. Every TRES must be registered
// in reg; naming one twice is an error. Errors wrap ErrSyntax, and
// gres.ErrUnknownTRES for an unregistered name.
func ParseTRESLimits(reg *gres.Registry, s string) (TRESLimits, error) {
	var l TRESLimits
	if strings.TrimSpace(s) == "" {
		return l, nil
	}
	seen := make(map[gres.ID]bool)
	for tok := range strings.SplitSeq(s, ",") {
		tok = strings.TrimSpace(tok)
		name, val, ok := strings.Cut(tok, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || name == "" || val == "" {
			return TRESLimits{}, fmt.Errorf("%w: TRES limits %q: element %q: want name=count", ErrSyntax, s, tok)
		}
		id, v, limited, err := limitElem(reg, name, val, false)
		if err != nil {
			return TRESLimits{}, fmt.Errorf("%w: TRES limits %q: %w", ErrSyntax, s, err)
		}
		if seen[id] {
			return TRESLimits{}, fmt.Errorf("%w: TRES limits %q: %q given twice", ErrSyntax, s, name)
		}
		seen[id] = true
		if limited {
			l = l.with(id, v, reg.Name(id))
		}
	}
	return l, nil
}

// NewTRESLimits builds limits from a name → count map (the form the
// accounting ledger stores; accounting.TRES converts directly). Names are
// looked up in reg; a negative count means unlimited (Slurm's -1). Counts
// above gres.MaxCount and unknown names are errors naming them.
func NewTRESLimits(reg *gres.Registry, m map[string]int64) (TRESLimits, error) {
	var l TRESLimits
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names) // deterministic error choice
	seen := make(map[gres.ID]string, len(m))
	for _, n := range names {
		v := m[n]
		id, ok := reg.Lookup(strings.ToLower(strings.TrimSpace(n)))
		if !ok {
			return TRESLimits{}, fmt.Errorf("%w: TRES limit %q: %w", ErrInvalidConfig, n, gres.ErrUnknownTRES)
		}
		if prev, dup := seen[id]; dup {
			return TRESLimits{}, fmt.Errorf("%w: TRES limit %q: same TRES as %q", ErrInvalidConfig, n, prev)
		}
		seen[id] = n
		if v < 0 {
			continue
		}
		if v > gres.MaxCount {
			return TRESLimits{}, fmt.Errorf("%w: TRES limit %s=%d: %w", ErrInvalidConfig, n, v, gres.ErrOverflow)
		}
		l = l.with(id, v, reg.Name(id))
	}
	return l, nil
}

// TRESLimitsOf builds limits from an ID → count map, for programmatic
// construction when the IDs are at hand. Negative counts mean unlimited;
// counts above gres.MaxCount and negative IDs are errors.
func TRESLimitsOf(m map[gres.ID]int64) (TRESLimits, error) {
	var l TRESLimits
	ids := make([]gres.ID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		v := m[id]
		if id < 0 {
			return TRESLimits{}, fmt.Errorf("%w: TRES limit on negative TRES id %d", ErrInvalidConfig, id)
		}
		if v < 0 {
			continue
		}
		if v > gres.MaxCount {
			return TRESLimits{}, fmt.Errorf("%w: TRES limit on TRES %d = %d: %w", ErrInvalidConfig, id, v, gres.ErrOverflow)
		}
		l = l.with(id, v, "")
	}
	return l, nil
}

// with returns a copy of l with id (named name, "" when not known)
// limited to v. l must be bound.
func (l TRESLimits) with(id gres.ID, v int64, name string) TRESLimits {
	i, found := slices.BinarySearch(l.ids, id)
	ids := slices.Clone(l.ids)
	vals := slices.Clone(l.vals)
	names := slices.Clone(l.names)
	if names == nil && name != "" {
		names = make([]string, len(ids))
	}
	if found {
		vals[i] = v
		if names != nil && name != "" {
			names[i] = name
		}
	} else {
		ids = slices.Insert(ids, i, id)
		vals = slices.Insert(vals, i, v)
		if names != nil {
			names = slices.Insert(names, i, name)
		}
	}
	return TRESLimits{ids: ids, vals: vals, names: names}
}

// With returns a copy of l with TRES id limited to n; a negative n removes
// the limit. The name of a newly limited TRES is not known (see
// TRESLimits). On an unbound l (see Bind) it returns l unchanged.
func (l TRESLimits) With(id gres.ID, n int64) TRESLimits {
	if l.unbound != nil {
		return l
	}
	if n < 0 {
		i, found := slices.BinarySearch(l.ids, id)
		if !found {
			return l
		}
		out := TRESLimits{ids: slices.Delete(slices.Clone(l.ids), i, i+1), vals: slices.Delete(slices.Clone(l.vals), i, i+1)}
		if l.names != nil {
			out.names = slices.Delete(slices.Clone(l.names), i, i+1)
		}
		return out
	}
	return l.with(id, min(n, gres.MaxCount), "")
}

// Get returns the limit on id and whether there is one.
func (l TRESLimits) Get(id gres.ID) (int64, bool) {
	i, found := slices.BinarySearch(l.ids, id)
	if !found {
		return 0, false
	}
	return l.vals[i], true
}

// Len returns the number of limited TRES (of an unbound value: the number
// of its elements).
func (l TRESLimits) Len() int { return len(l.ids) + len(l.unbound) }

// IsZero reports whether nothing is limited (an unbound value with
// elements is not zero, though it limits nothing until bound).
func (l TRESLimits) IsZero() bool { return len(l.ids) == 0 && len(l.unbound) == 0 }

// All iterates over the limited TRES in ID order.
func (l TRESLimits) All() iter.Seq2[gres.ID, int64] {
	return func(yield func(gres.ID, int64) bool) {
		for i, id := range l.ids {
			if !yield(id, l.vals[i]) {
				return
			}
		}
	}
}

// Format writes l in Slurm's form ("cpu=16,gres/gpu=4"), in ID order, with
// plain numbers (mem in MiB). Unlimited TRES are omitted; a limit of 0 is
// written. The zero value formats as "".
func (l TRESLimits) Format(reg *gres.Registry) string {
	var b strings.Builder
	for i, id := range l.ids {
		if i > 0 {
			b.WriteByte(',')
		}
		name := reg.Name(id)
		if name == "" {
			name = "tres#" + strconv.Itoa(int(id))
		}
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(l.vals[i], 10))
	}
	return b.String()
}

// maxID returns the largest limited TRES id, or -1.
func (l TRESLimits) maxID() gres.ID {
	if len(l.ids) == 0 {
		return -1
	}
	return l.ids[len(l.ids)-1]
}
