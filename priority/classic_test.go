package priority

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// classicDocTree is the worked example of Slurm's classic fair-share page
// (doc/html/classic_fair_share.shtml, Figure 3): accounts A (40 shares) and
// D (60); A split into B (30) and C (10), D into E (25) and F (35); user 1 in
// B, users 2 and 3 (one share each) in C, user 4 in E, user 5 in F. Users 1,
// 2 and 4 used 0.2, 0.25 and 0.25 of the machine: the page's usage is a
// fraction of everything the machine delivered, so the root carries the
// remaining 0.3 as usage of its own (e.g. of deleted associations).
func classicDocTree(user2Shares int64) []Association {
	return []Association{
		{Account: "root", Usage: 300},
		{Account: "A", Parent: "root", Shares: 40},
		{Account: "B", Parent: "A", Shares: 30},
		{Account: "B", User: "user1", Shares: 1, Usage: 200},
		{Account: "C", Parent: "A", Shares: 10},
		{Account: "C", User: "user2", Shares: user2Shares, Usage: 250},
		{Account: "C", User: "user3", Shares: 1},
		{Account: "D", Parent: "root", Shares: 60},
		{Account: "E", Parent: "D", Shares: 25},
		{Account: "E", User: "user4", Shares: 1, Usage: 250},
		{Account: "F", Parent: "D", Shares: 35},
		{Account: "F", User: "user5", Shares: 1},
	}
}

func rowsByName(tree *Tree) map[string]ShareRow {
	m := map[string]ShareRow{}
	for _, r := range tree.Shares() {
		if r.User != "" {
			m[r.User] = r
		} else {
			m[r.Account] = r
		}
	}
	return m
}

func TestClassicDocExample(t *testing.T) {
	tree, err := NewTree(classicDocTree(1), TreeOptions{Flags: NoFairTree})
	require.NoError(t, err)
	require.Equal(t, Classic, tree.Algorithm())
	rows := rowsByName(tree)

	cases := []struct {
		name       string
		normShares float64
		effUsage   float64 // the page's effective usage, exact
		docFactor  float64 // the page's factor, six decimals (users only)
	}{
		{"A", 0.4, 0.45, math.NaN()},
		{"D", 0.6, 0.25, math.NaN()},
		{"B", 0.3, 0.2 + (0.45-0.2)*30/40, math.NaN()},   // 0.3875
		{"C", 0.1, 0.25 + (0.45-0.25)*10/40, math.NaN()}, // 0.3
		{"E", 0.25, 0.25, math.NaN()},
		{"F", 0.35, 0.25 * 35 / 60, math.NaN()}, // 0.1458
		{"user1", 0.3, 0.3875, 0.408479},
		{"user2", 0.05, 0.25 + (0.3-0.25)/2, 0.022097}, // 0.275
		{"user3", 0.05, 0.3 / 2, 0.125000},             // 0.15
		{"user4", 0.25, 0.25, 0.500000},
		{"user5", 0.35, 0.25 * 35 / 60, 0.749154},
	}
	for _, c := range cases {
		r, ok := rows[c.name]
		require.True(t, ok, c.name)
		assert.InDelta(t, c.normShares, r.NormShares, 1e-15, "%s NormShares", c.name)
		assert.InDelta(t, c.effUsage, r.EffectvUsage, 1e-15, "%s EffectvUsage", c.name)
		if !math.IsNaN(c.docFactor) {
			exact := math.Pow(2, -c.effUsage/c.normShares)
			assert.InDelta(t, exact, r.FairShare, 1e-15, "%s FairShare", c.name)
			assert.InDelta(t, c.docFactor, r.FairShare, 5e-7, "%s FairShare vs the page", c.name)
		} else {
			assert.True(t, math.IsNaN(r.FairShare), "sshare shows no factor for account %s", c.name)
		}
	}
	// "if user 2 had been allocated 4 shares instead of 1, user 2 would have
	// had .08 normalized shares"
	tree4, err := NewTree(classicDocTree(4), TreeOptions{Flags: NoFairTree})
	require.NoError(t, err)
	assert.InDelta(t, 0.08, rowsByName(tree4)["user2"].NormShares, 1e-15)

	// User 5 has the highest factor, users 1-3 are over-served.
	assert.Greater(t, rows["user5"].FairShare, rows["user4"].FairShare)
	for _, u := range []string{"user1", "user2", "user3"} {
		assert.Less(t, rows[u].FairShare, 0.5, u)
	}
	assert.Equal(t, 0.5, rows["user4"].FairShare)
}

