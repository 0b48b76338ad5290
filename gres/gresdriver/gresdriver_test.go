package gresdriver_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/gres/gresdriver"
)

// staticDriver is a pure-Go driver over a fixed inventory with a fault
// queue: what a minimal third-party driver looks like.
type staticDriver struct {
	disc    gres.Discovery
	mu      sync.Mutex
	faults  []int
	unready map[int]bool
}

func newStatic() *staticDriver {
	inv := gpuserver.DGXA100()
	d := &staticDriver{disc: gres.Discovery{Inventory: inv}, unready: map[int]bool{}}
	for _, dv := range inv.Devices {
		d.disc.Files = append(d.disc.Files, []gres.DeviceFile{{Path: fmt.Sprintf("/dev/accel%d", dv.Index), Kind: gres.CharDevice, Major: 240, Minor: int64(dv.Index)}})
	}
	d.disc.CommonFiles = []gres.DeviceFile{{Path: "/dev/accelctl", Kind: gres.CharDevice, Major: 240, Minor: 255}}
	return d
}

func (d *staticDriver) Discover(ctx context.Context) (gres.Discovery, error) {
	if err := ctx.Err(); err != nil {
		return gres.Discovery{}, err
	}
	out := d.disc
	out.Inventory = d.disc.Inventory.Clone()
	out.Files = nil
	for _, f := range d.disc.Files {
		out.Files = append(out.Files, slices.Clone(f))
	}
	return out, nil
}

func (d *staticDriver) PollHealth(ctx context.Context, _ time.Duration) ([]gres.HealthEvent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []gres.HealthEvent
	slices.Sort(d.faults)
	for _, f := range slices.Compact(d.faults) {
		if d.unready[f] {
			continue
		}
		d.unready[f] = true
		uuid := ""
		for _, dv := range d.disc.Inventory.Devices {
			if dv.Index == f {
				uuid = dv.UUID
			}
		}
		out = append(out, gres.HealthEvent{Index: f, UUID: uuid, Reason: "injected"})
	}
	d.faults = nil
	return out, nil
}

func (d *staticDriver) inject(i int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults = append(d.faults, i)
	return nil
}

// memEnforcer is an in-memory gres.Enforcer.
type memEnforcer struct {
	mu   sync.Mutex
	held map[[2]string]gres.Allocation
}

func (m *memEnforcer) Apply(ctx context.Context, a gres.Allocation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := a.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.held[[2]string{a.Job, ""}]; a.Step != "" && !ok {
		return fmt.Errorf("step %s: %w", a.Step, gres.ErrJobNotApplied)
	}
	m.held[[2]string{a.Job, a.Step}] = a
	return nil
}

func (m *memEnforcer) Release(ctx context.Context, job, step string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !gres.ValidName(job) || step != "" && !gres.ValidName(step) {
		return gres.ErrInvalidAllocation
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.held {
		if k[0] == job && (step == "" || k[1] == step) {
			delete(m.held, k)
		}
	}
	return nil
}

func TestSuiteOnReferenceDrivers(t *testing.T) {
	d := newStatic()
	gresdriver.TestDiscoverer(t, d)
	gresdriver.TestHealthWatcher(t, d, d, gresdriver.HealthConfig{Inject: d.inject})

	m := &memEnforcer{held: map[[2]string]gres.Allocation{}}
	disc, err := d.Discover(context.Background())
	require.NoError(t, err)
	files, err := disc.FilesFor([]int{0, 1})
	require.NoError(t, err)
	gresdriver.TestEnforcer(t, m, gresdriver.EnforcerConfig{
		Devices: files,
		Check: func(t *testing.T, a gres.Allocation) {
			m.mu.Lock()
			defer m.mu.Unlock()
			assert.Equal(t, a, m.held[[2]string{a.Job, a.Step}])
		},
		CheckReleased: func(t *testing.T, job, step string) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for k := range m.held {
				assert.False(t, k[0] == job && (step == "" || k[1] == step), "%v still held", k)
			}
		},
	})
	assert.Empty(t, m.held)
}

func TestCheckDiscoveryCatches(t *testing.T) {
	good := func() gres.Discovery {
		d := newStatic()
		disc, _ := d.Discover(context.Background())
		return disc
	}
	require.NoError(t, gresdriver.CheckDiscovery(good()))
	cases := map[string]func(*gres.Discovery){
		"duplicate index":   func(d *gres.Discovery) { d.Inventory.Devices[1].Index = 0 },
		"asymmetric link":   func(d *gres.Discovery) { d.Inventory.Links[0][1].NVLinks = 3 },
		"self link":         func(d *gres.Discovery) { d.Inventory.Links[2][2].NVLinks = 1 },
		"short file list":   func(d *gres.Discovery) { d.Files = d.Files[:3] },
		"bad file":          func(d *gres.Discovery) { d.Files[0][0].Kind = 'x' },
		"empty files":       func(d *gres.Discovery) { d.Files[4] = nil },
		"bad common file":   func(d *gres.Discovery) { d.CommonFiles[0].Path = "dev/x" },
		"empty name":        func(d *gres.Discovery) { d.Inventory.Devices[0].Name = "" },
		"ragged link row":   func(d *gres.Discovery) { d.Inventory.Links[3] = d.Inventory.Links[3][:2] },
		"PCIe vs NUMA":      func(d *gres.Discovery) { setLink(d, 0, 7, gres.Link{PCIe: gres.PCIePIX}) },
		"decreasing index":  func(d *gres.Discovery) { d.Inventory.Devices[7].Index = 3 },
		"duplicate UUID":    func(d *gres.Discovery) { d.Inventory.Devices[7].UUID = d.Inventory.Devices[0].UUID },
		"NVSwitch no lanes": func(d *gres.Discovery) { setLink(d, 0, 1, gres.Link{NVSwitch: true, PCIe: gres.PCIePXB}) },
	}
	for name, mutate := range cases {
		d := good()
		mutate(&d)
		assert.Error(t, gresdriver.CheckDiscovery(d), name)
	}
}

func setLink(d *gres.Discovery, i, j int, l gres.Link) {
	d.Inventory.Links[i][j], d.Inventory.Links[j][i] = l, l
}

func TestCheckHealthEventsCatches(t *testing.T) {
	inv := gpuserver.DGXH100()
	u := func(i int) string { return inv.Devices[i].UUID }
	require.NoError(t, gresdriver.CheckHealthEvents(inv, nil))
	require.NoError(t, gresdriver.CheckHealthEvents(inv, []gres.HealthEvent{{Index: 1, UUID: u(1), Reason: "XID 79"}, {Index: 4, UUID: u(4), Healthy: true}}))
	for name, evs := range map[string][]gres.HealthEvent{
		"unknown index": {{Index: 8, Reason: "x"}},
		"wrong UUID":    {{Index: 1, UUID: u(2), Reason: "x"}},
		"no reason":     {{Index: 1, UUID: u(1)}},
		"unsorted":      {{Index: 2, UUID: u(2), Reason: "x"}, {Index: 1, UUID: u(1), Reason: "x"}},
		"twice":         {{Index: 2, UUID: u(2), Reason: "x"}, {Index: 2, UUID: u(2), Healthy: true}},
	} {
		assert.Error(t, gresdriver.CheckHealthEvents(inv, evs), name)
	}
}
