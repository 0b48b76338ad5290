package backfill

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ---- the reference model's side of Advance, AddStarted and the bulk releases ----

// endOf mirrors Profile.endOf at the model's origin: exact seconds, an
// overdue end at the first grid point after the origin.
func (m *naive) endOf(t time.Time) int64 {
	if t.IsZero() {
		return posInf
	}
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	if s <= m.origin {
		return ceilTo(m.origin+1, m.res)
	}
	return s
}

// endAt mirrors Profile.endAt: a start at the origin ends exactly, a later
// one on the grid.
func (m *naive) endAt(t, d int64) int64 {
	if t <= m.origin {
		return t + d
	}
	return ceilTo(t+d, m.res)
}

// advance mirrors Profile.Advance: overdue running jobs hold until the
// first grid point after the new origin, reservations and blocks that are
// over disappear.
func (m *naive) advance(o int64) {
	end := ceilTo(o+1, m.res)
	out := m.items[:0]
	for _, it := range m.items {
		if it.e <= o {
			if !it.running {
				continue
			}
			it.s, it.e = o, end
		}
		out = append(out, it)
	}
	m.items = out
	m.origin = o
}

// dropKind mirrors ReleaseReservations and ReleaseBlocks; it returns the
// number of entries dropped.
func (m *naive) dropKind(k entryKind) int {
	ids := map[JobID]bool{}
	out := m.items[:0]
	for _, it := range m.items {
		if !it.running && it.kind == k {
			ids[it.id] = true
			continue
		}
		out = append(out, it)
	}
	m.items = out
	return len(ids)
}

// project converts v to p's active dimensions.
func projectTo(t *testing.T, p *Profile, v gres.Vector) []int64 {
	t.Helper()
	out := make([]int64, p.a)
	ok, err := p.project(v, out)
	require.NoError(t, err)
	require.True(t, ok)
	return out
}

// advanceOp advances p (and m) by a random step — none, within the second,
// off the grid, several grid steps — or checks that going back fails; then
// compares p with a profile built afresh.
func advanceOp(t *testing.T, rng *rand.Rand, p *Profile, m *naive) {
	t.Helper()
	res := m.res
	var now time.Time
	switch k := rng.IntN(8); k {
	case 0: // the origin itself: a no-op
		now = p.Now()
	case 1: // going back fails and changes nothing
		back := p.Now().Add(-time.Duration(1+rng.Int64N(2*res)) * time.Second)
		if rng.IntN(2) == 0 {
			back = p.Now().Add(-time.Nanosecond)
		}
		require.ErrorIs(t, p.Advance(back), ErrInvalidTime)
		require.ErrorIs(t, p.Advance(time.Time{}), ErrInvalidTime)
		return
	case 2: // later within the same second
		ns := int64(p.Now().Nanosecond())
		if ns >= 999_999_999 {
			return
		}
		now = time.Unix(m.origin, ns+1+rng.Int64N(999_999_999-ns))
	default:
		now = time.Unix(m.origin+1+rng.Int64N(int64(k)*2*res), 0)
		if rng.IntN(4) == 0 {
			now = now.Add(time.Duration(rng.Int64N(1e9)))
		}
	}
	require.NoError(t, p.Advance(now))
	m.advance(now.Unix())
	require.Equal(t, now, p.Now())
	require.Equal(t, m.origin, p.origin)
	compareWithFresh(t, rng, p, m)
}

// planReleaseOp plans random jobs on p itself (as a scheduler keeping its
// profile does), mirrors the bookings into the model, and sometimes
// releases every reservation (or block) right away.
func planReleaseOp(t *testing.T, rng *rand.Rand, p *Profile, m *naive, idp *JobID) {
	t.Helper()
	pl, jobs := randomPlanInput(t, rng, p, idp)
	plan, err := pl.Plan(p, jobs)
	require.NoError(t, err)
	for _, e := range plan.Entries {
		if e.Status != StatusStart && e.Status != StatusReserved {
			continue
		}
		r, ok := p.Reservation(e.ID)
		require.True(t, ok)
		if e.Status == StatusStart {
			require.Equal(t, p.Now(), r.Start, "a start fits at the origin")
		}
		for _, al := range r.Allocs {
			m.items = append(m.items, naiveItem{id: e.ID, kind: kindReserved, node: al.Node, use: projectTo(t, p, al.Use),
				s: max(m.origin, r.Start.Unix()), e: r.End.Unix()})
		}
	}
	switch rng.IntN(4) {
	case 0, 1:
		require.Equal(t, m.dropKind(kindReserved), p.ReleaseReservations())
	case 2:
		require.Equal(t, m.dropKind(kindBlock), p.ReleaseBlocks())
	}
}

