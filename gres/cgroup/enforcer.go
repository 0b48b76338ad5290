//go:build linux

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/opencontainers/cgroups"
	_ "github.com/opencontainers/cgroups/devices" // registers the cgroup v2 device-program writer (cgroups.DevicesSetV2)
	devconfig "github.com/opencontainers/cgroups/devices/config"
	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/gres"
)

// fsOps are the filesystem operations that differ between a real cgroup2
// mount and the fake (temporary directory) one unit tests use.
type fsOps struct {
	mkdir  func(path string) error
	remove func(path string) error
	// subtree writes a change ("+cpuset +memory", "-cpuset") to dir's
	// cgroup.subtree_control.
	subtree    func(dir, change string) error
	setDevices func(dir string, rules []*devconfig.Rule) error
}

// realOps works on a real cgroup2 mount.
func realOps() fsOps {
	return fsOps{
		mkdir: func(p string) error { return os.Mkdir(p, 0o755) },
		remove: func(p string) error {
			if err := killAll(p); err != nil {
				return err
			}
			return cgroups.RemovePath(p) // retries while killed processes exit
		},
		subtree: func(dir, change string) error { return cgroups.WriteFile(dir, "cgroup.subtree_control", change) },
		setDevices: func(dir string, rules []*devconfig.Rule) error {
			if cgroups.DevicesSetV2 == nil {
				return cgroups.ErrDevicesUnsupported
			}
			return cgroups.DevicesSetV2(dir, &cgroups.Resources{Devices: rules})
		},
	}
}

// killAll ends every process in the cgroup tree at p: cgroup.kill (Linux
// 5.14+), else SIGKILL to each pid.
func killAll(p string) error {
	err := cgroups.WriteFile(p, "cgroup.kill", "1")
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	pids, err := cgroups.GetAllPids(p)
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("kill %d in %s: %w", pid, p, err)
		}
	}
	return nil
}

// Enforcer confines jobs and steps in cgroup v2 (it implements
// gres.Enforcer): Root/job_<id> holds a job's CPUs (cpuset.cpus), NUMA
// memory nodes (cpuset.mems), memory limit (memory.max) and device
// program; Root/job_<id>/step_<name> confines one step inside it.
//
// The limits live in the filesystem: an Enforcer restarted after a crash
// finds the jobs it made (Jobs) and can release them. It also remembers
// the allocations it applied, to check that a step stays inside its job;
// after a restart, re-Apply a job before applying its steps. Methods are
// safe for concurrent use (they are serialised).
type Enforcer struct {
	cfg  Config
	ops  fsOps
	mu   sync.Mutex
	root bool                 // Root prepared
	jobs map[string]*jobState // allocations applied by this Enforcer, by job id
}

// jobState is what an Enforcer applied for one job and its steps.
type jobState struct {
	alloc gres.Allocation
	steps map[string]gres.Allocation
}

var _ gres.Enforcer = (*Enforcer)(nil)

// New returns an Enforcer for cfg after checking that cfg.Root (or its
// nearest existing parent) is on a cgroup v2 mount (ErrNotCgroup2
// otherwise, e.g. on a v1 or hybrid host's tmpfs /sys/fs/cgroup). Root is
// prepared — created, controllers enabled — on the first Apply.
func New(cfg Config) (*Enforcer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := cfg.Root
	for {
		var st unix.Statfs_t
		err := unix.Statfs(p, &st)
		if err == nil {
			if st.Type != unix.CGROUP2_SUPER_MAGIC {
				return nil, fmt.Errorf("%w: %s is on a filesystem of type %#x, not cgroup2 (%#x)", ErrNotCgroup2, p, st.Type, unix.CGROUP2_SUPER_MAGIC)
			}
			break
		}
		if !errors.Is(err, unix.ENOENT) || p == "/" {
			return nil, fmt.Errorf("%w: statfs %s: %w", ErrNotCgroup2, p, err)
		}
		p = filepath.Dir(p)
	}
	return newEnforcer(cfg, realOps()), nil
}

func newEnforcer(cfg Config, ops fsOps) *Enforcer {
	cfg.Controllers = cfg.controllers()
	return &Enforcer{cfg: cfg.clone(), ops: ops, jobs: map[string]*jobState{}}
}

// clone returns c with its slices copied.
func (c Config) clone() Config {
	c.Controllers = slices.Clone(c.Controllers)
	c.ManagedDevices = slices.Clone(c.ManagedDevices)
	c.BaseDevices = slices.Clone(c.BaseDevices)
	return c
}

// Config returns the enforcer's configuration (with defaults filled in).
func (e *Enforcer) Config() Config { return e.cfg.clone() }

// Path returns the cgroup directory of a job or step (step != ""), for
// launching processes straight into it (syscall.SysProcAttr.CgroupFD).
// It fails with gres.ErrInvalidAllocation on a bad name; the directory
// may not exist.
func (e *Enforcer) Path(job, step string) (string, error) { return e.cfg.JobDir(job, step) }

// Release removes the cgroup of a step, or of a job with all its steps
// (step == ""), first killing every process still inside (cgroup.kill).
// Releasing a cgroup that does not exist is not an error.
func (e *Enforcer) Release(ctx context.Context, job, step string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir, err := e.cfg.JobDir(job, step)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if exists(dir) {
		if err := e.ops.remove(dir); err != nil {
			return fmt.Errorf("cgroup: releasing %s: %w", dir, err)
		}
	}
	if step == "" {
		delete(e.jobs, job)
	} else if st := e.jobs[job]; st != nil {
		delete(st.steps, step)
	}
	return nil
}

// AddProcess moves process pid into the cgroup of a job or step. The
// cgroup must exist (gres.ErrJobNotApplied).
func (e *Enforcer) AddProcess(job, step string, pid int) error {
	dir, err := e.cfg.JobDir(job, step)
	if err != nil {
		return err
	}
	if pid <= 0 {
		return fmt.Errorf("%w: pid %d", gres.ErrInvalidAllocation, pid)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !exists(dir) {
		return fmt.Errorf("cgroup: job %q step %q: %w", job, step, gres.ErrJobNotApplied)
	}
	if err := cgroups.WriteCgroupProc(dir, pid); err != nil {
		return fmt.Errorf("cgroup: adding pid %d to %s: %w", pid, dir, err)
	}
	return nil
}

// Jobs returns the ids of the jobs that have a cgroup under Root, sorted
// (for reconciliation after a restart).
func (e *Enforcer) Jobs() ([]string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ents, err := os.ReadDir(e.cfg.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	var out []string
	for _, ent := range ents {
		if id, ok := strings.CutPrefix(ent.Name(), "job_"); ok && ent.IsDir() && gres.ValidName(id) {
			out = append(out, id)
		}
	}
	return out, nil
}
