package scheduler_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/telemetry"
	"github.com/sluicehq/sluice/topology"
)

// TestIdleCapacityCountsEveryIdleUnitOnce drives random event sequences
// and checks, at every step, that each node's free idle GPUs (free ones
// plus unhealthy ones no job holds) and free CPUs are split over the free
// classes exactly, that its allocated-idle class holds exactly the GPUs
// and CPUs of the running jobs its telemetry readings show idle (random
// readings, all of a node's devices idle or all busy, under a rule with
// IdleAfter 0: idle when the latest reading since the job started was
// idle and no node of the job last read busy), that the totals are the
// sums of the nodes, and that the report is deterministic.
func TestIdleCapacityCountsEveryIdleUnitOnce(t *testing.T) {
	for _, mode := range []string{"none", "easy", "conservative"} {
		t.Run(mode, func(t *testing.T) {
			for seed := range uint64(8) {
				rng := rand.New(rand.NewPCG(seed, 17))
				cfg := clustertest.Mixed4()
				switch mode {
				case "easy":
					cfg.Backfill = &backfill.Config{Mode: backfill.EASY, Resolution: time.Second}
				case "conservative":
					cfg.Backfill = &backfill.Config{Resolution: time.Second}
				}
				cfg.Policy = &policy.Config{}
				cfg.Telemetry.Rule = telemetry.Rule{IdleBelow: 5}
				s, err := scheduler.New(cfg)
				require.NoError(t, err)
				names := []string{"h100-01", "h100-02", "a100-01", "a100-02"}
				now := clustertest.Epoch
				if seed%2 == 0 {
					nodes := topology.NewNodeSet(4)
					nodes.Add(rng.IntN(4))
					require.NoError(t, s.AddReservation(now, policy.Reservation{Name: "m", Start: now.Add(time.Duration(rng.IntN(3)) * time.Hour),
						Duration: time.Hour, Nodes: nodes, Users: []string{"root"}, Flags: policy.ResvMaint | policy.ResvIgnoreJobs}))
				}
				// Telemetry draws from its own stream, so that the
				// other events are those of the sequence without it.
				trng := rand.New(rand.NewPCG(seed, 29))
				tel := newIdleOracle()
				for step := range 40 {
					switch k := rng.IntN(10); {
					case k < 5:
						_, _ = s.Submit(now, randSpec(rng))
					case k < 6:
						_ = s.SetDeviceHealth(now, names[rng.IntN(4)], rng.IntN(8), rng.IntN(2) == 0, "xid")
					case k < 7:
						_ = s.DrainNode(now, names[rng.IntN(4)], "t")
					case k < 8:
						_ = s.ResumeNode(now, names[rng.IntN(4)])
					default:
						_, err := s.Schedule(now)
						require.NoError(t, err)
					}
					tel.started(s)
					if trng.IntN(3) == 0 {
						name, idle := names[trng.IntN(4)], trng.IntN(2) == 0
						util := 80.0
						if idle {
							util = 1
						}
						require.NoError(t, noJobs(s.ReportTelemetry(now, scheduler.TelemetryEvent{Node: name, Devices: uniform(util)})))
						tel.read(name, now, idle)
					}
					rep := s.IdleCapacity(now)
					assert.Equal(t, rep, s.IdleCapacity(now), "deterministic")
					checkIdle(t, s, rep, tel, seed, step)
					now = now.Add(time.Duration(rng.IntN(40)) * time.Minute)
				}
			}
		})
	}
}

// idleOracle keeps the readings the property test reported, to say from
// them alone which jobs are idle where (for a rule with IdleAfter 0).
type idleOracle struct {
	seq      int
	readings map[string][]idleReading
	since    map[scheduler.JobID]int // the readings seen before the job ran
}

type idleReading struct {
	seq  int
	at   time.Time
	idle bool
}

func newIdleOracle() *idleOracle {
	return &idleOracle{readings: map[string][]idleReading{}, since: map[scheduler.JobID]int{}}
}

