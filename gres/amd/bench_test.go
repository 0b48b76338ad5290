package amd_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/gres/amd/amdtest"
)

// BenchmarkDiscoverMI300XHive is one full discovery of the 8× MI300X
// fixture (KFD topology, 64 io_links, PCI attributes, CPU sockets) from a
// sysfs tree on disk.
func BenchmarkDiscoverMI300XHive(b *testing.B) {
	d, _ := fixture(b, amdtest.MI300XHive())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Discover(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPollHealthMI300XHive is one quiet health sweep (RAS counters
// of 8 GPUs) on the same fixture.
func BenchmarkPollHealthMI300XHive(b *testing.B) {
	d, _ := fixture(b, amdtest.MI300XHive())
	ctx := context.Background()
	if _, err := d.PollHealth(ctx, 0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.PollHealth(ctx, 0); err != nil {
			b.Fatal(err)
		}
	}
}
