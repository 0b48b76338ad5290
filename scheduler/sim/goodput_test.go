package sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
)

// dgx returns one DGX H100 node (128 CPUs, 8 GPUs) in partition batch.
func dgx(t *testing.T) scheduler.Config {
	t.Helper()
	cfg, err := sim.SyntheticCluster(20)
	require.NoError(t, err)
	cfg.Nodes = cfg.Nodes[:1]
	cfg.Partitions = cfg.Partitions[:1]
	return cfg
}

// gpuJob is a job of gpus GPUs (and cpus CPUs) arriving at submit,
// running run seconds with a limit of limit seconds.
func gpuJob(name string, submit, gpus, cpus, run, limit int, p sim.Profile) sim.Job {
	return sim.Job{Spec: scheduler.JobSpec{Name: name, CPUsPerTask: cpus, TimeLimit: sec(limit),
		GRESPerNode: []gres.Request{{Name: "gpu", Count: int64(gpus)}}},
		Submit: at(submit), Runtime: sec(run), Profile: p}
}

// TestRunGoodputHandComputed replays four jobs that fit together on one
// 8-GPU node, all starting at 0:
//
//   - A, 4 GPUs, 1000 s, stall 100 s then 80 % for half the rest and
//     40 % for the other half: busy 4 × 540 = 2160 GPU-s of 4000
//     allocated, all useful (COMPLETED);
//   - T, 2 GPUs, 2000 s of work but a 600 s limit, at 50 %: busy
//     2 × 300 = 600 of 1200 GPU-s, all lost (TIMEOUT, no checkpoint);
//   - F, 1 GPU, 300 s at 90 %, exit code 1: busy 270 of 300 GPU-s, lost
//     (FAILED);
//   - N, 1 GPU, 500 s, no profile: 500 unmeasured GPU-s.
//
// Goodput = 2160 / 5500; energy at 70/700 W: (5500 × 70 + 3030 × 630) J.
func TestRunGoodputHandComputed(t *testing.T) {
	a := sim.Profile{StallSeconds: 100, Phases: [sim.MaxPhases]sim.Phase{sim.PhaseOf(0.5, 80), sim.PhaseOf(1, 40)}}
	f := gpuJob("F", 0, 1, 1, 300, 3600, sim.ConstantProfile(90))
	f.ExitCode = 1
	jobs := []sim.Job{
		gpuJob("A", 0, 4, 1, 1000, 3600, a),
		gpuJob("T", 0, 2, 1, 2000, 600, sim.ConstantProfile(50)),
		f,
		gpuJob("N", 0, 1, 1, 500, 3600, sim.Profile{}),
	}
	res := run(t, dgx(t), jobs, sim.Options{})
	got := byName(res)
	for name, w := range map[string]struct {
		start                     int
		state                     scheduler.JobState
		busy, useful, lost, alloc float64 // GPU-seconds
	}{
		"A": {0, scheduler.JobCompleted, 2160, 2160, 0, 4000},
		"T": {0, scheduler.JobTimeout, 600, 0, 1200, 1200},
		"F": {0, scheduler.JobFailed, 270, 0, 300, 300},
		"N": {0, scheduler.JobCompleted, 0, 0, 0, 500},
	} {
		r := got[name]
		require.Equal(t, at(w.start), r.Start, name)
		require.Equal(t, w.state, r.State, name)
		assert.InDelta(t, w.busy/3600, r.BusyGPUHours, 1e-12, name)
		assert.InDelta(t, w.useful/3600, r.UsefulGPUHours, 1e-12, name)
		assert.InDelta(t, w.lost/3600, r.LostWorkGPUHours, 1e-12, name)
		if name == "N" {
			assert.Zero(t, r.EnergyKWh, "unmeasured: no energy figure")
		} else {
			assert.InDelta(t, (w.alloc*70+w.busy*630)/3.6e6, r.EnergyKWh, 1e-12, name)
		}
	}
	g := res.Summary.Goodput
	assert.Equal(t, 3, g.MeasuredJobs)
	assert.Equal(t, 1, g.UnmeasuredJobs)
	assert.InDelta(t, 5500.0/3600, g.AllocatedGPUHours, 1e-12)
	assert.InDelta(t, 500.0/3600, g.UnmeasuredGPUHours, 1e-12)
	assert.InDelta(t, 3030.0/3600, g.BusyGPUHours, 1e-12)
	assert.InDelta(t, 2160.0/3600, g.UsefulGPUHours, 1e-12)
	assert.InDelta(t, 1500.0/3600, g.LostGPUHours, 1e-12)
	assert.InDelta(t, 2160.0/5500, g.Goodput, 1e-12)
	assert.InDelta(t, 3030.0/5500, g.BusyFraction, 1e-12)
	energy := (5500*70 + 3030*630) / 3.6e6
	assert.InDelta(t, energy, g.EnergyKWh, 1e-12)
	assert.InDelta(t, energy/(2160.0/3600), g.KWhPerUsefulGPUHour, 1e-12)
	// The run ends at 1000 s: 8 GPUs × 1000 s − 6000 allocated GPU-s idle.
	require.Equal(t, 1000*time.Second, res.Summary.Makespan)
	assert.InDelta(t, 2000*70/3.6e6, g.IdleEnergyKWh, 1e-12)
	// The older lost-work figures are unchanged: T loses its work beyond
	// the limit, F none.
	assert.InDelta(t, 2*1400.0/3600, res.Summary.LostGPUHours, 1e-12)

	// Summarize of the job list gives the same goodput figures.
	sum := sim.Summarize(res.Jobs, res.Series, res.Capacity, res.Start, res.End)
	assert.Equal(t, g, sum.Goodput)

	// Another power model (an A100 SXM: 400 W TDP, 50 W idle).
	res = run(t, dgx(t), jobs, sim.Options{Power: sim.PowerModel{IdleWatts: 50, MaxWatts: 400}})
	assert.InDelta(t, (5500*50+3030*350)/3.6e6, res.Summary.Goodput.EnergyKWh, 1e-12)
	assert.InDelta(t, 2000*50/3.6e6, res.Summary.Goodput.IdleEnergyKWh, 1e-12)
}

