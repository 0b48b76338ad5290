package topology

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lengths exercised by every table: empty, sub-word, word boundaries, and
// the standard 10,000-node scale.
var testLengths = []int{0, 1, 63, 64, 65, 127, 128, 130, 10000}

func members(s NodeSet) []int { return s.AppendTo(nil) }

func TestNewNodeSet(t *testing.T) {
	for _, n := range append([]int{-5}, testLengths...) {
		s := NewNodeSet(n)
		assert.Equal(t, max(n, 0), s.Len(), "n=%d", n)
		assert.Zero(t, s.Count())
		assert.True(t, s.IsEmpty())
		assert.Equal(t, -1, s.Next(0))
		assert.Equal(t, "{}", s.String())
	}
	var zero NodeSet
	assert.Zero(t, zero.Len())
	zero.Add(0) // ignored, no panic
	assert.True(t, zero.IsEmpty())
}

func TestFullNodeSet(t *testing.T) {
	for _, n := range testLengths {
		s := FullNodeSet(n)
		assert.Equal(t, n, s.Count(), "n=%d", n)
		if n > 0 {
			assert.True(t, s.Has(0))
			assert.True(t, s.Has(n-1))
		}
		assert.False(t, s.Has(n), "bit beyond the length must be clear")
		assert.False(t, s.Has(-1))
		// Bits past n in the last word must be trimmed.
		assert.Equal(t, n, s.IntersectionCount(FullNodeSet(n+64)))
	}
}

func TestNodeSetOf(t *testing.T) {
	tests := []struct {
		n    int
		idx  []int
		want []int
	}{
		{0, []int{0, 1}, nil},
		{1, []int{0, 0, 1, -1}, []int{0}},
		{65, []int{64, 63, 0, 65, 100}, []int{0, 63, 64}},
		{130, []int{129, 128, 64}, []int{64, 128, 129}},
	}
	for _, tc := range tests {
		s := NodeSetOf(tc.n, tc.idx...)
		assert.Equal(t, tc.want, members(s), "n=%d idx=%v", tc.n, tc.idx)
	}
}

func TestAddRemoveHas(t *testing.T) {
	tests := []struct {
		name string
		n    int
		add  []int
		rm   []int
		want []int
	}{
		{"empty", 0, []int{0, 5}, nil, nil},
		{"single", 1, []int{0}, nil, []int{0}},
		{"remove absent", 10, []int{3}, []int{4, -1, 10}, []int{3}},
		{"add twice", 10, []int{3, 3}, nil, []int{3}},
		{"word edges", 130, []int{0, 63, 64, 127, 128, 129}, []int{64}, []int{0, 63, 127, 128, 129}},
		{"out of range", 65, []int{-1, 65, 1 << 20}, nil, nil},
		{"last of 10000", 10000, []int{9999, 10000}, nil, []int{9999}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewNodeSet(tc.n)
			for _, i := range tc.add {
				s.Add(i)
			}
			for _, i := range tc.rm {
				s.Remove(i)
			}
			assert.Equal(t, tc.want, members(s))
			for _, i := range tc.want {
				assert.True(t, s.Has(i))
			}
			assert.Equal(t, len(tc.want), s.Count())
		})
	}
}

func TestFillReset(t *testing.T) {
	for _, n := range testLengths {
		s := NodeSetOf(n, 0, n/2)
		s.Fill()
		assert.Equal(t, n, s.Count())
		s.Reset()
		assert.True(t, s.IsEmpty())
		assert.Equal(t, n, s.Len())
	}
}

func TestCloneIsIndependent(t *testing.T) {
	a := NodeSetOf(130, 1, 64, 129)
	b := a.Clone()
	b.Add(2)
	a.Remove(1)
	assert.Equal(t, []int{64, 129}, members(a))
	assert.Equal(t, []int{1, 2, 64, 129}, members(b))
	alias := a // a value copy aliases the bits (documented)
	alias.Add(5)
	assert.True(t, a.Has(5))
	assert.Equal(t, 0, NodeSet{}.Clone().Len())
}

