package gres

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Request is one GRES request element, as in --gres=gpu:h100:2: Name is
// the GRES name ("gpu", "shard", "mps"), Type its optional type ("h100",
// "a100_3g.20gb"; "" means any type), Count how many. Whether the count is
// per node, per task or per job is up to the caller (the option it came
// from).
type Request struct {
	Name  string
	Type  string
	Count int64
}

// String formats r canonically as name[:type]:count, e.g. "gpu:h100:2".
func (q Request) String() string {
	return string(q.appendTo(nil))
}

func (q Request) appendTo(b []byte) []byte {
	b = append(b, q.Name...)
	if q.Type != "" {
		b = append(b, ':')
		b = append(b, q.Type...)
	}
	b = append(b, ':')
	return strconv.AppendInt(b, q.Count, 10)
}

// TRESName returns the TRES name the request is accounted under:
// "gres/gpu:h100" for a typed request, "gres/gpu" for an untyped one.
func (q Request) TRESName() string {
	if q.Type == "" {
		return "gres/" + q.Name
	}
	return "gres/" + q.Name + ":" + q.Type
}

// Validate checks that q is a well-formed request: Name and Type by
// ValidateName, Count in [0, MaxCount]. Every request entering Sluice (the
// parsers here, the scheduler's JobSpec) is checked by it.
func (q Request) Validate() error {
	if err := ValidateName(q.Name, q.Type); err != nil {
		return err
	}
	if q.Count < 0 || q.Count > MaxCount {
		return fmt.Errorf("%w: GRES %s: count %d out of range [0, %d]", ErrOverflow, q.Name, q.Count, MaxCount)
	}
	return nil
}

// ValidateName is the one rule for GRES names and types, applied to
// requests (Request.Validate, so ParseGRES and RequestVector) and to the devices a
// node offers (Inventory.Validate) alike. A name is a letter followed by
// up to 63 letters, digits, '_', '-' or '.'. A type ("" means untyped) is
// 1–64 of the same characters and must not read as a count (all digits
// with an optional K/M/G/T/P suffix, such as "2" or "4k"): Slurm's
// --gres=name[[:type]:count] tells a type from a count by exactly that, so
// a count-like type could never be requested by name and "gpu:2:3" is
// malformed rather than two of type "2". Neither may contain ':', ',',
// '=' or '/', the separators of the GRES and TRES syntaxes: a Name
// "gpu:a100" is rejected, not read as gpu of type a100. Errors wrap
// ErrInvalidGRES.
func ValidateName(name, typ string) error {
	if !validIdent(name) || !isLetter(name[0]) {
		return fmt.Errorf("%w: GRES name %q: want a letter then up to 63 letters, digits, '_', '-' or '.'", ErrInvalidGRES, name)
	}
	if typ == "" {
		return nil
	}
	if !validIdent(typ) {
		return fmt.Errorf("%w: GRES %q: type %q: want 1-64 letters, digits, '_', '-' or '.'", ErrInvalidGRES, name, typ)
	}
	if isCount(typ) {
		return fmt.Errorf("%w: GRES %q: type %q reads as a count (name[:type][:count])", ErrInvalidGRES, name, typ)
	}
	return nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// ParseGRES parses a Slurm GRES request list such as "gpu:h100:2,shard:4".
// Each comma-separated element is one of
//
//	gpu            one gpu of any type
//	gpu:2          two gpus of any type
//	gpu:h100       one h100 gpu
//	gpu:h100:2     two h100 gpus
//	gres/gpu:h100=2, gres/gpu=2, gres/gpu:h100:2   the TRES spellings
//
// In a two-part element the second part is a count when it is all digits
// with an optional K/M/G/T/P suffix (×1024ⁿ, as Slurm allows), else a
// type: "gpu:2" is a count, "gpu:a100" a type (and "gpu:1g" the count
// 1024³ — write MIG types in full, "gpu:1g.10gb:1"); by the same rule a
// type that reads as a count is malformed ("gpu:2:3"; see ValidateName).
// Names and types are
// case-insensitive and returned in lower case. A count of 0 is accepted
// (Slurm's gpu:0 asks for none) and adds nothing to the TRES. "" and "none"
// mean no GRES (nil). Naming the same name:type twice is an error.
//
// The result is sorted by name, then type (untyped first), so
// FormatGRES(ParseGRES(s)) is canonical. Errors are *ParseError values
// naming the bad element and its byte offset and wrapping ErrInvalidGRES
// (or ErrOverflow for a count above MaxCount).
func ParseGRES(s string) ([]Request, error) {
	if strings.EqualFold(strings.TrimSpace(s), "none") {
		return nil, nil
	}
	toks, err := splitTokens("GRES", s)
	if err != nil {
		return nil, err
	}
	var out []Request
	for _, t := range toks {
		q, err := parseGRESElem(t.text)
		if err != nil {
			return nil, &ParseError{What: "GRES", Input: s, Token: t.text, Offset: t.off, Err: err}
		}
		for _, p := range out {
			if p.Name == q.Name && p.Type == q.Type {
				return nil, &ParseError{What: "GRES", Input: s, Token: t.text, Offset: t.off,
					Err: fmt.Errorf("%w: %q requested twice", ErrInvalidGRES, q.TRESName()[len("gres/"):])}
			}
		}
		out = append(out, q)
	}
	slices.SortStableFunc(out, func(a, b Request) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Type, b.Type))
	})
	return out, nil
}

