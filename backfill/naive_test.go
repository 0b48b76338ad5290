package backfill

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
	"github.com/stretchr/testify/require"
)

// naive is a reference model of a Profile: a list of intervals, summed on
// demand. Times are profile seconds, as the profile stores them.
type naive struct {
	origin, res int64
	caps, base  [][]int64
	items       []naiveItem
}

type naiveItem struct {
	id      JobID
	kind    entryKind
	node    int
	use     []int64
	s, e    int64 // running: s = origin, e = release time (posInf: never)
	running bool
	end0    time.Time // running: the End it was added with
}

func (m *naive) clone() *naive {
	c := *m
	c.base = make([][]int64, len(m.base))
	for i := range m.base {
		c.base[i] = slices.Clone(m.base[i])
	}
	c.items = slices.Clone(m.items)
	return &c
}

func (m *naive) free(i int, t int64) []int64 {
	f := slices.Clone(m.base[i])
	for _, it := range m.items {
		if it.node != i {
			continue
		}
		for j := range f {
			switch {
			case it.running && t >= it.e:
				f[j] += it.use[j]
			case !it.running && t >= it.s && t < it.e:
				f[j] -= it.use[j]
			}
		}
	}
	return f
}

// times returns every boundary time ≥ from, sorted and distinct.
func (m *naive) times(from int64) []int64 {
	var ts []int64
	for _, it := range m.items {
		for _, t := range []int64{it.s, it.e} {
			if t >= from && t < posInf {
				ts = append(ts, t)
			}
		}
	}
	slices.Sort(ts)
	return slices.Compact(ts)
}

func (m *naive) has(id JobID) bool {
	return slices.ContainsFunc(m.items, func(it naiveItem) bool { return it.id == id })
}

func (m *naive) fitsInterval(i int, use []int64, s, e int64) bool {
	pts := append([]int64{s}, m.times(s+1)...)
	for _, t := range pts {
		if t >= e {
			break
		}
		if !okVec(m.free(i, t), use) {
			return false
		}
	}
	return true
}

func ceilTo(s, res int64) int64 {
	if s >= posInf {
		return posInf
	}
	q := s / res
	if q*res < s {
		q++
	}
	return q * res
}

// earliest is the reference earliest-fit search.
func (m *naive) earliest(n int, req []int64, excl bool, allowed topology.NodeSet, d, t0, latest int64) (int64, []int, FitStatus) {
	cands := append([]int64{t0}, m.times(t0+1)...)
	for _, t := range cands {
		if t > latest {
			break
		}
		dur := m.endAt(t, d) - t
		var feas []int
		for i := range m.caps {
			if !allowed.Has(i) || !okVec(m.caps[i], req) {
				continue
			}
			good := true
			pts := append([]int64{t}, m.times(t+1)...)
			for _, tt := range pts {
				if tt >= t+dur {
					break
				}
				f := m.free(i, tt)
				if excl && !slices.Equal(f, m.caps[i]) || !excl && !okVec(f, req) {
					good = false
					break
				}
			}
			if good {
				feas = append(feas, i)
			}
		}
		if len(feas) >= n {
			return t, feas[:n], FitFound
		}
	}
	capable := 0
	for i := range m.caps {
		if allowed.Has(i) && okVec(m.caps[i], req) {
			capable++
		}
	}
	// Beyond only if something still changes after latest.
	beyond := false
	for _, t := range m.times(t0 + 1) {
		if t > latest && m.changesAt(t) {
			beyond = true
		}
	}
	if t0 > latest {
		beyond = true
	}
	if !beyond || capable < n {
		return 0, nil, FitNever
	}
	return 0, nil, FitBeyondLatest
}

func (m *naive) changesAt(t int64) bool {
	for i := range m.caps {
		if !slices.Equal(m.free(i, t-1), m.free(i, t)) {
			return true
		}
	}
	return false
}

// okVec is the search's rule: req ≤ free on the dimensions req needs, on
// every dimension when req is empty.
func okVec(free, req []int64) bool {
	needs := false
	for j := range req {
		if req[j] != 0 {
			needs = true
			if free[j] < req[j] {
				return false
			}
		}
	}
	if !needs {
		for _, f := range free {
			if f < 0 {
				return false
			}
		}
	}
	return true
}

