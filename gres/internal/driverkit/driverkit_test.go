package driverkit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/internal/driverkit"
)

type snap struct{ n int }

func TestLast(t *testing.T) {
	ctx := context.Background()
	var l driverkit.Last[snap]
	assert.Nil(t, l.Get())
	calls := 0
	discover := func(context.Context) (*snap, error) { calls++; return &snap{calls}, nil }
	s, err := l.Load(ctx, discover)
	require.NoError(t, err)
	assert.Equal(t, 1, s.n)
	s, err = l.Load(ctx, discover)
	require.NoError(t, err)
	assert.Equal(t, 1, s.n, "held: not discovered again")
	assert.Equal(t, 1, calls)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = l.Load(cctx, discover)
	assert.ErrorIs(t, err, context.Canceled, "a done context fails even with a snapshot held")

	l.Set(&snap{7})
	assert.Equal(t, 7, l.Get().n)
	l.Set(nil)
	assert.Nil(t, l.Get())

	s, err = l.Refresh(ctx, discover)
	require.NoError(t, err)
	assert.Equal(t, 2, s.n)
	assert.Same(t, s, l.Get(), "Refresh holds what it discovered")

	boom := errors.New("boom")
	_, err = l.Refresh(ctx, func(context.Context) (*snap, error) { return nil, boom })
	assert.ErrorIs(t, err, boom)
	assert.Same(t, s, l.Get(), "a failed Refresh keeps what was held")

	l.Set(nil)
	_, err = l.Load(ctx, func(context.Context) (*snap, error) { return nil, boom })
	assert.ErrorIs(t, err, boom)
	assert.Nil(t, l.Get(), "a failed discovery holds nothing")

	// A Set (a Discover) that lands while Load discovers wins: Load
	// returns what is held.
	s, err = l.Load(ctx, func(context.Context) (*snap, error) {
		l.Set(&snap{42})
		return &snap{1}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, 42, s.n)
	assert.Equal(t, 42, l.Get().n)
}

func TestLastConcurrent(t *testing.T) {
	var l driverkit.Last[snap]
	done := make(chan *snap)
	for i := range 8 {
		go func() {
			s, _ := l.Load(context.Background(), func(context.Context) (*snap, error) { return &snap{i}, nil })
			done <- s
		}()
	}
	first := <-done
	for range 7 {
		assert.Same(t, first, <-done, "every Load returns the one snapshot held")
	}
}

func TestPoll(t *testing.T) {
	ctx := context.Background()
	ev := []gres.HealthEvent{{Index: 3, Reason: "lost"}}
	calls := 0
	evs, err := driverkit.Poll(ctx, time.Hour, time.Millisecond, func() []gres.HealthEvent {
		calls++
		if calls == 3 {
			return ev
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, ev, evs)
	assert.Equal(t, 3, calls, "rechecks until a change shows, then returns at once")

	calls = 0
	evs, err = driverkit.Poll(ctx, 0, time.Millisecond, func() []gres.HealthEvent { calls++; return nil })
	require.NoError(t, err)
	assert.Nil(t, evs)
	assert.Equal(t, 1, calls, "no timeout: one check")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = driverkit.Poll(cctx, time.Hour, time.Millisecond, func() []gres.HealthEvent {
		t.Error("checked after ctx was done")
		return nil
	})
	assert.ErrorIs(t, err, context.Canceled)

	cctx, cancel = context.WithCancel(ctx)
	calls = 0
	_, err = driverkit.Poll(cctx, time.Hour, time.Hour, func() []gres.HealthEvent {
		calls++
		cancel() // ends the wait for the next check
		return nil
	})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, calls)
}

func TestUnknownSamples(t *testing.T) {
	devs := []gres.Device{{Index: 0, Name: "gpu", UUID: "GPU-a"}, {Index: 5, Name: "gpu"}}
	out := driverkit.UnknownSamples(devs)
	require.Len(t, out, 2)
	assert.Equal(t, gres.DeviceSample{Index: 0, UUID: "GPU-a", Utilization: -1, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1}, out[0])
	assert.Equal(t, gres.DeviceSample{Index: 5, Utilization: -1, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1}, out[1])
	for _, s := range out {
		require.NoError(t, s.Validate())
	}
	assert.Empty(t, driverkit.UnknownSamples(nil))
}

func TestFixSockets(t *testing.T) {
	var warns []string
	warnf := func(format string, args ...any) { warns = append(warns, fmt.Sprintf(format, args...)) }
	dev := func(i, numa, socket int) gres.Device {
		return gres.Device{Index: i, Name: "gpu", NUMA: numa, Socket: socket}
	}
	ok := []gres.Device{dev(0, 0, 0), dev(1, 0, 0), dev(2, 1, 1), dev(3, -1, 1), dev(4, 1, -1)}
	assert.False(t, driverkit.FixSockets(ok, warnf))
	assert.Empty(t, warns)
	assert.Equal(t, 1, ok[2].Socket)
	inv := gres.Inventory{Devices: ok}
	require.NoError(t, inv.Validate())

	bad := []gres.Device{dev(0, 0, 0), dev(1, 1, 1), dev(2, 0, 1), dev(3, 1, 0)}
	inv = gres.Inventory{Devices: bad}
	require.Error(t, inv.Validate(), "the inventory rejects one NUMA node on two sockets")
	assert.True(t, driverkit.FixSockets(bad, warnf))
	assert.Equal(t, []string{"NUMA node 0 reported on sockets 0 and 1; sockets ignored"}, warns)
	for _, d := range bad {
		assert.Equal(t, -1, d.Socket)
	}
	require.NoError(t, inv.Validate())
}
