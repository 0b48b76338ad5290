package ledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/ledger"
)

// Each component of a heterogeneous job has its own accounting record
// (sacct lists 123+0 and 123+1), with the het job's ID and its offset.
func TestRecorderWritesHetJobComponents(t *testing.T) {
	l, err := accounting.NewMemory(accounting.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	putAssocs(t, l, t0, accounting.Assoc{AssocKey: key("physics", "")}, accounting.Assoc{AssocKey: key("physics", "ann")})
	cfg := clustertest.Mixed4()
	cfg.Backfill = &backfill.Config{}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	rec, err := ledger.NewRecorder(t0, l, "c", s, ledger.Options{})
	require.NoError(t, err)
	ids, err := s.SubmitHet(t0, []scheduler.JobSpec{
		{Name: "het", User: "ann", Account: "physics", Partition: "h100", TimeLimit: time.Hour, Tasks: 8},
		{Name: "het", User: "ann", Account: "physics", GRESPerNode: []gres.Request{{Name: "gpu", Type: "a100", Count: 2}}, TimeLimit: time.Hour},
	})
	require.NoError(t, err)
	cyc, err := s.Schedule(t0)
	require.NoError(t, err)
	require.Len(t, cyc.Starts, 2)
	require.NoError(t, rec.Observe(t0, cyc))
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		for k, id := range ids {
			j, err := tx.Job(accounting.JobID(id))
			require.NoError(t, err)
			assert.Equal(t, accounting.JobID(ids[0]), j.HetJobID)
			assert.Equal(t, uint32(k), j.HetJobOffset)
			assert.Equal(t, t0, j.Start)
			assert.Equal(t, []string{"SchedBackfill"}, j.Flags)
		}
		return nil
	}))
}
