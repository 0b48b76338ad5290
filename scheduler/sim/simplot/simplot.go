// Package simplot draws a simulation's time series (package sim) as a PNG
// chart with gonum's plot package: resource utilisation, queue length, and
// the capacity left idle while jobs waited, over the simulated span, and,
// for a run with explanation statistics (sim.Options.ExplainEvery), why
// capacity was idle and why jobs waited. It is a separate package so that
// importing sim does not pull in the plotting and font dependencies.
package simplot

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/sluicehq/sluice/scheduler/sim"
)

// ErrNoData reports a result with no time series to draw (an empty
// workload, or a run with Options.DiscardSeries).
var ErrNoData = errors.New("simplot: no time series to plot")

// Options shape the chart. The zero value draws a 10×8 inch chart (10×13
// with the two explanation panels) at 96 dpi with 800 time buckets.
type Options struct {
	// Title is printed above the chart.
	Title string
	// Width and Height are the chart's size (default 10 inches, and 8
	// inches high, 13 with the explanation panels).
	Width, Height vg.Length
	// DPI is the resolution (default 96).
	DPI int
	// Buckets is how many time buckets the series is averaged into
	// (default 800): each point is the time-weighted mean over its bucket.
	Buckets int
}

// WritePNG draws res's series as a PNG to w: three panels over time since
// the first arrival — utilisation of the cluster's GPUs (CPUs on a
// cluster without GPUs) in percent, the number of pending jobs, and the
// GPUs (CPUs) left idle while jobs were pending. Each point is a bucket's
// time-weighted mean (Options.Buckets); the queue and idle panels also
// draw each bucket's peak as a line, so that short spikes (a queue burst,
// the cluster draining for a large job) stay visible. When res has an
// explanation series (sim.Options.ExplainEvery), two stacked panels
// follow: the idle GPUs (CPUs) by idle class (scheduler.IdleClass), and
// the pending jobs by reason (the five reasons with the most
// pending-job-time, the others summed as "other").
func WritePNG(w io.Writer, res sim.Result, opt Options) error {
	if len(res.Series) == 0 {
		return ErrNoData
	}
	if opt.Width == 0 {
		opt.Width = 10 * vg.Inch
	}
	if opt.Height == 0 {
		opt.Height = 8 * vg.Inch
		if len(res.Explain) > 0 {
			opt.Height = 13 * vg.Inch
		}
	}
	if opt.DPI == 0 {
		opt.DPI = 96
	}
	if opt.Buckets == 0 {
		opt.Buckets = 800
	}
	if opt.Width < 0 || opt.Height < 0 || opt.DPI < 0 || opt.Buckets < 0 {
		return fmt.Errorf("simplot: invalid options %+v", opt)
	}
	start, end := res.Series[0].At, res.End
	if end.Before(start) {
		end = start
	}
	step := max(end.Sub(start)/time.Duration(opt.Buckets), time.Second)
	series := sim.Resample(res.Series, end, step)

	unit, perUnit := "days", 24*time.Hour
	if end.Sub(start) < 3*24*time.Hour {
		unit, perUnit = "hours", time.Hour
	}
	// x maps a time to the x axis; every panel spans [0, xEnd].
	x := func(t time.Time) float64 { return float64(t.Sub(start)) / float64(perUnit) }
	xEnd := x(end)
	xLabel := fmt.Sprintf("%s since %s", unit, start.UTC().Format("2006-01-02 15:04 MST"))
	gpu := res.Capacity.GPUs > 0
	what, capacity := "CPUs", float64(res.Capacity.CPUs)
	if gpu {
		what, capacity = "GPUs", float64(res.Capacity.GPUs)
	}
	busy := func(s sim.Sample) float64 {
		if gpu {
			return s.BusyGPUs
		}
		return s.BusyCPUs
	}
	idle := func(s sim.Sample) float64 {
		if gpu {
			return s.IdleGPUsWaiting
		}
		return s.IdleCPUsWaiting
	}
	xy := func(f func(sim.Sample) float64) plotter.XYs {
		return stepPoints(len(series), xEnd, func(k int) (float64, float64) { return x(series[k].At), f(series[k]) })
	}
	util := func(s sim.Sample) float64 {
		if capacity == 0 {
			return 0
		}
		return 100 * busy(s) / capacity
	}

	// peaks is drawn as a thin line over the bucket means so that short
	// spikes stay visible.
	peaks := func(f func(sim.Sample) float64) plotter.XYs {
		peak := bucketPeaks(res.Series, start, end, step, f)
		return stepPoints(len(peak), xEnd, func(k int) (float64, float64) { return x(start.Add(time.Duration(k) * step)), peak[k] })
	}

	panels := []struct {
		title, ylabel string
		pts, peaks    plotter.XYs
		line, fill    color.Color
		ymax          float64
	}{
		{fmt.Sprintf("Utilisation of %.0f %s (mean %.1f %%)", capacity, what, 100*res.Summary.Utilization),
			"% allocated", xy(util), nil, color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.NRGBA{R: 31, G: 119, B: 180, A: 80}, 100},
		{fmt.Sprintf("Queue length (mean %.1f, max %d pending jobs; fill: mean per bucket, line: peak)", res.Summary.MeanPending, res.Summary.MaxPending),
			"pending jobs", xy(func(s sim.Sample) float64 { return s.Pending }), peaks(func(s sim.Sample) float64 { return s.Pending }),
			color.RGBA{R: 214, G: 39, B: 40, A: 255}, color.NRGBA{R: 214, G: 39, B: 40, A: 70}, 0},
		{fmt.Sprintf("Idle %s while jobs wait (%.1f %% of capacity over the span; fill: mean per bucket, line: peak)", what, 100*res.Summary.IdleWhileWaiting),
			"idle " + what, xy(idle), peaks(idle), color.RGBA{R: 255, G: 127, B: 14, A: 255}, color.NRGBA{R: 255, G: 127, B: 14, A: 80}, 0},
	}
	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := newPanel(pn.title, pn.ylabel, xLabel)
		if pn.peaks == nil {
			l, err := stepLine(pn.pts, pn.line, pn.fill, 1)
			if err != nil {
				return fmt.Errorf("simplot: panel %d: %w", i, err)
			}
			p.Add(l)
		} else {
			// The mean as a fill only; the peaks as the line.
			l, err := stepLine(pn.pts, color.Transparent, pn.fill, 1)
			if err != nil {
				return fmt.Errorf("simplot: panel %d: %w", i, err)
			}
			pk, err := stepLine(pn.peaks, pn.line, nil, 0.6)
			if err != nil {
				return fmt.Errorf("simplot: panel %d: %w", i, err)
			}
			p.Add(l, pk)
		}
		p.Y.Min = 0
		if pn.ymax > 0 {
			p.Y.Max = pn.ymax
		}
		setSpan(p, xEnd)
		plots[i] = []*plot.Plot{p}
	}
	if len(res.Explain) > 0 {
		for _, sp := range explainPanels(res, what, start, end, step) {
			p := newPanel(sp.title, sp.ylabel, xLabel)
			if err := sp.draw(p, x); err != nil {
				return err
			}
			setSpan(p, xEnd)
			plots = append(plots, []*plot.Plot{p})
		}
	}
	if opt.Title != "" {
		plots[0][0].Title.Text = opt.Title + "\n" + plots[0][0].Title.Text
	}

	img := vgimg.NewWith(vgimg.UseWH(opt.Width, opt.Height), vgimg.UseDPI(opt.DPI))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w); err != nil {
		return fmt.Errorf("simplot: writing PNG: %w", err)
	}
	return nil
}

