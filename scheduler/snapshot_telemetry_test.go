package scheduler

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/telemetry"
)

// TestSnapshotNodeTelemetryExtension checks the nodes section's minor-4
// extension: the device energy counters read back, a section that ends
// before it (minor 3 and older) reads with no counters (the next reading
// starts them), and counters of another device count are refused.
func TestSnapshotNodeTelemetryExtension(t *testing.T) {
	cfg := Config{Partitions: []PartitionConfig{{Name: "p", Default: true}}}
	for _, n := range []string{"h100-01", "h100-02"} {
		cfg.Nodes = append(cfg.Nodes, NodeConfig{Name: n, CPUs: 112, MemoryMiB: 1 << 20, Devices: gpuserver.DGXH100()})
	}
	s, err := New(cfg)
	require.NoError(t, err)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	devs := make([]gres.DeviceSample, 8)
	for i := range devs {
		devs[i] = gres.DeviceSample{Index: i, Utilization: -1, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: float64(100 * i)}
	}
	devs[3].EnergyJoules = -1
	require.NoError(t, noJobs(s.ReportTelemetry(at.Add(time.Second), TelemetryEvent{Node: "h100-02", Devices: devs})))
	ni := s.nodeByName["h100-02"]
	require.Len(t, s.nodes[ni].tel.energy, 8)

	var full, ext senc
	require.NoError(t, s.snapNodes(&full))
	snapNodeTelemetry(&ext, s)
	ids := make([]gres.ID, s.reg.Len())
	for k := range ids {
		ids[k] = gres.ID(k)
	}
	load := func(b []byte) (*Scheduler, error) {
		r, err := New(cfg)
		require.NoError(t, err)
		d := &sdec{b: b, sec: "nodes", ids: ids, nreg: s.reg.Len()}
		if _, err := r.loadNodes(d); err != nil {
			return nil, err
		}
		return r, d.done()
	}
	r, err := load(full.b)
	require.NoError(t, err)
	require.Equal(t, s.nodes[ni].tel.energy, r.nodes[ni].tel.energy)
	require.Equal(t, -1.0, r.nodes[ni].tel.energy[3])

	old := full.b[:len(full.b)-len(ext.b)]
	r, err = load(old)
	require.NoError(t, err)
	for i := range r.nodes {
		require.Empty(t, r.nodes[i].tel.energy)
	}

	var e senc
	e.uvarint(1)
	e.uvarint(uint64(ni))
	e.uvarint(3) // the node has 8 devices
	for range 3 {
		e.f64(1)
	}
	_, err = load(append(append([]byte(nil), old...), e.b...))
	require.ErrorContains(t, err, "energy counters")
}

// noJobs drops ReportTelemetry's jobs, for tests that expect no idle
// action.
func noJobs(_ []JobID, err error) error { return err }

// TestValidUsageRefusesWhatNoFoldGives checks the restore check of a
// usage: every sum and maximum a fold of valid readings keeps finite and
// non-negative, power and memory maxima included (a NaN or infinite one
// would make the restored job's JSON unencodable).
func TestValidUsageRefusesWhatNoFoldGives(t *testing.T) {
	require.Empty(t, validUsage(&telemetry.Usage{PowerMaxWatts: 700, MemoryMaxMiB: 80 << 10, MemoryPeakBytes: 1 << 30}))
	for name, u := range map[string]telemetry.Usage{
		"power NaN":   {PowerMaxWatts: math.NaN()},
		"power inf":   {PowerMaxWatts: math.Inf(1)},
		"power neg":   {PowerMaxWatts: -1},
		"memory max":  {MemoryMaxMiB: -1},
		"memory peak": {MemoryPeakBytes: -2},
		"busy NaN":    {BusyGPUSeconds: math.NaN()},
	} {
		require.NotEmpty(t, validUsage(&u), name)
	}
}
