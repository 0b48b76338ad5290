//go:build cgo

package nvml

import (
	"context"
	"fmt"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/sluicehq/sluice/gres"
)

// allInstances is NVML's "every GPU/compute instance" id in event data.
const allInstances = 0xFFFFFFFF

// maxEventsPerPoll bounds the events one PollHealth drains.
const maxEventsPerPoll = 1024

// devHealth is the health of one inventory device, by UUID.
type devHealth struct {
	sticky   string // from an event (XID, ECC): stays for the Driver's life
	level    string // from the last sweep (lost GPU, row-remap failure)
	reported bool   // last reported state was unhealthy
}

// watchState is PollHealth's state, guarded by Driver.pollMu.
type watchState struct {
	snap    *snapshot       // discovery the event set was registered for
	set     gonvml.EventSet // nil when events are unavailable
	health  map[string]*devHealth
	waitErr string // reason while the event wait itself fails
}

func (w *watchState) dev(uuid string) *devHealth {
	h := w.health[uuid]
	if h == nil {
		h = &devHealth{}
		w.health[uuid] = h
	}
	return h
}

// PollHealth waits up to timeout for health changes of the devices of
// the last Discover (running Discover first if there was none) and returns
// them, sorted by device index. Sources:
//
//   - NVML events, registered on every physical GPU: a critical XID not in
//     Options.IgnoredXIDs ("XID 79"), a double-bit ECC error, "GPU
//     unavailable", a recovery action other than none. These are sticky:
//     the device stays unhealthy for the life of the Driver (a GPU reset
//     and a new Driver bring it back). An event on a GPU in MIG mode hits
//     the slices of the named GPU/compute instance, or all its slices.
//     An event whose GPU cannot be identified hits every device.
//   - A sweep at the start of each call: a lost GPU ("GPU is lost") and a
//     failed row remapping. These clear, with a Healthy event ("recovered"),
//     once the sweep passes again.
//   - A failing event wait marks every device unhealthy until a wait
//     succeeds again.
//
// The wait is cut into slices of Options.WaitSlice; ctx is checked
// between slices, so cancellation takes effect within one slice. When ctx
// ends, PollHealth returns nil and ctx.Err(); changes it saw are reported
// by the next call.
func (d *Driver) PollHealth(ctx context.Context, timeout time.Duration) ([]gres.HealthEvent, error) {
	if err := d.begin(ctx); err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	d.pollMu.Lock()
	defer d.pollMu.Unlock()

	snap, err := d.snap.Load(ctx, d.discover)
	if err != nil {
		return nil, err
	}
	if d.watch == nil {
		d.watch = &watchState{health: map[string]*devHealth{}}
	}
	w := d.watch
	if w.snap != snap {
		d.register(w, snap)
	}
	d.sweep(w, snap)
	if err := d.wait(ctx, w, snap, timeout); err != nil {
		return nil, err
	}
	return changes(w, snap), nil
}

// register (re)creates the event set for snap's GPUs.
func (d *Driver) register(w *watchState, snap *snapshot) {
	if w.set != nil {
		w.set.Free()
		w.set = nil
	}
	w.snap = snap
	set, ret := d.lib.EventSetCreate()
	if ret != gonvml.SUCCESS {
		return // the sweep still detects lost GPUs
	}
	const want = gonvml.EventTypeXidCriticalError | gonvml.EventTypeDoubleBitEccError |
		gonvml.EventTypeGpuUnavailableError | gonvml.EventTypeGpuRecoveryAction
	registered := 0
	for _, g := range snap.gpus {
		mask := uint64(gonvml.EventTypeXidCriticalError | gonvml.EventTypeDoubleBitEccError)
		if sup, ret := g.h.GetSupportedEventTypes(); ret == gonvml.SUCCESS {
			mask = sup & want
		}
		if mask == 0 {
			continue
		}
		if ret := g.h.RegisterEvents(mask, set); ret == gonvml.SUCCESS {
			registered++
		}
	}
	if registered == 0 {
		set.Free()
		return
	}
	w.set = set
}

// sweep checks every physical GPU for conditions without events.
func (d *Driver) sweep(w *watchState, snap *snapshot) {
	for _, g := range snap.gpus {
		reason := ""
		if _, ret := g.h.GetMemoryInfo(); ret == gonvml.ERROR_GPU_IS_LOST {
			reason = "GPU is lost"
		} else if d.has["nvmlDeviceGetRemappedRows"] {
			_, _, _, failed, ret := g.h.GetRemappedRows()
			switch {
			case ret == gonvml.ERROR_GPU_IS_LOST:
				reason = "GPU is lost"
			case ret == gonvml.SUCCESS && failed:
				reason = "row remapping failure"
			}
		}
		for _, u := range g.deviceUUIDs() {
			w.dev(u).level = reason
		}
	}
}

// deviceUUIDs lists the inventory devices a physical GPU provides.
func (g *physGPU) deviceUUIDs() []string {
	if !g.mig {
		return []string{g.uuid}
	}
	out := make([]string, len(g.migs))
	for i, s := range g.migs {
		out[i] = s.uuid
	}
	return out
}

