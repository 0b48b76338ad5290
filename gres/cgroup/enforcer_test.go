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
	"testing"

	"github.com/opencontainers/cgroups"
	devconfig "github.com/opencontainers/cgroups/devices/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gresdriver"
)

// fakeFS is a fake cgroup2 mount in a temporary directory. mkdir seeds
// cgroup.controllers from the parent's cgroup.subtree_control (as the
// kernel shows it); device programs are recorded, not attached.
type fakeFS struct {
	mount string
	mu    sync.Mutex
	progs map[string][]string // dir → rules
	fail  error               // returned by setDevices when set
	// subtreeFail, when set, is returned by writes to that directory's
	// cgroup.subtree_control.
	subtreeFail map[string]error
}

func newFakeFS(t testing.TB, offered, enabled string) *fakeFS {
	t.Helper()
	// Let opencontainers' file helpers write to a plain temporary
	// directory (they insist on cgroupfs otherwise). Tests here are not
	// parallel, so toggling the library's global is safe.
	cgroups.TestMode = true
	t.Cleanup(func() { cgroups.TestMode = false })
	f := &fakeFS{mount: filepath.Join(t.TempDir(), "cgroup"), progs: map[string][]string{}}
	require.NoError(t, os.Mkdir(f.mount, 0o755))
	write(t, f.mount, "cgroup.controllers", offered)
	write(t, f.mount, "cgroup.subtree_control", enabled)
	write(t, f.mount, "cgroup.procs", "1\n")
	return f
}

func write(t testing.TB, dir, file, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644))
}

func read(t testing.TB, dir, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, file))
	require.NoError(t, err, "%s/%s", dir, file)
	return string(b)
}

func (f *fakeFS) ops() fsOps {
	return fsOps{
		mkdir: func(p string) error {
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			sub, err := os.ReadFile(filepath.Join(filepath.Dir(p), "cgroup.subtree_control"))
			if err != nil {
				return err
			}
			var ctl []string
			for _, c := range strings.Fields(string(sub)) {
				ctl = append(ctl, strings.TrimPrefix(c, "+"))
			}
			for name, content := range map[string]string{
				"cgroup.controllers": strings.Join(ctl, " "), "cgroup.subtree_control": "", "cgroup.procs": "",
			} {
				if err := os.WriteFile(filepath.Join(p, name), []byte(content), 0o644); err != nil {
					return err
				}
			}
			return nil
		},
		remove: func(p string) error {
			f.mu.Lock()
			for d := range f.progs {
				if d == p || strings.HasPrefix(d, p+"/") {
					delete(f.progs, d)
				}
			}
			f.mu.Unlock()
			return os.RemoveAll(p)
		},
		subtree: f.subtree,
		setDevices: func(dir string, rules []*devconfig.Rule) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.fail != nil {
				return f.fail
			}
			var out []string
			for _, r := range rules {
				verb := "deny "
				if r.Allow {
					verb = "allow "
				}
				out = append(out, verb+r.CgroupString())
			}
			f.progs[dir] = out
			return nil
		},
	}
}

