//go:build linux

package cgroup

import (
	"context"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
)

// cpuStat is a cpu.stat as Linux 6.x writes it with the cpu controller
// enabled.
const cpuStat = `usage_usec 7250031
user_usec 6100020
system_usec 1150011
core_sched.force_idle_usec 0
nr_periods 120
nr_throttled 3
throttled_usec 45000
nr_bursts 0
burst_usec 0
`

func appliedJob(t testing.TB) (*Enforcer, string) {
	t.Helper()
	e, _ := newFake(t, Config{})
	require.NoError(t, e.Apply(context.Background(), gres.Allocation{Job: "42", CPUs: mustCores(t, "0-3"), MemoryBytes: 1 << 30}))
	dir, err := e.Path("42", "")
	require.NoError(t, err)
	return e, dir
}

func TestUsage(t *testing.T) {
	e, dir := appliedJob(t)
	write(t, dir, "cpu.stat", cpuStat)
	write(t, dir, "memory.current", "123456789\n")
	write(t, dir, "memory.peak", "987654321\n")
	u, err := e.Usage(context.Background(), "42", "")
	require.NoError(t, err)
	assert.Equal(t, Usage{CPUMicros: 7250031, UserMicros: 6100020, SystemMicros: 1150011, MemoryBytes: 123456789, MemoryPeakBytes: 987654321}, u)

	// A step has its own counters.
	require.NoError(t, e.Apply(context.Background(), gres.Allocation{Job: "42", Step: "batch", CPUs: mustCores(t, "0-1")}))
	step, err := e.Path("42", "batch")
	require.NoError(t, err)
	write(t, step, "cpu.stat", "usage_usec 10\nuser_usec 7\nsystem_usec 3\n")
	write(t, step, "memory.current", "4096\n")
	write(t, step, "memory.peak", "8192\n")
	u, err = e.Usage(context.Background(), "42", "batch")
	require.NoError(t, err)
	assert.Equal(t, Usage{CPUMicros: 10, UserMicros: 7, SystemMicros: 3, MemoryBytes: 4096, MemoryPeakBytes: 8192}, u)
}

// TestUsageUnknowns: files a kernel does not provide read as -1, not as
// errors: memory.peak before Linux 5.19, the memory files without the
// memory controller, a cpu.stat counter a kernel does not list.
func TestUsageUnknowns(t *testing.T) {
	e, dir := appliedJob(t)
	write(t, dir, "cpu.stat", "usage_usec 5\nuser_usec 5\n")
	write(t, dir, "memory.current", "0\n")
	u, err := e.Usage(context.Background(), "42", "")
	require.NoError(t, err)
	assert.Equal(t, Usage{CPUMicros: 5, UserMicros: 5, SystemMicros: -1, MemoryBytes: 0, MemoryPeakBytes: -1}, u)

	require.NoError(t, os.Remove(filepath.Join(dir, "memory.current")))
	require.NoError(t, os.Remove(filepath.Join(dir, "cpu.stat")))
	u, err = e.Usage(context.Background(), "42", "")
	require.NoError(t, err)
	assert.Equal(t, unknownUsage, u)
}

func TestUsageErrors(t *testing.T) {
	e, _ := appliedJob(t)
	ctx := context.Background()
	_, err := e.Usage(ctx, "7", "")
	require.ErrorIs(t, err, gres.ErrJobNotApplied)
	assert.ErrorContains(t, err, `job "7"`)
	_, err = e.Usage(ctx, "42", "nostep")
	require.ErrorIs(t, err, gres.ErrJobNotApplied)
	assert.ErrorContains(t, err, `job "42" step "nostep"`)
	_, err = e.Usage(ctx, "../x", "")
	require.ErrorIs(t, err, gres.ErrInvalidAllocation)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = e.Usage(cctx, "42", "")
	require.ErrorIs(t, err, context.Canceled)
}

