//go:build linux

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/opencontainers/cgroups"
	devconfig "github.com/opencontainers/cgroups/devices/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
}

func newFakeFS(t *testing.T, offered, enabled string) *fakeFS {
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

func write(t *testing.T, dir, file, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644))
}

func read(t *testing.T, dir, file string) string {
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

func newFake(t *testing.T, cfg Config) (*Enforcer, *fakeFS) {
	t.Helper()
	f := newFakeFS(t, allCtl, "cpuset cpu io memory pids")
	cfg.Root = filepath.Join(f.mount, "sluice")
	require.NoError(t, cfg.Validate())
	return newEnforcer(cfg, f.ops()), f
}

func mustCores(t *testing.T, s string) gres.CoreSet {
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
	assert.Equal(t, "+cpuset +cpu +memory +pids", read(t, root, "cgroup.subtree_control"))
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
	assert.Equal(t, "+cpuset +cpu +memory +pids", read(t, job, "cgroup.subtree_control"))
	step := filepath.Join(job, "step_0")
	assert.Equal(t, "0-3", read(t, step, "cpuset.cpus"))
	assert.Equal(t, "4294967296", read(t, step, "memory.max"))
	assert.Contains(t, f.prog(step), "deny c 195:5 rwm")
	require.NoError(t, e.AddProcess("42", "0", 4242))
	assert.Equal(t, "4242", read(t, step, "cgroup.procs"))

	// Update the job: unlimited memory, one GPU fewer.
	a.MemoryBytes = 0
	a.Devices = a.Devices[:1]
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
