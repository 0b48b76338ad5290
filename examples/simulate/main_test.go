package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim/swf"
)

// The hand-checked trace of the swf package's FCFS test: waits 0, 90, 80,
// 10 and 25 s.
const tiny = `; Computer: test
; MaxProcs: 4
1   0 -1 100 4 -1 -1  4 200 -1 1 1 1 -1 -1 -1 -1 -1
2  10 -1  50 2 -1 -1  2  60 -1 1 2 1 -1 -1 -1 -1 -1
3  20 -1  30 1 -1 -1  1  40 -1 0 3 1 -1 -1 -1 -1 -1
4  30 -1   0 1 -1 -1  1  40 -1 5 3 1 -1 -1 -1 -1 -1
5 120 -1  80 2 -1 -1  2  50 -1 1 4 2 -1 -1 -1 -1 -1
6 125 -1  10 1 -1 -1 -1  -1 -1 1 4 2 -1 -1 -1 -1 -1
`

func defaults() config {
	return config{policy: "fcfs", estimates: "user", procsPerNode: 1, oversize: "clip", nodes: 1000, seed: 1, estimateEvery: -1,
		gpuIdleWatts: 70, gpuMaxWatts: 700}
}

// TestRunEstimateEvery checks -estimate-every: refreshing every waiting
// job's expected start in every cycle reports exactly what EASY's
// once-per-job estimates do.
func TestRunEstimateEvery(t *testing.T) {
	out := func(every time.Duration) map[string]any {
		c := defaults()
		c.policy, c.nodes, c.jobs, c.json, c.estimateEvery = "easy", 64, 1500, true, every
		var stdout, stderr bytes.Buffer
		require.NoError(t, run(c, &stdout, &stderr))
		var got map[string]any
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), stdout.String())
		delete(got, "sim_seconds")
		return got
	}
	once := out(-1)
	assert.Equal(t, out(0), once)
	assert.Positive(t, once["eta_jobs"], "the replay has estimates")
}

func writeTrace(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.swf")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

func TestRunTraceJSON(t *testing.T) {
	c := defaults()
	c.trace = writeTrace(t, tiny)
	c.json = true
	c.out = filepath.Join(t.TempDir(), "out.swf")
	c.plot = filepath.Join(t.TempDir(), "out.png")
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(c, &stdout, &stderr))

	var got map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), stdout.String())
	for _, k := range []string{"jobs", "mean_wait_s", "mean_bsld", "mean_response_s", "utilization", "makespan_s", "sim_seconds"} {
		assert.Contains(t, got, k)
	}
	assert.Equal(t, 5.0, got["jobs"])
	assert.InDelta(t, 41.0, got["mean_wait_s"], 1e-9)
	assert.InDelta(t, 180.0, got["makespan_s"], 1e-9)
	assert.InDelta(t, 640.0/720, got["utilization"], 1e-9)
	// the fifth job needed 80 s on 2 processors, its limit ended it at 50 s
	assert.InDelta(t, 2*30.0/3600, got["lost_cpu_hours_time_limit"], 1e-12)
	assert.InDelta(t, 2*30.0/3600, got["lost_cpu_hours"], 1e-12)
	cl := got["cleaning"].(map[string]any)
	assert.Equal(t, 1.0, cl["no_run_time"])
	assert.Equal(t, 1.0, cl["dropped"])
	assert.Contains(t, stderr.String(), `warning: swf: line 6: field 4 (run time) "0"`)
	assert.Equal(t, 1, strings.Count(stdout.String(), "\n"), "one JSON object, nothing else on stdout")

	out, err := os.ReadFile(c.out)
	require.NoError(t, err)
	assert.Contains(t, string(out), "; MaxJobs: 5\n")
	assert.Contains(t, string(out), "\n2 10 90 50 2 -1 -1 2 60 -1 1 2 1 -1 -1 -1 -1 -1\n")
	rd, err := swf.NewReader(bytes.NewReader(out), swf.Options{Strict: true})
	require.NoError(t, err)
	assert.Equal(t, int64(4), rd.Procs())

	f, err := os.Open(c.plot)
	require.NoError(t, err)
	defer f.Close()
	_, err = png.Decode(f)
	require.NoError(t, err)
}

