package feature_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/feature"
)

// The forms are sbatch's --constraint examples: single name, AND, OR,
// matching OR, node number, multiple counts, brackets with
// parenthesised terms, parentheses.
func TestParseForms(t *testing.T) {
	for _, tc := range []struct {
		in, canon string
		kind      feature.Kind
		nodes     int
	}{
		{"", "", feature.KindNone, 0},
		{"gpu", "gpu", feature.KindFilter, 0},
		{"intel&ib", "intel&ib", feature.KindFilter, 0},
		{"intel,ib", "intel&ib", feature.KindFilter, 0},
		{"intel|amd", "intel|amd", feature.KindFilter, 0},
		{"(intel|amd)&ib", "(intel|amd)&ib", feature.KindFilter, 0},
		{"a&b|c", "a&b|c", feature.KindFilter, 0},
		{"[i02&(scratch|work)]", "i02&(scratch|work)", feature.KindFilter, 0},
		{"[rack1|rack2|rack3]", "[rack1|rack2|rack3]", feature.KindMatchingOR, 0},
		{"[(a&b)|c]", "[a&b|c]", feature.KindMatchingOR, 0},
		{"graphics*4", "graphics*4", feature.KindCounts, 4},
		{"[rack1*2&rack2*4]", "[rack1*2&rack2*4]", feature.KindCounts, 6},
		{"[(rack1|rack2)*1&(rack3)*2]", "[(rack1|rack2)*1&rack3*2]", feature.KindCounts, 3},
		{"fat*4&thin*12", "[fat*4&thin*12]", feature.KindCounts, 16},
		{"  gpu  ", "gpu", feature.KindFilter, 0},
	} {
		c, err := feature.Parse(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if c.String() != tc.canon || c.Kind() != tc.kind || c.Nodes() != tc.nodes {
			t.Errorf("Parse(%q) = %q %v nodes %d, want %q %v %d", tc.in, c, c.Kind(), c.Nodes(), tc.canon, tc.kind, tc.nodes)
		}
		again, err := feature.Parse(c.String())
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Errorf("Parse(%q) of the canonical form = %v, %v; want %v", c.String(), again, err, c)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"&", "a&", "|b", "a||b", "(a", "a)", "[a|b", "a|b]", "[]", "()", "a*", "a*0", "a*x",
		"a*2|b*2", "[a*2|b]", "[a*2&b]", "(a*2)&b", "a b", "[a]&b", "a[b]", "a**2", "*2",
	} {
		if _, err := feature.Parse(in); !errors.Is(err, feature.ErrSyntax) {
			t.Errorf("Parse(%q) = %v, want ErrSyntax", in, err)
		}
	}
	if _, err := feature.Parse("a*99999999"); !errors.Is(err, feature.ErrTooLarge) {
		t.Errorf("huge count: %v", err)
	}
}

func TestMatch(t *testing.T) {
	node := []string{"intel", "ib", "rack2"}
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"", true}, {"intel", true}, {"amd", false}, {"intel&ib", true}, {"intel&amd", false},
		{"amd|intel", true}, {"(amd|intel)&ib", true}, {"(amd|intel)&gpu", false},
		{"[rack1|rack2]", true}, {"[rack1|rack3]", false},
		{"rack1*2", true}, // counted: the job's other nodes are free
	} {
		c, err := feature.Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Match(node); got != tc.want {
			t.Errorf("%q.Match(%v) = %v, want %v", tc.in, node, got, tc.want)
		}
	}
	c, _ := feature.Parse("[(a|b)*1&c*2]")
	if g := c.Groups(); len(g) != 2 || !g[0].Expr.Match([]string{"b"}) || g[0].Expr.Match([]string{"c"}) || g[1].Count != 2 {
		t.Errorf("groups %v", g)
	}
	if n := c.Names(); !reflect.DeepEqual(n, []string{"a", "b", "c"}) {
		t.Errorf("Names = %v", n)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"gpu", "a&b|c", "[a|b]", "[a*2&(b|c)*3]", "(a|(b&c))", "x*4", "[(a&b)|c]", "a,b", "((((a))))"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := feature.Parse(s)
		if err != nil {
			if !errors.Is(err, feature.ErrSyntax) && !errors.Is(err, feature.ErrTooLarge) {
				t.Fatalf("Parse(%q): unwrapped error %v", s, err)
			}
			return
		}
		again, err := feature.Parse(c.String())
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", c.String(), s, err)
		}
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("round trip of %q: %q → %#v, want %#v", s, c.String(), again, c)
		}
		_ = c.Match([]string{"a", "b"})
		// Changeable features ("a", "b" here) come back only as terms of
		// the outermost AND: every node matching c has them all.
		ch := func(n string) bool { return n == "a" || n == "b" }
		names, err := c.Changeable(ch)
		if err != nil {
			if !errors.Is(err, feature.ErrChangeable) {
				t.Fatalf("Changeable(%q): unwrapped error %v", s, err)
			}
			return
		}
		all := c.Names()
		for _, n := range names {
			if !ch(n) || !slices.Contains(all, n) {
				t.Fatalf("Changeable(%q) = %v: %q is not a changeable name of it", s, names, n)
			}
			without := slices.DeleteFunc(slices.Clone(all), func(x string) bool { return x == n })
			if c.Match(without) {
				t.Fatalf("Changeable(%q) = %v, but a node without %q matches", s, names, n)
			}
		}
	})
}

// Slurm's node features plugins take changeable features only ANDed at
// the outermost level; OR, matching OR and counts with them are refused,
// while those forms over static features stay accepted.
func TestChangeable(t *testing.T) {
	ch := func(n string) bool { return n == "mig7" || n == "mig1" || n == "cache" }
	for _, tc := range []struct {
		in   string
		want []string
		bad  string // a word the error names
	}{
		{"", nil, ""},
		{"ib", nil, ""},
		{"mig7", []string{"mig7"}, ""},
		{"mig7&ib", []string{"mig7"}, ""},
		{"cache,mig7&(ib|eth)", []string{"cache", "mig7"}, ""},
		{"[rack1|rack2]", nil, ""},
		{"ib*2", nil, ""},
		{"mig7|mig1", nil, "OR"},
		{"ib&(mig7|eth)", nil, "OR"},
		{"[mig7|mig1]", nil, "matching OR"},
		{"mig7*2", nil, "count"},
		{"[ib*1&mig1*2]", nil, "count"},
	} {
		c, err := feature.Parse(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		got, err := c.Changeable(ch)
		if tc.bad != "" {
			if !errors.Is(err, feature.ErrChangeable) || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("Changeable(%q) = %v, %v; want an ErrChangeable naming %q", tc.in, got, err, tc.bad)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Changeable(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