// TestUsageMalformed: a garbled or hostile file fails the reading with
// an error naming the job, the file and the line.
func TestUsageMalformed(t *testing.T) {
	for name, tc := range map[string]struct {
		file, content, want string
	}{
		"not a number":    {"cpu.stat", "usage_usec 12x\n", `cpu.stat line 1: usage_usec: "12x" is not a counter`},
		"negative":        {"cpu.stat", "user_usec 1\nusage_usec -5\n", `cpu.stat line 2: usage_usec: "-5" is not a counter`},
		"no value":        {"cpu.stat", "usage_usec\n", `cpu.stat line 1: "usage_usec": want "key value"`},
		"two values":      {"cpu.stat", "usage_usec 1 2\n", `cpu.stat line 1: usage_usec: "1 2" is not a counter`},
		"blank line":      {"cpu.stat", "usage_usec 1\n\nuser_usec 1\n", `cpu.stat line 2: "": want "key value"`},
		"bad key":         {"cpu.stat", "Usage_usec 1\n", `cpu.stat line 1: "Usage_usec 1"`},
		"nul":             {"cpu.stat", "usage_usec 1\x00\n", `cpu.stat line 1: usage_usec: "1\x00" is not a counter`},
		"twice":           {"cpu.stat", "usage_usec 1\nusage_usec 2\n", "cpu.stat line 2: usage_usec given twice"},
		"overflow":        {"cpu.stat", "usage_usec 9223372036854775808\n", "cpu.stat line 1: usage_usec: 9223372036854775808 overflows"},
		"overflow uint64": {"cpu.stat", "usage_usec 99999999999999999999\n", "cpu.stat line 1: usage_usec: 99999999999999999999 overflows"},
		"crlf":            {"cpu.stat", "usage_usec 1\r\n", `cpu.stat line 1: usage_usec: "1\r" is not a counter`},
		"huge":            {"cpu.stat", strings.Repeat("nr_periods 1\n", 6000), "cpu.stat: larger than 65536 bytes"},
		"empty current":   {"memory.current", "", "memory.current: 0 lines, want one number"},
		"max peak":        {"memory.peak", "max\n", `memory.peak line 1: "max" is not a counter`},
		"two lines":       {"memory.current", "1\n2\n", "memory.current: 2 lines, want one number"},
		"spaces":          {"memory.peak", " 5\n", `memory.peak line 1: " 5" is not a counter`},
	} {
		t.Run(name, func(t *testing.T) {
			e, dir := appliedJob(t)
			write(t, dir, "cpu.stat", cpuStat)
			write(t, dir, "memory.current", "1\n")
			write(t, dir, tc.file, tc.content)
			u, err := e.Usage(context.Background(), "42", "")
			require.ErrorIs(t, err, ErrMalformedFile)
			assert.ErrorContains(t, err, tc.want)
			assert.ErrorContains(t, err, `usage of job "42"`)
			assert.Equal(t, unknownUsage, u, "a failed reading reports nothing")
		})
	}
}

// FuzzParseCPUStat: no input panics; a parsed cpu.stat gives counters
// that are -1 or non-negative, and one that parses still parses with
// unknown lines added.
func FuzzParseCPUStat(f *testing.F) {
	f.Add([]byte(cpuStat))
	f.Add([]byte("usage_usec 1\n"))
	f.Add([]byte("usage_usec 18446744073709551615\n"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		u := unknownUsage
		if err := parseCPUStat(b, &u); err != nil {
			require.ErrorIs(t, err, ErrMalformedFile)
			return
		}
		for _, v := range []int64{u.CPUMicros, u.UserMicros, u.SystemMicros} {
			require.GreaterOrEqual(t, v, int64(-1))
		}
		v := unknownUsage
		more := append([]byte(strings.TrimSuffix(string(b), "\n")+"\n"), "zz_future_key 1\n"...)
		if strings.TrimSuffix(string(b), "\n") == "" || strings.Contains(string(b), "zz_future_key ") {
			return
		}
		require.NoError(t, parseCPUStat(more, &v))
		require.Equal(t, u, v)
	})
}

// FuzzParseSingle: no input panics; a parsed value is non-negative.
func FuzzParseSingle(f *testing.F) {
	f.Add([]byte("123\n"))
	f.Add([]byte("max\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseSingle("memory.peak", b)
		if err != nil {
			require.ErrorIs(t, err, ErrMalformedFile)
			return
		}
		require.GreaterOrEqual(t, v, int64(0))
	})
}

// FuzzParsePIDs: no input panics; every PID parsed is positive and fits
// a pid_t, and an error wraps ErrMalformedFile.
func FuzzParsePIDs(f *testing.F) {
	f.Add([]byte("12\n7\n"))
	f.Add([]byte("0\n0\n44\n"))
	f.Add([]byte("2147483648\n"))
	f.Add([]byte("1\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pids, err := parsePIDs(nil, b)
		if err != nil {
			require.ErrorIs(t, err, ErrMalformedFile)
			return
		}
		for _, p := range pids {
			require.Greater(t, p, 0)
			require.LessOrEqual(t, p, math.MaxInt32)
		}
	})
}

