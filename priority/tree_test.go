package priority

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
)

func TestTreeBadInput(t *testing.T) {
	root := Association{Account: "root"}
	cases := []struct {
		name   string
		assocs []Association
		is     error
		msg    []string
	}{
		{"no root", []Association{{Account: "a", Parent: "b"}, {Account: "b", Parent: "a"}},
			ErrInvalidTree, []string{"no root"}},
		{"two roots", []Association{root, {Account: "other"}},
			ErrInvalidTree, []string{`"other"`, `"root"`}},
		{"missing parent", []Association{root, {Account: "a", Parent: "nope"}},
			ErrInvalidTree, []string{`account "a"`, `"nope"`}},
		{"user in missing account", []Association{root, {Account: "ghost", User: "u"}},
			ErrInvalidTree, []string{`user "u"`, `"ghost"`}},
		{"cycle", []Association{root, {Account: "a", Parent: "root"}, {Account: "b", Parent: "c"}, {Account: "c", Parent: "d"}, {Account: "d", Parent: "b"}},
			ErrInvalidTree, []string{"cycle", "b", "c", "d"}},
		{"self parent", []Association{root, {Account: "a", Parent: "a"}},
			ErrInvalidTree, []string{"cycle", "a -> a"}},
		{"duplicate account", []Association{root, {Account: "a", Parent: "root"}, {Account: "a", Parent: "root"}},
			ErrInvalidTree, []string{`account "a"`, "duplicate"}},
		{"duplicate user", []Association{root, {Account: "root", User: "u"}, {Account: "root", User: "u"}},
			ErrInvalidTree, []string{`user "u"`, "duplicate"}},
		{"empty account", []Association{root, {User: "u"}},
			ErrInvalidTree, []string{"association 1", "empty Account"}},
		{"user with other parent", []Association{root, {Account: "a", Parent: "root"}, {Account: "a", User: "u", Parent: "root"}},
			ErrInvalidTree, []string{`user "u"`, "Parent"}},
		{"negative shares", []Association{root, {Account: "a", Parent: "root", Shares: -1}},
			ErrInvalidShares, []string{`account "a"`, "Shares -1"}},
		{"huge shares", []Association{root, {Account: "a", Parent: "root", Shares: MaxShares + 1}},
			ErrInvalidShares, []string{`account "a"`}},
		{"NaN usage", []Association{root, {Account: "root", User: "u", Usage: math.NaN()}},
			ErrInvalidUsage, []string{`user "u"`, "Usage NaN"}},
		{"Inf usage", []Association{root, {Account: "root", User: "u", Usage: math.Inf(1)}},
			ErrInvalidUsage, []string{`user "u"`, "Usage +Inf"}},
		{"negative usage", []Association{root, {Account: "root", User: "u", Usage: -1}},
			ErrInvalidUsage, []string{`user "u"`, "Usage -1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewTree(c.assocs, TreeOptions{})
			require.ErrorIs(t, err, c.is)
			for _, m := range c.msg {
				assert.Contains(t, err.Error(), m)
			}
		})
	}
	_, err := NewTree([]Association{root}, TreeOptions{Flags: 1 << 31})
	require.ErrorIs(t, err, ErrInvalidConfig)
}

func TestTreeUpdateErrors(t *testing.T) {
	tree, err := NewTree(byuTree(), TreeOptions{})
	require.NoError(t, err)
	before := tree.Format(ShareFormat{Long: true})
	i, _ := tree.Lookup("aD", "uD2")
	require.ErrorIs(t, tree.SetUsage(-1, 1), ErrUnknownAssociation)
	require.ErrorIs(t, tree.SetUsage(tree.Len(), 1), ErrUnknownAssociation)
	err = tree.UpdateUsage(UsageUpdate{Index: i, Usage: 5}, UsageUpdate{Index: i, Usage: math.NaN()})
	require.ErrorIs(t, err, ErrInvalidUsage)
	assert.Contains(t, err.Error(), `user "uD2"`)
	assert.Equal(t, before, tree.Format(ShareFormat{Long: true}), "a failed update changes nothing")
}

