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
	"sort"
	"strconv"
	"strings"

	"github.com/opencontainers/cgroups"
	devconfig "github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/cgroups/fs2"
	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/gres"
)

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

// enableControllers enables, in one write to dir's
// cgroup.subtree_control, the configured controllers it does not enable
// yet, and returns those it enabled (for disableControllers). dir must
// offer them in cgroup.controllers; the kernel applies a write wholly or
// not at all.
func (e *Enforcer) enableControllers(dir string) ([]string, error) {
	avail, err := controllerSet(dir, "cgroup.controllers")
	if err != nil {
		return nil, fmt.Errorf("cgroup: %s: %w", dir, err)
	}
	on, err := controllerSet(dir, "cgroup.subtree_control")
	if err != nil {
		return nil, fmt.Errorf("cgroup: %s: %w", dir, err)
	}
	var add []string
	for _, c := range e.cfg.Controllers {
		if !avail[c] {
			return nil, unavailable(c, dir)
		}
		if !on[c] {
			add = append(add, c)
		}
	}
	if len(add) == 0 {
		return nil, nil
	}
	if err := e.ops.subtree(dir, change('+', add)); err != nil {
		if errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("cgroup: enabling %s in %s: the cgroup holds processes (cgroup v2 allows controllers only over leaf processes; move them into a child): %w", change('+', add), dir, err)
		}
		return nil, fmt.Errorf("cgroup: enabling %s in %s: %w", change('+', add), dir, err)
	}
	return add, nil
}

// unavailable reports controller c missing from dir's cgroup.controllers.
func unavailable(c, dir string) error {
	return fmt.Errorf("%w: %q not in %s/cgroup.controllers (enable it in the parent's cgroup.subtree_control; on a hybrid v1/v2 host it may be bound to v1)", ErrControllerUnavailable, c, dir)
}

// disableControllers undoes enableControllers: it disables the
// controllers it enabled in dir (none: nothing to do).
func (e *Enforcer) disableControllers(dir string, enabled []string) error {
	if len(enabled) == 0 {
		return nil
	}
	if err := e.ops.subtree(dir, change('-', enabled)); err != nil {
		return fmt.Errorf("cgroup: disabling %s in %s again: %w", change('-', enabled), dir, err)
	}
	return nil
}

// change formats a cgroup.subtree_control write: "+cpuset +memory".
func change(sign byte, ctl []string) string {
	parts := make([]string, len(ctl))
	for i, c := range ctl {
		parts[i] = string(sign) + c
	}
	return strings.Join(parts, " ")
}

// prepareRoot creates Root and enables the controllers for its children,
// asking Root's parent for controllers Root does not offer yet. On
// success it returns undo, which reverts what it changed (removes a Root
// it created, disables the controllers it enabled), for an Apply that
// fails later; on failure it has already reverted everything. It returns
// a nil undo when Root was prepared by an earlier Apply.
func (e *Enforcer) prepareRoot() (undo func() error, err error) {
	if e.root {
		return nil, nil
	}
	root, parent := e.cfg.Root, filepath.Dir(e.cfg.Root)
	created := false
	var parentOn, rootOn []string
	revert := func() error {
		var errs []error
		if created {
			if err := e.ops.remove(root); err != nil {
				errs = append(errs, fmt.Errorf("cgroup: removing Root %s again: %w", root, err))
			}
		} else if err := e.disableControllers(root, rootOn); err != nil {
			errs = append(errs, err)
		}
		if err := e.disableControllers(parent, parentOn); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			if uerr := revert(); uerr != nil {
				err = errors.Join(err, uerr)
			}
		}
	}()
	if err := e.ops.mkdir(root); err == nil {
		created = true
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("cgroup: creating Root %s: %w", root, err)
	}
	avail, err := controllerSet(root, "cgroup.controllers")
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotCgroup2, root, err)
	}
	var missing []string
	for _, c := range e.cfg.Controllers {
		if !avail[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		offered, err := controllerSet(parent, "cgroup.controllers")
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrControllerUnavailable, parent, err)
		}
		for _, c := range missing {
			if !offered[c] {
				return nil, unavailable(c, parent)
			}
		}
		if err := e.ops.subtree(parent, change('+', missing)); err != nil {
			return nil, fmt.Errorf("%w: enabling %s in %s: %w", ErrControllerUnavailable, change('+', missing), parent, err)
		}
		parentOn = missing
	}
	if rootOn, err = e.enableControllers(root); err != nil {
		return nil, err
	}
	return revert, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Apply creates or updates the cgroup of a job (a.Step == "") or step:
