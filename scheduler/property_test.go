package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

// runRandom applies a seeded random sequence of events to a fresh
// scheduler, checking the invariants after every step, and returns a
// transcript of every decision for the determinism check.
func runRandom(t *testing.T, seed uint64, steps int, variant func(*scheduler.Config), after ...func(*scheduler.Scheduler)) []string {
	rng := rand.New(rand.NewPCG(seed, 7))
	cfg := clustertest.Mixed4()
	variant(&cfg)
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	for _, f := range after {
		f(s)
	}
	now := clustertest.Epoch
	var log []string
	var ids []scheduler.JobID
	startedAt := map[scheduler.JobID]time.Time{}
	var resvs []string
	nodeNames := []string{"h100-01", "h100-02", "a100-01", "a100-02"}
	for step := range steps {
		now = now.Add(time.Duration(rng.IntN(600)) * time.Second)
		var err error
		switch k := rng.IntN(100); {
		case k < 40:
			spec := scheduler.JobSpec{
				Nodes:     1 + rng.IntN(2),
				TimeLimit: time.Duration(1+rng.IntN(120)) * time.Minute,
				Exclusive: rng.IntN(6) == 0,
				Requeue:   [...]scheduler.RequeueMode{scheduler.RequeueYes, scheduler.RequeueNo}[rng.IntN(2)],
				User:      []string{"ann", "bob", "cy"}[rng.IntN(3)],
				QOS:       []string{"normal", "high"}[rng.IntN(2)],
			}
			if rng.IntN(5) == 0 {
				spec.TimeMin = spec.TimeLimit / 2
			}
			spec.CPUsPerTask = 1 + rng.IntN(16)
			spec.MemPerNodeMiB = int64(rng.IntN(200)) * clustertest.GiB
			switch rng.IntN(4) {
			case 0:
				spec.GRESPerNode = []gres.Request{{Name: "gpu", Count: int64(1 + rng.IntN(8))}}
			case 1:
				spec.GRESPerNode = []gres.Request{{Name: "gpu", Type: []string{"h100", "a100"}[rng.IntN(2)], Count: int64(1 + rng.IntN(4))}}
			case 2:
				spec.Tasks = spec.Nodes * (1 + rng.IntN(2))
				spec.GRESPerTask = []gres.Request{{Name: "gpu", Count: int64(1 + rng.IntN(2))}}
			}
			if rng.IntN(4) == 0 {
				spec.Partition = "h100"
			}
			if cfg.Policy != nil && cfg.Policy.PreemptMode == policy.PreemptSuspend && rng.IntN(3) > 0 {
				// A suspended job keeps its memory and GPUs (as in
				// Slurm) and lends only its CPUs: make most jobs
				// CPU-bound so that SUSPEND preemption happens.
				spec.GRESPerNode, spec.GRESPerTask, spec.Tasks = nil, nil, 0
				spec.CPUsPerTask = 16 + rng.IntN(48)
				spec.MemPerNodeMiB = int64(rng.IntN(16)) * clustertest.GiB
			}
			var id scheduler.JobID
			id, err = s.Submit(now, spec)
			if err == nil {
				ids = append(ids, id)
				log = append(log, fmt.Sprintf("submit %d", id))
			} else {
				log = append(log, "reject "+err.Error())
			}
		case k < 60 && len(ids) > 0:
			id := ids[rng.IntN(len(ids))]
			err = s.Finish(now, id, rng.IntN(2))
			log = append(log, fmt.Sprintf("finish %d %v", id, err))
		case k < 68 && len(ids) > 0:
			id := ids[rng.IntN(len(ids))]
			err = s.Cancel(now, id)
			log = append(log, fmt.Sprintf("cancel %d %v", id, err))
		case k < 71 && len(ids) > 0:
			id := ids[rng.IntN(len(ids))]
			err = s.Requeue(now, id)
			log = append(log, fmt.Sprintf("requeue %d %v", id, err))
		case k < 74:
			var aff []scheduler.JobID
			aff, err = s.DownNode(now, nodeNames[rng.IntN(4)], "random")
			log = append(log, fmt.Sprintf("down %v %v", aff, err))
		case k < 77:
			err = s.DrainNode(now, nodeNames[rng.IntN(4)], "random")
			log = append(log, fmt.Sprintf("drain %v", err))
		case k < 82:
			err = s.ResumeNode(now, nodeNames[rng.IntN(4)])
			log = append(log, fmt.Sprintf("resume %v", err))
		case k < 86:
			node := nodeNames[rng.IntN(4)]
			dev, healthy := rng.IntN(8), rng.IntN(3) == 0
			err = s.SetDeviceHealth(now, node, dev, healthy, "xid 79")
			log = append(log, fmt.Sprintf("health %s %d %v %v", node, dev, healthy, err))
		case k < 89 && cfg.Policy != nil && cfg.Policy.PreemptType == policy.PreemptNone:
			// Maintenance windows come and go: the backfill profile
			// blocks them (kept plans and reservations must follow).
			// Not in the preemption variants, whose rare SUSPEND
			// preemptions these sequences must keep producing.
			if len(resvs) >= 2 || len(resvs) > 0 && rng.IntN(3) == 0 {
				x := rng.IntN(len(resvs))
				err = s.RemoveReservation(now, resvs[x])
				resvs = slices.Delete(resvs, x, x+1)
				log = append(log, fmt.Sprintf("unreserve %v", err))
				break
			}
			nodes := topology.NewNodeSet(len(nodeNames))
			nodes.Add(rng.IntN(len(nodeNames)))
			name := fmt.Sprintf("maint-%d", step)
			err = s.AddReservation(now, policy.Reservation{Name: name, Start: now.Add(time.Duration(rng.IntN(180)) * time.Minute),
				Duration: time.Duration(10+rng.IntN(120)) * time.Minute, Nodes: nodes, Users: []string{"root"},
				Flags: policy.ResvMaint | policy.ResvIgnoreJobs})
			if err == nil {
				resvs = append(resvs, name)
			}
			log = append(log, fmt.Sprintf("reserve %s %v", name, err))
		default:
			cyc, err := s.Schedule(now)
			require.NoError(t, err)
			log = append(log, fmt.Sprintf("cycle %+v", cyc))
			for _, p := range cyc.Preemptions {
				v, _ := s.Job(p.Victim)
				require.Equal(t, "normal", v.Spec.QOS, "seed %d: only normal-QOS jobs are preempted", seed)
				if cfg.Policy.PreemptExemptTime > 0 {
					require.GreaterOrEqual(t, now.Sub(startedAt[p.Victim]), cfg.Policy.PreemptExemptTime, "seed %d: job %d preempted inside PreemptExemptTime", seed, p.Victim)
				}
			}
			for _, st := range cyc.Starts {
				startedAt[st.Job] = now
			}
		}
		_ = err // invalid events are allowed here; the invariants must hold regardless
		checkInvariants(t, s, fmt.Sprintf("seed %d step %d", seed, step))
		if cfg.Policy != nil && cfg.Policy.PreemptType == policy.PreemptNone {
			checkUserGPULimit(t, s, fmt.Sprintf("seed %d step %d", seed, step))
		}
	}
	return log
}

