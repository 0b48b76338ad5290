//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/scheduler"
)

// testAgent returns a LocalAgent whose shim is this test binary.
func testAgent(t *testing.T, cgroupRoot string) *LocalAgent {
	t.Helper()
	t.Setenv(mainEnv, "1") // the shims run the orchestrator's main
	a, err := NewLocalAgent(t.TempDir(), LocalOptions{Shim: []string{os.Args[0], "shim"}, CgroupRoot: cgroupRoot})
	require.NoError(t, err)
	return a
}

// waitState polls run k until it is no longer in state from.
func waitState(t *testing.T, a *LocalAgent, k RunKey, from RunState) RunStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := a.Check(k)
		require.NoError(t, err)
		if st.State != from {
			return st
		}
		require.True(t, time.Now().Before(deadline), "run %s still %s", k, from)
		time.Sleep(10 * time.Millisecond)
	}
}

// needShell skips a test whose jobs are shell scripts where there is no
// sh (the cgroup VM's initramfs).
func needShell(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skipf("no shell: %v", err)
	}
}

// readInt reads the number file path holds.
func readInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return n
}

// TestLocalAgentReportsExitCodeAndLaunchesOnce: a run's exit code comes
// back through Check, and launching the same key again (as a restarted
// control loop might) starts nothing.
func TestLocalAgentReportsExitCodeAndLaunchesOnce(t *testing.T) {
	needShell(t)
	a := testAgent(t, "")
	marks := filepath.Join(t.TempDir(), "runs")
	k := RunKey("7.0")
	st, err := a.Check(k)
	require.NoError(t, err)
	assert.Equal(t, RunNotLaunched, st.State)
	r := Run{Key: k, Job: 7, Name: "seven", Command: []string{"sh", "-c", "echo $SLUICE_JOB_NAME >> " + marks + "; sleep 0.2; exit 3"}}
	require.NoError(t, a.Launch(r))
	require.NoError(t, a.Launch(r))
	st = waitState(t, a, k, RunRunning)
	assert.Equal(t, RunStatus{State: RunExited, ExitCode: 3}, st)
	require.NoError(t, a.Launch(r))
	b, err := os.ReadFile(marks)
	require.NoError(t, err)
	assert.Equal(t, "seven\n", string(b), "one run")

	require.NoError(t, a.Forget(k))
	keys, err := a.Runs()
	require.NoError(t, err)
	assert.Empty(t, keys)
	out, err := os.ReadFile(filepath.Join(filepath.Dir(a.dir), "output", "7.0.out"))
	require.NoError(t, err, "the output is kept")
	assert.Empty(t, out)
}

// TestLocalAgentRelaunchesRunWhoseLaunchDied: a run directory left by a
// launch that died before its shim started (no pid file, lock free) is
// RunNotLaunched, and Launch starts the run then.
func TestLocalAgentRelaunchesRunWhoseLaunchDied(t *testing.T) {
	a := testAgent(t, "")
	k := RunKey("5.0")
	require.NoError(t, os.Mkdir(a.runDir(k), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(a.runDir(k), "lock"), nil, 0o644))
	st, err := a.Check(k)
	require.NoError(t, err)
	assert.Equal(t, RunNotLaunched, st.State)
	require.NoError(t, a.Launch(Run{Key: k, Job: 5, Command: []string{"/nonexistent/command"}}))
	assert.Equal(t, RunStatus{State: RunExited, ExitCode: 127}, waitState(t, a, k, RunRunning))
}

// TestLocalAgentCommandNotFoundExits127: a command that cannot be
// started ends the run with 127, as a shell reports it.
func TestLocalAgentCommandNotFoundExits127(t *testing.T) {
	a := testAgent(t, "")
	k := RunKey("1.0")
	require.NoError(t, a.Launch(Run{Key: k, Job: 1, Command: []string{"/nonexistent/command"}}))
	assert.Equal(t, RunStatus{State: RunExited, ExitCode: 127}, waitState(t, a, k, RunRunning))
}