func TestCopyFrom(t *testing.T) {
	tests := []struct {
		name   string
		dstLen int
		dst    []int
		srcLen int
		src    []int
		want   []int
	}{
		{"same length", 70, []int{1, 2}, 70, []int{3, 69}, []int{3, 69}},
		{"shorter source clears the rest", 130, []int{100, 129}, 64, []int{0, 63}, []int{0, 63}},
		{"longer source is cut and trimmed", 65, nil, 200, []int{0, 64, 65, 127, 199}, []int{0, 64}},
		{"empty source", 10, []int{1}, 0, nil, nil},
		{"empty destination", 0, nil, 10, []int{1}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NodeSetOf(tc.dstLen, tc.dst...)
			d.CopyFrom(NodeSetOf(tc.srcLen, tc.src...))
			assert.Equal(t, tc.want, members(d))
			assert.Equal(t, tc.dstLen, d.Len())
			assert.Equal(t, len(tc.want), d.Count(), "no stray bits past Len")
		})
	}
}

func TestBinaryOps(t *testing.T) {
	tests := []struct {
		name             string
		aLen             int
		a                []int
		bLen             int
		b                []int
		and, or, andNot  []int
		subAB, subBA, eq bool
	}{
		{name: "both empty", aLen: 0, bLen: 0, subAB: true, subBA: true, eq: true},
		{name: "empty vs set", aLen: 10, bLen: 10, b: []int{1}, or: []int{1}, subAB: true},
		{name: "disjoint", aLen: 64, a: []int{0, 63}, bLen: 64, b: []int{1, 62},
			or: []int{0, 1, 62, 63}, andNot: []int{0, 63}},
		{name: "overlap across words", aLen: 130, a: []int{0, 64, 129}, bLen: 130, b: []int{64, 128, 129},
			and: []int{64, 129}, or: []int{0, 64, 128, 129}, andNot: []int{0}},
		{name: "equal", aLen: 65, a: []int{64}, bLen: 65, b: []int{64}, and: []int{64}, or: []int{64},
			subAB: true, subBA: true, eq: true},
		{name: "a shorter", aLen: 65, a: []int{1, 64}, bLen: 200, b: []int{1, 64, 199},
			and: []int{1, 64}, or: []int{1, 64, 199}, subAB: true},
		{name: "a longer", aLen: 200, a: []int{1, 150, 199}, bLen: 64, b: []int{1, 2},
			and: []int{1}, or: []int{1, 2, 150, 199}, andNot: []int{150, 199}},
		{name: "same members, different lengths", aLen: 10, a: []int{3}, bLen: 1000, b: []int{3},
			and: []int{3}, or: []int{3}, subAB: true, subBA: true, eq: true},
		{name: "10000 nodes", aLen: 10000, a: []int{0, 4999, 9999}, bLen: 10000, b: []int{4999, 9998},
			and: []int{4999}, or: []int{0, 4998 + 1, 9998, 9999}, andNot: []int{0, 9999}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := NodeSetOf(tc.aLen, tc.a...), NodeSetOf(tc.bLen, tc.b...)
			aOrig, bOrig := a.Clone(), b.Clone()

			and := a.And(b)
			assert.Equal(t, tc.and, members(and), "And")
			assert.Equal(t, tc.aLen, and.Len(), "And keeps the receiver's length")
			or := a.Or(b)
			assert.Equal(t, tc.or, members(or), "Or")
			assert.Equal(t, max(tc.aLen, tc.bLen), or.Len(), "Or takes the longer length")
			andNot := a.AndNot(b)
			assert.Equal(t, tc.andNot, members(andNot), "AndNot")
			assert.True(t, a.Equal(aOrig) && b.Equal(bOrig), "And/Or/AndNot must not modify operands")

			assert.Equal(t, len(tc.and), a.IntersectionCount(b), "IntersectionCount")
			assert.Equal(t, len(tc.and), b.IntersectionCount(a), "IntersectionCount is symmetric")
			assert.Equal(t, len(tc.and) > 0, a.Intersects(b), "Intersects")
			assert.Equal(t, tc.subAB, a.SubsetOf(b), "a ⊆ b")
			assert.Equal(t, tc.subBA, b.SubsetOf(a), "b ⊆ a")
			assert.Equal(t, tc.eq, a.Equal(b), "Equal")

			// In-place forms keep the receiver's length; members of b past
			// it are dropped.
			inAnd := a.Clone()
			inAnd.IntersectWith(b)
			assert.Equal(t, tc.and, members(inAnd))
			inOr := a.Clone()
			inOr.UnionWith(b)
			wantOr := slices.DeleteFunc(slices.Clone(tc.or), func(i int) bool { return i >= tc.aLen })
			assert.Equal(t, wantOr, members(inOr))
			assert.Equal(t, len(wantOr), inOr.Count(), "UnionWith trims bits past Len")
			inSub := a.Clone()
			inSub.Subtract(b)
			assert.Equal(t, tc.andNot, members(inSub))
		})
	}
}