// TestRunExplain replays the tiny trace under EASY with -explain. By
// hand: B (2 procs) waits 10→100 on Resources and is promised 200 (A's
// limit); C (1 proc) waits 20→100 on Priority, promised 200; the fifth
// job waits 120→135 on Resources, promised 140 (C's limit), and starts
// at 135 when C and the sixth job (backfilled at 125, no estimate) have
// ended. ETA errors 100, 100 and 5 s, all early.
func TestRunExplain(t *testing.T) {
	c := defaults()
	c.trace = writeTrace(t, tiny)
	c.policy = "easy"
	c.json, c.explain, c.explainEvery = true, true, 10*time.Second
	c.plot = filepath.Join(t.TempDir(), "out.png")
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(c, &stdout, &stderr))
	var got map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), stdout.String())
	assert.Equal(t, 3.0, got["eta_jobs"])
	assert.Equal(t, 2.0, got["eta_unestimated"])
	assert.InDelta(t, 205.0/3, got["eta_error_mean_s"], 1e-9)
	assert.Equal(t, 100.0, got["eta_error_median_s"])
	assert.Equal(t, 100.0, got["eta_error_p90_s"])
	assert.InDelta(t, -205.0/3, got["eta_bias_s"], 1e-9)
	assert.Equal(t, 1.0, got["eta_started_on_time"])
	assert.InDelta(t, 185.0/3600, got["pending_job_hours"], 1e-12)
	assert.Equal(t, map[string]any{"Resources": 105.0 / 185, "Priority": 80.0 / 185}, got["reason_mix"])
	assert.Equal(t, "CPU", got["idle_unit"])
	classes := got["idle_classes"].(map[string]any)
	require.Len(t, classes, int(scheduler.NumIdleClasses))
	sum := 0.0
	for _, v := range classes {
		sum += v.(float64)
	}
	assert.InDelta(t, 1, sum, 1e-12)
	assert.Greater(t, classes["reserved"], 0.0, "the fifth job's reservation holds a free processor")
	assert.Equal(t, 10.0, got["explain_every_s"])

	f, err := os.Open(c.plot)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	assert.Equal(t, 13*96, img.Bounds().Dy(), "two more panels")

	c.json, c.plot = false, ""
	stdout.Reset()
	require.NoError(t, run(c, &stdout, &stderr))
	s := stdout.String()
	assert.Contains(t, s, "estimates:    3 jobs waited with a start estimate: first estimate off by mean 1m8s, median 1m40s, p90 1m40s; 100.0 % started no later than estimated")
	assert.Contains(t, s, "why waiting:  Resources 56.8 %, Priority 43.2 %")
	assert.Contains(t, s, "why idle:     no-demand")

	// Without -explain the new statistics are left out; the ETA is not.
	c.explain, c.json = false, true
	stdout.Reset()
	require.NoError(t, run(c, &stdout, &stderr))
	got = nil
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got))
	assert.NotContains(t, got, "reason_mix")
	assert.NotContains(t, got, "idle_classes")
	assert.Equal(t, 3.0, got["eta_jobs"])
}

func TestRunText(t *testing.T) {
	c := defaults()
	c.trace = writeTrace(t, tiny)
	c.skip, c.jobs = 1, 2
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(c, &stdout, &stderr))
	s := stdout.String()
	assert.Contains(t, s, "trace:        3 job lines read, 3 kept, 0 dropped;", "-skip 1 -jobs 2 reads only the first three job lines")
	assert.Contains(t, s, "jobs:         2 simulated")
	assert.Contains(t, s, "policy fcfs, user estimates")
}

