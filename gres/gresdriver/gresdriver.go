// Package gresdriver is a conformance suite for node drivers behind the
// gres driver interfaces (gres.Discoverer, gres.HealthWatcher,
// gres.TelemetrySampler, gres.ProcessSampler, gres.Enforcer). A driver
// for other hardware (AMD ROCm SMI, Intel Level Zero …) or another
// confinement mechanism runs it against itself from its own tests:
//
//	func TestConformance(t *testing.T) {
//		d := myDriver(t)                      // over a mock of the vendor library
//		gresdriver.TestDiscoverer(t, d)
//		gresdriver.TestHealthWatcher(t, d, d, gresdriver.HealthConfig{Inject: injectFault})
//		gresdriver.TestTelemetrySampler(t, d, d)
//	}
//
// Run takes a Driver (the seams one driver implements) and runs every
// applicable part of the suite, so all vendors' drivers are held to the
// same contracts by one call: gres/nvml over its go-nvml mocks, gres/intel
// (and gres/amd) over recorded sysfs trees, which they write from a Tree
// (a fixture machine's files and links as a Go value) into a temporary
// root.
//
// The suite checks the contracts documented on the interfaces: valid,
// deterministic inventories (unique increasing indices, symmetric links,
// consistent NUMA/PCIe levels, device files for every device), health
// events that name known devices and report changes once, telemetry
// samples and per-process samples that cover every device in index order
// with valid readings (per-process ones from after the time asked), and
// enforcement that is idempotent, validates its input, nests steps in
// jobs and releases cleanly. The Check* functions are the same checks as
// plain functions returning errors, for use outside `go test`.
//
// This package imports testing and testify; import it only from tests.
package gresdriver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
)

// CheckDiscovery returns every contract violation of one Discovery,
// joined (nil when there is none): the inventory validates and
// NewNodeDevices accepts it; indices are unique and increasing; the link
// matrix is symmetric with an empty diagonal; Files has one entry per
// device (when set) and every file, common files included, is valid;
// FilesFor of each device yields its files plus the common files.
func CheckDiscovery(disc gres.Discovery) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	inv := disc.Inventory
	if err := disc.Validate(); err != nil {
		bad("Validate: %w", err)
	}
	if _, err := gres.NewNodeDevices(inv); err != nil {
		bad("NewNodeDevices: %w", err)
	}
	seen := map[int]bool{}
	for i, d := range inv.Devices {
		if seen[d.Index] {
			bad("device %d: index repeated", d.Index)
		}
		seen[d.Index] = true
		if i > 0 && d.Index <= inv.Devices[i-1].Index {
			bad("device %d: index not increasing (after %d)", d.Index, inv.Devices[i-1].Index)
		}
		if d.Name == "" {
			bad("device %d: empty name", d.Index)
		}
	}
	if inv.Links != nil {
		n := len(inv.Devices)
		if len(inv.Links) != n {
			bad("link matrix has %d rows for %d devices", len(inv.Links), n)
		} else {
			for i := range n {
				if len(inv.Links[i]) != n {
					bad("link row %d has %d entries for %d devices", i, len(inv.Links[i]), n)
					continue
				}
				if inv.Links[i][i] != (gres.Link{}) {
					bad("device %d: link to itself %+v", inv.Devices[i].Index, inv.Links[i][i])
				}
				for j := range i {
					if len(inv.Links[j]) == n && inv.Links[i][j] != inv.Links[j][i] {
						bad("devices %d and %d: asymmetric links %+v / %+v", inv.Devices[i].Index, inv.Devices[j].Index, inv.Links[i][j], inv.Links[j][i])
					}
				}
			}
		}
	}
	if disc.Files != nil && len(disc.Files) != len(inv.Devices) {
		bad("%d device file lists for %d devices", len(disc.Files), len(inv.Devices))
	}
	for i, fs := range disc.Files {
		if i >= len(inv.Devices) {
			break
		}
		if len(fs) == 0 {
			bad("device %d: no device files", inv.Devices[i].Index)
		}
		got, err := disc.FilesFor([]int{inv.Devices[i].Index})
		if err != nil {
			bad("FilesFor(%d): %w", inv.Devices[i].Index, err)
			continue
		}
		for _, f := range append(slices.Clone(fs), disc.CommonFiles...) {
			if !slices.Contains(got, f) {
				bad("FilesFor(%d) lacks %v", inv.Devices[i].Index, f)
			}
		}
	}
	return errors.Join(errs...)
}

