package journal

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

// The compact encoding of an entry is the entry's data written in binary,
// exactly: the event's kind, its time (time.Time's binary form) and its
// value, where a struct is a list of its non-zero exported fields, each as
// its Go name and a length-prefixed value, so that a field added to or
// removed from an event type later decodes as JSON would (absent: zero;
// unknown: skipped). Slices, maps and pointers keep the difference between
// nil and empty. A value is stored by its fields, as it is in memory, even
// when its type has a JSON or text form of its own (JobSpec writes its
// durations in Slurm's format, an enum its name): those forms are for
// people, and may round (a duration in whole seconds), where a journal
// must give back the event that was applied, bit for bit. Only a struct
// with unexported fields (state its exported fields do not show) is stored
// in its own JSON or text form, when it has one. A value the binary form
// cannot hold (an interface field, say) makes the record fall back to
// scheduler.Entry's JSON.

// errNoBinary reports a value the binary form cannot hold.
var errNoBinary = errors.New("no binary form")

var (
	timeType          = reflect.TypeFor[time.Time]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshalType = reflect.TypeFor[json.Unmarshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshalType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// form says how values of a type are stored.
type form uint8

const (
	formPlain form = iota // by reflect kind
	formTime              // time.Time.MarshalBinary
	formJSON              // the type's MarshalJSON
	formText              // the type's MarshalText
)

// field is one encoded struct field.
type field struct {
	index []int
	name  string
	keep  bool // encoded even when zero (a type with its own form)
}

// typeInfo is what the codec knows about one type.
type typeInfo struct {
	form   form
	fields []field        // structs (formPlain)
	byName map[string]int // structs: JSON name → fields index
	once   sync.Once      // guards the fields of a struct type
	typ    reflect.Type   // the type itself
	kind   reflect.Kind   // typ.Kind()
}

// codec encodes and decodes entries; it caches type information and the
// concrete type of each event kind. It is safe for concurrent use.
type codec struct {
	mu    sync.RWMutex
	types map[reflect.Type]*typeInfo
	kinds map[scheduler.EventKind]reflect.Type
}

func newCodec() *codec {
	return &codec{types: map[reflect.Type]*typeInfo{}, kinds: map[scheduler.EventKind]reflect.Type{}}
}

// info returns the type information of t, computing it once.
func (c *codec) info(t reflect.Type) *typeInfo {
	c.mu.RLock()
	ti := c.types[t]
	c.mu.RUnlock()
	if ti != nil {
		return ti
	}
	c.mu.Lock()
	if ti = c.types[t]; ti == nil {
		ti = &typeInfo{typ: t, kind: t.Kind()}
		pt := reflect.PointerTo(t)
		opaque := t.Kind() == reflect.Struct && hidesState(t)
		switch {
		case t == timeType:
			ti.form = formTime
		case opaque && (t.Implements(jsonMarshalerType) || pt.Implements(jsonMarshalerType)) && pt.Implements(jsonUnmarshalType):
			ti.form = formJSON
		case opaque && (t.Implements(textMarshalerType) || pt.Implements(textMarshalerType)) && pt.Implements(textUnmarshalType):
			ti.form = formText
		}
		c.types[t] = ti
	}
	c.mu.Unlock()
	if ti.form == formPlain && ti.kind == reflect.Struct {
		ti.once.Do(func() { c.structFields(ti) })
	}
	return ti
}

// hidesState reports whether struct type t has state outside its exported
// fields: an unexported field (other than an embedded struct whose fields
// are all exported).
func hidesState(t reflect.Type) bool {
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() && !(sf.Anonymous && sf.Type.Kind() == reflect.Struct && !hidesState(sf.Type)) {
			return true
		}
	}
	return false
}

// structFields lists the fields stored: the exported ones and embedded
// structs, under their Go names.
func (c *codec) structFields(ti *typeInfo) {
	ti.byName = map[string]int{}
	for i := range ti.typ.NumField() {
		sf := ti.typ.Field(i)
		if !sf.IsExported() && !(sf.Anonymous && sf.Type.Kind() == reflect.Struct) {
			continue
		}
		sub := c.info(sf.Type)
		ti.byName[sf.Name] = len(ti.fields)
		if was := sf.Tag.Get("was"); was != "" {
			// A field renamed: records written under its old name
			// decode into it.
			ti.byName[was] = len(ti.fields)
		}
		ti.fields = append(ti.fields, field{index: sf.Index, name: sf.Name, keep: sub.form == formJSON || sub.form == formText})
	}
}

// eventType returns the concrete type scheduler.Entry decodes kind k as.
func (c *codec) eventType(k scheduler.EventKind) (reflect.Type, error) {
	c.mu.RLock()
	t, ok := c.kinds[k]
	c.mu.RUnlock()
	if ok {
		return t, nil
	}
	kb, err := json.Marshal(k)
	if err != nil {
		return nil, err
	}
	var e scheduler.Entry
	probe := `{"at":"0001-01-01T00:00:00Z","kind":` + string(kb) + `,"event":{}}`
	if err := json.Unmarshal([]byte(probe), &e); err != nil {
		return nil, err
	}
	t = reflect.TypeOf(e.Event)
	c.mu.Lock()
	c.kinds[k] = t
	c.mu.Unlock()
	return t, nil
}

// appendEntry appends the binary form of the entry (at, ev) to b.
func (c *codec) appendEntry(b []byte, at time.Time, ev scheduler.Event) ([]byte, error) {
	k := ev.Kind()
	t, err := c.eventType(k)
	if err != nil {
		// A kind the probe cannot find the type of is stored as JSON.
		return b, fmt.Errorf("%w: %s events: %w", errNoBinary, k, err)
	}
	v := reflect.ValueOf(ev)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Type() != t {
		return b, fmt.Errorf("%w: a %s event of type %s decodes as %s", errNoBinary, k, v.Type(), t)
	}
	b = appendString(b, string(k))
	if b, err = appendTime(b, at); err != nil {
		return b, err
	}
	return c.appendValue(b, v)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendTime(b []byte, t time.Time) ([]byte, error) {
	tb, err := t.MarshalBinary()
	if err != nil {
		return b, err
	}
	return appendString(b, string(tb)), nil
}

// appendValue appends v's encoding.
func (c *codec) appendValue(b []byte, v reflect.Value) ([]byte, error) {
	ti := c.info(v.Type())
	if ti.form != formPlain && !v.CanInterface() {
		return b, fmt.Errorf("%w: %s in an unexported embedded field", errNoBinary, v.Type())
	}
	switch ti.form {
	case formTime:
		return appendTime(b, v.Interface().(time.Time))
	case formJSON:
		m, ok := marshaler[json.Marshaler](v)
		if !ok {
			return b, fmt.Errorf("%w: %s", errNoBinary, v.Type())
		}
		out, err := m.MarshalJSON()
		if err != nil {
			return b, err
		}
		return appendString(b, string(out)), nil
	case formText:
		m, ok := marshaler[encoding.TextMarshaler](v)
		if !ok {
			return b, fmt.Errorf("%w: %s", errNoBinary, v.Type())
		}
		out, err := m.MarshalText()
		if err != nil {
			return b, err
		}
		return appendString(b, string(out)), nil
	}
	switch ti.kind {
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.AppendVarint(b, v.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return binary.AppendUvarint(b, v.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Float())), nil
	case reflect.String:
		return appendString(b, v.String()), nil
	case reflect.Slice:
		if v.IsNil() {
			return append(b, 0), nil
		}
		b = binary.AppendUvarint(b, uint64(v.Len())+1)
		if v.Type().Elem().Kind() == reflect.Uint8 && c.info(v.Type().Elem()).form == formPlain {
			return append(b, v.Bytes()...), nil
		}
		return c.appendElems(b, v)
	case reflect.Array:
		return c.appendElems(b, v)
	case reflect.Map:
		if v.IsNil() {
			return append(b, 0), nil
		}
		return c.appendMap(binary.AppendUvarint(b, uint64(v.Len())+1), v)
	case reflect.Pointer:
		if v.IsNil() {
			return append(b, 0), nil
		}
		return c.appendValue(append(b, 1), v.Elem())
	case reflect.Struct:
		return c.appendStruct(b, ti, v)
	}
	return b, fmt.Errorf("%w: %s", errNoBinary, v.Type())
}

// appendMap appends the map's entries as key, value pairs in the order of
// their encoded keys, so that a map always encodes the same.
func (c *codec) appendMap(b []byte, v reflect.Value) ([]byte, error) {
	type pair struct{ k, kv []byte }
	pairs := make([]pair, 0, v.Len())
	it := v.MapRange()
	for it.Next() {
		k, err := c.appendValue(nil, it.Key())
		if err != nil {
			return b, err
		}
		kv, err := c.appendValue(k, it.Value())
		if err != nil {
			return b, err
		}
		pairs = append(pairs, pair{k: kv[:len(k)], kv: kv})
	}
	slices.SortFunc(pairs, func(x, y pair) int { return bytes.Compare(x.k, y.k) })
	for _, p := range pairs {
		b = append(b, p.kv...)
	}
	return b, nil
}

func (c *codec) appendElems(b []byte, v reflect.Value) ([]byte, error) {
	var err error
	for i := range v.Len() {
		if b, err = c.appendValue(b, v.Index(i)); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendStruct appends the non-zero fields as (name, length, value) and
// an empty name to end the list.
func (c *codec) appendStruct(b []byte, ti *typeInfo, v reflect.Value) ([]byte, error) {
	for _, f := range ti.fields {
		fv := v.FieldByIndex(f.index)
		if !f.keep && fv.IsZero() {
			continue
		}
		b = appendString(b, f.name)
		// Reserve a length prefix of up to 5 bytes, encode the value,
		// then move it up against the actual prefix.
		at := len(b)
		b = append(b, 0, 0, 0, 0, 0)
		var err error
		if b, err = c.appendValue(b, fv); err != nil {
			return b, err
		}
		n := len(b) - at - 5
		if n > math.MaxUint32 {
			return b, fmt.Errorf("%w: field %s of %d bytes", errNoBinary, f.name, n)
		}
		var pre [binary.MaxVarintLen32]byte
		p := binary.PutUvarint(pre[:], uint64(n))
		copy(b[at:], pre[:p])
		copy(b[at+p:], b[at+5:])
		b = b[:at+p+n]
	}
	return append(b, 0), nil
}

// marshaler returns v (or its address) as an M.
func marshaler[M any](v reflect.Value) (M, bool) {
	if m, ok := v.Interface().(M); ok {
		return m, true
	}
	p := reflect.New(v.Type())
	p.Elem().Set(v)
	m, ok := p.Interface().(M)
	return m, ok
}

// decoder reads a binary entry.
type decoder struct {
	c   *codec
	b   []byte
	off int
}

var errShort = errors.New("record ends early")

func (d *decoder) uvarint() (uint64, error) {
	x, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		return 0, fmt.Errorf("bad varint at byte %d: %w", d.off, errShort)
	}
	d.off += n
	return x, nil
}

func (d *decoder) bytes() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.b)-d.off) {
		return nil, fmt.Errorf("%d bytes wanted at byte %d: %w", n, d.off, errShort)
	}
	out := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return out, nil
}

