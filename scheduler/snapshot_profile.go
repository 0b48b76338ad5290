package scheduler

import (
	"slices"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
)

// The profile section holds the backfill profile kept from the last
// cycle (bfState.last): what Explain and IdleCapacity read between cycles
// (the last plan's bookings, as of its time). Restore rebuilds it with
// backfill.ProfileFromState and marks it stale, so the next cycle builds
// its own afresh.

func (s *Scheduler) snapProfile(e *senc) error {
	has := s.bf != nil && s.bf.last != nil
	e.bool(has)
	if !has {
		return nil
	}
	st := s.bf.last.State()
	e.time(st.Now)
	e.varint(int64(st.Resolution))
	e.uvarint(uint64(st.Width))
	e.uvarint(uint64(len(st.Active)))
	for _, id := range st.Active {
		e.uvarint(uint64(id))
	}
	i64s := func(xs []int64) {
		e.uvarint(uint64(len(xs)))
		for _, x := range xs {
			e.varint(x)
		}
	}
	i64s(st.Caps)
	e.uvarint(uint64(len(st.Timelines)))
	for _, tl := range st.Timelines {
		i64s(tl.Times)
		i64s(tl.Free)
	}
	e.uvarint(uint64(len(st.Entries)))
	for _, en := range st.Entries {
		e.uvarint(uint64(en.ID))
		e.byte(byte(en.Kind))
		e.varint(en.Start)
		e.varint(en.End)
		e.uvarint(uint64(len(en.Nodes)))
		for _, n := range en.Nodes {
			e.varint(int64(n))
		}
		i64s(en.Use)
	}
	return nil
}

func (s *Scheduler) loadProfile(d *sdec) error {
	if !d.bool() || d.err != nil {
		return d.err
	}
	if s.bf == nil {
		d.fail("a backfill profile without backfill")
		return d.err
	}
	var st backfill.ProfileState
	st.Now = d.time()
	st.Resolution = time.Duration(d.varint())
	width := d.count()
	st.Width = s.reg.Len()
	if d.err == nil && width != len(d.ids) {
		d.fail("profile width %d, the registry section has %d names", width, len(d.ids))
	}
	na := d.count()
	active := make([]gres.ID, na)
	for x := range active {
		active[x] = d.tres(d.uvarint())
	}
	i64s := func() []int64 {
		n := d.count()
		if d.err != nil {
			return nil
		}
		out := make([]int64, n)
		for k := range out {
			out[k] = d.varint()
		}
		return out
	}
	st.Caps = i64s()
	nt := d.count()
	st.Timelines = make([]backfill.TimelineState, nt)
	for i := range st.Timelines {
		st.Timelines[i] = backfill.TimelineState{Times: i64s(), Free: i64s()}
	}
	ne := d.count()
	st.Entries = make([]backfill.EntryState, 0, ne)
	for range ne {
		en := backfill.EntryState{ID: backfill.JobID(d.uvarint()), Kind: backfill.EntryKind(d.byte()), Start: d.varint(), End: d.varint()}
		nn := d.count()
		en.Nodes = make([]int32, nn)
		for k := range en.Nodes {
			en.Nodes[k] = int32(d.intIn(0, int64(len(s.nodes)-1), "profile node"))
		}
		en.Use = i64s()
		st.Entries = append(st.Entries, en)
	}
	if d.err != nil {
		return d.err
	}
	// A profile kept from before nodes were added is shorter (the next
	// cycle rebuilds it); never longer.
	if len(st.Timelines) > len(s.nodes) {
		d.fail("profile of %d nodes, the cluster has %d", len(st.Timelines), len(s.nodes))
		return d.err
	}
	sortDims(&st, active)
	p, err := backfill.ProfileFromState(st)
	if err != nil {
		d.fail("%v", err)
		return d.err
	}
	s.bf.last = p
	return nil
}

// sortDims sets st.Active to active (the profile's TRES in the restoring
// registry's IDs) put in increasing order, permuting every per-dimension
// column of st alike (a registry that orders the names differently).
func sortDims(st *backfill.ProfileState, active []gres.ID) {
	a := len(active)
	perm := make([]int, a) // new column x takes old column perm[x]
	for x := range perm {
		perm[x] = x
	}
	slices.SortFunc(perm, func(x, y int) int { return int(active[x]) - int(active[y]) })
	st.Active = make([]gres.ID, a)
	for x, o := range perm {
		st.Active[x] = active[o]
	}
	if slices.IsSorted(perm) {
		return
	}
	reorder := func(v []int64) {
		if a == 0 || len(v)%a != 0 {
			return // ProfileFromState reports the bad length
		}
		row := make([]int64, a)
		for r := 0; r < len(v); r += a {
			for x, o := range perm {
				row[x] = v[r+o]
			}
			copy(v[r:r+a], row)
		}
	}
	reorder(st.Caps)
	for i := range st.Timelines {
		reorder(st.Timelines[i].Free)
	}
	for i := range st.Entries {
		reorder(st.Entries[i].Use)
	}
}
