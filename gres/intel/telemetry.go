package intel

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/internal/driverkit"
	"github.com/sluicehq/sluice/gres/internal/sysfs"
)

// counterReading is one reading of a cumulative counter (ms of idle
// residency, µJ of energy) and when it was taken.
type counterReading struct {
	v  int64
	at time.Time
}

// Sample reads every device of the last Discover (discovering first when
// there has been none):
//
//   - Utilization is the share of the time since the previous Sample the
//     tile's GT was not idle: 100 × (1 − Δidle / Δt) from the i915
//     driver's gt/gt<K>/rc6_residency_ms or the xe driver's
//     tile<K>/gt<G>/gtidle/idle_residency_ms (a whole multi-tile card:
//     the mean of its tiles). The first Sample, and one after a counter
//     went backwards, has no interval and reports -1;
//   - EnergyJoules is the card's hwmon energy1_input (µJ); PowerWatts its
//     power1_input (µW) where the driver has one, else the energy used
//     since the previous Sample divided by the time between them (-1 on
//     the first);
//   - MemoryUsedMiB is lmem_total_bytes − lmem_avail_bytes where the
//     driver exposes them (the i915 backport driver), else -1.
//
// hwmon and memory readings are per card: a tile of a multi-tile card
// listed on its own reports -1 for them rather than a share of its
// card's. Unreadable files are -1, so Sample fails only when discovery
// does or ctx ends.
func (d *Driver) Sample(ctx context.Context) ([]gres.DeviceSample, error) {
	snap, err := d.snap.Load(ctx, d.discover)
	if err != nil {
		return nil, err
	}
	d.sampleMu.Lock()
	defer d.sampleMu.Unlock()
	if d.prev == nil {
		d.prev = map[string]counterReading{}
	}
	now := d.now()
	out := driverkit.UnknownSamples(snap.disc.Inventory.Devices)
	for p := range out {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := snap.devs[p]
		c := &snap.cards[r.card]
		s := &out[p]
		s.Utilization = d.busy(c, r.tile, now)
		if r.tile < 0 || len(c.tiles) == 1 {
			s.EnergyJoules, s.PowerWatts = d.energy(c, now)
			if c.lmem {
				total, err1 := sysfs.Int(filepath.Join(c.dir, "lmem_total_bytes"))
				avail, err2 := sysfs.Int(filepath.Join(c.dir, "lmem_avail_bytes"))
				if err1 == nil && err2 == nil && avail >= 0 && avail <= total {
					s.MemoryUsedMiB = (total - avail) >> 20
				}
			}
		}
	}
	return out, nil
}

// rate returns the increase per second of the counter key since its last
// reading (ok false on the first reading, a counter that went backwards
// or no time elapsed) and records v.
func (d *Driver) rate(key string, v int64, now time.Time) (float64, bool) {
	prev, seen := d.prev[key]
	d.prev[key] = counterReading{v: v, at: now}
	dt := now.Sub(prev.at).Seconds()
	if !seen || v < prev.v || dt <= 0 {
		return 0, false
	}
	return float64(v-prev.v) / dt, true
}

// busy returns the busy percentage of tile position t of c (the mean of
// all tiles when t < 0), or -1.
func (d *Driver) busy(c *card, t int, now time.Time) float64 {
	var sum float64
	n, known := 0, true
	for ti, tl := range c.tiles {
		if t >= 0 && ti != t {
			continue
		}
		n++
		ms, err := sysfs.Int(tl.idle)
		if tl.idle == "" || err != nil {
			known = false
			continue
		}
		// Every tile's counter is recorded, even when another tile's
		// reading is unknown, so the next Sample has an interval for it.
		idlePerSec, ok := d.rate(fmt.Sprintf("idle:%s/%d", c.pci, tl.id), ms, now)
		known = known && ok
		sum += min(max(100*(1-idlePerSec/1000), 0), 100)
	}
	if n == 0 || !known {
		return -1
	}
	return sum / float64(n)
}

// energy returns c's energy (J) and power (W), each -1 when unknown.
func (d *Driver) energy(c *card, now time.Time) (joules, watts float64) {
	joules, watts = -1, -1
	if c.hwmon == "" {
		return
	}
	uj, err := sysfs.Int(filepath.Join(c.hwmon, "energy1_input"))
	if err == nil && uj >= 0 {
		joules = float64(uj) / 1e6
		if perSec, ok := d.rate("energy:"+c.pci, uj, now); ok {
			watts = perSec / 1e6
		}
	}
	if uw, err := sysfs.Int(filepath.Join(c.hwmon, "power1_input")); err == nil && uw >= 0 {
		watts = float64(uw) / 1e6
	}
	return
}
