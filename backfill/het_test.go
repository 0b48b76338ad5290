package backfill

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two 4-CPU nodes, node 0 busy for 10 minutes: a heterogeneous job of two
// whole-node components could put its first component on node 1 now,
// but its second only at +10 min; both start together at +10 min, on
// different nodes (Slurm starts every component at the same time).
func TestCoStartWaitsForTheLastComponent(t *testing.T) {
	pl, err := NewPlanner(Config{Mode: Conservative})
	require.NoError(t, err)
	prof, err := pl.NewProfile(t0, cluster(2, vec(4, 1000, 0)), []Running{
		{ID: 100, End: t0.Add(mins(10)), Allocs: []Alloc{{Node: 0, Use: vec(4, 0, 0)}}},
	})
	require.NoError(t, err)
	comp := func(id JobID) Job {
		return Job{ID: id, Nodes: 1, PerNode: vec(4, 0, 0), TimeLimit: mins(30)}
	}
	het := Job{ID: 1, Priority: 10, Components: []Job{comp(1), comp(2)}}
	small := Job{ID: 3, Nodes: 1, PerNode: vec(4, 0, 0), TimeLimit: mins(5)}
	plan, err := pl.Plan(prof, []Job{het, small})
	require.NoError(t, err)
	e := plan.Entries[0]
	require.Equal(t, StatusReserved, e.Status)
	require.Len(t, e.Components, 2)
	assert.Equal(t, t0.Add(mins(10)), e.Start)
	for _, c := range e.Components {
		assert.Equal(t, e.Start, c.Start, "component %d", c.ID)
		assert.Equal(t, StatusReserved, c.Status)
	}
	assert.NotEqual(t, e.Components[0].Nodes, e.Components[1].Nodes)
	// Node 1 idles until then: a 5-minute job is backfilled there.
	assert.Equal(t, StatusStart, plan.Entries[1].Status)
	assert.Equal(t, []int{1}, plan.Entries[1].Nodes)
	assert.True(t, prof.Has(1) && prof.Has(2), "both components are booked")
	checkNoOverAllocation(t, prof)
}

func TestCoStartNow(t *testing.T) {
	pl, err := NewPlanner(Config{})
	require.NoError(t, err)
	prof, err := pl.NewProfile(t0, cluster(3, vec(8, 1000, 2)), nil)
	require.NoError(t, err)
	het := Job{ID: 5, Components: []Job{
		{ID: 5, Nodes: 2, PerNode: vec(8, 0, 0), TimeLimit: mins(10)},
		{ID: 6, Nodes: 1, PerNode: vec(1, 0, 2), TimeLimit: mins(20)},
	}}
	plan, err := pl.Plan(prof, []Job{het})
	require.NoError(t, err)
	require.Equal(t, []int{0}, plan.Starts)
	e := plan.Entries[0]
	assert.Equal(t, StatusStart, e.Status)
	assert.Equal(t, []int{0, 1}, e.Components[0].Nodes)
	assert.Equal(t, []int{2}, e.Components[1].Nodes)
	assert.Equal(t, t0.Add(mins(20)), e.End)
}

func TestCoStartNeverAndValidation(t *testing.T) {
	pl, err := NewPlanner(Config{})
	require.NoError(t, err)
	prof, err := pl.NewProfile(t0, cluster(2, vec(4, 1000, 0)), nil)
	require.NoError(t, err)
	// The second component needs three nodes of two: never.
	het := Job{ID: 1, Components: []Job{
		{ID: 1, Nodes: 1, PerNode: vec(1, 0, 0), TimeLimit: mins(1)},
		{ID: 2, Nodes: 3, PerNode: vec(1, 0, 0), TimeLimit: mins(1)},
	}}
	plan, err := pl.Plan(prof, []Job{het})
	require.NoError(t, err)
	assert.Equal(t, StatusNeverFits, plan.Entries[0].Status)
	assert.Equal(t, StatusNeverFits, plan.Entries[0].Components[1].Status)
	assert.Zero(t, prof.Len(), "nothing booked")

	bad := het
	bad.Components = []Job{{ID: 9, Nodes: 1, PerNode: vec(1, 0, 0), TimeLimit: mins(1)}}
	_, err = pl.Plan(prof, []Job{bad})
	assert.ErrorIs(t, err, ErrInvalidJob, "the leader carries the job's ID")
	dup := Job{ID: 1, Components: []Job{het.Components[0], {ID: 1, Nodes: 1, PerNode: vec(1, 0, 0), TimeLimit: mins(1)}}}
	_, err = pl.Plan(prof, []Job{dup})
	assert.ErrorIs(t, err, ErrDuplicateID)
	zero := Job{ID: 1, Components: []Job{{ID: 1, Nodes: 0, TimeLimit: mins(1)}}}
	_, err = pl.Plan(prof, []Job{zero})
	assert.ErrorIs(t, err, ErrInvalidJob)
	_, err = prof.EarliestCoFit([]JobID{1}, nil)
	assert.ErrorIs(t, err, ErrInvalidRequest)
}

