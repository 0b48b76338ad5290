package topology

import (
	"iter"
	"math/bits"
	"strconv"
	"strings"
)

// NodeSet is a set of node indices in [0, Len()), stored as a bitset. The
// zero value is an empty set of length 0; use NewNodeSet to size one for a
// cluster.
//
// Binary operations (IntersectWith, UnionWith, Subtract) work in place on
// the receiver and never allocate; sets of different lengths are treated as
// if the shorter were padded with zeros (the receiver keeps its length).
// A NodeSet is a value holding a slice: copying it aliases the bits, so use
// Clone for an independent copy. Not safe for concurrent mutation.
type NodeSet struct {
	words []uint64
	n     int
}

// NewNodeSet returns an empty set able to hold indices 0..n-1.
func NewNodeSet(n int) NodeSet {
	if n < 0 {
		n = 0
	}
	return NodeSet{words: make([]uint64, (n+63)/64), n: n}
}

// FullNodeSet returns the set {0, …, n-1}.
func FullNodeSet(n int) NodeSet {
	s := NewNodeSet(n)
	s.Fill()
	return s
}

// NodeSetOf returns a set of length n holding the given indices; indices
// outside [0, n) are ignored.
func NodeSetOf(n int, idx ...int) NodeSet {
	s := NewNodeSet(n)
	for _, i := range idx {
		s.Add(i)
	}
	return s
}

// Len returns the capacity of the set (the number of node indices it spans).
func (s NodeSet) Len() int { return s.n }

// Add inserts index i. Out-of-range indices are ignored.
func (s NodeSet) Add(i int) {
	if i >= 0 && i < s.n {
		s.words[i>>6] |= 1 << (uint(i) & 63)
	}
}

// Remove deletes index i. Out-of-range indices are ignored.
func (s NodeSet) Remove(i int) {
	if i >= 0 && i < s.n {
		s.words[i>>6] &^= 1 << (uint(i) & 63)
	}
}

// Has reports whether i is in the set.
func (s NodeSet) Has(i int) bool {
	return i >= 0 && i < s.n && s.words[i>>6]&(1<<(uint(i)&63)) != 0
}

// Fill adds every index 0..Len()-1.
func (s NodeSet) Fill() {
	for i := range s.words {
		s.words[i] = ^uint64(0)
	}
	s.trim()
}

// Reset removes every index.
func (s NodeSet) Reset() { clear(s.words) }

func (s NodeSet) trim() {
	if r := s.n & 63; r != 0 && len(s.words) > 0 {
		s.words[len(s.words)-1] &= (1 << uint(r)) - 1
	}
}

// Clone returns an independent copy of s.
func (s NodeSet) Clone() NodeSet {
	return NodeSet{words: append([]uint64(nil), s.words...), n: s.n}
}

// CopyFrom overwrites s with the members of o (indices beyond s.Len() are
// dropped). It does not allocate.
func (s NodeSet) CopyFrom(o NodeSet) {
	k := copy(s.words, o.words)
	clear(s.words[k:])
	s.trim()
}

// IntersectWith sets s = s ∩ o in place.
func (s NodeSet) IntersectWith(o NodeSet) {
	for i := range s.words {
		if i < len(o.words) {
			s.words[i] &= o.words[i]
		} else {
			s.words[i] = 0
		}
	}
}

// UnionWith sets s = s ∪ o in place (members of o beyond s.Len() are dropped).
func (s NodeSet) UnionWith(o NodeSet) {
	for i := range min(len(s.words), len(o.words)) {
		s.words[i] |= o.words[i]
	}
	s.trim()
}

// Subtract sets s = s \ o in place.
func (s NodeSet) Subtract(o NodeSet) {
	for i := range min(len(s.words), len(o.words)) {
		s.words[i] &^= o.words[i]
	}
}

// And returns a new set s ∩ o.
func (s NodeSet) And(o NodeSet) NodeSet { c := s.Clone(); c.IntersectWith(o); return c }

// Or returns a new set s ∪ o, as long as the longer of the two.
func (s NodeSet) Or(o NodeSet) NodeSet {
	if o.n > s.n {
		s, o = o, s
	}
	c := s.Clone()
	c.UnionWith(o)
	return c
}

// AndNot returns a new set s \ o.
func (s NodeSet) AndNot(o NodeSet) NodeSet { c := s.Clone(); c.Subtract(o); return c }