// subtree applies a cgroup.subtree_control write as the kernel does:
// every "+name" must be offered in the directory's cgroup.controllers
// (ENOENT otherwise, and nothing changes), "-name" disables; the file
// then lists the enabled controllers in cgroup.controllers order, and
// so do the children's cgroup.controllers.
func (f *fakeFS) subtree(dir, change string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.subtreeFail[dir]; err != nil {
		return err
	}
	file := filepath.Join(dir, "cgroup.subtree_control")
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	cur, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	on := map[string]bool{}
	for _, c := range strings.Fields(string(cur)) {
		on[c] = true
	}
	for _, tok := range strings.Fields(change) {
		name := tok[1:]
		switch {
		case tok[0] == '+' && slices.Contains(strings.Fields(string(avail)), name):
			on[name] = true
		case tok[0] == '-':
			delete(on, name)
		default:
			return &fs.PathError{Op: "write", Path: file, Err: unix.ENOENT}
		}
	}
	var out []string
	for _, c := range strings.Fields(string(avail)) {
		if on[c] {
			out = append(out, c)
		}
	}
	enabled := []byte(strings.Join(out, " "))
	if err := os.WriteFile(file, enabled, 0o644); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir) // children offer what dir enables
	if err != nil {
		return err
	}
	for _, ent := range ents {
		if ent.IsDir() {
			if err := os.WriteFile(filepath.Join(dir, ent.Name(), "cgroup.controllers"), enabled, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *fakeFS) prog(dir string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.progs[dir]
}

// gpuFiles returns /dev/nvidia0-7 (char 195:N).
func gpuFiles() []gres.DeviceFile {
	var out []gres.DeviceFile
	for i := range 8 {
		out = append(out, gres.DeviceFile{Path: fmt.Sprintf("/dev/nvidia%d", i), Kind: gres.CharDevice, Major: 195, Minor: int64(i)})
	}
	return out
}

func ctlFile() gres.DeviceFile {
	return gres.DeviceFile{Path: "/dev/nvidiactl", Kind: gres.CharDevice, Major: 195, Minor: 255}
}

const allCtl = "cpuset cpu io memory hugetlb pids rdma misc"

func newFake(t testing.TB, cfg Config) (*Enforcer, *fakeFS) {
	t.Helper()
	f := newFakeFS(t, allCtl, "cpuset cpu io memory pids")
	cfg.Root = filepath.Join(f.mount, "sluice")
	require.NoError(t, cfg.Validate())
	return newEnforcer(cfg, f.ops()), f
}

func mustCores(t testing.TB, s string) gres.CoreSet {
	c, err := gres.ParseCoreSet(s)
	require.NoError(t, err)
	return c
}

func TestApplyWritesFiles(t *testing.T) {
	e, f := newFake(t, Config{ManagedDevices: gpuFiles()})
	ctx := context.Background()
	a := gres.Allocation{Job: "42", CPUs: mustCores(t, "0-3,8-11"), Mems: []int{0}, MemoryBytes: 8 << 30,
		Devices: []gres.DeviceFile{gpuFiles()[2], gpuFiles()[5], ctlFile()}}
	require.NoError(t, e.Apply(ctx, a))

	root := filepath.Join(f.mount, "sluice")
	assert.Equal(t, "cpuset cpu memory pids", read(t, root, "cgroup.subtree_control"))
	job := filepath.Join(root, "job_42")
	assert.Equal(t, "0-3,8-11", read(t, job, "cpuset.cpus"))
	assert.Equal(t, "0", read(t, job, "cpuset.mems"))
	assert.Equal(t, "8589934592", read(t, job, "memory.max"))
	assert.Equal(t, "", read(t, job, "cgroup.subtree_control"), "controllers for steps are enabled with the first step")
	assert.Equal(t, []string{"allow a *:* rwm", "deny c 195:0 rwm", "deny c 195:1 rwm", "deny c 195:3 rwm",
		"deny c 195:4 rwm", "deny c 195:6 rwm", "deny c 195:7 rwm"}, f.prog(job))

	// A step: controllers enabled in the job, the step's own limits.
	s := gres.Allocation{Job: "42", Step: "0", CPUs: mustCores(t, "0-3"), Mems: []int{0}, MemoryBytes: 4 << 30,
		Devices: []gres.DeviceFile{gpuFiles()[2], ctlFile()}}
	require.NoError(t, e.Apply(ctx, s))
	assert.Equal(t, "cpuset cpu memory pids", read(t, job, "cgroup.subtree_control"))
	step := filepath.Join(job, "step_0")
	assert.Equal(t, "0-3", read(t, step, "cpuset.cpus"))
	assert.Equal(t, "4294967296", read(t, step, "memory.max"))
	assert.Contains(t, f.prog(step), "deny c 195:5 rwm")
	require.NoError(t, e.AddProcess("42", "0", 4242))
	assert.Equal(t, "4242", read(t, step, "cgroup.procs"))

	// Update the job: unlimited memory, one GPU fewer (the step keeps
	// its GPU and nvidiactl).
	a.MemoryBytes = 0
	a.Devices = []gres.DeviceFile{gpuFiles()[2], ctlFile()}
	require.NoError(t, e.Apply(ctx, a))
	assert.Equal(t, "max", read(t, job, "memory.max"))
	assert.Contains(t, f.prog(job), "deny c 195:5 rwm")

	jobs, err := e.Jobs()
	require.NoError(t, err)
	assert.Equal(t, []string{"42"}, jobs)
	require.NoError(t, e.Release(ctx, "42", "0"))
	assert.NoDirExists(t, step)
	assert.DirExists(t, job)
	require.NoError(t, e.Release(ctx, "42", ""))
	assert.NoDirExists(t, job)
	jobs, err = e.Jobs()
	require.NoError(t, err)
	assert.Empty(t, jobs)
}

func TestApplyAllowListed(t *testing.T) {
	e, f := newFake(t, Config{Devices: AllowListed, ManagedDevices: gpuFiles()})
	a := gres.Allocation{Job: "7", Devices: []gres.DeviceFile{gpuFiles()[1], ctlFile()}}
	require.NoError(t, e.Apply(context.Background(), a))
	job := filepath.Join(f.mount, "sluice", "job_7")
	assert.Equal(t, []string{"deny a *:* rwm", "allow c 1:3 rwm", "allow c 1:5 rwm", "allow c 1:7 rwm", "allow c 1:8 rwm",
		"allow c 1:9 rwm", "allow c 5:0 rwm", "allow c 5:2 rwm", "allow c 136:* rwm", "allow c 195:1 rwm", "allow c 195:255 rwm"}, f.prog(job))
	assert.NoFileExists(t, filepath.Join(job, "cpuset.cpus"), "no CPUs: nothing written, the parent's apply")
	assert.Equal(t, "max", read(t, job, "memory.max"))
}

func TestApplyErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("StepBeforeJob", func(t *testing.T) {
		e, f := newFake(t, Config{})
		err := e.Apply(ctx, gres.Allocation{Job: "1", Step: "0"})
		require.ErrorIs(t, err, gres.ErrJobNotApplied)
		assert.NoDirExists(t, filepath.Join(f.mount, "sluice", "job_1"))
	})
	t.Run("DeviceProgramFailsOnNewCgroup", func(t *testing.T) {
		e, f := newFake(t, Config{})
		f.fail = errors.New("bpf: operation not permitted")
		err := e.Apply(ctx, gres.Allocation{Job: "2"})
		require.ErrorContains(t, err, "operation not permitted")
		assert.NoDirExists(t, filepath.Join(f.mount, "sluice", "job_2"), "a cgroup Apply created is removed on failure")
		f.fail = nil
		require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "2"}))
		f.fail = errors.New("bpf: boom")
		require.Error(t, e.Apply(ctx, gres.Allocation{Job: "2", MemoryBytes: 1 << 30}))
		assert.DirExists(t, filepath.Join(f.mount, "sluice", "job_2"), "an existing cgroup is kept")
	})
	t.Run("HybridHost", func(t *testing.T) {
		f := newFakeFS(t, "hugetlb", "")
		e := newEnforcer(Config{Root: filepath.Join(f.mount, "sluice")}, f.ops())
		err := e.Apply(ctx, gres.Allocation{Job: "3"})
		require.ErrorIs(t, err, ErrControllerUnavailable)
		require.ErrorContains(t, err, `"cpuset"`)
	})
	t.Run("AddProcess", func(t *testing.T) {
		e, _ := newFake(t, Config{})
		require.ErrorIs(t, e.AddProcess("9", "", 1), gres.ErrJobNotApplied)
		require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "9"}))
		require.ErrorIs(t, e.AddProcess("9", "", 0), gres.ErrInvalidAllocation)
		require.ErrorIs(t, e.AddProcess("../9", "", 5), gres.ErrInvalidAllocation)
	})
}

