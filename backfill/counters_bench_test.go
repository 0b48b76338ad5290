package backfill

import (
	"testing"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/cputime"
)

// BenchmarkBackfillEASYLimits is BenchmarkBackfillEASY with limits in the
// mix: each of the 2,000 users may run 160 GPUs and 24 jobs at a time
// (their counters start with what the running jobs, dealt out to the
// users, hold and release at their ends: about 20 jobs each), each of the
// 200 accounts 1,200 GPUs, and one job in ten takes a license of a
// cluster-wide pool of 50. The counter set
// is built every cycle, as a scheduler does; the time includes it.
func BenchmarkBackfillEASYLimits(b *testing.B) {
	w := standardWorkload()
	pl, err := NewPlanner(Config{Mode: EASY})
	if err != nil {
		b.Fatal(err)
	}
	const users, accts, license = 2000, 200, 4200
	gpu := w.reg.MustLookup("gres/gpu")
	gpus := func(nodes int, v gres.Vector) int64 { return int64(nodes) * v.At(gpu) }
	// Counters 0..1999 user GPUs, 2000..3999 user jobs, 4000..4199
	// account GPUs, 4200 the license pool.
	caps := make([]int64, license+1)
	for c := range caps {
		switch {
		case c < users:
			caps[c] = 160
		case c < 2*users:
			caps[c] = 24
		case c < license:
			caps[c] = 1200
		default:
			caps[c] = 50
		}
	}
	jobs := make([]Job, len(w.pending))
	copy(jobs, w.pending)
	uses := make([]Use, 0, 4*len(jobs))
	for x := range jobs {
		j := &jobs[x]
		u := int(j.ID) % users
		from := len(uses)
		uses = append(uses, Use{Counter: CounterID(u), Amount: gpus(j.Nodes, j.PerNode)},
			Use{Counter: CounterID(users + u), Amount: 1}, Use{Counter: CounterID(2*users + u/10), Amount: gpus(j.Nodes, j.PerNode)})
		if x%10 == 0 {
			uses = append(uses, Use{Counter: license, Amount: 1})
		}
		j.Uses = uses[from:len(uses):len(uses)]
	}
	// The running jobs' holds, dealt out to users by ID.
	type hold struct {
		c CounterID
		n int64
		r int
	}
	var holds []hold
	inUse := make([]int64, len(caps))
	for r := range w.running {
		rj := &w.running[r]
		u := int(rj.ID) % users
		var g int64
		for _, a := range rj.Allocs {
			g += a.Use.At(gpu)
		}
		hs := []hold{{CounterID(u), g, r}, {CounterID(users + u), 1, r}, {CounterID(2*users + u/10), g, r}}
		if r%10 == 0 {
			hs = append(hs, hold{license, 1, r})
		}
		for _, h := range hs {
			if inUse[h.c]+h.n <= caps[h.c] { // what runs is within the limits
				inUse[h.c] += h.n
				holds = append(holds, h)
			}
		}
	}
	b.ReportAllocs()
	var plan *Plan
	cpu0 := cputime.Process()
	iters := 0
	for b.Loop() {
		iters++
		prof, err := pl.NewProfile(w.now, w.nodes, w.running)
		if err != nil {
			b.Fatal(err)
		}
		ctr := NewCounters()
		for c := range caps {
			if _, err := ctr.Add(caps[c], inUse[c]); err != nil {
				b.Fatal(err)
			}
		}
		for _, h := range holds {
			if err := ctr.Release(h.c, h.n, w.running[h.r].End); err != nil {
				b.Fatal(err)
			}
		}
		prof.SetCounters(ctr)
		if plan, err = pl.Plan(prof, jobs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(iters)/1e6, "cpu-ms/op")
	st := plan.Stats
	byCounter := 0
	for _, e := range plan.Entries {
		if e.ByCounter {
			byCounter++
		}
	}
	b.ReportMetric(float64(st.Started), "started")
	b.ReportMetric(float64(st.Reserved), "reserved")
	b.ReportMetric(float64(st.Estimated), "estimated")
	b.ReportMetric(float64(st.BeyondWindow), "beyond")
	b.ReportMetric(float64(st.Searches), "searches")
	b.ReportMetric(float64(byCounter), "by-counter")
}
