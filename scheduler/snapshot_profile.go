package scheduler

import (
	"fmt"
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
//
// Where some node shares devices the kept profile has one dimension more
// than the registry: the device claim (backfill_claims.go), whose ID is
// one past the registry's TRES. The section then writes the width as the
// names' count plus one, the claim's index in the active list as that
// count (one past the last name), and, after the entries, the claim's
// unit (claimUnit, what one whole device claims), so that a reader
// counting whole devices with another unit can tell: it leaves such a
// profile out (the next cycle builds its own), converting nothing. Restore
// maps the claim to its own claim dimension, which the same nodes give
// the same ID, so Explain and IdleCapacity read the restored profile as
// the original. Snapshots of minor version 2 and older never have it.

func (s *Scheduler) snapProfile(e *senc) error {
	has := s.bf != nil && s.bf.last != nil
	e.bool(has)
	if !has {
		return nil
	}
	st := s.bf.last.State()
	e.time(st.Now)
	e.varint(int64(st.Resolution))
	names := s.reg.Len()
	claim := st.Width > names // the device claim, ID names (backfill_claims.go)
	if st.Width > names+1 || (claim && s.bf.lastClaim1 != names+1) {
		return fmt.Errorf("scheduler: snapshot: profile width %d for %d TRES (claim dimension %d)", st.Width, names, s.bf.lastClaim1)
	}
	e.uvarint(uint64(st.Width))
	e.uvarint(uint64(len(st.Active)))
	for _, id := range st.Active {
		e.uvarint(uint64(id)) // the claim: names, one past the last name
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
	if claim {
		e.varint(claimUnit)
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
	// claim: the profile has the device claim dimension, one past the
	// registry's TRES. The restoring scheduler's nodes may share no
	// devices any more (a node event since the profile was planned): the
	// profile is then kept as the original keeps it, unreadable until the
	// next cycle rebuilds it (readableProfile compares lastClaim1).
	claim := width == len(d.ids)+1
	if claim {
		s.refreshClaim()
		st.Width = s.reg.Len() + 1
	} else if d.err == nil && width != len(d.ids) {
		d.fail("profile width %d, the registry section has %d names", width, len(d.ids))
	}
	na := d.count()
	active := make([]gres.ID, na)
	claimCol := -1 // none when no node has claim capacity
	for x := range active {
		if i := d.uvarint(); claim && i == uint64(len(d.ids)) && claimCol < 0 {
			active[x], claimCol = gres.ID(s.reg.Len()), x
		} else {
			active[x] = d.tres(i)
		}
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
	var unit int64
	if claim {
		unit = d.varint()
		if d.err == nil && (unit <= 0 || unit > gres.MaxCount) {
			d.fail("device claim unit %d out of range", unit)
		}
	}
	if d.err != nil {
		return d.err
	}
	if claim && unit != claimUnit {
		// Claims counted with another unit per whole device: the kept
		// profile is left out (as in a snapshot without one) and the next
		// cycle builds its own; Explain and IdleCapacity build theirs on
		// demand until then.
		return nil
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
	if claim {
		s.bf.lastClaim1 = s.reg.Len() + 1
	}
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
