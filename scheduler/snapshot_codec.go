package scheduler

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// This file holds the snapshot's low-level encoding: senc appends
// varints, strings, times and TRES vectors to a section's payload, sdec
// reads them back, failing on the first malformed byte with the error
// naming the section and the byte offset in the stream; encodeValue and
// decodeValue write configuration structs (NodeConfig, policy.Config …)
// field by field by name, so that they follow those types as fields are
// added. Registry-bound values (gres.Vector, policy.TRESLimits) are written
// against the snapshot's name table (section registry): index i is the
// registry name at position i when the snapshot was written, mapped to the
// restoring registry's ID by name.

// senc appends one section's payload.
type senc struct {
	b []byte
	// fields interns struct field names: a name is written once per
	// section, then referred to by number.
	fields map[string]uint64
	// syms interns the strings jobs repeat (users, accounts, partitions).
	syms map[string]uint64
	// lastInv is the last device inventory written; cores is scratch.
	lastInv *gres.Inventory
	cores   []int
	plans   structPlans
	sec     int  // numbers the sections written (see fieldPlan)
	pub     *Job // scratch: the public part of the job being written
	// recent caches, per call site (symSlot), the last string written
	// there and its number: consecutive jobs mostly share their user,
	// account, partition and QOS, and comparing with the last one is
	// cheaper than looking it up.
	recent [symSlots]symCache
}

// symCache is the last string written at one call site, and its number.
type symCache struct {
	s   string
	ref uint64
	ok  bool
}

// Call sites of senc.symAt.
const (
	symGRESName = iota
	symGRESType
	symSlots
)

// symAt is sym for call site slot.
func (e *senc) symAt(slot int, s string) {
	r := &e.recent[slot]
	if r.ok && r.s == s {
		e.uvarint(r.ref + 1)
		return
	}
	k, ok := e.syms[s]
	if !ok {
		e.sym(s)
		k = e.syms[s]
	} else {
		e.uvarint(k + 1)
	}
	r.s, r.ref, r.ok = s, k, true
}

// sym writes s through the section's string table: the first time in
// full, later by number.
func (e *senc) sym(s string) {
	if k, ok := e.syms[s]; ok {
		e.uvarint(k + 1)
		return
	}
	if e.syms == nil {
		e.syms = map[string]uint64{}
	}
	e.syms[s] = uint64(len(e.syms))
	e.uvarint(0)
	e.str(s)
}

func (e *senc) uvarint(x uint64) { e.b = binary.AppendUvarint(e.b, x) }
func (e *senc) varint(x int64)   { e.b = binary.AppendVarint(e.b, x) }
func (e *senc) int(x int)        { e.varint(int64(x)) }
func (e *senc) byte(x byte)      { e.b = append(e.b, x) }
func (e *senc) f64(x float64)    { e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(x)) }

func (e *senc) bool(x bool) {
	if x {
		e.byte(1)
	} else {
		e.byte(0)
	}
}

func (e *senc) str(s string) {
	e.uvarint(uint64(len(s)))
	e.b = append(e.b, s...)
}

// Time kinds: the zero time, UTC, the local zone, a fixed offset.
const (
	timeZero = iota
	timeUTC
	timeLocal
	timeFixed
)

// time writes t to the nanosecond with its zone as an offset (the zone's
// name is not kept: UTC and Local come back as themselves, any other zone
// as a fixed zone of its offset, as time.Time's binary form does).
func (e *senc) time(t time.Time) {
	switch {
	case t.IsZero():
		e.byte(timeZero)
		return
	case t.Location() == time.UTC:
		e.byte(timeUTC)
	case t.Location() == time.Local:
		e.byte(timeLocal)
	default:
		_, off := t.Zone()
		e.byte(timeFixed)
		e.varint(int64(off))
	}
	e.varint(t.Unix())
	e.uvarint(uint64(t.Nanosecond()))
}

// vec writes a TRES vector sparsely: its length (nil as 0, empty as 1),
// then the non-zero entries as (name index, value).
func (e *senc) vec(v gres.Vector) {
	if v == nil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(len(v)) + 1)
	n := 0
	for _, x := range v {
		if x != 0 {
			n++
		}
	}
	e.uvarint(uint64(n))
	for i, x := range v {
		if x != 0 {
			e.uvarint(uint64(i))
			e.varint(x)
		}
	}
}

