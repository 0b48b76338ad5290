package sim_test

import (
	"math/rand/v2"
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

// preemptNode is one 4-CPU node where QOS urgent preempts standby in
// mode, with a grace time for standby. Urgent jobs also come first in the
// queue (the QOS factor of multifactor priority), so that a requeued
// standby job does not start again ahead of its preemptor.
func preemptNode(mode policy.PreemptMode, grace time.Duration) scheduler.Config {
	return scheduler.Config{
		Priority: &scheduler.PriorityConfig{Engine: priority.Config{Weights: priority.Weights{QOS: 1000}},
			QOSPriority: map[string]uint32{"urgent": 100}},
		Partitions: []scheduler.PartitionConfig{{Name: "batch", Default: true}},
		Nodes:      []scheduler.NodeConfig{{Name: "n0", CPUs: 4}},
		Policy: &policy.Config{
			PreemptType: policy.PreemptQOS,
			PreemptMode: mode,
			QOS: []policy.QOS{
				{Name: "urgent", Priority: 100, Preempt: []string{"standby"}},
				{Name: "standby", GraceTime: grace},
			},
		},
	}
}

// qosJob is a whole-node (4 CPU) job of the given QOS.
func qosJob(name, qos string, submit, run, limit int) sim.Job {
	j := job(name, submit, 1, run, limit)
	j.Spec.QOS, j.Spec.CPUsPerTask, j.Spec.Requeue = qos, 4, scheduler.RequeueYes
	return j
}

// TestRunPreemption replays, for every preemption action, a standby job A
// (run 1000 s, limit 2000 s) preempted at 100 s by an urgent job U (run
// 300 s), and checks the hand-computed schedule, states and lost work.
func TestRunPreemption(t *testing.T) {
	type want struct {
		start, end  int
		state       scheduler.JobState
		restarts    int
		suspended   int
		lostCPUSecs float64
		requeuedCPU float64 // CPU-hours of earlier runs
	}
	tests := []struct {
		name   string
		mode   policy.PreemptMode
		grace  time.Duration
		a      sim.Job
		ckpt   time.Duration
		wantA  want
		wantU  [2]int
		cpuHrs float64
	}{
		{
			// A's run is lost at 100 and starts again from scratch at 400.
			name: "requeue", mode: policy.PreemptRequeue,
			a:     qosJob("A", "standby", 0, 1000, 2000),
			wantA: want{start: 400, end: 1400, state: scheduler.JobCompleted, restarts: 1, lostCPUSecs: 400, requeuedCPU: 400.0 / 3600},
			wantU: [2]int{100, 400}, cpuHrs: 4 * (100 + 300 + 1000) / 3600.0,
		},
		{
			// A checkpoints every 60 s: only the 40 s since 60 are lost.
			name: "requeue with checkpoints", mode: policy.PreemptRequeue, ckpt: 60 * time.Second,
			a:     qosJob("A", "standby", 0, 1000, 2000),
			wantA: want{start: 400, end: 1340, state: scheduler.JobCompleted, restarts: 1, lostCPUSecs: 160, requeuedCPU: 400.0 / 3600},
			wantU: [2]int{100, 400}, cpuHrs: 4 * (100 + 300 + 940) / 3600.0,
		},
		{
			// Signalled at 100, requeued at 150 when the grace time ends
			// (the scheduler counts the work lost up to then).
			name: "requeue with grace time", mode: policy.PreemptRequeue, grace: 50 * time.Second,
			a:     qosJob("A", "standby", 0, 1000, 2000),
			wantA: want{start: 450, end: 1450, state: scheduler.JobCompleted, restarts: 1, lostCPUSecs: 600, requeuedCPU: 600.0 / 3600},
			wantU: [2]int{150, 450}, cpuHrs: 4 * (150 + 300 + 1000) / 3600.0,
		},
		{
			// Checkpoints every 60 s and a grace time of 50 s: requeued at
			// 150, it keeps the work up to its checkpoint at 120 (the
			// scheduler counts 30 s lost) and needs 880 s more.
			name: "requeue with grace time and checkpoints", mode: policy.PreemptRequeue, grace: 50 * time.Second, ckpt: 60 * time.Second,
			a:     qosJob("A", "standby", 0, 1000, 2000),
			wantA: want{start: 450, end: 1330, state: scheduler.JobCompleted, restarts: 1, lostCPUSecs: 120, requeuedCPU: 600.0 / 3600},
			wantU: [2]int{150, 450}, cpuHrs: 4 * (150 + 300 + 880) / 3600.0,
		},
		{
			name: "cancel", mode: policy.PreemptCancel,
			a:     qosJob("A", "standby", 0, 1000, 2000),
			wantA: want{start: 0, end: 100, state: scheduler.JobPreempted, lostCPUSecs: 400},
			wantU: [2]int{100, 400}, cpuHrs: 4 * (100 + 300) / 3600.0,
		},
		{
			name: "cancel with grace time", mode: policy.PreemptCancel, grace: 50 * time.Second,
			a:     qosJob("A", "standby", 0, 1000, 2000),
			wantA: want{start: 0, end: 150, state: scheduler.JobPreempted, lostCPUSecs: 600},
			wantU: [2]int{150, 450}, cpuHrs: 4 * (150 + 300) / 3600.0,
		},
		{
			// Suspended 100..400, then runs its 900 s left.
			name: "suspend", mode: policy.PreemptSuspend,
			a:     qosJob("A", "standby", 0, 1000, 2000),
			wantA: want{start: 0, end: 1300, state: scheduler.JobCompleted, suspended: 300},
			wantU: [2]int{100, 400}, cpuHrs: 4 * (1000 + 300) / 3600.0,
		},
		{
			// The limit counts running time only: 2000 s of it end at 2300.
			name: "suspend then timeout", mode: policy.PreemptSuspend,
			a:     qosJob("A", "standby", 0, 5000, 2000),
			wantA: want{start: 0, end: 2300, state: scheduler.JobTimeout, suspended: 300},
			wantU: [2]int{100, 400}, cpuHrs: 4 * (2000 + 300) / 3600.0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.a
			a.Spec.CheckpointInterval = tt.ckpt
			jobs := []sim.Job{a, qosJob("U", "urgent", 100, 300, 500)}
			var pre []scheduler.Preemption
			res := run(t, preemptNode(tt.mode, tt.grace), jobs, sim.Options{
				OnCycle: func(_ *scheduler.Scheduler, c scheduler.Cycle) { pre = append(pre, c.Preemptions...) },
			})
			require.Len(t, pre, 1)
			require.Len(t, res.Jobs, 2)
			got := byName(res)
			ra, ru := got["A"], got["U"]
			assert.Equal(t, at(tt.wantA.start), ra.Start)
			assert.Equal(t, at(tt.wantA.end), ra.End)
			assert.Equal(t, tt.wantA.state, ra.State)
			assert.Equal(t, tt.wantA.restarts, ra.Restarts)
			assert.Equal(t, 1, ra.Preemptions)
			assert.Equal(t, sec(tt.wantA.suspended), ra.Suspended)
			assert.InDelta(t, tt.wantA.lostCPUSecs, ra.LostCPUSeconds, 1e-9)
			assert.InDelta(t, pre[0].LostCPUSeconds, ra.LostCPUSeconds, 1e-9)
			assert.InDelta(t, tt.wantA.requeuedCPU, ra.RequeuedCPUHours, 1e-9)
			assert.Equal(t, at(tt.wantU[0]), ru.Start)
			assert.Equal(t, at(tt.wantU[1]), ru.End)
			assert.Equal(t, scheduler.JobCompleted, ru.State)
			assert.Zero(t, ru.Preemptions)

			sum := res.Summary
			assert.Equal(t, 2, sum.Jobs)
			assert.Equal(t, 1, sum.Preemptions)
			assert.Equal(t, tt.wantA.restarts, sum.Restarts)
			assert.InDelta(t, tt.wantA.lostCPUSecs/3600, sum.LostCPUHoursPreempted, 1e-9)
			assert.Zero(t, sum.LostGPUHoursPreempted)
			assert.InDelta(t, tt.cpuHrs, sum.CPUHours, 1e-9)
			assert.LessOrEqual(t, sum.CPUUtilization, 1.0)
			// The busy series never shows more than the node.
			for _, s := range res.Series {
				assert.LessOrEqual(t, s.BusyCPUs, 4.0)
				assert.GreaterOrEqual(t, s.BusyCPUs, 0.0)
				assert.LessOrEqual(t, s.Running, 1.0)
			}
		})
	}
}