// TestRunGoodputPreemption replays a standby job A (4 GPUs, 100 CPUs,
// 1000 s of work) preempted at 100 s by an urgent job U (4 GPUs, 50 CPUs,
// 300 s at 100 %) on one 8-GPU node: the two do not fit together.
func TestRunGoodputPreemption(t *testing.T) {
	stall := sim.Profile{StallSeconds: 200, Phases: [sim.MaxPhases]sim.Phase{sim.PhaseOf(1, 100)}}
	tests := []struct {
		name                      string
		mode                      policy.PreemptMode
		ckpt                      time.Duration
		exit                      int
		profile                   sim.Profile
		busy, useful, lost, alloc float64 // A's, GPU-seconds
	}{
		{
			// Checkpoints every 60 s: the first run (0–100, 400 GPU-s)
			// keeps 60 s of work, 240 GPU-s (160 lost), and its busy
			// 4 × 100 × 0.5 = 200 GPU-s pro rata, 120. The second run
			// (400–1340) does the 940 s left: 1880 busy, all useful.
			name: "requeue at 50 %", mode: policy.PreemptRequeue, ckpt: time.Minute,
			profile: sim.ConstantProfile(50),
			busy:    2080, useful: 2000, lost: 160, alloc: 400 + 3760,
		},
		{
			// A 200 s stall: the first run covers work 0–100, all
			// stall; the second the work 60–1000, of which 60–200 is
			// stall: 4 × 800 busy GPU-s.
			name: "requeue after a stall", mode: policy.PreemptRequeue, ckpt: time.Minute,
			profile: stall,
			busy:    3200, useful: 3200, lost: 160, alloc: 400 + 3760,
		},
		{
			// No checkpoint: the first run is lost whole.
			name: "requeue without checkpoints", mode: policy.PreemptRequeue,
			profile: sim.ConstantProfile(50),
			busy:    200 + 2000, useful: 2000, lost: 400, alloc: 400 + 4000,
		},
		{
			// Cancelled at 100: the run is lost.
			name: "cancel", mode: policy.PreemptCancel,
			profile: sim.ConstantProfile(50),
			busy:    200, useful: 0, lost: 400, alloc: 400,
		},
		{
			// Suspended 100–400 holding its GPUs idle, then completes.
			name: "suspend", mode: policy.PreemptSuspend,
			profile: sim.ConstantProfile(50),
			busy:    2000, useful: 2000, lost: 0, alloc: 4 * 1300,
		},
		{
			// Suspended 100–400, then fails at 1300 without a
			// checkpoint: a suspension is no checkpoint, the whole
			// run is lost (as the scheduler's LostWorkGPUSeconds
			// counts it).
			name: "suspend then fail", mode: policy.PreemptSuspend, exit: 1,
			profile: sim.ConstantProfile(50),
			busy:    2000, useful: 0, lost: 4 * 1300, alloc: 4 * 1300,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := dgx(t)
			cfg.Priority = &scheduler.PriorityConfig{Engine: priority.Config{Weights: priority.Weights{QOS: 1000}},
				QOSPriority: map[string]uint32{"urgent": 100}}
			cfg.Policy = &policy.Config{PreemptType: policy.PreemptQOS, PreemptMode: tt.mode,
				QOS: []policy.QOS{{Name: "urgent", Priority: 100, Preempt: []string{"standby"}}, {Name: "standby"}}}
			a := gpuJob("A", 0, 4, 100, 1000, 3600, tt.profile)
			a.Spec.QOS, a.Spec.Requeue, a.Spec.CheckpointInterval = "standby", scheduler.RequeueYes, tt.ckpt
			a.ExitCode = tt.exit
			u := gpuJob("U", 100, 4, 50, 300, 3600, sim.ConstantProfile(100))
			u.Spec.QOS = "urgent"
			res := run(t, cfg, []sim.Job{a, u}, sim.Options{})
			got := byName(res)
			ra, ru := got["A"], got["U"]
			require.Equal(t, 1, ra.Preemptions)
			assert.InDelta(t, tt.busy/3600, ra.BusyGPUHours, 1e-12)
			assert.InDelta(t, tt.useful/3600, ra.UsefulGPUHours, 1e-12)
			assert.InDelta(t, tt.lost/3600, ra.LostWorkGPUHours, 1e-12)
			assert.InDelta(t, tt.alloc/3600, ra.GPUHours()+ra.RequeuedGPUHours, 1e-12)
			assert.InDelta(t, (tt.alloc*70+tt.busy*630)/3.6e6, ra.EnergyKWh, 1e-12)
			assert.InDelta(t, 1200.0/3600, ru.UsefulGPUHours, 1e-12)
			g := res.Summary.Goodput
			assert.InDelta(t, (tt.useful+1200)/(tt.alloc+1200), g.Goodput, 1e-12)
			assert.InDelta(t, (tt.lost)/3600, g.LostGPUHours, 1e-12)
		})
	}
}