func TestTreeAccessors(t *testing.T) {
	tree, err := NewTree(byuTree(), TreeOptions{})
	require.NoError(t, err)
	assert.Equal(t, 35, tree.Len())
	assert.Equal(t, 0, tree.Root())
	i, ok := tree.Lookup("aGA", "")
	require.True(t, ok)
	a, ok := tree.Association(i)
	require.True(t, ok)
	assert.Equal(t, "aG", a.Parent)
	_, ok = tree.Lookup("aGA", "nobody")
	assert.False(t, ok)
	_, ok = tree.Association(99)
	assert.False(t, ok)
	_, ok = tree.Row(-1)
	assert.False(t, ok)
	assert.Equal(t, 0.0, tree.Factor(99))
	assert.Equal(t, 0.0, tree.Factor(i), "Fair Tree gives accounts no factor")
	assert.Equal(t, "fair_tree", tree.Algorithm().String())
}

// TestSshareFormat checks the aligned layout against a golden rendering.
func TestSshareFormat(t *testing.T) {
	tree, err := NewTree([]Association{
		{Account: "root"},
		{Account: "physics", Parent: "root", Shares: 3},
		{Account: "physics", User: "alice", Shares: 1, Usage: 3600},
		{Account: "physics", User: "bob", SharesParent: true},
		{Account: "a-very-long-account-name", Parent: "root", Shares: 1},
		{Account: "a-very-long-account-name", User: "carol", Shares: 1, Usage: 1800},
	}, TreeOptions{})
	require.NoError(t, err)
	want := strings.Join([]string{
		"Account                    User  RawShares  NormShares    RawUsage   NormUsage  EffectvUsage  FairShare    LevelFS",
		"-------------------- ---------- ---------- ----------- ----------- ----------- ------------- ---------- ----------",
		"root                                          0.000000        5400                  1.000000",
		" a-very-long-accoun+                     1    0.250000        1800    0.333333      0.333333              0.750000",
		"  a-very-long-accou+      carol          1    1.000000        1800    0.333333      1.000000   0.333333   1.000000",
		" physics                                 3    0.750000        3600    0.666667      0.666667              1.125000",
		"  physics                 alice          1    1.000000        3600    0.666667      1.000000   0.666667   1.000000",
		"  physics                   bob     parent    0.750000           0    0.000000      0.000000   1.000000",
		"",
	}, "\n")
	assert.Equal(t, want, tree.Format(ShareFormat{Long: true}))

	short := tree.Format(ShareFormat{})
	assert.NotContains(t, short, "LevelFS")
	assert.NotContains(t, short, "NormUsage")

	classic, err := NewTree([]Association{{Account: "root"}, {Account: "root", User: "u", Shares: 1, Usage: 1}}, TreeOptions{Flags: NoFairTree})
	require.NoError(t, err)
	assert.Equal(t, "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|\n"+
		"root|||1.000000|1||1.000000||\n"+
		" root|u|1|1.000000|1|1.000000|1.000000|0.500000|\n",
		classic.Format(ShareFormat{Long: true, Parsable: true}))
}

