package gresdriver

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
)

// CheckSamples returns every contract violation of one batch of telemetry
// samples for inventory inv (the last discovery's): exactly one sample per
// device, in the inventory's index order, each valid
// (gres.DeviceSample.Validate), each naming its device by Index and by
// UUID when the inventory has one.
func CheckSamples(inv gres.Inventory, samples []gres.DeviceSample) error {
	var errs []error
	if len(samples) != len(inv.Devices) {
		errs = append(errs, fmt.Errorf("%d samples for %d devices", len(samples), len(inv.Devices)))
	}
	for k, s := range samples {
		if err := s.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("sample %d: %w", k, err))
		}
		if k >= len(inv.Devices) {
			errs = append(errs, fmt.Errorf("sample %d: device %d beyond the inventory's %d devices", k, s.Index, len(inv.Devices)))
			continue
		}
		d := inv.Devices[k]
		if s.Index != d.Index {
			errs = append(errs, fmt.Errorf("sample %d: device %d, want device %d (one sample per device, index order)", k, s.Index, d.Index))
		}
		if s.UUID != d.UUID {
			errs = append(errs, fmt.Errorf("sample %d: device %d has UUID %q, sample says %q", k, d.Index, d.UUID, s.UUID))
		}
	}
	return errors.Join(errs...)
}

// TestTelemetrySampler runs the gres.TelemetrySampler contract against s,
// whose samples cover d's inventory, as subtests: after a Discover, Sample
// returns a batch passing CheckSamples, twice in a row; an energy reading
// known in both batches does not decrease (it is monotonic between device
// resets, and the suite resets nothing); a canceled context fails with
// context.Canceled.
func TestTelemetrySampler(t *testing.T, d gres.Discoverer, s gres.TelemetrySampler) {
	t.Helper()
	ctx := context.Background()
	disc, err := d.Discover(ctx)
	require.NoError(t, err)
	inv := disc.Inventory
	var first []gres.DeviceSample
	t.Run("Valid", func(t *testing.T) {
		first, err = s.Sample(ctx)
		require.NoError(t, err)
		require.NoError(t, CheckSamples(inv, first))
	})
	t.Run("Repeated", func(t *testing.T) {
		if first == nil {
			first, err = s.Sample(ctx)
			require.NoError(t, err)
		}
		second, err := s.Sample(ctx)
		require.NoError(t, err)
		require.NoError(t, CheckSamples(inv, second))
		for k := range min(len(first), len(second)) {
			a, b := first[k].EnergyJoules, second[k].EnergyJoules
			if a != -1 && b != -1 {
				require.GreaterOrEqual(t, b, a, "device %d: energy decreased between samples", second[k].Index)
			}
		}
	})
	t.Run("Canceled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := s.Sample(cctx)
		require.ErrorIs(t, err, context.Canceled)
	})
}

// CheckProcesses returns every contract violation of one batch of
// per-process samples for inventory inv (the last discovery's), read
// after since: exactly one entry per device, in the inventory's index
// order, each valid (gres.DeviceProcesses.Validate), each naming its
// device by Index and by UUID when the inventory has one, and no process
// reading timed at or before since (a zero Time is not checked).
func CheckProcesses(inv gres.Inventory, since time.Time, batch []gres.DeviceProcesses) error {
	var errs []error
	if len(batch) != len(inv.Devices) {
		errs = append(errs, fmt.Errorf("%d process entries for %d devices", len(batch), len(inv.Devices)))
	}
	for k, p := range batch {
		if err := p.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("process entry %d: %w", k, err))
		}
		for _, q := range p.Processes {
			if !q.Time.IsZero() && !since.IsZero() && !q.Time.After(since) {
				errs = append(errs, fmt.Errorf("process entry %d: device %d: pid %d read at %v, not after since %v", k, p.Index, q.PID, q.Time, since))
			}
		}
		if k >= len(inv.Devices) {
			errs = append(errs, fmt.Errorf("process entry %d: device %d beyond the inventory's %d devices", k, p.Index, len(inv.Devices)))
			continue
		}
		d := inv.Devices[k]
		if p.Index != d.Index {
			errs = append(errs, fmt.Errorf("process entry %d: device %d, want device %d (one entry per device, index order)", k, p.Index, d.Index))
		}
		if p.UUID != d.UUID {
			errs = append(errs, fmt.Errorf("process entry %d: device %d has UUID %q, entry says %q", k, d.Index, d.UUID, p.UUID))
		}
	}
	return errors.Join(errs...)
}

// TestProcessSampler runs the gres.ProcessSampler contract against s,
// whose entries cover d's inventory, as subtests: after a Discover,
// SampleProcesses from the zero Time returns a batch passing
// CheckProcesses; from the newest reading of that batch, a batch passing
// CheckProcesses with that since (nothing read twice); a canceled context
// fails with context.Canceled.
func TestProcessSampler(t *testing.T, d gres.Discoverer, s gres.ProcessSampler) {
	t.Helper()
	ctx := context.Background()
	disc, err := d.Discover(ctx)
	require.NoError(t, err)
	inv := disc.Inventory
	var newest time.Time
	t.Run("All", func(t *testing.T) {
		batch, err := s.SampleProcesses(ctx, time.Time{})
		require.NoError(t, err)
		require.NoError(t, CheckProcesses(inv, time.Time{}, batch))
		for _, p := range batch {
			for _, q := range p.Processes {
				if q.Time.After(newest) {
					newest = q.Time
				}
			}
		}
	})
	t.Run("Since", func(t *testing.T) {
		batch, err := s.SampleProcesses(ctx, newest)
		require.NoError(t, err)
		require.NoError(t, CheckProcesses(inv, newest, batch))
	})
	t.Run("Canceled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := s.SampleProcesses(cctx, time.Time{})
		require.ErrorIs(t, err, context.Canceled)
	})
}
