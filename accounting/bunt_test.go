package accounting_test

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
)

var crashIterations = flag.Int("crash.iterations", 5, "SIGKILL crash-test iterations (TestBuntCrash)")

const crashEnv = "SLUICE_LEDGER_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnv); path != "" {
		if err := crashChild(path); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var base = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

// crashJob is job id's record, a pure function of id so the parent can
// check every acknowledged record byte for byte.
func crashJob(id accounting.JobID, assoc accounting.AssocID) accounting.JobRecord {
	start := base.Add(time.Duration(id) * 37 * time.Second)
	return accounting.JobRecord{ID: id, Cluster: "c", Assoc: assoc, Account: "acct", User: "u" + strconv.Itoa(int(id%3)),
		Partition: "p", QOS: "normal", Name: "job-" + strconv.Itoa(int(id)), Submit: start.Add(-time.Minute), Start: start,
		End: start.Add(time.Duration(1+id%97) * time.Minute), State: accounting.StateCompleted, ExitCode: int(id % 7),
		AllocTRES: accounting.TRES{"cpu": int64(1 + id%16), "billing": int64(1 + id%16)}, NodeList: "n" + strconv.Itoa(int(id%100))}
}

func crashSetup(tx accounting.Tx) (map[string]accounting.AssocID, error) {
	ids := map[string]accounting.AssocID{}
	for _, u := range []string{"u0", "u1", "u2"} {
		if _, err := tx.PutAssoc(base, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "c", Account: "acct"}}); err != nil {
			return nil, err
		}
		a, err := tx.PutAssoc(base, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "c", Account: "acct", User: u}})
		if err != nil {
			return nil, err
		}
		ids[u] = a.ID
	}
	return ids, nil
}

func crashOpts() accounting.BuntOptions {
	// Small compaction thresholds so compactions happen (and get killed).
	return accounting.BuntOptions{CompactMinSize: 256 << 10, CompactRatio: 1.5}
}

