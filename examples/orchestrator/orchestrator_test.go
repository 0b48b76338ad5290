//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// mainEnv makes the test binary run the orchestrator's command line
// instead of the tests: the orchestrator under test, and the shims its
// agent starts (os.Executable is the test binary), are this binary.
const mainEnv = "SLUICE_ORCHESTRATOR_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		if len(os.Args) == 3 && os.Args[1] == "cgroup-self" {
			// A job's command for TestLocalAgentConfinesRunInCgroup that
			// needs no shell (the cgroup VM has none).
			b, err := os.ReadFile("/proc/self/cgroup")
			if err == nil {
				err = os.WriteFile(os.Args[2], b, 0o644)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
		if err := command(os.Args[1:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "orchestrator:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer safe for the writes of a child's output
// and the reads of a failing test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// orchestratorProcess starts "orchestrator run" on state as a subprocess.
func orchestratorProcess(t *testing.T, ctx context.Context, out *syncBuffer, state string, extra ...string) *exec.Cmd {
	t.Helper()
	// A snapshot every 20 events (a second of idle cycles): kills land
	// during compactions too.
	args := append([]string{"run", "-state", state, "-period", "50ms", "-cpus", "2", "-snapshot-every", "20"}, extra...)
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	return cmd
}

// lines counts the lines of file path (0 when it does not exist).
func lines(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

// TestOrchestratorSurvivesKill runs the orchestrator as a subprocess on
// jobs that are real short processes, each appending to a start marker
// when it begins and to a done marker when it ends, SIGKILLs it twice
// while jobs run, restarts it, and lets everything finish: every job must
// have started and finished exactly once (one line in each marker), the
// ledger must hold each as COMPLETED, and the usage charged to each job's
// own association must be its run charged once: its allocated billing ×
// its recorded run time (Charge counts whole seconds).
func TestOrchestratorSurvivesKill(t *testing.T) {
	needShell(t)
	state, marks := t.TempDir(), t.TempDir()
	const jobs = 6
	submitMarked(t, state, marks, jobs, "1.1")
	count := markCount(t, marks, jobs)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	out := &syncBuffer{}
	defer func() {
		if t.Failed() || testing.Verbose() {
			t.Logf("orchestrator output:\n%s", out)
		}
	}()

	// Kill it while jobs run: first after one job finished, then after
	// three, each time with a job started and not done.
	for _, doneBefore := range []int{1, 3} {
		cmd := orchestratorProcess(t, ctx, out, state)
		for count("done") < doneBefore || count("start") <= count("done") {
			require.NoError(t, ctx.Err(), "waiting for %d jobs done and one running", doneBefore)
			time.Sleep(10 * time.Millisecond)
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		fmt.Fprintf(out, "--- SIGKILL with %d started, %d done\n", count("start"), count("done"))
	}
	cmd := orchestratorProcess(t, ctx, out, state, "-exit-when-idle")
	require.NoError(t, cmd.Wait(), "the restarted orchestrator must finish every job and exit")
	checkOnce(t, state, marks, jobs)
}

// TestOrchestratorSurvivesKillAtRandomPoints SIGKILLs the orchestrator
// at random times (whatever it is doing: submitting, scheduling,
// recording, launching, collecting exits) five times, then lets it
// finish: still every job started and finished once and was charged once.
// A kill between a run's directory and its shim's start leaves a run
// that never started, which the restarted orchestrator launches under
// the same key: no job is requeued.
func TestOrchestratorSurvivesKillAtRandomPoints(t *testing.T) {
	needShell(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	state, marks := t.TempDir(), t.TempDir()
	const jobs = 4
	submitMarked(t, state, marks, jobs, "1.1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := &syncBuffer{}
	defer func() {
		if t.Failed() {
			t.Logf("orchestrator output:\n%s", out)
		}
	}()
	for range 5 {
		cmd := orchestratorProcess(t, ctx, out, state)
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		fmt.Fprintln(out, "--- SIGKILL")
	}
	cmd := orchestratorProcess(t, ctx, out, state, "-exit-when-idle")
	require.NoError(t, cmd.Wait(), "the restarted orchestrator must finish every job and exit")
	checkOnce(t, state, marks, jobs)
}

// submitMarked submits jobs job0… whose commands append to
// <marks>/<name>.start, sleep for sleep seconds, and append to
// <marks>/<name>.done; job i runs as user u<i>, so its association's
// usage is its own.
func submitMarked(t *testing.T, state, marks string, jobs int, sleep string) {
	t.Helper()
	for i := range jobs {
		script := fmt.Sprintf(`echo start >> %[1]s/$SLUICE_JOB_NAME.start; sleep %[2]s; echo done >> %[1]s/$SLUICE_JOB_NAME.done`, marks, sleep)
		err := command([]string{"submit", "-state", state, "-name", fmt.Sprintf("job%d", i),
			"-user", fmt.Sprintf("u%d", i), "-account", "lab", "-cpus", "1", "-time", "5m", "--", "sh", "-c", script},
			new(bytes.Buffer), new(bytes.Buffer))
		require.NoError(t, err)
	}
}

// markCount returns a function counting the lines of the jobs' markers
// with a suffix ("start", "done").
func markCount(t *testing.T, marks string, jobs int) func(suffix string) int {
	return func(suffix string) int {
		n := 0
		for i := range jobs {
			n += lines(t, filepath.Join(marks, fmt.Sprintf("job%d.%s", i, suffix)))
		}
		return n
	}
}

// checkOnce checks that every job started and finished once (its
// markers), that the ledger holds each as COMPLETED, and that the usage
// charged to each job's association is its run charged once: its
// allocated billing × its recorded run time (Charge counts whole
// seconds; every job runs over a second, so that a second charge shows),
// and that no job was requeued.
func checkOnce(t *testing.T, state, marks string, jobs int) {
	t.Helper()
	for i := range jobs {
		assert.Equal(t, 1, lines(t, filepath.Join(marks, fmt.Sprintf("job%d.start", i))), "job%d starts", i)
		assert.Equal(t, 1, lines(t, filepath.Join(marks, fmt.Sprintf("job%d.done", i))), "job%d completions", i)
	}
	l, err := accounting.OpenBunt(filepath.Join(state, "ledger.db"), accounting.Config{}, accounting.BuntOptions{})
	require.NoError(t, err)
	defer l.Close()
	var recs []accounting.JobRecord
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		return tx.Jobs(accounting.JobQuery{Cluster: "local"}, func(r accounting.JobRecord) bool {
			recs = append(recs, r)
			return true
		})
	}))
	require.Len(t, recs, jobs, "one ledger record per job")
	now := time.Now()
	for _, r := range recs {
		assert.Equal(t, accounting.StateCompleted, r.State, "job %s", r.Name)
		assert.Zero(t, r.Restarts, "job %s was never requeued", r.Name)
		billing := r.AllocTRES["billing"]
		if billing == 0 {
			billing = r.AllocTRES["cpu"]
		}
		want := float64(billing * (r.End.Unix() - r.Start.Unix()))
		require.NoError(t, l.View(func(tx accounting.Tx) error {
			a, err := tx.LookupAssoc(accounting.AssocKey{Cluster: "local", Account: "lab", User: r.User})
			if err != nil {
				return err
			}
			u, err := tx.Usage(a.ID, now)
			if err != nil {
				return err
			}
			assert.InDelta(t, want, u.BudgetBilling, 1e-9, "job %s (user %s) charged once", r.Name, r.User)
			return nil
		}))
		assert.Positive(t, want, "job %s: a run of over a second is charged (so a double charge shows)", r.Name)
	}
}

// TestOrchestratorLaunchFailureRequeuesThenFails: a run that cannot be
// launched (here: its command record is gone) requeues the job, which
// tries again under a new run key, up to maxRestarts requeues; the next
// failure ends it FAILED with lostExitCode, and the ledger records that.
func TestOrchestratorLaunchFailureRequeuesThenFails(t *testing.T) {
	o := openQuiet(t, 2)
	sub := Submission{Name: "broken", Command: []string{"true"}, User: "u", Account: "lab", CPUs: 1, TimeLimit: "1h"}
	require.NoError(t, o.records.put(sub))
	_, err := o.ingest(o.now())
	require.NoError(t, err)
	require.NoError(t, os.Remove(o.records.path("jobs", "broken")))
	id := o.names["broken"]
	require.NotZero(t, id)
	for i := 0; i <= maxRestarts; i++ {
		_, err := o.Step()
		require.NoError(t, err)
		j, ok := o.s.Job(id)
		require.True(t, ok)
		if i < maxRestarts {
			assert.Equal(t, scheduler.JobPending, j.State, "after launch failure %d", i+1)
			assert.Equal(t, policy.ReasonLaunchFailRequeue, j.Reason)
			assert.Equal(t, i+1, j.Restarts)
		} else {
			assert.Equal(t, scheduler.JobFailed, j.State)
			assert.Equal(t, lostExitCode, j.ExitCode)
		}
	}
	idle, err := o.Step()
	require.NoError(t, err)
	assert.True(t, idle)
	require.NoError(t, o.ledger.View(func(tx accounting.Tx) error {
		r, err := tx.Job(accounting.JobID(id))
		require.NoError(t, err)
		assert.Equal(t, accounting.StateFailed, r.State)
		assert.Equal(t, uint32(maxRestarts), r.Restarts)
		return nil
	}))
	notes, _ := os.ReadDir(o.notes.dir)
	assert.Empty(t, notes, "requeue notes are dropped once observed")
}

// TestOrchestratorResumesLedgerAfterUnobservedRequeue: a run requeued
// after the last cycle the ledger observed (the process died before the
// next cycle) is ended REQUEUED at its requeue time by the restarted
// orchestrator, and charged once — also when it restarts again.
func TestOrchestratorResumesLedgerAfterUnobservedRequeue(t *testing.T) {
	state := t.TempDir()
	opt := Options{StateDir: state, Period: time.Second, Cluster: "local", CPUs: 2, MemoryMiB: 1024, Log: log.New(io.Discard, "", 0)}
	o, err := Open(opt)
	require.NoError(t, err)
	require.NoError(t, o.records.put(Submission{Name: "a", Command: []string{"true"}, User: "u", Account: "lab", CPUs: 2, TimeLimit: "1h"}))
	t1 := o.now()
	_, err = o.ingest(t1)
	require.NoError(t, err)
	cyc, err := o.s.Schedule(t1)
	require.NoError(t, err)
	require.Len(t, cyc.Starts, 1)
	require.NoError(t, o.rec.Observe(t1, cyc))
	j, _ := o.s.Job(cyc.Starts[0].Job)
	t2 := t1.Add(90 * time.Second)
	require.NoError(t, o.requeue(t2, j, runKey(j), nil))
	o.Close() // dies here: the requeue is journalled, not observed

	charged := func() (accounting.JobRecord, float64) {
		o, err := Open(opt)
		require.NoError(t, err)
		defer o.Close()
		var r accounting.JobRecord
		var u accounting.Usage
		require.NoError(t, o.ledger.View(func(tx accounting.Tx) error {
			if r, err = tx.Job(accounting.JobID(j.ID)); err != nil {
				return err
			}
			a, err := tx.LookupAssoc(accounting.AssocKey{Cluster: "local", Account: "lab", User: "u"})
			if err != nil {
				return err
			}
			u, err = tx.Usage(a.ID, t2)
			return err
		}))
		return r, u.BudgetBilling
	}
	for range 2 {
		r, billing := charged()
		assert.Equal(t, accounting.StateRequeued, r.State)
		assert.Equal(t, t2.Unix(), r.End.Unix(), "ended at the requeue")
		assert.InDelta(t, float64(2*(t2.Unix()-t1.Unix())), billing, 1e-9, "2 CPUs charged from start to requeue, once")
	}
}

// openQuiet opens an orchestrator on a fresh state directory, whose
// shims are this test binary.
func openQuiet(t *testing.T, cpus int) *Orchestrator {
	t.Helper()
	t.Setenv(mainEnv, "1")
	o, err := Open(Options{StateDir: t.TempDir(), Period: time.Second, Cluster: "local", CPUs: cpus, MemoryMiB: 1024,
		Log: log.New(io.Discard, "", 0)})
	require.NoError(t, err)
	t.Cleanup(o.Close)
	return o
}

// stepUntil runs cycles until cond holds.
func stepUntil(t *testing.T, o *Orchestrator, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := o.Step()
		require.NoError(t, err)
		return cond()
	}, 20*time.Second, 20*time.Millisecond, what)
}

// submitSleeper submits job name, a shell that writes its pid to a file
// and sleeps a minute, and returns the file.
func submitSleeper(t *testing.T, o *Orchestrator, name, limit string) string {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	require.NoError(t, o.records.put(Submission{Name: name, User: "u", Account: "lab", CPUs: 1, TimeLimit: limit,
		Command: []string{"sh", "-c", "echo $$ > " + pidFile + "; exec sleep 60"}}))
	return pidFile
}

// checkKilled checks that the process whose pid is in pidFile dies, that
// the run is forgotten, and that the ledger records job id in state st.
func checkKilled(t *testing.T, o *Orchestrator, pidFile string, id scheduler.JobID, st accounting.JobState) {
	t.Helper()
	pid := readInt(t, pidFile)
	require.Eventually(t, func() bool { return unix.Kill(pid, 0) == unix.ESRCH }, 20*time.Second, 10*time.Millisecond,
		"the run is killed")
	stepUntil(t, o, "the run is forgotten", func() bool {
		keys, err := o.agent.Runs()
		require.NoError(t, err)
		return len(keys) == 0
	})
	require.NoError(t, o.ledger.View(func(tx accounting.Tx) error {
		r, err := tx.Job(accounting.JobID(id))
		require.NoError(t, err)
		assert.Equal(t, st, r.State)
		return nil
	}))
}

// TestOrchestratorKillsRunAtTimeLimit: a job the cycle ends at its time
// limit is killed (its process group SIGKILLed), recorded TIMEOUT in the
// ledger, and its run forgotten.
func TestOrchestratorKillsRunAtTimeLimit(t *testing.T) {
	needShell(t)
	o := openQuiet(t, 1)
	pidFile := submitSleeper(t, o, "long", "1s")
	stepUntil(t, o, "the job times out", func() bool {
		j, ok := o.s.Job(o.names["long"])
		return ok && j.State == scheduler.JobTimeout
	})
	checkKilled(t, o, pidFile, o.names["long"], accounting.StateTimeout)
}

// TestOrchestratorCancelKillsRun: the cancel subcommand's request
// cancels a running job, whose run is killed and forgotten, and the
// ledger records it CANCELLED; the request is consumed.
func TestOrchestratorCancelKillsRun(t *testing.T) {
	needShell(t)
	o := openQuiet(t, 1)
	pidFile := submitSleeper(t, o, "victim", "1h")
	stepUntil(t, o, "the job runs", func() bool { b, _ := os.ReadFile(pidFile); return len(b) > 0 })
	require.NoError(t, command([]string{"cancel", "-state", o.opt.StateDir, "victim"}, io.Discard, io.Discard))
	_, err := o.Step()
	require.NoError(t, err)
	j, _ := o.s.Job(o.names["victim"])
	assert.Equal(t, scheduler.JobCancelled, j.State)
	reqs, err := o.records.cancels()
	require.NoError(t, err)
	assert.Empty(t, reqs)
	checkKilled(t, o, pidFile, j.ID, accounting.StateCancelled)
}

// TestOpenFailureReleasesState: an Open that fails (here: the state
// directory is in use) returns an error, not a panic, and leaves the
// directory usable once the other orchestrator is gone.
func TestOpenFailureReleasesState(t *testing.T) {
	o := openQuiet(t, 1)
	opt := o.opt
	_, err := Open(opt)
	require.ErrorContains(t, err, "in use")
	o.Close()
	o2, err := Open(opt)
	require.NoError(t, err)
	o2.Close()
}

// TestJournalSnapshotKeepsStateAndClock: an orchestrator that compacts
// its journal after every cycle recovers, from the snapshot alone, the
// same jobs and the time of the last event (its clock's floor).
func TestJournalSnapshotKeepsStateAndClock(t *testing.T) {
	o := openQuiet(t, 1)
	o.opt.SnapshotEvery = 1
	require.NoError(t, o.records.put(Submission{Name: "a", Command: []string{"true"}, User: "u", Account: "lab", CPUs: 1, TimeLimit: "1h"}))
	require.NoError(t, o.records.put(Submission{Name: "b", Command: []string{"true"}, User: "u", Account: "lab", CPUs: 1, TimeLimit: "1h"}))
	_, err := o.ingest(o.now())
	require.NoError(t, err)
	_, err = o.s.Schedule(o.now())
	require.NoError(t, err)
	require.NoError(t, o.journal.compact(o.s, 1))
	st, err := o.journal.Stats()
	require.NoError(t, err)
	require.Equal(t, st.LastSeq, st.SnapshotSeq, "compacted")
	want, last := o.s.Jobs(), o.journal.Last()
	opt := o.opt
	o.Close()

	s, l, err := openJournal(filepath.Join(opt.StateDir, "journal"), clusterConfig{Cluster: "local", CPUs: 1, MemoryMiB: 1024}.schedulerConfig())
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, want, s.Jobs())
	assert.True(t, last.Equal(l.Last()), "last event at %s, recovered %s", last, l.Last())
}
