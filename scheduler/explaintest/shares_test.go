package explaintest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/scheduler/explaintest"
)

// TestVerifiedAnswersShared is TestVerifiedAnswers with shared GPUs
// (gres/shard on one node, gres/mps on another) and about half the jobs
// asking for shards or MPS shares beside whole-GPU jobs, replayed under
// exact run times.
//
// The plan counts shared GPUs exactly over the running jobs but only
// conservatively between its own bookings (a share booking takes its
// shares from the most one GPU has, see scheduler/backfill_shares.go): a
// start now it makes holds, but when a booked share job starts, the exact
// view of it may leave more room than its booking did, and under
// conservative backfill a job ahead may then move earlier, before a later
// job's reservation. So later promises are asserted to hold in all but
// one in a hundred (8 of 1,769 broke over the 40 seeds when this was
// written), and every plan's start now must hold.
func TestVerifiedAnswersShared(t *testing.T) {
	for _, mode := range []backfill.Mode{backfill.Conservative, backfill.EASY} {
		t.Run(mode.String(), func(t *testing.T) {
			vs := verify(t, variant{mode: mode, shared: true}, seeds(t))
			logCounts(t, vs)
			require.NotEmpty(t, vs)
			kinds := map[string]bool{}
			promises, broken := 0, 0
			for _, vd := range vs {
				a := vd.Answer
				kinds[a.Kind()] = true
				if mode == backfill.Conservative && !excused(a) && !(a.Counterfactual != nil && a.Counterfactual.Moves) {
					require.True(t, a.Bound, "job %d at %s: %s is not labelled a promise under conservative backfill", a.Job, a.At, a.Kind())
				}
				if !a.Bound || vd.AtSubmit {
					continue
				}
				promises++
				if vd.Outcome == explaintest.Held {
					continue
				}
				require.False(t, a.Now && a.Counterfactual == nil, "job %d at %s: the plan's start now did not hold (started %s)", a.Job, a.At, vd.Actual)
				broken++
				t.Logf("job %d at %s: %s promised %s (now %t, overtakers %v), started %s",
					a.Job, a.At, a.Kind(), a.Start, a.Now, a.Overtakers, vd.Actual)
			}
			t.Logf("%d of %d promises broken", broken, promises)
			require.LessOrEqual(t, broken*100, promises, "more than one promise in a hundred broken")
			require.True(t, kinds["estimate"], "no expected start was checked")
		})
	}
}