// crashChild appends batches of jobs, charges and decisions forever,
// printing "ack N" after each Update returns: jobs 1..N are durable.
func crashChild(path string) error {
	l, err := accounting.OpenBunt(path, accounting.Config{NoDecay: true}, crashOpts())
	if err != nil {
		return err
	}
	var ids map[string]accounting.AssocID
	next := accounting.JobID(1)
	err = l.Update(func(tx accounting.Tx) error {
		var err error
		if ids, err = crashSetup(tx); err != nil {
			return err
		}
		return tx.Jobs(accounting.JobQuery{}, func(j accounting.JobRecord) bool { next = max(next, j.ID+1); return true })
	})
	if err != nil {
		return err
	}
	seed, _ := strconv.ParseUint(os.Getenv(crashEnv+"_SEED"), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 1))
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "ready %d\n", next-1)
	out.Flush()
	for {
		n := 1 + rng.IntN(40)
		first := next
		err := l.Update(func(tx accounting.Tx) error {
			for id := first; id < first+accounting.JobID(n); id++ {
				j := crashJob(id, ids["u"+strconv.Itoa(int(id%3))])
				if err := tx.PutJob(j); err != nil {
					return err
				}
				if err := tx.Charge(accounting.Charge{Assoc: j.Assoc, QOS: j.QOS, TRES: j.AllocTRES, From: j.Start, To: j.End}); err != nil {
					return err
				}
				if _, err := tx.PutDecision(accounting.Decision{Kind: accounting.DecisionStart, Time: j.Start, Job: id,
					Priority: float64(id), Factors: map[string]float64{"age": float64(id % 10)}}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		next = first + accounting.JobID(n)
		fmt.Fprintf(out, "ack %d\n", next-1)
		out.Flush()
	}
}

// TestBuntCrash kills a writer with SIGKILL at random points (including
// during automatic compactions) and checks, after each kill, that every
// acknowledged transaction is there, intact, and that no transaction is
// half there. Run more iterations with -crash.iterations=N.
func TestBuntCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	rng := rand.New(rand.NewPCG(42, 42))
	var acked accounting.JobID
	for it := range *crashIterations {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashEnv+"="+path, crashEnv+"_SEED="+strconv.Itoa(it))
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Wait until the child is writing, then kill it at a random point.
		select {
		case l, ok := <-lines:
			require.True(t, ok, "child exited early: %s", stderr.String())
			require.True(t, strings.HasPrefix(l, "ready"), l)
		case <-time.After(30 * time.Second):
			t.Fatal("child did not start")
		}
		time.Sleep(time.Duration(20+rng.IntN(300)) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		for l := range lines {
			if n, ok := strings.CutPrefix(l, "ack "); ok {
				v, err := strconv.ParseUint(n, 10, 64)
				require.NoError(t, err)
				acked = max(acked, accounting.JobID(v))
			}
		}
		_ = cmd.Wait()
		require.NotContains(t, stderr.String(), "crash child:", "the child failed by itself")
		last := checkCrashLedger(t, path, acked)
		t.Logf("iteration %d: %d acknowledged, %d present", it, acked, last)
		acked = last // the in-flight batch, if it made it, is now durable
	}
}

func checkCrashLedger(t *testing.T, path string, acked accounting.JobID) accounting.JobID {
	t.Helper()
	l, err := accounting.OpenBunt(path, accounting.Config{NoDecay: true}, crashOpts())
	require.NoError(t, err)
	defer l.Close()
	var last accounting.JobID
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		root, err := tx.LookupAssoc(accounting.AssocKey{Cluster: "c", Account: accounting.RootAccount})
		require.NoError(t, err)
		var wantCPU int64
		var wantRaw float64
		n := accounting.JobID(0)
		err = tx.Jobs(accounting.JobQuery{}, func(j accounting.JobRecord) bool {
			n++
			require.Equal(t, n, j.ID, "no gaps: job IDs are 1..N")
			want := crashJob(j.ID, j.Assoc)
			want.Assoc = j.Assoc
			require.Equal(t, want.AllocTRES, j.AllocTRES)
			require.Equal(t, want.Name, j.Name)
			require.Equal(t, want.End.Unix(), j.End.Unix())
			require.Equal(t, want.ExitCode, j.ExitCode)
			wantCPU += j.AllocTRES["cpu"] * int64(j.End.Sub(j.Start)/time.Second)
			wantRaw += float64(j.AllocTRES["billing"]) * j.End.Sub(j.Start).Seconds()
			return true
		})
		require.NoError(t, err)
		last = n
		require.GreaterOrEqual(t, last, acked, "every acknowledged job survives")
		require.LessOrEqual(t, last, acked+40, "at most the batch in flight is extra")
		tot, err := tx.Totals(root.ID, base.Add(-24*time.Hour), base.AddDate(1, 0, 0))
		require.NoError(t, err)
		require.Equal(t, wantCPU, tot.TRESSeconds["cpu"], "rollups match the job records: no half transaction")
		require.Equal(t, int64(last), tot.Jobs)
		u, err := tx.Usage(root.ID, base.AddDate(1, 0, 0))
		require.NoError(t, err)
		require.InDelta(t, wantRaw, u.Raw, 1e-6*wantRaw+1e-9, "usage matches the job records")
		var decisions int
		require.NoError(t, tx.Decisions(accounting.DecisionQuery{}, func(accounting.Decision) bool { decisions++; return true }))
		require.Equal(t, int(last), decisions)
		return nil
	}))
	return last
}

// buildFile writes a ledger of n single-job transactions and returns the
// file size after each commit.
func buildFile(t *testing.T, path string, n int) []int64 {
	t.Helper()
	l, err := accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{NoAutoCompact: true})
	require.NoError(t, err)
	var ids map[string]accounting.AssocID
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		var err error
		ids, err = crashSetup(tx)
		return err
	}))
	var sizes []int64
	for id := accounting.JobID(1); id <= accounting.JobID(n); id++ {
		require.NoError(t, l.Update(func(tx accounting.Tx) error {
			return tx.PutJob(crashJob(id, ids["u"+strconv.Itoa(int(id%3))]))
		}))
		sz, err := l.FileSize()
		require.NoError(t, err)
		sizes = append(sizes, sz)
	}
	require.NoError(t, l.Close())
	return sizes
}