// TestRunPreemptionSuspendKeepsGPUs: a suspended job lends its CPUs but
// its GPUs stay busy, and it is charged GPU time for the suspension.
func TestRunPreemptionSuspendKeepsGPUs(t *testing.T) {
	cfg, err := sim.SyntheticCluster(20)
	require.NoError(t, err)
	cfg.Policy = &policy.Config{PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptSuspend,
		QOS: []policy.QOS{{Name: "urgent", Preempt: []string{"standby"}}, {Name: "standby"}}}
	cfg.Nodes = cfg.Nodes[:1] // one DGX H100: 128 CPUs, 8 GPUs
	cfg.Partitions = cfg.Partitions[:1]
	gpus := []gres.Request{{Name: "gpu", Count: 4}}
	a := sim.Job{Spec: scheduler.JobSpec{Name: "A", QOS: "standby", CPUsPerTask: 100, GRESPerNode: gpus, TimeLimit: time.Hour},
		Submit: at(0), Runtime: sec(1000)}
	u := sim.Job{Spec: scheduler.JobSpec{Name: "U", QOS: "urgent", CPUsPerTask: 50, GRESPerNode: gpus, TimeLimit: time.Hour},
		Submit: at(100), Runtime: sec(300)}
	res := run(t, cfg, []sim.Job{a, u}, sim.Options{})
	got := byName(res)
	assert.Equal(t, at(1300), got["A"].End)
	assert.Equal(t, sec(300), got["A"].Suspended)
	assert.InDelta(t, 100*1000/3600.0, got["A"].CPUHours(), 1e-9)
	assert.InDelta(t, 4*1300/3600.0, got["A"].GPUHours(), 1e-9)
	want := []struct{ at, cpus, gpus, running float64 }{
		{0, 100, 4, 1}, {100, 50, 8, 1}, {400, 100, 4, 1}, {1300, 0, 0, 0},
	}
	require.Len(t, res.Series, len(want))
	for i, w := range want {
		s := res.Series[i]
		assert.Equal(t, at(int(w.at)), s.At)
		assert.Equal(t, []float64{w.cpus, w.gpus, w.running}, []float64{s.BusyCPUs, s.BusyGPUs, s.Running}, "sample %d", i)
	}
}

