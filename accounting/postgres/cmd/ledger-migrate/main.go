// Command ledger-migrate moves a buntdb ledger file into a PostgreSQL
// database as one cluster's ledger (package accounting/postgres), then
// verifies the copy: the same keys and bytes (counts per prefix, a
// digest), and through the ledger API the same job records per cluster
// and rollup totals per association. Interrupted (Ctrl-C, a lost
// connection), it resumes from its last checkpoint when run again with
// the same arguments. The source file is locked for the whole run, so no
// controller writes it meanwhile.
//
//	ledger-migrate -from /var/lib/sluice/ledger.db -dsn "host=db user=sluice dbname=sluice" -cluster c1
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/postgres"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ledger-migrate:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ledger-migrate", flag.ContinueOnError)
	fs.SetOutput(out)
	from := fs.String("from", "", "buntdb ledger file to move (required)")
	dsn := fs.String("dsn", os.Getenv("SLUICE_PG_DSN"), "PostgreSQL connection string (default $SLUICE_PG_DSN)")
	cluster := fs.String("cluster", "", "cluster namespace of the ledger in the database (required)")
	batch := fs.Int("batch", 5000, "keys per transaction")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" || *cluster == "" || *dsn == "" {
		return errors.New("-from, -cluster and -dsn (or SLUICE_PG_DSN) are required")
	}
	path, err := filepath.Abs(*from)
	if err != nil {
		return err
	}
	src, err := accounting.OpenBuntBackend(path, accounting.BuntOptions{StrictTail: true})
	if err != nil {
		return err
	}
	defer func() { _ = src.Close() }()
	cfg, err := sourceConfig(src)
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, *dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	opts := postgres.Options{Cluster: *cluster}
	dst, err := postgres.OpenBackend(ctx, pool, opts)
	if err != nil {
		return err
	}
	start := time.Now()
	sum, err := postgres.Import(ctx, src, dst, postgres.ImportOptions{Source: path, Batch: *batch, Progress: func(n int64) {
		fmt.Fprintf(out, "copied %d keys\n", n)
	}})
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "keys: %d (%d bytes, %d job records) in %v, digest %x\n", sum.Keys, sum.Bytes, sum.JobRecords, time.Since(start).Round(time.Millisecond), sum.Digest[:8])
	srcL, err := accounting.New(src, cfg)
	if err != nil {
		return err
	}
	dstL, err := postgres.Open(ctx, pool, opts, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = dstL.Close() }()
	tot, err := postgres.VerifyLedgers(srcL, dstL)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "verified: job records per cluster %v, rollup totals of %d associations equal\n", tot.Jobs, len(tot.Usage))
	return nil
}

// sourceConfig returns a Config whose Location is the one the source
// ledger was created with (the ledger refuses another).
func sourceConfig(b accounting.Backend) (accounting.Config, error) {
	var name string
	err := b.View(func(r accounting.KVReader) error {
		var err error
		name, _, err = r.Get("m:location")
		return err
	})
	if err != nil || name == "" {
		return accounting.Config{}, err
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return accounting.Config{}, fmt.Errorf("source ledger's time zone %q: %w", name, err)
	}
	return accounting.Config{Location: loc}, nil
}
