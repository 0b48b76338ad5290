//go:build cgo && linux

package ledger_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/cgroup"
	"github.com/sluicehq/sluice/gres/nvml"
	"github.com/sluicehq/sluice/gres/nvml/nvmltest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/ledger"
	"github.com/sluicehq/sluice/telemetry"
)

// TestTelemetryEndToEnd drives samples from the drivers into the ledger
// and its reports, as a node agent does: every 30 s it reads the GPUs of
// a (mocked) DGX H100 with the NVML driver and each job's cgroup with the
// cgroup driver's reader, reports both to the scheduler as a
// TelemetryEvent, and the recorder writes the jobs' usage when they end.
// Job "train" keeps its 4 GPUs 80 % busy, job "stuck" leaves its 4 at
// 1 %: after the rule's 10 minutes it is allocated but idle. The figures
// checked are computed from the definitions (docs/accounting.md), not
// read back from the code.
func TestTelemetryEndToEnd(t *testing.T) {
	ctx := context.Background()
	srv := nvmltest.DGXH100()
	drv, err := nvml.New(srv, nvml.Options{SysfsRoot: "/nonexistent", ProcRoot: "/nonexistent"})
	require.NoError(t, err)
	require.NoError(t, drv.Init())
	defer drv.Shutdown()
	disc, err := drv.Discover(ctx)
	require.NoError(t, err)

	l, err := accounting.NewMemory(accounting.Config{})
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		for _, a := range []accounting.Assoc{
			{AssocKey: accounting.AssocKey{Cluster: "c", Account: "physics"}},
			{AssocKey: accounting.AssocKey{Cluster: "c", Account: "physics", User: "ann"}},
		} {
			if _, err := tx.PutAssoc(t0, a); err != nil {
				return err
			}
		}
		return nil
	}))
	rule := telemetry.Rule{IdleBelow: 5, IdleAfter: 10 * time.Minute}
	s, err := scheduler.New(scheduler.Config{
		Nodes:      []scheduler.NodeConfig{{Name: "dgx-01", CPUs: 112, MemoryMiB: 2 << 20, Devices: disc.Inventory}},
		Partitions: []scheduler.PartitionConfig{{Name: "gpu", Default: true, MaxTime: 24 * time.Hour}},
		Telemetry:  scheduler.TelemetryConfig{Rule: rule},
	})
	require.NoError(t, err)
	rec, err := ledger.NewRecorder(t0, l, "c", s, ledger.Options{})
	require.NoError(t, err)

	four := []gres.Request{{Name: "gpu", Count: 4}}
	train, err := s.Submit(t0, scheduler.JobSpec{Name: "train", User: "ann", Account: "physics", GRESPerNode: four, TimeLimit: 2 * time.Hour})
	require.NoError(t, err)
	stuck, err := s.Submit(t0, scheduler.JobSpec{Name: "stuck", User: "ann", Account: "physics", GRESPerNode: four, TimeLimit: 2 * time.Hour})
	require.NoError(t, err)
	cyc, err := s.Schedule(t0)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(t0, cyc))
	require.Len(t, cyc.Starts, 2)

	// The cgroups the node's enforcer made for the two jobs: plain
	// directories the cgroup driver's reader is allowed to read here.
	cgroups.TestMode = true
	defer func() { cgroups.TestMode = false }()
	root := t.TempDir()
	util := map[int]uint32{}
	for _, id := range []scheduler.JobID{train, stuck} {
		j, _ := s.Job(id)
		require.NoError(t, os.MkdirAll(filepath.Join(root, fmt.Sprintf("job_%d", id)), 0o755))
		for _, d := range j.Alloc.Nodes[0].Devices {
			util[d] = map[scheduler.JobID]uint32{train: 80, stuck: 1}[id]
		}
	}
	writeCgroup := func(id scheduler.JobID, cpuSeconds int, peak int64) {
		dir := filepath.Join(root, fmt.Sprintf("job_%d", id))
		stat := fmt.Sprintf("usage_usec %d\nuser_usec %d\nsystem_usec 0\n", cpuSeconds*1_000_000, cpuSeconds*1_000_000)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "cpu.stat"), []byte(stat), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "memory.peak"), []byte(fmt.Sprintf("%d\n", peak)), 0o644))
	}

	const polls = 120 // one hour at 30 s
	for k := 1; k <= polls; k++ {
		now := t0.Add(time.Duration(30*k) * time.Second)
		for i := range 8 {
			srv.SetTelemetry(i, nvmltest.Telemetry{GPUPercent: util[i], MemoryUsedBytes: 10 << 30,
				PowerMilliwatts: 400_000, EnergyMillijoules: uint64(k) * 300_000})
		}
		samples, err := drv.Sample(ctx)
		require.NoError(t, err)
		writeCgroup(train, 60*k, 8<<30) // 2 CPUs busy
		writeCgroup(stuck, k, 1<<30)    // 1/30 of a CPU
		var jobs []scheduler.JobReading
		for _, id := range []scheduler.JobID{train, stuck} {
			u, err := cgroup.ReadUsage(filepath.Join(root, fmt.Sprintf("job_%d", id)))
			require.NoError(t, err)
			jobs = append(jobs, scheduler.JobReading{Job: id, CPUSeconds: float64(u.CPUMicros) / 1e6, MemoryPeakBytes: u.MemoryPeakBytes})
		}
		require.NoError(t, noJobs(s.ReportTelemetry(now, scheduler.TelemetryEvent{Node: "dgx-01", Devices: samples, Jobs: jobs})))
		if k == 19 { // 9.5 minutes in: idle since its start, not yet for 10
			j, _ := s.Job(stuck)
			assert.False(t, j.Usage.IsIdle(rule))
		}
		if k == 20 {
			j, _ := s.Job(stuck)
			assert.True(t, j.Usage.IsIdle(rule), "idle from its start to 10m")
			rep := s.IdleCapacity(now)
			assert.Equal(t, int64(4), rep.GPUs[scheduler.IdleAllocated], "stuck's 4 GPUs are allocated but idle")
		}
	}
	end := t0.Add(time.Hour)
	require.NoError(t, s.Finish(end, train, 0))
	require.NoError(t, s.Finish(end, stuck, 0))
	cyc, err = s.Schedule(end)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(end, cyc))

	require.NoError(t, l.View(func(tx accounting.Tx) error {
		tr, err := tx.Job(accounting.JobID(train))
		require.NoError(t, err)
		st, err := tx.Job(accounting.JobID(stuck))
		require.NoError(t, err)
		// 120 readings cover the hour; 4 devices each.
		assert.Equal(t, int64(polls), tr.Usage.Samples)
		assert.InDelta(t, 4*3600, tr.Usage.GPUSeconds, 1e-6)
		assert.InDelta(t, 80, tr.Usage.MeanUtilization(), 1e-9)
		assert.InDelta(t, 1, st.Usage.MeanUtilization(), 1e-9)
		assert.InDelta(t, 3600, st.Usage.IdleSeconds, 1e-6)
		// Energy: 119 rises of 300 J on each of 4 devices (the first
		// reading sets the baseline).
		assert.InDelta(t, 119*300*4, tr.Usage.EnergyJoules, 1e-6)
		assert.Equal(t, 400.0*4, tr.Usage.PowerMaxWatts)
		assert.Equal(t, int64(4*10240), tr.Usage.MemoryMaxMiB)
		// CPU: the counter rose 60 s a poll from 0 at the start (the
		// cgroup's counter is the run's whole, its first reading too).
		assert.InDelta(t, 120*60, tr.Usage.CPUSeconds, 1e-6)
		assert.Equal(t, int64(8<<30), tr.Usage.MemoryPeakBytes)
		assert.Equal(t, 1, tr.LaunchAttempts)
		assert.Zero(t, tr.LostGPUSeconds)

		// Reports: 8 GPU-hours allocated, busy 4×0.8 + 4×0.01 = 3.24,
		// all kept (both completed): goodput 3.24 / 8.
		g, h, err := accounting.Goodput(tx, "c", t0, end.Add(time.Second))
		require.NoError(t, err)
		assert.InDelta(t, 8, h.Allocated, 1e-9)
		assert.InDelta(t, 3.24, h.Busy, 1e-9)
		assert.InDelta(t, 3.24, h.Useful, 1e-9)
		assert.InDelta(t, 3.24/8, g, 1e-9)
		assert.InDelta(t, 2*119*300*4/3.6e6, h.EnergyKWh, 1e-9)
		rep, err := accounting.GPUUsage(tx, "c", t0, end.Add(time.Second))
		require.NoError(t, err)
		require.Len(t, rep.ByAccount, 1)
		assert.Equal(t, "physics", rep.ByAccount[0].Name)
		var b strings.Builder
		require.NoError(t, accounting.WriteGPUUsage(&b, time.UTC, rep, accounting.GroupAccount))
		assert.Contains(t, b.String(), "40.50%")
		return nil
	}))
}

// noJobs drops ReportTelemetry's jobs (no idle action is configured).
func noJobs(_ []scheduler.JobID, err error) error { return err }