// checkProfile verifies p against the model and p's internal invariants:
// canonical timelines, change points = union of breakpoints, a summary
// for every change point's grid slot, conservative summaries (see
// checkSummaries).
func checkProfile(t *testing.T, p *Profile, m *naive) {
	t.Helper()
	a := p.a
	bps := map[int64][]int32{}
	for i := range p.n {
		tl := p.tls[i]
		require.LessOrEqual(t, tl.times[0], p.origin, "node %d timeline starts at or before the origin", i)
		require.Len(t, tl.free, len(tl.times)*a, "node %d", i)
		for k := range tl.times {
			if k > 0 {
				require.Greater(t, tl.times[k], p.origin, "node %d breakpoint after the origin", i)
				require.Less(t, tl.times[k-1], tl.times[k], "node %d times ascending", i)
				require.False(t, equalVec(tl.free[k*a:(k+1)*a], tl.free[(k-1)*a:k*a]), "node %d segment %d not canonical", i, k)
				bps[tl.times[k]] = append(bps[tl.times[k]], int32(i))
			}
			if m != nil {
				tt := max(tl.times[k], p.origin)
				require.Equal(t, m.free(i, tt), slices.Clone(tl.free[k*a:(k+1)*a]), "node %d free at %d", i, tt-p.origin)
			}
		}
		if m != nil {
			for _, tt := range m.times(p.origin) {
				k := tl.seg(tt)
				require.Equal(t, m.free(i, tt), slices.Clone(tl.free[k*a:(k+1)*a]), "node %d free at model time %d", i, tt-p.origin)
			}
		}
	}
	seen := 0
	first, ok := p.cps.Min()
	require.True(t, ok)
	require.Equal(t, p.origin, first.t, "the first change point is the origin")
	require.Empty(t, first.nodes, "the origin lists no nodes")
	p.cps.Ascend(func(cp *changePoint) bool {
		seen++
		if cp.t != p.origin {
			want := slices.Clone(bps[cp.t])
			got := slices.Clone(cp.nodes)
			slices.Sort(want)
			slices.Sort(got)
			require.Equal(t, want, got, "change point %d nodes", cp.t-p.origin)
		}
		sm := p.sumFloor(cp.t)
		require.NotNil(t, sm, "change point %d has a summary", cp.t-p.origin)
		require.Equal(t, p.floorRes(cp.t), p.floorRes(sm.t), "change point %d: its grid slot has a summary", cp.t-p.origin)
		return true
	})
	checkSummaries(t, p)
	require.Equal(t, len(bps)+1, seen, "one change point per breakpoint time plus the origin")

	// Entries: none is over; the index, once built, holds exactly them.
	var ids []JobID
	p.ents.Ascend(func(e *entry) bool {
		require.Greater(t, e.end, p.origin, "entry %d ends after the origin", e.id)
		if p.idx != nil {
			got, ok := p.idx.Get(e)
			require.True(t, ok, "entry %d indexed", e.id)
			require.Same(t, e, got, "entry %d indexed", e.id)
		}
		ids = append(ids, e.id)
		return true
	})
	if p.idx != nil {
		require.Equal(t, p.ents.Len(), p.idx.Len(), "index size")
	}
	if m != nil {
		var want []JobID
		for _, it := range m.items {
			want = append(want, it.id)
		}
		slices.Sort(want)
		require.Equal(t, slices.Compact(want), ids, "entry IDs")
	}
}

// forEachRandomProfile runs body as one subtest per seed — iters seeds,
// short of them under -short — on a random profile and its model from
// randomSetup, with a resolution of 1 s, 60 s and 300 s in turn; stream
// keeps the tests' random sequences apart.
func forEachRandomProfile(t *testing.T, iters, short int, stream uint64, body func(t *testing.T, rng *rand.Rand, p *Profile, m *naive)) {
	if testing.Short() {
		iters = short
	}
	for seed := range iters {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), stream))
			p, m := randomSetup(t, rng, []int64{1, 60, 300}[seed%3])
			body(t, rng, p, m)
		})
	}
}

