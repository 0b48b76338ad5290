package policy_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

const benchNodes = 10000

// benchPolicy is the "realistic policy": 4 QOS, 3 partitions (one
// with a partition QOS), per-user GPU limits, 200 accounts under 10
// departments with 2,000 users, and 40,000 running jobs in the counters.
func benchPolicy(b *testing.B, realistic bool) (*policy.Policy, *policy.Usage, []*policy.Request) {
	reg, err := gres.NewRegistry("gres/gpu:h100", "gres/gpu:a100", "gres/gpu:gb200")
	if err != nil {
		b.Fatal(err)
	}
	L := func(s string) policy.TRESLimits {
		l, err := policy.ParseTRESLimits(reg, s)
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	cfg := policy.Config{}
	parts := []string{"cpu", "gpu", "debug"}
	qosNames := []string{"normal", "high", "standby", "gpu"}
	if realistic {
		cfg = policy.Config{
			QOS: []policy.QOS{
				{Name: "normal", Limits: policy.QOSLimits{Limits: policy.Limits{MaxWall: 48 * time.Hour}, MaxTRESPerUser: L("gres/gpu=32,cpu=2048"), MaxJobsPerUser: new(500)}},
				{Name: "high", Priority: 1000, Preempt: []string{"standby"}, Limits: policy.QOSLimits{Limits: policy.Limits{GrpTRES: L("gres/gpu=20000")}, MaxTRESPerUser: L("gres/gpu=64")}},
				{Name: "standby", Flags: policy.QOSNoReserve, Limits: policy.QOSLimits{MaxTRESPerUser: L("gres/gpu:h100=16")}},
				{Name: "gpu", Limits: policy.QOSLimits{Limits: policy.Limits{GrpTRES: L("gres/gpu=60000"), MaxTRESPerNode: L("gres/gpu=8")}, MaxTRESPerUser: L("gres/gpu=16"), MaxJobsPerAccount: new(2000)}},
			},
			Partitions: []policy.Partition{
				{Name: "cpu", MaxTime: 72 * time.Hour, DenyQOS: []string{"gpu"}},
				{Name: "gpu", QOS: "gpu", MaxTime: 48 * time.Hour, MaxCPUsPerNode: 128, DefMemPerGPU: 65536},
				{Name: "debug", MaxTime: time.Hour, MaxNodes: 4, PriorityTier: 10},
			},
			PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptRequeue,
		}
		for d := range 10 {
			cfg.Assocs = append(cfg.Assocs, policy.Assoc{Account: fmt.Sprint("dept", d), Limits: policy.AssocLimits{Limits: policy.Limits{GrpTRES: L("gres/gpu=16000"), GrpJobs: new(20000)}}})
		}
		for a := range 200 {
			cfg.Assocs = append(cfg.Assocs, policy.Assoc{Account: fmt.Sprint("acct", a), Parent: fmt.Sprint("dept", a%10),
				Limits: policy.AssocLimits{Limits: policy.Limits{GrpTRES: L("gres/gpu=1024"), GrpTRESRunMins: L("gres/gpu=50000000")}}})
		}
		for u := range 2000 {
			cfg.Assocs = append(cfg.Assocs, policy.Assoc{Account: fmt.Sprint("acct", u%200), User: fmt.Sprint("user", u),
				Limits: policy.AssocLimits{MaxJobs: new(200), MaxSubmitJobs: new(1000)}})
		}
	} else {
		for _, q := range qosNames {
			cfg.QOS = append(cfg.QOS, policy.QOS{Name: q})
		}
		for _, p := range parts {
			cfg.Partitions = append(cfg.Partitions, policy.Partition{Name: p})
		}
	}
	p, err := policy.New(reg, cfg)
	if err != nil {
		b.Fatal(err)
	}
	u := p.NewUsage()
	rng := rand.New(rand.NewPCG(1, 2))
	gpu, h100 := reg.MustLookup("gres/gpu"), reg.MustLookup("gres/gpu:h100")
	mk := func() *policy.Request {
		usr := rng.IntN(2000)
		part := parts[rng.IntN(3)]
		q := qosNames[rng.IntN(3)]
		if part == "gpu" {
			q = qosNames[1+rng.IntN(3)]
		}
		s, err := p.Resolve(policy.JobRef{User: fmt.Sprint("user", usr), Account: fmt.Sprint("acct", usr%200), Partition: part, QOS: q})
		if err != nil {
			b.Fatal(err)
		}
		v := reg.NewVector()
		nodes := 1
		v[gres.CPU] = int64(1 + rng.IntN(64))
		v[gres.Mem] = int64(1+rng.IntN(256)) * 1024
		if part == "gpu" {
			g := int64([]int{1, 2, 4, 8}[rng.IntN(4)])
			v[gpu], v[h100] = g, g
		}
		return &policy.Request{Subject: s, TRES: v, PerNode: v, Nodes: nodes, TimeLimit: time.Duration(1+rng.IntN(24)) * time.Hour}
	}
	for i := range 40000 {
		r := mk()
		id := policy.JobID(i + 1)
		if err := u.AddJob(id, r.Subject); err != nil {
			b.Fatal(err)
		}
		if err := u.StartJob(id, r.TRES, r.Nodes, t0.Add(r.TimeLimit)); err != nil {
			b.Fatal(err)
		}
	}
	reqs := make([]*policy.Request, 1024)
	for i := range reqs {
		reqs[i] = mk()
	}
	return p, u, reqs
}

// BenchmarkLimitCheck measures one job's limit check (and, in the
// +resv variants, its two-reservation node constraint) against 40,000
// running jobs.
func BenchmarkLimitCheck(b *testing.B) {
	for _, realistic := range []bool{false, true} {
		name := "empty-policy"
		if realistic {
			name = "realistic"
		}
		p, u, reqs := benchPolicy(b, realistic)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			blocked := 0
			for i := 0; b.Loop(); i++ {
				if p.CheckStart(t0, reqs[i&1023], u).Blocked() {
					blocked++
				}
			}
			_ = blocked
		})
		if !realistic {
			continue
		}
		resvs := policy.NewReservations(benchNodes)
		maint := topology.NewNodeSet(benchNodes)
		for n := range 64 {
			maint.Add(n * 7)
		}
		train := topology.NewNodeSet(benchNodes)
		for n := 5000; n < 5512; n++ {
			train.Add(n)
		}
		for _, r := range []policy.Reservation{
			{Name: "maint", Start: t0.Add(6 * time.Hour), Duration: 4 * time.Hour, Nodes: maint, Users: []string{"root"}, Flags: policy.ResvMaint},
			{Name: "train", Start: t0.Add(time.Hour), Duration: 24 * time.Hour, Nodes: train, Accounts: []string{"acct7"}, Flags: policy.ResvDaily},
		} {
			if err := resvs.Add(r, nil); err != nil {
				b.Fatal(err)
			}
		}
		forb := topology.NewNodeSet(benchNodes)
		b.Run(name+"+resv", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r := reqs[i&1023]
				p.CheckStart(t0, r, u)
				ref := r.Subject.Ref()
				resvs.Constrain(policy.ResvJob{User: ref.User, Account: ref.Account}, t0, r.TimeLimit, forb)
			}
		})
	}
}