func TestConformanceFakeFS(t *testing.T) {
	e, f := newFake(t, Config{ManagedDevices: gpuFiles()})
	gresdriver.TestEnforcer(t, e, gresdriver.EnforcerConfig{
		CPUs: mustCores(t, "2-5"), Mems: []int{0, 1}, MemoryBytes: 1 << 30,
		Devices: []gres.DeviceFile{gpuFiles()[3], gpuFiles()[4], ctlFile()},
		Check: func(t *testing.T, a gres.Allocation) {
			dir, err := e.Path(a.Job, a.Step)
			require.NoError(t, err)
			assert.Equal(t, a.CPUs.String(), read(t, dir, "cpuset.cpus"))
			assert.Equal(t, a.MemsString(), read(t, dir, "cpuset.mems"))
			assert.Equal(t, fmt.Sprint(a.MemoryBytes), read(t, dir, "memory.max"))
			plan, err := e.cfg.Plan(a)
			require.NoError(t, err)
			var want []string
			for _, r := range plan.Devices {
				want = append(want, r.String())
			}
			assert.Equal(t, want, f.prog(dir))
		},
		CheckReleased: func(t *testing.T, job, step string) {
			dir, err := e.Path(job, step)
			require.NoError(t, err)
			assert.NoDirExists(t, dir)
			assert.Nil(t, f.prog(dir))
		},
	})
}