// Random profiles and heterogeneous requests: EarliestCoFit's answer
// books (every component fits at the common start with the others
// booked), leaves the profile as it was, and no component could start
// earlier on its own than its own search allows.
func TestCoFitProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 17))
	for iter := range 300 {
		n := 2 + rng.IntN(6)
		var running []Running
		for i := range n {
			if rng.IntN(2) == 0 {
				running = append(running, Running{ID: JobID(1000 + i), End: t0.Add(time.Duration(1+rng.IntN(120)) * time.Minute),
					Allocs: []Alloc{{Node: i, Use: vec(int64(1+rng.IntN(8)), 0, 0)}}})
			}
		}
		prof, err := NewProfile(t0, cluster(n, vec(8, 1000, 0)), running, ProfileOptions{})
		require.NoError(t, err)
		before := prof.Len()
		k := 1 + rng.IntN(3)
		reqs := make([]Request, k)
		ids := make([]JobID, k)
		for c := range reqs {
			ids[c] = JobID(c + 1)
			reqs[c] = Request{Nodes: 1 + rng.IntN(2), PerNode: vec(int64(1+rng.IntN(8)), 0, 0),
				Duration: time.Duration(1+rng.IntN(60)) * time.Minute}
		}
		fits, err := prof.EarliestCoFit(ids, reqs)
		require.NoError(t, err)
		require.Equal(t, before, prof.Len(), "iter %d: nothing stays booked", iter)
		if fits[0].Status != FitFound {
			continue
		}
		for c := range fits {
			require.Equal(t, FitFound, fits[c].Status)
			require.Equal(t, fits[0].Start, fits[c].Start, "iter %d: one start", iter)
			solo, err := prof.EarliestFit(reqs[c])
			require.NoError(t, err)
			require.False(t, solo.Start.After(fits[c].Start), "iter %d: no component starts before it could alone", iter)
		}
		for c := range fits {
			require.NoError(t, prof.ReserveFit(ids[c], reqs[c], fits[c]), "iter %d: component %d fits with the others", iter, c)
		}
		checkNoOverAllocation(t, prof)
	}
}

