//go:build cgo

package nvml

import (
	"context"
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/internal/driverkit"
)

var _ gres.TelemetrySampler = (*Driver)(nil)

// Sample reads every device of the last Discover (discovering first when
// there has been none) and returns one gres.DeviceSample per device, in
// index order:
//
//   - a whole GPU: Utilization is the mean of the GPU utilisation samples
//     NVML buffered since the previous Sample (DeviceGetSamples with
//     GPU_UTILIZATION_SAMPLES; on the first Sample, of every sample the
//     buffer still holds), and where the GPU keeps no such buffer or took
//     no sample since, DeviceGetUtilizationRates (the percentage of the
//     driver's last sample period, 1/6 s to 1 s, a kernel ran):
//     SampleWindows says which; MemoryUsedMiB from DeviceGetMemoryInfo,
//     PowerWatts from DeviceGetPowerUsage (mW) and EnergyJoules from
//     DeviceGetTotalEnergyConsumption (mJ since the driver was loaded,
//     cumulative: the caller takes differences);
//   - a MIG slice: MemoryUsedMiB from its own DeviceGetMemoryInfo; the
//     other readings are -1, because NVML reports utilisation, power and
//     energy only for the physical GPU (it answers NOT_SUPPORTED for MIG
//     handles), and splitting the parent's among its slices would be a
//     guess.
//
// A reading the device does not support (ERROR_NOT_SUPPORTED), or of a
// GPU that has fallen off the bus (ERROR_GPU_IS_LOST: the HealthWatcher
// reports that), is -1. Any other NVML failure fails the call with an
// error naming the device and wrapping the go-nvml Return.
//
// Calls to Sample and SampleWindows are serialised: each one's interval
// starts where the previous one's ended.
func (d *Driver) Sample(ctx context.Context) ([]gres.DeviceSample, error) {
	s, _, err := d.SampleWindows(ctx)
	return s, err
}

// SampleWindows is Sample that also says, for each sample (same
// positions), how its Utilization was measured.
func (d *Driver) SampleWindows(ctx context.Context) ([]gres.DeviceSample, []UtilizationWindow, error) {
	if err := d.begin(ctx); err != nil {
		return nil, nil, err
	}
	defer d.mu.RUnlock()
	snap, err := d.snap.Load(ctx, d.discover)
	if err != nil {
		return nil, nil, err
	}
	d.telMu.Lock()
	defer d.telMu.Unlock()
	out := driverkit.UnknownSamples(snap.disc.Inventory.Devices)
	wins := make([]UtilizationWindow, len(out))
	for i := range snap.gpus {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		g := &snap.gpus[i]
		if g.pos >= 0 {
			if err := d.sampleGPU(g, &out[g.pos], &wins[g.pos]); err != nil {
				return nil, nil, fmt.Errorf("nvml: sample of gpu %d (%s): %w", g.nvmlIndex, g.uuid, err)
			}
		}
		for _, m := range g.migs {
			if m.pos < 0 || m.h == nil {
				continue
			}
			mem, ret := m.h.GetMemoryInfo()
			if err := reading(ret, "GetMemoryInfo"); err != nil {
				return nil, nil, fmt.Errorf("nvml: sample of MIG device %s: %w", m.uuid, err)
			} else if ret == gonvml.SUCCESS {
				out[m.pos].MemoryUsedMiB = int64(mem.Used >> 20)
			}
		}
	}
	// Only a call that succeeds moves the intervals on: after a failure
	// the next Sample averages the samples this one read too.
	if d.utilSeen == nil {
		d.utilSeen = map[string]uint64{}
	}
	for i := range snap.gpus {
		if g := &snap.gpus[i]; g.pos >= 0 && wins[g.pos].Source == UtilizationInterval {
			d.utilSeen[g.uuid] = uint64(wins[g.pos].Last.UnixMicro())
		}
	}
	return out, wins, nil
}

// sampleGPU fills s and w from a whole GPU's activity queries. d.telMu
// is held.
func (d *Driver) sampleGPU(g *physGPU, s *gres.DeviceSample, w *UtilizationWindow) error {
	h := g.h
	if err := intervalUtilization(g, d.utilSeen[g.uuid], s, w); err != nil {
		return err
	}
	if w.Source == UtilizationUnknown {
		if u, ret := h.GetUtilizationRates(); ret == gonvml.SUCCESS {
			s.Utilization = float64(min(u.Gpu, 100))
			w.Source = UtilizationInstant
		} else if err := reading(ret, "GetUtilizationRates"); err != nil {
			return err
		}
	}
	if m, ret := h.GetMemoryInfo(); ret == gonvml.SUCCESS {
		s.MemoryUsedMiB = int64(m.Used >> 20)
	} else if err := reading(ret, "GetMemoryInfo"); err != nil {
		return err
	}
	if mw, ret := h.GetPowerUsage(); ret == gonvml.SUCCESS {
		s.PowerWatts = float64(mw) / 1e3
	} else if err := reading(ret, "GetPowerUsage"); err != nil {
		return err
	}
	if mj, ret := h.GetTotalEnergyConsumption(); ret == gonvml.SUCCESS {
		s.EnergyJoules = float64(mj) / 1e3
	} else if err := reading(ret, "GetTotalEnergyConsumption"); err != nil {
		return err
	}
	return nil
}

// reading turns an NVML return into nil for a reading left at -1
// (success, not supported, GPU lost) or an error naming the query.
func reading(ret gonvml.Return, query string) error {
	switch ret {
	case gonvml.SUCCESS, gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_GPU_IS_LOST:
		return nil
	}
	return fmt.Errorf("%s: %w", query, ret)
}
