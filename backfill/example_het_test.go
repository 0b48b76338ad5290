package backfill_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
)

// The components of a heterogeneous job start at one instant: a CPU part
// that could start now on node 1 waits with the GPU part for node 0,
// busy for another hour.
func ExampleProfile_EarliestCoFit() {
	reg, _ := gres.NewRegistry("gres/gpu")
	gpu := reg.MustLookup("gres/gpu")
	vec := func(cpu, gpus int64) gres.Vector {
		v := reg.NewVector()
		v[gres.CPU], v[gpu] = cpu, gpus
		return v
	}
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	prof, _ := backfill.NewProfile(now, []backfill.NodeState{{Capacity: vec(64, 8)}, {Capacity: vec(64, 0)}},
		[]backfill.Running{{ID: 1, End: now.Add(time.Hour), Allocs: []backfill.Alloc{{Node: 0, Use: vec(8, 8)}}}},
		backfill.ProfileOptions{})
	fits, _ := prof.EarliestCoFit([]backfill.JobID{10, 11}, []backfill.Request{
		{Nodes: 1, PerNode: vec(32, 0), Duration: time.Hour},
		{Nodes: 1, PerNode: vec(8, 8), Duration: time.Hour},
	})
	for k, f := range fits {
		fmt.Printf("component %d: %s at %s on %v\n", k, f.Status, f.Start.Format("15:04"), f.Nodes)
	}
	// Output:
	// component 0: found at 13:00 on [0]
	// component 1: found at 13:00 on [0]
}
