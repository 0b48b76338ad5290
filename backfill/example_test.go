package backfill_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
)

// Two 8-GPU nodes; node 0 is fully busy for another hour. A two-node job
// waits for it and holds a reservation; a short 4-GPU job fits in front of
// that reservation on node 1 and starts now; a long 4-GPU job would delay
// the reservation, so it is planned after it.
func Example() {
	reg, _ := gres.NewRegistry("gres/gpu")
	gpu := reg.MustLookup("gres/gpu")
	node := func(cpu, gpus int64) gres.Vector {
		v := reg.NewVector()
		v[gres.CPU], v[gres.Mem], v[gpu] = cpu, cpu*8192, gpus
		return v
	}
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

	pl, _ := backfill.NewPlanner(backfill.Config{}) // conservative, Slurm's defaults
	nodes := []backfill.NodeState{{Capacity: node(64, 8)}, {Capacity: node(64, 8)}}
	running := []backfill.Running{{ID: 1, End: now.Add(time.Hour),
		Allocs: []backfill.Alloc{{Node: 0, Use: node(64, 8)}}}}
	prof, _ := pl.NewProfile(now, nodes, running)

	plan, _ := pl.Plan(prof, []backfill.Job{
		{ID: 10, Nodes: 2, PerNode: node(64, 8), TimeLimit: 2 * time.Hour},
		{ID: 11, Nodes: 1, PerNode: node(32, 4), TimeLimit: 8 * time.Hour},
		{ID: 12, Nodes: 1, PerNode: node(32, 4), TimeLimit: 30 * time.Minute},
	})
	for _, e := range plan.Entries {
		fmt.Printf("job %d: %-8s at %s on %v\n", e.ID, e.Status, e.Start.Format("15:04"), e.Nodes)
	}
	// Output:
	// job 10: reserved at 13:00 on [0 1]
	// job 11: reserved at 15:00 on [0]
	// job 12: start    at 12:00 on [1]
}

// What-if questions run on a clone: the live profile is not touched.
func ExampleProfile_EarliestFit() {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	cpus := func(n int64) gres.Vector { return gres.Vector{gres.CPU: n} }
	prof, _ := backfill.NewProfile(now,
		[]backfill.NodeState{{Capacity: cpus(16)}, {Capacity: cpus(16)}},
		[]backfill.Running{{ID: 1, End: now.Add(90 * time.Minute), Allocs: []backfill.Alloc{{Node: 0, Use: cpus(12)}, {Node: 1, Use: cpus(8)}}}},
		backfill.ProfileOptions{})

	whatIf := prof.Clone()
	_ = whatIf.Reserve(backfill.Reservation{ID: 2, Start: now.Add(90 * time.Minute), End: now.Add(2 * time.Hour),
		Allocs: []backfill.Alloc{{Node: 1, Use: cpus(12)}}})
	for _, p := range []*backfill.Profile{prof, whatIf} {
		fit, _ := p.EarliestFit(backfill.Request{Nodes: 2, PerNode: cpus(6), Duration: time.Hour})
		fmt.Println(fit.Status, fit.Start.Format("15:04"), fit.Nodes)
	}
	// Output:
	// found 13:30 [0 1]
	// found 14:00 [0 1]
}

// A scheduler keeps one profile across cycles instead of rebuilding it:
// each cycle it drops the last plan's reservations, reports the jobs that
// ended, advances the profile to now, adds the jobs that started, and
// plans again.
func ExampleProfile_Advance() {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	cpus := func(n int64) gres.Vector { return gres.Vector{gres.CPU: n} }
	node := func(i int, n int64) []backfill.Alloc { return []backfill.Alloc{{Node: i, Use: cpus(n)}} }
	pl, _ := backfill.NewPlanner(backfill.Config{})
	prof, _ := pl.NewProfile(now, []backfill.NodeState{{Capacity: cpus(8)}, {Capacity: cpus(8)}},
		[]backfill.Running{{ID: 1, End: now.Add(2 * time.Hour), Allocs: node(0, 8)}})
	queue := []backfill.Job{
		{ID: 2, Nodes: 2, PerNode: cpus(8), TimeLimit: time.Hour},
		{ID: 3, Nodes: 1, PerNode: cpus(4), TimeLimit: time.Hour},
	}
	show := func(plan *backfill.Plan) {
		for _, e := range plan.Entries {
			fmt.Printf("  job %d: %-8s at %s on %v\n", e.ID, e.Status, e.Start.Format("15:04"), e.Nodes)
		}
	}
	plan, _ := pl.Plan(prof, queue)
	fmt.Println("12:00")
	show(plan)
	// Job 3 starts as planned.
	started := backfill.Running{ID: 3, End: now.Add(time.Hour), Allocs: node(1, 4)}

	// Next cycle, at 12:30: job 1 has ended early.
	now = now.Add(30 * time.Minute)
	prof.ReleaseReservations()
	_ = prof.Release(1)
	_ = prof.Advance(now)
	_ = prof.AddStarted(started)
	plan, _ = pl.Plan(prof, queue[:1])
	fmt.Println("12:30")
	show(plan)
	// Output:
	// 12:00
	//   job 2: reserved at 14:00 on [0 1]
	//   job 3: start    at 12:00 on [1]
	// 12:30
	//   job 2: reserved at 13:00 on [0 1]
}

