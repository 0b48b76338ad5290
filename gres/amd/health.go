package amd

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/internal/driverkit"
	"github.com/sluicehq/sluice/gres/internal/sysfs"
)

// watchState is PollHealth's state for one snapshot, guarded by
// Driver.pollMu.
type watchState struct {
	snap     *snapshot
	base     map[string]map[string]uint64 // bus → RAS block → uncorrectable count taken as healthy
	reported map[string]string            // device key → reason last reported unhealthy ("" healthy)
}

// physHealth is one sweep's view of a physical GPU.
type physHealth struct {
	lost   bool
	reason string // "" when healthy
}

// PollHealth waits up to timeout for health changes of the devices of
// the last Discover (running Discover first if there was none) and
// returns them, sorted by device index. It rereads sysfs at once and then
// every Options.PollInterval until a change shows or timeout passes:
//
//   - RAS: the uncorrectable ("ue") count of every block in the GPU's
//     ras/<block>_err_count files. The counts the first poll sees for a
//     GPU (by PCI address, kept across Discovers) are its baseline: errors
//     counted before the watch began are history. A count above its
//     baseline makes every device of that GPU unhealthy ("RAS
//     uncorrectable errors: umc 3", the count now). A count that falls
//     (the GPU was reset and its counters cleared) becomes the new
//     baseline, so a GPU reporting clean after a reset is reported
//     healthy again ("recovered").
//   - A GPU whose PCI device or a device whose render node disappears
//     from sysfs is unhealthy ("device lost") until it is back.
//
// Each change is reported once. When ctx is done PollHealth returns nil
// and ctx.Err(); changes it had not returned are reported by the next
// call.
func (d *Driver) PollHealth(ctx context.Context, timeout time.Duration) ([]gres.HealthEvent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.pollMu.Lock()
	defer d.pollMu.Unlock()
	snap, err := d.snap.Load(ctx, d.discover)
	if err != nil {
		return nil, err
	}
	w := d.watchFor(snap)
	return driverkit.Poll(ctx, timeout, d.interval, w.sweep)
}

// watchFor returns the watch state, moved to snap. RAS baselines (by PCI
// bus id) and reported states (by bus id and partition ordinal) carry
// over from earlier snapshots, so rediscovering an unchanged node
// reports nothing again.
func (d *Driver) watchFor(snap *snapshot) *watchState {
	if d.watch == nil {
		d.watch = &watchState{base: map[string]map[string]uint64{}, reported: map[string]string{}}
	}
	w := d.watch
	if w.snap == snap {
		return w
	}
	w.snap = snap
	for _, ph := range snap.phys {
		if w.base[ph.bus] == nil {
			w.base[ph.bus] = readRAS(ph.pciDir)
		}
	}
	return w
}

// devKey names an inventory device across snapshots.
func devKey(in DeviceInfo) string { return in.PCIBusID + "/" + strconv.Itoa(in.Partition) }

// readRAS reads the uncorrectable error count of every RAS block of the
// PCI device in dir (empty when it reports none). Unreadable counters
// are skipped.
func readRAS(dir string) map[string]uint64 {
	out := map[string]uint64{}
	if dir == "" {
		return out
	}
	ents, err := os.ReadDir(filepath.Join(dir, "ras"))
	if err != nil {
		return out
	}
	for _, e := range ents {
		block, ok := strings.CutSuffix(e.Name(), "_err_count")
		if !ok || block == "" {
			continue
		}
		if ue, err := readUE(filepath.Join(dir, "ras", e.Name())); err == nil {
			out[block] = ue
		}
	}
	return out
}

// readUE reads the "ue: N" line of a RAS counter file.
func readUE(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return ParseRASCount(string(b))
}

// ParseRASCount returns the uncorrectable error count of an amdgpu RAS
// counter file (ras/<block>_err_count): the number on its "ue:" line.
// Errors wrap ErrMalformed.
func ParseRASCount(s string) (uint64, error) {
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "ue" {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: RAS count %q: want an unsigned integer", ErrMalformed, sysfs.Clip(strings.TrimSpace(v)))
		}
		return n, nil
	}
	return 0, fmt.Errorf("%w: RAS counter without a \"ue:\" line", ErrMalformed)
}

