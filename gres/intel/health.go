package intel

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/internal/driverkit"
	"github.com/sluicehq/sluice/gres/internal/sysfs"
)

// watchState is PollHealth's memory, by device key (PCI address and
// tile), so a new Discover does not re-report what was reported.
type watchState struct {
	devs map[string]*devHealth
}

// devHealth is one device's health as last reported.
type devHealth struct {
	healthy bool
	gone    bool
	base    map[string]int64 // fatal error counters at the last change
}

// key names inventory position p across discoveries.
func (s *snapshot) key(p int) string {
	r := s.devs[p]
	c := &s.cards[r.card]
	if r.tile < 0 {
		return c.pci
	}
	return fmt.Sprintf("%s/tile%d", c.pci, c.tiles[r.tile].id)
}

// PollHealth rereads the health of every device of the last Discover
// (discovering first when there has been none) every Options.PollInterval
// until a device's health changes or timeout passes:
//
//   - a card whose DRM device left sysfs (hot unplug, the driver unbound,
//     the PCI function removed after a fatal error) is unhealthy, "device
//     gone", with all its tiles; it recovers when it is back;
//   - a device whose fatal error counters rose is unhealthy, the reason
//     naming the counters: the i915 driver's per-tile
//     gt/gt<K>/error_counter/fatal_* files (a card listed whole sums its
//     tiles). Correctable counters do not count. Counts already there
//     when watching starts are taken as the baseline. The device recovers
//     when the counters fall back (they restart from zero when the device
//     is reset or the driver reloaded) and it is present;
//   - the xe driver exposes no error counters in sysfs, so its devices are
//     watched for disappearance only.
//
// Events are sorted by index and report changes once.
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
	if d.watch == nil {
		d.watch = &watchState{devs: map[string]*devHealth{}}
	}
	return driverkit.Poll(ctx, timeout, d.interval, func() []gres.HealthEvent { return d.check(snap) })
}

// check reads every device once and returns the changes.
func (d *Driver) check(snap *snapshot) []gres.HealthEvent {
	var evs []gres.HealthEvent
	present := make(map[int]bool, len(snap.cards))
	for ci := range snap.cards {
		present[ci] = sysfs.Exists(filepath.Join(snap.cards[ci].dir, "device", "vendor"))
	}
	for p, dv := range snap.disc.Inventory.Devices {
		r := snap.devs[p]
		c := &snap.cards[r.card]
		counters := fatalCounters(c, r.tile)
		h := d.watch.devs[snap.key(p)]
		if h == nil {
			h = &devHealth{healthy: true, base: counters}
			d.watch.devs[snap.key(p)] = h
		}
		healthy, reason := h.healthy, ""
		switch {
		case !present[r.card]:
			h.gone, healthy = true, false
			reason = fmt.Sprintf("device gone: %s no longer in sysfs", snap.deviceName(p))
		case h.gone:
			h.gone, h.base, healthy = false, counters, true
			reason = "device back in sysfs"
		default:
			var rose []string
			fell := false
			for _, name := range slices.Sorted(maps.Keys(counters)) {
				if v, was := counters[name], h.base[name]; v > was {
					rose = append(rose, fmt.Sprintf("%s %d→%d", name, was, v))
				} else if v < was {
					fell = true
				}
			}
			switch {
			case len(rose) > 0:
				healthy = false
				reason = "fatal error counters rose: " + strings.Join(rose, ", ")
			case fell:
				healthy = true
				reason = "fatal error counters reset"
			}
			if len(rose) > 0 || fell {
				h.base = counters
			}
		}
		if healthy != h.healthy {
			h.healthy = healthy
			evs = append(evs, gres.HealthEvent{Index: dv.Index, UUID: dv.UUID, Healthy: healthy, Reason: reason})
		}
	}
	return evs
}

// fatalCounters reads the fatal_* error counters of tile position t of
// c (all tiles when t < 0), by "gt<K>/<name>".
func fatalCounters(c *card, t int) map[string]int64 {
	out := map[string]int64{}
	for ti, tl := range c.tiles {
		if t >= 0 && ti != t || tl.errors == "" {
			continue
		}
		ents, err := os.ReadDir(tl.errors)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), "fatal_") {
				continue
			}
			if v, err := sysfs.Int(filepath.Join(tl.errors, e.Name())); err == nil {
				out[fmt.Sprintf("gt%d/%s", tl.id, e.Name())] = v
			}
		}
	}
	return out
}