// A job arrives while nothing else changed: the last plan is extended with
// it instead of planning the whole queue again (see "Keeping a profile
// across cycles" in the package documentation for when that is exact).
func ExamplePlanner_Extend() {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	cpus := func(n int64) gres.Vector { return gres.Vector{gres.CPU: n} }
	pl, _ := backfill.NewPlanner(backfill.Config{Mode: backfill.EASY})
	prof, _ := pl.NewProfile(now,
		[]backfill.NodeState{{Capacity: cpus(16)}, {Capacity: cpus(16)}},
		[]backfill.Running{{ID: 1, End: now.Add(time.Hour), Allocs: []backfill.Alloc{{Node: 0, Use: cpus(16)}, {Node: 1, Use: cpus(16)}}}})
	last, _ := pl.Plan(prof, []backfill.Job{{ID: 10, Nodes: 2, PerNode: cpus(16), TimeLimit: time.Hour}})

	// Ten minutes later job 11 arrives. Nothing changes before 14:00 (at
	// 13:00 job 10's reservation takes over what job 1 frees), and job
	// 10's expected start is later than now too: extending is exact.
	later := now.Add(10 * time.Minute)
	fmt.Println("next change:", prof.NextChange().Format("15:04"))
	_ = prof.Advance(later)
	plan, _ := pl.Extend(prof, last, []backfill.Job{{ID: 11, Nodes: 1, PerNode: cpus(8), TimeLimit: time.Hour}})
	for _, e := range plan.Entries {
		fmt.Printf("job %d: %-9s at %s\n", e.ID, e.Status, e.Start.Format("15:04"))
	}
	// Output:
	// next change: 14:00
	// job 10: reserved  at 13:00
	// job 11: estimated at 14:00
}

// A cluster-wide pool of two licenses, both taken by a job running for
// another hour: a job that needs a license is planned when it comes back,
// with a reservation, although a node is free now; a lower-priority job
// that would keep a license past that time cannot take it meanwhile.
func ExampleCounters() {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	cpus := func(n int64) gres.Vector { return gres.Vector{gres.CPU: n} }
	pl, _ := backfill.NewPlanner(backfill.Config{})
	prof, _ := pl.NewProfile(now, []backfill.NodeState{{Capacity: cpus(16)}, {Capacity: cpus(16)}},
		[]backfill.Running{{ID: 1, End: now.Add(time.Hour), Allocs: []backfill.Alloc{{Node: 0, Use: cpus(4)}}}})

	licenses := backfill.NewCounters()
	matlab, _ := licenses.Add(2, 2)                     // Licenses=matlab:2, both in use
	_ = licenses.Release(matlab, 2, now.Add(time.Hour)) // by job 1, until its end
	prof.SetCounters(licenses)

	plan, _ := pl.Plan(prof, []backfill.Job{
		{ID: 10, Nodes: 1, PerNode: cpus(8), TimeLimit: 2 * time.Hour, Uses: []backfill.Use{{Counter: matlab, Amount: 2}}},
		{ID: 11, Nodes: 1, PerNode: cpus(8), TimeLimit: 30 * time.Minute, Uses: []backfill.Use{{Counter: matlab, Amount: 1}}},
		{ID: 12, Nodes: 1, PerNode: cpus(8), TimeLimit: 30 * time.Minute},
	})
	for _, e := range plan.Entries {
		fmt.Printf("job %d: %-8s at %s by counter: %v\n", e.ID, e.Status, e.Start.Format("15:04"), e.ByCounter)
	}
	// Output:
	// job 10: reserved at 13:00 by counter: true
	// job 11: reserved at 15:00 by counter: true
	// job 12: start    at 12:00 by counter: false
}
