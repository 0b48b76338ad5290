package swf_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
	"github.com/sluicehq/sluice/scheduler/sim/swf"
)

func TestMachine(t *testing.T) {
	h := swf.Header{MaxProcs: 9216, MaxNodes: 1152, UnixStartTime: 1163199901}
	m, err := swf.MachineFor(h, 0, 8)
	require.NoError(t, err)
	assert.Equal(t, int64(9216), m.Procs)
	assert.Equal(t, 1152, m.Nodes())
	assert.Equal(t, h.Start(), m.Start)
	cfg, err := m.Config()
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	assert.Len(t, cfg.Nodes, 1152)
	assert.Equal(t, 8, cfg.Nodes[0].CPUs)
	assert.Equal(t, "n01151", cfg.Nodes[1151].Name)
	assert.Equal(t, []scheduler.PartitionConfig{{Name: swf.DefaultPartition, Default: true}}, cfg.Partitions)

	m, err = swf.MachineFor(swf.Header{MaxNodes: 256}, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, 256, m.Nodes())
	m, err = swf.MachineFor(swf.Header{MaxNodes: 256}, 64, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(64), m.Procs)

	_, err = swf.MachineFor(swf.Header{}, 0, 0)
	require.ErrorIs(t, err, swf.ErrMachine)
	assert.Contains(t, err.Error(), "neither MaxProcs nor MaxNodes")
	for _, bad := range []swf.Machine{{Procs: 0}, {Procs: 10, ProcsPerNode: 4}, {Procs: 8, ProcsPerNode: -1}, {Procs: 1 << 30}, {Procs: 1 << 22}} {
		assert.ErrorIs(t, bad.Validate(), swf.ErrMachine, "%+v", bad)
		_, err := bad.Config()
		assert.ErrorIs(t, err, swf.ErrMachine)
	}
}

func TestMachineJob(t *testing.T) {
	rec := swf.Record{Job: 42, Submit: 60, Run: 100, Procs: 5, ReqTime: 300, Status: 1, User: 7, Group: -1, Line: 12}
	start := time.Date(1996, 9, 23, 12, 0, 31, 0, time.UTC)

	single := swf.Machine{Procs: 16, Start: start}
	j, err := single.Job(rec)
	require.NoError(t, err)
	assert.Equal(t, scheduler.JobSpec{Name: "42", User: "u7", Partition: "batch", Nodes: 5, TimeLimit: 300 * time.Second}, j.Spec)
	assert.Equal(t, start.Add(time.Minute), j.Submit)
	assert.Equal(t, 100*time.Second, j.Runtime)
	assert.Zero(t, j.ExitCode)
	got, ok := j.Data.(*swf.Record)
	require.True(t, ok)
	assert.Equal(t, rec, *got)

	whole := swf.Machine{Procs: 16, ProcsPerNode: 4, Partition: "p"}
	rec.Status = 0
	j, err = whole.Job(rec)
	require.NoError(t, err)
	assert.Equal(t, 2, j.Spec.Nodes)
	assert.True(t, j.Spec.Exclusive)
	assert.Equal(t, "p", j.Spec.Partition)
	assert.Equal(t, 1, j.ExitCode)
	assert.Equal(t, time.Unix(60, 0).UTC(), j.Submit, "no start time: the Unix epoch")

	for _, bad := range []swf.Record{
		{Job: 1, Run: 1, ReqTime: 1, Procs: 0},
		{Job: 1, Run: 1, ReqTime: 1, Procs: 17},
		{Job: 1, Run: 0, ReqTime: 1, Procs: 1},
		{Job: 1, Run: 1, ReqTime: -1, Procs: 1},
		{Job: 1, Submit: -1, Run: 1, ReqTime: 1, Procs: 1},
	} {
		_, err := single.Job(bad)
		assert.ErrorIs(t, err, swf.ErrMachine, "%+v", bad)
	}
}

