package journal_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/journal"
)

// TestCodecRoundTrip checks the exported codec: both encodings give back
// the entry that was encoded, the binary one exactly (a sub-second time
// limit, which JobSpec's JSON rounds to Slurm's whole seconds, survives),
// and DecodeEntry reads either whatever its own encoding.
func TestCodecRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	ev := scheduler.SubmitEvent{Spec: scheduler.JobSpec{User: "ann", Account: "a", Tasks: 2, CPUsPerTask: 3,
		TimeLimit: time.Hour + 1500*time.Millisecond}}
	bin, err := journal.NewCodec(journal.EncodingBinary)
	if err != nil {
		t.Fatal(err)
	}
	js, err := journal.NewCodec(journal.EncodingJSON)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bin.AppendEntry([]byte("prefix"), scheduler.Entry{At: at, Event: ev})
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:6]) != "prefix" {
		t.Fatalf("AppendEntry did not append: %q", b[:6])
	}
	for _, c := range []*journal.Codec{bin, js} {
		e, err := c.DecodeEntry(b[6:])
		if err != nil {
			t.Fatal(err)
		}
		if !e.At.Equal(at) || !reflect.DeepEqual(e.Event, ev) {
			t.Errorf("binary entry decoded as %v %+v, want %v %+v", e.At, e.Event, at, ev)
		}
	}
	j, err := js.AppendEntry(nil, scheduler.Entry{At: at, Event: scheduler.CancelEvent{Job: 7}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := bin.DecodeEntry(j)
	if err != nil || e.Event != (scheduler.CancelEvent{Job: 7}) {
		t.Errorf("JSON entry decoded by the binary codec as %+v, %v", e, err)
	}
}

// TestCodecRefuses checks the codec's errors: an unknown encoding, an
// entry without an event, a payload that does not decode.
func TestCodecRefuses(t *testing.T) {
	if _, err := journal.NewCodec(journal.Encoding(9)); !errors.Is(err, journal.ErrInvalidOptions) {
		t.Errorf("NewCodec(9): %v, want ErrInvalidOptions", err)
	}
	c, err := journal.NewCodec(journal.EncodingBinary)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := c.AppendEntry([]byte("x"), scheduler.Entry{}); !errors.Is(err, scheduler.ErrInvalidEvent) || string(b) != "x" {
		t.Errorf("entry without an event: %q, %v; want ErrInvalidEvent and b unchanged", b, err)
	}
	for _, bad := range [][]byte{nil, []byte("Q"), []byte("B\x05sub"), []byte("J{")} {
		if _, err := c.DecodeEntry(bad); err == nil {
			t.Errorf("DecodeEntry(%q) succeeded", bad)
		}
	}
}