func TestRunSynthetic(t *testing.T) {
	c := defaults()
	c.nodes, c.jobs, c.json = 64, 300, true
	c.estimates = "exact"
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(c, &stdout, &stderr))
	var got map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got))
	assert.Equal(t, 300.0, got["jobs"])
	assert.Equal(t, 0.0, got["timed_out"], "exact estimates: nobody reaches a limit early or late")
	assert.Greater(t, got["gpu_utilization"], 0.0)
	assert.NotContains(t, got, "cleaning")
}

// TestRunGPUWorkload replays the synthetic workload with a GPU workload
// file giving every job 50 % utilisation: every job completes (user
// limits are at least the run times), so half the allocated GPU-hours
// are useful, and each GPU-hour costs 70 + 0.5 × 630 = 385 Wh.
func TestRunGPUWorkload(t *testing.T) {
	var file strings.Builder
	file.WriteString("# every job at 50 %\njob,util\nnot-in-the-workload,90\n")
	for i := range 50 {
		fmt.Fprintf(&file, "job%d,50\n", i)
	}
	path := filepath.Join(t.TempDir(), "gpu.csv")
	require.NoError(t, os.WriteFile(path, []byte(file.String()), 0o644))
	c := defaults()
	c.nodes, c.jobs, c.json, c.gpuWorkload = 64, 50, true, path
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(c, &stdout, &stderr))
	var got map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got))
	require.Equal(t, 50.0, got["completed"])
	gpuH := got["gpu_hours"].(float64)
	assert.Equal(t, 50.0, got["measured_jobs"])
	assert.InDelta(t, gpuH, got["measured_gpu_hours"], 1e-9)
	assert.InDelta(t, 0.5, got["goodput"], 1e-12)
	assert.InDelta(t, 0.5, got["busy_fraction"], 1e-12)
	assert.InDelta(t, gpuH/2, got["useful_gpu_hours"], 1e-9)
	assert.InDelta(t, gpuH/2, got["busy_gpu_hours"], 1e-9)
	assert.Equal(t, 0.0, got["goodput_lost_gpu_hours"])
	assert.Equal(t, 0.0, got["unmeasured_gpu_hours"])
	assert.InDelta(t, gpuH*0.385, got["energy_kwh"], 1e-9)
	assert.InDelta(t, 0.77, got["kwh_per_useful_gpu_hour"], 1e-12)
	idle := (got["gpus"].(float64)*got["makespan_s"].(float64)/3600 - gpuH) * 70 / 1000
	assert.InDelta(t, idle, got["idle_gpu_energy_kwh"], 1e-6)
	assert.Equal(t, map[string]any{"file": path, "profiles": 51.0, "matched": 50.0, "read": 50.0}, got["gpu_workload"])

	// The power model flags; the text report's lines.
	c.json, c.gpuIdleWatts, c.gpuMaxWatts = false, 50, 400
	stdout.Reset()
	require.NoError(t, run(c, &stdout, &stderr))
	s := stdout.String()
	assert.Contains(t, s, "gpu workload: "+path+": 51 profiles, 50 of 50 jobs read matched\n")
	assert.Contains(t, s, "goodput:      50.0 % of ")
	assert.Contains(t, s, "(busy 50.0 %, 0 GPU-hours of work lost); 0 GPU-hours unmeasured\n")
	assert.Contains(t, s, "kWh on the measured jobs' GPUs, 0.450 kWh per useful GPU-hour; ")
	assert.Contains(t, s, "kWh on GPUs no job held (50 W idle, 400 W at 100 % per GPU)\n")

	// Without the file, the synthetic workload's own profiles.
	c.gpuWorkload, c.json = "", true
	stdout.Reset()
	require.NoError(t, run(c, &stdout, &stderr))
	got = nil
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got))
	assert.NotContains(t, got, "gpu_workload")
	assert.Equal(t, 50.0, got["measured_jobs"])
	assert.NotEqual(t, 0.5, got["goodput"])
	assert.Positive(t, got["goodput"])
}