// tiny is a hand-written trace for a 4-processor machine. Under strict
// FCFS: A runs 0–100; B (2 procs) and C (1) wait for it and start at 100;
// D has no run time and is dropped; E (2 procs, arrives 120) waits for C
// to end at 130 and is killed at its 50 s limit at 180 although it would
// run 80 s; F (1 proc, arrives 125, no estimate) waits behind E and then
// for B, starting at 150.
const tiny = `; Version: 2.2
; Computer: hand-written test machine
; MaxJobs: 6
; MaxProcs: 4
;
1   0 -1 100 4 -1 -1  4 200 -1 1 1 1 -1 -1 -1 -1 -1
2  10 -1  50 2 -1 -1  2  60 -1 1 2 1 -1 -1 -1 -1 -1
3  20 -1  30 1 -1 -1  1  40 -1 0 3 1 -1 -1 -1 -1 -1
4  30 -1   0 1 -1 -1  1  40 -1 5 3 1 -1 -1 -1 -1 -1
5 120 -1  80 2 -1 -1  2  50 -1 1 4 2 -1 -1 -1 -1 -1
6 125 -1  10 1 -1 -1 -1  -1 -1 1 4 2 -1 -1 -1 -1 -1
`

// machineFor reads the header of the trace in r with options ro and
// returns the reader, the header's machine of nodes of perNode processors
// and that machine's configuration.
func machineFor(t testing.TB, r io.Reader, ro swf.Options, perNode int) (*swf.Reader, swf.Machine, scheduler.Config) {
	t.Helper()
	rd, err := swf.NewReader(r, ro)
	require.NoError(t, err)
	m, err := swf.MachineFor(rd.Header(), 0, perNode)
	require.NoError(t, err)
	cfg, err := m.Config()
	require.NoError(t, err)
	return rd, m, cfg
}

// runOn replays src on a fresh scheduler of cfg.
func runOn(t testing.TB, cfg scheduler.Config, src sim.Source, opt sim.Options) (sim.Result, error) {
	t.Helper()
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return sim.Run(s, src, opt)
}

func TestReplayTinyFCFS(t *testing.T) {
	rd, m, cfg := machineFor(t, strings.NewReader(tiny), swf.Options{}, 1)
	res, err := runOn(t, cfg, swf.Source(rd, m), sim.Options{})
	require.NoError(t, err)

	st := rd.Stats()
	assert.Equal(t, 6, st.Records)
	assert.Equal(t, 5, st.Jobs)
	assert.Equal(t, 1, st.NoRuntime)
	assert.Equal(t, 1, st.Overrun)
	assert.Equal(t, 1, st.EstimateFilled)

	want := map[string]struct {
		wait, run int
		state     scheduler.JobState
	}{
		"1": {0, 100, scheduler.JobCompleted},
		"2": {90, 50, scheduler.JobCompleted},
		"3": {80, 30, scheduler.JobFailed},
		"5": {10, 50, scheduler.JobTimeout},
		"6": {25, 10, scheduler.JobCompleted},
	}
	require.Len(t, res.Jobs, len(want))
	for _, r := range res.Jobs {
		w, ok := want[r.Job.Spec.Name]
		require.True(t, ok, r.Job.Spec.Name)
		assert.Equal(t, time.Duration(w.wait)*time.Second, r.Wait(), "job %s wait", r.Job.Spec.Name)
		assert.Equal(t, time.Duration(w.run)*time.Second, r.RunTime(), "job %s run", r.Job.Spec.Name)
		assert.Equal(t, w.state, r.State, "job %s", r.Job.Spec.Name)
	}
	sum := res.Summary
	assert.InDelta(t, 205.0/5, sum.Wait.Mean, 1e-9)
	assert.Equal(t, 180*time.Second, sum.Makespan)
	// 4×100 + 2×50 + 1×30 + 2×50 + 1×10 processor-seconds on 4 over 180 s
	assert.InDelta(t, 640.0/720, sum.Utilization, 1e-9)
	// job 5 needed 80 s on 2 processors and was ended at its 50 s limit
	assert.InDelta(t, 2*30.0/3600, sum.LostCPUHours, 1e-12)

	// The per-job output, in trace order, with wait and run filled in.
	sort.Slice(res.Jobs, func(i, j int) bool { return res.Jobs[i].Index < res.Jobs[j].Index })
	var buf bytes.Buffer
	w := swf.NewWriter(&buf, m.Start)
	require.NoError(t, w.WriteHeader([]swf.HeaderField{{Key: "Version", Value: "2.2"}, {Key: "MaxProcs", Value: "4"}}))
	for _, r := range res.Jobs {
		require.NoError(t, w.WriteResult(r))
	}
	require.NoError(t, w.Flush())
	assert.Equal(t, `; Version: 2.2
; MaxProcs: 4
;
1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1
2 10 90 50 2 -1 -1 2 60 -1 1 2 1 -1 -1 -1 -1 -1
3 20 80 30 1 -1 -1 1 40 -1 0 3 1 -1 -1 -1 -1 -1
5 120 10 50 2 -1 -1 2 50 -1 0 4 2 -1 -1 -1 -1 -1
6 125 25 10 1 -1 -1 -1 10 -1 1 4 2 -1 -1 -1 -1 -1
`, buf.String())

	// The output is itself a valid trace.
	back, bst, err := readAll(t, buf.String(), swf.Options{Strict: true})
	require.NoError(t, err)
	assert.Len(t, back, 5)
	assert.Zero(t, bst.Dropped())
}

