// Package texttest checks the text and JSON contract of encoding types in
// tests: what a value encodes to decodes back to it, and an arbitrary
// input either fails to decode or decodes to a value whose encoding is
// stable. It is a test fixture shared by the packages' tests.
package texttest

import (
	"encoding"
	"encoding/json"
	"testing"
)

// Decoder is a pointer to T that decodes text.
type Decoder[T any] interface {
	*T
	encoding.TextUnmarshaler
}

// RoundTrip encodes v with MarshalText and with json.Marshal, decodes each
// into a fresh T and returns both results. It fails t when v does not
// encode or its encodings do not decode.
func RoundTrip[T any, P Decoder[T]](t testing.TB, v T) (fromText, fromJSON T) {
	t.Helper()
	m, ok := any(v).(encoding.TextMarshaler)
	if !ok {
		t.Fatalf("%T has no MarshalText", v)
	}
	b, err := m.MarshalText()
	if err != nil {
		t.Fatalf("%T %v: MarshalText: %v", v, v, err)
	}
	if err := P(&fromText).UnmarshalText(b); err != nil {
		t.Fatalf("%T: decoding %q: %v", v, b, err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%T %v: json.Marshal: %v", v, v, err)
	}
	if err := json.Unmarshal(j, &fromJSON); err != nil {
		t.Fatalf("%T: decoding %s: %v", v, j, err)
	}
	return fromText, fromJSON
}

// Values checks that each of vals comes back equal from its text and its
// JSON encoding.
func Values[T comparable, P Decoder[T]](t testing.TB, vals ...T) {
	t.Helper()
	for _, v := range vals {
		a, b := RoundTrip[T, P](t, v)
		if a != v || b != v {
			t.Errorf("%T %v: text gives %v, JSON %v", v, v, a, b)
		}
	}
}

// Fuzz checks the contract on an arbitrary input s: decoding fails, or
// gives a value that encodes, whose encoding decodes to a value encoding
// to the same bytes.
func Fuzz[T any, P Decoder[T]](t testing.TB, s string) {
	t.Helper()
	var v T
	if P(&v).UnmarshalText([]byte(s)) != nil {
		return
	}
	b, err := any(v).(encoding.TextMarshaler).MarshalText()
	if err != nil {
		t.Fatalf("%q decoded to %v, which does not encode: %v", s, v, err)
	}
	var w T
	if err := P(&w).UnmarshalText(b); err != nil {
		t.Fatalf("%q → %q does not decode: %v", s, b, err)
	}
	b2, err := any(w).(encoding.TextMarshaler).MarshalText()
	if err != nil || string(b2) != string(b) {
		t.Fatalf("%q → %q → %q (%v)", s, b, b2, err)
	}
}
