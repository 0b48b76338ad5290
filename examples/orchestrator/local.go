//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/cgroup"
)

// LocalAgent is a NodeAgent that runs every job on this machine, each
// run as a child process supervised by a small shim (this program's
// "shim" subcommand), with its records in a directory of its own:
//
//	<dir>/<key>/lock     flock(2)ed by the shim for as long as it lives
//	<dir>/<key>/pid      the shim's pid, written by the shim (for Kill)
//	<dir>/<key>/output   the command's stdout and stderr
//	<dir>/<key>/exit     the command's exit code, written by the shim, atomically
//
// The shim runs in a session of its own (setsid), so it and the job
// survive the death of the control loop, SIGKILL included; a restarted
// control loop finds them through the directory: a run whose lock is held
// is running, one whose lock is free has exited (exit file), was lost
// (no exit file: the shim was killed after it wrote its pid file, before
// which it starts nothing), or never started (no pid file either: the
// launch died before the shim ran; Launch starts it afresh). The run's
// directory is created before anything is started, so a run's command is
// started at most once per key, whatever the control loop's crash point.
//
// Where the host allows it (a cgroup v2 hierarchy with the cpuset and
// memory controllers, and the rights to use them) each run is confined
// to its allocation by the cgroup driver (package gres/cgroup): a cgroup
// job_<key> holding its CPUs and memory limit, into which the shim is
// started (clone3 CLONE_INTO_CGROUP), so that nothing the job forks
// escapes it. Elsewhere runs are plain child processes.
type LocalAgent struct {
	dir  string
	shim []string // argv prefix running the shim
	cg   *cgroup.Enforcer
	log  *log.Logger
}

// LocalOptions configure a LocalAgent.
type LocalOptions struct {
	// Shim is the argv prefix that runs the shim; the agent appends the
	// run directory, "--" and the job's command. Nil means this
	// executable's "shim" subcommand.
	Shim []string
	// CgroupRoot, when set, is the cgroup v2 directory to confine runs
	// under (e.g. /sys/fs/cgroup/sluice). The agent checks at start that
	// it can create, confine and remove a cgroup there; when it cannot
	// (no cgroup v2, cpuset or memory bound to cgroup v1, no rights) it
	// logs why and runs jobs unconfined. Empty: unconfined.
	CgroupRoot string
	// Log receives the agent's notices; nil discards them.
	Log *log.Logger
}