func TestReplayWholeNodes(t *testing.T) {
	// 16 processors in nodes of 4: a 5-processor job takes 2 whole nodes,
	// so two of them cannot run together with a 9-processor one.
	in := "; MaxProcs: 16\n; MaxNodes: 4\n" +
		"1 0 -1 100 5 -1 -1 5 100 -1 1 1 1 -1 -1 -1 -1 -1\n" +
		"2 0 -1 100 9 -1 -1 9 100 -1 1 1 1 -1 -1 -1 -1 -1\n"
	rd, m, cfg := machineFor(t, strings.NewReader(in), swf.Options{}, 4)
	res, err := runOn(t, cfg, swf.Source(rd, m), sim.Options{})
	require.NoError(t, err)
	require.Len(t, res.Jobs, 2)
	assert.Equal(t, int64(8), res.Jobs[0].CPUs)
	assert.Equal(t, 2, res.Jobs[0].Nodes)
	assert.Equal(t, 100*time.Second, res.Jobs[1].Wait())
	assert.Equal(t, int64(12), swf.ResultRecord(res.Jobs[1], m.Start).AllocProcs)
}

func TestSourceStopsOnStrictError(t *testing.T) {
	in := "; MaxProcs: 4\n1 0 -1 10 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1\n2 5 -1 0 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1\n"
	rd, m, cfg := machineFor(t, strings.NewReader(in), swf.Options{Strict: true}, 0)
	_, err := runOn(t, cfg, swf.Source(rd, m), sim.Options{})
	require.ErrorIs(t, err, swf.ErrNoRuntime)
	assert.Contains(t, err.Error(), "line 3: field 4 (run time)")
}

func TestResultRecordWithoutTrace(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := sim.JobResult{
		Index: 9,
		Job: sim.Job{Submit: start.Add(1500 * time.Millisecond), Runtime: time.Hour,
			Spec: scheduler.JobSpec{TimeLimit: 2 * time.Hour}},
		Start: start.Add(10 * time.Second), End: start.Add(3610 * time.Second),
		State: scheduler.JobCancelled, CPUs: 16, GPUs: 8,
	}
	rec := swf.ResultRecord(r, start)
	assert.Equal(t, swf.Record{Job: 10, Submit: 2, Wait: 8, Run: 3600, AllocProcs: 16, AvgCPU: -1, UsedMem: -1,
		ReqProcs: 16, ReqTime: 7200, ReqMem: -1, Status: 5, User: -1, Group: -1, Exe: -1, Queue: -1,
		Partition: -1, Preceding: -1, Think: -1}, rec)
}

type errWriter struct{ n int }

func (e *errWriter) Write(p []byte) (int, error) { return 0, io.ErrShortWrite }

func TestWriterStickyError(t *testing.T) {
	w := swf.NewWriter(&errWriter{}, time.Time{})
	rec := swf.Record{Job: 1}
	for range 5000 { // fill the buffer until the write fails
		if err := w.WriteRecord(rec); err != nil {
			break
		}
	}
	require.ErrorIs(t, w.Flush(), io.ErrShortWrite)
	require.ErrorIs(t, w.WriteRecord(rec), io.ErrShortWrite)
	require.ErrorIs(t, w.WriteHeader(nil), io.ErrShortWrite)
}

// traceDir is where the shared PWA traces live, relative to this package.
func traceDir() string { return filepath.Join("..", "..", "..", "..", "shared", "traces") }