// startPlannedOp starts a job the profile holds a reservation for, as a
// scheduler does with the last plan's starts: usually with exactly what
// was booked (the reservation becomes the running job), sometimes with
// another end (it is replaced).
func startPlannedOp(t *testing.T, rng *rand.Rand, p *Profile, m *naive) {
	t.Helper()
	var ids []JobID
	for _, it := range m.items {
		if !it.running && it.kind == kindReserved && !slices.Contains(ids, it.id) {
			ids = append(ids, it.id)
		}
	}
	if len(ids) == 0 {
		return
	}
	id := ids[rng.IntN(len(ids))]
	r, ok := p.Reservation(id)
	require.True(t, ok)
	end := r.End
	if rng.IntN(3) == 0 {
		end = end.Add(time.Duration(1+rng.Int64N(2*m.res)) * time.Second)
	}
	allocs := r.Allocs
	more := rng.IntN(3) == 0 && p.a > 0
	if more { // the job holds more than the plan booked (a GPU type)
		allocs = make([]Alloc, len(r.Allocs))
		for x, al := range r.Allocs {
			u := projectTo(t, p, al.Use)
			j := rng.IntN(p.a)
			u[j] = min(u[j]+1, m.caps[al.Node][j])
			allocs[x] = Alloc{Node: al.Node, Use: expandTo(p, u)}
		}
	}
	require.NoError(t, p.AddStarted(Running{ID: id, End: end, Allocs: allocs}))
	e := m.endOf(end)
	uses := map[int][]int64{}
	for _, al := range allocs {
		uses[al.Node] = projectTo(t, p, al.Use)
	}
	out := m.items[:0]
	for _, it := range m.items {
		if it.id == id {
			if it.s > m.origin || it.e != e {
				it.s = m.origin // replaced: held from the origin
			}
			if u := uses[it.node]; !slices.Equal(u, it.use) {
				it.use = u
				if isZero(it.use) && it.s <= m.origin {
					it.s = m.origin
				}
			}
			it.e, it.end0, it.kind, it.running = e, end, kindRunning, true
			for j := range it.use { // running jobs are in the base
				m.base[it.node][j] -= it.use[j]
			}
		}
		out = append(out, it)
	}
	m.items = out
	require.ErrorIs(t, p.AddStarted(Running{ID: id, Allocs: r.Allocs}), ErrDuplicateID, "a running job is not replaced")
}

// addStartedOp adds a job that starts now, usually on resources free at
// the origin, sometimes over-committing them.
func addStartedOp(t *testing.T, rng *rand.Rand, p *Profile, m *naive, idp *JobID) {
	t.Helper()
	*idp++
	id := *idp
	res := m.res
	var allocs []Alloc
	var items []naiveItem
	careful := rng.IntN(5) != 0
	for i := range p.n {
		if rng.IntN(2) == 0 {
			continue
		}
		u := make([]int64, p.a)
		for j := range u {
			u[j] = min(int64(rng.IntN(3)), m.caps[i][j])
			if careful {
				u[j] = max(0, min(u[j], m.free(i, m.origin)[j]))
			}
		}
		allocs = append(allocs, Alloc{Node: i, Use: expandTo(p, u)})
		items = append(items, naiveItem{id: id, kind: kindRunning, node: i, use: u, running: true})
	}
	var end time.Time
	switch k := rng.IntN(8); {
	case k == 0: // no time limit
	case k == 1: // already overdue
		end = time.Unix(m.origin-rng.Int64N(2*res), 0)
	default:
		end = time.Unix(m.origin+1+rng.Int64N(8*res), 0)
	}
	err := p.AddStarted(Running{ID: id, End: end, Allocs: allocs})
	if len(allocs) == 0 {
		require.ErrorIs(t, err, ErrInvalidRequest)
		return
	}
	require.NoError(t, err)
	e := m.endOf(end)
	for _, it := range items {
		it.s, it.e, it.end0 = m.origin, e, end
		for j := range it.use {
			m.base[it.node][j] -= it.use[j]
		}
		m.items = append(m.items, it)
	}
	require.ErrorIs(t, p.AddStarted(Running{ID: id, Allocs: allocs}), ErrDuplicateID)
	over := gres.Vector{1} // a resource no node has, or beyond node's capacity
	if p.a > 0 {
		over = slices.Clone(allocs[0].Use)
		over[p.active[0]] = p.caps[allocs[0].Node*p.a] + 1
	}
	require.ErrorIs(t, p.AddStarted(Running{ID: id + 1<<40, Allocs: []Alloc{{Node: allocs[0].Node, Use: over}}}), ErrOverAllocation)
}

