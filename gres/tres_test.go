package gres

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegistryBuiltinsAndRegister(t *testing.T) {
	r, err := NewRegistry("gres/gpu:h100", "license/matlab")
	require.NoError(t, err)
	assert.Equal(t, []string{"cpu", "mem", "energy", "node", "billing", "gres/gpu", "gres/gpu:h100", "license/matlab"}, r.Names())
	id, ok := r.Lookup("GRES/GPU:H100")
	require.True(t, ok)
	parent, ok := r.Parent(id)
	require.True(t, ok)
	assert.Equal(t, "gres/gpu", r.Name(parent))
	_, ok = r.Parent(CPU)
	assert.False(t, ok)
	assert.Equal(t, "", r.Name(99))
	assert.Equal(t, "", r.Name(-1))

	for _, bad := range []struct {
		name string
		want error
	}{
		{"gpu", ErrUnknownTRES},
		{"fs/disk", ErrUnknownTRES},
		{"gres/", ErrInvalidTRES},
		{"gres/gpu:", ErrInvalidTRES},
		{"gres/gp u", ErrInvalidTRES},
		{"gres/gpu:h100:x", ErrInvalidTRES},
		{"license/", ErrInvalidTRES},
	} {
		_, err := r.Register(bad.name)
		assert.ErrorIs(t, err, bad.want, bad.name)
		assert.ErrorContains(t, err, bad.name)
	}
	n := r.Len()
	again, err := r.Register(" Gres/GPU ")
	require.NoError(t, err)
	assert.Equal(t, "gres/gpu", r.Name(again))
	assert.Equal(t, n, r.Len(), "re-registering is a no-op")
}

func TestVectorSetAtEqual(t *testing.T) {
	var v Vector
	v, err := v.Set(3, 7)
	require.NoError(t, err)
	assert.Equal(t, Vector{0, 0, 0, 7}, v)
	assert.EqualValues(t, 7, v.At(3))
	assert.EqualValues(t, 0, v.At(10))
	assert.EqualValues(t, 0, v.At(-1))
	_, err = v.Set(1, -1)
	assert.ErrorIs(t, err, ErrOverflow)
	_, err = v.Set(1, MaxCount+1)
	assert.ErrorIs(t, err, ErrOverflow)
	_, err = v.Set(-1, 1)
	assert.ErrorIs(t, err, ErrInvalidTRES)
	assert.True(t, Vector{1, 0}.Equal(Vector{1}))
	assert.False(t, Vector{1, 0, 2}.Equal(Vector{1}))
	assert.True(t, Vector{0, 0}.IsZero())
	assert.False(t, Vector{0, 1}.IsZero())
	c := v.Clone()
	c[3] = 1
	assert.EqualValues(t, 7, v[3], "Clone is independent")
}