// randomSetup builds a small random cluster, running jobs, a profile and
// its model.
func randomSetup(t *testing.T, rng *rand.Rand, res int64) (*Profile, *naive) {
	t.Helper()
	n := 1 + rng.IntN(7)
	dims := 1 + rng.IntN(3)
	origin := int64(1_700_000_000) + rng.Int64N(3*res)
	nodes := make([]NodeState, n)
	m := &naive{origin: origin, res: res}
	for i := range nodes {
		c := make(gres.Vector, dims)
		for j := range c {
			c[j] = int64(rng.IntN(5))
		}
		nodes[i].Capacity = c
	}
	// Active dims = those with capacity somewhere; the model works on them.
	var active []int
	for j := range dims {
		for i := range nodes {
			if nodes[i].Capacity[j] > 0 {
				active = append(active, j)
				break
			}
		}
	}
	proj := func(v gres.Vector) []int64 {
		out := make([]int64, len(active))
		for x, j := range active {
			out[x] = v.At(gres.ID(j))
		}
		return out
	}
	var running []Running
	used := make([][]int64, n)
	for i := range n {
		used[i] = make([]int64, dims)
	}
	derived := rng.IntN(2) == 0
	for id := JobID(1); id <= JobID(rng.IntN(8)); id++ {
		var allocs []Alloc
		for i := range n {
			if rng.IntN(3) != 0 {
				continue
			}
			u := make(gres.Vector, dims)
			for j := range u {
				if room := nodes[i].Capacity[j] - used[i][j]; room > 0 {
					u[j] = rng.Int64N(room + 1)
				}
			}
			for j := range u {
				used[i][j] += u[j]
			}
			allocs = append(allocs, Alloc{Node: i, Use: u})
		}
		if len(allocs) == 0 {
			continue
		}
		end := time.Unix(origin+res*int64(1+rng.IntN(12)), 0)
		if rng.IntN(10) == 0 {
			end = time.Time{}
		}
		if rng.IntN(10) == 0 {
			end = time.Unix(origin-5, 0) // overdue
		}
		running = append(running, Running{ID: id, End: end, Allocs: allocs})
	}
	for i := range nodes {
		if derived {
			continue
		}
		f := make(gres.Vector, dims)
		for j := range f {
			f[j] = nodes[i].Capacity[j] - used[i][j]
			if f[j] > 0 && rng.IntN(4) == 0 {
				f[j] -= rng.Int64N(f[j] + 1) // partly unusable
			}
		}
		nodes[i].Free = f
	}
	p, err := NewProfile(time.Unix(origin, 0), nodes, running, ProfileOptions{Resolution: time.Duration(res) * time.Second})
	require.NoError(t, err)
	require.Equal(t, len(active), p.a)
	for i := range nodes {
		m.caps = append(m.caps, proj(nodes[i].Capacity))
		if derived {
			b := proj(nodes[i].Capacity)
			u := proj(used[i])
			for j := range b {
				b[j] -= u[j]
			}
			m.base = append(m.base, b)
		} else {
			m.base = append(m.base, proj(nodes[i].Free))
		}
	}
	for _, r := range running {
		e := p.endOf(r.End)
		for _, al := range r.Allocs {
			m.items = append(m.items, naiveItem{id: r.ID, kind: kindRunning, node: al.Node, use: proj(al.Use), s: origin, e: e, running: true, end0: r.End})
		}
	}
	return p, m
}

// modelRelease mirrors Profile.Release in the model.
func (m *naive) release(id JobID) {
	out := m.items[:0]
	for _, it := range m.items {
		if it.id != id {
			out = append(out, it)
			continue
		}
		if it.running {
			for j := range it.use {
				m.base[it.node][j] += it.use[j]
			}
		}
	}
	m.items = out
}

func expandTo(p *Profile, v []int64) gres.Vector { return p.expand(v) }

// TestProfileMatchesModel drives random operations on profiles and clones
// and compares every answer and every node's step function with the
// reference model.
func TestProfileMatchesModel(t *testing.T) {
	forEachRandomProfile(t, 400, 60, 7, func(t *testing.T, rng *rand.Rand, p *Profile, m *naive) {
		checkProfile(t, p, m)
		nextID := JobID(1000)
		runOps(t, rng, p, m, 40, &nextID)
	})
}

