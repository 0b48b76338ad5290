//go:build linux

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/cgroups"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gresdriver"
)

// realEnv, when "require", makes the real-kernel tests fail instead of
// skipping where they cannot run (the VM harness, .ci/cgroup-vm, sets it).
const realEnv = "SLUICE_CGROUP_REAL"

// helperEnv names the helper mode of the test binary (see TestMain).
const helperEnv = "SLUICE_CGROUP_HELPER"

// TestMain runs the test binary as a helper process when helperEnv is
// set: the real-kernel tests start it inside a cgroup (no shell or other
// program is needed, so the tests run in a bare initramfs). Modes:
// "cpus" prints /proc/self/status's Cpus_allowed_list line, "read PATH"
// opens PATH and reads a byte (end of file is fine), "alloc MIB" allocates and touches MIB MiB,
// "wait" reads its standard input to the end.
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		if err := helper(strings.Fields(mode)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helper(args []string) error {
	switch {
	case len(args) == 1 && args[0] == "cpus":
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return err
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Cpus_allowed_list:") {
				fmt.Println(l)
				return nil
			}
		}
		return errors.New("no Cpus_allowed_list in /proc/self/status")
	case len(args) == 2 && args[0] == "read":
		f, err := os.Open(args[1])
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.Read(make([]byte, 1)); err != nil && err != io.EOF {
			return err
		}
		return nil
	case len(args) == 1 && args[0] == "wait":
		_, err := io.Copy(io.Discard, os.Stdin)
		return err
	case len(args) == 2 && args[0] == "alloc":
		mib, err := strconv.Atoi(args[1])
		if err != nil {
			return err
		}
		b := make([]byte, mib<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Printf("allocated %d MiB and survived\n", mib)
		return nil
	}
	return fmt.Errorf("unknown helper mode %q", args)
}

// inCgroup runs the test binary's helper mode inside the cgroup dir,
// started there with CLONE_INTO_CGROUP, and returns its combined output.
func inCgroup(t *testing.T, dir, mode string) (string, error) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// skipReal skips a real-kernel test, or fails it when realEnv requires
// the test to run.
func skipReal(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(realEnv) == "require" {
		t.Fatalf("real cgroup v2 test cannot run (%s=require): %s", realEnv, why)
	}
	t.Skip("real cgroup v2 test skipped: " + why + " (.ci/cgroup-vm runs it in a VM)")
}

// realEnforcer returns an Enforcer on the host's cgroup v2 mount with
// /dev/zero as its one managed device, released at the end of the test,
// with the first CPU and NUMA node of the mount; it skips where there is
// none.
func realEnforcer(t *testing.T, cfg Config) (e *Enforcer, mount string, cpu, mem int) {
	t.Helper()
	mount, why := realMount()
	if mount == "" {
		skipReal(t, why)
	}
	require.False(t, cgroups.TestMode)
	cfg.Root = filepath.Join(mount, fmt.Sprintf("sluice-test-%d-%s", os.Getpid(), t.Name()))
	e, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		jobs, _ := e.Jobs()
		for _, j := range jobs {
			_ = e.Release(context.Background(), j, "")
		}
		_ = os.Remove(cfg.Root)
	})
	return e, mount, firstID(t, mount, "cpuset.cpus.effective"), firstID(t, mount, "cpuset.mems.effective")
}

// realMount returns a cgroup2 mount offering cpuset and memory, or the
// reason there is none.
func realMount() (string, string) {
	if os.Geteuid() != 0 {
		return "", fmt.Sprintf("needs root to create cgroups and attach device programs (euid %d)", os.Geteuid())
	}
	mounts, err := mountinfo.GetMounts(mountinfo.FSTypeFilter("cgroup2"))
	if err != nil {
		return "", fmt.Sprintf("reading /proc/self/mountinfo: %v", err)
	}
	if len(mounts) == 0 {
		return "", "no cgroup2 mount in /proc/self/mountinfo (cgroup v1 host)"
	}
	var why []string
	for _, m := range mounts {
		ctl, err := controllerSet(m.Mountpoint, "cgroup.controllers")
		if err != nil {
			why = append(why, fmt.Sprintf("%s: %v", m.Mountpoint, err))
			continue
		}
		if !ctl["cpuset"] || !ctl["memory"] {
			b, _ := os.ReadFile(filepath.Join(m.Mountpoint, "cgroup.controllers"))
			why = append(why, fmt.Sprintf("%s offers only %q", m.Mountpoint, strings.TrimSpace(string(b))))
			continue
		}
		if unix.Access(m.Mountpoint, unix.W_OK) != nil {
			why = append(why, m.Mountpoint+" is not writable")
			continue
		}
		return m.Mountpoint, ""
	}
	return "", "no writable cgroup2 mount offers cpuset and memory (on a hybrid v1/v2 host they are bound to v1): " + strings.Join(why, "; ")
}