// TestRunRejectsInvalid: a workload job with an invalid profile stops the
// run, naming it; so does an invalid power model.
func TestRunRejectsInvalid(t *testing.T) {
	s, err := scheduler.New(dgx(t))
	require.NoError(t, err)
	bad := gpuJob("B", 0, 1, 1, 10, 60, sim.Profile{StallSeconds: 5})
	_, err = sim.Run(s, &sim.SliceSource{Jobs: []sim.Job{bad}}, sim.Options{})
	require.ErrorIs(t, err, sim.ErrInvalidProfile)
	assert.Contains(t, err.Error(), `workload job 0 ("B")`)
	s, err = scheduler.New(dgx(t))
	require.NoError(t, err)
	_, err = sim.Run(s, &sim.SliceSource{}, sim.Options{Power: sim.PowerModel{IdleWatts: 10}})
	require.ErrorIs(t, err, sim.ErrInvalidOptions)
	require.ErrorIs(t, err, sim.ErrInvalidProfile)
}

// TestRunGoodputAtMostOne: a job busy 100 % of the time in four phases
// is busy (and useful) exactly its allocated GPU-hours, never more: the
// phases' integral, summed in floating point, may round one ulp above the
// run time, which the figures must not show as a goodput above 1.
func TestRunGoodputAtMostOne(t *testing.T) {
	full := sim.Profile{Phases: [sim.MaxPhases]sim.Phase{{End: 2842, Util: sim.ProfileScale}, {End: 5098, Util: sim.ProfileScale},
		{End: 6305, Util: sim.ProfileScale}, {End: sim.ProfileScale, Util: sim.ProfileScale}}}
	j := gpuJob("A", 0, 5, 1, 37944, 86400, full)
	res := run(t, dgx(t), []sim.Job{j}, sim.Options{})
	r := res.Jobs[0]
	require.Equal(t, scheduler.JobCompleted, r.State)
	assert.LessOrEqual(t, r.BusyGPUHours, r.GPUHours())
	assert.LessOrEqual(t, r.UsefulGPUHours, r.GPUHours())
	g := res.Summary.Goodput
	assert.LessOrEqual(t, g.Goodput, 1.0)
	assert.LessOrEqual(t, g.BusyFraction, 1.0)
	assert.InDelta(t, 1.0, g.Goodput, 1e-12)
}