// runOps applies random operations to p and m and returns the profile
// the model now describes (a clone, when the last clone step replaced p).
func runOps(t *testing.T, rng *rand.Rand, p *Profile, m *naive, steps int, idp *JobID) *Profile {
	t.Helper()
	nextID := *idp
	defer func() { *idp = nextID }()
	res := m.res
	for step := range steps {
		op := rng.IntN(14)
		if debugOps {
			t.Logf("step %d op %d origin %d", step, op, m.origin)
		}
		switch {
		case op < 4: // earliest fit, maybe booked
			n := 1 + rng.IntN(p.n)
			req := make([]int64, p.a)
			for j := range req {
				req[j] = int64(rng.IntN(3))
			}
			excl := rng.IntN(4) == 0
			allowed := topology.NewNodeSet(p.n)
			for i := range p.n {
				if rng.IntN(4) != 0 {
					allowed.Add(i)
				}
			}
			d := 1 + rng.Int64N(6*res)
			var earliest time.Time
			t0 := m.origin
			if rng.IntN(3) == 0 {
				off := rng.Int64N(8 * res)
				earliest = time.Unix(m.origin+off, 0)
				t0 = m.origin + off
			}
			var latest time.Time
			lat := int64(posInf)
			if rng.IntN(2) == 0 {
				lat = m.origin + rng.Int64N(10*res)
				latest = time.Unix(lat, 0)
			}
			fit, err := p.EarliestFit(Request{Nodes: n, PerNode: expandTo(p, req), Exclusive: excl, Allowed: allowed,
				Duration: time.Duration(d) * time.Second, Earliest: earliest, Latest: latest})
			require.NoError(t, err)
			wt, wn, ws := m.earliest(n, req, excl, allowed, d, t0, lat)
			require.Equal(t, ws, fit.Status, "step %d status (n=%d req=%v excl=%v d=%d)", step, n, req, excl, d)
			if ws != FitFound {
				continue
			}
			require.Equal(t, wt, fit.Start.Unix(), "step %d start", step)
			require.Equal(t, wn, fit.Nodes, "step %d nodes", step)
			require.Equal(t, m.endAt(wt, d), fit.End.Unix(), "step %d end", step)
			if rng.IntN(3) == 0 {
				continue
			}
			nextID++
			allocs := make([]Alloc, len(fit.Nodes))
			for x, i := range fit.Nodes {
				u := req
				if excl {
					u = m.caps[i]
				}
				allocs[x] = Alloc{Node: i, Use: expandTo(p, u)}
				m.items = append(m.items, naiveItem{id: nextID, kind: kindReserved, node: i, use: slices.Clone(u), s: wt, e: m.endAt(wt, d)})
			}
			require.NoError(t, p.Reserve(Reservation{ID: nextID, Start: fit.Start, End: fit.End, Allocs: allocs}))
		case op < 6: // arbitrary reservation: succeeds iff the model says it fits
			nextID++
			s := m.origin + rng.Int64N(8*res)
			e := s + 1 + rng.Int64N(6*res)
			ps := max(m.origin, s)
			pe := m.endAt(ps, e-ps)
			var allocs []Alloc
			ok := true
			var items []naiveItem
			for i := range p.n {
				if rng.IntN(2) == 0 {
					continue
				}
				u := make([]int64, p.a)
				for j := range u {
					u[j] = int64(rng.IntN(3))
					u[j] = min(u[j], m.caps[i][j])
				}
				allocs = append(allocs, Alloc{Node: i, Use: expandTo(p, u)})
				if !m.fitsInterval(i, u, ps, pe) {
					ok = false
				}
				items = append(items, naiveItem{id: nextID, kind: kindReserved, node: i, use: u, s: ps, e: pe})
			}
			err := p.Reserve(Reservation{ID: nextID, Start: time.Unix(s, 0), End: time.Unix(e, 0), Allocs: allocs})
			switch {
			case len(allocs) == 0:
				require.ErrorIs(t, err, ErrInvalidRequest)
			case ok:
				require.NoError(t, err, "step %d", step)
				m.items = append(m.items, items...)
			default:
				require.ErrorIs(t, err, ErrOverAllocation, "step %d", step)
			}
		case op < 8: // release something
			ids := map[JobID]bool{}
			for _, it := range m.items {
				ids[it.id] = true
			}
			if len(ids) == 0 {
				require.ErrorIs(t, p.Release(99999), ErrUnknownID)
				continue
			}
			keys := make([]JobID, 0, len(ids))
			for id := range ids {
				keys = append(keys, id)
			}
			slices.Sort(keys)
			id := keys[rng.IntN(len(keys))]
			require.NoError(t, p.Release(id))
			m.release(id)
		case op == 8: // block
			nextID++
			s := m.origin + rng.Int64N(8*res)
			e := s + 1 + rng.Int64N(6*res)
			ps, pe := max(m.origin, s), e // blocks are exact
			i := rng.IntN(p.n)
			require.NoError(t, p.Block(nextID, time.Unix(s, 0), time.Unix(e, 0), []int{i}))
			m.items = append(m.items, naiveItem{id: nextID, kind: kindBlock, node: i, use: slices.Clone(m.caps[i]), s: ps, e: pe})
		case op < 11: // advance; compare with a profile built afresh
			advanceOp(t, rng, p, m)
		case op == 11: // plan on p itself, then maybe release the plan
			planReleaseOp(t, rng, p, m, &nextID)
		case op == 12: // a job starts now
			addStartedOp(t, rng, p, m, &nextID)
		default: // clone: continue on the clone, check the original is untouched
			snap := m.clone()
			c := p.Clone()
			c = runOps(t, rng, c, m, 5, &nextID)
			checkProfile(t, p, snap)
			p = c
		}
		checkProfile(t, p, m)
	}
	return p
}

