package sim_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
	"github.com/sluicehq/sluice/telemetry"
)

// hungAndQueued is the idle-policy scene on one 8-GPU node: H holds all 8
// GPUs from 0 for 36,000 s of work, busy at 90 % for its first 10 % (3600
// s) and then hung at 0 %; Q, submitted at 60, needs the 8 GPUs for 3600
// s at 80 %.
func hungAndQueued() []sim.Job {
	hung := sim.Profile{Phases: [sim.MaxPhases]sim.Phase{sim.PhaseOf(0.1, 90), sim.PhaseOf(1, 0)}}
	return []sim.Job{
		gpuJob("H", 0, 8, 1, 36000, 43200, hung),
		gpuJob("Q", 60, 8, 1, 3600, 7200, sim.ConstantProfile(80)),
	}
}

// idleCfg is the dgx node with an idle rule (below 5 % for 30 minutes)
// and action a.
func idleCfg(t *testing.T, a scheduler.IdleAction) scheduler.Config {
	cfg := dgx(t)
	cfg.Telemetry = scheduler.TelemetryConfig{Rule: telemetry.Rule{IdleBelow: 5, IdleAfter: 30 * time.Minute}, Action: a}
	return cfg
}

// TestTelemetryIdleCancelFreesGPUs works the scene out by hand with a
// reading every 60 s. The first reading at 0 % is H's at 3600 (pos 3600
// is past its busy 10 %), standing for [3540, 3600): H is idle since
// 3540 and allocated-but-idle for 30 minutes at 5340, a grid instant.
//
//   - notify: H runs to its end at 36,000, Q starts then (wait 35,940 s);
//     the scheduler measured H idle from 3540 to its last reading at
//     35,940: 32,400 s × 8 GPUs = 72 idle GPU-hours; one notice.
//   - cancel: H ends CANCELLED at 5340, its run lost; Q starts at 5340
//     (wait 5280 s). Idle GPU-hours: (5340 − 3540) × 8 = 4.
//
// Goodput: notify (8 × 3600 × 0.9 + 8 × 3600 × 0.8) / (8 × 36,000 + 8 ×
// 3600) = 48,960 / 316,800; cancel 23,040 / (8 × 5340 + 8 × 3600) =
// 23,040 / 71,520 (H's busy 25,920 GPU-s are lost). Energy at 70/700 W:
// (allocated × 70 + busy × 630) J.
func TestTelemetryIdleCancelFreesGPUs(t *testing.T) {
	opt := sim.Options{TelemetryEvery: time.Minute}
	notify := run(t, idleCfg(t, scheduler.IdleNotify), hungAndQueued(), opt)
	cancel := run(t, idleCfg(t, scheduler.IdleCancel), hungAndQueued(), opt)

	n, c := byName(notify), byName(cancel)
	assert.Equal(t, scheduler.JobCompleted, n["H"].State)
	assert.Equal(t, at(36000), n["H"].End)
	assert.Equal(t, at(36000), n["Q"].Start)
	assert.Equal(t, scheduler.JobCancelled, c["H"].State)
	assert.Equal(t, at(5340), c["H"].End)
	assert.Equal(t, at(5340), c["Q"].Start)
	assert.Equal(t, scheduler.JobCompleted, c["Q"].State)
	assert.InDelta(t, 35940, notify.Summary.Wait.Max, 1e-9)
	assert.InDelta(t, 5280, cancel.Summary.Wait.Max, 1e-9)

	assert.InDelta(t, 48960.0/316800, notify.Summary.Goodput.Goodput, 1e-12)
	assert.InDelta(t, 23040.0/71520, cancel.Summary.Goodput.Goodput, 1e-12)
	assert.InDelta(t, 8*5340.0/3600, c["H"].LostWorkGPUHours, 1e-12)
	assert.Zero(t, c["H"].UsefulGPUHours)
	assert.InDelta(t, (316800*70+48960*630)/3.6e6, notify.Summary.Goodput.EnergyKWh, 1e-9)
	assert.InDelta(t, (71520*70+48960*630)/3.6e6, cancel.Summary.Goodput.EnergyKWh, 1e-9)

	nt, ct := notify.Summary.Telemetry, cancel.Summary.Telemetry
	assert.Equal(t, time.Minute, nt.Every)
	assert.Equal(t, 1, nt.IdleNotices)
	assert.Zero(t, nt.IdleCancels+nt.IdleRequeues+nt.LimitCancels)
	assert.InDelta(t, 72, nt.IdleGPUHours, 1e-9)
	assert.Equal(t, 1, ct.IdleNotices)
	assert.Equal(t, 1, ct.IdleCancels)
	assert.InDelta(t, 4, ct.IdleGPUHours, 1e-9)
	// One event per minute while a profiled job runs: H (notify) from 60
	// to 35,940, then Q from 36,060 to 39,540.
	assert.Equal(t, 599+59, nt.Events)
	assert.Equal(t, 8*nt.Events, nt.Samples)
	assert.Zero(t, nt.UnsampledRuns)
}

