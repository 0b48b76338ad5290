package backfill

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/cputime"
	"github.com/sluicehq/sluice/topology"
)

// scale sizes a synthetic workload.
type scale struct {
	nodes, running, pending int
}

// standardScale is DESIGN.md's benchmark scale.
func standardScale() scale { return scale{nodes: 10_000, running: 40_000, pending: 100_000} }

func smallScale() scale { return scale{nodes: 256, running: 1_000, pending: 2_000} }

type workload struct {
	now     time.Time
	reg     *gres.Registry
	nodes   []NodeState
	running []Running
	pending []Job
	parts   []topology.NodeSet
	// shape counts, for the report
	runMix, pendMix map[string]int
}

const (
	mib      = 1
	gib      = 1024 * mib
	nodeCPU  = 128
	nodeMem  = 2048 * gib
	nodeGPUs = 8
	week     = 7 * 24 * 3600
)

// genWorkload builds the standard synthetic cluster and workload from a
// seed: nodes of 128 CPUs, 2 TiB and 8 GPUs (60 % h100, 40 % a100), three
// partitions (all, h100, a100), running jobs placed until the target
// count is reached, and pending jobs mixing 1/2/4-GPU single-node jobs
// (70 %), whole-node jobs (20 %) and 2–256-node whole-node jobs (10 %),
// with log-normal run times (median 1 h) and user estimates 1–10× the run
// time, capped at 7 days.
func genWorkload(s scale, seed uint64) *workload {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	reg, err := gres.NewRegistry("gres/gpu:h100", "gres/gpu:a100")
	if err != nil {
		panic(err)
	}
	gpu, h100, a100 := reg.MustLookup("gres/gpu"), reg.MustLookup("gres/gpu:h100"), reg.MustLookup("gres/gpu:a100")
	w := &workload{now: time.Date(2025, 6, 1, 8, 0, 0, 0, time.UTC), reg: reg, runMix: map[string]int{}, pendMix: map[string]int{}}
	nH100 := s.nodes * 6 / 10
	w.nodes = make([]NodeState, s.nodes)
	all, ph, pa := topology.FullNodeSet(s.nodes), topology.NewNodeSet(s.nodes), topology.NewNodeSet(s.nodes)
	for i := range w.nodes {
		c := reg.NewVector()
		c[gres.CPU], c[gres.Mem], c[gpu] = nodeCPU, nodeMem, nodeGPUs
		if i < nH100 {
			c[h100] = nodeGPUs
			ph.Add(i)
		} else {
			c[a100] = nodeGPUs
			pa.Add(i)
		}
		w.nodes[i].Capacity = c
	}
	w.parts = []topology.NodeSet{all, ph, pa}
	partNames := []string{"gpu", "h100", "a100"}

	partial := func(k int64) gres.Vector {
		v := reg.NewVector()
		v[gres.CPU], v[gres.Mem], v[gpu] = 16*k, 256*gib*k, k
		return v
	}
	whole := func() gres.Vector {
		v := reg.NewVector()
		v[gres.CPU], v[gres.Mem], v[gpu] = nodeCPU, nodeMem, nodeGPUs
		return v
	}
	cpuOnly := func() gres.Vector {
		v := reg.NewVector()
		v[gres.CPU], v[gres.Mem] = 4, 16*gib
		return v
	}
	// limits: log-normal run time, estimate 1–10×, whole minutes, ≤ 7 days.
	limit := func() time.Duration {
		run := math.Exp(math.Log(3600) + 1.5*rng.NormFloat64())
		run = min(max(run, 60), week)
		est := min(run*(1+9*rng.Float64()), week)
		return time.Duration(math.Ceil(est/60)) * time.Minute
	}
	type kind struct {
		name  string
		nodes int
		excl  bool
		use   gres.Vector
	}
	logUniform := func(lo, hi float64) int {
		return int(math.Round(math.Exp(math.Log(lo) + rng.Float64()*(math.Log(hi)-math.Log(lo)))))
	}
	// Pending mix: 1/2/4-GPU jobs 35/21/14 %, whole-node 20 %, 2–256 nodes 10 %.
	draw := func() kind {
		switch x := rng.Float64(); {
		case x < 0.35:
			return kind{"1gpu", 1, false, partial(1)}
		case x < 0.56:
			return kind{"2gpu", 1, false, partial(2)}
		case x < 0.70:
			return kind{"4gpu", 1, false, partial(4)}
		case x < 0.90:
			return kind{"whole", 1, true, whole()}
		default:
			return kind{"multi", logUniform(2, 256), true, whole()}
		}
	}
	// Running mix: what is running is what fitted, so mostly small jobs
	// (40,000 jobs on 10,000 nodes is 0.25 node per job): CPU-only 25 %,
	// 1/2/4-GPU 40/21/11 %, whole-node 2.4 %, 2–256 nodes 0.1 %.
	drawRunning := func() kind {
		switch x := rng.Float64(); {
		case x < 0.25:
			return kind{"cpu", 1, false, cpuOnly()}
		case x < 0.65:
			return kind{"1gpu", 1, false, partial(1)}
		case x < 0.86:
			return kind{"2gpu", 1, false, partial(2)}
		case x < 0.975:
			return kind{"4gpu", 1, false, partial(4)}
		case x < 0.999:
			return kind{"whole", 1, true, whole()}
		default:
			return kind{"multi", logUniform(2, 256), true, whole()}
		}
	}

	// Running jobs: placed by random probing; a job that finds no room
	// falls back to a 1-GPU job, then to a CPU-only job.
	free := make([][3]int64, s.nodes)
	for i := range free {
		free[i] = [3]int64{nodeCPU, nodeMem, nodeGPUs}
	}
	fits := func(i int, u gres.Vector) bool {
		return free[i][0] >= u[gres.CPU] && free[i][1] >= u[gres.Mem] && free[i][2] >= u[gpu]
	}
	take := func(i int, u gres.Vector) {
		free[i][0] -= u[gres.CPU]
		free[i][1] -= u[gres.Mem]
		free[i][2] -= u[gpu]
	}
	idle := func(i int) bool { return free[i] == [3]int64{nodeCPU, nodeMem, nodeGPUs} }
	id := JobID(0)
	for tries := 0; len(w.running) < s.running && tries < 20*s.running; tries++ {
		k := drawRunning()
		var allocs []Alloc
		if k.excl {
			start := rng.IntN(s.nodes)
			for j := 0; j < 4*k.nodes && j < s.nodes && len(allocs) < k.nodes; j++ {
				if i := (start + j) % s.nodes; idle(i) {
					allocs = append(allocs, Alloc{Node: i, Use: k.use})
				}
			}
			if len(allocs) < k.nodes {
				allocs, k = nil, kind{"1gpu", 1, false, partial(1)}
			}
		}
		if !k.excl {
			for _, u := range []gres.Vector{k.use, partial(1), cpuOnly()} {
				for range 64 {
					if i := rng.IntN(s.nodes); fits(i, u) {
						allocs = []Alloc{{Node: i, Use: u}}
						break
					}
				}
				if allocs != nil {
					if u[gpu] == 0 {
						k.name = "cpu"
					} else if u[gpu] != k.use[gpu] {
						k.name = "1gpu"
					}
					break
				}
			}
		}
		if allocs == nil {
			continue
		}
		for _, al := range allocs {
			take(al.Node, al.Use)
		}
		id++
		lim := limit()
		rem := max(time.Minute, time.Duration(rng.Float64()*float64(lim)))
		w.running = append(w.running, Running{ID: id, End: w.now.Add(rem), Allocs: allocs})
		w.runMix[k.name]++
	}

	users := make([]string, 2000)
	for u := range users {
		users[u] = fmt.Sprintf("user%04d", u)
	}
	for range s.pending {
		k := draw()
		p := 0
		switch x := rng.Float64(); {
		case x < 0.3:
			p = 1
		case x < 0.5:
			p = 2
		}
		u := rng.IntN(len(users))
		id++
		w.pending = append(w.pending, Job{
			ID: id, Nodes: k.nodes, PerNode: k.use, Exclusive: k.excl, Allowed: w.parts[p],
			TimeLimit: limit(), Eligible: w.now.Add(-time.Duration(rng.IntN(86400)) * time.Second),
			Priority: float64(s.pending - len(w.pending)), User: users[u], Partition: partNames[p],
			Assoc: fmt.Sprintf("acct%03d/%s", u/10, users[u]),
		})
		w.pendMix[k.name]++
	}
	return w
}