// BenchmarkPreemptVictims: a 64-node whole-node job preempting on a full
// 10,000-node, 8-GPU-per-node cluster running about 40,000 jobs (1/2/4-GPU
// single-node jobs, whole-node and 2–16-node jobs; a tenth of them
// unpreemptable, a third checkpointing every 10–130 min), with a placement
// callback counting emptied nodes.
func BenchmarkPreemptVictims(b *testing.B) {
	reg, err := gres.NewRegistry()
	if err != nil {
		b.Fatal(err)
	}
	p, err := policy.New(reg, policy.Config{PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptRequeue,
		QOS: []policy.QOS{{Name: "high", Priority: 100, Preempt: []string{"low"}}, {Name: "low", GraceTime: time.Minute}, {Name: "prod"}}})
	if err != nil {
		b.Fatal(err)
	}
	subj := func(q string) policy.Subject {
		s, err := p.Resolve(policy.JobRef{User: "u", Account: "a", QOS: q})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	low, prod := subj("low"), subj("prod")
	now := t0.Add(48 * time.Hour)
	rng := rand.New(rand.NewPCG(3, 4))
	used := make([]int, benchNodes)
	var cands []policy.Candidate
	add := func(nodes []int, gpus int) {
		s := low
		if rng.IntN(10) == 0 {
			s = prod
		}
		c := policy.Candidate{Job: policy.JobID(len(cands) + 1), Subject: s, Nodes: nodes, GPUs: int64(gpus * len(nodes)), CPUs: int64(16 * gpus * len(nodes)),
			Start: now.Add(-time.Duration(1+rng.IntN(48*60)) * time.Minute), Requeue: true}
		if rng.IntN(3) == 0 {
			c.CheckpointInterval = time.Duration(10+rng.IntN(120)) * time.Minute
		}
		for _, n := range nodes {
			used[n] += gpus
		}
		cands = append(cands, c)
	}
	for n := 0; n < benchNodes; {
		switch r := rng.IntN(50); {
		case r == 0 && n+16 <= benchNodes: // multi-node job
			k := 2 + rng.IntN(15)
			nodes := make([]int, k)
			for i := range nodes {
				nodes[i] = n + i
			}
			add(nodes, 8)
			n += k
		case r == 1: // whole node
			add([]int{n}, 8)
			n++
		default: // fill one node with 1/2/4-GPU jobs
			for used[n] < 8 {
				g := []int{1, 1, 1, 1, 2, 4}[rng.IntN(6)]
				for used[n]+g > 8 {
					g /= 2
				}
				add([]int{n}, g)
			}
			n++
		}
	}
	// fits: 64 nodes emptied of (non-suspended) jobs.
	jobsOn := make([]int32, benchNodes)
	for _, c := range cands {
		for _, n := range c.Nodes {
			jobsOn[n]++
		}
	}
	stamp := make([]uint32, benchNodes)
	gone := make([]int32, benchNodes)
	var gen uint32
	fits := func(vs []policy.Victim) bool {
		gen++
		free := 0
		for _, v := range vs {
			for _, n := range cands[v.Index].Nodes {
				if stamp[n] != gen {
					stamp[n], gone[n] = gen, 0
				}
				gone[n]++
				if gone[n] == jobsOn[n] {
					free++
				}
			}
		}
		return free >= 64
	}
	pre := policy.Preemptor{Subject: subj("high"), Priority: 10, Nodes: topology.FullNodeSet(benchNodes)}
	b.ResetTimer()
	var plan policy.PreemptPlan
	for b.Loop() {
		var ok bool
		plan, ok = p.PreemptVictims(now, pre, cands, fits)
		if !ok {
			b.Fatal("no plan")
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(cands)), "jobs")
	b.ReportMetric(float64(len(plan.Victims)), "victims")
	b.ReportMetric(plan.LostGPUSeconds/3600, "lost-GPU-h")
	// For comparison, Slurm's own order (lowest QOS priority, then fewest
	// nodes, then youngest; victims taken until the job fits, no
	// minimality pass) on the same cluster.
	var vs []policy.Victim
	var nodesOf []int
	for i := range cands {
		if v, ok := p.Preemptable(now, &pre, &cands[i]); ok {
			v.Index = i
			vs = append(vs, v)
			nodesOf = append(nodesOf, len(cands[i].Nodes))
		}
	}
	order := make([]int, len(vs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(nodesOf[a], nodesOf[b]); c != 0 {
			return c
		}
		return cands[vs[b].Index].Start.Compare(cands[vs[a].Index].Start)
	})
	var taken []policy.Victim
	lost := 0.0
	for _, i := range order {
		taken = append(taken, vs[i])
		lost += vs[i].LostGPUSeconds
		if fits(taken) {
			break
		}
	}
	b.ReportMetric(float64(len(taken)), "slurm-order-victims")
	b.ReportMetric(lost/3600, "slurm-order-lost-GPU-h")
}