// checkInvariants verifies, from public snapshots only, that no node is
// over-allocated, that no CPU or device index is held twice, and that the
// nodes' free resources are exactly capacity minus running allocations.
func checkInvariants(t *testing.T, s *scheduler.Scheduler, where string) {
	t.Helper()
	nodes := s.Nodes()
	used := make([]gres.Vector, len(nodes))
	cpus := make([]map[int]scheduler.JobID, len(nodes))
	devs := make([]map[int]scheduler.JobID, len(nodes))
	onNode := make([][]scheduler.JobID, len(nodes))
	for i := range nodes {
		used[i] = make(gres.Vector, len(nodes[i].Capacity))
		cpus[i] = map[int]scheduler.JobID{}
		devs[i] = map[int]scheduler.JobID{}
	}
	for _, j := range s.Jobs() {
		if j.State != scheduler.JobRunning && j.State != scheduler.JobSuspended {
			continue // suspended jobs keep their memory and devices
		}
		for _, na := range j.Alloc.Nodes {
			require.NoError(t, used[na.Node].AddInPlace(na.TRES), where)
			for _, c := range na.CPUs {
				prev, dup := cpus[na.Node][c]
				require.False(t, dup, "%s: CPU %d on %s held by jobs %d and %d", where, c, na.Name, prev, j.ID)
				cpus[na.Node][c] = j.ID
			}
			for _, d := range na.Devices {
				prev, dup := devs[na.Node][d]
				require.False(t, dup, "%s: device %d on %s held by jobs %d and %d", where, d, na.Name, prev, j.ID)
				devs[na.Node][d] = j.ID
			}
			onNode[na.Node] = append(onNode[na.Node], j.ID)
		}
	}
	for i, n := range nodes {
		used[i][gres.Node] = 0 // a node's node TRES is not consumed by sharing it
		// Unhealthy devices that no job holds are neither used nor free.
		for _, d := range n.UnhealthyDevices {
			if _, held := devs[i][d]; held {
				continue
			}
			require.NotContains(t, n.FreeDevices, d, "%s: unhealthy device %d on %s listed free", where, d, n.Name)
			typ := s.Registry().MustLookup("gres/gpu:" + deviceType(n.Name))
			used[i][s.Registry().MustLookup("gres/gpu")]++
			used[i][typ]++
		}
		require.True(t, used[i].Fits(n.Capacity), "%s: node %s over-allocated: used %v capacity %v", where, n.Name, used[i], n.Capacity)
		free, err := n.Capacity.Sub(used[i])
		require.NoError(t, err)
		require.True(t, free.Equal(n.Free), "%s: node %s free %v, want %v", where, n.Name, n.Free, free)
		for _, d := range n.FreeDevices {
			_, held := devs[i][d]
			require.False(t, held, "%s: device %d on %s both free and allocated", where, d, n.Name)
		}
		got := slices.Clone(n.Jobs)
		slices.Sort(got)
		slices.Sort(onNode[i])
		require.True(t, slices.Equal(onNode[i], got), "%s: node %s job list %v, want %v", where, n.Name, got, onNode[i])
		if n.State == scheduler.NodeDown {
			require.Empty(t, n.Jobs, "%s: down node %s still runs jobs", where, n.Name)
		}
	}
}

