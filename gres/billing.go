package gres

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// BillingMode selects how billing weights combine, Slurm's PriorityFlags
// MAX_TRES and MAX_TRES_GRES. The zero value is Slurm's default, the sum.
type BillingMode uint8

const (
	// BillingSum charges Σ count·weight over every weighted TRES.
	BillingSum BillingMode = iota
	// BillingMaxTRES (PriorityFlags=MAX_TRES) charges the largest weighted
	// node-level TRES (cpu, mem, node and every gres/…) plus the sum of the
	// weighted global TRES (licenses, energy, anything else).
	BillingMaxTRES
	// BillingMaxTRESGRES (PriorityFlags=MAX_TRES_GRES) charges the sum of the
	// weighted gres/… plus the largest of the weighted cpu, mem and node,
	// plus the sum of the weighted global TRES.
	BillingMaxTRESGRES
)

// String returns "sum", "MAX_TRES" or "MAX_TRES_GRES".
func (m BillingMode) String() string {
	switch m {
	case BillingSum:
		return "sum"
	case BillingMaxTRES:
		return "MAX_TRES"
	case BillingMaxTRESGRES:
		return "MAX_TRES_GRES"
	}
	return "BillingMode(" + strconv.Itoa(int(m)) + ")"
}

// ParseBillingMode parses "", "sum" (BillingSum), "MAX_TRES" and
// "MAX_TRES_GRES", case-insensitively.
func ParseBillingMode(s string) (BillingMode, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "", "SUM":
		return BillingSum, nil
	case "MAX_TRES":
		return BillingMaxTRES, nil
	case "MAX_TRES_GRES":
		return BillingMaxTRESGRES, nil
	}
	return 0, fmt.Errorf("%w: billing mode %q: want sum, MAX_TRES or MAX_TRES_GRES", ErrInvalidTRES, s)
}

// tresClass groups TRES for the MAX_TRES modes.
type tresClass uint8

const (
	classNode   tresClass = iota // cpu, mem, node
	classGRES                    // gres/…
	classGlobal                  // licenses, energy, anything else
)

func classOf(name string) tresClass {
	switch {
	case name == "cpu" || name == "mem" || name == "node":
		return classNode
	case strings.HasPrefix(name, "gres/"):
		return classGRES
	}
	return classGlobal
}

type billingWeight struct {
	id    ID
	name  string
	w     float64 // per base unit (MiB for mem)
	class tresClass
}

// BillingWeights is a parsed TRESBillingWeights value: a weight per TRES.
// The zero value has no weights and bills the allocated CPUs (Slurm's
// default, as if CPU=1). It is immutable once parsed and safe to share.
type BillingWeights struct {
	entries []billingWeight // in ID order
}

// ParseBillingWeights parses a partition's TRESBillingWeights, e.g.
//
//	CPU=1.0,Mem=0.25G,GRES/gpu=2.0,GRES/gpu:h100=4,license/matlab=1
//
// Names are case-insensitive registered TRES (unknown ones fail with
// ErrUnknownTRES; billing itself cannot be weighted). Weights are
// non-negative decimals. A unit suffix sets what one weight unit buys: for
// mem, whose base unit is MiB, Mem=0.25G is 0.25 per GiB, Mem=1K is 1 per
// KiB (1024 per MiB), Mem=2 or Mem=2M is 2 per MiB; for any other TRES,
// K, M, G, T, P mean per 1024, 1024², … units. "" gives the zero value.
//
// Weights on a typed GRES (gres/gpu:h100) apply only to typed requests,
// never to untyped gres/gpu counts, because RequestVector only adds
// untyped requests to gres/gpu.
func (r *Registry) ParseBillingWeights(s string) (BillingWeights, error) {
	toks, err := splitTokens("billing weights", s)
	if err != nil {
		return BillingWeights{}, err
	}
	var b BillingWeights
	fail := func(t token, err error) (BillingWeights, error) {
		return BillingWeights{}, &ParseError{What: "billing weights", Input: s, Token: t.text, Offset: t.off, Err: err}
	}
	for _, t := range toks {
		rawName, rawVal, ok := strings.Cut(t.text, "=")
		if !ok {
			return fail(t, fmt.Errorf("%w: want name=weight", ErrInvalidTRES))
		}
		name := strings.ToLower(strings.TrimSpace(rawName))
		id, known := r.index[name]
		if !known {
			if err := validName(name); err != nil {
				return fail(t, err)
			}
			return fail(t, fmt.Errorf("%w: %q is not registered", ErrUnknownTRES, name))
		}
		if id == Billing {
			return fail(t, fmt.Errorf("%w: billing cannot be weighted", ErrInvalidTRES))
		}
		for _, e := range b.entries {
			if e.id == id {
				return fail(t, fmt.Errorf("%w: %q given twice", ErrInvalidTRES, name))
			}
		}
		w, err := parseWeight(strings.TrimSpace(rawVal), id == Mem)
		if err != nil {
			return fail(t, fmt.Errorf("%s: %w", name, err))
		}
		b.entries = append(b.entries, billingWeight{id: id, name: name, w: w, class: classOf(name)})
	}
	// Keep ID order so String is canonical and evaluation deterministic.
	slices.SortFunc(b.entries, func(x, y billingWeight) int { return cmp.Compare(x.id, y.id) })
	return b, nil
}

