package priority

import (
	"math"
	"math/bits"
)

// xfloat is a non-negative number in the x87 80-bit "long double" format
// that Slurm's Fair Tree uses on x86-64 for effective usage and Level FS: a
// 64-bit significand, rounded to nearest, ties to even. Fair Tree ranks by
// comparing Level FS values for exact equality, so reproducing Slurm's ties
// needs Slurm's precision, not float64's. Only what Fair Tree needs exists:
// conversion from float64 (exact), division, comparison and conversion back.
type xfloat struct {
	m uint64 // significand; top bit set when k == xFinite
	e int32  // value = m × 2^e
	k uint8  // xZero, xFinite or xInf
}

const (
	xZero uint8 = iota
	xFinite
	xInf
)

var (
	xfZero = xfloat{}
	xfInf  = xfloat{k: xInf}
	// xfNoVal is Slurm's NO_VAL (0xfffffffe) as a long double: the Level FS
	// of an account with FairShare=parent and the "previous" Level FS
	// before the first sibling.
	xfNoVal = xfFromFloat64(4294967294)
)

// xfFromFloat64 converts a non-negative float64 exactly.
func xfFromFloat64(f float64) xfloat {
	switch {
	case f == 0:
		return xfZero
	case math.IsInf(f, 1):
		return xfInf
	}
	frac, exp := math.Frexp(f) // f = frac × 2^exp, frac in [0.5, 1)
	return xfloat{m: uint64(frac * (1 << 64)), e: int32(exp - 64), k: xFinite}
}

// xfQuo returns a/b rounded to 64 significant bits, nearest-even, with IEEE
// special cases (x/0 = Inf for x > 0, x/Inf = 0). 0/0 is not used by Fair
// Tree and returns 0.
func xfQuo(a, b xfloat) xfloat {
	switch {
	case a.k == xZero || b.k == xInf:
		return xfZero
	case a.k == xInf || b.k == xZero:
		return xfInf
	}
	var q, r uint64
	e := a.e - b.e
	if a.m < b.m {
		// a.m/b.m in [1/2, 1): q = floor(a.m·2^64 / b.m) has 64 bits.
		q, r = bits.Div64(a.m, 0, b.m)
		e -= 64
	} else {
		// a.m/b.m in [1, 2): q = floor(a.m·2^63 / b.m) has 64 bits.
		q, r = bits.Div64(a.m>>1, a.m<<63, b.m)
		e -= 63
	}
	// Round to nearest, ties to even: compare 2r with b.m without overflow.
	if half := b.m - r; r > half || (r == half && q&1 == 1) {
		q++
		if q == 0 { // carried out of 64 bits
			q = 1 << 63
			e++
		}
	}
	return xfloat{m: q, e: e, k: xFinite}
}

// xfCmp returns -1, 0 or +1 as a is less than, equal to or greater than b.
func xfCmp(a, b xfloat) int {
	switch {
	case a.k != b.k:
		if a.k < b.k {
			return -1
		}
		return 1
	case a.k != xFinite:
		return 0
	case a.e != b.e:
		if a.e < b.e {
			return -1
		}
		return 1
	case a.m != b.m:
		if a.m < b.m {
			return -1
		}
		return 1
	}
	return 0
}

// float64 rounds x to the nearest float64.
func (x xfloat) float64() float64 {
	switch x.k {
	case xZero:
		return 0
	case xInf:
		return math.Inf(1)
	}
	// Converting the 64-bit significand rounds once (nearest-even); the
	// scaling is exact in the range Fair Tree produces.
	return math.Ldexp(float64(x.m), int(x.e))
}
