package ledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/ledger"
)

// A job's licenses are part of its record's requested and allocated TRES
// (license/<name>), as in Slurm's accounting.
func TestRecordCountsLicenses(t *testing.T) {
	l, err := accounting.NewMemory(accounting.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		if _, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "c", Account: "bio"}}); err != nil {
			return err
		}
		_, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "c", Account: "bio", User: "cy"}})
		return err
	}))
	cfg := clustertest.Mixed4()
	cfg.Licenses = []scheduler.License{{Name: "matlab", Count: 4}}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	rec, err := ledger.NewRecorder(t0, l, "c", s, ledger.Options{})
	require.NoError(t, err)
	ls, err := scheduler.ParseLicenses("matlab:3")
	require.NoError(t, err)
	id, err := s.Submit(t0, scheduler.JobSpec{User: "cy", Account: "bio", CPUsPerTask: 2, TimeLimit: time.Hour, Licenses: ls})
	require.NoError(t, err)
	cyc, err := s.Schedule(t0)
	require.NoError(t, err)
	require.Len(t, cyc.Starts, 1)
	require.NoError(t, rec.Observe(t0, cyc))
	end := t0.Add(30 * time.Minute)
	require.NoError(t, s.Finish(end, id, 0))
	cyc, err = s.Schedule(end)
	require.NoError(t, err)
	require.NoError(t, rec.Observe(end, cyc))
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		r, err := tx.Job(accounting.JobID(id))
		require.NoError(t, err)
		require.Equal(t, int64(3), r.AllocTRES["license/matlab"])
		require.Equal(t, int64(3), r.ReqTRES["license/matlab"])
		return nil
	}))
}
