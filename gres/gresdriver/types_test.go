package gresdriver_test

// Tests of the driver seam types in package gres (gres/driver.go).

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
)

func TestDeviceFileValidate(t *testing.T) {
	ok := []gres.DeviceFile{
		{Path: "/dev/nvidia0", Kind: gres.CharDevice, Major: 195, Minor: 0},
		{Path: "/dev/pts", Kind: gres.CharDevice, Major: 136, Minor: gres.AnyMinor},
		{Path: "/dev/sda", Kind: gres.BlockDevice, Major: 8, Minor: 0},
	}
	for _, f := range ok {
		require.NoError(t, f.Validate(), f.String())
	}
	for _, f := range []gres.DeviceFile{
		{Path: "", Kind: 'c'}, {Path: "dev/x", Kind: 'c'}, {Path: "/dev/../x", Kind: 'c'}, {Path: "/dev/x/", Kind: 'c'},
		{Path: "/dev/x\x00", Kind: 'c'}, {Path: "/dev/x", Kind: 'a'}, {Path: "/dev/x", Kind: 'c', Major: -1},
		{Path: "/dev/x", Kind: 'c', Minor: -2}, {Path: "/dev/x", Kind: 'c', Major: gres.MaxDeviceNumber + 1},
	} {
		require.ErrorIs(t, f.Validate(), gres.ErrInvalidDeviceFile, "%+v", f)
	}
	assert.Equal(t, "c 195:0 /dev/nvidia0", ok[0].String())
	assert.Equal(t, "c 136:* /dev/pts", ok[1].String())
	assert.True(t, ok[0].SameDevice(gres.DeviceFile{Path: "/other", Kind: 'c', Major: 195}))
	assert.False(t, ok[0].SameDevice(ok[2]))
	sorted := gres.SortDeviceFiles([]gres.DeviceFile{ok[0], ok[2], ok[1], ok[0]})
	assert.Equal(t, []gres.DeviceFile{ok[2], ok[1], ok[0]}, sorted)
}

func TestDiscoveryFiles(t *testing.T) {
	d := newStatic()
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	require.NoError(t, disc.Validate())
	files, err := disc.FilesFor([]int{3, 1, 3})
	require.NoError(t, err)
	assert.Equal(t, []string{"/dev/accel1", "/dev/accel3", "/dev/accelctl"}, paths(files))
	none, err := disc.FilesFor(nil)
	require.NoError(t, err)
	assert.Nil(t, none)
	_, err = disc.FilesFor([]int{8})
	require.ErrorIs(t, err, gres.ErrUnknownDevice)
	assert.Len(t, disc.DeviceFiles(), 8)

	bad := disc
	bad.Files = bad.Files[:2]
	require.ErrorIs(t, bad.Validate(), gres.ErrInvalidInventory)
	bad = disc
	bad.CommonFiles = []gres.DeviceFile{{Path: "x"}}
	require.ErrorIs(t, bad.Validate(), gres.ErrInvalidDeviceFile)
	noFiles := gres.Discovery{Inventory: gpuserver.DGXH100()}
	require.NoError(t, noFiles.Validate())
	f, err := noFiles.FilesFor([]int{0})
	require.NoError(t, err)
	assert.Empty(t, f)
}

func paths(fs []gres.DeviceFile) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Path)
	}
	return out
}

func TestAllocationValidate(t *testing.T) {
	good := gres.Allocation{Job: "1234_7", Step: "batch", Mems: []int{0, 1}, MemoryBytes: 1 << 30,
		Devices: []gres.DeviceFile{{Path: "/dev/nvidia0", Kind: 'c', Major: 195}}}
	require.NoError(t, good.Validate())
	for _, name := range []string{"1234+1", "a.b", "x-y_z", "..a"} {
		assert.True(t, gres.ValidName(name), name)
	}
	for _, name := range []string{"", ".", "..", "...", "a/b", "a b", "é", string(make([]byte, 65))} {
		assert.False(t, gres.ValidName(name), "%q", name)
	}
	for _, mut := range []func(*gres.Allocation){
		func(a *gres.Allocation) { a.Job = "" },
		func(a *gres.Allocation) { a.Step = ".." },
		func(a *gres.Allocation) { a.MemoryBytes = -1 },
		func(a *gres.Allocation) { a.Mems = []int{-1} },
		func(a *gres.Allocation) { a.Mems = []int{gres.MaxNUMANode + 1} },
		func(a *gres.Allocation) { a.Devices = []gres.DeviceFile{{Path: "/dev/x"}} },
	} {
		a := good
		mut(&a)
		err := a.Validate()
		require.ErrorIs(t, err, gres.ErrInvalidAllocation)
		assert.Contains(t, err.Error(), `job "`)
	}
	a := gres.Allocation{Mems: []int{3, 0, 1, 3, 7, 2}}
	assert.Equal(t, "0-3,7", a.MemsString())
	assert.Equal(t, "", (&gres.Allocation{}).MemsString())
}

