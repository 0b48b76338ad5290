package ledger_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/ledger"
)

// A control loop records what the scheduler does in a ledger: job records,
// usage charged to the association, and audit decisions.
func Example() {
	now := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	l, _ := accounting.NewMemory(accounting.Config{})
	defer l.Close()
	_ = l.Update(func(tx accounting.Tx) error {
		if _, err := tx.PutAssoc(now, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "c", Account: "lab"}}); err != nil {
			return err
		}
		_, err := tx.PutAssoc(now, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "c", Account: "lab", User: "ann"}})
		return err
	})
	inv := gres.Inventory{}
	for i := range 4 {
		inv.Devices = append(inv.Devices, gres.Device{Index: i, Name: "gpu", Type: "a100", NUMA: -1, Socket: -1})
	}
	s, _ := scheduler.New(scheduler.Config{
		Nodes:      []scheduler.NodeConfig{{Name: "n1", CPUs: 32, MemoryMiB: 256 * 1024, Devices: inv}},
		Partitions: []scheduler.PartitionConfig{{Name: "gpu", MaxTime: 24 * time.Hour}},
	})
	rec, _ := ledger.NewRecorder(now, l, "c", s, ledger.Options{})

	id, _ := s.Submit(now, scheduler.JobSpec{User: "ann", Account: "lab", CPUsPerTask: 8,
		GRESPerNode: []gres.Request{{Name: "gpu", Count: 2}}, TimeLimit: 2 * time.Hour})
	cyc, _ := s.Schedule(now)
	_ = rec.Observe(now, cyc)
	end := now.Add(90 * time.Minute)
	_ = s.Finish(end, id, 0)
	cyc, _ = s.Schedule(end)
	_ = rec.Observe(end, cyc)

	_ = l.View(func(tx accounting.Tx) error {
		j, _ := tx.Job(accounting.JobID(id))
		fmt.Println(j.State, j.NodeList, j.AllocTRES["gres/gpu"], j.Elapsed(end))
		ds, _ := ledger.Decisions(l).JobDecisions(id)
		fmt.Println(len(ds), ds[0].Kind)
		return nil
	})
	// Output:
	// COMPLETED n1 2 1h30m0s
	// 1 start
}
