package scheduler

import (
	"math/rand/v2"
	"testing"
)

// TestExtendedPlanMatchesReplan drives random clusters (every one with
// backfill, half with Config.EstimateInterval) with the fuzzer's events,
// applied to a scheduler that extends its last plan when it can and to
// one that plans the whole queue every cycle: every answer and the whole
// digest (expected starts and the time they were estimated included) must
// be the same after every event. A restored scheduler plans the whole
// queue in its first cycle, so Restore is exact only if this holds.
// SLUICE_SNAP_RUNS=N drives N clusters (default 150).
func TestExtendedPlanMatchesReplan(t *testing.T) {
	runs := 150
	if testing.Short() {
		runs = 30
	}
	runs = snapRuns(t, runs)
	for seed := range uint64(runs) {
		src := &fzSource{rng: rand.New(rand.NewPCG(seed, 0xe47))}
		c := fzGenCluster(src)
		c.Backfill = 1 + int(seed%2)
		if seed%4 < 2 {
			c.EstimateInterval = []int{30, 600}[seed%2]
		}
		cfg, err := fzConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		ext, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		full, _ := New(cfg)
		full.bf.noExtend = true
		g := newFzGen(src, c)
		for step := range 300 {
			op := g.next()
			a, b := fzCall(ext, op), fzCall(full, op)
			if a.panicked || b.panicked {
				t.Fatalf("seed %d step %d: panic: %v %v", seed, step, a.err, b.err)
			}
			if a.res != b.res || (a.err == nil) != (b.err == nil) {
				t.Fatalf("seed %d step %d %s: extended %v %s\nreplanned %v %s\n%s", seed, step, op.goCode(), a.err, trunc(a.res), b.err, trunc(b.res), fzDiff(a.res, b.res))
			}
			if a.err != nil {
				continue
			}
			g.applied(op, a)
			now := fzEpoch.Add(g.last)
			if da, db := fzDigest(ext, now), fzDigest(full, now); da != db {
				t.Fatalf("seed %d step %d %s: states differ: extended vs replanned %s", seed, step, op.goCode(), fzDiff(da, db))
			}
		}
	}
}