// Each component's Uses count with those of the components before it:
// with a counter of capacity 8 holding 4 until +1h, two whole-node
// components that fit the nodes now but take 4 each wait for +1h, and
// their reservation books 8 from then, each component's 4 until its own
// end; a lower job taking 4 of the counter for 2 h waits for the shorter
// component's end.
func TestCoStartWaitsForCounters(t *testing.T) {
	pl, err := NewPlanner(Config{Mode: Conservative, Resolution: time.Second})
	require.NoError(t, err)
	prof, err := pl.NewProfile(t0, cluster(3, vec(4, 1000, 0)), nil)
	require.NoError(t, err)
	ctr := NewCounters()
	gpu, err := ctr.Add(8, 4)
	require.NoError(t, err)
	require.NoError(t, ctr.Release(gpu, 4, t0.Add(time.Hour)))
	prof.SetCounters(ctr)
	four := []Use{{Counter: gpu, Amount: 4}}
	comp := func(id JobID, d time.Duration) Job {
		return Job{ID: id, Nodes: 1, PerNode: vec(4, 0, 0), TimeLimit: d, Uses: four}
	}
	het := Job{ID: 1, Priority: 10, Components: []Job{comp(1, mins(30)), comp(2, mins(60))}}
	low := Job{ID: 3, Nodes: 1, PerNode: vec(1, 0, 0), TimeLimit: 2 * time.Hour, Uses: four}
	plan, err := pl.Plan(prof, []Job{het, low})
	require.NoError(t, err)
	e := plan.Entries[0]
	require.Equal(t, StatusReserved, e.Status)
	assert.True(t, e.ByCounter)
	assert.Equal(t, gpu, e.Counter)
	assert.Equal(t, t0.Add(time.Hour), e.Start)
	for _, c := range e.Components {
		assert.Equal(t, e.Start, c.Start)
	}
	assert.Equal(t, int64(8), ctr.UseAt(gpu, t0.Add(time.Hour+mins(10))), "the reservation holds the counter")
	assert.Equal(t, t0.Add(time.Hour+mins(30)), plan.Entries[1].Start, "the lower job waits for the shorter component's end")
	assert.Equal(t, int64(8), ctr.UseAt(gpu, t0.Add(time.Hour+mins(40))), "the longer component's 4 and the lower job's")
	checkNoOverAllocation(t, prof)

	// Components that together never fit the counter never start.
	prof2, err := pl.NewProfile(t0, cluster(3, vec(4, 1000, 0)), nil)
	require.NoError(t, err)
	ctr2 := NewCounters()
	g2, err := ctr2.Add(6, 0)
	require.NoError(t, err)
	prof2.SetCounters(ctr2)
	four = []Use{{Counter: g2, Amount: 4}}
	het = Job{ID: 1, Priority: 10, Components: []Job{comp(1, mins(30)), comp(2, mins(60))}}
	plan, err = pl.Plan(prof2, []Job{het})
	require.NoError(t, err)
	assert.Equal(t, StatusNeverFits, plan.Entries[0].Status)
	assert.Equal(t, ReasonCounter, plan.Entries[0].Reason)
	assert.Zero(t, prof2.Len(), "nothing booked")

	// The job's own Uses are its components'.
	bad := het
	bad.Uses = four
	_, err = pl.Plan(prof2, []Job{bad})
	assert.ErrorIs(t, err, ErrInvalidJob)
}

// EarliestCoFitUses on random profiles and counters: the common start is
// one at which each request's uses fit with those of the requests before
// it (checked here by booking them in turn), the counters only delay the
// nodes' common start, every request can be reserved there with the
// others, and nothing stays booked.
func TestCoFitUsesProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 23))
	found, delayed, never := 0, 0, 0
	for iter := range 400 {
		n := 2 + rng.IntN(5)
		var running []Running
		for i := range n {
			if rng.IntN(2) == 0 {
				running = append(running, Running{ID: JobID(1000 + i), End: t0.Add(time.Duration(1+rng.IntN(120)) * time.Minute),
					Allocs: []Alloc{{Node: i, Use: vec(int64(1+rng.IntN(8)), 0, 0)}}})
			}
		}
		prof, err := NewProfile(t0, cluster(n, vec(8, 1000, 0)), running, ProfileOptions{Resolution: time.Second})
		require.NoError(t, err)
		ctr := NewCounters()
		capacity := int64(2 + rng.IntN(10))
		id, err := ctr.Add(capacity, int64(rng.IntN(int(capacity)+1)))
		require.NoError(t, err)
		for range rng.IntN(3) {
			require.NoError(t, ctr.Release(id, int64(rng.IntN(4)), t0.Add(time.Duration(1+rng.IntN(180))*time.Minute)))
		}
		prof.SetCounters(ctr)
		k := 1 + rng.IntN(3)
		reqs := make([]Request, k)
		ids := make([]JobID, k)
		uses := make([][]Use, k)
		for c := range reqs {
			ids[c] = JobID(c + 1)
			reqs[c] = Request{Nodes: 1 + rng.IntN(2), PerNode: vec(int64(1+rng.IntN(8)), 0, 0),
				Duration: time.Duration(1+rng.IntN(60)) * time.Minute}
			uses[c] = []Use{{Counter: id, Amount: int64(rng.IntN(int(capacity)/2 + 2))}}
		}
		before := prof.Len()
		nodesOnly, err := prof.EarliestCoFit(ids, reqs)
		require.NoError(t, err)
		fits, err := prof.EarliestCoFitUses(ids, reqs, uses)
		require.NoError(t, err)
		require.Equal(t, before, prof.Len(), "iter %d: nothing stays booked", iter)
		if fits[0].Status == FitNever && nodesOnly[0].Status == FitFound {
			never++
		}
		if fits[0].Status != FitFound {
			continue
		}
		found++
		require.Equal(t, FitFound, nodesOnly[0].Status)
		start := fits[0].Start
		require.False(t, start.Before(nodesOnly[0].Start), "iter %d: the counters only delay", iter)
		if start.After(nodesOnly[0].Start) {
			delayed++
		}
		// Each request's uses fit with those before it booked.
		room := func(at time.Time) bool {
			trial := ctr.Clone()
			for c := range reqs {
				s, ok, err := trial.Earliest(uses[c], at, reqs[c].Duration)
				require.NoError(t, err)
				if !ok || !s.Equal(at) {
					return false
				}
				trial.book(uses[c], at.Unix(), at.Add(reqs[c].Duration).Unix())
			}
			return true
		}
		require.True(t, room(start), "iter %d: the requests have room at the start", iter)
		// No earlier whole minute (every change point is one) suits both
		// the nodes and the counters.
		for at := nodesOnly[0].Start; at.Before(start); at = at.Add(time.Minute) {
			early := slices.Clone(reqs)
			for c := range early {
				early[c].Earliest = at
			}
			nf, err := prof.EarliestCoFit(ids, early)
			require.NoError(t, err)
			if nf[0].Status == FitFound && nf[0].Start.Equal(at) {
				require.False(t, room(at), "iter %d: %v suits both, before %v", iter, at, start)
			}
		}
		for c := range fits {
			require.Equal(t, start, fits[c].Start)
		}
		for c := range fits {
			require.NoError(t, prof.ReserveFit(ids[c], reqs[c], fits[c]), "iter %d: component %d fits with the others", iter, c)
		}
		checkNoOverAllocation(t, prof)
	}
	require.Positive(t, found)
	require.Positive(t, delayed)
	require.Positive(t, never)
}