func firstID(t *testing.T, dir, file string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, file))
	require.NoError(t, err)
	c, err := gres.ParseCoreSet(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	ids := c.AppendTo(nil)
	require.NotEmpty(t, ids, "%s/%s is empty", dir, file)
	return ids[0]
}

// TestRealCgroup2 confines a real process: it runs only as root on a
// cgroup2 mount offering cpuset and memory, and skips otherwise.
func TestRealCgroup2(t *testing.T) {
	zero := gres.DeviceFile{Path: "/dev/zero", Kind: gres.CharDevice, Major: 1, Minor: 5}
	e, mount, cpu, mem := realEnforcer(t, Config{ManagedDevices: []gres.DeviceFile{zero}})
	ctx := context.Background()
	cpus, err := gres.CoreSetOf(cpu)
	require.NoError(t, err)
	a := gres.Allocation{Job: "real1", CPUs: cpus, Mems: []int{mem}, MemoryBytes: 64 << 20}
	if err := e.Apply(ctx, a); errors.Is(err, fs.ErrPermission) {
		skipReal(t, fmt.Sprintf("%s not writable: %v", mount, err))
	} else {
		require.NoError(t, err)
	}
	dir, err := e.Path("real1", "")
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprint(cpu), strings.TrimSpace(read(t, dir, "cpuset.cpus.effective")))
	assert.Equal(t, "67108864", strings.TrimSpace(read(t, dir, "memory.max")))
	assert.Equal(t, "0", strings.TrimSpace(read(t, dir, "memory.swap.max")))

	out, err := inCgroup(t, dir, "cpus")
	require.NoError(t, err, out)
	assert.Contains(t, out, fmt.Sprintf("\t%d\n", cpu))
	out, err = inCgroup(t, dir, "read /dev/zero")
	require.Error(t, err, "opening /dev/zero must be denied: %s", out)
	assert.Contains(t, out, "operation not permitted")
	t.Logf("denied as expected: %s", strings.TrimSpace(out))
	out, err = inCgroup(t, dir, "read /dev/null")
	require.NoError(t, err, "/dev/null is not managed: %s", out)

	a.Devices = []gres.DeviceFile{zero} // widen: the program is replaced, not stacked
	require.NoError(t, e.Apply(ctx, a))
	out, err = inCgroup(t, dir, "read /dev/zero")
	require.NoError(t, err, out)

	// A step inside the job, and one outside it.
	require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "real1", Step: "0", CPUs: cpus, MemoryBytes: 32 << 20}))
	step, err := e.Path("real1", "0")
	require.NoError(t, err)
	out, err = inCgroup(t, step, "read /dev/zero")
	require.Error(t, err, "the step was not given /dev/zero: %s", out)
	require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "real1", Step: "0", CPUs: cpus, MemoryBytes: 32 << 20, Devices: a.Devices}))
	out, err = inCgroup(t, step, "read /dev/zero")
	require.NoError(t, err, out)
	assert.Equal(t, "0", strings.TrimSpace(read(t, step, "memory.swap.max")))
	other, err := gres.CoreSetOf(cpu + 1)
	require.NoError(t, err)
	require.ErrorIs(t, e.Apply(ctx, gres.Allocation{Job: "real1", Step: "1", CPUs: other}), gres.ErrInvalidAllocation)
	require.NoError(t, e.Release(ctx, "real1", ""))
	assert.NoDirExists(t, dir)

	gresdriver.TestEnforcer(t, e, gresdriver.EnforcerConfig{
		CPUs: cpus, Mems: []int{mem}, Devices: []gres.DeviceFile{zero},
		Check: func(t *testing.T, a gres.Allocation) {
			d, err := e.Path(a.Job, a.Step)
			require.NoError(t, err)
			assert.Equal(t, a.CPUs.String(), strings.TrimSpace(read(t, d, "cpuset.cpus")))
			assert.Equal(t, fmt.Sprint(a.MemoryBytes), strings.TrimSpace(read(t, d, "memory.max")))
		},
		CheckReleased: func(t *testing.T, job, step string) {
			d, err := e.Path(job, step)
			require.NoError(t, err)
			assert.NoDirExists(t, d)
		},
	})
}

