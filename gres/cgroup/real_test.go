//go:build linux

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
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
	mount, why := realMount()
	if mount == "" {
		t.Skip("real cgroup v2 test skipped: " + why)
	}
	require.False(t, cgroups.TestMode)
	root := filepath.Join(mount, fmt.Sprintf("sluice-test-%d", os.Getpid()))
	zero := gres.DeviceFile{Path: "/dev/zero", Kind: gres.CharDevice, Major: 1, Minor: 5}
	e, err := New(Config{Root: root, ManagedDevices: []gres.DeviceFile{zero}})
	require.NoError(t, err)
	ctx := context.Background()
	t.Cleanup(func() {
		jobs, _ := e.Jobs()
		for _, j := range jobs {
			_ = e.Release(ctx, j, "")
		}
		_ = os.Remove(root)
	})
	cpu := firstID(t, mount, "cpuset.cpus.effective")
	mem := firstID(t, mount, "cpuset.mems.effective")
	cpus, err := gres.CoreSetOf(cpu)
	require.NoError(t, err)
	a := gres.Allocation{Job: "real1", CPUs: cpus, Mems: []int{mem}, MemoryBytes: 64 << 20}
	if err := e.Apply(ctx, a); errors.Is(err, fs.ErrPermission) {
		t.Skipf("real cgroup v2 test skipped: %s not writable: %v", mount, err)
	} else {
		require.NoError(t, err)
	}
	dir, err := e.Path("real1", "")
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprint(cpu), strings.TrimSpace(read(t, dir, "cpuset.cpus.effective")))
	assert.Equal(t, "67108864", strings.TrimSpace(read(t, dir, "memory.max")))

	run := func(script string) (string, error) {
		fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(fd)
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("grep Cpus_allowed_list /proc/self/status")
	require.NoError(t, err, out)
	assert.Contains(t, out, fmt.Sprintf("\t%d\n", cpu))
	out, err = run("cat /dev/null && head -c1 /dev/zero >/dev/null")
	require.Error(t, err, "opening /dev/zero must be denied: %s", out)
	assert.Contains(t, out, "not permitted")
	t.Logf("denied as expected: %s", strings.TrimSpace(out))

	a.Devices = []gres.DeviceFile{zero} // widen: the program is replaced, not stacked
	require.NoError(t, e.Apply(ctx, a))
	out, err = run("head -c1 /dev/zero | od -An -tx1")
	require.NoError(t, err, out)
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
