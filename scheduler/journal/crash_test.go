package journal_test

import (
	"bufio"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler/journal"
)

var crashIterations = flag.Int("crash.iterations", 6, "SIGKILL iterations of TestJournalCrashRecovery")

const (
	crashEnv   = "SLUICE_JOURNAL_CRASH_CHILD" // the journal directory
	crashSeed  = 42                           // the workload every child continues
	crashSnaps = 700                          // a child snapshots every crashSnaps events
	crashAfter = 150                          // events compared after each recovery
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		if err := crashChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashChild recovers the journal in dir and continues the workload from
// there, forever: it prints "ready N" once recovered to event N, then
// "ack N" after each event N is applied, and snapshots now and then.
func crashChild(dir string) error {
	j, err := journal.Open(dir, journal.Options{})
	if err != nil {
		return err
	}
	s, rep, err := j.Recover(recoverOpts)
	if err != nil {
		return err
	}
	w := &workload{seed: crashSeed, k: rep.LastSeq}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "ready %d\n", rep.LastSeq)
	if err := out.Flush(); err != nil {
		return err
	}
	for {
		if _, err := w.step(s); err != nil {
			return err
		}
		seq := j.LastSeq()
		if seq != w.k {
			return fmt.Errorf("event %d got sequence number %d", w.k, seq)
		}
		fmt.Fprintf(out, "ack %d\n", seq)
		if err := out.Flush(); err != nil {
			return err
		}
		if w.k%crashSnaps == 0 {
			if _, err := j.WriteSnapshot(s); err != nil {
				return err
			}
		}
	}
}

// crashPoint is what the parent saw after one kill.
type crashPoint struct {
	seq    uint64   // the last event the recovered state includes
	digest [32]byte // of the recovered state
	next   []string // the recovered scheduler's decisions for the next crashAfter events
}

// TestJournalCrashRecovery kills a process that journals a seeded random
// event sequence (submits, finishes, cancels, requeues, node drains,
// downs and resumes, device health, Schedule cycles, and snapshots that
// compact the journal) with SIGKILL at random points, each time letting
// the next process recover and carry on. After each kill it recovers the
// journal itself and checks that the recovered state is the state after
// the acknowledged events (or after one more: the event in flight, which
// may have been written), and, against one uninterrupted run of the same
// sequence, that the recovered state equals that run's at the same event
// and that the decisions from there on are the same.
func TestJournalCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 7))
	var points []crashPoint
	var acked, recovered uint64
	for it := range *crashIterations {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		out := bufio.NewScanner(stdout)
		watchdog := time.AfterFunc(time.Minute, func() { _ = cmd.Process.Kill() })
		ready := out.Scan()
		watchdog.Stop()
		require.True(t, ready, "the child did not get ready: %s", stderr.String())
		require.Equal(t, fmt.Sprintf("ready %d", recovered), out.Text(), "the child recovers what the parent did")
		// Kill it at a random point while it runs; read its
		// acknowledgements until its stdout closes.
		killed := make(chan error, 1)
		time.AfterFunc(time.Duration(30+rng.IntN(400))*time.Millisecond, func() {
			killed <- cmd.Process.Signal(syscall.SIGKILL)
		})
		for out.Scan() {
			n, ok := strings.CutPrefix(out.Text(), "ack ")
			require.True(t, ok, out.Text())
			v, err := strconv.ParseUint(n, 10, 64)
			require.NoError(t, err)
			require.Equal(t, acked+1, v, "acknowledgements in order")
			acked = v
		}
		killErr := <-killed
		_ = cmd.Wait()
		require.NotContains(t, stderr.String(), "crash child:", "the child failed by itself")
		require.NoError(t, killErr)

		p, torn := recoverCrashed(t, dir)
		require.True(t, p.seq == acked || p.seq == acked+1,
			"recovered to event %d; %d were acknowledged", p.seq, acked)
		t.Logf("iteration %d: %d acknowledged, recovered %d (torn tail: %v)", it, acked, p.seq, torn)
		points = append(points, p)
		acked, recovered = p.seq, p.seq // the event in flight, if it was written, is now part of the history
	}
	require.Greater(t, recovered, uint64(crashSnaps), "the children snapshotted")

	// One uninterrupted run of the same sequence: its state at each
	// recovered event, and its decisions after it.
	ref, err := newScheduler()
	require.NoError(t, err)
	w := newWorkload(crashSeed)
	digests := map[uint64][32]byte{0: sha256.Sum256([]byte(digest(ref)))}
	decisions := []string{""} // decisions[k] is event k's
	for w.k < recovered+crashAfter {
		d, err := w.step(ref)
		require.NoError(t, err)
		decisions = append(decisions, d)
		for _, p := range points {
			if p.seq == w.k {
				digests[w.k] = sha256.Sum256([]byte(digest(ref)))
			}
		}
	}
	for _, p := range points {
		require.Equal(t, digests[p.seq], p.digest, "the state recovered at event %d", p.seq)
		require.Equal(t, decisions[p.seq+1:p.seq+1+crashAfter], p.next, "the decisions after event %d", p.seq)
	}
}

// recoverCrashed recovers the journal in dir, digests the state, and runs
// the next crashAfter events on the recovered scheduler (not journalled).
func recoverCrashed(t *testing.T, dir string) (crashPoint, *journal.Torn) {
	t.Helper()
	j, err := journal.Open(dir, journal.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, j.Close()) }()
	s, rep, err := j.Recover(recoverOpts)
	require.NoError(t, err)
	s.SetEventLog(nil)
	p := crashPoint{seq: rep.LastSeq, digest: sha256.Sum256([]byte(digest(s)))}
	p.next = run(t, &workload{seed: crashSeed, k: rep.LastSeq}, s, crashAfter)
	return p, rep.Torn
}
