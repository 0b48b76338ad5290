//go:build cgo

package nvml

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/nvml/nvmltest"
)

func poll(t *testing.T, d *Driver) []gres.HealthEvent {
	t.Helper()
	evs, err := d.PollHealth(context.Background(), 10*time.Millisecond)
	require.NoError(t, err)
	return evs
}

func bad(idx int, uuid, reason string) gres.HealthEvent {
	return gres.HealthEvent{Index: idx, UUID: uuid, Reason: reason}
}

func good(idx int, uuid string) gres.HealthEvent {
	return gres.HealthEvent{Index: idx, UUID: uuid, Healthy: true, Reason: "recovered"}
}

func TestHealthXID(t *testing.T) {
	srv := nvmltest.DGXH100()
	d := newDriver(t, srv, Options{})
	assert.Empty(t, poll(t, d))
	for i := range 8 {
		assert.Equal(t, uint64(gonvml.EventTypeXidCriticalError|gonvml.EventTypeDoubleBitEccError), srv.EventMask(i), "gpu %d", i)
	}

	srv.InjectXID(3, 79)
	srv.InjectXID(5, 13) // application error: ignored
	assert.Equal(t, []gres.HealthEvent{bad(3, srv.GPUs[3].UUID, "XID 79")}, poll(t, d))
	assert.Zero(t, srv.Pending())
	assert.Empty(t, poll(t, d), "changes are reported once")

	// Sticky: a later XID on the same GPU and a passing sweep change nothing.
	srv.InjectXID(3, 48)
	assert.Empty(t, poll(t, d))

	srv.InjectEvent(gonvml.EventData{Device: srv.GPUs[6], EventType: gonvml.EventTypeDoubleBitEccError})
	srv.InjectEvent(gonvml.EventData{Device: srv.GPUs[7], EventType: gonvml.EventTypeSingleBitEccError})
	assert.Equal(t, []gres.HealthEvent{bad(6, srv.GPUs[6].UUID, "double-bit ECC error")}, poll(t, d))
}

func TestHealthIgnoredXIDsConfigurable(t *testing.T) {
	srv := nvmltest.DGXH100()
	d := newDriver(t, srv, Options{IgnoredXIDs: []uint64{}})
	srv.InjectXID(0, 13)
	assert.Equal(t, []gres.HealthEvent{bad(0, srv.GPUs[0].UUID, "XID 13")}, poll(t, d))

	srv2 := nvmltest.DGXH100()
	d2 := newDriver(t, srv2, Options{IgnoredXIDs: []uint64{79}})
	srv2.InjectXID(0, 79)
	srv2.InjectXID(1, 13)
	assert.Equal(t, []gres.HealthEvent{bad(1, srv2.GPUs[1].UUID, "XID 13")}, poll(t, d2))
}

func TestHealthUnknownDeviceHitsAll(t *testing.T) {
	srv := nvmltest.PCIeA100Pairs()
	d := newDriver(t, srv, Options{})
	stranger := &mock.Device{GetUUIDFunc: func() (string, gonvml.Return) { return "GPU-stranger", gonvml.SUCCESS }}
	srv.InjectEvent(gonvml.EventData{Device: stranger, EventType: gonvml.EventTypeXidCriticalError, EventData: 79})
	evs := poll(t, d)
	require.Len(t, evs, 8)
	for i, ev := range evs {
		assert.Equal(t, bad(i, srv.GPUs[i].UUID, "XID 79"), ev)
	}

	srv2 := nvmltest.PCIeA100Pairs()
	d2 := newDriver(t, srv2, Options{})
	srv2.InjectEvent(gonvml.EventData{EventType: gonvml.EventTypeXidCriticalError, EventData: 94})
	assert.Len(t, poll(t, d2), 8)
}

func TestHealthSweep(t *testing.T) {
	srv := nvmltest.DGXA100()
	d := newDriver(t, srv, Options{})
	assert.Empty(t, poll(t, d))
	srv.SetLost(2, true)
	srv.SetRemapFailure(4, true)
	assert.Equal(t, []gres.HealthEvent{
		bad(2, srv.GPUs[2].UUID, "GPU is lost"),
		bad(4, srv.GPUs[4].UUID, "row remapping failure"),
	}, poll(t, d))
	assert.Empty(t, poll(t, d))
	srv.SetLost(2, false)
	assert.Equal(t, []gres.HealthEvent{good(2, srv.GPUs[2].UUID)}, poll(t, d))

	// An XID is sticky even when the sweep passes again.
	srv.InjectXID(4, 79)
	srv.SetRemapFailure(4, false)
	assert.Empty(t, poll(t, d))
}