func TestDominantShare(t *testing.T) {
	reg, err := gres.NewRegistry("gres/gpu")
	require.NoError(t, err)
	gpu := reg.MustLookup("gres/gpu")
	capacity := reg.NewVector()
	capacity[gres.CPU], capacity[gpu] = 1000, 100
	vec := func(cpu, g float64) []float64 {
		v := make([]float64, reg.Len())
		v[gres.CPU], v[gpu] = cpu, g
		return v
	}
	// gpuheavy used 50 GPU-hours and few CPUs; cpuheavy used 400 CPU-hours.
	// By billing (CPU-seconds only) gpuheavy looks idle; by dominant share
	// it used half the GPUs for an hour, more than cpuheavy's 40 % of CPUs.
	assocs := []Association{
		{Account: "root"},
		{Account: "root", User: "gpuheavy", Shares: 1, Usage: 10 * 3600, TRESUsage: vec(10*3600, 50*3600)},
		{Account: "root", User: "cpuheavy", Shares: 1, Usage: 400 * 3600, TRESUsage: vec(400*3600, 0)},
	}
	billing, err := NewTree(assocs, TreeOptions{})
	require.NoError(t, err)
	drf, err := NewTree(assocs, TreeOptions{Dominant: &DominantShare{Registry: reg, Capacity: capacity}})
	require.NoError(t, err)
	g, _ := billing.Lookup("root", "gpuheavy")
	c, _ := billing.Lookup("root", "cpuheavy")
	assert.Greater(t, billing.Factor(g), billing.Factor(c))
	assert.Less(t, drf.Factor(g), drf.Factor(c))
	rg, _ := drf.Row(g)
	assert.Equal(t, 0.5*3600, rg.RawUsage, "dominant share in cluster-seconds")
	rr, _ := drf.Row(drf.Root())
	assert.Equal(t, max(410.0*3600/1000, 50.0*3600/100), rr.RawUsage, "the root's dominant share of the summed vector")

	// Updates in the dominant mode.
	require.NoError(t, drf.SetTRESUsage(g, nil))
	assert.Greater(t, drf.Factor(g), drf.Factor(c))

	_, err = NewTree(assocs, TreeOptions{Dominant: &DominantShare{Capacity: capacity}})
	require.ErrorIs(t, err, ErrInvalidConfig)
	bad := append([]Association(nil), assocs...)
	bad[1].TRESUsage = make([]float64, reg.Len()+1)
	_, err = NewTree(bad, TreeOptions{Dominant: &DominantShare{Registry: reg, Capacity: capacity}})
	require.ErrorIs(t, err, ErrInvalidUsage)
	require.ErrorIs(t, err, gres.ErrUnknownTRES)
	bad[1].TRESUsage = vec(math.NaN(), 0)
	_, err = NewTree(bad, TreeOptions{Dominant: &DominantShare{Registry: reg, Capacity: capacity}})
	require.ErrorIs(t, err, ErrInvalidUsage)
	assert.Contains(t, err.Error(), "TRESUsage[cpu]")
	_, err = NewTree(assocs, TreeOptions{Dominant: &DominantShare{Registry: reg, Capacity: make(gres.Vector, reg.Len()+3)}})
	require.ErrorIs(t, err, gres.ErrUnknownTRES)
}

func TestUsageIncludesDescendants(t *testing.T) {
	// The BYU tree with each account's usage given as sshare shows it.
	own := byuTree()
	ref, err := NewTree(own, TreeOptions{})
	require.NoError(t, err)
	incl := append([]Association(nil), own...)
	for i := range incl {
		r, _ := ref.Row(i)
		incl[i].Usage = r.RawUsage
	}
	tree, err := NewTree(incl, TreeOptions{UsageIncludesDescendants: true})
	require.NoError(t, err)
	assert.Equal(t, ref.Format(ShareFormat{Long: true}), tree.Format(ShareFormat{Long: true}))

	// Updating in this mode changes only the association given.
	i, _ := tree.Lookup("aD", "uD2")
	require.NoError(t, tree.SetUsage(i, 0))
	d, _ := tree.Lookup("aD", "")
	r, _ := tree.Row(d)
	assert.Equal(t, 110.0, r.RawUsage)
	ru, _ := tree.Row(i)
	assert.True(t, math.IsInf(ru.LevelFS, 1))
}

func TestPartitionAssociations(t *testing.T) {
	assocs := []Association{
		{Account: "root"},
		{Account: "lab", Parent: "root", Shares: 1},
		{Account: "lab", User: "ann", Shares: 1, Usage: 10},
		{Account: "lab", User: "ann", Partition: "gpu", Shares: 3, Usage: 10},
	}
	tree, err := NewTree(assocs, TreeOptions{})
	require.NoError(t, err)
	i, ok := tree.Lookup("lab", "ann")
	require.True(t, ok)
	assert.Equal(t, 2, i)
	j, ok := tree.LookupPartition("lab", "ann", "gpu")
	require.True(t, ok)
	assert.Equal(t, 3, j)
	_, ok = tree.LookupPartition("lab", "ann", "cpu")
	assert.False(t, ok)
	assert.Greater(t, tree.Factor(j), tree.Factor(i), "more shares, same usage")
	a, _ := tree.Association(j)
	assert.Equal(t, "gpu", a.Partition)
	assert.Contains(t, tree.Format(ShareFormat{Partitions: true}), "  lab                       ann          gpu")

	dup := append(assocs, Association{Account: "lab", User: "ann", Partition: "gpu"})
	_, err = NewTree(dup, TreeOptions{})
	require.ErrorIs(t, err, ErrInvalidTree)
	assert.Contains(t, err.Error(), `user "ann" in account "lab" partition "gpu": duplicate of association 3`)

	_, err = NewTree([]Association{{Account: "root"}, {Account: "x", Parent: "root", Partition: "gpu"}}, TreeOptions{})
	require.ErrorIs(t, err, ErrInvalidTree)
	assert.Contains(t, err.Error(), "Partition")
}
