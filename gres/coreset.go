package gres

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// MaxCoreID is the largest logical CPU id a CoreSet can hold.
const MaxCoreID = 1<<16 - 1

// CoreSet is an immutable set of logical CPU ids (the cores a device is
// close to, or the cores a job holds on a node), stored as a bitset. The
// zero value is the empty set. Values may be copied and shared freely: no
// method modifies a CoreSet.
type CoreSet struct {
	words []uint64 // no trailing zero words
}

// CoreSetOf returns the set of the given ids. It fails on an id outside
// [0, MaxCoreID].
func CoreSetOf(ids ...int) (CoreSet, error) {
	var w []uint64
	for _, id := range ids {
		if id < 0 || id > MaxCoreID {
			return CoreSet{}, fmt.Errorf("%w: core id %d outside [0, %d]", ErrInvalidTRES, id, MaxCoreID)
		}
		for len(w) <= id>>6 {
			w = append(w, 0)
		}
		w[id>>6] |= 1 << (uint(id) & 63)
	}
	return CoreSet{words: trimWords(w)}, nil
}

// CoreRange returns the set {first, …, last}. It fails when the range is
// empty or outside [0, MaxCoreID].
func CoreRange(first, last int) (CoreSet, error) {
	if first < 0 || last > MaxCoreID || first > last {
		return CoreSet{}, fmt.Errorf("%w: core range %d-%d outside [0, %d] or reversed", ErrInvalidTRES, first, last, MaxCoreID)
	}
	w := make([]uint64, last>>6+1)
	for i := first; i <= last; i++ {
		w[i>>6] |= 1 << (uint(i) & 63)
	}
	return CoreSet{words: w}, nil
}

// ParseCoreSet parses a Linux CPU list such as "0-3,8,10-11" (the format of
// cpuset.cpus and /sys/.../local_cpulist). "" is the empty set. Errors are
// *ParseError values naming the bad element and wrap ErrInvalidTRES (as do
// the other CoreSet constructors' errors).
func ParseCoreSet(s string) (CoreSet, error) {
	toks, err := splitTokens("core list", s)
	if err != nil {
		return CoreSet{}, err
	}
	var w []uint64
	for _, t := range toks {
		lo, hi, isRange := strings.Cut(t.text, "-")
		a, errA := parseCoreID(lo)
		b := a
		errB := error(nil)
		if isRange {
			b, errB = parseCoreID(hi)
		}
		if errA != nil || errB != nil || a > b {
			return CoreSet{}, &ParseError{What: "core list", Input: s, Token: t.text, Offset: t.off,
				Err: fmt.Errorf("%w: want id or first-last with ids in [0, %d]", ErrInvalidTRES, MaxCoreID)}
		}
		for len(w) <= b>>6 {
			w = append(w, 0)
		}
		for i := a; i <= b; i++ {
			w[i>>6] |= 1 << (uint(i) & 63)
		}
	}
	return CoreSet{words: trimWords(w)}, nil
}

func parseCoreID(s string) (int, error) {
	if s == "" || len(s) > 5 || !allDigits(s) {
		return 0, ErrInvalidTRES
	}
	n, _ := strconv.Atoi(s)
	if n > MaxCoreID {
		return 0, ErrInvalidTRES
	}
	return n, nil
}

func trimWords(w []uint64) []uint64 {
	for len(w) > 0 && w[len(w)-1] == 0 {
		w = w[:len(w)-1]
	}
	if len(w) == 0 {
		return nil
	}
	return w
}

// Has reports whether id is in the set.
func (c CoreSet) Has(id int) bool {
	return id >= 0 && id>>6 < len(c.words) && c.words[id>>6]&(1<<(uint(id)&63)) != 0
}

// Count returns the number of ids in the set.
func (c CoreSet) Count() int {
	n := 0
	for _, w := range c.words {
		n += bits.OnesCount64(w)
	}
	return n
}

// IsEmpty reports whether the set is empty.
func (c CoreSet) IsEmpty() bool { return len(c.words) == 0 }

// Intersects reports whether c and o share an id. It does not allocate.
func (c CoreSet) Intersects(o CoreSet) bool {
	n := min(len(c.words), len(o.words))
	for i := range n {
		if c.words[i]&o.words[i] != 0 {
			return true
		}
	}
	return false
}

// Union returns c ∪ o.
func (c CoreSet) Union(o CoreSet) CoreSet {
	a, b := c.words, o.words
	if len(a) < len(b) {
		a, b = b, a
	}
	w := append([]uint64(nil), a...)
	for i, x := range b {
		w[i] |= x
	}
	return CoreSet{words: trimWords(w)}
}

// Equal reports whether c and o hold the same ids.
func (c CoreSet) Equal(o CoreSet) bool {
	if len(c.words) != len(o.words) {
		return false
	}
	for i := range c.words {
		if c.words[i] != o.words[i] {
			return false
		}
	}
	return true
}

// AppendTo appends the ids in increasing order to dst.
func (c CoreSet) AppendTo(dst []int) []int {
	for i, w := range c.words {
		for w != 0 {
			dst = append(dst, i<<6+bits.TrailingZeros64(w))
			w &= w - 1
		}
	}
	return dst
}

// String formats the set as a Linux CPU list with ranges, e.g. "0-3,8";
// ParseCoreSet reads it back.
func (c CoreSet) String() string {
	return string(appendIDList(nil, c.AppendTo(nil)))
}

// FormatIDList formats ids as a list with ranges of consecutive values
// ("0-3,8"), the Linux cpuset format ParseCoreSet reads, used for CPU, GPU
// and NUMA index lists alike. ids should be sorted and distinct.
func FormatIDList(ids []int) string { return string(appendIDList(nil, ids)) }

// appendIDList appends sorted, distinct ids as a Linux list with ranges
// ("0-3,8"), the format of cpuset.cpus and cpuset.mems.
func appendIDList(b []byte, ids []int) []byte {
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(ids[i]), 10)
		if j > i {
			b = append(b, '-')
			b = strconv.AppendInt(b, int64(ids[j]), 10)
		}
		i = j + 1
	}
	return b
}
