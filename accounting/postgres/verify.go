package postgres

import (
	"fmt"
	"maps"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// LedgerTotals are what VerifyLedgers compares: job records per cluster,
// and per association the jobs and allocated TRES-seconds of its monthly
// rollups over all time.
type LedgerTotals struct {
	Jobs  map[string]int64                         // cluster → job records
	Usage map[accounting.AssocID]accounting.Totals // From/To unset
}

// Totals reads l's LedgerTotals in one View.
func Totals(l accounting.Ledger) (LedgerTotals, error) {
	lt := LedgerTotals{Jobs: map[string]int64{}, Usage: map[accounting.AssocID]accounting.Totals{}}
	err := l.View(func(tx accounting.Tx) error {
		if err := tx.Jobs(accounting.JobQuery{}, func(j accounting.JobRecord) bool { lt.Jobs[j.Cluster]++; return true }); err != nil {
			return err
		}
		var ids []accounting.AssocID
		if err := tx.Assocs("", true, func(a accounting.Assoc) bool { ids = append(ids, a.ID); return true }); err != nil {
			return err
		}
		for _, id := range ids {
			tot := accounting.Totals{TRESSeconds: accounting.TRES{}}
			err := tx.Rollups(id, accounting.LevelMonth, time.Time{}, time.Time{}, func(r accounting.Rollup) bool {
				tot.Jobs += r.Jobs
				for k, v := range r.TRESSeconds {
					tot.TRESSeconds[k] += v
				}
				return true
			})
			if err != nil {
				return err
			}
			lt.Usage[id] = tot
		}
		return nil
	})
	return lt, err
}

// VerifyLedgers checks that dst holds the same job records per cluster
// and the same rollup totals per association as src (after Import, say),
// naming the first difference.
func VerifyLedgers(src, dst accounting.Ledger) (LedgerTotals, error) {
	want, err := Totals(src)
	if err != nil {
		return LedgerTotals{}, fmt.Errorf("verify: source: %w", err)
	}
	got, err := Totals(dst)
	if err != nil {
		return LedgerTotals{}, fmt.Errorf("verify: destination: %w", err)
	}
	if !maps.Equal(want.Jobs, got.Jobs) {
		return got, fmt.Errorf("verify: job records per cluster: source %v, destination %v", want.Jobs, got.Jobs)
	}
	if len(want.Usage) != len(got.Usage) {
		return got, fmt.Errorf("verify: source has %d associations, destination %d", len(want.Usage), len(got.Usage))
	}
	for id, w := range want.Usage {
		g, ok := got.Usage[id]
		if !ok || g.Jobs != w.Jobs || !maps.Equal(g.TRESSeconds, w.TRESSeconds) {
			return got, fmt.Errorf("verify: association %d: source rollups %d jobs %v, destination %d jobs %v", id, w.Jobs, w.TRESSeconds, g.Jobs, g.TRESSeconds)
		}
	}
	return got, nil
}
