package priority

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
)

// randomTree builds a seeded random association tree: up to four levels of
// accounts, users at every level, zero shares, Fairshare=parent accounts and
// users, and small integer usages so that Level FS ties are common.
func randomTree(r *rand.Rand, ntres int) []Association {
	assocs := []Association{{Account: "root"}}
	accounts := []string{"root"}
	depth := map[string]int{"root": 0}
	nAcct := 1 + r.IntN(12)
	for i := range nAcct {
		parent := accounts[r.IntN(len(accounts))]
		if depth[parent] >= 4 {
			parent = "root"
		}
		name := fmt.Sprintf("a%d", i)
		a := Association{Account: name, Parent: parent, Shares: int64(r.IntN(4))}
		if r.IntN(8) == 0 {
			a.SharesParent = true
		}
		if r.IntN(10) == 0 {
			a.Usage = float64(r.IntN(5)) // usage of deleted users
		}
		assocs = append(assocs, a)
		accounts = append(accounts, name)
		depth[name] = depth[parent] + 1
	}
	nUser := 1 + r.IntN(25)
	for i := range nUser {
		acct := accounts[r.IntN(len(accounts))]
		u := Association{Account: acct, User: fmt.Sprintf("u%d", i), Shares: int64(r.IntN(4))}
		if r.IntN(10) == 0 {
			u.SharesParent = true
		}
		if r.IntN(3) > 0 {
			u.Usage = float64(r.IntN(8))
		}
		if ntres > 0 {
			u.TRESUsage = make([]float64, ntres)
			for k := range u.TRESUsage {
				u.TRESUsage[k] = float64(r.IntN(6))
			}
		}
		assocs = append(assocs, u)
	}
	// Shuffle everything but keep the input valid (order is free).
	r.Shuffle(len(assocs), func(i, j int) { assocs[i], assocs[j] = assocs[j], assocs[i] })
	return assocs
}

var allModes = []struct {
	name string
	opts TreeOptions
}{
	{"fair_tree", TreeOptions{}},
	{"classic", TreeOptions{Flags: NoFairTree}},
	{"depth_oblivious", TreeOptions{Flags: DepthOblivious | NoFairTree}},
	{"classic_damp3", TreeOptions{Flags: NoFairTree, DampeningFactor: 3}},
}

func TestPropertyFactorsInRange(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for trial := range 300 {
		assocs := randomTree(r, 0)
		for _, m := range allModes {
			tree, err := NewTree(assocs, m.opts)
			require.NoError(t, err)
			for i := range tree.Len() {
				f := tree.Factor(i)
				require.True(t, f >= 0 && f <= 1, "trial %d %s assoc %d factor %v", trial, m.name, i, f)
				row, _ := tree.Row(i)
				for _, v := range []float64{row.NormShares, row.NormUsage, row.EffectvUsage} {
					require.True(t, math.IsNaN(v) || (v >= 0 && v <= 1+1e-12), "trial %d %s %+v", trial, m.name, row)
				}
			}
		}
	}
}

// TestPropertyFairTreeOrder: Fair Tree factors are rank fractions and
// never increase along the depth-first walk, so every user of a
// higher-ranked account outranks every user of a lower one.
func TestPropertyFairTreeOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for trial := range 300 {
		tree, err := NewTree(randomTree(r, 0), TreeOptions{})
		require.NoError(t, err)
		n := float64(tree.Users())
		last := math.Inf(1)
		var walk func(p int32)
		walk = func(p int32) {
			nd := &tree.nodes[p]
			for _, c := range tree.group[nd.gStart:nd.gEnd] {
				if tree.nodes[c].user {
					f := tree.nodes[c].factor
					require.Equal(t, math.Round(f*n)/n, f, "trial %d: factor %v is not rank/users", trial, f)
					require.LessOrEqual(t, f, last, "trial %d", trial)
					last = f
				} else {
					walk(c)
				}
			}
		}
		walk(tree.root)
		require.Equal(t, 1.0, maxUserFactor(tree), "trial %d: the top user gets 1", trial)
	}
}

func maxUserFactor(t *Tree) float64 {
	m := 0.0
	for i := range t.nodes {
		if t.nodes[i].user {
			m = max(m, t.nodes[i].factor)
		}
	}
	return m
}

// TestPropertyMoreUsageNeverHelps: raising one user's usage never raises
// that user's fair-share factor (Fair Tree and classic).
func TestPropertyMoreUsageNeverHelps(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for trial := range 300 {
		assocs := randomTree(r, 0)
		for _, m := range allModes[:2] {
			tree, err := NewTree(assocs, m.opts)
			require.NoError(t, err)
			for i := range assocs {
				if assocs[i].User == "" {
					continue
				}
				more := append([]Association(nil), assocs...)
				more[i].Usage += float64(1 + r.IntN(20))
				after, err := NewTree(more, m.opts)
				require.NoError(t, err)
				require.LessOrEqual(t, after.Factor(i), tree.Factor(i)+1e-15,
					"trial %d %s user %s: usage %v -> %v", trial, m.name, assocs[i].User, assocs[i].Usage, more[i].Usage)
			}
		}
	}
}

