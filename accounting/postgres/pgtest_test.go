package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The test server: SLUICE_PG_DSN when set, otherwise a PostgreSQL that
// TestMain starts from initdb/pg_ctl in a temporary directory, listening
// on 127.0.0.1 and a Unix socket in that directory, as user nobody when
// the tests run as root (initdb refuses root). Without either, every test
// of the package is skipped with the reason.
var (
	serverDSN string // the database tests use
	adminDSN  string // a database for CREATE DATABASE ("" = use serverDSN)
	runID     string // prefix of this run's cluster names (shared servers)
	seq       atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var r [4]byte
	_, _ = rand.Read(r[:])
	runID = hex.EncodeToString(r[:])
	if dsn := os.Getenv("SLUICE_PG_DSN"); dsn != "" {
		serverDSN = dsn
		return m.Run()
	}
	srv, err := startServer()
	if err != nil {
		fmt.Printf("SKIP accounting/postgres: no PostgreSQL: SLUICE_PG_DSN is unset and a server could not be started: %v\n", err)
		return 0
	}
	defer srv.stop()
	serverDSN, adminDSN = srv.dsn("sluice_test"), srv.dsn("postgres")
	if err := createDB(adminDSN, "sluice_test"); err != nil {
		fmt.Printf("accounting/postgres: create test database: %v\n", err)
		return 1
	}
	return m.Run()
}

type server struct {
	bin, dir string
	port     int
	asUser   string // "" = this user
}

// findBin returns the directory holding initdb and pg_ctl: from PATH, or
// the newest /usr/lib/postgresql/<version>/bin (Debian's layout).
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(a))))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(b))))
		return va - vb
	})
	if len(dirs) == 0 {
		return "", fmt.Errorf("initdb not found in PATH or /usr/lib/postgresql/*/bin")
	}
	return filepath.Dir(dirs[len(dirs)-1]), nil
}

func startServer() (*server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-pg-")
	if err != nil {
		return nil, err
	}
	s := &server{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return nil, fmt.Errorf("running as root and no user nobody to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		s.asUser = "nobody"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	data := filepath.Join(dir, "data")
	if out, err := s.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c max_connections=200 -c shared_buffers=256MB", s.port, dir)
	if out, err := s.run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("pg_ctl start: %w: %s\n%s", err, out, log)
	}
	return s, nil
}

func (s *server) run(prog string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, prog)
	var cmd *exec.Cmd
	if s.asUser != "" {
		cmd = exec.Command("runuser", append([]string{"-u", s.asUser, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = s.dir
	return cmd.CombinedOutput()
}

func (s *server) dsn(db string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=%s sslmode=disable", s.port, db)
}

func (s *server) stop() {
	_, _ = s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "fast", "-w", "stop")
	_ = os.RemoveAll(s.dir)
}

func createDB(admin, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pgxpool.New(ctx, admin)
	if err != nil {
		return err
	}
	defer p.Close()
	_, err = p.Exec(ctx, "CREATE DATABASE "+name)
	return err
}

// testPool returns a pool on the test database, closed at the end of t.
func testPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return poolFor(t, serverDSN)
}

func poolFor(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
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
	if adminDSN == "" {
		t.Skip("SLUICE_PG_DSN is set: this test needs an empty database of its own (it uses the server the test starts)")
	}
	name := fmt.Sprintf("sluice_%s_%d", runID, seq.Add(1))
	if err := createDB(adminDSN, name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	cfg, _ := pgxpool.ParseConfig(adminDSN)
	return strings.Replace(adminDSN, "dbname="+cfg.ConnConfig.Database, "dbname="+name, 1)
}

// clusterName returns a cluster name no other test of this run uses.
func clusterName(what string) string {
	return fmt.Sprintf("%s-%s-%d", what, runID, seq.Add(1))
}