// TestRealJobOverMemoryLimitIsOOMKilled starts a process in a job's
// cgroup that allocates far past memory.max: with no swap allowed beyond
// the limit (the default) the kernel's OOM killer ends it with SIGKILL
// and counts it in the job's memory.events oom_kill.
func TestRealJobOverMemoryLimitIsOOMKilled(t *testing.T) {
	e, _, cpu, mem := realEnforcer(t, Config{})
	cpus, err := gres.CoreSetOf(cpu)
	require.NoError(t, err)
	require.NoError(t, e.Apply(context.Background(), gres.Allocation{Job: "oom", CPUs: cpus, Mems: []int{mem}, MemoryBytes: 48 << 20}))
	dir, err := e.Path("oom", "")
	require.NoError(t, err)
	assert.Equal(t, "0", strings.TrimSpace(read(t, dir, "memory.swap.max")))
	assert.Equal(t, 0, memoryEvent(t, dir, "oom_kill"))

	out, err := inCgroup(t, dir, "alloc 512")
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "a job allocating 512 MiB under a 48 MiB limit must be killed: %s", out)
	ws, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "want SIGKILL, got %v: %s", exit, out)
	assert.NotContains(t, out, "survived")
	assert.GreaterOrEqual(t, memoryEvent(t, dir, "oom_kill"), 1, "memory.events: %s", read(t, dir, "memory.events"))
	t.Logf("OOM-killed as expected (%v); memory.events: %s", exit, strings.Join(strings.Fields(read(t, dir, "memory.events")), " "))

	// Within the limit the same helper lives.
	out, err = inCgroup(t, dir, "alloc 8")
	require.NoError(t, err, out)
	assert.Contains(t, out, "survived")
}

// memoryEvent reads one counter of a cgroup's memory.events.
func memoryEvent(t *testing.T, dir, key string) int {
	t.Helper()
	for _, l := range strings.Split(read(t, dir, "memory.events"), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok && k == key {
			n, err := strconv.Atoi(v)
			require.NoError(t, err, "memory.events %q", l)
			return n
		}
	}
	t.Fatalf("no %s in %s/memory.events", key, dir)
	return 0
}

// TestRealUsage reads a real job's and step's usage after a process in
// the step has allocated memory and used CPU: counters are cumulative
// (they survive the process), a job's include its step's, and
// memory.peak is read where the kernel has it (5.19+) and -1 where it has
// not. PIDs lists a live process of the step in the step and the job.
func TestRealUsage(t *testing.T) {
	e, _, cpu, mem := realEnforcer(t, Config{})
	ctx := context.Background()
	cpus, err := gres.CoreSetOf(cpu)
	require.NoError(t, err)
	require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "use", CPUs: cpus, Mems: []int{mem}, MemoryBytes: 256 << 20}))
	require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "use", Step: "0", CPUs: cpus, Mems: []int{mem}, MemoryBytes: 128 << 20}))
	job, err := e.Path("use", "")
	require.NoError(t, err)
	step, err := e.Path("use", "0")
	require.NoError(t, err)

	before, err := e.Usage(ctx, "use", "")
	require.NoError(t, err)
	out, err := inCgroup(t, step, "alloc 32")
	require.NoError(t, err, out)
	su, err := e.Usage(ctx, "use", "0")
	require.NoError(t, err)
	ju, err := e.Usage(ctx, "use", "")
	require.NoError(t, err)
	t.Logf("usage: job before %+v; step %+v; job after %+v", before, su, ju)

	assert.Positive(t, su.CPUMicros, "the helper used CPU in the step")
	assert.GreaterOrEqual(t, su.UserMicros, int64(0))
	assert.GreaterOrEqual(t, su.SystemMicros, int64(0))
	assert.GreaterOrEqual(t, ju.CPUMicros, su.CPUMicros, "a job's CPU time includes its step's")
	assert.GreaterOrEqual(t, ju.CPUMicros, before.CPUMicros, "cumulative")
	assert.GreaterOrEqual(t, su.MemoryBytes, int64(0), "memory controller enabled: memory.current is read")
	for _, c := range []struct {
		dir  string
		peak int64
	}{{step, su.MemoryPeakBytes}, {job, ju.MemoryPeakBytes}} {
		if _, err := os.Stat(filepath.Join(c.dir, "memory.peak")); err == nil {
			assert.GreaterOrEqual(t, c.peak, int64(32<<20), "%s: the helper touched 32 MiB", c.dir)
		} else {
			assert.Equal(t, int64(-1), c.peak, "%s: no memory.peak (kernel < 5.19)", c.dir)
			t.Logf("%s has no memory.peak (%v): reported as -1", c.dir, err)
		}
	}

	// PIDs lists a live process of the step in the step and in the job.
	exe, err := os.Executable()
	require.NoError(t, err)
	fd, err := unix.Open(step, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"=wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	for _, s := range []string{"0", ""} {
		pids, err := e.PIDs(ctx, "use", s)
		require.NoError(t, err)
		assert.Contains(t, pids, cmd.Process.Pid, "step %q", s)
	}
	require.NoError(t, stdin.Close())
	require.NoError(t, cmd.Wait())
	pids, err := e.PIDs(ctx, "use", "")
	require.NoError(t, err)
	assert.NotContains(t, pids, cmd.Process.Pid, "exited")

	require.NoError(t, e.Release(ctx, "use", "0"))
	_, err = e.Usage(ctx, "use", "0")
	require.ErrorIs(t, err, gres.ErrJobNotApplied)
}