// started notes the jobs running for the first time.
func (o *idleOracle) started(s *scheduler.Scheduler) {
	for _, j := range s.Jobs() {
		if _, ok := o.since[j.ID]; !ok && j.State == scheduler.JobRunning {
			o.since[j.ID] = o.seq
		}
	}
}

func (o *idleOracle) read(node string, at time.Time, idle bool) {
	o.seq++
	o.readings[node] = append(o.readings[node], idleReading{seq: o.seq, at: at, idle: idle})
}

// state is what node's readings since job j started say of it: "idle",
// "busy" or "" (none: a busy reading at its start covers no time).
func (o *idleOracle) state(j scheduler.Job, node string) string {
	rs := o.readings[node]
	if len(rs) == 0 || rs[len(rs)-1].seq <= o.since[j.ID] {
		return ""
	}
	switch r := rs[len(rs)-1]; {
	case r.idle:
		return "idle"
	case r.at.After(j.StartTime):
		return "busy"
	}
	return ""
}

// allocated returns the GPUs and CPUs of node that running jobs idle
// there hold.
func (o *idleOracle) allocated(s *scheduler.Scheduler, n scheduler.NodeInfo) (gpus, cpus int64) {
	for _, id := range n.Jobs {
		j, _ := s.Job(id)
		if j.State != scheduler.JobRunning {
			continue
		}
		// Idle on n: n's readings say idle, and no node of the job's
		// last reads busy.
		here, busy := false, false
		for _, na := range j.Alloc.Nodes {
			if len(na.Devices) == 0 {
				continue // no GPU there: no reading is the job's
			}
			st := o.state(j, na.Name)
			busy = busy || st == "busy"
			here = here || (na.Node == n.Index && st == "idle")
		}
		if !here || busy {
			continue
		}
		for _, na := range j.Alloc.Nodes {
			if na.Node == n.Index {
				gpus += int64(len(na.Devices))
				cpus += int64(len(na.CPUs))
			}
		}
	}
	return gpus, cpus
}

func checkIdle(t *testing.T, s *scheduler.Scheduler, rep scheduler.IdleReport, tel *idleOracle, seed uint64, step int) {
	t.Helper()
	gpuID := s.Registry().MustLookup("gres/gpu")
	byName := map[string]scheduler.NodeIdleCapacity{}
	var gpus, cpus scheduler.IdleCounts
	for _, n := range rep.Nodes {
		byName[n.Node] = n
		for c := range scheduler.NumIdleClasses {
			gpus[c] += n.GPUs[c]
			cpus[c] += n.CPUs[c]
		}
	}
	assert.Equal(t, gpus, rep.GPUs, "seed %d step %d: GPU totals", seed, step)
	assert.Equal(t, cpus, rep.CPUs, "seed %d step %d: CPU totals", seed, step)
	for _, n := range s.Nodes() {
		held := map[int]bool{}
		for _, id := range n.Jobs {
			j, _ := s.Job(id)
			for _, na := range j.Alloc.Nodes {
				if na.Node == n.Index {
					for _, d := range na.Devices {
						held[d] = true
					}
				}
			}
		}
		badIdle := int64(0)
		for _, d := range n.UnhealthyDevices {
			if !held[d] {
				badIdle++
			}
		}
		ni := byName[n.Name]
		assert.Equal(t, n.Free[gpuID]+badIdle, ni.GPUs.Free(), "seed %d step %d: node %s GPUs %v", seed, step, n.Name, ni.GPUs)
		assert.Equal(t, n.Free[0], ni.CPUs.Free(), "seed %d step %d: node %s CPUs %v", seed, step, n.Name, ni.CPUs)
		ag, ac := tel.allocated(s, n)
		assert.Equal(t, ag, ni.GPUs[scheduler.IdleAllocated], "seed %d step %d: node %s allocated-idle GPUs", seed, step, n.Name)
		assert.Equal(t, ac, ni.CPUs[scheduler.IdleAllocated], "seed %d step %d: node %s allocated-idle CPUs", seed, step, n.Name)
		assert.Equal(t, badIdle, ni.GPUs[scheduler.IdleUnhealthy], "seed %d step %d: node %s", seed, step, n.Name)
		if !n.State.Usable() {
			assert.Equal(t, n.Free[gpuID], ni.GPUs[scheduler.IdleUnavailable], "seed %d step %d: node %s is %s", seed, step, n.Name, n.State)
		}
	}
}

