package topology

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExpandHostlist(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ,", nil},
		{"tux5", []string{"tux5"}},
		{"tux[0-3,8]", []string{"tux0", "tux1", "tux2", "tux3", "tux8"}},
		{"tux[5]", []string{"tux5"}},
		{"n[08-10]", []string{"n08", "n09", "n10"}},
		{"n[8-10]", []string{"n8", "n9", "n10"}},
		{"n[008-10]", []string{"n008", "n009", "n010"}},
		{"n[1-010]", []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10"}},
		{"n[8,09]", []string{"n8", "n09"}},
		{"a,b c\td", []string{"a", "b", "c", "d"}},
		{"tux[0-1],gpu[00-01]", []string{"tux0", "tux1", "gpu00", "gpu01"}},
		{"rack[1-2]a", []string{"rack1a", "rack2a"}},
		{"r[1-2]n[1-2]", []string{"r1n1", "r1n2", "r2n1", "r2n2"}},
		{"[1-3]", []string{"1", "2", "3"}},
		{"a,a", []string{"a", "a"}},
		{"x[3-3]", []string{"x3"}},
		{"n[0-1]-ib", []string{"n0-ib", "n1-ib"}},
		{"s-1,s-2", []string{"s-1", "s-2"}},
	}
	for _, tc := range tests {
		got, err := ExpandHostlist(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestExpandHostlistErrors(t *testing.T) {
	tests := []struct {
		in      string
		want    error
		mention string
	}{
		{"tux[0-3", ErrSyntax, "unclosed"},
		{"tux0-3]", ErrSyntax, "unmatched ']' at offset 6"},
		{"tux[[1]]", ErrSyntax, "nested"},
		{"tux[]", ErrSyntax, "empty brackets"},
		{"tux[3-1]", ErrSyntax, "descending range \"3-1\""},
		{"tux[a-b]", ErrSyntax, "\"a\" is not a number"},
		{"tux[1-]", ErrSyntax, "missing number"},
		{"tux[-1]", ErrSyntax, "missing number"},
		{"tux[1,,2]", ErrSyntax, "missing number"},
		{"tux[1 2]", ErrSyntax, "whitespace inside brackets"},
		{"tux[1234567890123456789]", ErrSyntax, "longer than 18 digits"},
		{"tux[0-2000000]", ErrTooLarge, "more than"},
		{"a[0-999]b[0-999]c[0-999]", ErrTooLarge, "more than"},
	}
	for _, tc := range tests {
		got, err := ExpandHostlist(tc.in)
		require.Error(t, err, tc.in)
		assert.Nil(t, got)
		assert.ErrorIs(t, err, tc.want, tc.in)
		assert.Contains(t, err.Error(), tc.mention, tc.in)
		assert.Contains(t, err.Error(), strconv.Quote(tc.in), "error names the expression")
	}
}

func TestCompressHostlist(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"tux5"}, "tux5"},
		{[]string{"tux3", "tux0", "tux8", "tux1", "tux2"}, "tux[0-3,8]"},
		{[]string{"n08", "n09", "n10"}, "n[08-10]"},
		{[]string{"n8", "n9", "n10"}, "n[8-10]"},
		{[]string{"n8", "n09"}, "n[8,09]"},
		{[]string{"n1", "n01", "n2"}, "n[1,01,2]"},
		{[]string{"b", "a", "a"}, "a,b"},
		{[]string{"gpu1", "tux1", "tux2", "gpu2", "login"}, "gpu[1-2],login,tux[1-2]"},
		{[]string{"n", "n1", "n2"}, "n,n[1-2]"},
		{[]string{"1", "2", "3"}, "[1-3]"},
		{[]string{"n0-ib", "n1-ib"}, "n0-ib,n1-ib"},
		{[]string{"x0000000000000000000001", "x0000000000000000000002"}, "x0000000000000000000001,x0000000000000000000002"},
	}
	for _, tc := range tests {
		got, err := CompressHostlist(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
	for _, bad := range []string{"", "a[1]", "a,b", "a b", "x]"} {
		_, err := CompressHostlist([]string{"ok", bad})
		assert.ErrorIs(t, err, ErrSyntax, "%q", bad)
		assert.Contains(t, err.Error(), strconv.Quote(bad))
	}
}

// canonical is the order and uniqueness CompressHostlist promises.
func canonical(names []string) []string {
	c := slices.Clone(names)
	slices.SortFunc(c, CompareHostnames)
	c = slices.CompactFunc(c, func(a, b string) bool { return a == b })
	if len(c) == 0 {
		return nil
	}
	return c
}

func TestHostlistRoundTripProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	prefixes := []string{"tux", "gpu", "n", "rack1-n", "", "a0b"}
	for iter := range 2000 {
		var names []string
		for range rng.IntN(40) {
			p := prefixes[rng.IntN(len(prefixes))]
			switch rng.IntN(5) {
			case 0:
				names = append(names, p+"x") // no number
			case 1:
				names = append(names, p+"0"+strconv.Itoa(rng.IntN(30))) // padded
			default:
				names = append(names, p+strconv.Itoa(rng.IntN(30)))
			}
		}
		names = slices.DeleteFunc(names, func(s string) bool { return s == "" })
		s, err := CompressHostlist(names)
		require.NoError(t, err)
		back, err := ExpandHostlist(s)
		require.NoError(t, err, "iter %d: %q", iter, s)
		require.Equal(t, canonical(names), back, "iter %d: %q", iter, s)
		again, err := CompressHostlist(back)
		require.NoError(t, err)
		require.Equal(t, s, again, "compress is idempotent on its own output")
	}
}

func TestCompareHostnames(t *testing.T) {
	assert.Equal(t, -1, CompareHostnames("n2", "n10"))
	assert.Equal(t, -1, CompareHostnames("n1", "n01"))
	assert.Equal(t, -1, CompareHostnames("n", "n0"))
	assert.Equal(t, 1, CompareHostnames("tux1", "gpu9"))
	assert.Equal(t, 0, CompareHostnames("a7", "a7"))
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"", "tux[0-3,8]", "n[08-10]", "r[1-2]n[1-2]", "a,b c", "x[", "x]", "[1-3]",
		"n[1-010]", "tux[3-1]", "a[0-9]b[0-9]", "n[0001-0003],m5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := ExpandHostlist(s)
		if err != nil {
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%q: error %v wraps no sentinel", s, err)
			}
			return
		}
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, "[], \t\r\n") {
				t.Fatalf("%q: bad name %q", s, n)
			}
		}
		if len(names) > 5000 {
			return // keep the round trip cheap
		}
		c, err := CompressHostlist(names)
		if err != nil {
			t.Fatalf("%q: compress: %v", s, err)
		}
		back, err := ExpandHostlist(c)
		if err != nil {
			t.Fatalf("%q → %q: re-expand: %v", s, c, err)
		}
		if want := canonical(names); !slices.Equal(want, back) {
			t.Fatalf("%q → %q: got %v want %v", s, c, back, want)
		}
	})
}

func FuzzCompressHostlist(f *testing.F) {
	f.Add("tux1,tux2,tux03")
	f.Add("n8,n09,n10,n")
	f.Add("a,b,a")
	f.Fuzz(func(t *testing.T, joined string) {
		names := strings.Split(joined, ",")
		c, err := CompressHostlist(names)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v is not ErrSyntax", err)
			}
			return
		}
		back, err := ExpandHostlist(c)
		if err != nil {
			t.Fatalf("%q: re-expand %q: %v", names, c, err)
		}
		if want := canonical(names); !slices.Equal(want, back) {
			t.Fatalf("%q → %q: got %v want %v", names, c, back, want)
		}
	})
}