// FuzzProfile drives profile operations from fuzz input and checks them
// against the reference model.
var debugOps = false

func FuzzProfile(f *testing.F) {
	for _, s := range []uint64{1, 2, 3, 42, 1 << 40} {
		f.Add(s, uint8(20))
	}
	f.Fuzz(func(t *testing.T, seed uint64, steps uint8) {
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		res := []int64{1, 60, 300}[seed%3]
		p, m := randomSetup(t, rng, res)
		checkProfile(t, p, m)
		nextID := JobID(1000)
		runOps(t, rng, p, m, int(steps%48), &nextID)
	})
}

// checkSummaries verifies that p's summaries are conservative over their
// ranges: every node idle at some moment of a summary's range is in its
// idle set, and its block's maximum bounds its free vector throughout.
func checkSummaries(t *testing.T, p *Profile) {
	t.Helper()
	a := p.a
	first, ok := p.sums.Min()
	require.True(t, ok, "a profile has a summary")
	require.Equal(t, p.origin, first.t, "the first summary starts at the origin")
	p.sums.Ascend(func(sm *summary) bool {
		_, isCP := p.cpGet(sm.t)
		require.True(t, isCP, "summary at %d starts at a change point", sm.t-p.origin)
		if prev := p.cpFloor(sm.t - 1); prev != nil && p.floorRes(prev.t) == p.floorRes(sm.t) {
			require.Failf(t, "summary not at its slot's first change point", "at %d, change point at %d", sm.t-p.origin, prev.t-p.origin)
		}
		lo, hi := max(sm.t, p.origin), p.sumEnd(sm.t)
		for i := range p.n {
			tl := p.tls[i]
			b := i / blockBits
			for k := tl.seg(lo); k < len(tl.times) && tl.times[k] < hi; k++ {
				f := tl.free[k*a : (k+1)*a]
				at := max(tl.times[k], lo) - p.origin
				if equalVec(f, p.caps[i*a:(i+1)*a]) && !sm.idle.Has(i) {
					require.Failf(t, "idle node missing from a summary", "node %d at %d (summary at %d)", i, at, sm.t-p.origin)
				}
				for x := range a {
					if sm.bmax[b*a+x] < f[x] {
						require.Failf(t, "bmax below a free amount", "block %d dim %d at %d: %d < %d", b, x, at, sm.bmax[b*a+x], f[x])
					}
				}
			}
		}
		return true
	})
}