// sweep reads every GPU's state and returns the changes since the last
// report, committing them.
func (w *watchState) sweep() []gres.HealthEvent {
	s := w.snap
	phys := make([]physHealth, len(s.phys))
	for i, ph := range s.phys {
		if ph.pciDir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(ph.pciDir, "vendor")); err != nil {
			phys[i].lost = true
			continue
		}
		now := readRAS(ph.pciDir)
		base := w.base[ph.bus]
		var bad []string
		for _, block := range slices.Sorted(maps.Keys(now)) {
			ue := now[block]
			b, seen := base[block]
			switch {
			case !seen || ue < b:
				base[block] = ue // a new counter, or one cleared by a reset
			case ue > b:
				bad = append(bad, fmt.Sprintf("%s %d", block, ue))
			}
		}
		if len(bad) > 0 {
			phys[i].reason = "RAS uncorrectable errors: " + strings.Join(bad, ", ")
		}
	}
	var evs []gres.HealthEvent
	for pos, dp := range s.devs {
		reason := phys[dp.phys].reason
		if phys[dp.phys].lost {
			reason = "device lost"
		} else if _, err := os.Stat(dp.render); err != nil {
			reason = "device lost"
		}
		key := devKey(s.info[pos])
		was := w.reported[key]
		if reason == was || reason != "" && was != "" {
			continue // no change (an unhealthy device is reported once, whatever its reason becomes)
		}
		dev := s.disc.Inventory.Devices[pos]
		ev := gres.HealthEvent{Index: dev.Index, UUID: dev.UUID, Healthy: reason == "", Reason: reason}
		if ev.Healthy {
			ev.Reason = "recovered"
		}
		w.reported[key] = reason
		evs = append(evs, ev)
	}
	return evs
}

// Sample reads the activity of every device of the last Discover
// (running Discover first if there was none), in index order: busy
// percentage (gpu_busy_percent), VRAM in use (mem_info_vram_used), board
// power (hwmon power1_average, else power1_input, in microwatts) and
// energy (hwmon energy1_input, in microjoules) where the GPU reports
// them; -1 for what it does not report, and for everything of a compute
// partition (sysfs reports activity per physical GPU, not per partition)
// or of a GPU that is gone.
func (d *Driver) Sample(ctx context.Context) ([]gres.DeviceSample, error) {
	snap, err := d.snap.Load(ctx, d.discover)
	if err != nil {
		return nil, err
	}
	out := driverkit.UnknownSamples(snap.disc.Inventory.Devices)
	for pos, dp := range snap.devs {
		if dir := snap.phys[dp.phys].pciDir; !dp.partition && dir != "" {
			readActivity(dir, &out[pos])
		}
	}
	return out, nil
}

// readActivity fills smp from the PCI device directory dir.
func readActivity(dir string, smp *gres.DeviceSample) {
	if v, err := sysfs.Uint(filepath.Join(dir, "gpu_busy_percent")); err == nil && v <= 100 {
		smp.Utilization = float64(v)
	}
	if v, err := sysfs.Uint(filepath.Join(dir, "mem_info_vram_used")); err == nil {
		smp.MemoryUsedMiB = int64(min(v, 1<<62) >> 20)
	}
	hw, _ := filepath.Glob(filepath.Join(dir, "hwmon", "hwmon*"))
	slices.Sort(hw)
	for _, h := range hw {
		for _, f := range []string{"power1_average", "power1_input"} {
			if v, err := sysfs.Uint(filepath.Join(h, f)); err == nil {
				smp.PowerWatts = float64(v) / 1e6
				break
			}
		}
		if v, err := sysfs.Uint(filepath.Join(h, "energy1_input")); err == nil {
			smp.EnergyJoules = float64(v) / 1e6
		}
		if smp.PowerWatts >= 0 || smp.EnergyJoules >= 0 {
			break
		}
	}
}