// TestRunPreemptionRandom replays seeded synthetic workloads, a random
// third of the jobs urgent, in every preemption mode: the run must end
// without error, and after every cycle the busy CPUs, GPUs and running
// jobs the simulator records must be what the scheduler's job snapshots
// hold (a suspended job holds GPUs, not CPUs).
func TestRunPreemptionRandom(t *testing.T) {
	modes := []policy.PreemptMode{policy.PreemptRequeue, policy.PreemptCancel, policy.PreemptSuspend}
	for _, mode := range modes {
		grace := 30 * time.Second // GraceTime for REQUEUE and CANCEL
		if mode == policy.PreemptSuspend {
			grace = 0
		}
		total := 0
		for seed := range uint64(3) {
			cfg, err := sim.SyntheticCluster(20)
			require.NoError(t, err)
			cfg.Priority = &scheduler.PriorityConfig{Engine: priority.Config{Weights: priority.Weights{QOS: 1000}},
				QOSPriority: map[string]uint32{"urgent": 100}}
			cfg.Policy = &policy.Config{PreemptType: policy.PreemptQOS, PreemptMode: mode,
				QOS: []policy.QOS{
					{Name: "urgent", Priority: 1000, Preempt: []string{"standby"}},
					{Name: "standby", GraceTime: grace},
				}}
			jobs, err := sim.Synthetic(sim.SyntheticConfig{Jobs: 80, Seed: seed, Span: 2 * time.Hour, MaxNodes: 4})
			require.NoError(t, err)
			rng := rand.New(rand.NewPCG(seed, 7))
			for i := range jobs {
				jobs[i].Spec.QOS = "standby"
				jobs[i].Spec.Requeue = scheduler.RequeueYes
				if rng.IntN(4) == 0 {
					jobs[i].Spec.Requeue = scheduler.RequeueNo
				}
				if rng.IntN(3) == 0 {
					jobs[i].Spec.QOS = "urgent"
				}
				if rng.IntN(2) == 0 {
					jobs[i].Spec.CheckpointInterval = time.Duration(1+rng.IntN(30)) * time.Minute
				}
			}
			type state struct {
				at                  time.Time
				cpus, gpus, running int64
			}
			var seen []state
			preempted := 0
			res := run(t, cfg, jobs, sim.Options{OnCycle: func(s *scheduler.Scheduler, c scheduler.Cycle) {
				preempted += len(c.Preemptions)
				id, _ := s.Registry().Lookup("gres/gpu")
				st := state{at: c.Now}
				for _, j := range s.Jobs() {
					if j.State != scheduler.JobRunning && j.State != scheduler.JobSuspended {
						continue
					}
					tot := j.Alloc.Total()
					st.cpus += tot.At(gres.CPU)
					st.gpus += tot.At(id)
					if j.State == scheduler.JobRunning {
						st.running++
					}
				}
				seen = append(seen, st)
			}})
			total += preempted
			require.Equal(t, len(jobs), len(res.Jobs)+res.Rejected)
			sum := res.Summary
			require.Equal(t, preempted, sum.Preemptions)
			require.Equal(t, sum.Jobs, sum.Completed+sum.Failed+sum.TimedOut+sum.Killed)
			require.LessOrEqual(t, sum.CPUUtilization, 1.0+1e-9)
			require.LessOrEqual(t, sum.GPUUtilization, 1.0+1e-9)
			var lost float64
			for _, r := range res.Jobs {
				lost += r.LostGPUSeconds
				require.GreaterOrEqual(t, r.Preemptions, r.Restarts)
				require.False(t, r.Start.Before(r.Job.Submit))
				require.LessOrEqual(t, r.RunTime()-r.Suspended, r.Job.Spec.TimeLimit)
				if mode != policy.PreemptRequeue {
					require.Zero(t, r.Restarts)
				}
				if mode == policy.PreemptSuspend {
					require.Zero(t, r.LostGPUSeconds)
				}
			}
			require.InDelta(t, lost/3600, sum.LostGPUHoursPreempted, 1e-6)
			// One cycle per instant: the series' value at each cycle is
			// the state the scheduler's snapshots show.
			k := 0
			for _, st := range seen {
				for k+1 < len(res.Series) && !res.Series[k+1].At.After(st.at) {
					k++
				}
				s := res.Series[k]
				require.Equal(t, []float64{float64(st.cpus), float64(st.gpus), float64(st.running)},
					[]float64{s.BusyCPUs, s.BusyGPUs, s.Running}, "mode %v seed %d at %s", mode, seed, st.at)
			}
			for _, s := range res.Series {
				require.GreaterOrEqual(t, s.BusyCPUs, 0.0)
				require.GreaterOrEqual(t, s.BusyGPUs, 0.0)
				require.GreaterOrEqual(t, s.Running, 0.0)
			}
		}
		if mode != policy.PreemptSuspend {
			// Synthetic jobs take whole GPU sets, so suspending (which
			// lends CPUs only) rarely frees room: the hand-made tests
			// cover SUSPEND.
			require.Positive(t, total, "mode %v: no preemption exercised", mode)
		}
	}
}