// benchPlan builds the profile (timed: it is part of a backfill cycle) and
// plans the first `pending` jobs. Besides wall time it reports the
// process CPU time per cycle (cpu-ms/op: the machine is shared, so wall
// time includes waiting for a core), the plan's outcome counts and the
// live heap of the planned profile (profile-MiB).
func benchPlan(b *testing.B, w *workload, cfg Config, pending int) {
	pl, err := NewPlanner(cfg)
	if err != nil {
		b.Fatal(err)
	}
	jobs := w.pending[:pending]
	heap := heapMiB(func() any {
		p, _ := pl.NewProfile(w.now, w.nodes, w.running)
		_, _ = pl.Plan(p, jobs)
		return p
	})
	b.ReportAllocs()
	var plan *Plan
	var prof *Profile
	cpu0 := cputime.Process()
	iters := 0
	for b.Loop() {
		iters++
		prof, err = pl.NewProfile(w.now, w.nodes, w.running)
		if err != nil {
			b.Fatal(err)
		}
		plan, err = pl.Plan(prof, jobs)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(iters)/1e6, "cpu-ms/op")
	st, cps := plan.Stats, prof.NumChangePoints()
	b.ReportMetric(float64(st.Started), "started")
	b.ReportMetric(float64(st.Reserved), "reserved")
	b.ReportMetric(float64(st.Estimated), "estimated")
	b.ReportMetric(float64(st.BeyondWindow), "beyond")
	b.ReportMetric(float64(st.Searches), "searches")
	b.ReportMetric(float64(cps), "changepoints")
	b.ReportMetric(heap, "profile-MiB")
}

