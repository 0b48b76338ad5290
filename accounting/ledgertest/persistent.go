package ledgertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/telemetry"
)

// RunPersistent checks that a durable implementation keeps everything
// across Close and reopen, and checks its configuration on reopen.
func RunPersistent(t *testing.T, open Reopener) {
	t.Run("ReopenKeepsEverything", func(t *testing.T) {
		dir := t.TempDir()
		cfg := accounting.Config{NoDecay: true}
		l, err := open(t, dir, cfg)
		require.NoError(t, err)
		tr := buildTree(t, l, t0)
		full := goodputJob(1, tr.bob, t0.Add(time.Hour)) // with usage and launch counts
		full.GPUs = []accounting.NodeGPUs{{Node: "gpu7", Indices: []int{1, 3}}}
		update(t, l, func(tx accounting.Tx) error {
			require.NoError(t, tx.PutJob(full))
			require.NoError(t, tx.PutStep(accounting.StepRecord{Job: 1, Step: "batch", Start: full.Start,
				Usage: telemetry.Usage{Samples: 1, First: full.Start, Last: full.Start, HostSamples: 1, CPUSeconds: 2.5}}))
			require.NoError(t, tx.Charge(accounting.Charge{Assoc: tr.bob.ID, QOS: "q", TRES: accounting.TRES{"cpu": 2}, From: t0, To: t0.Add(time.Hour)}))
			_, err := tx.PutDecision(accounting.Decision{Kind: accounting.DecisionStart, Time: full.Start, Job: 1, Factors: map[string]float64{"age": 1}})
			require.NoError(t, err)
			require.NoError(t, tx.PutNodeEvent(accounting.NodeEvent{Cluster: "c", Node: "n1", State: accounting.NodeDown, Start: t0, TRES: accounting.TRES{"cpu": 1}}))
			require.NoError(t, tx.PutCapacity(accounting.Capacity{Cluster: "c", Since: t0, TRES: accounting.TRES{"cpu": 10}}))
			_, err = tx.MoveAssoc(t0.Add(time.Hour), tr.hep.ID, tr.chem.ID)
			return err
		})
		snapshot := func(l accounting.Ledger) string {
			var s string
			view(t, l, func(tx accounting.Tx) error {
				j, err := tx.Job(1)
				require.NoError(t, err)
				st, err := tx.Steps(1)
				require.NoError(t, err)
				u, err := tx.Usage(tr.phys.ID, t0.Add(time.Hour))
				require.NoError(t, err)
				q, err := tx.QOSUsage("q", t0.Add(time.Hour))
				require.NoError(t, err)
				tot, err := tx.Totals(tr.root.ID, t0, t0.Add(24*time.Hour))
				require.NoError(t, err)
				h, err := tx.AssocHistory(tr.hep.ID)
				require.NoError(t, err)
				var ds []accounting.Decision
				require.NoError(t, tx.Decisions(accounting.DecisionQuery{Job: 1}, func(d accounting.Decision) bool { ds = append(ds, d); return true }))
				var evs []accounting.NodeEvent
				require.NoError(t, tx.NodeEvents("c", t0, t0.Add(time.Hour), func(e accounting.NodeEvent) bool { evs = append(evs, e); return true }))
				caps, err := tx.Capacities("c")
				require.NoError(t, err)
				s = fmt.Sprintf("%v|%v|%v|%v|%v|%v|%v|%v|%v", normJob(j), st, u, q, tot, h, ds, evs, caps)
				return nil
			})
			return s
		}
		before := snapshot(l)
		require.NoError(t, l.Close())
		assert.ErrorIs(t, l.View(func(accounting.Tx) error { return nil }), accounting.ErrClosed)
		l2, err := open(t, dir, cfg)
		require.NoError(t, err)
		assert.Equal(t, before, snapshot(l2))
		// Writes after reopen keep working (interned strings, sequences).
		update(t, l2, func(tx accounting.Tx) error {
			j := simpleJob(2, tr.carol, t0, time.Hour)
			j.Partition = "new-partition"
			if err := tx.PutJob(j); err != nil {
				return err
			}
			a, err := tx.PutAssoc(t0.Add(2*time.Hour), accounting.Assoc{AssocKey: key("chem", "frank")})
			require.NoError(t, err)
			assert.Greater(t, a.ID, tr.dave.ID, "assoc IDs continue after reopen")
			seq, err := tx.PutDecision(accounting.Decision{Kind: accounting.DecisionStart, Time: t0, Job: 2})
			require.NoError(t, err)
			assert.Equal(t, uint64(2), seq)
			return nil
		})
		require.NoError(t, l2.Close())
		l3, err := open(t, dir, cfg)
		require.NoError(t, err)
		view(t, l3, func(tx accounting.Tx) error {
			j, err := tx.Job(2)
			require.NoError(t, err)
			assert.Equal(t, "new-partition", j.Partition)
			return nil
		})
		require.NoError(t, l3.Close())
	})
	t.Run("LocationMismatch", func(t *testing.T) {
		dir := t.TempDir()
		l, err := open(t, dir, accounting.Config{})
		require.NoError(t, err)
		require.NoError(t, l.Close())
		_, err = open(t, dir, accounting.Config{Location: time.FixedZone("X", 3600)})
		assert.ErrorIs(t, err, accounting.ErrInvalidConfig)
	})
}

