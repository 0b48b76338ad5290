package sim_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
)

func TestPolicyApply(t *testing.T) {
	cfg := procs(2)
	var opt sim.Options
	require.NoError(t, sim.FCFS.Apply(&cfg, &opt))
	assert.Nil(t, cfg.Priority)
	assert.Equal(t, sim.Options{}, opt)

	require.NoError(t, sim.Priority.Apply(&cfg, &opt))
	require.NotNil(t, cfg.Priority)
	assert.Equal(t, priority.Weights{Age: 1000, FairShare: 10000, JobSize: 1000}, cfg.Priority.Engine.Weights)
	require.NotNil(t, opt.FairShare)
	assert.Same(t, opt.FairShare, cfg.Priority.FairShare)
	assert.Equal(t, 5*time.Minute, opt.Interval)
	_, err := scheduler.New(cfg)
	require.NoError(t, err)

	require.NoError(t, sim.EASY.Apply(&cfg, &opt))
	assert.True(t, cfg.Backfill.BusyNodes, "textbook EASY reserves busy nodes first")
	require.NoError(t, sim.Conservative.Apply(&cfg, &opt))
	assert.Equal(t, backfill.Conservative, cfg.Backfill.Mode)
	assert.False(t, cfg.Backfill.BusyNodes, "busy-first reservations are not stable from cycle to cycle")

	err = sim.Policy("sjf").Apply(&cfg, &opt)
	require.ErrorIs(t, err, sim.ErrUnknownPolicy)
	assert.Contains(t, err.Error(), `"sjf"`)
	assert.Equal(t, []sim.Policy{sim.FCFS, sim.EASY, sim.Conservative, sim.Priority}, sim.Policies())
}

// TestPriorityFairShare: under the priority policy a light user's job
// overtakes the older job of a user who has just used the machine; under
// FCFS it does not.
func TestPriorityFairShare(t *testing.T) {
	mk := func(name, user string, submit, run int) sim.Job {
		j := job(name, submit, 1, run, run)
		j.Spec.User, j.Spec.Account = user, "acct"
		return j
	}
	jobs := []sim.Job{mk("H1", "heavy", 0, 1000), mk("H2", "heavy", 10, 10), mk("L1", "light", 20, 10)}
	for _, tc := range []struct {
		p     sim.Policy
		first string
	}{{sim.FCFS, "H2"}, {sim.Priority, "L1"}} {
		cfg := procs(1)
		var opt sim.Options
		require.NoError(t, tc.p.Apply(&cfg, &opt))
		res := run(t, cfg, jobs, opt)
		got := byName(res)
		assert.Equal(t, at(1000), got[tc.first].Start, "%s: %s starts first", tc.p, tc.first)
		assert.Equal(t, at(1010), got[map[string]string{"H2": "L1", "L1": "H2"}[tc.first]].Start, "%s", tc.p)
	}
}

func TestFairShareLedger(t *testing.T) {
	_, err := sim.NewFairShare(-time.Second)
	require.ErrorIs(t, err, sim.ErrInvalidFairShare)

	fs, err := sim.NewFairShare(100 * time.Second)
	require.NoError(t, err)
	// one user runs a 2-CPU job from 0 to 100 s on a 4-CPU cluster;
	// another submits at 50 s and never runs
	mk := func(name, user, acct string, submit, p, run int) sim.Job {
		j := job(name, submit, p, run, run)
		j.Spec.User, j.Spec.Account = user, acct
		return j
	}
	res := run(t, procs(4), []sim.Job{
		mk("a", "ann", "phys", 0, 2, 100),
		mk("b", "bob", "bio", 50, 1, 1),
		mk("x", "", "bio", 60, 1, 1), // no user: not in the tree
	}, sim.Options{FairShare: fs})
	require.Len(t, res.Jobs, 3)

	// ∫₀¹⁰⁰ 2·2^(-(100-t)/100) dt = 2·100/ln2·(1-½), then halved again by 200 s;
	// bob's 1-CPU second from 50 to 51 decays for 149 s.
	ann := 2 * 100 / math.Ln2 * 0.5 * 0.5
	bob := 1 * 100 / math.Ln2 * (1 - math.Exp2(-0.01)) * math.Exp2(-1.49)
	tree, err := fs.FairShareTree(at(200))
	require.NoError(t, err)
	require.Len(t, tree, 5)
	assert.Equal(t, priority.Association{Account: "root", Shares: 1, Usage: tree[0].Usage}, tree[0])
	assert.InDelta(t, ann+bob, tree[0].Usage, 1e-9)
	assert.Equal(t, "bio", tree[1].Account)
	assert.Equal(t, "root", tree[1].Parent)
	assert.InDelta(t, bob, tree[1].Usage, 1e-9)
	assert.Equal(t, priority.Association{Account: "bio", User: "bob", Shares: 1, Usage: tree[2].Usage}, tree[2])
	assert.InDelta(t, bob, tree[2].Usage, 1e-9)
	assert.Equal(t, "phys", tree[3].Account)
	assert.Equal(t, "ann", tree[4].User)
	assert.InDelta(t, ann, tree[4].Usage, 1e-9)
	_, err = priority.NewTree(tree, priority.TreeOptions{UsageIncludesDescendants: true})
	require.NoError(t, err)
}