// heapMiB returns the live heap held by what build returns.
func heapMiB(build func() any) float64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	x := build()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(x)
	return float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / (1 << 20)
}

var benchWorkload *workload

func standardWorkload() *workload {
	if benchWorkload == nil {
		benchWorkload = genWorkload(standardScale(), 1)
	}
	return benchWorkload
}

// BenchmarkBackfillEASY is one full-depth EASY (k=1) cycle at the standard
// scale: build the profile from 40,000 running jobs on 10,000 nodes and
// plan all 100,000 pending jobs (a start decision or an estimate each).
func BenchmarkBackfillEASY(b *testing.B) {
	w := standardWorkload()
	benchPlan(b, w, Config{Mode: EASY}, len(w.pending))
}

// BenchmarkBackfillConservative is one conservative cycle at the standard
// scale for 1,000, 10,000 and 100,000 pending jobs.
func BenchmarkBackfillConservative(b *testing.B) {
	w := standardWorkload()
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("pending=%d", n), func(b *testing.B) {
			benchPlan(b, w, Config{}, n)
		})
	}
}

// BenchmarkProfileBuild measures building the profile alone.
func BenchmarkProfileBuild(b *testing.B) {
	w := standardWorkload()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewProfile(w.now, w.nodes, w.running, ProfileOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBackfillNodes shows how a conservative cycle over 10,000
// pending jobs grows with the cluster (running jobs scale with nodes).
func BenchmarkBackfillNodes(b *testing.B) {
	for _, n := range []int{2_500, 5_000, 10_000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			w := genWorkload(scale{nodes: n, running: 4 * n, pending: 10_000}, 1)
			benchPlan(b, w, Config{}, len(w.pending))
		})
	}
}

