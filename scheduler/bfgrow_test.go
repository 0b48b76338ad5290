package scheduler

import (
	"math/rand/v2"
	"testing"
)

// TestGrownProfileMatchesRebuild drives random clusters with backfill
// through the fuzzer's events, with many more added nodes than it draws
// (some powered down), applied to a scheduler that grows its kept
// profile with each added node (growProfile) and to one that builds a
// fresh profile every cycle: every answer — each cycle's decisions,
// every Explain and IdleCapacity — and the whole digest must be the same
// after every event. Between an added node and the next cycle the
// rebuilding scheduler still holds the last cycle's profile, without
// the node, so the read-only answers there (which read that profile)
// are not compared; the cycle that follows is.
func TestGrownProfileMatchesRebuild(t *testing.T) {
	runs := 120
	if testing.Short() {
		runs = 30
	}
	grew := 0
	for seed := range uint64(runs) {
		src := &fzSource{rng: rand.New(rand.NewPCG(seed, 0xadd))}
		c := fzGenCluster(src)
		c.Backfill = 1 + int(seed%2)
		cfg, err := fzConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		kept, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		fresh, _ := New(cfg)
		fresh.bf.rebuild = true
		g := newFzGen(src, c)
		added := false // a node was added since the last cycle
		for step := range 300 {
			op := g.next()
			if src.chance(15) {
				op.Kind, op.Node, op.NodeCfg, op.Parts = fkAddNode, fzNodeName(len(c.Nodes)+2+step), fzGenNode(src), g.parts()
				op.SetParts = src.chance(5) // powered down
			}
			a, b := fzCall(kept, op), fzCall(fresh, op)
			if a.panicked || b.panicked {
				t.Fatalf("seed %d step %d: panic: %v %v", seed, step, a.err, b.err)
			}
			if op.Kind.readOnly() && added {
				continue
			}
			if a.res != b.res || (a.err == nil) != (b.err == nil) {
				t.Fatalf("seed %d step %d %s: grown %v %s\nrebuilt %v %s\n%s", seed, step, op.goCode(), a.err, trunc(a.res), b.err, trunc(b.res), fzDiff(a.res, b.res))
			}
			if a.err != nil {
				continue
			}
			switch op.Kind {
			case fkSchedule:
				added = false
			case fkAddNode:
				added = true
				if p := kept.bf.last; !op.SetParts && p != nil && !kept.bf.dirty {
					if p.NumNodes() != len(kept.nodes) {
						t.Fatalf("seed %d step %d: kept profile has %d nodes, the cluster %d", seed, step, p.NumNodes(), len(kept.nodes))
					}
					grew++
				}
			}
			g.applied(op, a)
			now := fzEpoch.Add(g.last)
			if da, db := fzDigest(kept, now), fzDigest(fresh, now); da != db {
				t.Fatalf("seed %d step %d %s: states differ: grown vs rebuilt %s", seed, step, op.goCode(), fzDiff(da, db))
			}
		}
	}
	// Added nodes must have grown profiles, not only marked them stale.
	if grew < runs {
		t.Fatalf("only %d added nodes grew the kept profile in %d runs", grew, runs)
	}
	t.Logf("%d added nodes grew the kept profile", grew)
}
