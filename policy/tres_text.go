package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gres"
)

// namedLimit is one element of an unbound TRESLimits: a lower-case TRES
// name and its count as written.
type namedLimit struct{ name, val string }

// limitElem resolves one name=count element of a limit string against
// reg: the TRES id, the count, and whether it limits at all (-1,
// UNLIMITED and INFINITE do not). With idNames, "tres<id>" (gres.TRESName)
// names a registered id too.
func limitElem(reg *gres.Registry, name, val string, idNames bool) (gres.ID, int64, bool, error) {
	id, known := reg.Lookup(strings.ToLower(name))
	if !known && idNames {
		if n, ok := gres.ParseTRESName(name); ok && int(n) < reg.Len() {
			id, known = n, true
		}
	}
	if !known {
		return 0, 0, false, fmt.Errorf("%w: %q is not registered", gres.ErrUnknownTRES, name)
	}
	switch strings.ToLower(val) {
	case "-1", "unlimited", "infinite":
		return id, 0, false, nil
	}
	v, err := reg.ParseTRES(reg.Name(id) + "=" + val)
	if err != nil {
		return 0, 0, false, err
	}
	return id, v.At(id), true, nil
}

// Bound reports whether l is bound to a registry: every value but one
// decoded by UnmarshalText (and not yet bound) is.
func (l TRESLimits) Bound() bool { return l.unbound == nil }

// Bind resolves an unbound l (decoded by UnmarshalText) against reg, as
// ParseTRESLimits would parse its text, reading "tres<id>" names as that
// id. A bound l is returned as it is once its IDs are checked to be in
// reg. Errors wrap ErrInvalidConfig and gres.ErrUnknownTRES (or the
// count's parse error) and name the element.
func (l TRESLimits) Bind(reg *gres.Registry) (TRESLimits, error) {
	b, err := l.bind(reg)
	if err != nil {
		return TRESLimits{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return b, nil
}

// bind is Bind without the sentinel.
func (l TRESLimits) bind(reg *gres.Registry) (TRESLimits, error) {
	if reg == nil {
		return TRESLimits{}, fmt.Errorf("binding TRES limits: nil registry")
	}
	if l.unbound == nil {
		if id := l.maxID(); int(id) >= reg.Len() {
			return TRESLimits{}, fmt.Errorf("TRES id %d is not in the registry (%w)", id, gres.ErrUnknownTRES)
		}
		return l, nil
	}
	var out TRESLimits
	seen := make(map[gres.ID]string, len(l.unbound))
	for _, e := range l.unbound {
		id, v, limited, err := limitElem(reg, e.name, e.val, true)
		if err != nil {
			return TRESLimits{}, fmt.Errorf("TRES limit %s=%s: %w", e.name, e.val, err)
		}
		if prev, dup := seen[id]; dup {
			return TRESLimits{}, fmt.Errorf("TRES limit %q: same TRES as %q", e.name, prev)
		}
		seen[id] = e.name
		if limited {
			out = out.with(id, v, reg.Name(id))
		}
	}
	return out, nil
}

// MarshalText writes l as a Slurm limit string, "cpu=256,gres/gpu=16", in
// ID order with plain counts (mem in MiB), naming a TRES whose name l does
// not know as gres.TRESName does. An unbound l is written as it was
// decoded. The zero value is "".
func (l TRESLimits) MarshalText() ([]byte, error) {
	var b []byte
	if l.unbound != nil {
		for i, e := range l.unbound {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(append(b, e.name...), '='), e.val...)
		}
		return b, nil
	}
	for i, id := range l.ids {
		if i > 0 {
			b = append(b, ',')
		}
		name := ""
		if l.names != nil {
			name = l.names[i]
		}
		if name == "" {
			name = gres.TRESName(id)
		}
		b = append(append(b, name...), '=')
		b = strconv.AppendInt(b, l.vals[i], 10)
	}
	return b, nil
}

// UnmarshalText reads a limit string without a registry: name=count
// elements (names case-insensitive; counts as ParseTRESLimits reads them:
// digits with an optional K/M/G/T/P suffix, or -1, UNLIMITED, INFINITE).
// The result is unbound: it limits nothing until Bind (or New, for the
// limits of a Config) resolves the names. "" is the zero value. Malformed
// elements and names given twice are errors wrapping ErrSyntax.
func (l *TRESLimits) UnmarshalText(b []byte) error {
	s := string(b)
	if strings.TrimSpace(s) == "" {
		*l = TRESLimits{}
		return nil
	}
	var els []namedLimit
	for tok := range strings.SplitSeq(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(tok), "=")
		name, val = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(val)
		switch {
		case !ok || name == "" || val == "":
			return fmt.Errorf("%w: TRES limits %q: element %q: want name=count", ErrSyntax, s, tok)
		case !validLimitName(name):
			return fmt.Errorf("%w: TRES limits %q: bad TRES name %q", ErrSyntax, s, name)
		case !validLimitCount(val):
			return fmt.Errorf("%w: TRES limits %q: %s: bad count %q", ErrSyntax, s, name, val)
		case slices.ContainsFunc(els, func(e namedLimit) bool { return e.name == name }):
			return fmt.Errorf("%w: TRES limits %q: %q given twice", ErrSyntax, s, name)
		}
		els = append(els, namedLimit{name: name, val: val})
	}
	*l = TRESLimits{unbound: els}
	return nil
}

