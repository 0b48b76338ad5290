package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// The kept backfill profile counts a CPU shared by several jobs once, for
// the holder that keeps it longest. A sharer's start, end, end move or
// suspension changes that for the other sharers on its nodes; the kept
// profile re-adds them instead of being rebuilt. After every random event
// and cycle the kept profile must be what a fresh build computes (every
// node's timeline, from profile use computed without the cache), and the
// decisions must be those of a scheduler that rebuilds it every cycle.
func TestOverSubscribeKeptProfileMatchesFresh(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 8
	}
	for seed := range seeds {
		kept := sharingChurn(t, uint64(seed), false)
		fresh := sharingChurn(t, uint64(seed), true)
		require.Equal(t, fresh, kept, "seed %d: decisions with the kept profile and with a rebuilt one", seed)
	}
}

// sharingChurn runs a random sequence of sharing jobs' submissions,
// cycles, ends, time-limit changes and admin suspensions on three
// 2×4×2 nodes under CR_Core with a FORCE:2 and a YES:3 partition, checking
// the kept profile after every step, and returns the cycles' decisions
// (starts and every pending job's expected start).
func sharingChurn(t *testing.T, seed uint64, rebuild bool) []string {
	t.Helper()
	cfg := scheduler.Config{
		Nodes:                []scheduler.NodeConfig{layoutNode("n0", 2, 4, 2), layoutNode("n1", 2, 4, 2), layoutNode("n2", 2, 4, 2)},
		SelectTypeParameters: scheduler.CRCore,
		Partitions: []scheduler.PartitionConfig{
			{Name: "force", OverSubscribe: policy.OverSubscribeForce, OverSubscribeCount: 2},
			{Name: "yes", OverSubscribe: policy.OverSubscribeYes, OverSubscribeCount: 3},
		},
		Backfill: &backfill.Config{},
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	if rebuild {
		scheduler.RebuildProfileEveryCycle(s)
	}
	rng := rand.New(rand.NewPCG(seed, 17))
	now := t0
	var ids []scheduler.JobID
	var out []string
	check := func(what string) {
		t.Helper()
		if d := scheduler.KeptProfileMismatch(s, now); d != "" {
			t.Fatalf("seed %d, %s at %v: kept profile differs from a fresh one: %s", seed, what, now.Sub(t0), d)
		}
	}
	for step := range 120 {
		now = now.Add(time.Duration(1+rng.IntN(600)) * time.Second)
		switch r := rng.IntN(10); {
		case r < 4:
			for range 1 + rng.IntN(3) {
				spec := scheduler.JobSpec{User: "u", Partition: []string{"force", "yes"}[rng.IntN(2)],
					Tasks: 1 + rng.IntN(12), Nodes: 1 + rng.IntN(2)*rng.IntN(2), MemPerNodeMiB: 1024,
					TimeLimit: time.Duration(1+rng.IntN(8)) * 30 * time.Minute, OverSubscribe: rng.IntN(3) > 0}
				if spec.Tasks < spec.Nodes {
					spec.Tasks = spec.Nodes
				}
				id, err := s.Submit(now, spec)
				require.NoError(t, err)
				ids = append(ids, id)
			}
		case r < 6 && len(ids) > 0:
			_ = s.Finish(now, ids[rng.IntN(len(ids))], 0) // pending or ended ones refuse: nothing changes
		case r < 7 && len(ids) > 0:
			d := time.Duration(1+rng.IntN(8)) * 20 * time.Minute
			_ = s.UpdateJob(now, ids[rng.IntN(len(ids))], scheduler.JobUpdate{TimeLimit: &d})
		case r < 8 && len(ids) > 0:
			id := ids[rng.IntN(len(ids))]
			if s.SuspendJob(now, id) == nil {
				check("suspend")
				now = now.Add(time.Minute)
				require.NoError(t, s.ResumeJob(now, id))
			}
		}
		check("event")
		cyc := mustSchedule(t, s, now)
		check("cycle")
		for _, st := range cyc.Starts {
			out = append(out, fmtStart(step, st))
		}
		for _, id := range ids {
			if j, ok := s.Job(id); ok && j.State == scheduler.JobPending {
				out = append(out, fmtExpected(step, j))
			}
		}
		ids = slices.DeleteFunc(ids, func(id scheduler.JobID) bool {
			j, ok := s.Job(id)
			return !ok || (j.State != scheduler.JobPending && j.State != scheduler.JobRunning)
		})
	}
	return out
}

func fmtStart(step int, st scheduler.Start) string {
	return fmt.Sprintf("%d start %d %+v", step, st.Job, st.Alloc)
}

func fmtExpected(step int, j scheduler.Job) string {
	return fmt.Sprintf("%d pending %d %v %v", step, j.ID, j.ExpectedStart, j.Reason)
}