func (e *senc) ints(xs []int) {
	if xs == nil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(len(xs)) + 1)
	for _, x := range xs {
		e.int(x)
	}
}

func (e *senc) field(name string) {
	if e.fields == nil {
		e.fields = map[string]uint64{}
	}
	if k, ok := e.fields[name]; ok {
		e.uvarint(k + 1)
		return
	}
	e.fields[name] = uint64(len(e.fields))
	e.uvarint(0)
	e.str(name)
}

// sdec reads one section's payload.
type sdec struct {
	b   []byte
	off int
	// base is the stream offset of b[0]; sec names the section.
	base int64
	sec  string
	err  error
	// ids maps the snapshot's name indices to the restoring registry's
	// IDs; nreg is that registry's length.
	ids    []gres.ID
	nreg   int
	fields []string
	syms   []string
	// lastInv is the last device inventory read; arena is where vectors
	// are cut from (see vec).
	lastInv *gres.Inventory
	arena   gres.Vector
	jobs    []job // the slab job records are cut from
	plans   structPlans
}

// sym reads a string written by senc.sym.
func (d *sdec) sym() string {
	k := d.uvarint()
	if d.err != nil {
		return ""
	}
	if k == 0 {
		s := d.str()
		d.syms = append(d.syms, s)
		return s
	}
	if k > uint64(len(d.syms)) {
		d.fail("bad string reference %d", k)
		return ""
	}
	return d.syms[k-1]
}

// fail records the first error, at the current offset.
func (d *sdec) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: section %s at byte %d: %s", ErrCorruptSnapshot, d.sec, d.base+int64(d.off), fmt.Sprintf(format, a...))
	}
}

func (d *sdec) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.off += n
	return x
}

func (d *sdec) varint() int64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.off += n
	return x
}

// int reads an int, which must lie in [lo, hi].
func (d *sdec) intIn(lo, hi int64, what string) int {
	x := d.varint()
	if d.err == nil && (x < lo || x > hi) {
		d.fail("%s %d out of range [%d, %d]", what, x, lo, hi)
		return 0
	}
	return int(x)
}

func (d *sdec) int() int { return int(d.varint()) }

// count reads a length that must fit in what is left of the section
// (each element takes at least one byte).
func (d *sdec) count() int {
	x := d.uvarint()
	if d.err == nil && x > uint64(len(d.b)-d.off) {
		d.fail("length %d exceeds the %d bytes left", x, len(d.b)-d.off)
		return 0
	}
	return int(x)
}

// count1 reads a length written plus one (0 for nil), checked as count
// checks it; it returns the length plus one.
func (d *sdec) count1() int {
	x := d.uvarint()
	if d.err == nil && x > 0 && x-1 > uint64(len(d.b)-d.off) {
		d.fail("length %d exceeds the %d bytes left", x-1, len(d.b)-d.off)
		return 0
	}
	return int(x)
}

func (d *sdec) byte() byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail("unexpected end of section")
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *sdec) bool() bool {
	switch x := d.byte(); x {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail("bad bool %d", x)
		return false
	}
}

func (d *sdec) f64() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.off < 8 {
		d.fail("unexpected end of section")
		return 0
	}
	d.off += 8
	return math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.off-8:]))
}

func (d *sdec) str() string {
	n := d.count()
	if d.err != nil {
		return ""
	}
	s := string(d.b[d.off : d.off+n])
	d.off += n
	return s
}

func (d *sdec) time() time.Time {
	k := d.byte()
	var loc *time.Location
	switch k {
	case timeZero:
		return time.Time{}
	case timeUTC:
		loc = time.UTC
	case timeLocal:
		loc = time.Local
	case timeFixed:
		off := d.intIn(-86400, 86400, "zone offset")
		loc = time.FixedZone("", off)
	default:
		d.fail("bad time kind %d", k)
		return time.Time{}
	}
	sec := d.varint()
	ns := d.uvarint()
	if d.err == nil && ns >= 1e9 {
		d.fail("bad nanoseconds %d", ns)
	}
	if d.err != nil {
		return time.Time{}
	}
	return time.Unix(sec, int64(ns)).In(loc)
}