// BenchmarkEarliestFit measures single what-if searches on a planned
// standard profile (what an explanation does).
func BenchmarkEarliestFit(b *testing.B) {
	w := standardWorkload()
	pl, _ := NewPlanner(Config{})
	prof, _ := pl.NewProfile(w.now, w.nodes, w.running)
	if _, err := pl.Plan(prof, w.pending[:10_000]); err != nil {
		b.Fatal(err)
	}
	reqs := w.pending[10_000:10_256]
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		j := reqs[i%len(reqs)]
		i++
		if _, err := prof.EarliestFit(Request{Nodes: j.Nodes, PerNode: j.PerNode, Exclusive: j.Exclusive, Allowed: j.Allowed,
			Duration: j.TimeLimit, Latest: w.now.Add(24 * time.Hour)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProfileAdvance moves the origin of the standard profile (10,000
// nodes, 40,000 running jobs) forward by a small step, as a scheduler that
// keeps its profile does at the start of each cycle; compare with
// BenchmarkProfileBuild, which it replaces. Each iteration works on a
// fresh Clone (taken with the timer stopped), so it includes the
// copy-on-write copies of what it touches: an upper bound on doing the
// same in place.
//
//   - step=1m, 10m, 1h: the running jobs keep their ends; Advance drops
//     the change points up to the new origin and extends every job whose
//     end has passed (overdue: not released by the caller) to the next
//     grid point — the worst case, as if no job end had been reported.
//   - step=1m/released, step=10m/released: the common case. The jobs that
//     end by the new origin are released first, as a scheduler does when
//     it sees them end, and the time includes those Release calls; Advance
//     then has little left to drop.
//   - step=1m/advance-only: as step=1m/released, but the Release calls
//     run with the timer stopped: Advance alone.
//   - step=1m/first-call: step=1m on a profile never advanced before, which
//     first indexes its 40,000 entries by end (once per profile).
func BenchmarkProfileAdvance(b *testing.B) {
	w := standardWorkload()
	fresh, err := NewProfile(w.now, w.nodes, w.running, ProfileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	indexed := fresh.Clone()
	indexed.index() // built once per profile, on its first Advance
	for _, tc := range []struct {
		name     string
		step     time.Duration
		released bool
		first    bool
		untimed  bool // release with the timer stopped
	}{
		{"step=1m", time.Minute, false, false, false},
		{"step=10m", 10 * time.Minute, false, false, false},
		{"step=1h", time.Hour, false, false, false},
		{"step=1m/released", time.Minute, true, false, false},
		{"step=10m/released", 10 * time.Minute, true, false, false},
		{"step=1m/advance-only", time.Minute, true, false, true},
		{"step=1m/first-call", time.Minute, false, true, false},
	} {
		base := indexed
		if tc.first {
			base = fresh
		}
		b.Run(tc.name, func(b *testing.B) {
			now := w.now.Add(tc.step)
			var ended []JobID
			for _, r := range w.running {
				if !r.End.After(now) {
					ended = append(ended, r.ID)
				}
			}
			dropped := 0
			base.cps.Ascend(func(cp *changePoint) bool {
				if cp.t > now.Unix() {
					return false
				}
				dropped++
				return true
			})
			overdue := len(ended)
			if tc.released {
				overdue = 0
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c := base.Clone()
				if !tc.untimed {
					b.StartTimer()
				}
				if tc.released {
					for _, id := range ended {
						if err := c.Release(id); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StartTimer()
				if err := c.Advance(now); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(dropped), "cps-passed")
			b.ReportMetric(float64(overdue), "overdue")
			b.ReportMetric(float64(len(ended))-float64(overdue), "released")
		})
	}
}

// BenchmarkProfileReleaseReservations drops every booking a plan made in
// the standard profile (starts and reservations), returning it to running
// jobs only — the first step of a cycle on a kept profile. Each iteration
// plans the first N pending jobs with the timer stopped, then releases in
// place (no clone, as in a scheduler's loop).
func BenchmarkProfileReleaseReservations(b *testing.B) {
	w := standardWorkload()
	for _, tc := range []struct {
		cfg Config
		n   int
	}{
		{Config{}, 1_000},
		{Config{}, 10_000},
		{Config{Mode: EASY}, 10_000},
	} {
		b.Run(fmt.Sprintf("%v/pending=%d", tc.cfg.Mode, tc.n), func(b *testing.B) {
			pl, err := NewPlanner(tc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			p, err := pl.NewProfile(w.now, w.nodes, w.running)
			if err != nil {
				b.Fatal(err)
			}
			p.index()
			b.ReportAllocs()
			b.ResetTimer()
			released := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if _, err := pl.Plan(p, w.pending[:tc.n]); err != nil {
					b.Fatal(err)
				}
				runtime.GC() // the plan's garbage is not the release's cost
				b.StartTimer()
				released = p.ReleaseReservations()
			}
			b.ReportMetric(float64(released), "released")
		})
	}
}
