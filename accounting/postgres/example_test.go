package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/postgres"
)

// Example opens one cluster's ledger in a PostgreSQL database, records a
// job and charges its first hour twice (a retry): the keyed charge counts
// once. A second writer of the same cluster is refused.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("SLUICE_PG_DSN"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	cluster := fmt.Sprintf("example-%d", time.Now().UnixNano())
	l, err := postgres.Open(ctx, pool, postgres.Options{Cluster: cluster}, accounting.Config{NoDecay: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	start := time.Date(2024, 3, 1, 8, 0, 0, 0, time.UTC)
	var job accounting.JobRecord
	err = l.Update(func(tx accounting.Tx) error {
		if _, err := tx.PutAssoc(start, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: cluster, Account: "physics"}}); err != nil {
			return err
		}
		u, err := tx.PutAssoc(start, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: cluster, Account: "physics", User: "alice"}})
		if err != nil {
			return err
		}
		job = accounting.JobRecord{ID: 1, Cluster: cluster, Assoc: u.ID, Submit: start, Start: start,
			State: accounting.StateRunning, AllocTRES: accounting.TRES{"cpu": 4}}
		return tx.PutJob(job)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 2 { // the second is a retry of a commit the caller did not see
		err := l.Update(func(tx accounting.Tx) error {
			return tx.Charge(accounting.JobCharge(job, start, start.Add(time.Hour)))
		})
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	_ = l.View(func(tx accounting.Tx) error {
		u, err := tx.Usage(job.Assoc, start.Add(time.Hour))
		fmt.Printf("alice: %.0f CPU-hours\n", u.Raw/3600)
		return err
	})

	_, err = postgres.Open(ctx, pool, postgres.Options{Cluster: cluster}, accounting.Config{NoDecay: true})
	fmt.Println("second writer refused:", errors.Is(err, accounting.ErrLocked))
	// Output:
	// alice: 4 CPU-hours
	// second writer refused: true
}
