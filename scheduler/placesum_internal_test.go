package scheduler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// refFreeCPUs is freeCPUsInto without a preference as it was written
// before the word-at-a-time walk: every CPU in turn, lowest first.
func refFreeCPUs(n *node, k int) []int {
	var out []int
	for c := 0; c < n.cfg.CPUs && len(out) < k; c++ {
		if n.cpuUsed[c>>6]&(1<<uint(c&63)) == 0 {
			out = append(out, c)
		}
	}
	return out
}

// TestLowestFreeCPUs: without a preference, freeCPUsInto lists the same
// CPUs as the CPU-by-CPU walk, for random CPU counts (word edges
// included), used masks (empty, full, sparse, whole words) and counts.
func TestLowestFreeCPUs(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 3))
	for iter := range 5000 {
		cpus := 1 + rng.IntN(300)
		if iter%4 == 0 {
			cpus = 64 * (1 + rng.IntN(4))
		}
		n := &node{cfg: &NodeConfig{Name: "n", CPUs: cpus}, cpuUsed: make([]uint64, (cpus+63)/64)}
		switch density := rng.IntN(4); density {
		case 0: // all free
		case 1:
			for w := range n.cpuUsed {
				if rng.IntN(2) == 0 {
					n.cpuUsed[w] = ^uint64(0)
				}
			}
		default:
			for c := range cpus {
				if rng.IntN(density+1) == 0 {
					n.markCPUs([]int{c})
				}
			}
		}
		k := rng.IntN(cpus + 2)
		if iter%3 == 0 {
			k = cpus
		}
		want := refFreeCPUs(n, k)
		var buf []int
		if rng.IntN(2) == 0 {
			buf = make([]int, 0, k) // room for k (allocBuf's slices)
		}
		got := n.freeCPUsInto(buf, k, gres.CoreSet{}, rng.IntN(2) == 0)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("iter %d: %d CPUs, k=%d, used %x: got %v, want %v", iter, cpus, k, n.cpuUsed, got, want)
		}
	}
}