// cpuset.cpus and cpuset.mems (when set), memory.max ("max" when
// MemoryBytes is 0), memory.swap.max (see Config.AllowedSwapPercent) and
// the device program (see DevicePolicy), which replaces any program
// attached before — opencontainers/cgroups detaches or replaces the old
// one, so an update can widen access as well as narrow it.
//
// A step's job must have been applied by this Enforcer
// (gres.ErrJobNotApplied), and the step must stay inside it: its CPUs,
// NUMA nodes and devices a subset of the job's (an empty set inherits
// the job's); a step outside fails with gres.ErrInvalidAllocation naming
// what lies outside, and so does a job update that would leave one of
// its steps outside. The first step enables the controllers in its job's
// cgroup, which from then on may hold processes only in steps.
//
// A failed Apply changes nothing: it removes what it created (the
// cgroup, Root on the first Apply), disables the controllers it enabled
// and, for an update, writes the previous allocation back.
//
// Processes are placed with AddProcess, or started inside with
// syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd of Path}.
func (e *Enforcer) Apply(ctx context.Context, a gres.Allocation) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	plan, err := e.cfg.Plan(a)
	if err != nil {
		return err
	}
	a = cloneAlloc(a)
	e.mu.Lock()
	defer e.mu.Unlock()
	undoRoot, err := e.prepareRoot()
	if err != nil {
		return err
	}
	if undoRoot != nil {
		defer func() {
			if err == nil {
				e.root = true
			} else if uerr := undoRoot(); uerr != nil {
				err = errors.Join(err, uerr)
			}
		}()
	}
	if a.Step == "" {
		return e.applyJob(a, plan)
	}
	return e.applyStep(a, plan)
}

// applyJob creates or updates a job's cgroup.
func (e *Enforcer) applyJob(a gres.Allocation, plan Plan) error {
	st := e.jobs[a.Job]
	if st != nil {
		names := make([]string, 0, len(st.steps))
		for name := range st.steps {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if out := outside(a, st.steps[name]); out != "" {
				return fmt.Errorf("%w: job %q: the update would leave step %q outside the job: its %s", gres.ErrInvalidAllocation, a.Job, name, out)
			}
		}
	}
	var prev *gres.Allocation
	if st != nil {
		prev = &st.alloc
	}
	if err := e.create(plan, prev); err != nil {
		return err
	}
	if st == nil {
		st = &jobState{steps: map[string]gres.Allocation{}}
		e.jobs[a.Job] = st
	}
	st.alloc = a
	return nil
}

// applyStep creates or updates a step's cgroup inside its job's.
func (e *Enforcer) applyStep(a gres.Allocation, plan Plan) error {
	job := filepath.Dir(plan.Dir)
	if !exists(job) {
		return fmt.Errorf("cgroup: step %q of job %q: %w", a.Step, a.Job, gres.ErrJobNotApplied)
	}
	st := e.jobs[a.Job]
	if st == nil {
		return fmt.Errorf("cgroup: step %q of job %q: the job's cgroup %s was made by an earlier Enforcer, so its allocation is unknown; Apply the job again first: %w", a.Step, a.Job, job, gres.ErrJobNotApplied)
	}
	if out := outside(st.alloc, a); out != "" {
		return fmt.Errorf("%w: step %q of job %q: its %s", gres.ErrInvalidAllocation, a.Step, a.Job, out)
	}
	enabled, err := e.enableControllers(job)
	if err != nil {
		return err
	}
	var prev *gres.Allocation
	if p, ok := st.steps[a.Step]; ok {
		prev = &p
	}
	if err := e.create(plan, prev); err != nil {
		return errors.Join(err, e.disableControllers(job, enabled))
	}
	st.steps[a.Step] = a
	return nil
}

