package backfill

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/btree"

	"github.com/sluicehq/sluice/gres"
)

// ProfileState is a profile's content as plain data, for a caller that
// persists a kept profile (a scheduler snapshot) and rebuilds it later
// with ProfileFromState: the origin and grid, the TRES dimensions the
// profile counts, every node's capacity and free resources as a step
// function of time, and every booking (running job, reservation, block).
// Resource amounts are per active dimension: Active[x] is the TRES of
// column x. The search's summaries are not part of it: they are rebuilt,
// and, being bounds the search only uses to skip nodes, never change a
// decision.
type ProfileState struct {
	// Now is the origin; Resolution the grid.
	Now        time.Time
	Resolution time.Duration
	// Active lists the TRES with capacity on some node, in increasing ID
	// order; Width is the longest capacity vector.
	Active []gres.ID
	Width  int
	// Caps holds each node's capacity (NumNodes × len(Active)).
	Caps []int64
	// Timelines holds each node's free resources: Free[k] (len(Active)
	// values each, flattened) from Times[k] on. Times[0] is at or before
	// Now; the later times are after it, increasing.
	Timelines []TimelineState
	// Entries holds the bookings, by ID.
	Entries []EntryState
}

// TimelineState is one node's free resources over time.
type TimelineState struct {
	Times []int64 // Unix seconds
	Free  []int64
}

// EntryKind says what an entry books.
type EntryKind uint8

// Entry kinds.
const (
	EntryRunning EntryKind = iota // the kinds' order is the profile's (kindRunning …)
	EntryReserved
	EntryBlock
)

// EntryState is one booking: a running job (from the origin), a
// reservation or a block, over [Start, End) in Unix seconds, on Nodes,
// using Use (len(Nodes) × len(Active)
// values; for a block, the capacity it holds). End is beyond any
// representable time (math.MaxInt64/4) for a job without an end.
type EntryState struct {
	ID         JobID
	Kind       EntryKind
	Start, End int64
	Nodes      []int32
	Use        []int64
}

// State returns the profile's content. The slices are copies.
func (p *Profile) State() ProfileState {
	st := ProfileState{Now: p.nowT, Resolution: time.Duration(p.res) * time.Second, Active: slices.Clone(p.active),
		Width: p.width, Caps: slices.Clone(p.caps), Timelines: make([]TimelineState, p.n)}
	for i, tl := range p.tls {
		st.Timelines[i] = TimelineState{Times: slices.Clone(tl.times), Free: slices.Clone(tl.free)}
	}
	st.Entries = make([]EntryState, 0, p.ents.Len())
	p.ents.Ascend(func(e *entry) bool {
		st.Entries = append(st.Entries, EntryState{ID: e.id, Kind: EntryKind(e.kind), Start: e.start, End: e.end,
			Nodes: slices.Clone(e.nodes), Use: slices.Clone(e.use)})
		return true
	})
	return st
}

// ProfileFromState rebuilds the profile st describes (see State),
// checking that it is consistent: dimensions and lengths, timelines in
// order and free within capacity, entries on existing nodes with IDs in
// increasing order. The rebuilt profile plans as the one st was taken
// from.
func ProfileFromState(st ProfileState) (*Profile, error) {
	bad := func(format string, a ...any) (*Profile, error) {
		return nil, fmt.Errorf("%w: profile state: %s", ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	res := st.Resolution
	if res < time.Second || res > time.Hour || res%time.Second != 0 {
		return bad("resolution %v", res)
	}
	if st.Now.IsZero() || st.Now.Unix() >= maxOriginUnix || st.Now.Unix() <= -maxOriginUnix {
		return bad("origin %v", st.Now)
	}
	a, n := len(st.Active), len(st.Timelines)
	for x, id := range st.Active {
		if id < 0 || int(id) >= st.Width || (x > 0 && id <= st.Active[x-1]) {
			return bad("active dimensions %v (width %d)", st.Active, st.Width)
		}
	}
	if len(st.Caps) != n*a {
		return bad("%d capacities for %d nodes × %d dimensions", len(st.Caps), n, a)
	}
	for _, c := range st.Caps {
		if c < 0 || c > gres.MaxCount {
			return bad("capacity %d", c)
		}
	}
	p := &Profile{
		origin: st.Now.Unix(), nowT: st.Now, res: int64(res / time.Second), n: n, a: a,
		active: slices.Clone(st.Active), width: st.Width, caps: slices.Clone(st.Caps), cow: new(cowToken),
		probeA: &changePoint{}, probeB: &changePoint{}, sumProbe: &summary{}, entProbe: &entry{},
	}
	var bps []breakpoint
	p.tls = make([]*timeline, n)
	for i, ts := range st.Timelines {
		if len(ts.Times) == 0 || len(ts.Free) != len(ts.Times)*a || ts.Times[0] > p.origin {
			return bad("node %d: timeline of %d times and %d values", i, len(ts.Times), len(ts.Free))
		}
		for k, t := range ts.Times {
			if k > 0 && (t <= p.origin || t <= ts.Times[k-1]) {
				return bad("node %d: timeline times out of order", i)
			}
			if k > 0 {
				bps = append(bps, breakpoint{t, int32(i)})
			}
		}
		capI := p.caps[i*a : (i+1)*a]
		for k := range ts.Times {
			// Free may dip below zero (a job running past what a
			// node still offers, say a down node's); never above capacity.
			if seg := ts.Free[k*a : (k+1)*a]; !fitsIn(capI, seg) {
				return bad("node %d: free resources beyond capacity", i)
			}
		}
		p.tls[i] = &timeline{owner: p.cow, times: slices.Clone(ts.Times), free: slices.Clone(ts.Free)}
	}
	p.initChangePoints(bps)
	p.ents = btree.NewG(btreeDeg, entLess)
	for k, es := range st.Entries {
		if k > 0 && es.ID <= st.Entries[k-1].ID {
			return bad("entries out of ID order")
		}
		if es.Kind > EntryBlock || es.End <= es.Start || len(es.Nodes) == 0 || len(es.Use) != len(es.Nodes)*a {
			return bad("entry %d: kind %d, [%d, %d), %d nodes, %d values", es.ID, es.Kind, es.Start, es.End, len(es.Nodes), len(es.Use))
		}
		for _, nd := range es.Nodes {
			if nd < 0 || int(nd) >= n {
				return bad("entry %d: node %d out of range", es.ID, nd)
			}
		}
		p.ents.ReplaceOrInsert(&entry{id: es.ID, kind: entryKind(es.Kind), start: es.Start, end: es.End,
			nodes: slices.Clone(es.Nodes), use: slices.Clone(es.Use)})
	}
	return p, nil
}
