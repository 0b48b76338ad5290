package sim_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
)

// Replay three jobs on a four-processor cluster under strict FCFS and
// read the per-job and aggregate metrics.
func ExampleRun() {
	cfg := scheduler.Config{Partitions: []scheduler.PartitionConfig{{Name: "batch"}}}
	for i := range 4 {
		cfg.Nodes = append(cfg.Nodes, scheduler.NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 1})
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := func(name string, submit, procs, run int) sim.Job {
		return sim.Job{
			Spec:    scheduler.JobSpec{Name: name, Nodes: procs, TimeLimit: time.Hour},
			Submit:  t0.Add(time.Duration(submit) * time.Second),
			Runtime: time.Duration(run) * time.Second,
		}
	}
	res, err := sim.Run(s, &sim.SliceSource{Jobs: []sim.Job{
		job("wide", 0, 4, 100),
		job("half", 10, 2, 50),
		job("one", 20, 1, 30),
	}}, sim.Options{})
	if err != nil {
		panic(err)
	}
	for _, r := range res.Jobs {
		fmt.Printf("%-4s waited %v, ran %v, bounded slowdown %.2f\n", r.Job.Spec.Name, r.Wait(), r.RunTime(), r.BoundedSlowdown(sim.BSLDThreshold))
	}
	sum := res.Summary
	fmt.Printf("mean wait %.1f s, mean bsld %.2f, utilisation %.1f %%, makespan %v\n",
		sum.Wait.Mean, sum.BSLD.Mean, 100*sum.Utilization, sum.Makespan)
	// Output:
	// wide waited 0s, ran 1m40s, bounded slowdown 1.00
	// one  waited 1m20s, ran 30s, bounded slowdown 3.67
	// half waited 1m30s, ran 50s, bounded slowdown 2.80
	// mean wait 56.7 s, mean bsld 2.49, utilisation 88.3 %, makespan 2m30s
}

// The seeded synthetic GPU workload on a small cluster of the standard
// shape.
func ExampleSynthetic() {
	cfg, err := sim.SyntheticCluster(100)
	if err != nil {
		panic(err)
	}
	jobs, err := sim.Synthetic(sim.SyntheticFor(100, 500, 1))
	if err != nil {
		panic(err)
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		panic(err)
	}
	res, err := sim.Run(s, &sim.SliceSource{Jobs: jobs}, sim.Options{DiscardJobs: true})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d jobs on %d GPUs, %d rejected\n", res.Summary.Jobs, res.Capacity.GPUs, res.Rejected)
	// Output:
	// 500 jobs on 728 GPUs, 0 rejected
}

// Replay a small workload under EASY backfilling with explanation
// statistics, and read how honest the start estimates were, why jobs
// waited and why processors were idle.
func ExampleOptions_explainEvery() {
	cfg := scheduler.Config{Partitions: []scheduler.PartitionConfig{{Name: "batch"}}}
	for i := range 4 {
		cfg.Nodes = append(cfg.Nodes, scheduler.NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 1})
	}
	opt := sim.Options{ExplainEvery: time.Minute}
	if err := sim.EASY.Apply(&cfg, &opt); err != nil {
		panic(err)
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := func(name string, submit, procs, run, limit int) sim.Job {
		return sim.Job{
			Spec:    scheduler.JobSpec{Name: name, Nodes: procs, TimeLimit: time.Duration(limit) * time.Second},
			Submit:  t0.Add(time.Duration(submit) * time.Second),
			Runtime: time.Duration(run) * time.Second,
		}
	}
	res, err := sim.Run(s, &sim.SliceSource{Jobs: []sim.Job{
		job("wide", 0, 3, 600, 1200), // ends at 600, half its limit
		job("pair", 10, 2, 300, 600), // promised 1200, starts at 600
		job("tail", 20, 2, 300, 600), // waits behind pair
	}}, opt)
	if err != nil {
		panic(err)
	}
	for _, r := range res.Jobs {
		if d, ok := r.ETAError(); ok {
			fmt.Printf("%s promised +%v, started +%v (%v)\n", r.Job.Spec.Name, r.FirstExpectedStart.Sub(t0), r.Start.Sub(t0), d)
		}
	}
	ex := res.Summary.Explain
	for _, rs := range ex.Reasons {
		fmt.Printf("waiting on %s: %.0f %% of pending job-time\n", rs.Reason, 100*rs.Share)
	}
	for c, share := range ex.IdleShares {
		if share > 0 {
			fmt.Printf("idle CPUs %s: %.0f %%\n", scheduler.IdleClass(c), 100*share)
		}
	}
	// The free processor is idle while pair and tail wait: both need two
	// (fragmented).
	// Output:
	// pair promised +20m0s, started +10m0s (-10m0s)
	// tail promised +20m0s, started +10m0s (-10m0s)
	// waiting on Resources: 50 % of pending job-time
	// waiting on Priority: 50 % of pending job-time
	// idle CPUs no-demand: 10 %
	// idle CPUs fragmented: 90 %
}