// A heterogeneous job that ends without a booking (an estimate, beyond
// the window, never) leaves the plan as if it had not been in the queue:
// on random profiles and queues under EASY, planning the queue without
// such jobs gives every other job the same outcome. (Its search books
// only what a later component must see and takes it back; the shape
// cache's answers, kept across it, must stay exact.)
func TestCoStartWithoutBookingChangesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 29))
	dropped := 0
	for iter := range 200 {
		n := 3 + rng.IntN(6)
		var running []Running
		for i := range n {
			if rng.IntN(3) > 0 {
				running = append(running, Running{ID: JobID(1000 + i), End: t0.Add(time.Duration(1+rng.IntN(180)) * time.Minute),
					Allocs: []Alloc{{Node: i, Use: vec(int64(1+rng.IntN(8)), 0, 0)}}})
			}
		}
		pl, err := NewPlanner(Config{Mode: EASY, Resolution: time.Second})
		require.NoError(t, err)
		newProf := func() *Profile {
			p, err := pl.NewProfile(t0, cluster(n, vec(8, 1000, 0)), running)
			require.NoError(t, err)
			return p
		}
		job := func(id JobID) Job {
			return Job{ID: id, Nodes: 1 + rng.IntN(2), PerNode: vec(int64(1+rng.IntN(8)), 0, 0),
				TimeLimit: time.Duration(1+rng.IntN(90)) * time.Minute}
		}
		var jobs []Job
		for x := range 6 + rng.IntN(10) {
			id := JobID(10 * (x + 1))
			if rng.IntN(3) == 0 {
				j := Job{ID: id, Components: []Job{job(id), job(id + 1)}}
				if rng.IntN(2) == 0 {
					j.Components = append(j.Components, job(id+2))
				}
				jobs = append(jobs, j)
				continue
			}
			jobs = append(jobs, job(id))
		}
		full, err := pl.Plan(newProf(), jobs)
		require.NoError(t, err)
		var kept []Job
		var want []Entry
		for x, e := range full.Entries {
			if len(jobs[x].Components) > 0 && e.Status != StatusStart && e.Status != StatusReserved {
				dropped++
				continue
			}
			kept = append(kept, jobs[x])
			want = append(want, e)
		}
		less, err := pl.Plan(newProf(), kept)
		require.NoError(t, err)
		for x, e := range less.Entries {
			w := want[x]
			require.Equal(t, w.Status, e.Status, "iter %d job %d", iter, e.ID)
			require.Equal(t, w.Start, e.Start, "iter %d job %d", iter, e.ID)
			require.Equal(t, w.Nodes, e.Nodes, "iter %d job %d", iter, e.ID)
			for k := range w.Components {
				require.Equal(t, w.Components[k].Nodes, e.Components[k].Nodes, "iter %d job %d component %d", iter, e.ID, k)
			}
		}
	}
	require.Positive(t, dropped)
}