// RunBackend checks the Backend contract: ordered iteration, atomic
// commit and rollback, read-only views.
func RunBackend(t *testing.T, open func(t *testing.T) accounting.Backend) {
	b := open(t)
	t.Cleanup(func() { _ = b.Close() })
	require.NoError(t, b.Update(func(w accounting.KVWriter) error {
		for _, k := range []string{"b", "a", "c\xff", "c", "ab", "d:1", "d:2"} {
			if err := w.Set(k, "v"+k); err != nil {
				return err
			}
		}
		return w.Delete("missing")
	}))
	keys := func(from, to string) []string {
		var out []string
		require.NoError(t, b.View(func(r accounting.KVReader) error {
			return r.Ascend(from, to, func(k, v string) bool {
				assert.Equal(t, "v"+k, v)
				out = append(out, k)
				return true
			})
		}))
		return out
	}
	assert.Equal(t, []string{"a", "ab", "b", "c", "c\xff", "d:1", "d:2"}, keys("", ""))
	assert.Equal(t, []string{"ab", "b"}, keys("ab", "c"))
	assert.Equal(t, []string{"d:1", "d:2"}, keys("d:", ""))
	assert.Empty(t, keys("c", "c"))
	assert.Empty(t, keys("x", "b"))
	boom := fmt.Errorf("boom")
	err := b.Update(func(w accounting.KVWriter) error {
		require.NoError(t, w.Set("a", "changed"))
		require.NoError(t, w.Delete("b"))
		require.NoError(t, w.Set("zz", "new"))
		v, ok, err := w.Get("a")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, "changed", v, "a transaction reads its own writes")
		return boom
	})
	assert.ErrorIs(t, err, boom)
	require.NoError(t, b.View(func(r accounting.KVReader) error {
		v, ok, err := r.Get("a")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, "va", v, "rolled back")
		_, ok, err = r.Get("zz")
		require.NoError(t, err)
		assert.False(t, ok)
		_, ok, err = r.Get("b")
		require.NoError(t, err)
		assert.True(t, ok)
		if w, isW := r.(accounting.KVWriter); isW {
			assert.Error(t, w.Set("x", "y"), "views are read-only")
		}
		return nil
	}))
	big := string(make([]byte, 1<<20))
	require.NoError(t, b.Update(func(w accounting.KVWriter) error { return w.Set("big", big) }))
	require.NoError(t, b.View(func(r accounting.KVReader) error {
		v, _, err := r.Get("big")
		assert.Equal(t, big, v, "binary values round-trip")
		return err
	}))
	require.NoError(t, b.Close())
	assert.Error(t, b.View(func(accounting.KVReader) error { return nil }), "closed")
}
