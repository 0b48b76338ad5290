package priority

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
)

// benchTree builds a seeded two-level association tree: top accounts under
// the root, sub-accounts under each, users spread over the sub-accounts.
// Raw shares vary, a third of the users have no usage, the rest a
// log-normal usage in billing-seconds.
func benchTree(top, subPerTop, users int, seed uint64) []Association {
	r := rand.New(rand.NewPCG(seed, 1))
	assocs := make([]Association, 0, 1+top*(1+subPerTop)+users)
	assocs = append(assocs, Association{Account: "root"})
	leaves := make([]string, 0, top*subPerTop)
	for i := range top {
		name := fmt.Sprintf("dept%03d", i)
		assocs = append(assocs, Association{Account: name, Parent: "root", Shares: int64(1 + r.IntN(100))})
		for j := range subPerTop {
			sub := fmt.Sprintf("%s-g%03d", name, j)
			assocs = append(assocs, Association{Account: sub, Parent: name, Shares: int64(1 + r.IntN(20))})
			leaves = append(leaves, sub)
		}
	}
	for u := range users {
		a := Association{Account: leaves[u%len(leaves)], User: fmt.Sprintf("user%06d", u), Shares: 1}
		if r.IntN(3) > 0 {
			a.Usage = math.Floor(math.Exp(r.NormFloat64()*2 + 12)) // ~e^12 ≈ 45 core-hours
		}
		assocs = append(assocs, a)
	}
	return assocs
}

// Standard scale (DESIGN.md): 2,000 users in 200 accounts.
func standardTree() []Association { return benchTree(20, 9, 2000, 42) }

// Large scale: 100,000 users in 10,000 accounts.
func largeTree() []Association { return benchTree(100, 99, 100000, 43) }

// forEachScale runs fn as a sub-benchmark at the standard and the large
// scale, building each tree's associations only when its sub-benchmark
// runs.
func forEachScale(b *testing.B, fn func(b *testing.B, assocs []Association)) {
	for _, sc := range []struct {
		name  string
		build func() []Association
	}{
		{"2000users_200accounts", standardTree},
		{"100000users_10000accounts", largeTree},
	} {
		b.Run(sc.name, func(b *testing.B) { fn(b, sc.build()) })
	}
}

// userIndexes returns the indices of tree's user associations.
func userIndexes(tree *Tree) []int {
	var users []int
	for i := range tree.Len() {
		if tree.nodes[i].user {
			users = append(users, i)
		}
	}
	return users
}

// benchJobs builds the standard-scale pending workload: 100,000 jobs on a
// 10,000-node cluster of 128-core, 8-GPU nodes, mixing 1/2/4-GPU
// single-node jobs, whole-node jobs and 2-256-node jobs, in three
// partitions and four QOS, submitted over the two weeks before t0, with
// fair-share factors from the standard-scale tree.
func benchJobs(b *testing.B, n int) (*Engine, []Job) {
	tree, err := NewTree(standardTree(), TreeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	reg, err := gres.NewRegistry("gres/gpu:h100", "gres/gpu:a100", "gres/gpu:gb200")
	if err != nil {
		b.Fatal(err)
	}
	gpu := reg.MustLookup("gres/gpu")
	const nodes, cores, gpus = 10000, 128, 8
	parts := make([]gres.Vector, 3)
	partNodes := []int64{6000, 3000, 1000}
	for i := range parts {
		v := reg.NewVector()
		v[gres.CPU] = partNodes[i] * cores
		v[gres.Mem] = partNodes[i] * 2 * 1024 * 1024
		v[gres.Node] = partNodes[i]
		v[gpu] = partNodes[i] * gpus
		parts[i] = v
	}
	e, err := NewEngine(Config{
		Weights:     Weights{Age: 1000, FairShare: 10000, JobSize: 1000, Partition: 1000, QOS: 2000, Assoc: 500},
		TRESWeights: map[string]float64{"cpu": 0.5, "mem": 0.001, "gres/gpu": 200},
		Registry:    reg,
	}, Cluster{Nodes: nodes, CPUs: nodes * cores, MaxPartitionJobFactor: 10, MaxQOSPriority: 1000, MaxAssocPriority: 100})
	if err != nil {
		b.Fatal(err)
	}
	userIdx := userIndexes(tree)
	r := rand.New(rand.NewPCG(7, 7))
	jobs := make([]Job, n)
	for i := range jobs {
		p := r.IntN(3)
		var nn, cpus, g int64
		switch k := r.IntN(10); {
		case k < 5: // 1/2/4-GPU single-node job
			g = int64(1) << r.IntN(3)
			nn, cpus = 1, g*16
		case k < 7: // whole node
			nn, cpus, g = 1, cores, gpus
		default: // 2-256 nodes
			nn = 2 + r.Int64N(255)
			cpus, g = nn*cores, nn*gpus
		}
		tres := reg.NewVector()
		tres[gres.CPU], tres[gres.Mem], tres[gres.Node], tres[gpu] = cpus, cpus*8*1024, nn, g
		submit := t0.Add(-time.Duration(r.Int64N(int64(14 * 24 * time.Hour))))
		jobs[i] = Job{
			ID:                 uint64(1_000_000 + i),
			Submit:             submit,
			AccrueStart:        submit,
			Nodes:              uint32(nn),
			CPUs:               uint32(cpus),
			TimeLimit:          time.Duration(1+r.IntN(48*60)) * time.Minute,
			PartitionJobFactor: uint16(1 + 4*p + r.IntN(2)),
			QOSPriority:        []uint32{0, 10, 100, 1000}[r.IntN(4)],
			AssocPriority:      uint32(r.IntN(101)),
			FairShare:          tree.Factor(userIdx[r.IntN(len(userIdx))]),
			TRES:               tres,
			PartitionTRES:      parts[p],
			Nice:               int64(r.IntN(3)) * 100,
		}
	}
	return e, jobs
}

// The priority benchmarks come as a pair at the standard scale (100,000
// pending jobs): BenchmarkPriority is the priority computation alone,
// BenchmarkPriorityAndOrder the computation and the queue sort, as a
// scheduler cycle that recomputes priorities pays both. Both report
// ns/job; BenchmarkPriorityOrder isolates the sort.

// BenchmarkPriority measures computing the multifactor priority, with
// its full breakdown, of each of 100,000 pending jobs at the standard
// scale (ComputeAll), without sorting them: ns/op is the whole batch,
// ns/job one job's share. BenchmarkPriorityAndOrder adds the sort.
func BenchmarkPriority(b *testing.B) {
	e, jobs := benchJobs(b, 100000)
	out := make([]Breakdown, len(jobs))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := e.ComputeAll(t0, jobs, out); err != nil {
			b.Fatal(err)
		}
	}
	reportPerJob(b, len(jobs))
}