// tres maps a snapshot name index to the registry's ID.
func (d *sdec) tres(i uint64) gres.ID {
	if d.err == nil && i >= uint64(len(d.ids)) {
		d.fail("TRES index %d beyond the %d names of the registry section", i, len(d.ids))
	}
	if d.err != nil {
		return 0
	}
	return d.ids[i]
}

// vec reads a vector written by senc.vec, indexed by the restoring
// registry (as long as it).
func (d *sdec) vec() gres.Vector {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return nil
	}
	if len(d.arena) < d.nreg {
		d.arena = make(gres.Vector, max(d.nreg*1024, 4096))
	}
	v := cut(&d.arena, d.nreg)
	k := d.count()
	for range k {
		id := d.tres(d.uvarint())
		x := d.varint()
		if d.err != nil {
			return nil
		}
		v[id] = x
	}
	return v
}

func (d *sdec) ints() []int {
	n := d.count1()
	if n == 0 || d.err != nil {
		return nil
	}
	out := make([]int, n-1)
	for i := range out {
		out[i] = d.int()
	}
	return out
}

func (d *sdec) field() string {
	k := d.uvarint()
	if d.err != nil {
		return ""
	}
	if k == 0 {
		name := d.str()
		d.fields = append(d.fields, name)
		return name
	}
	if k > uint64(len(d.fields)) {
		d.fail("bad field reference %d", k)
		return ""
	}
	return d.fields[k-1]
}

// done checks that the whole payload was read.
func (d *sdec) done() error {
	if d.err == nil && d.off != len(d.b) {
		d.fail("%d bytes left over", len(d.b)-d.off)
	}
	return d.err
}

// Types the value codec writes by their meaning rather than their fields.
var (
	typeTime       = reflect.TypeFor[time.Time]()
	typeVector     = reflect.TypeFor[gres.Vector]()
	typeTRESLimits = reflect.TypeFor[policy.TRESLimits]()
	typeCoreSet    = reflect.TypeFor[gres.CoreSet]()
	typeNodeSet    = reflect.TypeFor[topology.NodeSet]()
	typeRegistry   = reflect.TypeFor[*gres.Registry]()
	typeInventory  = reflect.TypeFor[gres.Inventory]()
	typeString     = reflect.TypeFor[string]()
)

// skipped reports whether the value codec leaves out values of type t:
// functions and interfaces (hooks, sources: RestoreOptions supplies them)
// and the registry (its own section).
func skipped(t reflect.Type) bool {
	return t.Kind() == reflect.Func || t.Kind() == reflect.Interface || t.Kind() == reflect.Chan || t == typeRegistry
}