// create makes plan.Dir when absent and writes the plan. On failure it
// removes a directory it made, or writes prev (the allocation applied
// before, nil when unknown) back to an existing one.
func (e *Enforcer) create(plan Plan, prev *gres.Allocation) error {
	created := false
	if err := e.ops.mkdir(plan.Dir); err == nil {
		created = true
	} else if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("cgroup: creating %s: %w", plan.Dir, err)
	}
	err := e.write(plan)
	switch {
	case err == nil:
		return nil
	case created:
		if rerr := e.ops.remove(plan.Dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("cgroup: removing %s after the failure: %w", plan.Dir, rerr))
		}
	case prev != nil:
		old, perr := e.cfg.Plan(*prev)
		if perr == nil {
			perr = e.write(old)
		}
		if perr != nil {
			err = errors.Join(err, fmt.Errorf("cgroup: writing the previous allocation back to %s: %w", plan.Dir, perr))
		}
	default:
		err = fmt.Errorf("%w (%s was made by an earlier Enforcer: its previous limits are unknown and it may be partly updated)", err, plan.Dir)
	}
	return err
}

// write applies a plan's limits and device rules to its directory.
func (e *Enforcer) write(p Plan) error {
	res := &cgroups.Resources{SkipDevices: true}
	if slices.Contains(e.cfg.Controllers, "cpuset") {
		res.CpusetCpus, res.CpusetMems = p.CpusetCpus, p.CpusetMems
	}
	memory := slices.Contains(e.cfg.Controllers, "memory") // memory.max exists only then
	if memory {
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
	if memory {
		// Written here rather than through Resources.MemorySwap, which
		// would silently skip a missing file.
		if err := cgroups.WriteFile(p.Dir, "memory.swap.max", p.MemorySwapMax); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("cgroup: setting memory.swap.max in %s: %w", p.Dir, err)
			}
			if p.MemorySwapMax != "max" {
				return fmt.Errorf("%w: %s/memory.swap.max does not exist: the kernel does not account swap (booted with swapaccount=0 or built without CONFIG_MEMCG_SWAP), so swap cannot be limited to %s bytes; set Config.UnconstrainedSwap to run without a swap limit: %w",
					ErrControllerUnavailable, p.Dir, p.MemorySwapMax, err)
			}
		}
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

// cloneAlloc returns a with its slices copied, for keeping.
func cloneAlloc(a gres.Allocation) gres.Allocation {
	a.Mems = slices.Clone(a.Mems)
	a.Devices = slices.Clone(a.Devices)
	return a
}

// outside describes what of step lies outside job ("CPUs 4-5; devices
// c 195:3 /dev/nvidia3 lie outside the job's allocation (CPUs 0-3;
// devices c 195:2 /dev/nvidia2)"),
// or returns "" when step is inside job. An empty CPU or NUMA set
// inherits its parent's, so a job's empty set contains everything and a
// step's empty set is inside any job.
func outside(job, step gres.Allocation) string {
	var out, in []string
	if !job.CPUs.IsEmpty() {
		var ids []int
		for _, id := range step.CPUs.AppendTo(nil) {
			if !job.CPUs.Has(id) {
				ids = append(ids, id)
			}
		}
		if len(ids) > 0 {
			out = append(out, "CPUs "+gres.FormatIDList(ids))
			in = append(in, "CPUs "+job.CPUs.String())
		}
	}
	if len(job.Mems) > 0 {
		var ids []int
		for _, m := range step.Mems {
			if !slices.Contains(job.Mems, m) {
				ids = append(ids, m)
			}
		}
		if len(ids) > 0 {
			slices.Sort(ids)
			out = append(out, "NUMA nodes "+gres.FormatIDList(slices.Compact(ids)))
			in = append(in, "NUMA nodes "+job.MemsString())
		}
	}
	var devs []string
	for _, f := range gres.SortDeviceFiles(slices.Clone(step.Devices)) {
		if !covered(job.Devices, f) {
			devs = append(devs, f.String())
		}
	}
	if len(devs) > 0 {
		out = append(out, "devices "+strings.Join(devs, ", "))
		have := "none"
		if len(job.Devices) > 0 {
			var names []string
			for _, f := range gres.SortDeviceFiles(slices.Clone(job.Devices)) {
				names = append(names, f.String())
			}
			have = strings.Join(names, ", ")
		}
		in = append(in, "devices "+have)
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprintf("%s lie outside the job's allocation (%s)", strings.Join(out, "; "), strings.Join(in, "; "))
}