// TestPropertyIdleUserNotBelowBusySibling: a user with no usage and
// positive shares never ranks below a sibling user that has usage.
func TestPropertyIdleUserNotBelowBusySibling(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	checked := 0
	for trial := range 400 {
		assocs := randomTree(r, 0)
		for _, m := range allModes[:2] {
			tree, err := NewTree(assocs, m.opts)
			require.NoError(t, err)
			for i, a := range assocs {
				if a.User == "" || a.Usage != 0 || a.Shares == 0 || a.SharesParent {
					continue
				}
				for j, b := range assocs {
					if b.User == "" || b.Account != a.Account || b.Usage == 0 {
						continue
					}
					checked++
					tol := 0.0
					if m.opts.Flags&NoFairTree != 0 {
						tol = 1e-12 // classic: equal in exact arithmetic at worst
					}
					require.GreaterOrEqual(t, tree.Factor(i)+tol, tree.Factor(j),
						"trial %d %s: idle %s vs busy %s", trial, m.name, a.User, b.User)
				}
			}
		}
	}
	require.Greater(t, checked, 100)
}

func TestPropertyDeterminism(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for range 100 {
		assocs := randomTree(r, 0)
		for _, m := range allModes {
			a, err := NewTree(assocs, m.opts)
			require.NoError(t, err)
			b, err := NewTree(assocs, m.opts)
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprintf("%#v", a.Shares()), fmt.Sprintf("%#v", b.Shares()))
		}
	}
}

// TestPropertyIncrementalMatchesFull: after any sequence of usage updates
// the incremental tree equals, bit for bit, a tree built from scratch.
func TestPropertyIncrementalMatchesFull(t *testing.T) {
	reg, err := gres.NewRegistry("gres/gpu")
	require.NoError(t, err)
	capacity := gres.Vector{64, 0, 0, 0, 0, 8}
	modes := append([]struct {
		name string
		opts TreeOptions
	}{}, allModes...)
	modes = append(modes,
		struct {
			name string
			opts TreeOptions
		}{"fair_tree_inclusive", TreeOptions{UsageIncludesDescendants: true}},
		struct {
			name string
			opts TreeOptions
		}{"fair_tree_dominant", TreeOptions{Dominant: &DominantShare{Registry: reg, Capacity: capacity}}},
		struct {
			name string
			opts TreeOptions
		}{"classic_dominant", TreeOptions{Flags: NoFairTree, Dominant: &DominantShare{Registry: reg, Capacity: capacity}}},
	)
	r := rand.New(rand.NewPCG(6, 6))
	for trial := range 150 {
		assocs := randomTree(r, reg.Len())
		for _, m := range modes {
			tree, err := NewTree(assocs, m.opts)
			require.NoError(t, err)
			cur := append([]Association(nil), assocs...)
			for step := range 12 {
				var ups []UsageUpdate
				for range 1 + r.IntN(3) {
					i := r.IntN(len(cur))
					u := UsageUpdate{Index: i, Usage: float64(r.IntN(10))}
					if r.IntN(4) == 0 {
						u.Usage = cur[i].Usage // unchanged
					}
					if m.opts.Dominant != nil {
						u.TRESUsage = make([]float64, reg.Len())
						for k := range u.TRESUsage {
							u.TRESUsage[k] = float64(r.IntN(6))
						}
					}
					ups = append(ups, u)
					cur[i].Usage = u.Usage
					cur[i].TRESUsage = u.TRESUsage
				}
				require.NoError(t, tree.UpdateUsage(ups...))
				fresh, err := NewTree(cur, m.opts)
				require.NoError(t, err)
				for i := range cur {
					require.Equal(t, fresh.Factor(i), tree.Factor(i), "trial %d %s step %d assoc %d", trial, m.name, step, i)
				}
				// %#v prints every float exactly and NaN as NaN.
				require.Equal(t, fmt.Sprintf("%#v", fresh.Shares()), fmt.Sprintf("%#v", tree.Shares()),
					"trial %d %s step %d", trial, m.name, step)
			}
		}
	}
}

// TestIncrementalIsLocal: charging one user re-sorts only the sibling
// groups on its path and re-ranks only a few subtrees, not the whole tree.
func TestIncrementalIsLocal(t *testing.T) {
	assocs := benchTree(10, 10, 1000, 11) // 111 accounts, 1000 users
	tree, err := NewTree(assocs, TreeOptions{})
	require.NoError(t, err)
	accounts := tree.Len() - tree.Users()
	r := rand.New(rand.NewPCG(12, 12))
	var sorted, ranked int
	const updates = 200
	for range updates {
		i := len(assocs) - 1 - r.IntN(tree.Users())
		tree.sortedGroups, tree.rankedGroups = 0, 0
		require.NoError(t, tree.SetUsage(i, tree.nodes[i].own+3600))
		require.Equal(t, 3, tree.sortedGroups, "root, department and group")
		sorted += tree.sortedGroups
		ranked += tree.rankedGroups
	}
	avg := float64(ranked) / updates
	assert.Less(t, avg, float64(accounts)/5, "re-ranked groups per update: %.1f of %d", avg, accounts)
	t.Logf("per update: %.1f groups sorted, %.1f ranked, of %d", float64(sorted)/updates, avg, accounts)

	fresh, err := NewTree(func() []Association {
		cur := append([]Association(nil), assocs...)
		for i := range cur {
			cur[i].Usage = tree.nodes[i].own
		}
		return cur
	}(), TreeOptions{})
	require.NoError(t, err)
	for i := range assocs {
		require.Equal(t, fresh.Factor(i), tree.Factor(i))
	}
}