func TestNewChecksCgroup2(t *testing.T) {
	_, err := New(Config{Root: filepath.Join(t.TempDir(), "sluice")})
	require.ErrorIs(t, err, ErrNotCgroup2)
	_, err = New(Config{Root: "relative"})
	require.ErrorIs(t, err, ErrInvalidConfig)
	if _, err := os.Stat("/sys/fs/cgroup"); err == nil {
		// On a pure v2 host this succeeds (New writes nothing); on a v1
		// or hybrid host /sys/fs/cgroup is tmpfs and it must fail.
		e, err := New(Config{Root: "/sys/fs/cgroup/sluice-test-never-created"})
		if err != nil {
			require.ErrorIs(t, err, ErrNotCgroup2)
		} else {
			assert.NotNil(t, e)
		}
	}
}

func TestApplyAllowsNoSwapBeyondMemoryLimit(t *testing.T) {
	e, f := newFake(t, Config{})
	ctx := context.Background()
	require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "1", MemoryBytes: 1 << 30}))
	job := filepath.Join(f.mount, "sluice", "job_1")
	assert.Equal(t, "1073741824", read(t, job, "memory.max"))
	assert.Equal(t, "0", read(t, job, "memory.swap.max"), "by default a job may not swap beyond its memory limit")
	require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "1", Step: "0", MemoryBytes: 1 << 29}))
	assert.Equal(t, "0", read(t, filepath.Join(job, "step_0"), "memory.swap.max"))
	require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "2"}))
	assert.Equal(t, "max", read(t, filepath.Join(f.mount, "sluice", "job_2"), "memory.swap.max"), "no memory limit, no swap limit")

	e, f = newFake(t, Config{AllowedSwapPercent: 50})
	require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "3", MemoryBytes: 1 << 30}))
	assert.Equal(t, "536870912", read(t, filepath.Join(f.mount, "sluice", "job_3"), "memory.swap.max"))
	e, f = newFake(t, Config{UnconstrainedSwap: true})
	require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "4", MemoryBytes: 1 << 30}))
	assert.Equal(t, "max", read(t, filepath.Join(f.mount, "sluice", "job_4"), "memory.swap.max"))
}