// variants are the scheduler configurations the random sequences run on.
var variants = []struct {
	name string
	set  func(*scheduler.Config)
}{
	{"fcfs", func(*scheduler.Config) {}},
	{"easy+priority", func(c *scheduler.Config) {
		c.Backfill = &backfill.Config{Mode: backfill.EASY, Resolution: time.Second}
		c.Priority = &scheduler.PriorityConfig{
			Engine:      priority.Config{Weights: priority.Weights{Age: 1000, QOS: 5000, JobSize: 500}},
			QOSPriority: map[string]uint32{"high": 10},
		}
	}},
	{"conservative", func(c *scheduler.Config) {
		c.Backfill = &backfill.Config{Mode: backfill.Conservative}
	}},
	{"easy+purge", func(c *scheduler.Config) {
		c.Backfill = &backfill.Config{Mode: backfill.EASY}
		c.MinJobAge = 10 * time.Minute
	}},
	{"easy+limits", func(c *scheduler.Config) {
		c.Backfill = &backfill.Config{Mode: backfill.EASY}
		reg, err := scheduler.NewRegistry(c.Nodes)
		if err != nil {
			panic(err)
		}
		perUser, err := policy.ParseTRESLimits(reg, "gres/gpu=8")
		if err != nil {
			panic(err)
		}
		c.Registry = reg
		c.Policy = &policy.Config{QOS: []policy.QOS{
			{Name: "normal", Limits: policy.QOSLimits{MaxTRESPerUser: perUser}},
			{Name: "high"},
		}}
	}},
}

func init() {
	variants = append(variants, struct {
		name string
		set  func(*scheduler.Config)
	}{"preempt+conservative", func(c *scheduler.Config) {
		c.Backfill = &backfill.Config{Mode: backfill.Conservative}
		c.Policy = &policy.Config{
			PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptRequeue, PreemptExemptTime: 10 * time.Minute,
			QOS: []policy.QOS{{Name: "high", Priority: 10, Preempt: []string{"normal"}}, {Name: "normal", GraceTime: 2 * time.Minute}},
		}
	}}, struct {
		name string
		set  func(*scheduler.Config)
	}{"preempt-suspend+easy", func(c *scheduler.Config) {
		c.Backfill = &backfill.Config{Mode: backfill.EASY}
		c.Policy = &policy.Config{
			PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptSuspend,
			QOS: []policy.QOS{{Name: "high", Priority: 10, Preempt: []string{"normal"}}, {Name: "normal"}},
		}
	}})
}