// encodeValue writes v: structs as their non-zero exported fields by
// name, slices and maps with their length (maps in key order), pointers
// with a nil flag. A struct with unexported fields that is not one of the
// types written by meaning is an error: its state would be lost.
func (e *senc) encodeValue(v reflect.Value) error {
	t := v.Type()
	switch t {
	case typeTime:
		e.time(*valueOf[time.Time](v))
		return nil
	case typeVector:
		e.vec(*valueOf[gres.Vector](v))
		return nil
	case typeTRESLimits:
		l := valueOf[policy.TRESLimits](v)
		e.uvarint(uint64(l.Len()))
		for id, x := range l.All() {
			e.uvarint(uint64(id))
			e.varint(x)
		}
		return nil
	case typeCoreSet:
		e.cores = valueOf[gres.CoreSet](v).AppendTo(e.cores[:0])
		e.ints(e.cores)
		return nil
	case typeInventory:
		e.inventory(valueOf[gres.Inventory](v))
		return nil
	case typeNodeSet:
		ns := valueOf[topology.NodeSet](v)
		e.uvarint(uint64(ns.Len()))
		e.ints(ns.AppendTo(nil))
		return nil
	}
	switch t.Kind() {
	case reflect.Bool:
		e.bool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.varint(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.uvarint(v.Uint())
	case reflect.Float32, reflect.Float64:
		e.f64(v.Float())
	case reflect.String:
		e.sym(v.String())
	case reflect.Pointer:
		if v.IsNil() {
			e.byte(0)
			return nil
		}
		e.byte(1)
		return e.encodeValue(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			e.uvarint(0)
			return nil
		}
		e.uvarint(uint64(v.Len()) + 1)
		for i := range v.Len() {
			if err := e.encodeValue(v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			if err := e.encodeValue(v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if v.IsNil() {
			e.uvarint(0)
			return nil
		}
		keys := v.MapKeys()
		if err := sortKeys(keys); err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
		e.uvarint(uint64(len(keys)) + 1)
		for _, k := range keys {
			if err := e.encodeValue(k); err != nil {
				return err
			}
			if err := e.encodeValue(v.MapIndex(k)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		pl := e.plans.of(t)
		if pl.err != nil {
			return pl.err
		}
		n := 0
		for _, f := range pl.fields {
			switch {
			case v.Field(f.index).IsZero():
			case f.skip:
				return fmt.Errorf("snapshot: %s.%s is set but is not data (RestoreOptions must carry it)", t, f.name)
			default:
				n++
			}
		}
		e.uvarint(uint64(n))
		for k := range pl.fields {
			f := &pl.fields[k]
			fv := v.Field(f.index)
			if f.skip || fv.IsZero() {
				continue
			}
			e.planField(f)
			if fv.Kind() == reflect.String && fv.Type() == typeString {
				e.planSym(f, fv.String())
				continue
			}
			if err := e.encodeValue(fv); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("snapshot: cannot write values of type %s", t)
	}
	return nil
}

// ownPkgPath is this package's import path.
var ownPkgPath = reflect.TypeFor[Job]().PkgPath()

// structPlans caches, per struct type, the fields the value codec writes.
type structPlans map[reflect.Type]*structPlan

// structPlan is a struct type's fields as the value codec writes them:
// every field (exported, or the type has no snapshot form: err), with
// whether it is left out (skipped), and the fields by name.
type structPlan struct {
	fields []fieldPlan
	byName map[string]int
	err    error
}

type fieldPlan struct {
	index int
	name  string
	skip  bool
	// In the section numbered sec: the field name's number, and the
	// last string written in the field and its number (consecutive jobs
	// mostly share their user, account, partition and QOS).
	sec     int
	ref     uint64
	lastSec int
	last    string
	lastRef uint64
}

// planField writes field f's name (see senc.field), its number cached.
func (e *senc) planField(f *fieldPlan) {
	if f.sec == e.sec {
		e.uvarint(f.ref + 1)
		return
	}
	e.field(f.name)
	f.sec, f.ref = e.sec, e.fields[f.name]
}

// planSym writes string x of field f (see senc.sym).
func (e *senc) planSym(f *fieldPlan, x string) {
	if f.lastSec == e.sec && f.last == x {
		e.uvarint(f.lastRef + 1)
		return
	}
	e.sym(x)
	f.lastSec, f.last, f.lastRef = e.sec, x, e.syms[x]
}

// of returns t's plan, computing it once.
func (ps *structPlans) of(t reflect.Type) *structPlan {
	if pl, ok := (*ps)[t]; ok {
		return pl
	}
	if *ps == nil {
		*ps = structPlans{}
	}
	pl := &structPlan{byName: map[string]int{}}
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case f.IsExported():
		case t.PkgPath() == ownPkgPath:
			// This package's own types (Job …) keep only derived copies
			// in unexported fields; the snapshot writes their sources.
			continue
		default:
			pl.err = fmt.Errorf("snapshot: type %s has unexported field %s and no snapshot form", t, f.Name)
			continue
		}
		pl.fields = append(pl.fields, fieldPlan{index: i, name: f.Name, skip: skipped(f.Type)})
		if !skipped(f.Type) {
			pl.byName[f.Name] = i
			if was := f.Tag.Get("was"); was != "" {
				pl.byName[was] = i // a renamed field: its old name reads into it
			}
		}
	}
	(*ps)[t] = pl
	return pl
}

// valueOf returns a pointer to v's value of type T: v's own when v is
// addressable (no copy, no allocation), else a copy's.
func valueOf[T any](v reflect.Value) *T {
	if v.CanAddr() {
		return v.Addr().Interface().(*T)
	}
	x := v.Interface().(T)
	return &x
}

// sortKeys orders map keys (strings or integers) for a deterministic
// encoding.
func sortKeys(keys []reflect.Value) error {
	if len(keys) == 0 {
		return nil
	}
	switch keys[0].Kind() {
	case reflect.String:
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(a.String(), b.String()) })
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(a.Int(), b.Int()) })
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(a.Uint(), b.Uint()) })
	default:
		return fmt.Errorf("snapshot: map keys of kind %s", keys[0].Kind())
	}
	return nil
}