func TestHealthWaitFailure(t *testing.T) {
	srv := nvmltest.GB200()
	d := newDriver(t, srv, Options{})
	srv.SetWaitError(gonvml.ERROR_UNKNOWN)
	evs := poll(t, d)
	require.Len(t, evs, 4)
	assert.Equal(t, "NVML event wait failed: ERROR_UNKNOWN", evs[0].Reason)
	assert.Empty(t, poll(t, d), "still failing: no change")
	srv.SetWaitError(gonvml.SUCCESS)
	evs = poll(t, d) // the wait succeeds (a timeout): every device recovers
	require.Len(t, evs, 4)
	for _, ev := range evs {
		assert.True(t, ev.Healthy)
	}
}

func TestHealthMIG(t *testing.T) {
	srv := nvmltest.DGXA100()
	migs, err := srv.EnableMIG(1, gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.GPU_INSTANCE_PROFILE_3_SLICE)
	require.NoError(t, err)
	d := newDriver(t, srv, Options{})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	require.Equal(t, []int{0, 2, 3, 4, 5, 6, 7, 8, 9}, indices(disc.Inventory))

	// An XID in GPU instance 2 hits only that slice.
	srv.InjectEvent(gonvml.EventData{Device: srv.GPUs[1], EventType: gonvml.EventTypeXidCriticalError, EventData: 94,
		GpuInstanceId: uint32(migs[1].GI), ComputeInstanceId: uint32(migs[1].CI)})
	assert.Equal(t, []gres.HealthEvent{bad(9, migs[1].UUID, "XID 94")}, poll(t, d))

	// A whole-GPU event hits every slice.
	srv.InjectEvent(gonvml.EventData{Device: srv.GPUs[1], EventType: gonvml.EventTypeDoubleBitEccError,
		GpuInstanceId: 0xFFFFFFFF, ComputeInstanceId: 0xFFFFFFFF})
	assert.Equal(t, []gres.HealthEvent{bad(8, migs[0].UUID, "double-bit ECC error")}, poll(t, d))

	// A lost parent takes its slices down.
	srv2 := nvmltest.DGXA100()
	migs2, err := srv2.EnableMIG(0, gonvml.GPU_INSTANCE_PROFILE_7_SLICE)
	require.NoError(t, err)
	d2 := newDriver(t, srv2, Options{})
	srv2.SetLost(0, true)
	assert.Equal(t, []gres.HealthEvent{bad(8, migs2[0].UUID, "GPU is lost")}, poll(t, d2))
}

func TestHealthRecoveryActions(t *testing.T) {
	srv := nvmltest.DGXH100()
	d := newDriver(t, srv, Options{})
	for i, action := range []uint64{0, 1, 2, 3, 4, 9} {
		srv.InjectEvent(gonvml.EventData{Device: srv.GPUs[i], EventType: gonvml.EventTypeGpuRecoveryAction, EventData: action})
	}
	srv.InjectEvent(gonvml.EventData{Device: srv.GPUs[7], EventType: gonvml.EventTypeGpuUnavailableError})
	srv.InjectEvent(gonvml.EventData{Device: srv.GPUs[6], EventType: gonvml.EventTypePState})
	var reasons []string
	for _, ev := range poll(t, d) {
		reasons = append(reasons, ev.Reason)
	}
	assert.Equal(t, []string{"recovery action: GPU reset required", "recovery action: node reboot required",
		"recovery action: drain peer-to-peer traffic", "recovery action: drain and reset", "recovery action 9",
		"GPU unavailable"}, reasons)
}

// TestHealthCanceledKeepsChanges: when ctx ends during the wait, the
// changes seen are reported by the next call.
func TestHealthCanceledKeepsChanges(t *testing.T) {
	srv := nvmltest.DGXH100()
	ctx, cancel := context.WithCancel(context.Background())
	base := srv.EventSetCreateFunc
	srv.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) {
		set, ret := base()
		ms := set.(*mock.EventSet)
		inner := ms.WaitFunc
		ms.WaitFunc = func(timeout uint32) (gonvml.EventData, gonvml.Return) {
			e, r := inner(timeout)
			if r == gonvml.SUCCESS {
				cancel() // the caller gives up while the event is handled
			}
			return e, r
		}
		return ms, ret
	}
	d := newDriver(t, srv, Options{})
	assert.Empty(t, poll(t, d))
	srv.InjectXID(2, 79)
	_, err := d.PollHealth(ctx, time.Second)
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, srv.Pending(), "the event was consumed")
	assert.Equal(t, []gres.HealthEvent{bad(2, srv.GPUs[2].UUID, "XID 79")}, poll(t, d))
}