// checkUserGPULimit verifies that no user ever holds more than 8 GPUs in
// running jobs of QOS normal (the easy+limits variant's limit).
func checkUserGPULimit(t *testing.T, s *scheduler.Scheduler, where string) {
	t.Helper()
	held := map[string]int64{}
	gpu := s.Registry().MustLookup("gres/gpu")
	for _, j := range s.Jobs() {
		if j.State == scheduler.JobRunning && j.Spec.QOS == "normal" {
			held[j.Spec.User] += j.Alloc.Total().At(gpu)
		}
	}
	for u, n := range held {
		require.LessOrEqual(t, n, int64(8), "%s: user %s holds %d GPUs in QOS normal", where, u, n)
	}
}

func TestRandomEventSequences(t *testing.T) {
	seeds := 600
	if testing.Short() {
		seeds = 60
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			preemptions := 0
			defer func() {
				t.Logf("%s: %d preemptions", v.name, preemptions)
				if strings.HasPrefix(v.name, "preempt") && !t.Failed() {
					require.Positive(t, preemptions, "the preemption variant must exercise preemption")
				}
			}()
			n := seeds
			if strings.HasPrefix(v.name, "preempt") {
				n = max(n, 300) // preemption, SUSPEND especially, needs enough sequences to happen
			}
			for seed := range uint64(n) {
				a := runRandom(t, seed, 60, v.set)
				for _, line := range a {
					preemptions += strings.Count(line, "Victim:")
				}
				if seed%10 == 0 {
					b := runRandom(t, seed, 60, v.set)
					require.Equal(t, a, b, "seed %d: same events must give the same decisions", seed)
				}
			}
		})
	}
}

func deviceType(node string) string { return node[:4] }

// TestKeptProfileMatchesRebuild checks that keeping the backfill profile
// across cycles (Advance, releases, AddStarted) decides exactly as
// building it afresh every cycle, under every backfill variant.
func TestKeptProfileMatchesRebuild(t *testing.T) {
	forBackfillVariants(t, func(t *testing.T, set func(*scheduler.Config), _ *backfill.Config) {
		for seed := range backfillSeeds() {
			kept := runRandom(t, seed, 80, set)
			fresh := runRandom(t, seed, 80, set, scheduler.RebuildProfileEveryCycle)
			require.Equal(t, fresh, kept, "seed %d", seed)
		}
	})
}

// forBackfillVariants runs f as a subtest for each variant with backfill,
// with the variant's setter and its backfill configuration.
func forBackfillVariants(t *testing.T, f func(t *testing.T, set func(*scheduler.Config), bf *backfill.Config)) {
	for _, v := range variants {
		probe := clustertest.Mixed4()
		v.set(&probe)
		if probe.Backfill == nil {
			continue
		}
		t.Run(v.name, func(t *testing.T) { f(t, v.set, probe.Backfill) })
	}
}

// backfillSeeds is the number of random sequences each backfill
// comparison runs.
func backfillSeeds() uint64 {
	if testing.Short() {
		return 40
	}
	return 300
}

// estimateTimes matches the expected starts a cycle transcript shows:
// pending jobs' (ExpectedStart:…) and overtaken jobs' in audit records
// ("Reason@time").
var estimateTimes = regexp.MustCompile(`(ExpectedStart|PlannedStart):\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \+0000 UTC|@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// TestEstimateIntervalDecidesTheSame checks, under every backfill
// variant, that letting expected starts stand (Config.EstimateInterval)
// changes no decision: with the expected starts taken out, the
// transcripts — starts, ends, preemptions, requeues, pending reasons,
// audit records — are the same as with every estimate fresh.
func TestEstimateIntervalDecidesTheSame(t *testing.T) {
	strip := func(log []string) []string {
		out := make([]string, len(log))
		for i, l := range log {
			out[i] = estimateTimes.ReplaceAllString(l, "$1")
		}
		return out
	}
	forBackfillVariants(t, func(t *testing.T, set func(*scheduler.Config), bf *backfill.Config) {
		differ := 0
		for seed := range backfillSeeds() {
			fresh := runRandom(t, seed, 80, set)
			lazy := runRandom(t, seed, 80, func(c *scheduler.Config) {
				set(c)
				c.EstimateInterval = 2 * time.Hour
			})
			if !slices.Equal(fresh, lazy) {
				differ++
			}
			require.Equal(t, strip(fresh), strip(lazy), "seed %d", seed)
		}
		if bf.Mode == backfill.EASY {
			require.Positive(t, differ, "some estimates stood")
		}
	})
}
