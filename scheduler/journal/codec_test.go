package journal

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/telemetry"
)

// eventKinds returns every EventKind constant the scheduler package
// declares (read from its source, so that an event type added later is
// covered without a change here).
func eventKinds(t *testing.T) []scheduler.EventKind {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("..", "*.go"))
	require.NoError(t, err)
	var kinds []scheduler.EventKind
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || vs.Type == nil || fmt.Sprint(vs.Type) != "EventKind" {
				return true
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					k, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					kinds = append(kinds, scheduler.EventKind(k))
				}
			}
			return true
		})
	}
	require.GreaterOrEqual(t, len(kinds), 13, "the scheduler's event kinds")
	return kinds
}

// Every event type, filled with random values in every exported field,
// decodes from the binary form to the same JSON as it encodes to, and
// none needs the JSON fallback. (A value JSON itself refuses, such as an
// enum out of range, is skipped.)
func TestCodecRandomEventsMatchJSON(t *testing.T) {
	c := newCodec()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range eventKinds(t) {
		typ, err := c.eventType(k)
		require.NoError(t, err, "kind %q", k)
		checked := 0
		for round := range 300 {
			v := reflect.New(typ).Elem()
			fill(rng, v, 0)
			ev := v.Interface().(scheduler.Event)
			at := time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC()
			want, err := json.Marshal(scheduler.Entry{At: at, Event: ev})
			if err != nil {
				continue
			}
			b, err := c.appendEntry(nil, at, ev)
			require.NoError(t, err, "round %d: %#v", round, ev)
			e, err := c.decodeEntry(b)
			require.NoError(t, err, "round %d: %#v", round, ev)
			got, err := json.Marshal(e)
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(got))
			require.Less(t, len(b), len(want)+16)
			checked++
		}
		require.Greater(t, checked, 30, "kind %q: random values JSON accepts", k)
	}
}

