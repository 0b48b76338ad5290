package scheduler_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
)

// vocabCluster is the standard cluster with all of Slurm's node
// vocabulary at once: racks and GPU kinds as Features (featureNodes),
// 2×32×2 layouts (layoutCluster), a quarter of the H100 nodes sharing
// GPUs (sharedMix), whole-core allocation on OverSubscribe partitions
// (oversubCluster, after the standard policy) and a license pool.
func vocabCluster(c *scheduler.Config) error {
	for _, f := range []func(*scheduler.Config) error{featureNodes, layoutCluster, sharedMix, standardPriority, standardPolicy, oversubCluster, easy} {
		if err := f(c); err != nil {
			return err
		}
	}
	c.Licenses = []scheduler.License{{Name: "matlab", Count: 200}}
	return nil
}

// vocabMix puts every new request kind in the standard mix: shares, MIG
// and MPS (sharedRequests), and on the jobs that still ask whole GPUs task
// counts without a node count (taskMix), constraints, node lists and
// exclusions (whereMix), layouts and --oversubscribe (oversubMix), and one job in 25
// holding a license.
func vocabMix(k int, spec *scheduler.JobSpec) {
	sharedRequests(k, spec)
	if len(spec.GRESPerNode) != 1 || spec.GRESPerNode[0].Name == "gpu" && spec.GRESPerNode[0].Type == "" {
		// Shares and MIG instances are on a quarter of the H100 nodes
		// only: a node list or constraint would often name none of them.
		taskMix(k, spec)
		whereMix(k, spec)
	}
	oversubMix(k, spec)
	if k%25 == 7 {
		spec.Licenses = []scheduler.License{{Name: "matlab", Count: 1}}
	}
}

// BenchmarkScheduleChurnVocabulary is BenchmarkScheduleChurn's step (100
// ends, 100 arrivals, a cycle; priority, the standard policy and
// reservations, EASY backfill) on vocabCluster: mix=plain with the
// standard requests only, mix=vocab with vocabMix applied to the queue,
// the running jobs and the arrivals, and one arrival in 40 submitted as a
// two-component heterogeneous job. The issue asks the second to be at
// most 20 % slower than the first.
func BenchmarkScheduleChurnVocabulary(b *testing.B) {
	const perStep = 100
	for _, mix := range []string{"plain", "vocab"} {
		b.Run("nodes=10000/pending=100000/easy+policy/mix="+mix, func(b *testing.B) {
			var mutate func(int, *scheduler.JobSpec)
			if mix == "vocab" {
				mutate = vocabMix
			}
			s, now, err := clustertest.NewState(clustertest.StateOptions{Running: 40000, Pending: 100000, Seed: 1,
				Configure: vocabCluster, Mutate: mutate})
			if err != nil {
				b.Fatal(err)
			}
			if err := reserve(s, now); err != nil {
				b.Fatal(err)
			}
			arrivals := clustertest.Workload(clustertest.WorkloadConfig{Jobs: 200 * perStep, Seed: 7})
			spec := func(k int) scheduler.JobSpec {
				sp := arrivals[k%len(arrivals)].Spec
				sp.GRESPerNode = append([]gres.Request(nil), sp.GRESPerNode...)
				if mutate != nil {
					mutate(k, &sp)
				}
				return sp
			}
			churn(b, s, now, perStep, func(now time.Time, k int) error {
				if mutate != nil && k%40 == 0 {
					_, err := s.SubmitHet(now, []scheduler.JobSpec{spec(k), spec(k + 1)})
					return err
				}
				_, err := s.Submit(now, spec(k))
				return err
			})
		})
	}
}