// BenchmarkUsage is one Usage of a job on the fake filesystem (three
// files opened, read and parsed; on a real cgroupfs the kernel formats
// each file on read, so the cost differs).
func BenchmarkUsage(b *testing.B) {
	e, dir := appliedJob(b)
	for name, content := range map[string]string{"cpu.stat": cpuStat, "memory.current": "123456789\n", "memory.peak": "987654321\n"} {
		require.NoError(b, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Usage(ctx, "42", ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseCPUStat is the parsing alone of a nine-counter cpu.stat.
func BenchmarkParseCPUStat(b *testing.B) {
	in := []byte(cpuStat)
	b.ReportAllocs()
	for b.Loop() {
		u := unknownUsage
		if err := parseCPUStat(in, &u); err != nil {
			b.Fatal(err)
		}
	}
}

func TestPIDs(t *testing.T) {
	e, dir := appliedJob(t)
	ctx := context.Background()
	require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "42", Step: "0", CPUs: mustCores(t, "0-1")}))
	require.NoError(t, e.Apply(ctx, gres.Allocation{Job: "42", Step: "1", CPUs: mustCores(t, "2")}))
	write(t, dir, "cgroup.procs", "12\n7\n")
	write(t, filepath.Join(dir, "step_0"), "cgroup.procs", "30\n7\n")
	write(t, filepath.Join(dir, "step_1"), "cgroup.procs", "")
	pids, err := e.PIDs(ctx, "42", "")
	require.NoError(t, err)
	assert.Equal(t, []int{7, 12, 30}, pids, "the job's and its steps', sorted, once each")
	pids, err = e.PIDs(ctx, "42", "0")
	require.NoError(t, err)
	assert.Equal(t, []int{7, 30}, pids)
	pids, err = e.PIDs(ctx, "42", "1")
	require.NoError(t, err)
	assert.Empty(t, pids)
	write(t, filepath.Join(dir, "step_1"), "cgroup.procs", "0\n0\n44\n")
	pids, err = e.PIDs(ctx, "42", "1")
	require.NoError(t, err)
	assert.Equal(t, []int{44}, pids, "0: a process outside the reader's PID namespace, skipped")
	write(t, filepath.Join(dir, "step_1"), "cgroup.procs", "")

	_, err = e.PIDs(ctx, "43", "")
	require.ErrorIs(t, err, gres.ErrJobNotApplied)
	_, err = e.PIDs(ctx, "4/2", "")
	require.ErrorIs(t, err, gres.ErrInvalidAllocation)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = e.PIDs(cctx, "42", "")
	require.ErrorIs(t, err, context.Canceled)

	for content, want := range map[string]string{
		"7\nabc\n":     `cgroup.procs line 2: "abc" is not a process id`,
		"-3\n":         `cgroup.procs line 1: "-3" is not a process id`,
		"1\n\n2\n":     `cgroup.procs line 2: "" is not a process id`,
		"4294967296\n": `cgroup.procs line 1: "4294967296" is not a process id`,
	} {
		write(t, filepath.Join(dir, "step_1"), "cgroup.procs", content)
		_, err = e.PIDs(ctx, "42", "")
		require.ErrorIs(t, err, ErrMalformedFile, "%q", content)
		assert.ErrorContains(t, err, want)
		assert.ErrorContains(t, err, `processes of job "42"`)
		assert.ErrorContains(t, err, "step_1")
	}
}

// TestReadUsage reads a cgroup directory the Enforcer did not create.
func TestReadUsage(t *testing.T) {
	dir := newFakeFS(t, allCtl, "").mount // a plain directory the file helpers accept
	write(t, dir, "cpu.stat", cpuStat)
	write(t, dir, "memory.peak", "2048\n")
	u, err := ReadUsage(dir)
	require.NoError(t, err)
	assert.Equal(t, Usage{CPUMicros: 7250031, UserMicros: 6100020, SystemMicros: 1150011, MemoryBytes: -1, MemoryPeakBytes: 2048}, u)
	write(t, dir, "memory.peak", "lots\n")
	_, err = ReadUsage(dir)
	require.ErrorIs(t, err, ErrMalformedFile)
	assert.ErrorContains(t, err, "memory.peak")

	u, err = ReadUsage(filepath.Join(dir, "gone")) // a typo'd or removed cgroup
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.Equal(t, unknownUsage, u)
	_, err = ReadUsage(filepath.Join(dir, "cpu.stat"))
	assert.ErrorContains(t, err, "not a directory")
}
