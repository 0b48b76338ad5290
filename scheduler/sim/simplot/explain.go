package simplot

import (
	"fmt"
	"image/color"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
)

// maxReasons is how many reasons the pending panel draws apart.
const maxReasons = 5

// idleOrder stacks the idle classes bottom to top: allocated but idle
// first (next to the busy capacity), capacity held for someone next, no
// demand last.
var idleOrder = []scheduler.IdleClass{
	scheduler.IdleAllocated, scheduler.IdleReserved, scheduler.IdleFragmented, scheduler.IdlePolicy, scheduler.IdleAdvanceReservation,
	scheduler.IdleUnavailable, scheduler.IdleUnhealthy, scheduler.IdleNoDemand,
}

// idleColors gives each idle class a fixed colour.
var idleColors = [scheduler.NumIdleClasses]color.Color{
	scheduler.IdleUnhealthy:          color.RGBA{R: 140, G: 86, B: 75, A: 255},
	scheduler.IdleUnavailable:        color.RGBA{R: 127, G: 127, B: 127, A: 255},
	scheduler.IdleAdvanceReservation: color.RGBA{R: 148, G: 103, B: 189, A: 255},
	scheduler.IdleReserved:           color.RGBA{R: 31, G: 119, B: 180, A: 255},
	scheduler.IdleNoDemand:           color.RGBA{R: 199, G: 199, B: 199, A: 255},
	scheduler.IdlePolicy:             color.RGBA{R: 255, G: 127, B: 14, A: 255},
	scheduler.IdleFragmented:         color.RGBA{R: 214, G: 39, B: 40, A: 255},
	scheduler.IdleAllocated:          color.RGBA{R: 188, G: 189, B: 34, A: 255},
}

// reasonColors colour the reasons by rank; "other" is grey.
var reasonColors = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255},
	color.RGBA{R: 214, G: 39, B: 40, A: 255},
	color.RGBA{R: 44, G: 160, B: 44, A: 255},
	color.RGBA{R: 255, G: 127, B: 14, A: 255},
	color.RGBA{R: 148, G: 103, B: 189, A: 255},
}

var otherColor = color.RGBA{R: 170, G: 170, B: 170, A: 255}

// layer is one band of a stacked panel.
type layer struct {
	name  string
	color color.Color
	value func(sim.ExplainSample) float64
}

// stackPanel is a stacked-area panel over the explanation series.
type stackPanel struct {
	title, ylabel string
	layers        []layer // bottom to top
	samples       []sim.ExplainSample
	start, end    time.Time
	step          time.Duration
}

// explainPanels returns the idle-class and pending-reason panels of res.
func explainPanels(res sim.Result, what string, start, end time.Time, step time.Duration) []stackPanel {
	ex := res.Summary.Explain
	gpu := res.Capacity.GPUs > 0
	var idle []layer
	for _, c := range idleOrder {
		if ex.IdleShares[c] == 0 {
			continue
		}
		idle = append(idle, layer{name: fmt.Sprintf("%s (%.0f %%)", c, 100*ex.IdleShares[c]), color: idleColors[c],
			value: func(s sim.ExplainSample) float64 {
				if gpu {
					return float64(s.IdleGPUs[c])
				}
				return float64(s.IdleCPUs[c])
			}})
	}
	var reasons []layer
	top := map[policy.Reason]bool{}
	other := 0.0
	for i, rs := range ex.Reasons {
		if i >= maxReasons {
			other += rs.Share
			continue
		}
		r := rs.Reason
		top[r] = true
		reasons = append(reasons, layer{name: fmt.Sprintf("%s (%.0f %%)", r, 100*rs.Share), color: reasonColors[i],
			value: func(s sim.ExplainSample) float64 {
				for _, rc := range s.Reasons {
					if rc.Reason == r {
						return float64(rc.Jobs)
					}
				}
				return 0
			}})
	}
	if other > 0 {
		reasons = append(reasons, layer{name: fmt.Sprintf("other (%.0f %%)", 100*other), color: otherColor,
			value: func(s sim.ExplainSample) float64 {
				n := 0
				for _, rc := range s.Reasons {
					if !top[rc.Reason] {
						n += rc.Jobs
					}
				}
				return float64(n)
			}})
	}
	unit := strings.TrimSuffix(what, "s")
	return []stackPanel{
		{title: fmt.Sprintf("Why %s are idle (share of idle %s-time, sampled every %v)", what, unit, ex.Every),
			ylabel: "idle " + what, layers: idle, samples: res.Explain, start: start, end: end, step: step},
		{title: fmt.Sprintf("Why jobs wait (share of %.0f pending job-hours)", ex.PendingJobHours),
			ylabel: "pending jobs", layers: reasons, samples: res.Explain, start: start, end: end, step: step},
	}
}