func parseGRESElem(e string) (Request, error) {
	var q Request
	if len(e) >= 5 && strings.EqualFold(e[:5], "gres/") {
		e = e[5:]
		if spec, cnt, ok := strings.Cut(e, "="); ok {
			name, typ, typed := strings.Cut(spec, ":")
			if typed && typ == "" {
				return q, fmt.Errorf("%w: empty type", ErrInvalidGRES)
			}
			n, err := gresCount(cnt)
			if err != nil {
				return q, err
			}
			q = Request{Name: strings.ToLower(name), Type: strings.ToLower(typ), Count: n}
			return q, q.Validate()
		}
	}
	parts := strings.Split(e, ":")
	for i, p := range parts {
		if p == "" {
			what := "type"
			if i == 0 {
				what = "name"
			} else if i == len(parts)-1 && i > 1 {
				what = "count"
			}
			return q, fmt.Errorf("%w: empty %s", ErrInvalidGRES, what)
		}
	}
	q.Name = strings.ToLower(parts[0])
	q.Count = 1
	switch len(parts) {
	case 1:
	case 2:
		if isCount(parts[1]) {
			n, err := gresCount(parts[1])
			if err != nil {
				return q, err
			}
			q.Count = n
		} else {
			q.Type = strings.ToLower(parts[1])
		}
	case 3:
		q.Type = strings.ToLower(parts[1])
		n, err := gresCount(parts[2])
		if err != nil {
			return q, err
		}
		q.Count = n
	default:
		return q, fmt.Errorf("%w: want name[:type][:count]", ErrInvalidGRES)
	}
	return q, q.Validate()
}

// isCount reports whether s looks like a count: digits and an optional
// K/M/G/T/P suffix.
func isCount(s string) bool {
	d, _ := cutUnit(s)
	return d != "" && allDigits(d)
}

func gresCount(s string) (int64, error) {
	n, err := parseCount(s)
	if err != nil {
		if errors.Is(err, ErrOverflow) {
			return 0, err
		}
		return 0, fmt.Errorf("%w: count %q: want a non-negative integer with an optional K, M, G, T or P suffix", ErrInvalidGRES, s)
	}
	return n, nil
}

// FormatGRES writes reqs in the given order as a comma list of
// name[:type]:count elements ("gpu:h100:2,shard:4"); nil formats as "".
// ParseGRES(FormatGRES(reqs)) returns the same requests, sorted.
func FormatGRES(reqs []Request) string {
	var b []byte
	for i, q := range reqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = q.appendTo(b)
	}
	return string(b)
}

// RequestVector converts GRES requests into a TRES vector of length
// r.Len(), the way Slurm accounts them: a typed request gpu:h100:2 adds 2 to
// both gres/gpu:h100 and gres/gpu; an untyped gpu:2 adds 2 to gres/gpu only.
// Every TRES a request needs must already be registered (the cluster's
// configuration registers what it offers): an unregistered name or type is
// an error wrapping ErrUnknownTRES, so a request the cluster could never
// satisfy fails at submit instead of pending forever, and user input
// cannot grow the registry. Sums above MaxCount fail with ErrOverflow.
func (r *Registry) RequestVector(reqs []Request) (Vector, error) {
	v := r.NewVector()
	for _, q := range reqs {
		if err := q.Validate(); err != nil {
			return nil, err
		}
		// The untyped TRES, then the typed one (q.TRESName()) if any.
		if err := r.addRequest(v, "gres/"+q.Name, q); err != nil {
			return nil, err
		}
		if q.Type == "" {
			continue
		}
		if err := r.addRequest(v, q.TRESName(), q); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// addRequest adds q.Count to v's entry for TRES name (matched case-
// insensitively), which must be registered.
func (r *Registry) addRequest(v Vector, name string, q Request) error {
	id, ok := r.index[strings.ToLower(name)]
	if !ok {
		return fmt.Errorf("%w: GRES %q (request %s) is not configured", ErrUnknownTRES, name, q)
	}
	if err := addCount(v, id, q.Count); err != nil {
		return fmt.Errorf("request %s: %w", q, err)
	}
	return nil
}

func addCount(v Vector, id ID, n int64) error {
	if s := v[id] + n; s > MaxCount {
		return fmt.Errorf("%w: %d + %d exceeds %d", ErrOverflow, v[id], n, MaxCount)
	}
	v[id] += n
	return nil
}
