package accounting_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
)

func TestRecordTime(t *testing.T) {
	b := accounting.NewMemoryBackend()
	l, err := accounting.New(b, accounting.Config{})
	require.NoError(t, err)
	submit := time.Date(2024, 3, 31, 23, 0, 0, 0, time.UTC)
	start := time.Date(2024, 4, 1, 1, 0, 0, 0, time.UTC)
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		if _, err := tx.PutAssoc(submit, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "c", Account: "a"}}); err != nil {
			return err
		}
		a, err := tx.PutAssoc(submit, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "c", Account: "a", User: "u"}})
		require.NoError(t, err)
		j := accounting.JobRecord{ID: 7, Cluster: "c", Assoc: a.ID, Name: "n", Submit: submit, Start: start, ArrayJobID: 5, ArrayTaskID: 2,
			State: accounting.StateRunning, AllocTRES: accounting.TRES{"cpu": 1}}
		require.NoError(t, tx.PutJob(j))
		return tx.PutStep(accounting.StepRecord{Job: 7, Step: "batch", Start: start})
	}))
	seen := map[string]int{}
	require.NoError(t, b.View(func(r accounting.KVReader) error {
		return r.Ascend("", "", func(k, v string) bool {
			tm, ok, err := accounting.RecordTime(k, v)
			require.NoError(t, err, k)
			switch {
			case strings.HasPrefix(k, "j:"):
				assert.True(t, ok)
				assert.Equal(t, submit, tm, "a job record belongs to its submit time")
				seen["job"]++
			case strings.HasPrefix(k, "st:"):
				assert.True(t, ok)
				assert.Equal(t, start, tm, "a step record to its start")
				seen["step"]++
			default:
				assert.False(t, ok, k)
			}
			return true
		})
	}))
	assert.Equal(t, map[string]int{"job": 1, "step": 1}, seen)
	for _, bad := range [][2]string{{"j:0000000000000001", ""}, {"j:0000000000000001", "\x01\x00\xff"}, {"st:0000000000000001:x", "\x09"}} {
		_, ok, err := accounting.RecordTime(bad[0], bad[1])
		assert.True(t, ok)
		assert.ErrorIs(t, err, accounting.ErrCorrupt, "%q", bad[1])
	}
}
