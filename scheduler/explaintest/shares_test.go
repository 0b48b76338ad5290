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
// approximately between its own bookings (scheduler/backfill_shares.go,
// backfill_claims.go), so a start it cannot guarantee — the job, or a job
// ahead of it, planned on nodes that share GPUs — is labelled an
// estimate, with the reason (the rule and why it suffices:
// scheduler/explain_shares.go). Every answer labelled a promise must
// hold, a start now included; under conservative backfill every other
// answer must say why it is an estimate (a dependency-waiting overtaker,
// a move in the queue, or the shared GPUs).
// -verify.seeds=N runs more seeds.
func TestVerifiedAnswersShared(t *testing.T) {
	for _, mode := range []backfill.Mode{backfill.Conservative, backfill.EASY} {
		t.Run(mode.String(), func(t *testing.T) {
			vs := verify(t, variant{mode: mode, shared: true}, seeds(t))
			logCounts(t, vs)
			require.NotEmpty(t, vs)
			kinds := map[string]bool{}
			promises, later, shareEstimates, shareNow, shareFailed := 0, 0, 0, 0, 0
			var broken []explaintest.Verdict
			for _, vd := range vs {
				a := vd.Answer
				kinds[a.Kind()] = true
				if a.NotPromised != "" {
					require.False(t, a.Bound, "job %d at %s: %s is labelled a promise and an estimate (%s)", a.Job, a.At, a.Kind(), a.NotPromised)
					shareEstimates++
					if a.Now {
						shareNow++
					}
					if vd.Outcome != explaintest.Held {
						shareFailed++
					}
				}
				if mode == backfill.Conservative && !excused(a) && !(a.Counterfactual != nil && a.Counterfactual.Moves) && a.NotPromised == "" {
					require.True(t, a.Bound, "job %d at %s: %s is not labelled a promise under conservative backfill, and says no reason", a.Job, a.At, a.Kind())
				}
				if !a.Bound || vd.AtSubmit {
					continue
				}
				promises++
				if !a.Now {
					later++
				}
				if vd.Outcome != explaintest.Held {
					broken = append(broken, vd)
					t.Errorf("job %d at %s: %s promised %s (now %t, overtakers %v), started %s",
						a.Job, a.At, a.Kind(), a.Start, a.Now, a.Overtakers, vd.Actual)
				}
			}
			t.Logf("%d promises (%d of them later starts), %d broken; %d estimates for shared GPUs (%d of them now, %d late)",
				promises, later, len(broken), shareEstimates, shareNow, shareFailed)
			require.NotZero(t, promises, "no answer was labelled a promise")
			require.True(t, kinds["estimate"], "no expected start was checked")
		})
	}
}
