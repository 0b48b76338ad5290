package accounting_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// A control plane records associations, job records and usage, and reads
// back an sshare-like tree and per-account totals.
func Example() {
	l, err := accounting.NewMemory(accounting.Config{NoDecay: true})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	t0 := time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)
	err = l.Update(func(tx accounting.Tx) error {
		for _, a := range []accounting.Assoc{
			{AssocKey: accounting.AssocKey{Cluster: "hpc", Account: "physics"}, Shares: 60},
			{AssocKey: accounting.AssocKey{Cluster: "hpc", Account: "chemistry"}, Shares: 40},
			{AssocKey: accounting.AssocKey{Cluster: "hpc", Account: "physics", User: "alice"}},
			{AssocKey: accounting.AssocKey{Cluster: "hpc", Account: "chemistry", User: "bob"}},
		} {
			if _, err := tx.PutAssoc(t0, a); err != nil {
				return err
			}
		}
		// alice ran a 2-GPU job for 3 hours; bob a CPU job for 1 hour.
		for _, j := range []accounting.JobRecord{
			{ID: 1, Cluster: "hpc", User: "alice", Account: "physics", Submit: t0, Start: t0, End: t0.Add(3 * time.Hour),
				State: accounting.StateCompleted, AllocTRES: accounting.TRES{"cpu": 32, "gres/gpu": 2, "billing": 52}},
			{ID: 2, Cluster: "hpc", User: "bob", Account: "chemistry", Submit: t0, Start: t0, End: t0.Add(time.Hour),
				State: accounting.StateCompleted, AllocTRES: accounting.TRES{"cpu": 8, "billing": 8}},
		} {
			if err := tx.PutJob(j); err != nil {
				return err
			}
			rec, err := tx.Job(j.ID) // the association is resolved from the names
			if err != nil {
				return err
			}
			if err := tx.Charge(accounting.Charge{Assoc: rec.Assoc, TRES: j.AllocTRES, From: j.Start, To: j.End}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	err = l.View(func(tx accounting.Tx) error {
		tree, err := accounting.ShareTree(tx, "hpc", t0.Add(4*time.Hour))
		if err != nil {
			return err
		}
		if err := accounting.WriteShareTree(os.Stdout, tree, nil); err != nil {
			return err
		}
		phys, err := tx.LookupAssoc(accounting.AssocKey{Cluster: "hpc", Account: "physics"})
		if err != nil {
			return err
		}
		tot, err := tx.Totals(phys.ID, t0.Truncate(24*time.Hour), t0.Add(24*time.Hour))
		if err != nil {
			return err
		}
		fmt.Printf("physics: %d job(s), %.0f GPU-hours, %.0f billing-hours\n",
			tot.Jobs, float64(tot.TRESSeconds["gres/gpu"])/3600, float64(tot.TRESSeconds["billing"])/3600)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// Account      User   RawShares  NormShares  RawUsage  NormUsage
	// root                1          1.000000    590400    1.000000
	//  chemistry          40         0.400000    28800     0.048780
	//   chemistry  bob    1          0.400000    28800     0.048780
	//  physics            60         0.600000    561600    0.951220
	//   physics    alice  1          0.600000    561600    0.951220
	// physics: 1 job(s), 6 GPU-hours, 156 billing-hours
}

// A durable ledger in one file: fsync per commit, and everything is back
// after reopening.
func ExampleOpenBunt() {
	dir, err := os.MkdirTemp("", "ledger-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ledger.db")
	t0 := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	l, err := accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{})
	if err != nil {
		log.Fatal(err)
	}
	err = l.Update(func(tx accounting.Tx) error {
		if _, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "hpc", Account: "physics"}}); err != nil {
			return err
		}
		_, err := tx.PutDecision(accounting.Decision{Kind: accounting.DecisionStart, Time: t0, Job: 7,
			Priority: 1200, Factors: map[string]float64{"age": 200, "fairshare": 1000}, PolicyVersion: "cfg-1",
			Competing: []accounting.Competitor{{Job: 8, Priority: 900, Reason: "Priority"}}})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := l.Close(); err != nil {
		log.Fatal(err)
	}

	l, err = accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	err = l.View(func(tx accounting.Tx) error {
		return tx.Decisions(accounting.DecisionQuery{Job: 8, WithCompeting: true}, func(d accounting.Decision) bool {
			fmt.Printf("job %d started before job 8 (%s, priority %.0f vs %.0f, policy %s)\n",
				d.Job, d.Competing[0].Reason, d.Priority, d.Competing[0].Priority, d.PolicyVersion)
			return true
		})
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// job 7 started before job 8 (Priority, priority 1200 vs 900, policy cfg-1)
}