// freshFromModel builds through the public API what the model describes:
// NewProfile at p's now from the surviving running jobs (with the End they
// were added with) and the model's free amounts, then the blocks and
// reservations booked again in ID order. A reservation that no longer fits
// because an overdue job was extended under it is booked without the
// check (forced counts them). ok is false when the free amounts cannot be
// given to NewProfile (negative after over-committing starts).
func freshFromModel(t *testing.T, p *Profile, m *naive) (fresh *Profile, forced int, ok bool) {
	t.Helper()
	n := len(m.caps)
	used := make([][]int64, n)
	for i := range used {
		used[i] = make([]int64, p.a)
	}
	var running []Running
	var others []naiveItem
	for _, it := range m.items {
		if !it.running {
			others = append(others, it)
			continue
		}
		for j := range it.use {
			used[it.node][j] += it.use[j]
		}
		if x := len(running) - 1; x >= 0 && running[x].ID == it.id {
			running[x].Allocs = append(running[x].Allocs, Alloc{Node: it.node, Use: expandTo(p, it.use)})
			continue
		}
		running = append(running, Running{ID: it.id, End: it.end0, Allocs: []Alloc{{Node: it.node, Use: expandTo(p, it.use)}}})
	}
	derived := true
	nodes := make([]NodeState, n)
	for i := range nodes {
		nodes[i].Capacity = expandTo(p, m.caps[i])
		for j := range m.base[i] {
			if m.base[i][j] < 0 {
				return nil, 0, false
			}
			if m.base[i][j]+used[i][j] != m.caps[i][j] {
				derived = false
			}
		}
	}
	if !derived {
		for i := range nodes {
			nodes[i].Free = expandTo(p, m.base[i])
		}
	}
	fresh, err := NewProfile(p.Now(), nodes, running, ProfileOptions{Resolution: p.Resolution()})
	require.NoError(t, err)
	slices.SortStableFunc(others, func(x, y naiveItem) int { return cmp.Compare(x.id, y.id) })
	for x := 0; x < len(others); {
		it := others[x]
		var allocs []Alloc
		var nodeIdx []int
		for ; x < len(others) && others[x].id == it.id; x++ {
			allocs = append(allocs, Alloc{Node: others[x].node, Use: expandTo(p, others[x].use)})
			nodeIdx = append(nodeIdx, others[x].node)
		}
		end := time.Time{}
		if it.e < posInf {
			end = time.Unix(it.e, 0)
		}
		if it.kind == kindBlock {
			require.NoError(t, fresh.Block(it.id, time.Unix(it.s, 0), end, nodeIdx))
			continue
		}
		err := fresh.Reserve(Reservation{ID: it.id, Start: time.Unix(it.s, 0), End: end, Allocs: allocs})
		if err == nil {
			continue
		}
		require.ErrorIs(t, err, ErrOverAllocation)
		e, err := fresh.newEntry(it.id, kindReserved, fresh.startOf(time.Unix(it.s, 0)), it.e, allocs)
		require.NoError(t, err)
		fresh.change(e.nodes, e.use, e.start, e.end, -1)
		fresh.addEntry(e)
		forced++
	}
	return fresh, forced, true
}

// compareWithFresh checks that p answers every question as the profile
// built afresh from the model: timelines, entries, earliest fits and
// whole plans.
func compareWithFresh(t *testing.T, rng *rand.Rand, p *Profile, m *naive) {
	t.Helper()
	fresh, _, ok := freshFromModel(t, p, m)
	if !ok {
		return
	}
	checkProfile(t, fresh, m)
	require.Equal(t, fresh.NumChangePoints(), p.NumChangePoints(), "change points")
	require.Equal(t, fresh.Len(), p.Len(), "entries")
	requireSameTimelines(t, fresh, p, "timeline: ")
	fresh.ents.Ascend(func(e *entry) bool {
		want, _ := fresh.Reservation(e.id)
		got, ok := p.Reservation(e.id)
		require.True(t, ok)
		require.Equal(t, want, got, "entry %d", e.id)
		return true
	})
	for range 4 {
		req := randomRequest(rng, p, m.res)
		want, err := fresh.EarliestFit(req)
		require.NoError(t, err)
		got, err := p.EarliestFit(req)
		require.NoError(t, err)
		require.Equal(t, want, got, "earliest fit %+v", req)
	}
	id := JobID(1 << 50)
	requireSameRandomPlan(t, rng, fresh, p, &id)
}