// NewLocalAgent returns an agent keeping its run records under dir
// (created when absent).
func NewLocalAgent(dir string, opt LocalOptions) (*LocalAgent, error) {
	dir, err := filepath.Abs(dir) // the shim runs in its run's directory
	if err != nil {
		return nil, fmt.Errorf("agent: run directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("agent: run directory: %w", err)
	}
	a := &LocalAgent{dir: dir, shim: slices.Clone(opt.Shim), log: opt.Log}
	if a.log == nil {
		a.log = log.New(discard{}, "", 0)
	}
	if a.shim == nil {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("agent: finding the shim: %w", err)
		}
		a.shim = []string{self, "shim"}
	}
	if opt.CgroupRoot != "" {
		cg, err := probeCgroup(opt.CgroupRoot)
		if err != nil {
			a.log.Printf("agent: running jobs unconfined: %v", err)
		} else {
			a.cg = cg
			a.log.Printf("agent: confining jobs in cgroups under %s", opt.CgroupRoot)
		}
	}
	return a, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// probeCgroup returns an Enforcer under root once it has applied and
// released a cgroup holding CPU 0 and a memory limit there.
func probeCgroup(root string) (*cgroup.Enforcer, error) {
	cg, err := cgroup.New(cgroup.Config{Root: root, UnconstrainedSwap: true})
	if err != nil {
		return nil, err
	}
	cpus, err := gres.CoreSetOf(0)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	if err := cg.Apply(ctx, gres.Allocation{Job: "probe", CPUs: cpus, MemoryBytes: 64 << 20}); err != nil {
		return nil, err
	}
	if err := cg.Release(ctx, "probe", ""); err != nil {
		return nil, err
	}
	return cg, nil
}

// Confined reports whether runs are confined in cgroups.
func (a *LocalAgent) Confined() bool { return a.cg != nil }

func (a *LocalAgent) runDir(k RunKey) string { return filepath.Join(a.dir, string(k)) }

// Launch starts run r under its shim (see LocalAgent).
func (a *LocalAgent) Launch(r Run) (err error) {
	if _, _, err := parseRunKey(r.Key); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if len(r.Command) == 0 {
		return fmt.Errorf("agent: run %s: no command", r.Key)
	}
	dir := a.runDir(r.Key)
	err = os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		st, cerr := a.Check(r.Key)
		if cerr != nil {
			return cerr
		}
		if st.State != RunNotLaunched {
			return nil // launched before: Check tells how it is doing
		}
		// A launch that died before its shim started: start afresh.
		if err = os.RemoveAll(dir); err == nil {
			err = os.Mkdir(dir, 0o755)
		}
	}
	if err != nil {
		return fmt.Errorf("agent: run %s: %w", r.Key, err)
	}
	// The directory must be on disk before the process starts: it is
	// what says "launched" to a control loop restarted after a crash.
	if err := syncDir(a.dir); err != nil {
		return fmt.Errorf("agent: run %s: %w", r.Key, err)
	}
	defer func() {
		if err != nil {
			// Left for a post-mortem; Check now says RunLost.
			_ = os.WriteFile(filepath.Join(dir, "launch-error"), []byte(err.Error()+"\n"), 0o644)
		}
	}()
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("agent: run %s: %w", r.Key, err)
	}
	defer lock.Close()
	// Held from here until the shim (which inherits the open file) exits:
	// a control loop that dies before the shim starts drops it.
	if err := flockNB(lock); err != nil {
		return fmt.Errorf("agent: run %s: locking: %w", r.Key, err)
	}
	out, err := os.OpenFile(filepath.Join(dir, "output"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("agent: run %s: %w", r.Key, err)
	}
	defer out.Close()
	args := append(slices.Clone(a.shim[1:]), dir, "--")
	cmd := exec.Command(a.shim[0], append(args, r.Command...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"SLUICE_JOB_ID="+strconv.FormatUint(uint64(r.Job), 10),
		"SLUICE_JOB_NAME="+r.Name,
		"SLUICE_RUN="+string(r.Key),
		"SLUICE_NODELIST="+strings.Join(r.Alloc.NodeNames(), ","),
		"SLUICE_TIME_LIMIT="+strconv.FormatInt(int64(r.TimeLimit.Seconds()), 10),
	)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.ExtraFiles = []*os.File{lock} // fd 3 in the shim
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if a.cg != nil {
		fd, err := a.confine(r)
		if err != nil {
			return err
		}
		defer fd.Close()
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(fd.Fd())
	}
	if err := cmd.Start(); err != nil {
		a.release(r.Key)
		return fmt.Errorf("agent: run %s: starting its shim: %w", r.Key, err)
	}
	// Reap the shim when it ends while this process lives; after a
	// restart the shim is an orphan that init reaps.
	go func() { _ = cmd.Wait() }()
	return nil
}

// confine applies the cgroup of run r (the CPUs and memory of its first
// node) and returns the cgroup directory opened for CgroupFD.
func (a *LocalAgent) confine(r Run) (*os.File, error) {
	ga := gres.Allocation{Job: string(r.Key)}
	if len(r.Alloc.Nodes) > 0 {
		n := r.Alloc.Nodes[0]
		cpus, err := gres.CoreSetOf(n.CPUs...)
		if err != nil {
			return nil, fmt.Errorf("agent: run %s: CPUs: %w", r.Key, err)
		}
		ga.CPUs, ga.MemoryBytes = cpus, n.MemoryMiB<<20
	}
	if err := a.cg.Apply(context.Background(), ga); err != nil {
		return nil, fmt.Errorf("agent: run %s: %w", r.Key, err)
	}
	p, err := a.cg.Path(string(r.Key), "")
	if err == nil {
		var f *os.File
		if f, err = os.Open(p); err == nil {
			return f, nil
		}
	}
	a.release(r.Key)
	return nil, fmt.Errorf("agent: run %s: cgroup: %w", r.Key, err)
}

// release removes run k's cgroup (killing what is left in it), if runs
// are confined.
func (a *LocalAgent) release(k RunKey) {
	if a.cg == nil {
		return
	}
	if err := a.cg.Release(context.Background(), string(k), ""); err != nil {
		a.log.Printf("agent: run %s: %v", k, err)
	}
}

// Check reports run key's state from its directory and its shim's lock:
// no directory, or one whose shim is gone without having written its pid
// file (the launch died before the command could start), is
// RunNotLaunched; a held lock RunRunning; a free one with an exit file
// RunExited, without one RunLost.
func (a *LocalAgent) Check(key RunKey) (RunStatus, error) {
	dir := a.runDir(key)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return RunStatus{State: RunNotLaunched}, nil
	} else if err != nil {
		return RunStatus{}, fmt.Errorf("agent: run %s: %w", key, err)
	}
	alive, err := locked(filepath.Join(dir, "lock"))
	if err != nil {
		return RunStatus{}, fmt.Errorf("agent: run %s: %w", key, err)
	}
	if alive {
		return RunStatus{State: RunRunning}, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "exit"))
	if errors.Is(err, fs.ErrNotExist) {
		// The shim writes its pid file before it starts the command:
		// without one, the launch died before the command could start.
		if _, err := os.Stat(filepath.Join(dir, "pid")); errors.Is(err, fs.ErrNotExist) {
			return RunStatus{State: RunNotLaunched}, nil
		}
		return RunStatus{State: RunLost}, nil
	}
	if err != nil {
		return RunStatus{}, fmt.Errorf("agent: run %s: %w", key, err)
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return RunStatus{}, fmt.Errorf("agent: run %s: exit file %q: %w", key, b, err)
	}
	return RunStatus{State: RunExited, ExitCode: code}, nil
}

