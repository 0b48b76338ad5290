package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/accounting/postgres/internal/pgtest"
)

// The test server (see package pgtest): SLUICE_PG_DSN when set, otherwise
// one TestMain starts. Without either, every test of the package is
// skipped with the reason.
var (
	serverDSN  string // the database tests use
	adminDSN   string // a database for CREATE DATABASE ("" = use serverDSN)
	runID      string // prefix of this run's cluster names (shared servers)
	skipReason string // why there is no server, when there is none
	seq        atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var r [4]byte
	_, _ = rand.Read(r[:])
	runID = hex.EncodeToString(r[:])
	var stop func()
	var err error
	serverDSN, adminDSN, stop, err = pgtest.Setup("sluice_test")
	if err != nil {
		skipReason = "no PostgreSQL: " + err.Error()
		fmt.Println("accounting/postgres:", skipReason)
		// Examples cannot skip: run the tests alone; each skips with the
		// reason.
		if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "" {
			_ = flag.Set("test.run", "^Test")
		}
		return m.Run()
	}
	defer stop()
	if err := os.Setenv("SLUICE_PG_DSN", serverDSN); err != nil { // for Example, written as a program would be
		fmt.Println(err)
		return 1
	}
	return m.Run()
}

// testPool returns a pool on the test database, closed at the end of t.
func testPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return poolFor(t, serverDSN)
}

func poolFor(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	needServer(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 8
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// freshDB creates an empty database for a test that needs one (migration
// tests) and returns its DSN; it skips t where the server refuses.
func freshDB(t testing.TB) string {
	t.Helper()
	needServer(t)
	if adminDSN == "" {
		t.Skip("SLUICE_PG_DSN is set: this test needs an empty database of its own (it uses the server the test starts)")
	}
	name := fmt.Sprintf("sluice_%s_%d", runID, seq.Add(1))
	if err := pgtest.CreateDB(adminDSN, name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	cfg, _ := pgxpool.ParseConfig(adminDSN)
	return strings.Replace(adminDSN, "dbname="+cfg.ConnConfig.Database, "dbname="+name, 1)
}

// clusterName returns a cluster name no other test of this run uses.
func clusterName(what string) string {
	return fmt.Sprintf("%s-%s-%d", what, runID, seq.Add(1))
}

// needServer skips t when no server could be had.
func needServer(t testing.TB) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
}