func TestApplyRejectsStepOutsideJob(t *testing.T) {
	e, f := newFake(t, Config{ManagedDevices: gpuFiles()})
	ctx := context.Background()
	gpu := gpuFiles()
	job := gres.Allocation{Job: "5", CPUs: mustCores(t, "0-3"), Mems: []int{0}, MemoryBytes: 1 << 30,
		Devices: []gres.DeviceFile{gpu[2], ctlFile()}}
	require.NoError(t, e.Apply(ctx, job))
	jobDir := filepath.Join(f.mount, "sluice", "job_5")
	for name, c := range map[string]struct {
		step gres.Allocation
		want string
	}{
		"CPUs":    {gres.Allocation{CPUs: mustCores(t, "2-5")}, "CPUs 4-5 lie outside the job's allocation (CPUs 0-3)"},
		"NUMA":    {gres.Allocation{Mems: []int{0, 1}}, "NUMA nodes 1 lie outside the job's allocation (NUMA nodes 0)"},
		"Devices": {gres.Allocation{Devices: []gres.DeviceFile{gpu[2], gpu[3]}}, "devices c 195:3 /dev/nvidia3 lie outside the job's allocation (devices c 195:2 /dev/nvidia2, c 195:255 /dev/nvidiactl)"},
		"AnyMinor": {gres.Allocation{Devices: []gres.DeviceFile{{Path: "/dev/nvidia", Kind: gres.CharDevice, Major: 195, Minor: gres.AnyMinor}}},
			"devices c 195:* /dev/nvidia lie outside"},
		"Both": {gres.Allocation{CPUs: mustCores(t, "3,7"), Devices: []gres.DeviceFile{gpu[6]}},
			"CPUs 7; devices c 195:6 /dev/nvidia6 lie outside the job's allocation (CPUs 0-3; devices c 195:2 /dev/nvidia2, c 195:255 /dev/nvidiactl)"},
	} {
		s := c.step
		s.Job, s.Step = "5", "bad"
		err := e.Apply(ctx, s)
		require.ErrorIs(t, err, gres.ErrInvalidAllocation, name)
		require.ErrorContains(t, err, c.want, name)
		require.ErrorContains(t, err, `step "bad" of job "5"`, name)
		assert.NoDirExists(t, filepath.Join(jobDir, "step_bad"), name)
		assert.Equal(t, "", read(t, jobDir, "cgroup.subtree_control"), "%s: a rejected step enables nothing", name)
	}

	// Inside: a subset, or empty sets (inherited from the job).
	inside := gres.Allocation{Job: "5", Step: "0", CPUs: mustCores(t, "2-3"), Mems: []int{0}, Devices: []gres.DeviceFile{gpu[2]}}
	require.NoError(t, e.Apply(ctx, inside))
	require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "5", Step: "1"}))

	// A job update may not leave a step outside; a rejected update
	// leaves the job as it was.
	narrower := job
	narrower.CPUs = mustCores(t, "0-1")
	err := e.Apply(ctx, narrower)
	require.ErrorIs(t, err, gres.ErrInvalidAllocation)
	require.ErrorContains(t, err, `step "0" outside the job: its CPUs 2-3 lie outside the job's allocation (CPUs 0-1)`)
	assert.Equal(t, "0-3", read(t, jobDir, "cpuset.cpus"))
	require.NoError(t, e.Release(ctx, "5", "0"))
	require.NoError(t, e.Apply(ctx, narrower), "the step that held CPUs 2-3 is gone")
	assert.Equal(t, "0-1", read(t, jobDir, "cpuset.cpus"))

	// A restarted Enforcer does not know the job's allocation: it asks
	// for the job again before a step.
	e2 := newEnforcer(e.Config(), f.ops())
	err = e2.Apply(ctx, gres.Allocation{Job: "5", Step: "2"})
	require.ErrorIs(t, err, gres.ErrJobNotApplied)
	require.ErrorContains(t, err, "Apply the job again first")
	require.NoError(t, e2.Apply(ctx, narrower))
	require.NoError(t, e2.Apply(ctx, gres.Allocation{Job: "5", Step: "2", CPUs: mustCores(t, "1")}))
}