// requireSameRandomPlan checks that a random queue (fresh IDs from idp)
// gets the same plan on clones of want and got.
func requireSameRandomPlan(t *testing.T, rng *rand.Rand, want, got *Profile, idp *JobID) {
	t.Helper()
	pl, jobs := randomPlanInput(t, rng, got, idp)
	wp, err := pl.Plan(want.Clone(), jobs)
	require.NoError(t, err)
	gp, err := pl.Plan(got.Clone(), jobs)
	require.NoError(t, err)
	require.Equal(t, wp, gp, "plan")
}

// randomRequest draws a request for EarliestFit on p.
func randomRequest(rng *rand.Rand, p *Profile, res int64) Request {
	req := make([]int64, p.a)
	for j := range req {
		req[j] = int64(rng.IntN(3))
	}
	r := Request{Nodes: 1 + rng.IntN(p.n), PerNode: expandTo(p, req), Exclusive: rng.IntN(4) == 0,
		Duration: time.Duration(1+rng.Int64N(6*res)) * time.Second}
	if rng.IntN(2) == 0 {
		r.Allowed = topology.NewNodeSet(p.n)
		for i := range p.n {
			if rng.IntN(4) != 0 {
				r.Allowed.Add(i)
			}
		}
	}
	if rng.IntN(3) == 0 {
		r.Earliest = p.Now().Add(time.Duration(rng.Int64N(8*res)) * time.Second)
	}
	if rng.IntN(3) == 0 {
		r.Latest = p.Now().Add(time.Duration(rng.Int64N(10*res)) * time.Second)
	}
	return r
}

// randomPlanInput draws a planner configuration (with p's resolution) and
// a queue of jobs with fresh IDs.
func randomPlanInput(t *testing.T, rng *rand.Rand, p *Profile, idp *JobID) (*Planner, []Job) {
	t.Helper()
	res := int64(p.Resolution() / time.Second)
	cfg := Config{Mode: Mode(rng.IntN(2)), Reservations: rng.IntN(3), Resolution: p.Resolution(),
		Window: time.Duration(2*res+rng.Int64N(30*res)) * time.Second, BusyNodes: rng.IntN(2) == 0}
	if rng.IntN(4) == 0 {
		cfg.MaxJobTest = 1 + rng.IntN(4)
	}
	pl, err := NewPlanner(cfg)
	require.NoError(t, err)
	jobs := make([]Job, 1+rng.IntN(8))
	for x := range jobs {
		*idp++
		r := randomRequest(rng, p, res)
		j := Job{ID: *idp, Nodes: r.Nodes, PerNode: r.PerNode, Exclusive: r.Exclusive, Allowed: r.Allowed,
			TimeLimit: r.Duration, Earliest: r.Earliest, Priority: float64(rng.IntN(4)), NoReserve: rng.IntN(6) == 0,
			User: fmt.Sprint("u", rng.IntN(3)), Partition: fmt.Sprint("p", rng.IntN(2))}
		if rng.IntN(5) == 0 && j.TimeLimit > time.Second {
			j.TimeMin = time.Duration(1+rng.Int64N(int64(j.TimeLimit/time.Second)-1)) * time.Second
		}
		jobs[x] = j
	}
	return pl, jobs
}

// keptOp applies one random operation of a kept profile's cycle to p
// and m: an advance, a started job, a planned job started, or a plan
// (sometimes released).
func keptOp(t *testing.T, rng *rand.Rand, p *Profile, m *naive, idp *JobID) {
	t.Helper()
	switch rng.IntN(4) {
	case 0:
		advanceOp(t, rng, p, m)
	case 1:
		addStartedOp(t, rng, p, m, idp)
	case 2:
		startPlannedOp(t, rng, p, m)
	default:
		planReleaseOp(t, rng, p, m, idp)
	}
}