// Count returns the number of members.
func (s NodeSet) Count() int {
	c := 0
	for _, w := range s.words {
		c += bits.OnesCount64(w)
	}
	return c
}

// Hash returns a hash of the set's length and members: equal sets have
// equal hashes, so maps keyed by content can bucket sets by it and test
// Equal only within a bucket. It is not stable across versions.
func (s NodeSet) Hash() uint64 {
	// FNV-1a over the words, each folded in whole.
	h := uint64(14695981039346656037) ^ uint64(s.n)
	for _, w := range s.words {
		h ^= w
		h *= 1099511628211
	}
	return h
}

// SetRef identifies a NodeSet's storage: two sets with equal non-zero
// refs are copies of one NodeSet value, which share their words, and so
// hold the same members at any moment (a change through one is seen
// through the other). It is comparable and serves as a map key, letting a
// caller that sees the same set many times (a planner given one allowed
// set per job) recognise it without hashing or comparing its words. Sets
// of length 0 have the zero ref.
type SetRef struct {
	w *uint64
	n int
}

// Ref returns s's storage ref (see SetRef).
func (s NodeSet) Ref() SetRef {
	if len(s.words) == 0 {
		return SetRef{}
	}
	return SetRef{w: &s.words[0], n: s.n}
}

// IntersectionCount returns |s ∩ o| without allocating.
func (s NodeSet) IntersectionCount(o NodeSet) int {
	c := 0
	for i := range min(len(s.words), len(o.words)) {
		c += bits.OnesCount64(s.words[i] & o.words[i])
	}
	return c
}

// Intersects reports whether s and o share a member.
func (s NodeSet) Intersects(o NodeSet) bool {
	for i := range min(len(s.words), len(o.words)) {
		if s.words[i]&o.words[i] != 0 {
			return true
		}
	}
	return false
}

// IsEmpty reports whether s has no members.
func (s NodeSet) IsEmpty() bool {
	for _, w := range s.words {
		if w != 0 {
			return false
		}
	}
	return true
}

// SubsetOf reports whether every member of s is in o.
func (s NodeSet) SubsetOf(o NodeSet) bool {
	for i, w := range s.words {
		var ow uint64
		if i < len(o.words) {
			ow = o.words[i]
		}
		if w&^ow != 0 {
			return false
		}
	}
	return true
}

// Equal reports whether s and o have the same members.
func (s NodeSet) Equal(o NodeSet) bool { return s.SubsetOf(o) && o.SubsetOf(s) }

// Next returns the smallest member ≥ i, or -1 when there is none. Iterate
// with: for i := s.Next(0); i >= 0; i = s.Next(i + 1).
func (s NodeSet) Next(i int) int {
	if i < 0 {
		i = 0
	}
	if i >= s.n {
		return -1
	}
	wi := i >> 6
	w := s.words[wi] >> (uint(i) & 63)
	if w != 0 {
		return i + bits.TrailingZeros64(w)
	}
	for wi++; wi < len(s.words); wi++ {
		if s.words[wi] != 0 {
			return wi<<6 + bits.TrailingZeros64(s.words[wi])
		}
	}
	return -1
}

// All returns an iterator over the members in increasing order.
func (s NodeSet) All() iter.Seq[int] {
	return func(yield func(int) bool) {
		for wi, w := range s.words {
			for w != 0 {
				t := bits.TrailingZeros64(w)
				if !yield(wi<<6 + t) {
					return
				}
				w &= w - 1
			}
		}
	}
}

// AppendTo appends the members in increasing order to dst and returns it.
func (s NodeSet) AppendTo(dst []int) []int {
	for i := range s.All() {
		dst = append(dst, i)
	}
	return dst
}

// FirstN returns the k smallest members appended to dst (fewer when the set
// is smaller than k).
func (s NodeSet) FirstN(dst []int, k int) []int {
	if k <= 0 {
		return dst
	}
	for i := s.Next(0); i >= 0; i = s.Next(i + 1) {
		dst = append(dst, i)
		if k--; k == 0 {
			break
		}
	}
	return dst
}

// String formats the set as compact ranges, e.g. "{0-3,7,9-10}".
func (s NodeSet) String() string {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for i := s.Next(0); i >= 0; {
		j := i
		for s.Has(j + 1) {
			j++
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(strconv.Itoa(i))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(j))
		}
		i = s.Next(j + 1)
	}
	b.WriteByte('}')
	return b.String()
}
