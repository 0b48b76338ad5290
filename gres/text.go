package gres

import (
	"fmt"
	"strconv"
	"strings"
)

// This file gives the package's plain-data types their text forms
// (encoding.TextMarshaler and TextUnmarshaler), which encoding/json and
// every other text encoding use: the Slurm or nvidia-smi spelling of each
// enum, the Linux CPU list of a CoreSet, name[:type]:count for a Request,
// and a registry-free TRES string for a Vector. Decoding a form produced
// by encoding gives back the same value.

// MarshalText writes "sum", "MAX_TRES" or "MAX_TRES_GRES"; an unknown mode
// is an error.
func (m BillingMode) MarshalText() ([]byte, error) {
	if m > BillingMaxTRESGRES {
		return nil, fmt.Errorf("%w: BillingMode(%d) has no name", ErrInvalidTRES, uint8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText reads what ParseBillingMode accepts.
func (m *BillingMode) UnmarshalText(b []byte) error {
	v, err := ParseBillingMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// ParseDeviceOrder parses "nvlink-first" or "affinity-first"
// (case-insensitive); "" is NVLinkFirst, the default. Errors wrap
// ErrInvalidRequest and name the value.
func ParseDeviceOrder(s string) (DeviceOrder, error) {
	switch t := strings.TrimSpace(s); {
	case t == "", strings.EqualFold(t, "nvlink-first"):
		return NVLinkFirst, nil
	case strings.EqualFold(t, "affinity-first"):
		return AffinityFirst, nil
	}
	return 0, fmt.Errorf("%w: DeviceOrder %q: want nvlink-first or affinity-first", ErrInvalidRequest, s)
}

// MarshalText writes "nvlink-first" or "affinity-first"; an unknown order
// is an error.
func (o DeviceOrder) MarshalText() ([]byte, error) {
	if o > AffinityFirst {
		return nil, fmt.Errorf("%w: DeviceOrder(%d) has no name", ErrInvalidRequest, uint8(o))
	}
	return []byte(o.String()), nil
}

// UnmarshalText reads what ParseDeviceOrder accepts.
func (o *DeviceOrder) UnmarshalText(b []byte) error {
	v, err := ParseDeviceOrder(string(b))
	if err != nil {
		return err
	}
	*o = v
	return nil
}

// ParsePCIeLevel parses nvidia-smi's SYS, NODE, PHB, PXB, PIX, or "board"
// and "unknown" (case-insensitive; "" is PCIeUnknown). Errors wrap
// ErrInvalidInventory and name the value.
func ParsePCIeLevel(s string) (PCIeLevel, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return PCIeUnknown, nil
	}
	for i, n := range pcieNames {
		if strings.EqualFold(t, n) {
			return PCIeLevel(i), nil
		}
	}
	return 0, fmt.Errorf("%w: PCIeLevel %q: want SYS, NODE, PHB, PXB, PIX, board or unknown", ErrInvalidInventory, s)
}

// MarshalText writes the level's String; an unknown level is an error.
func (l PCIeLevel) MarshalText() ([]byte, error) {
	if int(l) >= len(pcieNames) {
		return nil, fmt.Errorf("%w: PCIeLevel(%d) has no name", ErrInvalidInventory, uint8(l))
	}
	return []byte(pcieNames[l]), nil
}

// UnmarshalText reads what ParsePCIeLevel accepts.
func (l *PCIeLevel) UnmarshalText(b []byte) error {
	v, err := ParsePCIeLevel(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// MarshalText writes the set as a Linux CPU list ("0-3,8"; "" when empty).
func (c CoreSet) MarshalText() ([]byte, error) { return appendIDList(nil, c.AppendTo(nil)), nil }

// UnmarshalText reads a Linux CPU list, as ParseCoreSet does.
func (c *CoreSet) UnmarshalText(b []byte) error {
	v, err := ParseCoreSet(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// MarshalText writes the request as name[:type]:count ("gpu:h100:2",
// "shard:4"), the count always present, so the form reads back exactly
// (letter case included). A name or type that holds ':', ',', '=' or a
// blank, or an empty name, has no such form and is an error.
func (q Request) MarshalText() ([]byte, error) {
	for _, f := range []struct{ what, s string }{{"name", q.Name}, {"type", q.Type}} {
		if strings.ContainsAny(f.s, ":,= \t\n") || (f.what == "name" && f.s == "") {
			return nil, fmt.Errorf("%w: GRES %s %q cannot be written as name[:type]:count", ErrInvalidGRES, f.what, f.s)
		}
	}
	return q.appendTo(nil), nil
}

// UnmarshalText reads name[:type]:count as MarshalText writes it, keeping
// the letter case and the count as given (no K/M suffixes, no
// validation: Submit validates requests). Use ParseGRES for Slurm's
// --gres syntax with its defaults and suffixes.
func (q *Request) UnmarshalText(b []byte) error {
	s := string(b)
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || (len(parts) == 3 && parts[1] == "") {
		return fmt.Errorf("%w: GRES request %q: want name[:type]:count", ErrInvalidGRES, s)
	}
	for _, p := range parts[:len(parts)-1] {
		if strings.ContainsAny(p, ",= \t\n") {
			return fmt.Errorf("%w: GRES request %q: bad name or type %q", ErrInvalidGRES, s, p)
		}
	}
	n, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
	if err != nil {
		return fmt.Errorf("%w: GRES request %q: count: %w", ErrInvalidGRES, s, err)
	}
	r := Request{Name: parts[0], Count: n}
	if len(parts) == 3 {
		r.Type = parts[1]
	}
	*q = r
	return nil
}

// builtinNames are the names of the built-in TRES, by ID.
var builtinNames = [numBuiltin]string{"cpu", "mem", "energy", "node", "billing"}

// TRESName returns the name of a TRES id without a registry: the built-in
// names for the built-in IDs and "tres<id>" for any other (the spelling
// Vector's text form and policy's unbound limits use for an ID whose name
// is not at hand).
func TRESName(id ID) string {
	if id >= 0 && id < numBuiltin {
		return builtinNames[id]
	}
	return "tres" + strconv.Itoa(int(id))
}

// ParseTRESName is TRESName's inverse: the built-in names
// (case-insensitive) and "tres<id>". ok is false for any other name.
func ParseTRESName(name string) (ID, bool) {
	for i, n := range builtinNames {
		if strings.EqualFold(name, n) {
			return ID(i), true
		}
	}
	digits, ok := strings.CutPrefix(strings.ToLower(name), "tres")
	if !ok || digits == "" || len(digits) > 7 || !allDigits(digits) || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	n, _ := strconv.Atoi(digits)
	return ID(n), true
}

// maxTextID bounds the IDs Vector's text form accepts, so that a short
// string cannot allocate a huge vector.
const maxTextID = 1 << 16

// MarshalText writes v as a TRES string without a registry: the built-in
// TRES by name (mem with the largest exact unit, "16G") and every other by
// TRESName ("tres5=2"), in ID order, zero counts omitted. Use
// Registry.FormatTRES (or FormatNamed) for names such as gres/gpu; this
// form is what a Vector held outside a scheduler (a reservation's TRES in
// an event) encodes to, and it decodes to the same counts. A count
// outside [0, MaxCount] is an error.
func (v Vector) MarshalText() ([]byte, error) { return v.appendNamed(nil, nil) }

// FormatNamed writes v as Registry.FormatTRES does, taking the name of ID
// i from names[i] (Registry.Names) and, for an ID past names (or named
// ""), TRESName's. A count outside [0, MaxCount] is an error.
func (v Vector) FormatNamed(names []string) (string, error) {
	b, err := v.appendNamed(make([]byte, 0, 64), names)
	return string(b), err
}

func (v Vector) appendNamed(b []byte, names []string) ([]byte, error) {
	for i, n := range v {
		if n == 0 {
			continue
		}
		name := ""
		if i < len(names) {
			name = names[i]
		}
		if name == "" {
			name = TRESName(ID(i))
		}
		if n < 0 || n > MaxCount || (i > maxTextID && names == nil) {
			return nil, fmt.Errorf("%w: TRES %s=%d cannot be written", ErrOverflow, name, n)
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = append(append(b, name...), '=')
		if ID(i) == Mem {
			b = appendMem(b, n)
		} else {
			b = strconv.AppendInt(b, n, 10)
		}
	}
	return b, nil
}

// UnmarshalText reads the form MarshalText writes: name=count elements
// named as ParseTRESName reads them, counts as Registry.ParseTRES reads
// them (mem in MiB with K/M/G/T/P suffixes). Names such as gres/gpu need
// a registry: use Registry.ParseTRES for them. The vector holds at least
// the built-in TRES (so indexing them is safe) and is as long as its
// largest ID needs; "" is the nil vector.
func (v *Vector) UnmarshalText(b []byte) error {
	s := string(b)
	toks, err := splitTokens("TRES", s)
	if err != nil {
		return err
	}
	var out Vector
	if len(toks) > 0 {
		out = make(Vector, numBuiltin)
	}
	seen := make(map[ID]bool, len(toks))
	for _, t := range toks {
		fail := func(err error) error {
			return &ParseError{What: "TRES", Input: s, Token: t.text, Offset: t.off, Err: err}
		}
		name, val, ok := strings.Cut(t.text, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok {
			return fail(fmt.Errorf("%w: want name=count", ErrInvalidTRES))
		}
		id, known := ParseTRESName(name)
		if !known || id > maxTextID {
			return fail(fmt.Errorf("%w: %q: want cpu, mem, energy, node, billing or tres<id> without a registry", ErrUnknownTRES, name))
		}
		if seen[id] {
			return fail(fmt.Errorf("%w: %q given twice", ErrInvalidTRES, name))
		}
		seen[id] = true
		var n int64
		if id == Mem {
			n, err = parseMemMiB(val)
		} else {
			n, err = parseCount(val)
		}
		if err != nil {
			return fail(fmt.Errorf("%s: %w", name, err))
		}
		if out, err = out.Set(id, n); err != nil {
			return fail(err)
		}
	}
	*v = out
	return nil
}

// MarshalText writes the registry as its names in ID order,
// comma-separated ("cpu,mem,energy,node,billing,gres/gpu,gres/gpu:h100"),
// so that a configuration holding a registry can be stored and rebuilt
// with the same IDs.
func (r *Registry) MarshalText() ([]byte, error) { return []byte(strings.Join(r.names, ",")), nil }

// UnmarshalText rebuilds a registry from MarshalText's form: the built-in
// names first, in their order, then each registered name, which must be
// valid and listed after its untyped parent (as registration orders
// them), so every name gets the ID it had. Errors wrap ErrInvalidTRES (or
// ErrUnknownTRES) and name the offending name; r is then unchanged.
func (r *Registry) UnmarshalText(b []byte) error {
	names := strings.Split(string(b), ",")
	if len(names) < int(numBuiltin) {
		return fmt.Errorf("%w: registry %q: want the built-in TRES %s first", ErrInvalidTRES, b, strings.Join(builtinNames[:], ","))
	}
	for i, n := range builtinNames {
		if names[i] != n {
			return fmt.Errorf("%w: registry %q: TRES %d is %q, want %q", ErrInvalidTRES, b, i, names[i], n)
		}
	}
	nr, err := NewRegistry()
	if err != nil {
		return err
	}
	for i, n := range names[numBuiltin:] {
		if n != strings.ToLower(strings.TrimSpace(n)) {
			return fmt.Errorf("%w: registry: name %q is not canonical", ErrInvalidTRES, n)
		}
		if _, dup := nr.index[n]; dup {
			return fmt.Errorf("%w: registry: %q listed twice", ErrInvalidTRES, n)
		}
		id, err := nr.Register(n)
		if err != nil {
			return fmt.Errorf("registry: %w", err)
		}
		if want := ID(int(numBuiltin) + i); id != want {
			return fmt.Errorf("%w: registry: %q would get ID %d, not %d (list a typed GRES after its parent)", ErrInvalidTRES, n, id, want)
		}
	}
	*r = *nr
	return nil
}