// TestAdvanceMatchesFresh drives long random sequences of AddRunning-style
// setups, Release, Reserve, Block, AddStarted, Plan, ReleaseReservations
// and Advance on profiles and clones, and after every Advance compares the
// profile with the reference model and with a profile built afresh at the
// same now (timelines, entries, earliest fits and plans).
func TestAdvanceMatchesFresh(t *testing.T) {
	forEachRandomProfile(t, 250, 40, 31, func(t *testing.T, rng *rand.Rand, p *Profile, m *naive) {
		nextID := JobID(1000)
		for range 30 {
			keptOp(t, rng, p, m, &nextID)
			checkProfile(t, p, m)
			if rng.IntN(6) == 0 { // a what-if clone advanced further
				snap := m.clone()
				c := p.Clone()
				advanceOp(t, rng, c, m)
				checkProfile(t, c, m)
				checkProfile(t, p, snap)
				m = snap
			}
		}
	})
}

// TestAdvance pins the documented behaviour on small cases.
func TestAdvance(t *testing.T) {
	full := vec(4, 4, 0)
	half := vec(2, 2, 0)
	build := func(t *testing.T, now time.Time) *Profile {
		p, err := NewProfile(now, cluster(2, full), []Running{
			{ID: 1, End: t0.Add(mins(10)), Allocs: []Alloc{{Node: 0, Use: full}}},
			{ID: 2, End: t0.Add(mins(30)), Allocs: []Alloc{{Node: 1, Use: half}}},
			{ID: 3, Allocs: []Alloc{{Node: 1, Use: vec(1, 1, 0)}}},
		}, ProfileOptions{})
		require.NoError(t, err)
		return p
	}
	steps := func(t *testing.T, p *Profile, node int) []string {
		ss, err := p.Timeline(node)
		require.NoError(t, err)
		var out []string
		for _, s := range ss {
			out = append(out, fmt.Sprintf("%s:%d", s.Start.Sub(t0), s.Free[gres.CPU]))
		}
		return out
	}
	tests := []struct {
		name   string
		to     time.Duration
		node0  []string
		node1  []string
		checks func(t *testing.T, p *Profile)
	}{
		{name: "no-op at the origin", to: 0, node0: []string{"0s:0", "10m0s:4"}, node1: []string{"0s:1", "30m0s:3"}},
		{name: "within the first slot, off the grid", to: 5*time.Minute + 7*time.Second,
			node0: []string{"5m7s:0", "10m0s:4"}, node1: []string{"5m7s:1", "30m0s:3"}},
		{name: "onto a change point", to: mins(10),
			node0: []string{"10m0s:0", "11m0s:4"}, node1: []string{"10m0s:1", "30m0s:3"},
			checks: func(t *testing.T, p *Profile) {
				r, ok := p.Reservation(1)
				require.True(t, ok)
				assert.Equal(t, t0.Add(mins(11)), r.End, "overdue: held one step past the origin")
			}},
		{name: "past every end", to: time.Hour + 30*time.Second,
			node0: []string{"1h0m30s:0", "1h1m0s:4"}, node1: []string{"1h0m30s:1", "1h1m0s:3"},
			checks: func(t *testing.T, p *Profile) {
				assert.Equal(t, 2, p.NumChangePoints())
				fit, err := p.EarliestFit(Request{Nodes: 2, PerNode: half, Duration: time.Minute})
				require.NoError(t, err)
				assert.Equal(t, t0.Add(61*time.Minute), fit.Start)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := build(t, t0)
			orig := p.Clone()
			c := p.Clone()
			now := t0.Add(tc.to)
			require.NoError(t, c.Advance(now))
			assert.Equal(t, tc.node0, steps(t, c, 0))
			assert.Equal(t, tc.node1, steps(t, c, 1))
			assert.Equal(t, now, c.Now())
			checkProfile(t, c, nil)
			// The original is untouched.
			for i := range 2 {
				assert.Equal(t, steps(t, orig, i), steps(t, p, i))
			}
			assert.Equal(t, t0, p.Now())
			// Same as built afresh at now.
			f := build(t, now)
			for i := range 2 {
				assert.Equal(t, steps(t, f, i), steps(t, c, i), "node %d vs fresh", i)
			}
			if tc.checks != nil {
				tc.checks(t, c)
			}
		})
	}

	t.Run("errors", func(t *testing.T) {
		p := build(t, t0.Add(mins(5)))
		for _, bad := range []time.Time{{}, t0, t0.Add(mins(5) - time.Nanosecond), time.Unix(posInf/2, 0)} {
			err := p.Advance(bad)
			require.ErrorIs(t, err, ErrInvalidTime, "%v", bad)
		}
		assert.Equal(t, t0.Add(mins(5)), p.Now())
		checkProfile(t, p, nil)
	})

	t.Run("reservations and blocks", func(t *testing.T) {
		p := build(t, t0)
		require.NoError(t, p.Release(1)) // ended on time
		require.NoError(t, p.Reserve(Reservation{ID: 10, Start: t0.Add(mins(10)), End: t0.Add(mins(20)),
			Allocs: []Alloc{{Node: 0, Use: half}}}))
		require.NoError(t, p.Reserve(Reservation{ID: 11, Start: t0.Add(mins(30)), End: t0.Add(mins(40)),
			Allocs: []Alloc{{Node: 1, Use: half}}}))
		require.NoError(t, p.Block(12, t0.Add(mins(12)), time.Time{}, []int{1}))
		require.NoError(t, p.Block(13, t0, t0.Add(mins(14)), []int{0}))
		require.NoError(t, p.Advance(t0.Add(mins(15))))
		assert.True(t, p.Has(10), "started in the past, still holding")
		r, _ := p.Reservation(10)
		assert.Equal(t, t0.Add(mins(15)), r.Start, "reported from the origin")
		assert.Equal(t, t0.Add(mins(20)), r.End)
		assert.False(t, p.Has(13), "a block that is over disappears")
		assert.True(t, p.Has(12), "a block without an end stays")
		assert.True(t, p.Has(11))
		assert.Equal(t, []string{"15m0s:2", "20m0s:4"}, steps(t, p, 0))
		assert.Equal(t, []string{"15m0s:-3", "40m0s:-1"}, steps(t, p, 1), "blocked")
		assert.Equal(t, 2, p.ReleaseReservations())
		assert.False(t, p.Has(10))
		assert.False(t, p.Has(11))
		assert.Equal(t, 0, p.ReleaseReservations())
		assert.Equal(t, []string{"15m0s:4"}, steps(t, p, 0))
		assert.Equal(t, []string{"15m0s:-3", "30m0s:-1"}, steps(t, p, 1))
		assert.Equal(t, 1, p.ReleaseBlocks())
		assert.Equal(t, []string{"15m0s:1", "30m0s:3"}, steps(t, p, 1))
		assert.Equal(t, 2, p.Len())
		checkProfile(t, p, nil)
	})

	t.Run("overdue until released", func(t *testing.T) {
		p := build(t, t0)
		for _, m := range []int{10, 11, 25} {
			require.NoError(t, p.Advance(t0.Add(mins(m))))
			r, _ := p.Reservation(1)
			assert.Equal(t, t0.Add(mins(m+1)), r.End, "at +%dm", m)
			assert.Equal(t, []string{fmt.Sprintf("%dm0s:0", m), fmt.Sprintf("%dm0s:4", m+1)}, steps(t, p, 0))
		}
		require.NoError(t, p.Release(1))
		assert.Equal(t, []string{"25m0s:4"}, steps(t, p, 0))
		checkProfile(t, p, nil)
	})
}

