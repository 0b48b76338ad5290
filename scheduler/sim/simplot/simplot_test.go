package simplot_test

import (
	"bytes"
	"fmt"
	"image/png"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler/sim"
	"github.com/sluicehq/sluice/scheduler/sim/simplot"
	"gonum.org/v1/plot/vg"
)

func result(gpus int64, span time.Duration) sim.Result {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	res := sim.Result{Start: t0, End: t0.Add(span), Capacity: sim.Capacity{Nodes: 4, CPUs: 16, GPUs: gpus}}
	for i := range 50 {
		at := t0.Add(span * time.Duration(i) / 50)
		res.Series = append(res.Series, sim.Sample{At: at, Pending: float64(i % 7), BusyCPUs: float64(i % 17), BusyGPUs: float64(i % 5),
			IdleCPUsWaiting: float64(16 - i%17), IdleGPUsWaiting: float64(i % 3)})
	}
	return res
}

func TestWritePNG(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  sim.Result
	}{
		{"gpu days", result(4, 20*24*time.Hour)},
		{"cpu hours", result(0, 5*time.Hour)},
		{"one instant", sim.Result{Series: []sim.Sample{{At: time.Unix(0, 0)}}, Capacity: sim.Capacity{CPUs: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, simplot.WritePNG(&buf, tc.res, simplot.Options{Title: "test", Width: 4 * vg.Inch, Height: 3 * vg.Inch, Buckets: 20}))
			img, err := png.Decode(&buf)
			require.NoError(t, err)
			assert.Equal(t, 384, img.Bounds().Dx())
			assert.Equal(t, 288, img.Bounds().Dy())
		})
	}
	require.ErrorIs(t, simplot.WritePNG(&bytes.Buffer{}, sim.Result{}, simplot.Options{}), simplot.ErrNoData)
	require.Error(t, simplot.WritePNG(&bytes.Buffer{}, result(0, time.Hour), simplot.Options{Buckets: -1}))
}

// Draw a run's utilisation, queue length and idle-while-waiting panels.
func ExampleWritePNG() {
	var buf bytes.Buffer
	if err := simplot.WritePNG(&buf, result(8, 48*time.Hour), simplot.Options{Title: "a run"}); err != nil {
		panic(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		panic(err)
	}
	fmt.Println(img.Bounds().Dx(), "×", img.Bounds().Dy(), "PNG")
	// Output:
	// 960 × 768 PNG
}