// fill sets v to random values (exported fields only, as JSON does).
func fill(rng *rand.Rand, v reflect.Value, depth int) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		if rng.IntN(3) > 0 {
			zone := time.FixedZone("", 60*(rng.IntN(24*60)-12*60))
			v.Set(reflect.ValueOf(time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(zone)))
		}
		return
	}
	if rng.IntN(4) == 0 && depth > 0 {
		return // leave some zero
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := v.Type().Bits()
		v.SetInt(rng.Int64() >> (64 - bits + rng.IntN(bits)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		bits := v.Type().Bits()
		v.SetUint(rng.Uint64() >> (64 - bits + rng.IntN(bits)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(float32(rng.NormFloat64() * 1e3)))
	case reflect.String:
		const letters = "abcxyz019-_:,=é\n\"\\"
		r := []rune(letters)
		n := rng.IntN(12)
		s := make([]rune, n)
		for i := range s {
			s[i] = r[rng.IntN(len(r))]
		}
		v.SetString(string(s))
	case reflect.Slice:
		if depth > 4 {
			return
		}
		n := rng.IntN(4)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(rng, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(rng, v.Index(i), depth+1)
		}
	case reflect.Map:
		if depth > 4 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for range rng.IntN(4) {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(rng, k, depth+1)
			fill(rng, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Pointer:
		if depth > 4 {
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(rng, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(rng, v.Field(i), depth+1)
			}
		}
	}
}

// Decoding arbitrary bytes never panics: it decodes or fails.
func FuzzCodecDecodeEntry(f *testing.F) {
	c := newCodec()
	for _, ev := range []scheduler.Event{
		scheduler.SubmitEvent{Spec: scheduler.JobSpec{User: "ann", Tasks: 2, CPUsPerTask: 4, TimeLimit: time.Hour}, Array: "0-3"},
		scheduler.FinishEvent{Job: 7, ExitCode: 1},
		scheduler.DeviceHealthEvent{Node: "n1", Index: 3, Reason: "xid"},
		scheduler.ScheduleEvent{},
		scheduler.TelemetryEvent{Node: "n1", Devices: []gres.DeviceSample{{Index: 1, Utilization: 50, MemoryUsedMiB: -1, PowerWatts: 300, EnergyJoules: -1}},
			Jobs: []scheduler.JobReading{{Job: 3, CPUSeconds: -1, MemoryPeakBytes: 1 << 30, GPUs: []scheduler.JobGPUReading{{Index: 1, Utilization: 25}}}}},
		scheduler.UpdateTelemetryEvent{Config: scheduler.TelemetryConfig{Rule: telemetry.Rule{IdleBelow: 5, IdleAfter: time.Minute},
			Action: scheduler.IdleCancel, Grace: time.Second}},
	} {
		b, err := c.appendEntry(nil, time.Unix(1e9, 5), ev)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := c.decodeEntry(b)
		if err != nil {
			return
		}
		out, err := c.appendEntry(nil, e.At, e.Event)
		if err != nil {
			return // a value the decoder took but JSON-like rules refuse (an invalid time)
		}
		e2, err := c.decodeEntry(out)
		require.NoError(t, err)
		again, err := c.appendEntry(nil, e2.At, e2.Event)
		require.NoError(t, err)
		require.Equal(t, out, again, "what decodes encodes back the same")
	})
}

type textID int

func (t textID) MarshalText() ([]byte, error) { return []byte("id-" + string(rune('a'+int(t)))), nil }
func (t *textID) UnmarshalText(b []byte) error {
	*t = textID(b[3] - 'a')
	return nil
}

type inner struct{ A, B int }

// opaque hides its state: it is stored in its text form.
type opaque struct{ v int }

func (o opaque) MarshalText() ([]byte, error) { return []byte{byte('a' + o.v)}, nil }
func (o *opaque) UnmarshalText(b []byte) error {
	o.v = int(b[0] - 'a')
	return nil
}

type kitchenSink struct {
	inner
	Named    string `json:"renamed"`
	Skipped  int    `json:"-"`
	hidden   int
	Ptr      *inner
	NilPtr   *inner
	Empty    []int
	Nil      []int
	Bytes    []byte
	Map      map[string][]float64
	IntMap   map[int]bool
	Arr      [3]uint8
	When     time.Time
	ID       textID
	IDs      []textID
	Raw      json.RawMessage
	Duration time.Duration
	Opaque   opaque
	Opaques  map[opaque]opaque
}

// Values of every kind the binary form handles — embedded structs, tags,
// nil and empty slices, maps, arrays, pointers, types with a text or JSON
// form of their own — decode to exactly what was encoded (JSON, by the
// json:"-" field, would lose some), and maps encode deterministically.
func TestCodecValueRoundTrip(t *testing.T) {
	in := kitchenSink{
		inner: inner{A: 1}, Named: "n", Skipped: 9, hidden: 7, Ptr: &inner{B: -2}, Empty: []int{},
		Bytes: []byte{0, 1, 255}, Map: map[string][]float64{"x": {1.5}, "y": nil, "z": {}, "w": {-0.25, 3}},
		IntMap: map[int]bool{3: true, -1: false}, Arr: [3]uint8{1, 0, 200},
		When: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("", -7*3600)), ID: 2, IDs: []textID{0, 1},
		Raw: json.RawMessage(`{"k":[1,2]}`), Duration: 90 * time.Second,
		Opaque: opaque{v: 3}, Opaques: map[opaque]opaque{{v: 1}: {v: 2}, {}: {v: 4}},
	}
	c := newCodec()
	b, err := c.appendValue(nil, reflect.ValueOf(in))
	require.NoError(t, err)
	for range 20 {
		again, err := c.appendValue(nil, reflect.ValueOf(in))
		require.NoError(t, err)
		require.Equal(t, b, again, "maps encode in one order")
	}
	var out kitchenSink
	d := &decoder{c: c, b: b}
	require.NoError(t, d.value(reflect.ValueOf(&out).Elem()))
	require.Equal(t, len(b), d.off)
	want := in
	want.hidden = 0 // unexported: not stored, as JSON does not
	require.Equal(t, want, out)
	require.NotNil(t, out.Empty)
	require.Nil(t, out.Nil)
	require.Equal(t, 9, out.Skipped)

	// Every truncation of the encoding fails cleanly.
	for n := range len(b) {
		var x kitchenSink
		d := &decoder{c: c, b: b[:n]}
		require.Error(t, d.value(reflect.ValueOf(&x).Elem()), "cut at %d", n)
	}
}
