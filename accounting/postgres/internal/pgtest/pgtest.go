// Package pgtest gives the tests of package postgres and its command a
// PostgreSQL server: the one SLUICE_PG_DSN names, or one it starts from
// initdb and pg_ctl (found in PATH or Debian's /usr/lib/postgresql/*/bin)
// in a temporary directory, listening on 127.0.0.1 at a free port with
// its Unix socket in that directory. Running as root (initdb refuses
// root) it runs them as user nobody, which owns the directory.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a PostgreSQL server a test process started.
type Server struct {
	Bin  string // directory of initdb, pg_ctl
	Dir  string // data directory's parent, socket and log directory
	Port int
	User string // the user the server runs as ("" = this process's)
}

// Setup returns the DSN of the database tests use and the DSN of an
// administrative database for CREATE DATABASE ("" when the server is
// SLUICE_PG_DSN's, which tests must not assume they may create
// databases on), and a function that stops what it started. Without
// SLUICE_PG_DSN it starts a server and creates database db on it.
func Setup(db string) (dsn, admin string, stop func(), err error) {
	if dsn := os.Getenv("SLUICE_PG_DSN"); dsn != "" {
		return dsn, "", func() {}, nil
	}
	s, err := Start()
	if err != nil {
		return "", "", nil, fmt.Errorf("SLUICE_PG_DSN is unset and a server could not be started: %w", err)
	}
	if err := CreateDB(s.DSN("postgres"), db); err != nil {
		s.Stop()
		return "", "", nil, fmt.Errorf("create database %s: %w", db, err)
	}
	return s.DSN(db), s.DSN("postgres"), s.Stop, nil
}

// FindBin returns the directory holding initdb and pg_ctl: from PATH, or
// the newest /usr/lib/postgresql/<version>/bin.
func FindBin() (string, error) {
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

// Start initialises a cluster in a new temporary directory and starts a
// server on it (trust authentication, user postgres).
func Start() (*Server, error) {
	bin, err := FindBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{Bin: bin, Dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root and no user nobody to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		s.User = "nobody"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	data := filepath.Join(dir, "data")
	if out, err := s.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c max_connections=200 -c shared_buffers=256MB", s.Port, dir)
	if out, err := s.run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("pg_ctl start: %w: %s\n%s", err, out, log)
	}
	return s, nil
}

func (s *Server) run(prog string, args ...string) ([]byte, error) {
	path := filepath.Join(s.Bin, prog)
	var cmd *exec.Cmd
	if s.User != "" {
		cmd = exec.Command("runuser", append([]string{"-u", s.User, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = s.Dir
	return cmd.CombinedOutput()
}

// DSN returns the connection string of database db on s.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=%s sslmode=disable", s.Port, db)
}

// Stop stops the server and removes its directory.
func (s *Server) Stop() {
	_, _ = s.run("pg_ctl", "-D", filepath.Join(s.Dir, "data"), "-m", "fast", "-w", "stop")
	_ = os.RemoveAll(s.Dir)
}

// CreateDB creates database name through the server admin points at.
func CreateDB(admin, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close(context.Background()) }()
	_, err = c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}