// decodeEntry decodes a binary entry.
func (c *codec) decodeEntry(b []byte) (scheduler.Entry, error) {
	d := &decoder{c: c, b: b}
	kb, err := d.bytes()
	if err != nil {
		return scheduler.Entry{}, err
	}
	t, err := c.eventType(scheduler.EventKind(kb))
	if err != nil {
		return scheduler.Entry{}, err
	}
	var at time.Time
	if err := d.time(reflect.ValueOf(&at).Elem()); err != nil {
		return scheduler.Entry{}, fmt.Errorf("time: %w", err)
	}
	v := reflect.New(t).Elem()
	if err := d.value(v); err != nil {
		return scheduler.Entry{}, fmt.Errorf("%s event: %w", kb, err)
	}
	if d.off != len(b) {
		return scheduler.Entry{}, fmt.Errorf("%d bytes after the %s event", len(b)-d.off, kb)
	}
	return scheduler.Entry{At: at, Event: v.Interface().(scheduler.Event)}, nil
}

func (d *decoder) time(v reflect.Value) error {
	tb, err := d.bytes()
	if err != nil {
		return err
	}
	return v.Addr().Interface().(*time.Time).UnmarshalBinary(tb)
}

// value decodes into v (settable, zero).
func (d *decoder) value(v reflect.Value) error {
	ti := d.c.info(v.Type())
	if ti.form != formPlain && !v.CanInterface() {
		return fmt.Errorf("%w: %s in an unexported embedded field", errNoBinary, v.Type())
	}
	switch ti.form {
	case formTime:
		return d.time(v)
	case formJSON:
		data, err := d.bytes()
		if err != nil {
			return err
		}
		return v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(data)
	case formText:
		data, err := d.bytes()
		if err != nil {
			return err
		}
		return v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText(data)
	}
	switch ti.kind {
	case reflect.Bool:
		if d.off >= len(d.b) {
			return errShort
		}
		v.SetBool(d.b[d.off] != 0)
		d.off++
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x, n := binary.Varint(d.b[d.off:])
		if n <= 0 {
			return fmt.Errorf("bad varint at byte %d: %w", d.off, errShort)
		}
		d.off += n
		if v.OverflowInt(x) {
			return fmt.Errorf("%d overflows %s", x, v.Type())
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		x, err := d.uvarint()
		if err != nil {
			return err
		}
		if v.OverflowUint(x) {
			return fmt.Errorf("%d overflows %s", x, v.Type())
		}
		v.SetUint(x)
	case reflect.Float32, reflect.Float64:
		if len(d.b)-d.off < 8 {
			return errShort
		}
		v.SetFloat(math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.off:])))
		d.off += 8
	case reflect.String:
		s, err := d.bytes()
		if err != nil {
			return err
		}
		v.SetString(string(s))
	case reflect.Slice:
		return d.slice(v)
	case reflect.Array:
		for i := range v.Len() {
			if err := d.value(v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		return d.mapValue(v)
	case reflect.Pointer:
		if d.off >= len(d.b) {
			return errShort
		}
		d.off++
		if d.b[d.off-1] == 0 {
			return nil
		}
		p := reflect.New(v.Type().Elem())
		if err := d.value(p.Elem()); err != nil {
			return err
		}
		v.Set(p)
	case reflect.Struct:
		return d.structValue(ti, v)
	default:
		return fmt.Errorf("%w: %s", errNoBinary, v.Type())
	}
	return nil
}