// decodeValue reads into v (settable) what encodeValue wrote.
func (d *sdec) decodeValue(v reflect.Value) {
	if d.err != nil {
		return
	}
	t := v.Type()
	switch t {
	case typeTime:
		v.Set(reflect.ValueOf(d.time()))
		return
	case typeVector:
		v.Set(reflect.ValueOf(d.vec()))
		return
	case typeTRESLimits:
		n := d.count()
		m := make(map[gres.ID]int64, n)
		for range n {
			id := d.tres(d.uvarint())
			m[id] = d.varint()
		}
		if d.err != nil {
			return
		}
		l, err := policy.TRESLimitsOf(m)
		if err != nil {
			d.fail("TRES limits: %v", err)
			return
		}
		v.Set(reflect.ValueOf(l))
		return
	case typeInventory:
		v.Set(reflect.ValueOf(d.inventory()))
		return
	case typeCoreSet:
		ids := d.ints()
		if d.err != nil {
			return
		}
		cs, err := gres.CoreSetOf(ids...)
		if err != nil {
			d.fail("core set: %v", err)
			return
		}
		v.Set(reflect.ValueOf(cs))
		return
	case typeNodeSet:
		n := d.uvarint()
		ids := d.ints()
		if d.err == nil && n > 1<<24 {
			d.fail("node set of %d nodes", n)
		}
		for _, i := range ids {
			if d.err == nil && (i < 0 || uint64(i) >= n) {
				d.fail("node set index %d out of [0, %d)", i, n)
			}
		}
		if d.err != nil {
			return
		}
		v.Set(reflect.ValueOf(topology.NodeSetOf(int(n), ids...)))
		return
	}
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(d.bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x := d.varint()
		if v.OverflowInt(x) {
			d.fail("%d overflows %s", x, t)
			return
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		x := d.uvarint()
		if v.OverflowUint(x) {
			d.fail("%d overflows %s", x, t)
			return
		}
		v.SetUint(x)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(d.f64())
	case reflect.String:
		v.SetString(d.sym())
	case reflect.Pointer:
		switch d.byte() {
		case 0:
			v.SetZero()
		case 1:
			p := reflect.New(t.Elem())
			d.decodeValue(p.Elem())
			v.Set(p)
		default:
			d.fail("bad pointer flag")
		}
	case reflect.Slice:
		n := d.count1()
		if n == 0 || d.err != nil {
			v.SetZero()
			return
		}
		s := reflect.MakeSlice(t, n-1, n-1)
		for i := range n - 1 {
			d.decodeValue(s.Index(i))
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			d.decodeValue(v.Index(i))
		}
	case reflect.Map:
		n := d.count1()
		if n == 0 || d.err != nil {
			v.SetZero()
			return
		}
		m := reflect.MakeMapWithSize(t, n-1)
		for range n - 1 {
			k := reflect.New(t.Key()).Elem()
			x := reflect.New(t.Elem()).Elem()
			d.decodeValue(k)
			d.decodeValue(x)
			m.SetMapIndex(k, x)
		}
		v.Set(m)
	case reflect.Struct:
		pl := d.plans.of(t)
		n := d.count()
		for range n {
			name := d.field()
			if d.err != nil {
				return
			}
			k, ok := pl.byName[name]
			if !ok {
				d.fail("unknown field %s of %s (a snapshot of a newer version?)", name, t)
				return
			}
			d.decodeValue(v.Field(k))
		}
	default:
		d.fail("cannot read values of type %s", t)
	}
}