func TestVectorArithmetic(t *testing.T) {
	tests := []struct {
		name    string
		op      func() (Vector, error)
		want    Vector
		wantErr error
	}{
		{"add", func() (Vector, error) { return Vector{1, 2}.Add(Vector{3, 4, 5}) }, Vector{4, 6, 5}, nil},
		{"add at max", func() (Vector, error) { return Vector{MaxCount - 1}.Add(Vector{1}) }, Vector{MaxCount}, nil},
		{"add overflow", func() (Vector, error) { return Vector{MaxCount}.Add(Vector{1}) }, nil, ErrOverflow},
		{"add int64 wrap", func() (Vector, error) { return Vector{1}.Add(Vector{math.MaxInt64}) }, nil, ErrOverflow},
		{"sub", func() (Vector, error) { return Vector{5, 5}.Sub(Vector{2, 5}) }, Vector{3, 0}, nil},
		{"sub longer zero tail", func() (Vector, error) { return Vector{5}.Sub(Vector{1, 0, 0}) }, Vector{4, 0, 0}, nil},
		{"sub negative", func() (Vector, error) { return Vector{1, 5}.Sub(Vector{2, 1}) }, nil, ErrOverflow},
		{"sub past end", func() (Vector, error) { return Vector{1}.Sub(Vector{0, 1}) }, nil, ErrOverflow},
		{"sub negative operand", func() (Vector, error) { return Vector{MaxCount}.Sub(Vector{-1}) }, nil, ErrOverflow},
		{"sub min int64", func() (Vector, error) { return Vector{5}.Sub(Vector{math.MinInt64}) }, nil, ErrOverflow},
		{"scale", func() (Vector, error) { return Vector{1, 0, 3}.Scale(4) }, Vector{4, 0, 12}, nil},
		{"scale zero", func() (Vector, error) { return Vector{1, MaxCount}.Scale(0) }, Vector{0, 0}, nil},
		{"scale to max", func() (Vector, error) { return Vector{MaxCount / 2}.Scale(2) }, Vector{MaxCount}, nil},
		{"scale overflow", func() (Vector, error) { return Vector{MaxCount/2 + 1}.Scale(2) }, nil, ErrOverflow},
		{"scale huge k", func() (Vector, error) { return Vector{2}.Scale(math.MaxInt64) }, nil, ErrOverflow},
		{"scale negative", func() (Vector, error) { return Vector{1}.Scale(-1) }, nil, ErrOverflow},
		{"min", func() (Vector, error) { return Vector{1, 5, 3}.Min(Vector{2, 4}), nil }, Vector{1, 4, 0}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.op()
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestVectorInPlaceLeavesReceiverOnError(t *testing.T) {
	v := Vector{MaxCount, 1}
	require.NoError(t, v.AddInPlace(Vector{0, 1, 0}), "a zero tail past the end is fine")
	assert.Equal(t, Vector{MaxCount, 2}, v)
	require.ErrorIs(t, v.AddInPlace(Vector{0, 0, 1}), ErrInvalidTRES)
	require.NoError(t, v.AddInPlace(Vector{0, 1}))
	require.ErrorIs(t, v.AddInPlace(Vector{1, 1}), ErrOverflow)
	assert.Equal(t, Vector{MaxCount, 3}, v, "unchanged after a failed add")

	w := Vector{5, 5}
	require.NoError(t, w.SubInPlace(Vector{1, 1, 0}), "regression: a longer w with a zero tail used to panic")
	assert.Equal(t, Vector{4, 4}, w)
	require.ErrorIs(t, w.SubInPlace(Vector{1, 5}), ErrOverflow)
	require.ErrorIs(t, w.SubInPlace(Vector{0, 0, 1}), ErrOverflow)
	assert.Equal(t, Vector{4, 4}, w, "unchanged after a failed sub")
}

func TestVectorFitsAndWeighted(t *testing.T) {
	assert.True(t, Vector{1, 2}.Fits(Vector{1, 2, 3}))
	assert.True(t, Vector{1, 0, 0}.Fits(Vector{1}))
	assert.False(t, Vector{1, 3}.Fits(Vector{1, 2}))
	assert.False(t, Vector{0, 0, 1}.Fits(Vector{5, 5}))
	assert.True(t, Vector{}.Fits(nil))
	assert.Equal(t, 0.0, Vector{}.Weighted(nil))
	assert.InDelta(t, 2*0.5+3*2, Vector{2, 3, 4}.Weighted([]float64{0.5, 2}), 1e-12)
	assert.Equal(t, 0.0, Vector{1, 1}.Weighted([]float64{math.Inf(1), math.Inf(-1)}), "NaN is reported as 0")
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Vector{1, 2}.Fits(Vector{3, 4}) }))
}

func TestSplitGRES(t *testing.T) {
	for _, tt := range []struct{ in, base, typ string }{
		{"gres/gpu:h100", "gres/gpu", "h100"},
		{"gres/gpu", "gres/gpu", ""},
		{"cpu", "cpu", ""},
		{"license/a:b", "license/a:b", ""},
	} {
		base, typ, typed := SplitGRES(tt.in)
		assert.Equal(t, tt.base, base, tt.in)
		assert.Equal(t, tt.typ, typ, tt.in)
		assert.Equal(t, tt.typ != "", typed, tt.in)
	}
}