// TestTelemetryNotifyChangesNothing replays the scene and the small
// synthetic workload with telemetry off and with notify: every result is
// the same but Summary.Telemetry.
func TestTelemetryNotifyChangesNothing(t *testing.T) {
	jobs, err := sim.Synthetic(sim.SyntheticFor(20, 300, 7))
	require.NoError(t, err)
	syn, err := sim.SyntheticCluster(20)
	require.NoError(t, err)
	for name, sc := range map[string]struct {
		cfg  scheduler.Config
		jobs []sim.Job
	}{"scene": {dgx(t), hungAndQueued()}, "synthetic": {syn, jobs}} {
		off := run(t, sc.cfg, sc.jobs, sim.Options{})
		cfg := sc.cfg
		cfg.Telemetry = scheduler.TelemetryConfig{Rule: telemetry.Rule{IdleBelow: 10, IdleAfter: 10 * time.Minute}}
		on := run(t, cfg, sc.jobs, sim.Options{TelemetryEvery: 2 * time.Minute})
		tel := on.Summary.Telemetry
		assert.Positive(t, tel.IdleNotices, name)
		assert.Positive(t, tel.IdleGPUHours, name)
		assert.Positive(t, tel.Events, name)
		on.Summary.Telemetry = sim.TelemetrySummary{}
		assert.Equal(t, off, on, name)
	}
}

// TestTelemetryIdleRequeue: the hung job, requeued, hangs again at the
// same point of its work (its profile is its work's); with a limit of
// one requeue (TelemetryConfig.MaxIdleRequeues) the scheduler ends it at
// its second idle spell. Its
// two runs lose all their work; Q still waits less than under notify.
func TestTelemetryIdleRequeue(t *testing.T) {
	cfg := idleCfg(t, scheduler.IdleRequeue)
	cfg.Telemetry.MaxIdleRequeues = 1
	s, res := runDirect(t, cfg, hungAndQueued(), sim.Options{TelemetryEvery: time.Minute})
	got := byName(res)
	h, q := got["H"], got["Q"]
	assert.Equal(t, scheduler.JobCancelled, h.State)
	assert.Equal(t, 1, h.Restarts)
	assert.Zero(t, h.UsefulGPUHours)
	assert.Equal(t, 5340*time.Second, h.End.Sub(h.Start), "the second run, cancelled")
	assert.InDelta(t, 8*5340.0/3600, h.RequeuedGPUHours, 1e-9, "the first run")
	sh, ok := s.Job(h.ID)
	require.True(t, ok)
	assert.Equal(t, scheduler.JobCancelled, sh.State)
	assert.Equal(t, 1, sh.Restarts, "the scheduler requeued it once, then ended it")
	assert.Equal(t, 1, sh.IdleRequeues)
	tel := res.Summary.Telemetry
	assert.Equal(t, 1, tel.IdleRequeues)
	assert.Equal(t, 1, tel.LimitCancels)
	assert.Zero(t, tel.IdleCancels)
	assert.Equal(t, 2, tel.IdleNotices)
	// Each run of H lasts 5340 s (idle since 1800 s before its end);
	// both runs are lost.
	assert.InDelta(t, 2*8*5340.0/3600, h.LostWorkGPUHours, 1e-9)
	assert.Equal(t, scheduler.JobCompleted, q.State)
	// Requeued at once (no RequeueDelay) and first in line again (its
	// submit time is earlier), H runs again from 5340 to 10,680; Q
	// starts then (wait 10,620 s against 35,940 under notify).
	assert.Equal(t, at(5340), h.Start)
	assert.Equal(t, at(10680), h.End)
	assert.Equal(t, at(10680), q.Start)
	assert.InDelta(t, 23040.0/(2*8*5340+8*3600), res.Summary.Goodput.Goodput, 1e-12)
	assert.InDelta(t, 2*8*5340.0/3600+8, res.Summary.GPUHours, 1e-9, "no run counted twice")
}