// locked reports whether another open file holds an exclusive flock on
// path (the file is created when missing: a launch that died before
// creating it left nobody holding it).
func locked(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("flock %s: %w", path, err)
	}
	return false, unix.Flock(int(f.Fd()), unix.LOCK_UN)
}

// Kill asks run key's shim to kill the job's process group (SIGTERM to
// the shim, which SIGKILLs the group) and, for a confined run, removes its
// cgroup, which kills whatever is left in it.
func (a *LocalAgent) Kill(key RunKey) error {
	defer a.release(key)
	st, err := a.Check(key)
	if err != nil || st.State != RunRunning {
		return err
	}
	b, err := os.ReadFile(filepath.Join(a.runDir(key), "pid"))
	if err != nil {
		return fmt.Errorf("agent: killing run %s: %w", key, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return fmt.Errorf("agent: killing run %s: pid file %q", key, b)
	}
	if err := unix.Kill(pid, unix.SIGTERM); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("agent: killing run %s (shim %d): %w", key, pid, err)
	}
	return nil
}

// errStillRunning is Forget's answer for a run whose shim is alive: it
// was killed, and is forgotten by a later call, once the shim is gone.
var errStillRunning = errors.New("still running: killed, to be forgotten once its shim has exited")

// Forget removes run key's directory, keeping the job's output as
// <dir>/output/<key>.out. A run still running is killed and kept (the
// error wraps errStillRunning): its shim must be gone before its
// directory goes, or its last writes could land in a new one.
func (a *LocalAgent) Forget(key RunKey) error {
	st, err := a.Check(key)
	if err != nil {
		return err
	}
	if st.State == RunRunning {
		if err := a.Kill(key); err != nil {
			return err
		}
		return fmt.Errorf("agent: forgetting run %s: %w", key, errStillRunning)
	}
	a.release(key)
	dir := a.runDir(key)
	keep := filepath.Join(filepath.Dir(a.dir), "output")
	if err := os.MkdirAll(keep, 0o755); err != nil {
		return fmt.Errorf("agent: forgetting run %s: %w", key, err)
	}
	err = os.Rename(filepath.Join(dir, "output"), filepath.Join(keep, string(key)+".out"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("agent: forgetting run %s: %w", key, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("agent: forgetting run %s: %w", key, err)
	}
	return nil
}

// Runs lists the runs with a directory, in name order.
func (a *LocalAgent) Runs() ([]RunKey, error) {
	ents, err := os.ReadDir(a.dir)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	var out []RunKey
	for _, e := range ents {
		if _, _, err := parseRunKey(RunKey(e.Name())); err == nil && e.IsDir() {
			out = append(out, RunKey(e.Name()))
		}
	}
	return out, nil
}
