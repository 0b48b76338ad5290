package scheduler_test

import (
	"cmp"
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
	now := clustertest.Epoch.Add(13 * time.Second) // off the minute, as are the limits and windows below
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
				TimeLimit: time.Duration(60+rng.IntN(7141)) * time.Second, // 1 to 120 min, to the second
				Exclusive: rng.IntN(6) == 0,
				Requeue:   [...]scheduler.RequeueMode{scheduler.RequeueYes, scheduler.RequeueNo}[rng.IntN(2)],
				User:      []string{"ann", "bob", "cy"}[rng.IntN(3)],
				QOS:       []string{"normal", "high"}[rng.IntN(2)],
			}
			if rng.IntN(5) == 0 {
				spec.TimeMin = (spec.TimeLimit / 2).Truncate(time.Second)
			}
			spec.CPUsPerTask = 1 + rng.IntN(16)
			spec.MemPerNodeMiB = int64(rng.IntN(200)) * clustertest.GiB
			switch rng.IntN(5) {
			case 0:
				spec.GRESPerNode = []gres.Request{{Name: "gpu", Count: int64(1 + rng.IntN(8))}}
			case 1:
				spec.GRESPerNode = []gres.Request{{Name: "gpu", Type: []string{"h100", "a100"}[rng.IntN(2)], Count: int64(1 + rng.IntN(4))}}
			case 2:
				spec.Tasks = spec.Nodes * (1 + rng.IntN(2))
				spec.GRESPerTask = []gres.Request{{Name: "gpu", Count: int64(1 + rng.IntN(2))}}
			case 3:
				// Where and tasks, or a --gpus total, with the node count
				// Slurm chooses (where_tasks.go, gpucount.go).
				if rng.IntN(2) == 0 {
					spec.Nodes, spec.Tasks, spec.CPUsPerTask = 0, 1+rng.IntN(40), 1+rng.IntN(4)
					spec.NodeList = nodeNames[rng.IntN(len(nodeNames))]
				} else {
					spec.Nodes, spec.NodesMax = 1, 1+rng.IntN(3)
					spec.GRESPerJob = []gres.Request{{Name: "gpu", Count: int64(1 + rng.IntN(16))}}
				}
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
			err = s.AddReservation(now, policy.Reservation{Name: name, Start: now.Add(time.Duration(rng.IntN(180*60)) * time.Second),
				Duration: time.Duration(600+rng.IntN(7200)) * time.Second, Nodes: nodes, Users: []string{"root"},
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

// TestBackfillNeverDelaysAReservation runs random workloads whose time
// limits, arrivals and early ends are arbitrary seconds (from a base off
// the minute) under EASY and conservative backfill with the default 60 s
// bf_resolution, and checks after every cycle, with exact times, that no
// job the backfill pass started pushes a reserved job later than its
// reservation: each reserved job's expected start is no later than the
// earliest start exact times allow it without the lower-priority jobs the
// pass started (the higher-priority reservations held as the plan holds
// them, their ends on the grid), and it still fits there with them.
func TestBackfillNeverDelaysAReservation(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	for _, mode := range []backfill.Mode{backfill.EASY, backfill.Conservative} {
		t.Run(mode.String(), func(t *testing.T) {
			checked, backfilled := 0, 0
			for seed := range uint64(seeds) {
				c, b := runNoDelay(t, seed, mode)
				checked, backfilled = checked+c, backfilled+b
			}
			require.Positive(t, backfilled, "the workloads backfill")
			require.Positive(t, checked, "the workloads hold reservations")
			t.Logf("%d reservations checked, %d backfilled starts", checked, backfilled)
		})
	}
}

// runNoDelay is one workload of TestBackfillNeverDelaysAReservation; it
// returns the reservations it checked and the backfilled starts.
func runNoDelay(t *testing.T, seed uint64, mode backfill.Mode) (checked, backfilled int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 15))
	var nodes []scheduler.NodeConfig
	for i := range 3 {
		nodes = append(nodes, scheduler.NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 8, MemoryMiB: 32 * 1024})
	}
	const res = 60 * time.Second // the default bf_resolution
	s, err := scheduler.New(scheduler.Config{
		Nodes:      nodes,
		Partitions: []scheduler.PartitionConfig{{Name: "batch", MaxTime: 24 * time.Hour}},
		Backfill:   &backfill.Config{Mode: mode},
	})
	require.NoError(t, err)
	now := clustertest.Epoch.Add(17 * time.Second)
	ends := map[scheduler.JobID]time.Time{} // when each running job finishes
	for range 80 {
		next := now.Add(time.Duration(1+rng.IntN(400)) * time.Second)
		for _, end := range ends {
			if end.Before(next) {
				next = end
			}
		}
		now = next
		for id, end := range ends {
			if !end.After(now) {
				require.NoError(t, s.Finish(now, id, 0))
				delete(ends, id)
			}
		}
		for range rng.IntN(3) {
			spec := scheduler.JobSpec{Nodes: 1 + rng.IntN(2), CPUsPerTask: 1 + rng.IntN(8),
				MemPerNodeMiB: int64(rng.IntN(16)) * 1024, TimeLimit: time.Duration(1+rng.IntN(7200)) * time.Second}
			spec.Exclusive = rng.IntN(5) == 0
			if rng.IntN(4) == 0 {
				// -w with -n and no -N: the node count the tasks need,
				// the listed node among them (where_tasks.go).
				spec.Nodes, spec.CPUsPerTask, spec.Tasks = 0, 1+rng.IntN(2), 1+rng.IntN(12)
				spec.NodeList = fmt.Sprintf("n%d", rng.IntN(3))
			}
			mustSubmit(t, s, now, spec)
		}
		cyc := mustSchedule(t, s, now)
		for _, st := range cyc.Starts {
			j, _ := s.Job(st.Job)
			end := now.Add(j.TimeLimit)
			if rng.IntN(4) == 0 { // some end early
				end = now.Add(time.Duration(1+rng.Int64N(int64(j.TimeLimit/time.Second))) * time.Second)
			}
			ends[st.Job] = end
			if st.Backfill {
				backfilled++
			}
		}
		checked += checkNoDelay(t, s, now, mode, res, fmt.Sprintf("seed %d at %v", seed, now))
	}
	return checked, backfilled
}