// TestTelemetryUnprofiled: a job without a profile beside the
// hung one is read as unknown (-1): it is never idle, never acted on, and
// the hung job is still cancelled on the same node.
func TestTelemetryUnprofiled(t *testing.T) {
	jobs := []sim.Job{
		gpuJob("H", 0, 4, 1, 36000, 43200, hungAndQueued()[0].Profile),
		gpuJob("U", 0, 4, 1, 20000, 43200, sim.Profile{}),
	}
	res := run(t, idleCfg(t, scheduler.IdleCancel), jobs, sim.Options{TelemetryEvery: time.Minute})
	got := byName(res)
	assert.Equal(t, scheduler.JobCancelled, got["H"].State)
	assert.Equal(t, at(5340), got["H"].End)
	assert.Equal(t, scheduler.JobCompleted, got["U"].State)
	assert.Equal(t, at(20000), got["U"].End)
	// Readings stop with H: U alone has no profile.
	assert.Equal(t, 89, res.Summary.Telemetry.Events)
}

// TestTelemetryIdleRequeueAlone: a hung job alone is requeued, waits out
// the requeue delay (a cycle must happen then: the simulator queues one)
// and runs again, until the limit cancels it.
func TestTelemetryIdleRequeueAlone(t *testing.T) {
	cfg := idleCfg(t, scheduler.IdleRequeue)
	cfg.RequeueDelay = scheduler.DefaultRequeueDelay
	cfg.Telemetry.MaxIdleRequeues = 2
	_, res := runDirect(t, cfg, hungAndQueued()[:1], sim.Options{TelemetryEvery: time.Minute})
	h := byName(res)["H"]
	assert.Equal(t, scheduler.JobCancelled, h.State)
	assert.Equal(t, 2, h.Restarts)
	// Runs of 5340 s, each after a 120 s requeue delay.
	assert.Equal(t, at(2*(5340+120)), h.Start)
	assert.Equal(t, at(3*5340+2*120), h.End)
	assert.Equal(t, 2, res.Summary.Telemetry.IdleRequeues)
	assert.Equal(t, 1, res.Summary.Telemetry.LimitCancels)
}

// runDirect replays jobs on a fresh scheduler of cfg (no purge of ended
// jobs) and returns both.
func runDirect(t *testing.T, cfg scheduler.Config, jobs []sim.Job, opt sim.Options) (*scheduler.Scheduler, sim.Result) {
	t.Helper()
	cfg.MinJobAge = 0
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	res, err := sim.Run(s, &sim.SliceSource{Jobs: jobs}, opt)
	require.NoError(t, err)
	return s, res
}

func TestTelemetryOptionsRejected(t *testing.T) {
	for name, opt := range map[string]sim.Options{
		"negative every": {TelemetryEvery: -time.Second},
		"beyond max gap": {TelemetryEvery: 151 * time.Second},
	} {
		s, err := scheduler.New(dgx(t))
		require.NoError(t, err)
		_, err = sim.Run(s, &sim.SliceSource{Jobs: hungAndQueued()}, opt)
		require.Error(t, err, name)
		assert.True(t, errors.Is(err, sim.ErrInvalidOptions), name)
	}
}

// TestTelemetrySchedulerMeasures checks what the scheduler folded from
// the simulated readings of the hung job under notify: 599 readings a
// minute apart cover [0, 35,940) on 8 GPUs; the 59 at 60 … 3540 read 90 %
// (a reading gives the profile at its own instant, standing for the
// minute before it: the scheduler's busy figure lags the profile's
// 8 × 3600 × 0.9 = 25,920 GPU-s by one reading, 8 × 60 × 0.9).
func TestTelemetrySchedulerMeasures(t *testing.T) {
	s, res := runDirect(t, idleCfg(t, scheduler.IdleNotify), hungAndQueued(), sim.Options{TelemetryEvery: time.Minute})
	h := byName(res)["H"]
	j, ok := s.Job(h.ID)
	require.True(t, ok)
	require.NotNil(t, j.Usage)
	assert.Equal(t, int64(599), j.Usage.Samples)
	assert.InDelta(t, 35940, j.Usage.CoveredSeconds, 1e-9)
	assert.InDelta(t, 8*35940, j.Usage.GPUSeconds, 1e-9)
	assert.InDelta(t, 59*60*8*0.9, j.Usage.BusyGPUSeconds, 1e-6)
	assert.InDelta(t, 25920-8*60*0.9, j.Usage.BusyGPUSeconds, 1e-6)
	assert.InDelta(t, 25920.0/3600, h.BusyGPUHours, 1e-12, "the simulator's own figure integrates the profile")
	assert.InDelta(t, 32400, j.Usage.IdleSeconds, 1e-9)
}