// validLimitName accepts the characters of TRES names (letters, digits,
// '/', ':', '_', '-', '.').
func validLimitName(s string) bool {
	if len(s) > 200 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '/', c == ':', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// validLimitCount accepts -1, UNLIMITED, INFINITE and digits with an
// optional K/M/G/T/P suffix.
func validLimitCount(s string) bool {
	switch strings.ToLower(s) {
	case "-1", "unlimited", "infinite":
		return true
	}
	if strings.ContainsRune("kKmMgGtTpP", rune(s[len(s)-1])) {
		s = s[:len(s)-1]
	}
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// tresFields lists the TRES limit fields of l with their Slurm names.
func (l *Limits) tresFields() []tresField {
	return []tresField{{"GrpTRES", &l.GrpTRES}, {"GrpTRESMins", &l.GrpTRESMins}, {"GrpTRESRunMins", &l.GrpTRESRunMins},
		{"MaxTRESPerJob", &l.MaxTRESPerJob}, {"MaxTRESPerNode", &l.MaxTRESPerNode}, {"MaxTRESMinsPerJob", &l.MaxTRESMinsPerJob}}
}

type tresField struct {
	name string
	l    *TRESLimits
}

// tresFields lists the TRES limit fields of l.
func (l *QOSLimits) tresFields() []tresField {
	return append(l.Limits.tresFields(), tresField{"MaxTRESPerUser", &l.MaxTRESPerUser},
		tresField{"MaxTRESPerAccount", &l.MaxTRESPerAccount}, tresField{"MinTRESPerJob", &l.MinTRESPerJob})
}

// bindFields binds every unbound field, naming the field and who in an
// error.
func bindFields(reg *gres.Registry, who string, fields []tresField) error {
	for _, f := range fields {
		if f.l.Bound() {
			continue
		}
		b, err := f.l.bind(reg)
		if err != nil {
			return fmt.Errorf("%w: %s: %s: %w", ErrInvalidConfig, who, f.name, err)
		}
		*f.l = b
	}
	return nil
}

// anyUnbound reports whether a field is unbound.
func anyUnbound(fields []tresField) bool {
	return slices.ContainsFunc(fields, func(f tresField) bool { return !f.l.Bound() })
}

// Bind binds every unbound TRES limit of q (see TRESLimits.Bind) in
// place; the error names the QOS and the field. New does this for the QOS
// of its Config; a caller adding a decoded QOS by another path calls it.
func (q *QOS) Bind(reg *gres.Registry) error {
	return bindFields(reg, fmt.Sprintf("QOS %q", q.Name), q.Limits.tresFields())
}

// Bind binds every unbound TRES limit of a in place, as QOS.Bind does.
func (a *Assoc) Bind(reg *gres.Registry) error {
	return bindFields(reg, fmt.Sprintf("association %s", assocLabel(a)), a.Limits.Limits.tresFields())
}

func assocLabel(a *Assoc) string {
	if a.User == "" {
		return fmt.Sprintf("account %q", a.Account)
	}
	return fmt.Sprintf("user %q in account %q", a.User, a.Account)
}

// bindConfig returns cfg with every unbound TRES limit bound against reg.
// The QOS and Assocs slices are copied before the first change, so the
// caller's Config is never modified.
func bindConfig(reg *gres.Registry, cfg Config) (Config, error) {
	copied := false
	for i := range cfg.QOS {
		if !anyUnbound(cfg.QOS[i].Limits.tresFields()) {
			continue
		}
		if !copied {
			cfg.QOS, copied = slices.Clone(cfg.QOS), true
		}
		if err := cfg.QOS[i].Bind(reg); err != nil {
			return Config{}, err
		}
	}
	copied = false
	for i := range cfg.Assocs {
		if !anyUnbound(cfg.Assocs[i].Limits.Limits.tresFields()) {
			continue
		}
		if !copied {
			cfg.Assocs, copied = slices.Clone(cfg.Assocs), true
		}
		if err := cfg.Assocs[i].Bind(reg); err != nil {
			return Config{}, err
		}
	}
	return cfg, nil
}