// wait waits for events up to timeout; it returns only ctx errors.
func (d *Driver) wait(ctx context.Context, w *watchState, snap *snapshot, timeout time.Duration) error {
	if pendingChanges(w, snap) {
		timeout = 0 // report what the sweep found now; drain events without blocking
	}
	remaining := max(timeout, 0)
	got := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if w.set == nil {
			// No events to wait for: sleep the slice, interruptibly.
			step := min(remaining, d.slice)
			if step <= 0 {
				return nil
			}
			t := time.NewTimer(step)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			remaining -= step
			continue
		}
		step := min(remaining, d.slice)
		if got > 0 {
			step = 0
		}
		e, ret := w.set.Wait(uint32(step / time.Millisecond))
		switch ret {
		case gonvml.SUCCESS:
			w.waitErr = ""
			d.handle(w, snap, e)
			if got++; got >= maxEventsPerPoll {
				return nil
			}
		case gonvml.ERROR_TIMEOUT:
			w.waitErr = ""
			if got > 0 || remaining <= step {
				return nil
			}
			remaining -= step
		default:
			w.waitErr = fmt.Sprintf("NVML event wait failed: %v", ret)
			return nil
		}
	}
}

// reason returns why event e makes devices unhealthy ("" when it does
// not).
func (d *Driver) reason(e gonvml.EventData) string {
	switch e.EventType {
	case gonvml.EventTypeXidCriticalError:
		if d.ignored[e.EventData] {
			return ""
		}
		return fmt.Sprintf("XID %d", e.EventData)
	case gonvml.EventTypeDoubleBitEccError:
		return "double-bit ECC error"
	case gonvml.EventTypeGpuUnavailableError:
		return "GPU unavailable"
	case gonvml.EventTypeGpuRecoveryAction:
		switch e.EventData {
		case 0:
			return ""
		case 1:
			return "recovery action: GPU reset required"
		case 2:
			return "recovery action: node reboot required"
		case 3:
			return "recovery action: drain peer-to-peer traffic"
		case 4:
			return "recovery action: drain and reset"
		}
		return fmt.Sprintf("recovery action %d", e.EventData)
	}
	return ""
}

// handle applies one event.
func (d *Driver) handle(w *watchState, snap *snapshot, e gonvml.EventData) {
	r := d.reason(e)
	if r == "" {
		return
	}
	for _, u := range targets(snap, e) {
		if h := w.dev(u); h.sticky == "" {
			h.sticky = r
		}
	}
}

// targets returns the UUIDs of the inventory devices event e concerns.
func targets(snap *snapshot, e gonvml.EventData) []string {
	all := func() []string {
		var out []string
		for i := range snap.gpus {
			out = append(out, snap.gpus[i].deviceUUIDs()...)
		}
		return out
	}
	if e.Device == nil {
		return all()
	}
	uuid, ret := e.Device.GetUUID()
	if ret != gonvml.SUCCESS || uuid == "" {
		return all()
	}
	for i := range snap.gpus {
		g := &snap.gpus[i]
		for _, s := range g.migs {
			if s.uuid == uuid {
				return []string{uuid}
			}
		}
		if g.uuid != uuid {
			continue
		}
		if !g.mig || e.GpuInstanceId == allInstances {
			return g.deviceUUIDs()
		}
		var out []string
		for _, s := range g.migs {
			if uint32(s.gi) == e.GpuInstanceId && (e.ComputeInstanceId == allInstances || uint32(s.ci) == e.ComputeInstanceId) {
				out = append(out, s.uuid)
			}
		}
		if len(out) == 0 {
			return g.deviceUUIDs()
		}
		return out
	}
	return all()
}

// unhealthyReason is why a device is unhealthy now ("" if healthy).
func unhealthyReason(w *watchState, uuid string) string {
	h := w.health[uuid]
	switch {
	case h != nil && h.sticky != "":
		return h.sticky
	case h != nil && h.level != "":
		return h.level
	}
	return w.waitErr
}

// pending returns a device's current unhealthy reason ("" if healthy) and
// whether that state differs from what was last reported.
func pending(w *watchState, uuid string) (string, bool) {
	r := unhealthyReason(w, uuid)
	h := w.health[uuid]
	return r, (r != "") != (h != nil && h.reported)
}

// pendingChanges reports whether a device's state differs from what was
// last reported.
func pendingChanges(w *watchState, snap *snapshot) bool {
	for _, dv := range snap.disc.Inventory.Devices {
		if _, changed := pending(w, dv.UUID); changed {
			return true
		}
	}
	return false
}

// changes returns the unreported changes, in inventory order, and marks
// them reported.
func changes(w *watchState, snap *snapshot) []gres.HealthEvent {
	var out []gres.HealthEvent
	for _, dv := range snap.disc.Inventory.Devices {
		r, changed := pending(w, dv.UUID)
		if !changed {
			continue
		}
		w.dev(dv.UUID).reported = r != ""
		ev := gres.HealthEvent{Index: dv.Index, UUID: dv.UUID, Healthy: r == "", Reason: r}
		if ev.Healthy {
			ev.Reason = "recovered"
		}
		out = append(out, ev)
	}
	return out
}
