package accounting

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/telemetry"
)

// fuzzLedger is a memory ledger with a few interned strings, for decoders.
func fuzzLedger(t testing.TB) *kvLedger {
	l, err := newKVLedger(NewMemoryBackend(), Config{})
	require.NoError(t, err)
	for _, s := range []string{"c", "alice", "phys", "cpu", "gres/gpu", "gpu01"} {
		l.strs = append(l.strs, s)
		l.ids[s] = uint32(len(l.strs))
	}
	return l
}

// FuzzDecodeRecords feeds arbitrary bytes to every binary decoder: they
// must return a value or ErrCorrupt, never panic or allocate without
// bound.
func FuzzDecodeRecords(f *testing.F) {
	l := fuzzLedger(f)
	tx := &kvTx{l: l}
	j := JobRecord{ID: 7, Cluster: "c", User: "alice", Account: "phys", Submit: time.Unix(1e9, 0), Start: time.Unix(1e9+5, 0),
		End: time.Unix(1e9+99, 0), State: StateCompleted, AllocTRES: TRES{"cpu": 4}, GPUs: []NodeGPUs{{Node: "gpu01", Indices: []int{1}}}}
	wtx := &kvTx{l: l, w: nil}
	// Encoding needs a writable tx only for new strings; all are interned.
	jv, err := wtx.encodeJob(&j, []AssocID{3, 2, 1})
	require.NoError(f, err)
	f.Add([]byte(jv))
	j.Usage = telemetry.Usage{Samples: 2, First: j.Start, Last: j.End, GPUSeconds: 10, BusyGPUSeconds: 5, EnergyJoules: 9}
	j.LaunchAttempts, j.LostGPUSeconds, j.Quality = 2, 1, 0.5
	jv2, err := wtx.encodeJob(&j, []AssocID{3, 2, 1})
	require.NoError(f, err)
	f.Add([]byte(jv2))
	f.Add([]byte{codecVersion, 0, 1, 5})
	f.Add([]byte{codecVersion, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		v := string(b)
		_, _, err := tx.decodeJob("j:0000000000000007", v)
		checkCorrupt(t, err)
		_, err = tx.decodePack("rh:00000001:0000000000", v)
		checkCorrupt(t, err)
		_, err = tx.decodeUsage("u:00000001", v)
		checkCorrupt(t, err)
		_, err = tx.decodeDecision("d:00000000010000000000000001", v)
		checkCorrupt(t, err)
		_, err = tx.decodeStep("st:0000000000000007:batch", v)
		checkCorrupt(t, err)
	})
}

func checkCorrupt(t *testing.T, err error) {
	if err != nil {
		assert.ErrorIs(t, err, ErrCorrupt)
	}
}

// FuzzScanFile runs the file scanner (and repair's parser) on arbitrary
// bytes: an error or a result, never a panic; a reported commit offset
// lies inside the file.
func FuzzScanFile(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.db")
	l, err := OpenBunt(path, Config{}, BuntOptions{})
	require.NoError(f, err)
	require.NoError(f, l.Update(func(tx Tx) error {
		_, err := tx.PutAssoc(time.Unix(1e9, 0), Assoc{AssocKey: AssocKey{Cluster: "c", Account: "a"}})
		return err
	}))
	require.NoError(f, l.Close())
	seed, err := os.ReadFile(path)
	require.NoError(f, err)
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte("*3\r\n$3\r\nset\r\n$9999999999\r\n"))
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := scanLog("f.db", bytes.NewReader(b), int64(len(b)))
		if err == nil {
			assert.LessOrEqual(t, res.committed, int64(len(b)))
		}
		for off := 0; off < len(b); {
			c, err := parseCmd(b[off:])
			if err != nil {
				break
			}
			require.Positive(t, c.size)
			off += int(c.size)
		}
		_ = hasCommitAfter(b)
	})
}

func FuzzReadArchive(f *testing.F) {
	f.Add([]byte(`{"job":{"job_id":1,"cluster":"c","user":"u","account":"a","assoc":1,"submit":"2024-01-01T00:00:00Z","state":"PENDING"}}` + "\n"))
	f.Add([]byte("{\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := ReadArchive(bytes.NewReader(b), func(a ArchivedJob) bool {
			require.NoError(t, a.Job.Validate())
			return true
		})
		if err != nil && !bytes.Contains(b, []byte("\n")) && len(b) > 64<<20 {
			t.Fatal(err)
		}
	})
}

// TestRollupsDST checks hour buckets in a zone with DST changes: Totals
// over local-hour-aligned ranges equal a brute-force sum.
func TestRollupsDST(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	led, err := NewMemory(Config{Location: ny})
	require.NoError(t, err)
	start := time.Date(2024, 3, 5, 0, 0, 0, 0, ny) // DST starts 10 March, ends 3 November
	rng := rand.New(rand.NewPCG(5, 6))
	type span struct{ s, e time.Time }
	var spans []span
	var user Assoc
	require.NoError(t, led.Update(func(tx Tx) error {
		if _, err := tx.PutAssoc(start, Assoc{AssocKey: AssocKey{Cluster: "c", Account: "a"}}); err != nil {
			return err
		}
		var err error
		if user, err = tx.PutAssoc(start, Assoc{AssocKey: AssocKey{Cluster: "c", Account: "a", User: "u"}}); err != nil {
			return err
		}
		for i := range 200 {
			base := start
			if i%2 == 1 {
				base = time.Date(2024, 10, 30, 0, 0, 0, 0, ny)
			}
			s := base.Add(time.Duration(rng.IntN(10*86400)) * time.Second)
			e := s.Add(time.Duration(rng.IntN(20*3600)) * time.Second)
			spans = append(spans, span{s, e})
			if err := tx.PutJob(JobRecord{ID: JobID(i + 1), Cluster: "c", Assoc: user.ID, Submit: s, Start: s, End: e,
				State: StateCompleted, AllocTRES: TRES{"cpu": 1}}); err != nil {
				return err
			}
		}
		return nil
	}))
	c := cal{ny}
	require.NoError(t, led.View(func(tx Tx) error {
		for range 200 {
			base := start
			if rng.IntN(2) == 1 {
				base = time.Date(2024, 10, 30, 0, 0, 0, 0, ny)
			}
			from := time.Unix(c.hourStart(base.Add(time.Duration(rng.IntN(12*86400))*time.Second).Unix()), 0)
			to := from.Add(time.Duration(rng.IntN(6*86400)) * time.Second)
			to = time.Unix(c.hourStart(to.Unix()), 0)
			var want int64
			for _, s := range spans {
				lo, hi := max(s.s.Unix(), from.Unix()), min(s.e.Unix(), to.Unix())
				want += max(0, hi-lo)
			}
			tot, err := tx.Totals(user.ID, from, to)
			require.NoError(t, err)
			require.Equal(t, want, tot.TRESSeconds["cpu"], "[%v, %v)", from.In(ny), to.In(ny))
		}
		return nil
	}))
}