// buckets returns, per layer, the time-weighted mean of its value over
// each step-long bucket from start, and the buckets' start times.
func (sp *stackPanel) buckets() ([][]float64, []time.Time) {
	n := int(sp.end.Sub(sp.start)/sp.step) + 1
	acc := make([][]float64, len(sp.layers))
	for i := range acc {
		acc[i] = make([]float64, n)
	}
	covered := make([]float64, n)
	for _, s := range sp.samples {
		a, b := s.At, s.At.Add(s.Span)
		for a.Before(b) {
			k := int(a.Sub(sp.start) / sp.step)
			if k < 0 || k >= n {
				break
			}
			bEnd := sp.start.Add(time.Duration(k+1) * sp.step)
			segEnd := b
			if bEnd.Before(segEnd) {
				segEnd = bEnd
			}
			dt := segEnd.Sub(a).Seconds()
			for i, l := range sp.layers {
				acc[i][k] += l.value(s) * dt
			}
			covered[k] += dt
			a = segEnd
		}
	}
	var at []time.Time
	out := make([][]float64, len(sp.layers))
	for k := range n {
		if covered[k] <= 0 {
			continue
		}
		at = append(at, sp.start.Add(time.Duration(k)*sp.step))
		for i := range sp.layers {
			out[i] = append(out[i], acc[i][k]/covered[k])
		}
	}
	return out, at
}

// draw adds the stacked layers to p, with x mapping times to the axis.
func (sp *stackPanel) draw(p *plot.Plot, x func(time.Time) float64) error {
	vals, at := sp.buckets()
	p.Y.Min = 0
	if len(at) == 0 || len(sp.layers) == 0 {
		p.Y.Max = 1
		return nil
	}
	// Cumulative sums, bottom to top.
	cum := make([][]float64, len(sp.layers))
	peak := 0.0
	for i := range sp.layers {
		cum[i] = make([]float64, len(at))
		for k := range at {
			cum[i][k] = vals[i][k]
			if i > 0 {
				cum[i][k] += cum[i-1][k]
			}
			peak = max(peak, cum[i][k])
		}
	}
	lines := make([]*plotter.Line, len(sp.layers))
	// Top first, so that each lower band paints over the one above it.
	for i := len(sp.layers) - 1; i >= 0; i-- {
		pts := stepPoints(len(at), x(sp.end), func(k int) (float64, float64) { return x(at[k]), cum[i][k] })
		l, err := stepLine(pts, sp.layers[i].color, sp.layers[i].color, 0.5)
		if err != nil {
			return fmt.Errorf("simplot: %s: %w", sp.title, err)
		}
		p.Add(l)
		lines[i] = l
	}
	for i := len(sp.layers) - 1; i >= 0; i-- {
		p.Legend.Add(sp.layers[i].name, lines[i])
	}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Legend.ThumbnailWidth = vg.Points(10)
	p.Legend.Padding = vg.Points(1)
	// Head room for the legend, top right.
	p.Y.Max = max(math.Ceil(peak*(1+0.12*float64(len(sp.layers)))), 1)
	return nil
}
