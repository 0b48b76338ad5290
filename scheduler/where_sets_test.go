package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
)

// TestWhereNarrowSameDecisions checks that narrowing a where job's
// allowed set in the backfill plan (to its required nodes and counted
// groups), planning a matching OR as alternatives and one counted group
// without the where chooser, and the where chooser's one-walk choice of
// the lowest indices change no decision: the same starts, reasons and expected
// starts, cycle after cycle, as the plan over the job's whole allowed
// set, over the benchmark's featured cluster and where mix under EASY
// backfill.
func TestWhereNarrowSameDecisions(t *testing.T) {
	running, pending := 3000, 6000
	if testing.Short() {
		running, pending = 1500, 3000
	}
	build := func(narrow bool) (*scheduler.Scheduler, time.Time) {
		s, now, err := clustertest.NewState(clustertest.StateOptions{Running: running, Pending: pending, Seed: 3,
			Mutate: whereMix,
			Configure: func(c *scheduler.Config) error {
				for _, f := range []func(*scheduler.Config) error{featureNodes, standardPriority, easy} {
					if err := f(c); err != nil {
						return err
					}
				}
				return nil
			}})
		require.NoError(t, err)
		if !narrow {
			scheduler.WhereNarrowOff(s)
		}
		return s, now
	}
	a, now := build(true)
	b, _ := build(false)
	started, estimated := 0, 0
	for k := range 6 {
		at := now.Add(time.Duration(k) * 47 * time.Minute)
		ca, err := a.Schedule(at)
		require.NoError(t, err)
		cb, err := b.Schedule(at)
		require.NoError(t, err)
		require.Equal(t, cb.Starts, ca.Starts, "cycle %d: starts", k)
		require.Equal(t, cb.Pending, ca.Pending, "cycle %d: pending", k)
		started += len(ca.Starts)
		for _, p := range ca.Pending {
			if !p.ExpectedStart.IsZero() {
				estimated++
			}
		}
	}
	// The comparison is only worth something if the plan decided things.
	assert.Positive(t, started)
	assert.Positive(t, estimated)
}
