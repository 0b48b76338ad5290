package intel_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/gres/gresdriver"
	"github.com/sluicehq/sluice/gres/intel"
	"github.com/sluicehq/sluice/gres/intel/inteltest"
)

// benchDriver opens a driver on the 8 × Max 1550 fixture (16 tiles).
func benchDriver(b *testing.B) *intel.Driver {
	b.Helper()
	d, err := intel.Open(intel.Options{Root: gresdriver.WriteTree(b, inteltest.Max1550Node().Tree())})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := d.Discover(context.Background()); err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkDiscover is one full discovery of the Max 1550 node from sysfs
// (on tmpfs-like temp storage: the cost of the file reads and the
// inventory).
func BenchmarkDiscover(b *testing.B) {
	d := benchDriver(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := d.Discover(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSample is one telemetry sample of the 16 tiles.
func BenchmarkSample(b *testing.B) {
	d := benchDriver(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := d.Sample(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPollHealth is one health check of the 16 tiles (80 error
// counter files), a PollHealth with no wait.
func BenchmarkPollHealth(b *testing.B) {
	d := benchDriver(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := d.PollHealth(ctx, 0); err != nil {
			b.Fatal(err)
		}
	}
}
