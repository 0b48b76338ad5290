package simplot_test

import (
	"bytes"
	"fmt"
	"image/png"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
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

// withExplain adds an explanation series to res: idle units in three
// classes, pending jobs for seven reasons (five drawn apart, two as
// "other").
func withExplain(res sim.Result) sim.Result {
	span := res.End.Sub(res.Start)
	step := span / 40
	reasons := []policy.Reason{policy.ReasonPriority, policy.ReasonResources, policy.ReasonBeginTime, policy.ReasonDependency,
		policy.ReasonLicenses, policy.ReasonJobHeldUser, policy.ReasonReservation}
	for i := range 40 {
		var g, c scheduler.IdleCounts
		g[scheduler.IdleReserved], g[scheduler.IdleFragmented], g[scheduler.IdleNoDemand] = int64(i%3), int64(i%2), 1
		c[scheduler.IdleNoDemand] = int64(i % 5)
		smp := sim.ExplainSample{At: res.Start.Add(time.Duration(i) * step), Span: step, IdleGPUs: g, IdleCPUs: c}
		for k, r := range reasons {
			smp.Reasons = append(smp.Reasons, sim.ReasonCount{Reason: r, Jobs: 1 + (i+k)%4})
		}
		res.Explain = append(res.Explain, smp)
	}
	ex := &res.Summary.Explain
	ex.Every, ex.Samples, ex.PendingJobHours = step, 40, 123
	for k, r := range reasons {
		ex.Reasons = append(ex.Reasons, sim.ReasonShare{Reason: r, Share: float64(7-k) / 28})
	}
	ex.IdleShares[scheduler.IdleReserved], ex.IdleShares[scheduler.IdleFragmented], ex.IdleShares[scheduler.IdleNoDemand] = 0.4, 0.2, 0.4
	return res
}

func TestWritePNGExplain(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  sim.Result
	}{
		{"gpu", withExplain(result(4, 20*24*time.Hour))},
		{"cpu", withExplain(result(0, 5*time.Hour))},
		{"nothing idle, no queue", func() sim.Result {
			r := result(0, time.Hour)
			r.Explain = []sim.ExplainSample{{At: r.Start, Span: time.Hour}}
			r.Summary.Explain.Every = time.Minute
			return r
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, simplot.WritePNG(&buf, tc.res, simplot.Options{Title: "test", DPI: 40}))
			img, err := png.Decode(&buf)
			require.NoError(t, err)
			assert.Equal(t, 400, img.Bounds().Dx())
			assert.Equal(t, 520, img.Bounds().Dy(), "13 inches: room for the two explanation panels")
		})
	}
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