// fzTreeRun is newFzRun with a switch tree over the cluster's nodes:
// leaves of 1–4 consecutive nodes under one spine, so that place hands
// the fitting nodes to the topology graph.
func fzTreeRun(c fzCluster, rng *rand.Rand) (*fzRun, error) {
	cfg, err := fzConfig(c)
	if err != nil {
		return nil, err
	}
	t := &topology.Config{}
	var leaves []string
	for i := 0; i < len(cfg.Nodes); {
		sw := topology.SwitchConfig{Name: fmt.Sprintf("leaf%d", len(leaves))}
		for k := 1 + rng.IntN(4); k > 0 && i < len(cfg.Nodes); k-- {
			sw.Nodes = append(sw.Nodes, cfg.Nodes[i].Name)
			i++
		}
		t.Switches = append(t.Switches, sw)
		leaves = append(leaves, sw.Name)
	}
	t.Switches = append(t.Switches, topology.SwitchConfig{Name: "spine", Switches: leaves})
	cfg.Topology = t
	r := &fzRun{c: c}
	for k := range r.s {
		if r.s[k], err = New(cfg); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// TestFitMemoTwins: the main pass's placement summaries (fitMemo) choose
// exactly the nodes the plain scan does. The fuzzer's twins run random
// clusters and events (starts, finishes, cancels, requeues, down and
// drained nodes, reservations, exclusive, --exclusive=user and
// oversubscribed jobs, preemption, node changes), one twin with the memo
// and one without, with and without a switch tree, and are compared
// after every event: same answers, same state.
func TestFitMemoTwins(t *testing.T) {
	var served uint64
	events := 0
	seeds := uint64(60)
	if testing.Short() {
		seeds = 15
	}
	for seed := range seeds {
		for _, tree := range []bool{false, true} {
			src := &fzSource{rng: rand.New(rand.NewPCG(seed, 0xf17))}
			c := fzGenCluster(src)
			var r *fzRun
			var err error
			if tree {
				r, err = fzTreeRun(c, rand.New(rand.NewPCG(seed, 7)))
			} else {
				r, err = newFzRun(c)
			}
			if err != nil {
				continue // a cluster the tree does not suit
			}
			r.s[1].fits.off = true
			g := newFzGen(src, c)
			r.gen = g
			for range 300 {
				var op fzOp
				if r.failed && r.ops[len(r.ops)-1].Kind != fkSchedule {
					op = fzOp{Kind: fkSchedule, At: g.last}
				} else {
					op = g.next()
				}
				events++
				if f := r.step(op); f != nil {
					if strings.Contains(f.Key, "twin") {
						t.Fatalf("seed %d tree=%v, event %d: %s", seed, tree, f.Step, fzReport(c, r.ops, f, 200))
					}
					break // a failure of the fuzzer's own (not the memo's): next cluster
				}
			}
			served += r.s[0].fits.served
			if r.s[1].fits.served != 0 {
				t.Fatalf("the twin without the memo used it")
			}
		}
	}
	t.Logf("%d events; the memo served %d placements", events, served)
	if served == 0 {
		t.Fatal("the memo never served a placement: the test tests nothing")
	}
}

// memoCluster is TestFitMemoRandom's cluster: 48 nodes (DGX-like,
// a100 pairs with 128 cores of two threads, GB200-like), partitions batch
// (all), share (8 DGX-like, 8 a100s; OverSubscribe FORCE:2), ask (8 of those, OverSubscribe YES:2) and gb (the GB200s),
// with leaf switches of 8 nodes when tree is set.
func memoCluster(tree bool) (Config, error) {
	var cfg Config
	for i := range 48 {
		nc := NodeConfig{Name: fmt.Sprintf("n%02d", i), CPUs: 112, MemoryMiB: 2048 * 1024, Devices: gpuserver.DGXH100()}
		switch {
		case i >= 32:
			nc.CPUs, nc.Devices = 128, gpuserver.GB200Node()
		case i >= 16:
			nc.CPUs, nc.Devices = 256, gpuserver.PCIeA100Pairs()
			nc.Sockets, nc.CoresPerSocket, nc.ThreadsPerCore = 2, 64, 2
		}
		cfg.Nodes = append(cfg.Nodes, nc)
	}
	names := func(lo, hi int) []string {
		var out []string
		for i := lo; i < hi; i++ {
			out = append(out, cfg.Nodes[i].Name)
		}
		return out
	}
	cfg.Partitions = []PartitionConfig{
		{Name: "batch", Default: true},
		{Name: "share", Nodes: names(8, 24), OverSubscribe: policy.OverSubscribeForce, OverSubscribeCount: 2},
		{Name: "gb", Nodes: names(32, 48), PriorityTier: 2},
		{Name: "ask", Nodes: names(12, 20), OverSubscribe: policy.OverSubscribeYes, OverSubscribeCount: 2},
	}
	if tree {
		t := &topology.Config{}
		var leaves []string
		for l := 0; l < 6; l++ {
			name := fmt.Sprintf("leaf%d", l)
			t.Switches = append(t.Switches, topology.SwitchConfig{Name: name, Nodes: names(l*8, l*8+8)})
			leaves = append(leaves, name)
		}
		t.Switches = append(t.Switches, topology.SwitchConfig{Name: "spine", Switches: leaves})
		cfg.Topology = t
	}
	reg, err := NewRegistry(cfg.Nodes)
	if err != nil {
		return cfg, err
	}
	cfg.Registry = reg
	cfg.Policy = &policy.Config{}
	return cfg, nil
}

// memoSpec draws one job of TestFitMemoRandom's mix.
func memoSpec(rng *rand.Rand) JobSpec {
	gpu := func(k int64) []gres.Request { return []gres.Request{{Name: "gpu", Count: k}} }
	sp := JobSpec{User: fmt.Sprintf("u%d", rng.IntN(4)), TimeLimit: time.Duration(10+rng.IntN(240)) * time.Minute,
		Partition: []string{"batch", "batch", "share", "gb", "ask"}[rng.IntN(5)]}
	switch rng.IntN(8) {
	case 0: // 1, 2 or 4 GPUs on one shared node
		g := []int64{1, 2, 4}[rng.IntN(3)]
		sp.Nodes, sp.Tasks, sp.CPUsPerTask, sp.MemPerNodeMiB, sp.GRESPerNode = 1, int(g), 8, g*64*1024, gpu(g)
	case 1: // a whole node
		sp.Exclusive, sp.GRESPerNode = true, gpu(4)
	case 2: // 2-10 whole nodes
		sp.Nodes, sp.Exclusive, sp.GRESPerNode = 2+rng.IntN(9), true, gpu(4)
	case 3: // 2-5 shared nodes, 2 GPUs each
		sp.Nodes = 2 + rng.IntN(4)
		sp.Tasks, sp.CPUsPerTask, sp.GRESPerNode = 2*sp.Nodes, 4, gpu(2)
	case 4: // --exclusive=user
		sp.Nodes, sp.Tasks, sp.CPUsPerTask, sp.ExclusiveUser, sp.GRESPerNode = 1+rng.IntN(2), 1, 8, true, gpu(1)
	case 5: // oversubscribing CPUs (or not) in a partition that lets them
		sp.Nodes, sp.Partition = 1+rng.IntN(3), []string{"share", "ask", "ask"}[rng.IntN(3)]
		sp.Tasks, sp.CPUsPerTask, sp.OverSubscribe = sp.Nodes, 16+16*rng.IntN(4), rng.IntN(3) > 0
	case 6: // one thread per core, CPUs only
		sp.Nodes = 1 + rng.IntN(4)
		sp.Tasks, sp.CPUsPerTask, sp.Hint = sp.Nodes, 8, HintNoMultithread
	default: // CPUs only
		sp.Nodes = 1 + rng.IntN(4)
		sp.Tasks, sp.CPUsPerTask = sp.Nodes, 32
	}
	return sp
}

// TestFitMemoRandom: with and without the main pass's placement
// summaries (fitMemo), two schedulers given the same random events —
// submits of a mixed load (shared, whole-node, multi-node, exclusive=user,
// oversubscribing, one-thread-per-core jobs), finishes, cancels, drained,
// down and resumed nodes, unhealthy GPUs, reservations — start the same
// jobs on the same nodes, CPUs and devices, and give the same reasons,
// with and without a switch tree.
func TestFitMemoRandom(t *testing.T) {
	var served uint64
	seeds := uint64(8)
	if testing.Short() {
		seeds = 3
	}
	for _, tree := range []bool{false, true} {
		for seed := range seeds {
			rng := rand.New(rand.NewPCG(seed, 0x3e30))
			var tw [2]*Scheduler
			for k := range tw {
				cfg, err := memoCluster(tree)
				if err != nil {
					t.Fatal(err)
				}
				if tw[k], err = New(cfg); err != nil {
					t.Fatal(err)
				}
			}
			tw[1].fits.off = true
			now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
			var running []JobID
			both := func(what string, f func(s *Scheduler) string) {
				t.Helper()
				a, b := f(tw[0]), f(tw[1])
				if a != b {
					t.Fatalf("tree=%v seed %d at %v: %s: with the memo %s, without %s", tree, seed, now, what, a, b)
				}
			}
			errText := func(err error) string {
				if err == nil {
					return "ok"
				}
				return err.Error()
			}
			for step := range 250 {
				for range rng.IntN(8) {
					sp := memoSpec(rng)
					both("submit", func(s *Scheduler) string { _, err := s.Submit(now, sp); return errText(err) })
				}
				for range rng.IntN(5) {
					if len(running) == 0 {
						break
					}
					k := rng.IntN(len(running))
					id := running[k]
					running = slices.Delete(running, k, k+1)
					if rng.IntN(4) == 0 {
						both("cancel", func(s *Scheduler) string { return errText(s.Cancel(now, id)) })
					} else {
						both("finish", func(s *Scheduler) string { return errText(s.Finish(now, id, 0)) })
					}
				}
				node := fmt.Sprintf("n%02d", rng.IntN(48))
				switch rng.IntN(12) {
				case 0:
					both("drain", func(s *Scheduler) string { return errText(s.DrainNode(now, node, "t")) })
				case 1:
					both("down", func(s *Scheduler) string { _, err := s.DownNode(now, node, "t"); return errText(err) })
				case 2, 3:
					both("resume", func(s *Scheduler) string { return errText(s.ResumeNode(now, node)) })
				case 4:
					dev, ok := rng.IntN(4), rng.IntN(2) == 0
					both("health", func(s *Scheduler) string { return errText(s.SetDeviceHealth(now, node, dev, ok, "t")) })
				case 5:
					set := topology.NewNodeSet(48)
					for range 4 {
						set.Add(rng.IntN(48))
					}
					r := policy.Reservation{Name: fmt.Sprintf("r%d", step), Start: now.Add(time.Duration(rng.IntN(2)) * time.Hour),
						Duration: 2 * time.Hour, Nodes: set, Users: []string{"u1"}, Flags: policy.ResvIgnoreJobs}
					both("reserve", func(s *Scheduler) string { return errText(s.AddReservation(now, r)) })
				}
				var cyc [2]Cycle
				both("schedule", func(s *Scheduler) string {
					k := 0
					if s == tw[1] {
						k = 1
					}
					var err error
					cyc[k], err = s.Schedule(now)
					return errText(err)
				})
				both("cycle", func(s *Scheduler) string {
					k := 0
					if s == tw[1] {
						k = 1
					}
					return fmt.Sprintf("%+v %+v %+v", cyc[k].Starts, cyc[k].Pending, cyc[k].Ended)
				})
				for _, st := range cyc[0].Starts {
					running = append(running, st.Job)
				}
				now = now.Add(time.Duration(1+rng.IntN(10)) * time.Minute)
			}
			served += tw[0].fits.served
		}
	}
	t.Logf("the memo served %d placements", served)
	if served < 1000 {
		t.Fatalf("the memo served only %d placements: the test tests little", served)
	}
}
