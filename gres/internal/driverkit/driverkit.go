// Package driverkit is the plumbing the gres node drivers (gres/amd,
// gres/intel, gres/nvml) share: the last discovery a driver keeps for
// its health watcher and telemetry sampler (Last), the poll loop of a
// health watcher that rereads files (Poll), the batch of samples a
// sampler starts from (UnknownSamples), and the repair of sockets that
// contradict NUMA nodes (FixSockets). It holds no I/O of its own.
package driverkit

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice/gres"
)

// Last holds a driver's last discovery, a snapshot of type S that
// PollHealth and Sample work from. It is safe for concurrent use; the
// zero value holds none. Snapshots are immutable once held.
type Last[S any] struct {
	mu   sync.Mutex
	snap *S
}

// Get returns the snapshot held; nil when there is none.
func (l *Last[S]) Get() *S {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snap
}

// Set holds s, replacing what was held (nil: none, as after a driver
// shutdown).
func (l *Last[S]) Set(s *S) {
	l.mu.Lock()
	l.snap = s
	l.mu.Unlock()
}

// Refresh discovers a snapshot with discover and holds it, for a
// driver's Discover. A discover error is returned as it is and the
// snapshot held stays.
func (l *Last[S]) Refresh(ctx context.Context, discover func(context.Context) (*S, error)) (*S, error) {
	s, err := discover(ctx)
	if err != nil {
		return nil, err
	}
	l.Set(s)
	return s, nil
}

// Load returns the snapshot held or, when there is none, discovers one
// with discover (without holding the lock, so a slow discovery blocks no
// Get) and holds it, unless a concurrent Set got there first: then it
// returns that one. A discover error is returned as it is and nothing is
// held. When ctx is done, Load returns ctx.Err() whatever it holds.
func (l *Last[S]) Load(ctx context.Context, discover func(context.Context) (*S, error)) (*S, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s := l.Get(); s != nil {
		return s, nil
	}
	s, err := discover(ctx)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.snap == nil {
		l.snap = s
	}
	return l.snap, nil
}

// Poll runs check at once and then every interval until check returns
// events, timeout has passed since the call (a timeout <= 0 checks
// once), or ctx is done. It returns check's events, nil when the timeout
// passed quietly, or ctx.Err() without checking again.
func Poll(ctx context.Context, timeout, interval time.Duration, check func() []gres.HealthEvent) ([]gres.HealthEvent, error) {
	deadline := time.Now().Add(timeout)
	var timer *time.Timer
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if evs := check(); len(evs) > 0 {
			return evs, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		if timer == nil {
			timer = time.NewTimer(min(left, interval))
			defer timer.Stop()
		} else {
			timer.Reset(min(left, interval))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

// UnknownSamples returns one sample per device of devs, in their order,
// each naming its device (Index, UUID) with every reading unknown (-1):
// what a sampler fills in from what the hardware reports.
func UnknownSamples(devs []gres.Device) []gres.DeviceSample {
	out := make([]gres.DeviceSample, len(devs))
	for i, d := range devs {
		out[i] = gres.DeviceSample{Index: d.Index, UUID: d.UUID, Utilization: -1, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1}
	}
	return out
}

// FixSockets clears the socket of every device (to -1, unknown) when two
// devices put one NUMA node on different sockets, which the inventory
// rejects (sysfs can say so on machines whose firmware describes NUMA
// nodes and CPU packages inconsistently), and warns once through warnf.
// It reports whether it cleared them.
func FixSockets(devs []gres.Device, warnf func(format string, args ...any)) bool {
	seen := map[int]int{} // NUMA node → socket
	for _, d := range devs {
		if d.NUMA < 0 || d.Socket < 0 {
			continue
		}
		if s, ok := seen[d.NUMA]; ok && s != d.Socket {
			warnf("NUMA node %d reported on sockets %d and %d; sockets ignored", d.NUMA, s, d.Socket)
			for i := range devs {
				devs[i].Socket = -1
			}
			return true
		}
		seen[d.NUMA] = d.Socket
	}
	return false
}