// bucketPeaks returns the largest value of f in each step-long bucket of
// [start, end) over the series as recorded (exact unless
// sim.Options.SeriesStep is set: then the largest bucket mean), each
// sample holding until the next one; states that lasted no time (before a
// cycle at the same instant) do not count.
func bucketPeaks(series []sim.Sample, start, end time.Time, step time.Duration, f func(sim.Sample) float64) []float64 {
	n := max(int((end.Sub(start)+step-1)/step), 1) // buckets covering [start, end)
	peak := make([]float64, n)
	for i, s := range series {
		segEnd := end
		if i+1 < len(series) {
			segEnd = series[i+1].At
		}
		if !segEnd.After(s.At) {
			continue
		}
		v := f(s)
		first := int(s.At.Sub(start) / step)
		last := int((segEnd.Sub(start) - 1) / step)
		for k := max(first, 0); k <= min(last, n-1); k++ {
			peak[k] = max(peak[k], v)
		}
	}
	return peak
}

// newPanel returns an empty panel with the chart's title style, its axis
// labels and a grid.
func newPanel(title, ylabel, xlabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Y.Label.Text = ylabel
	p.X.Label.Text = xlabel
	p.Add(plotter.NewGrid())
	return p
}

// setSpan makes p's x axis [0, xEnd] (or from 0 to its data for an empty
// span); call it after adding the data, which widens the axis.
func setSpan(p *plot.Plot, xEnd float64) {
	p.X.Min = 0
	if xEnd > 0 {
		p.X.Max = xEnd
	}
}

// stepPoints returns the n points at(0) … at(n-1) of a post-step line,
// closed by the last point's value again at xEnd, the end of the span.
func stepPoints(n int, xEnd float64, at func(k int) (x, y float64)) plotter.XYs {
	pts := make(plotter.XYs, 0, n+1)
	for k := range n {
		x, y := at(k)
		pts = append(pts, plotter.XY{X: x, Y: y})
	}
	if n > 0 {
		pts = append(pts, plotter.XY{X: xEnd, Y: pts[n-1].Y})
	}
	return pts
}

// stepLine is a post-step line through pts, of the given colour and width
// in points, filled below with fill unless it is nil.
func stepLine(pts plotter.XYs, line, fill color.Color, width float64) (*plotter.Line, error) {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, err
	}
	l.Color = line
	l.Width = vg.Points(width)
	l.FillColor = fill
	l.StepStyle = plotter.PostStep
	return l, nil
}
