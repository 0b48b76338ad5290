package journal_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/journal"
)

// TestCodecKeepsDeviceSharing: a node event's device shares, MIG
// instances and NVLink fabric survive both journal encodings.
func TestCodecKeepsDeviceSharing(t *testing.T) {
	inv := gres.Inventory{Devices: []gres.Device{
		{Index: 0, Name: "gpu", Type: "h100", NUMA: -1, Socket: -1},
		{Index: 8, Name: "gpu", Type: "h100_1g.10gb", UUID: "MIG-1", NUMA: -1, Socket: -1},
	}, Shares: []gres.DeviceShares{{Device: 0, Shards: 4, MPS: 100}},
		MIG:    []gres.MIGInstance{{Device: 8, Parent: 1, ParentUUID: "GPU-1", Profile: "1g.10gb", GPUInstance: 9}},
		Fabric: gres.NVLinkFabric{ClusterUUID: "abcd0000-0000-0000-0000-000000000001", CliqueID: 3}}
	ev := scheduler.AddNodeEvent{Node: scheduler.NodeConfig{Name: "n9", CPUs: 8, MemoryMiB: 1024, Devices: inv}}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, enc := range []journal.Encoding{journal.EncodingBinary, journal.EncodingJSON} {
		c, err := journal.NewCodec(enc)
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.AppendEntry(nil, scheduler.Entry{At: at, Event: ev})
		if err != nil {
			t.Fatal(err)
		}
		e, err := c.DecodeEntry(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(e.Event, ev) {
			t.Errorf("encoding %v: decoded %+v, want %+v", enc, e.Event, ev)
		}
	}
}