func openTrace(t testing.TB, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join(traceDir(), name))
	if os.IsNotExist(err) {
		t.Skipf("trace %s not available (it lives in ../shared/traces, outside the repository)", name)
	}
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// TestTraces reads the Parallel Workloads Archive traces of
// ../shared/traces and checks the cleaning figures against counts made
// independently with awk on the files.
func TestTraces(t *testing.T) {
	tests := []struct {
		file                     string
		procs                    int64
		records, jobs, noRuntime int
		estimateFilled, overrun  int
		maxJobs                  int64
	}{
		{"KTH-SP2/log.swf", 100, 28489, 28481, 8, 0, 475, 28490},
		{"LLNL-Atlas-2006-2.1-cln.swf", 9216, 43778, 36600, 7178, 5352, 3351, 60332},
		{"NASA-iPSC-1993-3.1-cln.swf", 128, 18239, 18066, 173, 18066, 0, 42264},
		{"lublin_256.swf", 256, 10000, 10000, 0, 10000, 0, 10000},
		{"lublin_256_new2", 256, 10000, 10000, 0, 10000, 0, 10000},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			f := openTrace(t, tc.file)
			rd, err := swf.NewReader(f, swf.Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.procs, rd.Procs())
			assert.Equal(t, tc.maxJobs, rd.Header().MaxJobs)
			n := 0
			var last int64
			for {
				rec, err := rd.Read()
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				require.GreaterOrEqual(t, rec.Submit, last)
				last = rec.Submit
				n++
			}
			st := rd.Stats()
			assert.Equal(t, tc.records, st.Records)
			assert.Equal(t, tc.jobs, st.Jobs)
			assert.Equal(t, tc.jobs, n)
			assert.Equal(t, tc.noRuntime, st.NoRuntime)
			assert.Equal(t, tc.noRuntime, st.Dropped())
			assert.Zero(t, st.Malformed)
			assert.Zero(t, st.Clipped)
			assert.Zero(t, st.HeaderIssues)
			assert.Equal(t, tc.estimateFilled, st.EstimateFilled)
			assert.Equal(t, tc.overrun, st.Overrun)
		})
	}
}

func TestKTHHeader(t *testing.T) {
	rd, err := swf.NewReader(openTrace(t, "KTH-SP2/log.swf"), swf.Options{})
	require.NoError(t, err)
	h := rd.Header()
	assert.Equal(t, int64(100), h.MaxNodes)
	assert.Equal(t, int64(100), h.MaxProcs)
	assert.Equal(t, time.Date(1996, 9, 23, 12, 0, 31, 0, time.UTC), h.Start())
	note, _ := h.Get("Note")
	assert.Equal(t, "uses the EASY scheduler", note)
	rec, err := rd.Read()
	require.NoError(t, err)
	assert.Equal(t, swf.Record{Job: 1, Submit: 0, Wait: 964980, Run: 97225, AllocProcs: 56, AvgCPU: -1, UsedMem: -1,
		ReqProcs: 56, ReqTime: 210000, ReqMem: -1, Status: 1, User: 1, Group: 1, Exe: -1, Queue: -1, Partition: -1,
		Preceding: -1, Think: -1, Procs: 56, Line: 20}, rec)
}

// TestSourceMatchesMachineJob checks that Source, which shares the user
// and account names of the jobs it streams, gives every job exactly what
// Machine.Job gives its record, also beyond the IDs it remembers (more
// than 4,096 users) and for unknown (-1) IDs.
func TestSourceMatchesMachineJob(t *testing.T) {
	var b strings.Builder
	b.WriteString("; MaxProcs: 8\n")
	for i := range 9000 {
		user, group := i%5000, i%7-1 // users 0…4999 twice over, groups -1…5
		if i%11 == 0 {
			user = -1
		}
		fmt.Fprintf(&b, "%d %d -1 10 1 -1 -1 1 20 -1 %d %d %d -1 -1 -1 -1 -1\n", i+1, i, i%2, user, group)
	}
	in := b.String()
	rd, m, _ := machineFor(t, strings.NewReader(in), swf.Options{}, 0)
	src := swf.Source(rd, m)
	ref, err := swf.NewReader(strings.NewReader(in), swf.Options{})
	require.NoError(t, err)
	n := 0
	for {
		got, ok, err := src.Next()
		require.NoError(t, err)
		rec, rerr := ref.Read()
		if !ok {
			require.ErrorIs(t, rerr, io.EOF)
			break
		}
		require.NoError(t, rerr)
		want, err := m.Job(rec)
		require.NoError(t, err)
		require.Equal(t, want, got, "line %d", rec.Line)
		n++
	}
	assert.Equal(t, 9000, n)
}