// CheckHealthEvents returns every contract violation of one batch of
// health events for inventory inv: each event names a device of inv (by
// Index, with its UUID when the inventory has one), an unhealthy event has
// a reason, no device appears twice and events are sorted by index.
func CheckHealthEvents(inv gres.Inventory, evs []gres.HealthEvent) error {
	var errs []error
	for k, ev := range evs {
		p, ok := slices.BinarySearchFunc(inv.Devices, ev.Index, func(d gres.Device, i int) int { return cmp.Compare(d.Index, i) })
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("event %d: unknown device %d", k, ev.Index))
		case inv.Devices[p].UUID != "" && ev.UUID != inv.Devices[p].UUID:
			errs = append(errs, fmt.Errorf("event %d: device %d has UUID %q, event says %q", k, ev.Index, inv.Devices[p].UUID, ev.UUID))
		}
		if !ev.Healthy && ev.Reason == "" {
			errs = append(errs, fmt.Errorf("event %d: device %d unhealthy without a reason", k, ev.Index))
		}
		if k > 0 && ev.Index <= evs[k-1].Index {
			errs = append(errs, fmt.Errorf("event %d: device %d not after device %d (want sorted, one event per device)", k, ev.Index, evs[k-1].Index))
		}
	}
	return errors.Join(errs...)
}

// TestDiscoverer runs the gres.Discoverer contract against d as subtests:
// Discover succeeds and passes CheckDiscovery; a second Discover returns
// the same inventory and files; the result is the caller's (changing it
// does not change the next one); a canceled context fails with
// context.Canceled.
func TestDiscoverer(t *testing.T, d gres.Discoverer) {
	t.Helper()
	ctx := context.Background()
	var first gres.Discovery
	t.Run("Valid", func(t *testing.T) {
		var err error
		first, err = d.Discover(ctx)
		require.NoError(t, err)
		require.NoError(t, CheckDiscovery(first))
	})
	t.Run("Deterministic", func(t *testing.T) {
		a, err := d.Discover(ctx)
		require.NoError(t, err)
		b, err := d.Discover(ctx)
		require.NoError(t, err)
		assert.Equal(t, a.Inventory, b.Inventory)
		assert.Equal(t, a.Files, b.Files)
		assert.Equal(t, a.CommonFiles, b.CommonFiles)
	})
	t.Run("ResultIsACopy", func(t *testing.T) {
		a, err := d.Discover(ctx)
		require.NoError(t, err)
		if len(a.Inventory.Devices) == 0 {
			t.Skip("no devices")
		}
		want := a.Inventory.Devices[0]
		a.Inventory.Devices[0].Name = "changed"
		if a.Files != nil && len(a.Files[0]) > 0 {
			a.Files[0][0].Minor++
		}
		b, err := d.Discover(ctx)
		require.NoError(t, err)
		assert.Equal(t, want, b.Inventory.Devices[0])
		if b.Files != nil && len(b.Files[0]) > 0 {
			assert.NotEqual(t, a.Files[0][0].Minor, b.Files[0][0].Minor)
		}
	})
	t.Run("Canceled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := d.Discover(cctx)
		require.ErrorIs(t, err, context.Canceled)
	})
}

// HealthConfig configures TestHealthWatcher.
type HealthConfig struct {
	// Inject makes the driver observe a fault of device index (e.g.
	// queues an XID in a mock). Nil skips the fault checks.
	Inject func(index int) error
	// Timeout is the timeout of each poll; 0 means 10ms.
	Timeout time.Duration
	// MaxPolls bounds the polls an injected fault may take to show; 0
	// means 50.
	MaxPolls int
}