// parseWeight parses "0.25G" into a weight per base unit.
func parseWeight(s string, mem bool) (float64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty weight", ErrInvalidTRES)
	}
	num, shift := cutUnit(s)
	digits, dots := 0, 0
	for i := 0; i < len(num); i++ {
		switch c := num[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return 0, fmt.Errorf("%w: weight %q: want a non-negative decimal with an optional K, M, G, T or P suffix", ErrInvalidTRES, s)
		}
	}
	if digits == 0 || dots > 1 {
		return 0, fmt.Errorf("%w: weight %q: want a non-negative decimal with an optional K, M, G, T or P suffix", ErrInvalidTRES, s)
	}
	w, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(w, 0) {
		return 0, fmt.Errorf("%w: weight %q out of range", ErrInvalidTRES, s)
	}
	if mem {
		if shift == 0 {
			shift = 2 // a bare memory weight is per MiB
		}
		return w * math.Pow(1024, float64(2-shift)), nil
	}
	return w / math.Pow(1024, float64(shift)), nil
}

// IsZero reports whether b has no weights (billing = allocated CPUs).
func (b BillingWeights) IsZero() bool { return len(b.entries) == 0 }

// Weight returns the weight of id per base unit (per MiB for mem), 0 when
// unweighted.
func (b BillingWeights) Weight(id ID) float64 {
	for _, e := range b.entries {
		if e.id == id {
			return e.w
		}
	}
	return 0
}

// Billable returns the billable TRES of a job-total allocation v (summed
// over all its nodes, as Slurm does) under mode: Σ weighted counts for
// BillingSum, the MAX_TRES / MAX_TRES_GRES combinations otherwise. The
// billing count in v itself is never weighted. Without weights it returns
// the allocated CPUs. It does not allocate.
func (b BillingWeights) Billable(v Vector, mode BillingMode) float64 {
	if len(b.entries) == 0 {
		return float64(v.At(CPU))
	}
	var sum, maxNode, maxAll, gres, global float64
	for _, e := range b.entries {
		x := float64(v.At(e.id)) * e.w
		sum += x
		switch e.class {
		case classNode:
			maxNode = max(maxNode, x)
			maxAll = max(maxAll, x)
		case classGRES:
			gres += x
			maxAll = max(maxAll, x)
		default:
			global += x
		}
	}
	switch mode {
	case BillingMaxTRES:
		return maxAll + global
	case BillingMaxTRESGRES:
		return gres + maxNode + global
	}
	return sum
}

// Billing returns Billable truncated to an integer, the count Slurm stores
// in the billing TRES, clamped to [0, MaxCount].
func (b BillingWeights) Billing(v Vector, mode BillingMode) int64 {
	x := b.Billable(v, mode)
	switch {
	case math.IsNaN(x) || x <= 0:
		return 0
	case x >= float64(MaxCount):
		return MaxCount
	}
	return int64(x)
}

// String formats the weights as name=weight in ID order, mem per GiB
// ("cpu=1,mem=0.25G,gres/gpu=2"); the zero value formats as "".
func (b BillingWeights) String() string {
	var sb strings.Builder
	for i, e := range b.entries {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(e.name)
		sb.WriteByte('=')
		if e.id == Mem {
			sb.WriteString(strconv.FormatFloat(e.w*1024, 'f', -1, 64))
			sb.WriteByte('G')
		} else {
			sb.WriteString(strconv.FormatFloat(e.w, 'f', -1, 64))
		}
	}
	return sb.String()
}