// Without pending work every idle unit on an up node is "no demand"; a
// job that fits nowhere makes the free GPUs "fragmented".
func TestIdleCapacityDemand(t *testing.T) {
	s := newMixed(t)
	rep := s.IdleCapacity(t0)
	assert.Equal(t, int64(32), rep.GPUs[scheduler.IdleNoDemand])
	assert.Equal(t, int64(112*2+64*2), rep.CPUs[scheduler.IdleNoDemand])
	assert.Equal(t, int64(32), rep.GPUs.Total())

	mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(5), TimeLimit: time.Hour})
	mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(5), TimeLimit: time.Hour})
	mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(5), TimeLimit: time.Hour})
	mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(5), TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	// Each node has 3 GPUs left; a fifth 5-GPU job fits nowhere.
	mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(5), TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	rep = s.IdleCapacity(t0)
	// No backfill: the partition's queue is blocked, so the main pass
	// holds its nodes for the waiting job.
	assert.Equal(t, int64(12), rep.GPUs[scheduler.IdleReserved], "%s", rep)
	assert.Equal(t, 1, rep.Pending)
	assert.Contains(t, rep.String(), "reserved")
	assert.Equal(t, "IdleClass(9)", scheduler.IdleClass(9).String())
}

// TestIdleFragmentedOnlyWhenNoNodeHoldsTheRequest checks the documented
// condition of IdleFragmented on both sides: free GPUs that a pending job
// not limited by policy can use now (its per-node request fits the node
// and enough such nodes are free) are not fragmented; free GPUs that the
// demanding job cannot use because it needs more per node than the node
// has free, or more such nodes at once than are free, are.
func TestIdleFragmentedOnlyWhenNoNodeHoldsTheRequest(t *testing.T) {
	s := newMixed(t)
	// 5 of the 8 GPUs in use on every node, and one more on h100-01:
	// 2 free there, 3 on each other node.
	for range 4 {
		mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(5), TimeLimit: time.Hour})
	}
	mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(1), TimeLimit: time.Hour})
	mustSchedule(t, s, t0)

	// Usable side: a 2-node job of 2 GPUs per node fits 4 nodes now (it
	// has not had its cycle yet): none of the free GPUs is fragmented.
	fits := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 2, GRESPerNode: gpus(2), TimeLimit: time.Hour})
	rep := s.IdleCapacity(t0)
	assert.Equal(t, int64(0), rep.GPUs[scheduler.IdleFragmented], "%s", rep)
	assert.Equal(t, int64(11), rep.GPUs[scheduler.IdleReserved], "%s", rep)
	require.NoError(t, s.Cancel(t0, fits))

	// Fragmented side, per node: 4 GPUs per node fit no node.
	big := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(4), TimeLimit: time.Hour})
	rep = s.IdleCapacity(t0)
	assert.Equal(t, int64(11), rep.GPUs[scheduler.IdleFragmented], "%s", rep)
	require.NoError(t, s.Cancel(t0, big))

	// Fragmented side, across nodes: 3 h100 GPUs per node fit h100-02
	// only, and the job needs 2 such nodes at once; the a100 nodes are
	// of no use to it.
	mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 2, GRESPerNode: []gres.Request{{Name: "gpu", Type: "h100", Count: 3}}, TimeLimit: time.Hour})
	rep = s.IdleCapacity(t0)
	assert.Equal(t, int64(5), rep.GPUs[scheduler.IdleFragmented], "%s", rep)
	assert.Equal(t, int64(6), rep.GPUs[scheduler.IdleNoDemand], "%s", rep)
}