// TestLocalAgentKillEndsRunBySignal: Kill makes the shim SIGKILL the
// command's process group, children included.
func TestLocalAgentKillEndsRunBySignal(t *testing.T) {
	needShell(t)
	a := testAgent(t, "")
	k := RunKey("2.1")
	require.NoError(t, a.Launch(Run{Key: k, Job: 2, Command: []string{"sh", "-c", "sleep 30 & echo $! > child; wait"}}))
	child := filepath.Join(a.runDir(k), "child")
	require.Eventually(t, func() bool { b, _ := os.ReadFile(child); return len(b) > 0 }, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, a.Kill(k))
	assert.Equal(t, RunStatus{State: RunExited, ExitCode: 128 + 9}, waitState(t, a, k, RunRunning))
	pid := readInt(t, child)
	require.Eventually(t, func() bool { return unix.Kill(pid, 0) == unix.ESRCH }, 20*time.Second, 10*time.Millisecond,
		"the command's child is killed with its group")
}

// TestLocalAgentRunLostWhenShimDies: a run whose shim died without
// writing an exit status is reported lost, not running and not exited.
func TestLocalAgentRunLostWhenShimDies(t *testing.T) {
	needShell(t)
	a := testAgent(t, "")
	k := RunKey("3.0")
	require.NoError(t, a.Launch(Run{Key: k, Job: 3, Command: []string{"sh", "-c", "echo $$ > group; exec sleep 30"}}))
	group := filepath.Join(a.runDir(k), "group")
	require.Eventually(t, func() bool { b, _ := os.ReadFile(group); return len(b) > 0 }, 20*time.Second, 10*time.Millisecond)
	pgid := readInt(t, group)
	t.Cleanup(func() { _ = unix.Kill(-pgid, unix.SIGKILL) })
	require.NoError(t, unix.Kill(readInt(t, filepath.Join(a.runDir(k), "pid")), unix.SIGKILL))
	assert.Equal(t, RunStatus{State: RunLost}, waitState(t, a, k, RunRunning))
}

// TestLocalAgentConfinesRunInCgroup runs a job in a cgroup of its own
// with its allocation's CPUs, where the host allows it (root on a cgroup
// v2 hierarchy with cpuset and memory); elsewhere it skips, saying why.
// SLUICE_ORCHESTRATOR_CGROUP names the cgroup root to use (default
// /sys/fs/cgroup/sluice-orchestrator-test).
func TestLocalAgentConfinesRunInCgroup(t *testing.T) {
	root := os.Getenv("SLUICE_ORCHESTRATOR_CGROUP")
	if root == "" {
		root = "/sys/fs/cgroup/sluice-orchestrator-test"
	}
	if _, err := probeCgroup(root); err != nil {
		t.Skipf("no cgroup confinement on this host: %v", err)
	}
	a := testAgent(t, root)
	require.True(t, a.Confined())
	k := RunKey("4.0")
	r := Run{Key: k, Job: 4, Command: []string{os.Args[0], "cgroup-self", "cgroup"},
		Alloc: scheduler.Allocation{Nodes: []scheduler.NodeAlloc{{Name: "local", CPUs: []int{0}, MemoryMiB: 64}}}}
	require.NoError(t, a.Launch(r))
	assert.Equal(t, RunStatus{State: RunExited}, waitState(t, a, k, RunRunning))
	b, err := os.ReadFile(filepath.Join(a.runDir(k), "cgroup"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "/job_4.0", "the command runs in its run's cgroup")
	p, err := a.cg.Path(string(k), "")
	require.NoError(t, err)
	cpus, err := os.ReadFile(filepath.Join(p, "cpuset.cpus"))
	require.NoError(t, err)
	assert.Equal(t, "0", strings.TrimSpace(string(cpus)))
	mem, err := os.ReadFile(filepath.Join(p, "memory.max"))
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(64<<20), strings.TrimSpace(string(mem)))
	require.NoError(t, a.Forget(k))
	_, err = os.Stat(p)
	assert.True(t, os.IsNotExist(err), "Forget removes the cgroup")
}

// TestParseRunKeyRoundTrips checks run keys: what runKey writes parses
// back, and malformed keys are refused.
func TestParseRunKeyRoundTrips(t *testing.T) {
	id, n, err := parseRunKey(runKey(scheduler.Job{ID: 42, Restarts: 3}))
	require.NoError(t, err)
	assert.Equal(t, scheduler.JobID(42), id)
	assert.Equal(t, 3, n)
	for _, bad := range []string{"", "42", "0.1", "x.1", "1.-1", "1.01", "1.2.3", "../1.0"} {
		_, _, err := parseRunKey(RunKey(bad))
		assert.Error(t, err, "%q", bad)
	}
}
