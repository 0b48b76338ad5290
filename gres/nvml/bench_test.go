//go:build cgo

package nvml

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/gres/nvml/nvmltest"
)

// BenchmarkDiscoverDGXH100 is one full discovery of a mocked DGX H100
// (8 GPUs × 36 NVLink probes, 28 topology and P2P pairs, sysfs reads);
// the mock's own call recording is included.
func BenchmarkDiscoverDGXH100(b *testing.B) {
	srv := nvmltest.DGXH100()
	dir := b.TempDir()
	if err := srv.WriteSysfs(dir); err != nil {
		b.Fatal(err)
	}
	d, err := New(srv, Options{SysfsRoot: dir, ProcRoot: dir})
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Init(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Discover(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPollHealthQuiet is one quiet health poll (sweep of 8 GPUs and
// an empty event wait) on a mocked DGX H100.
func BenchmarkPollHealthQuiet(b *testing.B) {
	srv := nvmltest.DGXH100()
	d, err := New(srv, Options{SysfsRoot: b.TempDir(), ProcRoot: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Init(); err != nil {
		b.Fatal(err)
	}
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