func (d *decoder) count() (n int, isNil bool, err error) {
	x, err := d.uvarint()
	if err != nil {
		return 0, false, err
	}
	if x == 0 {
		return 0, true, nil
	}
	if x-1 > uint64(len(d.b)-d.off) { // every element takes a byte at least
		return 0, false, fmt.Errorf("%d elements at byte %d: %w", x-1, d.off, errShort)
	}
	return int(x - 1), false, nil
}

func (d *decoder) slice(v reflect.Value) error {
	n, isNil, err := d.count()
	if err != nil || isNil {
		return err
	}
	et := v.Type().Elem()
	if et.Kind() == reflect.Uint8 && d.c.info(et).form == formPlain {
		s := reflect.MakeSlice(v.Type(), n, n)
		reflect.Copy(s, reflect.ValueOf(d.b[d.off:d.off+n]))
		d.off += n
		v.Set(s)
		return nil
	}
	s := reflect.MakeSlice(v.Type(), n, n)
	for i := range n {
		if err := d.value(s.Index(i)); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

func (d *decoder) mapValue(v reflect.Value) error {
	n, isNil, err := d.count()
	if err != nil || isNil {
		return err
	}
	m := reflect.MakeMapWithSize(v.Type(), n)
	kt, vt := v.Type().Key(), v.Type().Elem()
	for range n {
		k, e := reflect.New(kt).Elem(), reflect.New(vt).Elem()
		if err := d.value(k); err != nil {
			return err
		}
		if err := d.value(e); err != nil {
			return err
		}
		m.SetMapIndex(k, e)
	}
	v.Set(m)
	return nil
}

func (d *decoder) structValue(ti *typeInfo, v reflect.Value) error {
	for {
		name, err := d.bytes()
		if err != nil {
			return err
		}
		if len(name) == 0 {
			return nil
		}
		data, err := d.bytes()
		if err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
		i, ok := ti.byName[string(name)]
		if !ok {
			continue // a field this version does not have, as JSON skips it
		}
		// Decode the field's bytes only: d reads data, then goes on after it.
		whole, next := d.b, d.off
		d.b, d.off = data, 0
		err = d.value(v.FieldByIndex(ti.fields[i].index))
		left := len(data) - d.off
		d.b, d.off = whole, next
		if err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
		if left != 0 {
			return fmt.Errorf("field %s: %d bytes left over", name, left)
		}
	}
}