// TestHealthWatcher runs the gres.HealthWatcher contract against w, whose
// events name devices of d's inventory, as subtests: quiet polls return
// valid batches (CheckHealthEvents); an injected fault of the first and
// of the last device is reported unhealthy, with a reason, within
// MaxPolls polls, and not reported again while nothing changes; a
// canceled context fails with context.Canceled.
func TestHealthWatcher(t *testing.T, d gres.Discoverer, w gres.HealthWatcher, cfg HealthConfig) {
	t.Helper()
	ctx := context.Background()
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Millisecond
	}
	if cfg.MaxPolls <= 0 {
		cfg.MaxPolls = 50
	}
	disc, err := d.Discover(ctx)
	require.NoError(t, err)
	inv := disc.Inventory
	pollValid := func(t *testing.T) []gres.HealthEvent {
		t.Helper()
		evs, err := w.PollHealth(ctx, cfg.Timeout)
		require.NoError(t, err)
		require.NoError(t, CheckHealthEvents(inv, evs))
		return evs
	}
	t.Run("Quiet", func(t *testing.T) {
		for range 3 {
			pollValid(t)
		}
	})
	t.Run("Fault", func(t *testing.T) {
		if cfg.Inject == nil {
			t.Skip("no fault injector")
		}
		if len(inv.Devices) == 0 {
			t.Skip("no devices")
		}
		targets := []int{inv.Devices[0].Index}
		if last := inv.Devices[len(inv.Devices)-1].Index; last != targets[0] {
			targets = append(targets, last)
		}
		for _, idx := range targets {
			require.NoError(t, cfg.Inject(idx))
			found := false
			for range cfg.MaxPolls {
				for _, ev := range pollValid(t) {
					if ev.Index == idx && !ev.Healthy {
						found = true
					}
				}
				if found {
					break
				}
			}
			require.True(t, found, "no unhealthy event for device %d within %d polls", idx, cfg.MaxPolls)
			for range 2 {
				for _, ev := range pollValid(t) {
					assert.False(t, ev.Index == idx && !ev.Healthy, "device %d reported unhealthy twice without a change", idx)
				}
			}
		}
	})
	t.Run("Canceled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := w.PollHealth(cctx, time.Hour)
		require.ErrorIs(t, err, context.Canceled)
	})
}

// EnforcerConfig configures TestEnforcer.
type EnforcerConfig struct {
	// JobPrefix prefixes the job ids the suite uses; "" means "gresdriver-".
	JobPrefix string
	// CPUs, Mems and MemoryBytes are what the suite's allocations hold;
	// they must be valid on the machine under test. Zero values mean CPU
	// 0, NUMA node 0 and 64 MiB.
	CPUs        gres.CoreSet
	Mems        []int
	MemoryBytes int64
	// Devices are device files the allocations may list (the suite uses
	// all of them, then a subset); may be empty.
	Devices []gres.DeviceFile
	// Check, when set, verifies that a is in force (reads cgroup files,
	// inspects a fake …).
	Check func(t *testing.T, a gres.Allocation)
	// CheckReleased, when set, verifies that job (with all its steps when
	// step is "") or one step no longer has any confinement.
	CheckReleased func(t *testing.T, job, step string)
}