// TestRunGoodputLostMatchesScheduler: the lost GPU-hours the simulator
// computes from its own run bookkeeping (JobResult.LostWorkGPUHours) are
// the scheduler's own count of the job's lost work
// (Job.LostWorkGPUSeconds), for a completion, a time limit, a failure
// and a preemption with requeue.
func TestRunGoodputLostMatchesScheduler(t *testing.T) {
	cfg := dgx(t)
	cfg.Priority = &scheduler.PriorityConfig{Engine: priority.Config{Weights: priority.Weights{QOS: 1000}},
		QOSPriority: map[string]uint32{"urgent": 100}}
	cfg.Policy = &policy.Config{PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptRequeue,
		QOS: []policy.QOS{{Name: "urgent", Priority: 100, Preempt: []string{"standby"}}, {Name: "standby"}}}
	a := gpuJob("A", 0, 4, 100, 1000, 3600, sim.ConstantProfile(50))
	a.Spec.QOS, a.Spec.Requeue, a.Spec.CheckpointInterval = "standby", scheduler.RequeueYes, time.Minute
	u := gpuJob("U", 100, 4, 50, 300, 3600, sim.ConstantProfile(100))
	u.Spec.QOS = "urgent"
	f := gpuJob("F", 0, 1, 1, 300, 3600, sim.ConstantProfile(90))
	f.ExitCode = 1
	tl := gpuJob("T", 0, 2, 1, 2000, 600, sim.ConstantProfile(50))
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	lost := map[string]float64{}
	_, err = sim.Run(s, &sim.SliceSource{Jobs: []sim.Job{a, f, tl, u}}, sim.Options{OnJobEnd: func(r sim.JobResult) error {
		j, ok := s.Job(r.ID)
		require.True(t, ok, r.Job.Spec.Name)
		assert.InDelta(t, j.LostWorkGPUSeconds/3600, r.LostWorkGPUHours, 1e-9, r.Job.Spec.Name)
		lost[r.Job.Spec.Name] = r.LostWorkGPUHours * 3600
		return nil
	}})
	require.NoError(t, err)
	// (A's first run keeps its 60 s checkpoint: 4 × 40 lost.)
	assert.InDeltaMapValues(t, map[string]float64{"A": 160, "F": 300, "T": 1200, "U": 0}, lost, 1e-6)
}