// TestAddStarted checks that a started job takes its resources from the
// origin to its end, as a profile built with it as a running job would
// show.
func TestAddStarted(t *testing.T) {
	now := t0.Add(20 * time.Second)
	p, err := NewProfile(now, cluster(2, vec(4, 4, 0)), nil, ProfileOptions{})
	require.NoError(t, err)
	job := Running{ID: 5, End: now.Add(mins(30)), Allocs: []Alloc{{Node: 0, Use: vec(3, 1, 0)}, {Node: 1, Use: vec(4, 4, 0)}}}
	require.NoError(t, p.AddStarted(job))
	want, err := NewProfile(now, cluster(2, vec(4, 4, 0)), []Running{job}, ProfileOptions{})
	require.NoError(t, err)
	requireSameTimelines(t, want, p, "")
	checkProfile(t, p, nil)
	assert.ErrorIs(t, p.AddStarted(job), ErrDuplicateID)
	assert.ErrorIs(t, p.AddStarted(Running{ID: 6}), ErrInvalidRequest)
	assert.ErrorIs(t, p.AddStarted(Running{ID: 6, Allocs: []Alloc{{Node: 2, Use: vec(1, 1, 0)}}}), ErrInvalidNode)
	assert.ErrorIs(t, p.AddStarted(Running{ID: 6, Allocs: []Alloc{{Node: 0, Use: vec(5, 1, 0)}}}), ErrOverAllocation)
	// A fact, not a request: it may overlap a block (a job inside a
	// maintenance reservation); the node shows negative free amounts.
	require.NoError(t, p.Block(7, now, now.Add(time.Hour), []int{0}))
	require.NoError(t, p.AddStarted(Running{ID: 8, Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}}))
	f, err := p.FreeAt(0, now)
	require.NoError(t, err)
	assert.Equal(t, int64(-4), f[gres.CPU])
	require.NoError(t, p.Release(5))
	require.NoError(t, p.Release(8))
	require.NoError(t, p.Release(7))
	for i := range 2 {
		steps, _ := p.Timeline(i)
		assert.Equal(t, []Step{{Start: now, Free: vec(4, 4, 0)}}, steps)
	}
	checkProfile(t, p, nil)
}

