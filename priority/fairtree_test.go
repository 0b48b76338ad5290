package priority

import (
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// byuTree is the association tree of Slurm's Fair Tree regression test
// (testsuite/expect/test24.4 and test24.4.prog.c, contributed by Brigham
// Young University): shares and usage per association. In Slurm an
// account's raw usage is the sum of its children's (the values the test
// program sets on accounts are discarded when the tree is rebuilt), so
// accounts have no usage of their own here.
func byuTree() []Association {
	acct := func(name, parent string, shares int64) Association {
		return Association{Account: name, Parent: parent, Shares: shares}
	}
	user := func(account, name string, shares int64, usage float64) Association {
		return Association{Account: account, User: name, Shares: shares, Usage: usage}
	}
	parentAcct := func(name, parent string) Association {
		return Association{Account: name, Parent: parent, SharesParent: true}
	}
	parentUser := func(account, name string, usage float64) Association {
		return Association{Account: account, User: name, SharesParent: true, Usage: usage}
	}
	return []Association{
		{Account: "root"},
		acct("aA", "root", 40),
		acct("aAA", "aA", 30),
		user("aAA", "uAA1", 1, 20),
		acct("aAB", "aA", 10),
		user("aAB", "uAB1", 1, 25),
		user("aAB", "uAB2", 1, 0),
		acct("aB", "root", 60),
		acct("aBA", "aB", 25),
		user("aBA", "uBA1", 1, 25),
		acct("aBB", "aB", 35),
		user("aBB", "uBB1", 1, 0),
		acct("aC", "root", 0),
		user("aC", "uC1", 0, 30),
		acct("aD", "root", 50),
		parentAcct("aDA", "aD"),
		parentUser("aDA", "uDA1", 10),
		user("aDA", "uDA2", 30, 10),
		user("aDA", "uDA3", 50, 25),
		parentUser("aD", "uD1", 20),
		user("aD", "uD2", 40, 20),
		user("aD", "uD3", 50, 25),
		acct("aE", "root", 10),
		user("aE", "aE1", 10, 0),
		user("aE", "aE2", 10, 0),
		user("root", "u1", 10, 0),
		acct("aF", "root", 20),
		user("aF", "uF1", 10, 0),
		user("aF", "uF2", 20, 0),
		acct("aG", "root", 8),
		user("aG", "uG1", 10, 10),
		acct("aGA", "aG", 10),
		user("aGA", "uGA1", 20, 4),
		user("aGA", "uGA2", 20, 6),
		user("root", "u2", 10, 10),
	}
}

// TestFairTreeBYU reproduces every number of Slurm's Fair Tree regression
// test: sshare -lp's Account, User, RawShares, NormShares, RawUsage,
// NormUsage, EffectvUsage, FairShare and LevelFS columns, as that test
// expects them (its last two columns, GrpTRESMins and TRESRunMins, are not
// fair-share values).
func TestFairTreeBYU(t *testing.T) {
	tree, err := NewTree(byuTree(), TreeOptions{})
	require.NoError(t, err)
	require.Equal(t, FairTree, tree.Algorithm())
	require.Equal(t, 21, tree.Users())

	want := []string{
		"root|||0.000000|240||1.000000|||",
		"root|u1|10|0.048077|0|0.000000|0.000000|1.000000|inf|",
		"root|u2|10|0.048077|10|0.041667|0.041667|0.666667|1.153846|",
		"aA||40|0.192308|45|0.187500|0.187500||1.025641|",
		"aAA||30|0.750000|20|0.083333|0.444444||1.687500|",
		"aAA|uAA1|1|1.000000|20|0.083333|1.000000|0.619048|1.000000|",
		"aAB||10|0.250000|25|0.104167|0.555556||0.450000|",
		"aAB|uAB1|1|0.500000|25|0.104167|1.000000|0.523810|0.500000|",
		"aAB|uAB2|1|0.500000|0|0.000000|0.000000|0.571429|inf|",
		"aB||60|0.288462|25|0.104167|0.104167||2.769231|",
		"aBA||25|0.416667|25|0.104167|1.000000||0.416667|",
		"aBA|uBA1|1|1.000000|25|0.104167|1.000000|0.714286|1.000000|",
		"aBB||35|0.583333|0|0.000000|0.000000||inf|",
		"aBB|uBB1|1|1.000000|0|0.000000|0.000000|0.761905|inf|",
		"aC||0|0.000000|30|0.125000|0.125000||0.000000|",
		"aC|uC1|0|0.000000|30|0.125000|1.000000|0.047619|0.000000|",
		"aD||50|0.240385|110|0.458333|0.458333||0.524476|",
		"aD|uD1|parent|0.240385|20|0.083333|0.181818|0.476190||",
		"aD|uD2|40|0.235294|20|0.083333|0.181818|0.238095|1.294118|",
		"aD|uD3|50|0.294118|25|0.104167|0.227273|0.333333|1.294118|",
		"aDA||parent|0.240385|45|0.187500|0.409091|||",
		"aDA|uDA1|parent|0.240385|10|0.041667|0.090909|0.476190||",
		"aDA|uDA2|30|0.176471|10|0.041667|0.090909|0.380952|1.941176|",
		"aDA|uDA3|50|0.294118|25|0.104167|0.227273|0.333333|1.294118|",
		"aE||10|0.048077|0|0.000000|0.000000||inf|",
		"aE|aE1|10|0.500000|0|0.000000|0.000000|1.000000|inf|",
		"aE|aE2|10|0.500000|0|0.000000|0.000000|1.000000|inf|",
		"aF||20|0.096154|0|0.000000|0.000000||inf|",
		"aF|uF1|10|0.333333|0|0.000000|0.000000|1.000000|inf|",
		"aF|uF2|20|0.666667|0|0.000000|0.000000|1.000000|inf|",
		"aG||8|0.038462|20|0.083333|0.083333||0.461538|",
		"aG|uG1|10|0.500000|10|0.041667|0.500000|0.190476|1.000000|",
		"aGA||10|0.500000|10|0.041667|0.500000||1.000000|",
		"aGA|uGA1|20|0.500000|4|0.016667|0.400000|0.190476|1.250000|",
		"aGA|uGA2|20|0.500000|6|0.025000|0.600000|0.095238|0.833333|",
	}
	out := tree.Format(ShareFormat{Long: true, Parsable: true, NoHeader: true})
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i := range got {
		got[i] = strings.TrimLeft(got[i], " ") // sshare indents by depth
	}
	assert.Equal(t, want, got)

	// The factors are exact rank fractions: rank / 21.
	ranks := map[string]float64{
		"u1": 21, "aE1": 21, "aE2": 21, "uF1": 21, "uF2": 21,
		"uBB1": 16, "uBA1": 15, "u2": 14, "uAA1": 13, "uAB2": 12, "uAB1": 11,
		"uD1": 10, "uDA1": 10, "uDA2": 8, "uD3": 7, "uDA3": 7, "uD2": 5,
		"uG1": 4, "uGA1": 4, "uGA2": 2, "uC1": 1,
	}
	for _, r := range tree.Shares() {
		if r.User == "" {
			continue
		}
		assert.Equal(t, ranks[r.User]/21, r.FairShare, "user %s", r.User)
		i, ok := tree.Lookup(r.Account, r.User)
		require.True(t, ok)
		assert.Equal(t, r.FairShare, tree.Factor(i))
	}
	// uD2 and uD3 have mathematically equal Level FS (40/170 ÷ 20/110 and
	// 50/170 ÷ 25/110); in Slurm's arithmetic uD3's is larger, which is why
	// uD3 ranks above uD2 although sshare prints the same six digits.
	d2, _ := tree.Lookup("aD", "uD2")
	d3, _ := tree.Lookup("aD", "uD3")
	assert.Equal(t, -1, xfCmp(tree.nodes[d2].lf, tree.nodes[d3].lf))
}

// TestFairTreeTies exercises each tie rule on small trees.
func TestFairTreeTies(t *testing.T) {
	type want map[string]float64 // user → factor
	cases := []struct {
		name  string
		tree  []Association
		want  want
		notes string
	}{
		{
			name: "sibling users with equal Level FS share a rank; the counter still moves",
			tree: []Association{
				{Account: "root"},
				{Account: "a", Parent: "root", Shares: 1},
				{Account: "a", User: "x", Shares: 1, Usage: 10},
				{Account: "a", User: "y", Shares: 1, Usage: 10},
				{Account: "a", User: "z", Shares: 1, Usage: 30},
			},
			want: want{"x": 3.0 / 3, "y": 3.0 / 3, "z": 1.0 / 3},
		},
		{
			name: "a user tied with a sibling account ranks with that account's top user",
			tree: []Association{
				{Account: "root"},
				{Account: "p", Parent: "root", Shares: 1},
				{Account: "p", User: "u", Shares: 1, Usage: 10},
				{Account: "q", Parent: "p", Shares: 1},
				{Account: "q", User: "q1", Shares: 1, Usage: 4},
				{Account: "q", User: "q2", Shares: 1, Usage: 6},
				{Account: "p", User: "w", Shares: 2, Usage: 0},
			},
			// p's children: w (S 2/4, no usage: +Inf), then u and q, both
			// S 1/4 and U 10/20 (Level FS 0.5), the user first. q starts
			// tied with u, so q1 takes u's rank.
			want: want{"w": 4.0 / 4, "u": 3.0 / 4, "q1": 3.0 / 4, "q2": 1.0 / 4},
		},
		{
			name: "tied sibling accounts are walked one after the other (no merge, as Slurm's code)",
			tree: []Association{
				{Account: "root"},
				{Account: "a", Parent: "root", Shares: 1},
				{Account: "a", User: "a1", Shares: 1, Usage: 1},
				{Account: "a", User: "a2", Shares: 1, Usage: 3},
				{Account: "b", Parent: "root", Shares: 1},
				{Account: "b", User: "b1", Shares: 1, Usage: 0},
				{Account: "b", User: "b2", Shares: 1, Usage: 4},
			},
			// a and b tie (S 1/2, U 4/8). a first (input order): a1 rank 4,
			// a2 rank 3. b starts tied: b1 keeps rank 3; b2 rank 1. Merging
			// would have ranked b1 first.
			want: want{"a1": 4.0 / 4, "a2": 3.0 / 4, "b1": 3.0 / 4, "b2": 1.0 / 4},
		},
		{
			name: "zero shares rank last even without usage",
			tree: []Association{
				{Account: "root"},
				{Account: "root", User: "busy", Shares: 1, Usage: 100},
				{Account: "root", User: "none", Shares: 0, Usage: 0},
			},
			want: want{"busy": 2.0 / 2, "none": 1.0 / 2},
		},
		{
			name: "no usage anywhere: every user ties at 1",
			tree: []Association{
				{Account: "root"},
				{Account: "a", Parent: "root", Shares: 3},
				{Account: "a", User: "x", Shares: 1},
				{Account: "b", Parent: "root", Shares: 1},
				{Account: "b", User: "y", Shares: 5},
				{Account: "root", User: "z", Shares: 1},
			},
			want: want{"x": 1, "y": 1, "z": 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tree, err := NewTree(tc.tree, TreeOptions{})
			require.NoError(t, err)
			for _, r := range tree.Shares() {
				if r.User == "" {
					continue
				}
				w, ok := tc.want[r.User]
				require.True(t, ok, r.User)
				assert.Equal(t, w, r.FairShare, "user %s", r.User)
			}
		})
	}
}

// TestXFloatQuo checks long-double division against math/big at 64 bits
// of precision, nearest-even.
func TestXFloatQuo(t *testing.T) {
	vals := []float64{1, 2, 3, 7, 10, 0.1, 1.0 / 3, 40.0 / 170, 20.0 / 110, 1e-300, 1e300,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 4294967294, 123456789.123}
	for _, a := range vals {
		for _, b := range vals {
			checkQuo(t, a, b)
		}
	}
	assert.Equal(t, xfInf, xfQuo(xfFromFloat64(1), xfZero))
	assert.Equal(t, xfZero, xfQuo(xfZero, xfFromFloat64(3)))
	assert.Equal(t, xfZero, xfQuo(xfFromFloat64(3), xfInf))
	assert.Equal(t, 1, xfCmp(xfInf, xfNoVal))
	assert.Equal(t, 1, xfCmp(xfNoVal, xfFromFloat64(4294967293)))
	assert.Equal(t, 0, xfCmp(xfNoVal, xfFromFloat64(4294967294)))
	assert.Equal(t, math.Inf(1), xfInf.float64())
	assert.Equal(t, 0.0, xfZero.float64())
	assert.Equal(t, 0.1, xfFromFloat64(0.1).float64())
}

// checkQuo compares xfQuo with math/big's 64-bit-precision quotient.
func checkQuo(t *testing.T, a, b float64) {
	t.Helper()
	got := xfQuo(xfFromFloat64(a), xfFromFloat64(b))
	q := new(big.Float).SetPrec(64).SetMode(big.ToNearestEven)
	q.Quo(new(big.Float).SetFloat64(a), new(big.Float).SetFloat64(b))
	mant := new(big.Float)
	exp := q.MantExp(mant) // q = mant × 2^exp, mant in [0.5, 1)
	m, acc := new(big.Float).SetMantExp(mant, 64).Uint64()
	require.Equal(t, big.Exact, acc, "%v/%v", a, b)
	want := xfloat{m: m, e: int32(exp - 64), k: xFinite}
	require.Equal(t, want, got, "%v / %v", a, b)
}
