package policy

import (
	"math"
	"math/bits"
)

// i128 is a signed 128-bit integer (two's complement), enough for sums of
// TRES × Unix seconds that overflow int64.
type i128 struct {
	hi int64
	lo uint64
}

func (a i128) add(b i128) i128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	return i128{hi: a.hi + b.hi + int64(c), lo: lo}
}

func (a i128) neg() i128 {
	lo, b := bits.Sub64(0, a.lo, 0)
	return i128{hi: -a.hi - int64(b), lo: lo}
}

func (a i128) sub(b i128) i128 { return a.add(b.neg()) }

// mul64 returns x × y for int64 x, y.
func mul64(x, y int64) i128 {
	neg := (x < 0) != (y < 0)
	ux, uy := absU(x), absU(y)
	hi, lo := bits.Mul64(ux, uy)
	r := i128{hi: int64(hi), lo: lo}
	if neg {
		r = r.neg()
	}
	return r
}

func absU(x int64) uint64 {
	if x < 0 {
		return uint64(-x)
	}
	return uint64(x)
}

// divClamp returns a / d (d > 0) clamped to [0, MaxInt64].
func (a i128) divClamp(d uint64) int64 {
	if a.hi < 0 {
		return 0
	}
	qhi := uint64(a.hi) / d
	r := uint64(a.hi) % d
	qlo, _ := bits.Div64(r, a.lo, d)
	if qhi != 0 || qlo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(qlo)
}
