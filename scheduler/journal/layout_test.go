package journal_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/journal"
)

// TestCodecLayoutFields: the layout request fields of a submission
// (--distribution, --hint, --exclusive=user) and a node's layout
// (Boards, Sockets, CoresPerSocket, ThreadsPerCore) survive both
// encodings.
func TestCodecLayoutFields(t *testing.T) {
	d, err := scheduler.ParseDistribution("plane=2:fcyclic:block,Pack")
	if err != nil {
		t.Fatal(err)
	}
	ev := scheduler.SubmitEvent{Spec: scheduler.JobSpec{User: "ann", Tasks: 4, Distribution: d,
		Hint: scheduler.HintNoMultithread, ExclusiveUser: true, TimeLimit: time.Hour}}
	add := scheduler.AddNodeEvent{Node: scheduler.NodeConfig{Name: "n9", CPUs: 64, Boards: 2, Sockets: 2, CoresPerSocket: 8, ThreadsPerCore: 2}}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, enc := range []journal.Encoding{journal.EncodingBinary, journal.EncodingJSON} {
		c, err := journal.NewCodec(enc)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []scheduler.Event{ev, add} {
			b, err := c.AppendEntry(nil, scheduler.Entry{At: at, Event: want})
			if err != nil {
				t.Fatal(err)
			}
			e, err := c.DecodeEntry(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(e.Event, want) {
				t.Errorf("encoding %v: decoded %+v, want %+v", enc, e.Event, want)
			}
		}
	}
}