func TestFailedApplyChangesNothing(t *testing.T) {
	ctx := context.Background()
	t.Run("ControllersNotOffered", func(t *testing.T) {
		// A hybrid v1/v2 host: the parent offers no cpuset or memory.
		f := newFakeFS(t, "hugetlb", "")
		e := newEnforcer(Config{Root: filepath.Join(f.mount, "sluice")}, f.ops())
		err := e.Apply(ctx, gres.Allocation{Job: "1"})
		require.ErrorIs(t, err, ErrControllerUnavailable)
		require.ErrorContains(t, err, `"cpuset" not in `+f.mount+"/cgroup.controllers")
		assert.NoDirExists(t, filepath.Join(f.mount, "sluice"), "Root is not left behind")
		assert.Equal(t, "", read(t, f.mount, "cgroup.subtree_control"))
	})
	t.Run("EnablingInRootFails", func(t *testing.T) {
		f := newFakeFS(t, allCtl, "")
		root := filepath.Join(f.mount, "sluice")
		f.subtreeFail = map[string]error{root: &fs.PathError{Op: "write", Path: root, Err: unix.EBUSY}}
		e := newEnforcer(Config{Root: root}, f.ops())
		err := e.Apply(ctx, gres.Allocation{Job: "1"})
		require.ErrorIs(t, err, unix.EBUSY)
		assert.NoDirExists(t, root, "Root is not left behind")
		assert.Equal(t, "", read(t, f.mount, "cgroup.subtree_control"), "the controllers enabled in Root's parent are disabled again")
		f.subtreeFail = nil
		require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "1"}), "a later Apply prepares Root afresh")
		assert.Equal(t, "cpuset cpu memory pids", read(t, f.mount, "cgroup.subtree_control"))
	})
	t.Run("ExistingRootKept", func(t *testing.T) {
		f := newFakeFS(t, allCtl, "cpuset cpu memory pids")
		root := filepath.Join(f.mount, "sluice")
		require.NoError(t, f.ops().mkdir(root))
		f.fail = errors.New("bpf: operation not permitted")
		e := newEnforcer(Config{Root: root}, f.ops())
		require.ErrorContains(t, e.Apply(ctx, gres.Allocation{Job: "1"}), "operation not permitted")
		assert.DirExists(t, root, "a Root that existed before stays")
		assert.Equal(t, "", read(t, root, "cgroup.subtree_control"), "the controllers the failed Apply enabled in Root are disabled again")
		assert.NoDirExists(t, filepath.Join(root, "job_1"))
	})
	t.Run("FirstApplyFailsLate", func(t *testing.T) {
		e, f := newFake(t, Config{})
		f.fail = errors.New("bpf: operation not permitted")
		require.Error(t, e.Apply(ctx, gres.Allocation{Job: "1"}))
		assert.NoDirExists(t, filepath.Join(f.mount, "sluice"), "Root made by the failed first Apply is removed")
	})
	t.Run("StepFails", func(t *testing.T) {
		e, f := newFake(t, Config{})
		require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "1"}))
		job := filepath.Join(f.mount, "sluice", "job_1")
		f.fail = errors.New("bpf: boom")
		require.Error(t, e.Apply(ctx, gres.Allocation{Job: "1", Step: "0"}))
		assert.NoDirExists(t, filepath.Join(job, "step_0"))
		assert.Equal(t, "", read(t, job, "cgroup.subtree_control"), "the controllers the failed step enabled in its job are disabled again")
	})
	t.Run("UpdateFails", func(t *testing.T) {
		e, f := newFake(t, Config{})
		a := gres.Allocation{Job: "1", CPUs: mustCores(t, "0-1"), MemoryBytes: 1 << 30}
		require.NoError(t, e.Apply(ctx, a))
		job := filepath.Join(f.mount, "sluice", "job_1")
		f.fail = errors.New("bpf: boom")
		b := a
		b.CPUs, b.MemoryBytes = mustCores(t, "0-3"), 2<<30
		require.ErrorContains(t, e.Apply(ctx, b), "boom")
		assert.Equal(t, "0-1", read(t, job, "cpuset.cpus"), "the previous allocation is written back")
		assert.Equal(t, "1073741824", read(t, job, "memory.max"))
		assert.Equal(t, "0", read(t, job, "memory.swap.max"))
	})
}