func TestIteration(t *testing.T) {
	tests := []struct {
		n   int
		idx []int
	}{
		{0, nil}, {1, []int{0}}, {64, []int{63}}, {65, []int{0, 64}},
		{130, []int{1, 2, 3, 63, 64, 65, 127, 128, 129}}, {10000, []int{0, 640, 9999}},
	}
	for _, tc := range tests {
		s := NodeSetOf(tc.n, tc.idx...)
		var viaNext []int
		for i := s.Next(0); i >= 0; i = s.Next(i + 1) {
			viaNext = append(viaNext, i)
		}
		assert.Equal(t, tc.idx, viaNext, "Next n=%d", tc.n)
		var viaAll []int
		for i := range s.All() {
			viaAll = append(viaAll, i)
		}
		assert.Equal(t, tc.idx, viaAll, "All n=%d", tc.n)
		assert.Equal(t, tc.idx, s.AppendTo(nil))
		assert.Equal(t, append([]int{-7}, tc.idx...), s.AppendTo([]int{-7}), "AppendTo appends")
		for k := -1; k <= len(tc.idx)+1; k++ {
			want := tc.idx[:min(max(k, 0), len(tc.idx))]
			if len(want) == 0 {
				want = nil
			}
			assert.Equal(t, want, s.FirstN(nil, k), "FirstN k=%d", k)
		}
		// Early break from All.
		count := 0
		for range s.All() {
			count++
			break
		}
		assert.Equal(t, min(1, len(tc.idx)), count)
	}
	s := NodeSetOf(130, 5, 70)
	assert.Equal(t, 5, s.Next(-3), "negative start")
	assert.Equal(t, 70, s.Next(6))
	assert.Equal(t, -1, s.Next(71))
	assert.Equal(t, -1, s.Next(130))
	assert.Equal(t, -1, s.Next(1<<40))
}

func TestNodeSetString(t *testing.T) {
	tests := []struct {
		n    int
		idx  []int
		want string
	}{
		{0, nil, "{}"},
		{10, []int{0, 1, 2, 3, 7, 9}, "{0-3,7,9}"},
		{130, []int{63, 64, 65, 129}, "{63-65,129}"},
		{3, []int{0, 1, 2}, "{0-2}"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, NodeSetOf(tc.n, tc.idx...).String())
	}
}

// TestNodeSetModel runs seeded random operations against a map-based model
// on sets of random (often mismatched) lengths.
func TestNodeSetModel(t *testing.T) {
	type model = map[int]bool
	check := func(t *testing.T, s NodeSet, m model, step int) {
		t.Helper()
		want := make([]int, 0, len(m))
		for i := range m {
			want = append(want, i)
		}
		slices.Sort(want)
		if len(want) == 0 {
			want = nil
		}
		require.Equal(t, want, members(s), "step %d", step)
		require.Equal(t, len(want), s.Count(), "step %d", step)
	}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		lens := [2]int{rng.IntN(300), rng.IntN(300)}
		sets := [2]NodeSet{NewNodeSet(lens[0]), NewNodeSet(lens[1])}
		models := [2]model{{}, {}}
		for step := range 400 {
			x := rng.IntN(2)
			y := 1 - x
			s, m, n := sets[x], models[x], lens[x]
			o, om := sets[y], models[y]
			i := rng.IntN(n+20) - 10
			switch rng.IntN(12) {
			case 0, 1, 2:
				s.Add(i)
				if i >= 0 && i < n {
					m[i] = true
				}
			case 3:
				s.Remove(i)
				delete(m, i)
			case 4:
				s.IntersectWith(o)
				for k := range m {
					if !om[k] {
						delete(m, k)
					}
				}
			case 5:
				s.UnionWith(o)
				for k := range om {
					if k < n {
						m[k] = true
					}
				}
			case 6:
				s.Subtract(o)
				for k := range om {
					delete(m, k)
				}
			case 7:
				s.CopyFrom(o)
				clear(m)
				for k := range om {
					if k < n {
						m[k] = true
					}
				}
			case 8:
				if rng.IntN(8) == 0 {
					s.Fill()
					for k := range n {
						m[k] = true
					}
				}
			case 9:
				if rng.IntN(8) == 0 {
					s.Reset()
					clear(m)
				}
			case 10:
				inter, sub := 0, true
				for k := range m {
					if om[k] {
						inter++
					} else {
						sub = false
					}
				}
				require.Equal(t, inter, s.IntersectionCount(o), "seed %d step %d", seed, step)
				require.Equal(t, inter > 0, s.Intersects(o))
				require.Equal(t, sub, s.SubsetOf(o))
				require.Equal(t, sub && len(m) == len(om) && inter == len(m), s.Equal(o))
			case 11:
				require.Equal(t, m[i], s.Has(i))
				next := -1
				for k := range m {
					if k >= max(i, 0) && (next < 0 || k < next) {
						next = k
					}
				}
				require.Equal(t, next, s.Next(i), "Next(%d)", i)
			}
			check(t, s, m, step)
		}
	}
}