func jobCount(t *testing.T, l accounting.Ledger) int {
	var n int
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		return tx.Jobs(accounting.JobQuery{}, func(accounting.JobRecord) bool { n++; return true })
	}))
	return n
}

func copyFile(t *testing.T, src, dst string) {
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, b, 0o644))
}

func TestBuntTruncation(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.db")
	sizes := buildFile(t, orig, 30)
	full := sizes[len(sizes)-1]
	rng := rand.New(rand.NewPCG(3, 4))
	offsets := []int64{sizes[0], sizes[10], sizes[10] + 1, full - 1, sizes[0] - 1}
	for range 20 {
		offsets = append(offsets, sizes[0]+rng.Int64N(full-sizes[0]))
	}
	for _, off := range offsets {
		path := filepath.Join(dir, fmt.Sprintf("trunc-%d.db", off))
		copyFile(t, orig, path)
		require.NoError(t, os.Truncate(path, off))
		want := 0
		boundary := off < sizes[0]
		for _, s := range sizes {
			if s <= off {
				want++
			}
			boundary = boundary || s == off
		}
		// StrictTail refuses a torn tail, naming the file and offset.
		sl, err := accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{StrictTail: true})
		if boundary {
			if err == nil {
				require.NoError(t, sl.Close())
			}
		} else {
			var ce *accounting.CorruptError
			require.ErrorAs(t, err, &ce, "offset %d", off)
			assert.ErrorIs(t, err, accounting.ErrTruncated)
			assert.ErrorIs(t, err, accounting.ErrCorrupt)
			assert.Equal(t, path, ce.Path)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), "byte offset")
		}
		// The default recovers: every transaction that ends before the
		// cut is there, nothing after it.
		l, err := accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{})
		if off < sizes[0] && off <= 0 {
			require.NoError(t, err)
		}
		if err != nil && off < sizes[0] {
			// Cut inside the setup transaction: nothing committed but the
			// schema, or not even that.
			t.Logf("offset %d: %v", off, err)
			continue
		}
		require.NoError(t, err, "offset %d", off)
		assert.Equal(t, want, jobCount(t, l), "offset %d", off)
		if !boundary {
			assert.Positive(t, l.Recovery().Dropped)
		}
		require.NoError(t, l.Close())
	}
}

func TestBuntCorruptionAndRepair(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	sizes := buildFile(t, path, 40)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	// Flip a byte inside job 20's transaction (its record value).
	flip := sizes[18] + (sizes[19]-sizes[18])/2
	data[flip] ^= 0x40
	require.NoError(t, os.WriteFile(path, data, 0o644))

	_, err = accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{})
	require.ErrorIs(t, err, accounting.ErrCorrupt)
	var ce *accounting.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, path, ce.Path)
	assert.LessOrEqual(t, ce.Offset, flip)
	assert.GreaterOrEqual(t, ce.Offset, sizes[18])
	assert.Contains(t, err.Error(), fmt.Sprintf("%s at byte offset %d", path, ce.Offset))

	rep, err := accounting.RepairBunt(path)
	require.NoError(t, err)
	require.NotEmpty(t, rep.Damaged)
	assert.LessOrEqual(t, rep.Damaged[0].Offset, flip)
	assert.Greater(t, rep.Damaged[0].Offset+rep.Damaged[0].Length, flip)
	assert.FileExists(t, rep.Backup)
	l, err := accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{})
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		for id := accounting.JobID(1); id <= 40; id++ {
			j, err := tx.Job(id)
			if errors.Is(err, accounting.ErrNotFound) {
				assert.Equal(t, accounting.JobID(20), id, "only the damaged record is lost")
				continue
			}
			require.NoError(t, err)
			assert.Equal(t, crashJob(id, j.Assoc).Name, j.Name)
		}
		return nil
	}))
}

func TestBuntGarbageTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	buildFile(t, path, 5)
	for name, tail := range map[string][]byte{"zeros": make([]byte, 4096), "garbage": []byte("*3\r\n$3\r\nset\r\n$1\r\nx\r\n$99\r\nabc")} {
		p := filepath.Join(dir, name+".db")
		copyFile(t, path, p)
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.Write(tail)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		l, err := accounting.OpenBunt(p, accounting.Config{}, accounting.BuntOptions{})
		require.NoError(t, err, name)
		assert.Equal(t, int64(len(tail)), l.Recovery().Dropped, name)
		assert.Equal(t, 5, jobCount(t, l))
		require.NoError(t, l.Close())
	}
}

func TestBuntNotALedger(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"text":   "hello, world\n",
		"buntdb": "*3\r\n$3\r\nset\r\n$3\r\nkey\r\n$5\r\nvalue\r\n",
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		_, err := accounting.OpenBunt(p, accounting.Config{}, accounting.BuntOptions{})
		assert.ErrorIs(t, err, accounting.ErrSchemaVersion, name)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, content, string(b), "%s: the file is left alone", name)
	}
}

func TestBuntSchemaVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{})
	require.NoError(t, err)
	require.NoError(t, l.Close())
	b, err := accounting.OpenBuntBackend(path, accounting.BuntOptions{})
	require.NoError(t, err)
	require.NoError(t, b.Update(func(w accounting.KVWriter) error { return w.Set("m:schema", "99") }))
	require.NoError(t, b.Close())
	_, err = accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{})
	require.ErrorIs(t, err, accounting.ErrSchemaVersion)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), `"99"`)
}

func TestBuntLockAndCompact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	sizes := buildFile(t, path, 50)
	l, err := accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{NoAutoCompact: true})
	require.NoError(t, err)
	_, err = accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{})
	assert.ErrorIs(t, err, accounting.ErrLocked, "one process at a time")
	// Rewrite the same jobs so the log holds garbage, then compact.
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		for id := accounting.JobID(1); id <= 50; id++ {
			j, err := tx.Job(id)
			if err != nil {
				return err
			}
			if err := tx.PutJob(j); err != nil {
				return err
			}
		}
		return nil
	}))
	before, err := l.FileSize()
	require.NoError(t, err)
	require.NoError(t, l.Compact())
	after, err := l.FileSize()
	require.NoError(t, err)
	assert.Less(t, after, before)
	assert.LessOrEqual(t, after, sizes[len(sizes)-1])
	assert.Equal(t, 50, jobCount(t, l))
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		j, err := tx.Job(1)
		if err != nil {
			return err
		}
		j.ID = 51
		return tx.PutJob(j)
	}), "writes continue after compaction")
	require.NoError(t, l.Close())
	l2, err := accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{StrictTail: true})
	require.NoError(t, err)
	assert.Equal(t, 51, jobCount(t, l2))
	require.NoError(t, l2.Close())
}

// TestBuntCompactionFailure: an automatic compaction that fails does not
// fail the (already durable) Update that triggered it; Err reports it.
func TestBuntCompactionFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{CompactMinSize: 1, CompactRatio: 1.01})
	require.NoError(t, err)
	defer l.Close()
	var ids map[string]accounting.AssocID
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		ids, err = crashSetup(tx)
		return err
	}))
	// A directory where the compaction's temporary file goes makes it fail.
	require.NoError(t, os.Mkdir(path+".compact", 0o755))
	for id := accounting.JobID(1); id <= 20; id++ {
		require.NoError(t, l.Update(func(tx accounting.Tx) error {
			return tx.PutJob(crashJob(id, ids["u"+strconv.Itoa(int(id%3))]))
		}))
	}
	assert.Error(t, l.Err())
	assert.Equal(t, 20, jobCount(t, l))
	require.NoError(t, os.Remove(path+".compact"))
	require.NoError(t, l.Compact())
	assert.NoError(t, l.Err())
	assert.Equal(t, 20, jobCount(t, l))
}
