package policy

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInt128AgainstBig(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 2000 {
		var acc i128
		want := new(big.Int)
		for range 1 + rng.IntN(8) {
			x := rng.Int64N(1<<50) - 1<<49
			y := rng.Int64N(1 << 35)
			if rng.IntN(2) == 0 {
				acc = acc.add(mul64(x, y))
				want.Add(want, new(big.Int).Mul(big.NewInt(x), big.NewInt(y)))
			} else {
				acc = acc.sub(mul64(x, y))
				want.Sub(want, new(big.Int).Mul(big.NewInt(x), big.NewInt(y)))
			}
		}
		q := new(big.Int).Quo(want, big.NewInt(60))
		switch {
		case want.Sign() < 0:
			assert.Equal(t, int64(0), acc.divClamp(60))
		case q.IsInt64():
			assert.Equal(t, q.Int64(), acc.divClamp(60))
		default:
			assert.Equal(t, int64(math.MaxInt64), acc.divClamp(60))
		}
	}
	assert.Equal(t, int64(math.MaxInt64), mul64(math.MaxInt64, 4).divClamp(2))
	assert.Equal(t, uint64(1<<63), absU(math.MinInt64))
}

func TestCheapestMatchesFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, n := range []int{10, 300, 5000} {
		vs := make([]vic, n)
		for i := range vs {
			vs[i] = vic{idx: int32(i), job: JobID(i + 1), gpu: float64(rng.IntN(50)), cpu: float64(rng.IntN(5)),
				tier: int64(rng.IntN(3)), nodes: int32(1 + rng.IntN(3)), start: rng.Int64N(10)}
		}
		all := slices.Clone(vs)
		slices.SortFunc(all, cmpVic)
		got := cheapest(vs, maxJobOrder)
		require.Equal(t, all[:min(n, maxJobOrder)], got, "n=%d", n)
	}
}
