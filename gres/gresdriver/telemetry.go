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
	return checkPerDevice(inv, samples, "sample", "samples", func(s gres.DeviceSample) (int, string, []error) {
		if err := s.Validate(); err != nil {
			return s.Index, s.UUID, []error{err}
		}
		return s.Index, s.UUID, nil
	})
}

// checkPerDevice returns the violations of a batch of per-device entries
// for inventory inv that CheckSamples and CheckProcesses share: exactly
// one entry per device, in the inventory's index order, each naming its
// device by Index and by UUID when the inventory has one. entry gives an
// entry's Index, UUID and its own violations (validity …), reported
// first. one names an entry in the errors ("sample"), many several.
func checkPerDevice[E any](inv gres.Inventory, batch []E, one, many string, entry func(E) (index int, uuid string, errs []error)) error {
	var errs []error
	if len(batch) != len(inv.Devices) {
		errs = append(errs, fmt.Errorf("%d %s for %d devices", len(batch), many, len(inv.Devices)))
	}
	for k, e := range batch {
		index, uuid, own := entry(e)
		for _, err := range own {
			errs = append(errs, fmt.Errorf("%s %d: %w", one, k, err))
		}
		if k >= len(inv.Devices) {
			errs = append(errs, fmt.Errorf("%s %d: device %d beyond the inventory's %d devices", one, k, index, len(inv.Devices)))
			continue
		}
		d := inv.Devices[k]
		if index != d.Index {
			errs = append(errs, fmt.Errorf("%s %d: device %d, want device %d (one %s per device, index order)", one, k, index, d.Index, one))
		}
		if uuid != d.UUID {
			errs = append(errs, fmt.Errorf("%s %d: device %d has UUID %q, %s says %q", one, k, d.Index, d.UUID, one, uuid))
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
	return checkPerDevice(inv, batch, "process entry", "process entries", func(p gres.DeviceProcesses) (int, string, []error) {
		var errs []error
		if err := p.Validate(); err != nil {
			errs = append(errs, err)
		}
		for _, q := range p.Processes {
			if !q.Time.IsZero() && !since.IsZero() && !q.Time.After(since) {
				errs = append(errs, fmt.Errorf("device %d: pid %d read at %v, not after since %v", p.Index, q.PID, q.Time, since))
			}
		}
		return p.Index, p.UUID, errs
	})
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