func TestClassicDampeningAndParent(t *testing.T) {
	assocs := []Association{
		{Account: "root"},
		{Account: "a", Parent: "root", Shares: 1},
		{Account: "a", User: "x", SharesParent: true, Usage: 30},
		{Account: "a", User: "y", Shares: 1, Usage: 10},
		{Account: "b", Parent: "root", Shares: 3},
		{Account: "b", User: "z", Shares: 1, Usage: 60},
	}
	for _, damp := range []uint16{0, 1, 2, 5} {
		tree, err := NewTree(assocs, TreeOptions{Flags: NoFairTree, DampeningFactor: damp})
		require.NoError(t, err)
		rows := rowsByName(tree)
		d := float64(max(damp, 1))
		// a: S 1/4, UN = UE = 40/100. x (Fairshare=parent) takes a's factor.
		fa := math.Pow(2, -(0.4/0.25)/d)
		assert.InDelta(t, fa, rows["x"].FairShare, 1e-15, "damp %d", damp)
		assert.InDelta(t, fa, tree.Factor(1), 1e-15, "account a, damp %d", damp)
		// y: S = 1/4 × 1/1 (x's shares do not count), UE = 0.1 + (0.4-0.1)×1/1.
		assert.InDelta(t, 0.25, rows["y"].NormShares, 0)
		assert.InDelta(t, math.Pow(2, -(0.4/0.25)/d), rows["y"].FairShare, 1e-15)
		// z: S 3/4 × 1, UE 0.6.
		assert.InDelta(t, math.Pow(2, -(0.6/0.75)/d), rows["z"].FairShare, 1e-15)
	}
}

// TestDepthOblivious follows the example of Slurm's depth-oblivious page
// (doc/html/priority_multifactor3.shtml): the children of P used twice
// their combined shares, and A only two thirds of its own, so A's local
// usage ratio is one third and k = 1/(1 + (5 ln 2)^2).
func TestDepthOblivious(t *testing.T) {
	assocs := []Association{
		{Account: "root"},
		{Account: "P", Parent: "root", Shares: 1},
		{Account: "A", Parent: "P", Shares: 1},
		{Account: "A", User: "ua", Shares: 1, Usage: 1},
		{Account: "B", Parent: "P", Shares: 1},
		{Account: "B", User: "ub", Shares: 1, Usage: 5},
		{Account: "Q", Parent: "root", Shares: 1},
		{Account: "Q", User: "uq", Shares: 1},
	}
	flags, err := ParseFlags("DEPTH_OBLIVIOUS")
	require.NoError(t, err)
	tree, err := NewTree(assocs, TreeOptions{Flags: flags})
	require.NoError(t, err)
	require.Equal(t, ClassicDepthOblivious, tree.Algorithm())
	rows := rowsByName(tree)

	// P: first level, R = UN/S = 1/0.5 = 2.
	assert.True(t, math.IsNaN(rows["P"].FairShare), "sshare shows no factor for accounts")
	p, _ := tree.Lookup("P", "")
	assert.InDelta(t, math.Pow(2, -2), tree.Factor(p), 1e-15)
	// A: r = (1/6)/0.25 = 2/3, r_l = r / 2 = 1/3, k < 1.
	k := 1 / (1 + math.Pow(5*math.Ln2, 2))
	ra := 2 * math.Pow(1.0/3, k)
	a, _ := tree.Lookup("A", "")
	assert.InDelta(t, ra*0.25, rows["A"].EffectvUsage, 1e-15)
	assert.InDelta(t, math.Pow(2, -ra), tree.Factor(a), 1e-15)
	// ua: r_l = 1, so k = 1 and ua inherits A's ratio.
	assert.InDelta(t, math.Pow(2, -ra), rows["ua"].FairShare, 1e-15)
	// B: r_l = (5/6)/0.25/2 = 5/3, same direction as its parent: k = 1.
	assert.InDelta(t, math.Pow(2, -2*5.0/3), rows["ub"].FairShare, 1e-15)
	// uq: its account has no usage: the fallback UE = UN = 0, factor 1.
	assert.Equal(t, 1.0, rows["uq"].FairShare)

	// Plain classic for comparison: A's UE = 1/6 + (1 - 1/6)/2.
	classic, err := NewTree(assocs, TreeOptions{Flags: NoFairTree})
	require.NoError(t, err)
	assert.InDelta(t, math.Pow(2, -(7.0/12)/0.25), rowsByName(classic)["ua"].FairShare, 1e-15)
}