// TestRunGPUWorkloadTrace joins a GPU workload file onto an SWF trace by
// job number. The trace's machine has no GPUs: nothing is measured, and
// the text report has no goodput line.
func TestRunGPUWorkloadTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gpu.csv")
	require.NoError(t, os.WriteFile(path, []byte("job,util,stall_s,phases\n1,80\n2,,60,0.5:90 1:0\n"), 0o644))
	c := defaults()
	c.trace, c.gpuWorkload = writeTrace(t, tiny), path
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(c, &stdout, &stderr))
	s := stdout.String()
	assert.Contains(t, s, "gpu workload: "+path+": 2 profiles, 2 of 5 jobs read matched\n")
	assert.NotContains(t, s, "goodput:")

	// With a GPU per processor: job 1 (4 GPUs × 100 s at 80 %) completes,
	// job 2 (2 GPUs × 50 s: a 60 s stall cut to its 50 s of work) too; the
	// other 140 GPU-s are unmeasured (the schedule of TestRunTraceJSON).
	c.gpusPerNode, c.json = 1, true
	stdout.Reset()
	require.NoError(t, run(c, &stdout, &stderr))
	var got map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got))
	assert.Equal(t, 4.0, got["gpus"])
	assert.InDelta(t, 500.0/3600, got["measured_gpu_hours"], 1e-12)
	assert.InDelta(t, 140.0/3600, got["unmeasured_gpu_hours"], 1e-12)
	assert.InDelta(t, 320.0/500, got["goodput"], 1e-12)
	assert.InDelta(t, 640.0/720, got["utilization"], 1e-9)

	// -synthetic-profiles measures the three jobs the file leaves out;
	// the two it gives keep their figures.
	c.syntheticProfiles = true
	stdout.Reset()
	require.NoError(t, run(c, &stdout, &stderr))
	drawn := map[string]any{}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &drawn))
	assert.Equal(t, 5.0, drawn["measured_jobs"])
	assert.InDelta(t, 640.0/3600, drawn["measured_gpu_hours"], 1e-12)
	assert.Equal(t, 0.0, drawn["unmeasured_gpu_hours"])
	// (The drawn stalls of up to 300 s may cover these short jobs whole.)
	assert.GreaterOrEqual(t, drawn["busy_gpu_hours"], got["busy_gpu_hours"])
	again := map[string]any{}
	stdout.Reset()
	require.NoError(t, run(c, &stdout, &stderr))
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &again))
	delete(drawn, "sim_seconds")
	delete(again, "sim_seconds")
	assert.Equal(t, drawn, again, "same seed, same figures")
}

func TestRunErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*config)
		want   string
	}{
		{"strict", func(c *config) { c.trace = writeTrace(t, tiny); c.strict = true }, `line 6: field 4 (run time) "0"`},
		{"unknown policy", func(c *config) { c.policy = "sjf" }, `unknown policy: "sjf"`},
		{"estimates", func(c *config) { c.estimates = "perfect" }, `-estimates "perfect"`},
		{"negative jobs", func(c *config) { c.jobs = -1 }, "must not be negative"},
		{"no machine size", func(c *config) { c.trace = writeTrace(t, "1 0 -1 10 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1\n") }, "use -procs"},
		{"oversize", func(c *config) { c.trace = writeTrace(t, tiny); c.oversize = "shrink" }, `-oversize "shrink"`},
		{"missing trace", func(c *config) { c.trace = filepath.Join(t.TempDir(), "nope.swf") }, "no such file"},
		{"small cluster", func(c *config) { c.nodes = 5 }, "out of range"},
		{"explain step", func(c *config) { c.explain = true; c.explainEvery = 0 }, "-explain-every 0s"},
		{"missing GPU workload", func(c *config) { c.gpuWorkload = filepath.Join(t.TempDir(), "nope.csv") }, "no such file"},
		{"bad GPU workload", func(c *config) {
			c.gpuWorkload = filepath.Join(t.TempDir(), "bad.csv")
			require.NoError(t, os.WriteFile(c.gpuWorkload, []byte("job,util\njob0,50\njob1,x\n"), 0o644))
		}, `bad.csv: sim: invalid GPU workload file: line 3, field 2 (util): "x"`},
		{"power model", func(c *config) { c.gpuIdleWatts = 800 }, "-gpu-idle-watts 800 / -gpu-max-watts 700"},
		{"zero power model", func(c *config) { c.gpuIdleWatts, c.gpuMaxWatts = 0, 0 }, "-gpu-idle-watts 0 / -gpu-max-watts 0"},
		{"GPUs per node without a trace", func(c *config) { c.gpusPerNode = 2 }, "-gpus-per-node 2: for a -trace only"},
		{"synthetic profiles without a trace", func(c *config) { c.syntheticProfiles = true }, "-synthetic-profiles: for a -trace only"},
		{"negative GPUs per node", func(c *config) { c.trace = writeTrace(t, tiny); c.gpusPerNode = -1 }, "GPUsPerNode -1 out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := defaults()
			tc.mutate(&c)
			err := run(c, &bytes.Buffer{}, &bytes.Buffer{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	f := 0.0
	b := &progressBar{w: &buf, frac: func() float64 { return f }}
	for i := range 1024 {
		f = float64(i) / 1024
		b.tick()
	}
	assert.Contains(t, buf.String(), "\r[")
	b.done()
	assert.True(t, strings.HasSuffix(buf.String(), "\r"))
	var nilBar *progressBar
	nilBar.done() // no bar: nothing to clear
}

// -help (and -h) print the usage and succeed; a bad flag or a stray
// argument is a usage error (2), a failed run 1.
func TestCLIHelpExitsZero(t *testing.T) {
	for _, arg := range []string{"-help", "-h", "--help"} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 0, cli([]string{arg}, &stdout, &stderr, false), arg)
		assert.Contains(t, stderr.String(), "-estimates", "%s prints the usage", arg)
	}
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, cli([]string{"-nope"}, &stdout, &stderr, false))
	assert.Contains(t, stderr.String(), "flag provided but not defined")
	assert.Equal(t, 2, cli([]string{"extra"}, &stdout, &stderr, false))
	assert.Contains(t, stderr.String(), `unexpected argument "extra"`)
	assert.Equal(t, 1, cli([]string{"-policy", "sjf"}, &stdout, &stderr, false))
	assert.Equal(t, 0, cli([]string{"-policy", "fcfs", "-nodes", "64", "-jobs", "50", "-json"}, &stdout, &stderr, false))
	assert.Contains(t, stdout.String(), `"jobs":50`)
}

// runArgs parses args as the command line and runs it, returning stdout.
func runArgs(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c, err := parseArgs(args, &stderr)
	require.NoError(t, err, stderr.String())
	err = run(c, &stdout, &stderr)
	return stdout.String(), err
}