// TestIncrementalCyclesMatchRebuild runs a scheduler's event loop twice
// over: once rebuilding the profile every cycle, once keeping one profile
// with the documented recipe (Release on job end, ReleaseReservations and
// Advance at the start of a cycle, Plan, then AddStarted for each start).
// Jobs run shorter or longer than their limits (overdue jobs), a
// maintenance block comes and goes, and every cycle's plans must be equal.
func TestIncrementalCyclesMatchRebuild(t *testing.T) {
	iters := 120
	if testing.Short() {
		iters = 20
	}
	cycles := 0
	for seed := range iters {
		rng := rand.New(rand.NewPCG(uint64(seed), 77))
		cfg := []Config{{}, {Mode: EASY}, {Mode: EASY, BusyNodes: true, Reservations: 2}, {Resolution: time.Second, Window: 6 * time.Hour}}[seed%4]
		res := int64(cfg.withDefaults().Resolution / time.Second)
		nodes, jobs := simWorkload(rng, max(res, 60))
		if len(jobs) == 0 {
			continue
		}
		pl, err := NewPlanner(cfg)
		require.NoError(t, err)
		base := time.Unix(1_750_000_000/3600*3600+rng.Int64N(600), 0)
		at := func(s int64) time.Time { return base.Add(time.Duration(s) * time.Second) }
		// A maintenance block on node 0, on the grid.
		grid := time.Duration(res) * time.Second
		blkS := at(600 + rng.Int64N(7200)).Truncate(grid)
		blkE := blkS.Add(time.Duration(1+rng.Int64N(6)) * 10 * time.Minute)

		type run struct {
			r      Running
			finish int64 // actual end, may be before or after r.End
		}
		var running []run
		var pending []simJob
		sorted := slices.Clone(jobs)
		slices.SortStableFunc(sorted, func(a, b simJob) int { return cmp.Compare(a.submit, b.submit) })
		submitted := 0
		now := sorted[0].submit
		keep, err := pl.NewProfile(at(now), nodes, nil)
		require.NoError(t, err)
		if blkE.After(at(now)) {
			require.NoError(t, keep.Block(1<<40, blkS, blkE, []int{0}))
		}
		for guard := 0; guard < 5000; guard++ {
			// Jobs that finished: the kept profile hears of each end.
			running = slices.DeleteFunc(running, func(r run) bool {
				if r.finish <= now {
					require.NoError(t, keep.Release(r.r.ID))
					return true
				}
				return false
			})
			for ; submitted < len(sorted) && sorted[submitted].submit <= now; submitted++ {
				pending = append(pending, sorted[submitted])
			}
			require.NoError(t, keep.Advance(at(now)))
			rs := make([]Running, len(running))
			for x := range running {
				rs[x] = running[x].r
			}
			fresh, err := pl.NewProfile(at(now), nodes, rs)
			require.NoError(t, err)
			if blkE.After(at(now)) {
				require.NoError(t, fresh.Block(1<<40, blkS, blkE, []int{0}))
			}
			in := make([]Job, len(pending))
			for x := range pending {
				in[x] = pending[x].Job
			}
			want, err := pl.Plan(fresh, in)
			require.NoError(t, err)
			got, err := pl.Plan(keep, in)
			require.NoError(t, err)
			require.Equal(t, want, got, "seed %d cycle at %d", seed, now)
			cycles++
			keep.ReleaseReservations()
			next := int64(posInf)
			var still []simJob
			for x, e := range got.Entries {
				j := pending[x]
				if e.Status != StatusStart {
					still = append(still, j)
					if e.Status == StatusReserved || e.Status == StatusEstimated {
						next = min(next, e.Start.Unix()-base.Unix())
					}
					continue
				}
				allocs := jobAllocs(e.Nodes, j.PerNode, j.Exclusive, capacities(nodes))
				lim := int64(e.TimeLimit / time.Second)
				r := Running{ID: j.ID, End: at(now + lim), Allocs: allocs}
				require.NoError(t, keep.AddStarted(r))
				// Actual run time 30–130 % of the limit: some jobs end
				// early, some overrun (overdue until they finish).
				running = append(running, run{r: r, finish: now + max(1, lim*int64(30+rng.IntN(101))/100)})
			}
			pending = still
			for _, r := range running {
				next = min(next, r.finish)
				if e := r.r.End.Unix() - base.Unix(); e > now {
					next = min(next, e)
				}
			}
			if submitted < len(sorted) {
				next = min(next, sorted[submitted].submit)
			}
			if next >= posInf {
				break
			}
			require.Greater(t, next, now)
			// Sometimes wake up between events, off the grid.
			if rng.IntN(4) == 0 && next > now+1 {
				next = now + 1 + rng.Int64N(next-now-1)
			}
			now = next
		}
		require.Empty(t, pending, "seed %d: every job ran", seed)
		checkProfile(t, keep, nil)
	}
	require.Positive(t, cycles)
	t.Logf("%d cycles compared", cycles)
}

