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
	"strconv"
	"strings"
	"sync"

	"github.com/opencontainers/cgroups"
	_ "github.com/opencontainers/cgroups/devices" // registers the cgroup v2 device-program writer (cgroups.DevicesSetV2)
	devconfig "github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/cgroups/fs2"
	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/gres"
)

// fsOps are the filesystem operations that differ between a real cgroup2
// mount and the fake (temporary directory) one unit tests use.
type fsOps struct {
	mkdir      func(path string) error
	remove     func(path string) error
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
// The filesystem is the only state: an Enforcer restarted after a crash
// finds the jobs it made (Jobs) and can release them. Methods are safe for
// concurrent use (they are serialised).
type Enforcer struct {
	cfg  Config
	ops  fsOps
	mu   sync.Mutex
	root bool // Root prepared
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
	return &Enforcer{cfg: cfg.clone(), ops: ops}
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

// controllerSet reads a cgroup.controllers or cgroup.subtree_control
// file ("cpuset cpu memory", "+" prefixes tolerated).
func controllerSet(dir, file string) (map[string]bool, error) {
	s, err := cgroups.ReadFile(dir, file)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, f := range strings.Fields(s) {
		out[strings.TrimPrefix(f, "+")] = true
	}
	return out, nil
}

// enableControllers writes the controllers missing from dir's
// cgroup.subtree_control, in one write. dir must offer them in
// cgroup.controllers.
func (e *Enforcer) enableControllers(dir string) error {
	avail, err := controllerSet(dir, "cgroup.controllers")
	if err != nil {
		return fmt.Errorf("cgroup: %s: %w", dir, err)
	}
	on, err := controllerSet(dir, "cgroup.subtree_control")
	if err != nil {
		return fmt.Errorf("cgroup: %s: %w", dir, err)
	}
	var add []string
	for _, c := range e.cfg.Controllers {
		if !avail[c] {
			return fmt.Errorf("%w: %q not in %s/cgroup.controllers (enable it in the parent's cgroup.subtree_control; on a hybrid v1/v2 host it may be bound to v1)", ErrControllerUnavailable, c, dir)
		}
		if !on[c] {
			add = append(add, "+"+c)
		}
	}
	if len(add) == 0 {
		return nil
	}
	if err := cgroups.WriteFile(dir, "cgroup.subtree_control", strings.Join(add, " ")); err != nil {
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("cgroup: enabling %s in %s: the cgroup holds processes (cgroup v2 allows controllers only over leaf processes; move them into a child): %w", strings.Join(add, " "), dir, err)
		}
		return fmt.Errorf("cgroup: enabling %s in %s: %w", strings.Join(add, " "), dir, err)
	}
	return nil
}

// prepareRoot creates Root and enables the controllers for its children,
// asking Root's parent for controllers Root does not offer yet.
func (e *Enforcer) prepareRoot() error {
	if e.root {
		return nil
	}
	root := e.cfg.Root
	if err := e.ops.mkdir(root); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("cgroup: creating Root %s: %w", root, err)
	}
	avail, err := controllerSet(root, "cgroup.controllers")
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrNotCgroup2, root, err)
	}
	var missing []string
	for _, c := range e.cfg.Controllers {
		if !avail[c] {
			missing = append(missing, "+"+c)
		}
	}
	if len(missing) > 0 {
		parent := filepath.Dir(root)
		if err := cgroups.WriteFile(parent, "cgroup.subtree_control", strings.Join(missing, " ")); err != nil {
			return fmt.Errorf("%w: enabling %s in %s: %w", ErrControllerUnavailable, strings.Join(missing, " "), parent, err)
		}
	}
	if err := e.enableControllers(root); err != nil {
		return err
	}
	e.root = true
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Apply creates or updates the cgroup of a job (a.Step == "") or step:
// cpuset.cpus and cpuset.mems (when set), memory.max ("max" when
// MemoryBytes is 0) and the device program (see DevicePolicy), which
// replaces any program attached before — opencontainers/cgroups detaches
// or replaces the old one, so an update can widen access as well as narrow
// it. A step's job must exist (gres.ErrJobNotApplied); the first step
// enables the controllers in its job's cgroup, which from then on may hold
// processes only in steps. When Apply fails on a cgroup it created, it
// removes it.
//
// Processes are placed with AddProcess, or started inside with
// syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd of Path}.
func (e *Enforcer) Apply(ctx context.Context, a gres.Allocation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	plan, err := e.cfg.Plan(a)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.prepareRoot(); err != nil {
		return err
	}
	if a.Step != "" {
		job := filepath.Dir(plan.Dir)
		if !exists(job) {
			return fmt.Errorf("cgroup: step %q of job %q: %w", a.Step, a.Job, gres.ErrJobNotApplied)
		}
		if err := e.enableControllers(job); err != nil {
			return err
		}
	}
	created := false
	if err := e.ops.mkdir(plan.Dir); err == nil {
		created = true
	} else if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("cgroup: creating %s: %w", plan.Dir, err)
	}
	if err := e.write(plan); err != nil {
		if created {
			if rerr := e.ops.remove(plan.Dir); rerr != nil {
				err = errors.Join(err, fmt.Errorf("cgroup: removing %s after the failure: %w", plan.Dir, rerr))
			}
		}
		return err
	}
	return nil
}

// write applies a plan's limits and device rules to its directory.
func (e *Enforcer) write(p Plan) error {
	res := &cgroups.Resources{SkipDevices: true}
	if slices.Contains(e.cfg.Controllers, "cpuset") {
		res.CpusetCpus, res.CpusetMems = p.CpusetCpus, p.CpusetMems
	}
	if slices.Contains(e.cfg.Controllers, "memory") { // memory.max exists only then
		res.Memory = -1 // "max"
		if p.MemoryMax != "max" {
			n, err := strconv.ParseInt(p.MemoryMax, 10, 64)
			if err != nil {
				return fmt.Errorf("cgroup: memory.max %q: %w", p.MemoryMax, err)
			}
			res.Memory = n
		}
	}
	m, err := fs2.NewManager(&cgroups.Cgroup{Resources: res}, p.Dir)
	if err != nil {
		return fmt.Errorf("cgroup: %s: %w", p.Dir, err)
	}
	if err := m.Set(res); err != nil {
		return fmt.Errorf("cgroup: setting cpuset/memory in %s: %w", p.Dir, err)
	}
	rules := make([]*devconfig.Rule, len(p.Devices))
	for i, r := range p.Devices {
		rules[i] = r.rule()
	}
	if err := e.ops.setDevices(p.Dir, rules); err != nil {
		return fmt.Errorf("cgroup: device program for %s: %w", p.Dir, err)
	}
	return nil
}

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
	if !exists(dir) {
		return nil
	}
	if err := e.ops.remove(dir); err != nil {
		return fmt.Errorf("cgroup: releasing %s: %w", dir, err)
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