// BenchmarkPriorityAndOrder measures what BenchmarkPriority does and then
// putting the 100,000 jobs into queue order: building each job's queue
// key (partition tier, priority, submit time, ID) and sorting the keys
// (SortQueue), from the jobs' generation order every time. Its ns/job
// less BenchmarkPriority's is the ordering's share.
func BenchmarkPriorityAndOrder(b *testing.B) {
	e, jobs := benchJobs(b, 100000)
	out := make([]Breakdown, len(jobs))
	keys := make([]QueueKey, len(jobs))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := e.ComputeAll(t0, jobs, out); err != nil {
			b.Fatal(err)
		}
		queueKeys(keys, jobs, out)
		SortQueue(keys)
	}
	reportPerJob(b, len(jobs))
}

// BenchmarkPriorityOrder measures the ordering alone: the 100,000 jobs'
// queue keys, their priorities computed once before the timer, copied
// back into generation order and sorted (SortQueue) every iteration.
func BenchmarkPriorityOrder(b *testing.B) {
	e, jobs := benchJobs(b, 100000)
	out := make([]Breakdown, len(jobs))
	if err := e.ComputeAll(t0, jobs, out); err != nil {
		b.Fatal(err)
	}
	unsorted := make([]QueueKey, len(jobs))
	queueKeys(unsorted, jobs, out)
	keys := make([]QueueKey, len(jobs))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		copy(keys, unsorted)
		SortQueue(keys)
	}
	reportPerJob(b, len(jobs))
}

// queueKeys writes each job's queue key, with its computed priority, into
// keys.
func queueKeys(keys []QueueKey, jobs []Job, out []Breakdown) {
	for i := range jobs {
		keys[i] = QueueKey{PartitionTier: uint16(jobs[i].PartitionJobFactor / 4), Priority: out[i].Priority,
			Submit: jobs[i].Submit, JobID: jobs[i].ID, ArrayTaskID: NoArrayTask}
	}
}

// reportPerJob reports the ns/job metric: the time of one iteration over
// n jobs, divided by n.
func reportPerJob(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/job")
}

// BenchmarkFairTree builds the tree and computes every factor from scratch
// (validation, layout, usage sums, Level FS, sorting, ranking).
func BenchmarkFairTree(b *testing.B) {
	forEachScale(b, func(b *testing.B, assocs []Association) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := NewTree(assocs, TreeOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFairTreeRecompute recomputes every factor of an existing tree
// (usage sums, Level FS, sorting, ranking) without rebuilding it: the cost
// of a full pass when all usage changed, e.g. after decay.
func BenchmarkFairTreeRecompute(b *testing.B) {
	forEachScale(b, func(b *testing.B, assocs []Association) {
		tree, err := NewTree(assocs, TreeOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			tree.aggregateAll()
			tree.computeAll()
		}
	})
}

// BenchmarkClassic builds the tree with classic fair-share.
func BenchmarkClassic(b *testing.B) {
	forEachScale(b, func(b *testing.B, assocs []Association) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := NewTree(assocs, TreeOptions{Flags: NoFairTree}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFairTreeIncremental changes one user's usage (as when one job's
// usage is charged) and brings every factor up to date.
func BenchmarkFairTreeIncremental(b *testing.B) {
	forEachScale(b, func(b *testing.B, assocs []Association) {
		tree, err := NewTree(assocs, TreeOptions{})
		if err != nil {
			b.Fatal(err)
		}
		users := userIndexes(tree)
		r := rand.New(rand.NewPCG(9, 9))
		picks := make([]int, 4096)
		for i := range picks {
			picks[i] = users[r.IntN(len(users))]
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			u := picks[i%len(picks)]
			// One running job's interval charge: a few core-hours.
			if err := tree.SetUsage(u, tree.nodes[u].own+3600*float64(1+i%7)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