// TestEnforcer runs the gres.Enforcer contract against e as subtests:
// Apply, re-Apply (idempotent) and update of a job; steps nested in their
// job, a step before its job failing with gres.ErrJobNotApplied; Release
// of a step, of a job with its steps, and of something absent (no error);
// invalid jobs, steps and allocations failing with
// gres.ErrInvalidAllocation and leaving nothing behind; canceled contexts
// failing with context.Canceled; concurrent use on different jobs.
func TestEnforcer(t *testing.T, e gres.Enforcer, cfg EnforcerConfig) {
	t.Helper()
	if cfg.JobPrefix == "" {
		cfg.JobPrefix = "gresdriver-"
	}
	if cfg.CPUs.IsEmpty() {
		cfg.CPUs, _ = gres.CoreSetOf(0)
	}
	if cfg.Mems == nil {
		cfg.Mems = []int{0}
	}
	if cfg.MemoryBytes == 0 {
		cfg.MemoryBytes = 64 << 20
	}
	ctx := context.Background()
	alloc := func(job, step string) gres.Allocation {
		return gres.Allocation{Job: cfg.JobPrefix + job, Step: step, CPUs: cfg.CPUs, Mems: slices.Clone(cfg.Mems),
			MemoryBytes: cfg.MemoryBytes, Devices: slices.Clone(cfg.Devices)}
	}
	check := func(t *testing.T, a gres.Allocation) {
		t.Helper()
		if cfg.Check != nil {
			cfg.Check(t, a)
		}
	}
	released := func(t *testing.T, job, step string) {
		t.Helper()
		if cfg.CheckReleased != nil {
			cfg.CheckReleased(t, job, step)
		}
	}
	t.Run("ApplyUpdateRelease", func(t *testing.T) {
		a := alloc("1", "")
		require.NoError(t, e.Apply(ctx, a))
		check(t, a)
		require.NoError(t, e.Apply(ctx, a), "re-Apply of the same allocation")
		check(t, a)
		b := a
		b.MemoryBytes = a.MemoryBytes / 2
		if len(a.Devices) > 1 {
			b.Devices = a.Devices[:1]
		}
		require.NoError(t, e.Apply(ctx, b), "update")
		check(t, b)
		require.NoError(t, e.Release(ctx, a.Job, ""))
		released(t, a.Job, "")
		require.NoError(t, e.Release(ctx, a.Job, ""), "second Release")
		require.NoError(t, e.Release(ctx, cfg.JobPrefix+"never-applied", ""))
		require.NoError(t, e.Release(ctx, cfg.JobPrefix+"never-applied", "0"))
	})
	t.Run("Steps", func(t *testing.T) {
		job := alloc("2", "")
		require.ErrorIs(t, e.Apply(ctx, alloc("2", "0")), gres.ErrJobNotApplied)
		released(t, job.Job, "")
		require.NoError(t, e.Apply(ctx, job))
		s0, sb := alloc("2", "0"), alloc("2", "batch")
		s0.MemoryBytes /= 2
		require.NoError(t, e.Apply(ctx, s0))
		require.NoError(t, e.Apply(ctx, sb))
		require.NoError(t, e.Apply(ctx, s0))
		check(t, job)
		check(t, s0)
		check(t, sb)
		require.NoError(t, e.Release(ctx, job.Job, "0"))
		released(t, job.Job, "0")
		check(t, job)
		check(t, sb)
		require.NoError(t, e.Release(ctx, job.Job, "0"))
		require.NoError(t, e.Release(ctx, job.Job, ""))
		released(t, job.Job, "batch")
		released(t, job.Job, "")
	})
	t.Run("Invalid", func(t *testing.T) {
		badAllocs := map[string]gres.Allocation{}
		for _, j := range []string{"", ".", "..", "a/b", "../x", "x y", "job\x00", strings.Repeat("a", 65)} {
			a := alloc("", "")
			a.Job = j
			badAllocs["job "+fmt.Sprintf("%q", j)] = a
		}
		for _, s := range []string{".", "..", "a/b", "s p"} {
			badAllocs["step "+fmt.Sprintf("%q", s)] = alloc("3", s)
		}
		neg := alloc("3", "")
		neg.MemoryBytes = -1
		badAllocs["negative memory"] = neg
		numa := alloc("3", "")
		numa.Mems = []int{-1}
		badAllocs["bad NUMA"] = numa
		dev := alloc("3", "")
		dev.Devices = append(dev.Devices, gres.DeviceFile{Path: "relative", Kind: gres.CharDevice, Major: 1, Minor: 3})
		badAllocs["bad device file"] = dev
		for name, a := range badAllocs {
			err := e.Apply(ctx, a)
			require.ErrorIs(t, err, gres.ErrInvalidAllocation, name)
		}
		released(t, cfg.JobPrefix+"3", "")
		for _, j := range []string{"", "..", "a/b"} {
			require.ErrorIs(t, e.Release(ctx, j, ""), gres.ErrInvalidAllocation, "Release job %q", j)
		}
		require.ErrorIs(t, e.Release(ctx, cfg.JobPrefix+"3", "../x"), gres.ErrInvalidAllocation)
	})
	t.Run("Canceled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		require.ErrorIs(t, e.Apply(cctx, alloc("4", "")), context.Canceled)
		released(t, cfg.JobPrefix+"4", "")
		require.ErrorIs(t, e.Release(cctx, cfg.JobPrefix+"4", ""), context.Canceled)
	})
	t.Run("Concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 4 {
			wg.Go(func() {
				a := alloc(fmt.Sprintf("c%d", i), "")
				if err := e.Apply(ctx, a); err != nil {
					errs <- err
					return
				}
				s := alloc(fmt.Sprintf("c%d", i), "0")
				if err := e.Apply(ctx, s); err != nil {
					errs <- err
				}
				if err := e.Release(ctx, a.Job, ""); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		for i := range 4 {
			released(t, fmt.Sprintf("%sc%d", cfg.JobPrefix, i), "")
		}
	})
}