func TestHealthRediscoveryReregisters(t *testing.T) {
	srv := nvmltest.DGXH100()
	d := newDriver(t, srv, Options{})
	assert.Empty(t, poll(t, d))
	created, freed := srv.EventSets()
	assert.Equal(t, 1, created)
	assert.Equal(t, 0, freed)
	srv.InjectXID(1, 79)
	assert.Len(t, poll(t, d), 1)
	_, err := d.Discover(context.Background())
	require.NoError(t, err)
	assert.Empty(t, poll(t, d), "health survives rediscovery")
	created, freed = srv.EventSets()
	assert.Equal(t, 2, created)
	assert.Equal(t, 1, freed)
	require.NoError(t, d.Shutdown())
	_, freed = srv.EventSets()
	assert.Equal(t, 2, freed)
}

func TestHealthWithoutEvents(t *testing.T) {
	srv := nvmltest.DGXH100()
	srv.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) { return nil, gonvml.ERROR_NOT_SUPPORTED }
	d := newDriver(t, srv, Options{WaitSlice: time.Millisecond})
	assert.Empty(t, poll(t, d))
	srv.SetLost(0, true)
	assert.Len(t, poll(t, d), 1) // the sweep still works
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := d.PollHealth(ctx, time.Hour)
	require.ErrorIs(t, err, context.Canceled)
}

func TestWatchHealth(t *testing.T) {
	srv := nvmltest.DGXH100()
	d := newDriver(t, srv, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var got []gres.HealthEvent
	errc := make(chan error, 1)
	go func() {
		errc <- gres.WatchHealth(ctx, d, 5*time.Millisecond, func(evs []gres.HealthEvent) {
			mu.Lock()
			got = append(got, evs...)
			mu.Unlock()
			cancel()
		})
	}()
	srv.InjectXID(7, 79)
	err := <-errc
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []gres.HealthEvent{bad(7, srv.GPUs[7].UUID, "XID 79")}, got)
}

func TestApplyHealthDrainsNode(t *testing.T) {
	srv := nvmltest.GB200()
	d := newDriver(t, srv, Options{})
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	nd, err := gres.NewNodeDevices(disc.Inventory)
	require.NoError(t, err)
	reasons := map[int]string{}
	for i := range 4 {
		srv.InjectXID(i, 79)
		sum, err := gres.ApplyHealth(nd, reasons, poll(t, d))
		require.NoError(t, err)
		assert.Equal(t, 3-i, sum.Healthy)
		assert.Equal(t, i == 3, sum.Drain)
		assert.Equal(t, 3-i, nd.Free("gpu", ""))
	}
	sum, err := gres.ApplyHealth(nd, reasons, nil)
	require.NoError(t, err)
	assert.Equal(t, "gpu 0: XID 79; gpu 1: XID 79; gpu 2: XID 79; gpu 3: XID 79", sum.Reason)
}

// TestConcurrentUse: a watch goroutine polls while the control loop
// rediscovers, then Shutdown stops the watcher cleanly (run with -race).
func TestConcurrentUse(t *testing.T) {
	srv := nvmltest.DGXH100()
	d := newDriver(t, srv, Options{WaitSlice: time.Millisecond})
	ctx := context.Background()
	errc := make(chan error, 1)
	var mu sync.Mutex
	seen := 0
	go func() {
		errc <- gres.WatchHealth(ctx, d, time.Millisecond, func(evs []gres.HealthEvent) {
			mu.Lock()
			seen += len(evs)
			mu.Unlock()
		})
	}()
	for i := range 8 {
		srv.InjectXID(i, 79)
		_, err := d.Discover(ctx)
		require.NoError(t, err)
	}
	for {
		mu.Lock()
		n := seen
		mu.Unlock()
		if n == 8 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, d.Shutdown())
	require.ErrorIs(t, <-errc, ErrNotInitialized)
}