// TestRunTelemetry: -telemetry-every with the default notify changes no
// figure but the idle-policy ones; -idle-action cancel kills the jobs it
// reports (the synthetic workload's hung and idle-tail jobs) and shows
// them in the text report.
func TestRunTelemetry(t *testing.T) {
	base := []string{"-nodes", "64", "-jobs", "600", "-json"}
	decode := func(args ...string) map[string]any {
		out, err := runArgs(t, append(base, args...)...)
		require.NoError(t, err)
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		delete(got, "sim_seconds")
		return got
	}
	off := decode()
	notify := decode("-telemetry-every", "2m", "-idle-after", "20m")
	cancel := decode("-telemetry-every", "2m", "-idle-after", "20m", "-idle-action", "cancel")
	assert.Positive(t, notify["idle_notices"])
	assert.Positive(t, notify["idle_gpu_hours"])
	assert.Equal(t, 120.0, notify["telemetry_every_s"])
	assert.Equal(t, "notify", notify["idle_action"])
	for _, k := range []string{"telemetry_every_s", "idle_action", "telemetry_events", "idle_notices", "idle_gpu_hours"} {
		delete(notify, k)
	}
	assert.Equal(t, off, notify)

	n := cancel["idle_cancels"].(float64)
	assert.Positive(t, n)
	assert.Equal(t, n, cancel["idle_notices"], "every job reported is cancelled (no grace)")
	assert.Equal(t, off["killed"].(float64)+n, cancel["killed"])
	assert.Less(t, cancel["idle_gpu_hours"], off["gpu_hours"])
	assert.Less(t, cancel["energy_kwh"], off["energy_kwh"])

	text, err := runArgs(t, "-nodes", "64", "-jobs", "600", "-telemetry-every", "2m", "-idle-action", "requeue", "-idle-requeue-limit", "1")
	require.NoError(t, err)
	assert.Regexp(t, `idle policy:  requeue; \d+ jobs reported allocated-but-idle, [0-9.]+ idle GPU-hours measured; \d+ requeued, 0 cancelled, \d+ cancelled after too many requeues \(\d+ telemetry events, every 2m0s\)`, text)
}

func TestRunTelemetryErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-idle-after", "10m"}, "-idle-after: need -telemetry-every"},
		{[]string{"-idle-action", "cancel", "-idle-grace", "1m"}, "-idle-action, -idle-grace: need -telemetry-every"},
		{[]string{"-telemetry-every", "-1m"}, "-telemetry-every -1m0s: must not be negative"},
		{[]string{"-telemetry-every", "5m"}, "-telemetry-every 5m0s: sim: invalid options: TelemetryEvery 5m0s is longer than the scheduler's telemetry MaxGap 2m30s"},
		{[]string{"-telemetry-every", "1m", "-idle-action", "kill"}, `-idle-action "kill": want notify, requeue or cancel`},
		{[]string{"-telemetry-every", "1m", "-idle-below", "120"}, "-idle-below 120 / -idle-after 30m0s / -idle-grace 0s: invalid scheduler config: telemetry: "},
		{[]string{"-telemetry-every", "1m", "-idle-below", "120"}, "idle threshold 120% outside [0, 100]"},
		{[]string{"-telemetry-every", "1m", "-idle-action", "cancel", "-idle-below", "0"}, "idle action CANCEL without an idle threshold"},
		{[]string{"-telemetry-every", "1m", "-idle-grace", "-1s"}, "negative grace time -1s"},
		{[]string{"-telemetry-every", "1m", "-idle-requeue-limit", "-1"}, "-idle-requeue-limit -1: must not be negative"},
		// 0 is the scheduler's "default" (5), not "requeue none"
		{[]string{"-telemetry-every", "1m", "-idle-action", "requeue", "-idle-requeue-limit", "0"}, "-idle-requeue-limit 0: must be at least 1"},
	} {
		_, err := runArgs(t, append([]string{"-nodes", "20", "-jobs", "10"}, tc.args...)...)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want, tc.args)
	}
}

// TestRunTelemetryCountOnlyGPUs: a trace's count-only GPUs
// (-gpus-per-node) have no devices to sample; the report says how many
// profiled runs got no reading.
func TestRunTelemetryCountOnlyGPUs(t *testing.T) {
	out, err := runArgs(t, "-trace", writeTrace(t, tiny), "-gpus-per-node", "1", "-synthetic-profiles", "-telemetry-every", "1m", "-json")
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Positive(t, got["measured_jobs"])
	assert.GreaterOrEqual(t, got["unsampled_runs"], got["measured_jobs"], "every run, once per node")
	assert.Nil(t, got["telemetry_events"], "no event sent")
	text, err := runArgs(t, "-trace", writeTrace(t, tiny), "-gpus-per-node", "1", "-synthetic-profiles", "-telemetry-every", "1m")
	require.NoError(t, err)
	assert.Contains(t, text, "profiled runs on nodes without a device inventory got no reading")
}