func TestInPlaceOpsDoNotAllocate(t *testing.T) {
	a, b := benchSets()
	dst := make([]int, 0, 64)
	ops := map[string]func(){
		"IntersectWith":     func() { a.IntersectWith(b) },
		"UnionWith":         func() { a.UnionWith(b) },
		"Subtract":          func() { a.Subtract(b) },
		"CopyFrom":          func() { a.CopyFrom(b) },
		"Count":             func() { _ = a.Count() },
		"IntersectionCount": func() { _ = a.IntersectionCount(b) },
		"FirstN":            func() { dst = b.FirstN(dst[:0], 64) },
		"Next":              func() { _ = b.Next(5000) },
	}
	for name, op := range ops {
		assert.Zero(t, testing.AllocsPerRun(20, op), name)
	}
}

// benchSets returns two random half-full sets of 10,000 nodes.
func benchSets() (NodeSet, NodeSet) {
	rng := rand.New(rand.NewPCG(1, 2))
	a, b := NewNodeSet(10000), NewNodeSet(10000)
	for i := range 10000 {
		if rng.IntN(2) == 0 {
			a.Add(i)
		}
		if rng.IntN(2) == 0 {
			b.Add(i)
		}
	}
	return a, b
}

// BenchmarkNodeSet measures the set algebra at the standard 10,000-node
// scale. The in-place forms (…/inplace, count, iterate, firstN, copy)
// report 0 allocs/op; the …/new forms allocate the result.
func BenchmarkNodeSet(b *testing.B) {
	x, y := benchSets()
	work := x.Clone()
	b.Run("and/inplace", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			work.CopyFrom(x)
			work.IntersectWith(y)
		}
	})
	b.Run("or/inplace", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			work.CopyFrom(x)
			work.UnionWith(y)
		}
	})
	b.Run("andnot/inplace", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			work.CopyFrom(x)
			work.Subtract(y)
		}
	})
	b.Run("and/new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = x.And(y)
		}
	})
	b.Run("or/new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = x.Or(y)
		}
	})
	b.Run("andnot/new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = x.AndNot(y)
		}
	})
	b.Run("count", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = x.Count()
		}
	})
	b.Run("intersectioncount", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = x.IntersectionCount(y)
		}
	})
	b.Run("iterate/all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sum := 0
			for i := range x.All() {
				sum += i
			}
			_ = sum
		}
	})
	b.Run("iterate/next", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sum := 0
			for i := x.Next(0); i >= 0; i = x.Next(i + 1) {
				sum += i
			}
			_ = sum
		}
	})
	dst := make([]int, 0, 256)
	for _, k := range []int{64, 256} {
		b.Run("firstN/"+strconv.Itoa(k), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				dst = x.FirstN(dst[:0], k)
			}
		})
	}
	b.Run("copy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			work.CopyFrom(y)
		}
	})
}

// TestNodeSetHash checks that equal sets, however built, hash alike, and
// that the hash tells apart the sets that differ in one member or in
// length.
func TestNodeSetHash(t *testing.T) {
	a := NodeSetOf(200, 3, 64, 199)
	b := FullNodeSet(200)
	for i := range 200 {
		if i != 3 && i != 64 && i != 199 {
			b.Remove(i)
		}
	}
	assert.True(t, a.Equal(b))
	assert.Equal(t, a.Hash(), b.Hash())
	seen := map[uint64]string{a.Hash(): "a"}
	for _, c := range []struct {
		name string
		s    NodeSet
	}{
		{"one member fewer", NodeSetOf(200, 3, 64)},
		{"a member moved", NodeSetOf(200, 3, 65, 199)},
		{"longer", NodeSetOf(201, 3, 64, 199)},
		{"empty", NewNodeSet(200)},
		{"empty, shorter", NewNodeSet(100)},
	} {
		_, dup := seen[c.s.Hash()]
		assert.False(t, dup, c.name)
		seen[c.s.Hash()] = c.name
	}
}