// checkNoDelay checks every reserved job of the last cycle at now (see
// TestBackfillNeverDelaysAReservation) and returns how many it checked.
// Under FCFS, queue order is ID order; under EASY the first job with an
// expected start holds the reservation, under conservative every one.
func checkNoDelay(t *testing.T, s *scheduler.Scheduler, now time.Time, mode backfill.Mode, res time.Duration, where string) int {
	t.Helper()
	infos := s.Nodes()
	index := map[string]int{}
	states := make([]backfill.NodeState, len(infos))
	for i, n := range infos {
		index[n.Name] = n.Index
		c := n.Capacity.Clone()
		c[gres.Node] = 0
		states[i] = backfill.NodeState{Capacity: c}
	}
	use := func(v gres.Vector) gres.Vector {
		u := v.Clone()
		u[gres.Node] = 0
		return u
	}
	jobs := s.Jobs()
	slices.SortFunc(jobs, func(x, y scheduler.Job) int { return cmp.Compare(x.ID, y.ID) })
	var reserved []scheduler.Job
	for _, j := range jobs {
		if j.State == scheduler.JobPending && !j.ExpectedStart.IsZero() && j.ExpectedStart.After(now) {
			if j.Spec.NodeList != "" || j.Spec.Tasks > 0 {
				// The check's model books PerNode on any nodes: it cannot
				// judge (nor book) a NodeList job's tasks. Such jobs run
				// and backfill around the reservations checked before it.
				break
			}
			reserved = append(reserved, j)
			if mode == backfill.EASY || len(reserved) == 4 { // conservative: the first few
				break
			}
		}
	}
	// profile holds the running jobs (without the ones this cycle's
	// backfill pass started below R in queue order, unless all) and the
	// reservations above R, with ends on the grid as the plan books them.
	profile := func(r scheduler.Job, all bool) *backfill.Profile {
		var running []backfill.Running
		for _, j := range jobs {
			if j.State != scheduler.JobRunning || (!all && j.Backfilled && j.StartTime.Equal(now) && j.ID > r.ID) {
				continue
			}
			run := backfill.Running{ID: backfill.JobID(j.ID), End: j.StartTime.Add(j.TimeLimit)}
			for _, na := range j.Alloc.Nodes {
				run.Allocs = append(run.Allocs, backfill.Alloc{Node: na.Node, Use: use(na.TRES)})
			}
			running = append(running, run)
		}
		p, err := backfill.NewProfile(now, states, running, backfill.ProfileOptions{Resolution: time.Second})
		require.NoError(t, err, where)
		for _, h := range reserved {
			if h.ID >= r.ID {
				break
			}
			end := h.ExpectedStart.Add(h.TimeLimit)
			if rem := time.Duration(end.Unix()) * time.Second % res; rem != 0 {
				end = end.Add(res - rem)
			}
			require.NoError(t, p.Reserve(reservationOf(h, states, index, h.ExpectedStart, end, use)), "%s: job %d's reservation", where, h.ID)
		}
		return p
	}
	for _, r := range reserved {
		// Its own end may be on the grid, up to res - 1 s later.
		fit, err := profile(r, false).EarliestFit(backfill.Request{Nodes: len(r.PlannedNodes), PerNode: use(r.PerNode),
			Exclusive: r.Spec.Exclusive, Duration: r.TimeLimit + res - time.Second})
		require.NoError(t, err, where)
		require.Equal(t, backfill.FitFound, fit.Status, where)
		require.False(t, r.ExpectedStart.After(fit.Start), "%s: job %d reserved at %v, but exact times let it start at %v without the jobs backfilled below it",
			where, r.ID, r.ExpectedStart, fit.Start)
		with := profile(r, true)
		require.NoError(t, with.Reserve(reservationOf(r, states, index, r.ExpectedStart, r.ExpectedStart.Add(r.TimeLimit), use)),
			"%s: job %d no longer fits its reservation at %v on %v", where, r.ID, r.ExpectedStart, r.PlannedNodes)
	}
	return len(reserved)
}

// reservationOf is pending job j booked over [start, end) on its planned
// nodes: its per-node request, or the whole node when exclusive.
func reservationOf(j scheduler.Job, states []backfill.NodeState, index map[string]int, start, end time.Time, use func(gres.Vector) gres.Vector) backfill.Reservation {
	r := backfill.Reservation{ID: backfill.JobID(j.ID), Start: start, End: end}
	for _, name := range j.PlannedNodes {
		u := use(j.PerNode)
		if j.Spec.Exclusive {
			u = states[index[name]].Capacity
		}
		r.Allocs = append(r.Allocs, backfill.Alloc{Node: index[name], Use: u})
	}
	return r
}