func TestApplyHealth(t *testing.T) {
	nd, err := gres.NewNodeDevices(gpuserver.GB200Node())
	require.NoError(t, err)
	reasons := map[int]string{}
	sum, err := gres.ApplyHealth(nd, reasons, []gres.HealthEvent{{Index: 1, Reason: "XID 79"}, {Index: 2, Reason: "GPU is lost"}})
	require.NoError(t, err)
	assert.Equal(t, gres.HealthSummary{Total: 4, Healthy: 2, Reason: "gpu 1: XID 79; gpu 2: GPU is lost"}, sum)
	assert.Equal(t, 2, nd.Free("gpu", ""))

	// Invalid batches change nothing.
	_, err = gres.ApplyHealth(nd, reasons, []gres.HealthEvent{{Index: 0, Reason: "x"}, {Index: 9, Reason: "x"}})
	require.ErrorIs(t, err, gres.ErrUnknownDevice)
	_, err = gres.ApplyHealth(nd, reasons, []gres.HealthEvent{{Index: 0}})
	require.ErrorIs(t, err, gres.ErrInvalidRequest)
	assert.True(t, nd.IsHealthy(0))

	sum, err = gres.ApplyHealth(nd, reasons, []gres.HealthEvent{{Index: 0, Reason: "a"}, {Index: 3, Reason: "b"}})
	require.NoError(t, err)
	assert.True(t, sum.Drain)
	sum, err = gres.ApplyHealth(nd, reasons, []gres.HealthEvent{{Index: 2, Healthy: true, Reason: "recovered"}})
	require.NoError(t, err)
	assert.False(t, sum.Drain)
	assert.Equal(t, 1, sum.Healthy)
	assert.NotContains(t, reasons, 2)

	// Without a reasons map the summary still names the devices.
	nd2, _ := gres.NewNodeDevices(gpuserver.GB200Node())
	sum, err = gres.ApplyHealth(nd2, nil, []gres.HealthEvent{{Index: 3, Reason: "x"}})
	require.NoError(t, err)
	assert.Equal(t, "gpu 3: unhealthy", sum.Reason)
}

// scripted is a HealthWatcher returning scripted batches, then an error.
type scripted struct {
	batches [][]gres.HealthEvent
	err     error
}

func (s *scripted) PollHealth(ctx context.Context, _ time.Duration) ([]gres.HealthEvent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(s.batches) == 0 {
		return nil, s.err
	}
	b := s.batches[0]
	s.batches = s.batches[1:]
	return b, nil
}

func TestWatchHealth(t *testing.T) {
	boom := errors.New("boom")
	w := &scripted{batches: [][]gres.HealthEvent{{{Index: 1, Reason: "x"}}, nil, {{Index: 2, Reason: "y"}}}, err: boom}
	var got []int
	err := gres.WatchHealth(context.Background(), w, 0, func(evs []gres.HealthEvent) {
		for _, ev := range evs {
			got = append(got, ev.Index)
		}
	})
	require.ErrorIs(t, err, boom)
	assert.Equal(t, []int{1, 2}, got)

	ctx, cancel := context.WithCancel(context.Background())
	w = &scripted{batches: [][]gres.HealthEvent{{{Index: 1, Reason: "x"}}, {{Index: 2, Reason: "y"}}}}
	got = nil
	err = gres.WatchHealth(ctx, w, time.Millisecond, func(evs []gres.HealthEvent) {
		got = append(got, evs[0].Index)
		cancel()
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []int{1}, got)
}