// TestKeptProfileAtScale follows the recipe on a synthetic cluster of a few
// hundred nodes (several summary blocks, both ways of restoring summaries
// after ReleaseReservations) and checks every cycle against a profile built
// afresh: same timelines, same plan, valid summaries.
func TestKeptProfileAtScale(t *testing.T) {
	sc := scale{nodes: 200, running: 800, pending: 900}
	cycles := 5
	if testing.Short() {
		sc, cycles = scale{nodes: 130, running: 400, pending: 300}, 3
	}
	for _, cfg := range []Config{{}, {Mode: EASY, BusyNodes: true}} {
		t.Run(cfg.Mode.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(cfg.Mode)))
			w := genWorkload(sc, 5+uint64(cfg.Mode))
			pl, err := NewPlanner(cfg)
			require.NoError(t, err)
			keep, err := pl.NewProfile(w.now, w.nodes, w.running)
			require.NoError(t, err)
			running := slices.Clone(w.running)
			pending := w.pending
			now := w.now
			for cycle := range cycles {
				// Some jobs end (at or before their end, a few overdue
				// ones stay), then the next cycle starts.
				now = now.Add(time.Duration(1+rng.IntN(40)) * time.Minute).Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
				running = slices.DeleteFunc(running, func(r Running) bool {
					if (r.End.After(now) && rng.IntN(20) != 0) || (!r.End.After(now) && rng.IntN(10) == 0) {
						return false
					}
					require.NoError(t, keep.Release(r.ID))
					return true
				})
				require.NoError(t, keep.Advance(now))
				fresh, err := pl.NewProfile(now, w.nodes, running)
				require.NoError(t, err)
				requireSameTimelines(t, fresh, keep, fmt.Sprintf("cycle %d ", cycle))
				checkProfile(t, keep, nil)
				// Small queues restore summaries node by node, large
				// ones in one sweep.
				n := []int{5, len(pending)}[cycle%2]
				jobs := pending[:min(n, len(pending))]
				want, err := pl.Plan(fresh, jobs)
				require.NoError(t, err)
				got, err := pl.Plan(keep, jobs)
				require.NoError(t, err)
				require.Equal(t, want, got, "cycle %d", cycle)
				require.Equal(t, want.Stats.Started+want.Stats.Reserved, keep.ReleaseReservations())
				checkProfile(t, keep, nil)
				var still []Job
				for x, e := range got.Entries {
					if e.Status != StatusStart {
						still = append(still, jobs[x])
						continue
					}
					j := jobs[x]
					r := Running{ID: j.ID, End: now.Add(e.TimeLimit), Allocs: jobAllocs(e.Nodes, j.PerNode, j.Exclusive, capacities(w.nodes))}
					require.NoError(t, keep.AddStarted(r))
					running = append(running, r)
				}
				pending = append(still, pending[len(jobs):]...)
			}
		})
	}
}
