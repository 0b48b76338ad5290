package gres

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseTRES parses a Slurm TRES string such as
//
//	cpu=4,mem=16G,node=1,billing=10,gres/gpu=2,gres/gpu:h100=2,license/matlab=1
//
// into a Vector of length r.Len(). The rules:
//
//   - Elements are name=count, separated by commas; blanks around an
//     element are ignored. An empty or all-blank string is the zero vector.
//   - Names are case-insensitive ("CPU", "Mem", "GRES/gpu:H100") and must be
//     registered, else the error wraps ErrUnknownTRES. Naming a TRES twice
//     is an error. Slurm's numeric database form ("1=4,2=16384") is not
//     accepted: its IDs are Slurm's, not this registry's.
//   - mem is in MiB. A bare number is MiB; the suffixes K, M, G, T and P
//     (either case) scale by KiB, MiB, GiB, TiB, PiB. KiB are rounded up to a
//     whole MiB (mem=1K is 1 MiB), as Slurm does for --mem.
//   - Every other count is a non-negative integer with an optional suffix
//     K, M, G, T or P multiplying by 1024, 1024², … (Slurm's rule for GRES
//     counts): gres/mps=1K is 1024.
//   - Counts above MaxCount fail with ErrOverflow; signs, fractions and other
//     suffixes fail with ErrInvalidTRES.
//
// The string is taken literally: gres/gpu:h100=2 alone does not add to
// gres/gpu (Slurm's own TRES strings list both). Use RequestVector to turn a
// GRES request into TRES with the parent counted.
//
// Errors are *ParseError values naming the bad element and its byte offset.
func (r *Registry) ParseTRES(s string) (Vector, error) {
	return r.parseTRES(s, false)
}

// ParseTRESRegister is ParseTRES that first registers every unknown but
// well-formed gres/… and license/… name in s (a typed gres/gpu:h100 also
// registers gres/gpu). Names of other kinds are still ErrUnknownTRES. On
// error nothing is registered.
func (r *Registry) ParseTRESRegister(s string) (Vector, error) {
	return r.parseTRES(s, true)
}

type tresElem struct {
	name string // canonical lower-case name
	id   ID     // -1 while not yet registered
	n    int64
}

func (r *Registry) parseTRES(s string, register bool) (Vector, error) {
	toks, err := splitTokens("TRES", s)
	if err != nil {
		return nil, err
	}
	elems := make([]tresElem, 0, len(toks))
	fail := func(t token, err error) (Vector, error) {
		return nil, &ParseError{What: "TRES", Input: s, Token: t.text, Offset: t.off, Err: err}
	}
	for _, t := range toks {
		rawName, rawVal, ok := strings.Cut(t.text, "=")
		rawName = strings.TrimSpace(rawName)
		rawVal = strings.TrimSpace(rawVal)
		if !ok {
			return fail(t, fmt.Errorf("%w: want name=count", ErrInvalidTRES))
		}
		if rawName == "" {
			return fail(t, fmt.Errorf("%w: empty TRES name", ErrInvalidTRES))
		}
		e := tresElem{name: strings.ToLower(rawName), id: -1}
		if id, ok := r.index[e.name]; ok {
			e.id = id
		} else if err := validName(e.name); err != nil {
			return fail(t, err)
		} else if !register {
			return fail(t, fmt.Errorf("%w: %q is not registered", ErrUnknownTRES, e.name))
		}
		for _, prev := range elems {
			if prev.name == e.name {
				return fail(t, fmt.Errorf("%w: %q given twice", ErrInvalidTRES, e.name))
			}
		}
		if e.name == "mem" {
			e.n, err = parseMemMiB(rawVal)
		} else {
			e.n, err = parseCount(rawVal)
		}
		if err != nil {
			return fail(t, fmt.Errorf("%s: %w", e.name, err))
		}
		elems = append(elems, e)
	}
	for i := range elems {
		if elems[i].id < 0 {
			id, err := r.Register(elems[i].name)
			if err != nil { // validated above; kept as a guard
				return nil, err
			}
			elems[i].id = id
		}
	}
	v := r.NewVector()
	for _, e := range elems {
		v[e.id] = e.n
	}
	return v, nil
}

// FormatTRES writes v in canonical form: elements in ID order (cpu, mem,
// energy, node, billing, then registration order), zero counts omitted, mem
// with the largest unit that divides it exactly (16G, 1536M), other counts
// as plain integers. The zero vector formats as "". For vectors the parsers
// produced, r.ParseTRES(r.FormatTRES(v)) equals v and FormatTRES of a parsed
// string is canonical. A non-zero count at an ID past the registry's end (a
// vector from another registry) is written as "tres#<id>=<count>", which no
// parser accepts.
func (r *Registry) FormatTRES(v Vector) string {
	b := make([]byte, 0, 96)
	for i, n := range v {
		if n == 0 {
			continue
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		if i < len(r.names) {
			b = append(b, r.names[i]...)
		} else {
			b = append(b, "tres#"...)
			b = strconv.AppendInt(b, int64(i), 10)
		}
		b = append(b, '=')
		if ID(i) == Mem {
			b = appendMem(b, n)
		} else {
			b = strconv.AppendInt(b, n, 10)
		}
	}
	return string(b)
}
