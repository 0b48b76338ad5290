package policy

import (
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
)

// Replace keeps REPLACE and REPLACE_DOWN reservations whole: reserved
// nodes in down (down or drained nodes) — and, for REPLACE, in allocated
// (nodes running jobs) — are swapped for nodes from choose, which never
// sees down, allocated or already reserved nodes offered. It returns the
// names of the reservations that changed. On any error (a chooser that
// cannot find nodes, an overlap) nothing changes.
func (b *Reservations) Replace(down, allocated topology.NodeSet, choose NodeChooser) ([]string, error) {
	staged := slices.Clone(b.rs)
	saved := b.rs
	defer func() { b.rs = saved }()
	// choose and checkOverlap see the replacements made so far.
	b.rs = staged
	var changed []string
	for i, r := range staged {
		var bad topology.NodeSet
		switch {
		case r.Flags.Has(ResvReplace):
			bad = r.Nodes.And(down.Or(allocated))
		case r.Flags.Has(ResvReplaceDown):
			bad = r.Nodes.And(down)
		default:
			continue
		}
		if bad.IsEmpty() {
			continue
		}
		c := *r
		c.replaceCount = bad.Count()
		c.Nodes = r.Nodes.AndNot(bad)
		extra := topology.NewNodeSet(b.n)
		extra.UnionWith(r.Nodes)
		extra.UnionWith(down)
		if r.Flags.Has(ResvReplace) {
			extra.UnionWith(allocated)
		}
		if err := b.choose(&c, &extra, choose); err != nil {
			return nil, err
		}
		if err := b.checkOverlap(&c); err != nil {
			return nil, err
		}
		c.replaceCount = 0
		staged[i] = &c
		changed = append(changed, r.Name)
	}
	saved = staged
	return changed, nil
}

// ResvJob identifies a job for reservation checks.
type ResvJob struct {
	// User and Account are matched against the reservations' lists.
	User, Account string
	// Reservation is the reservation the job names ("" for none).
	Reservation string
}

// CheckAccess is the submission check: a job naming a reservation that
// does not exist fails with ErrUnknownReservation, one naming a
// reservation it may not use with ErrNotAllowed; both name the user,
// account and reservation.
func (b *Reservations) CheckAccess(j ResvJob) error {
	if j.Reservation == "" {
		return nil
	}
	i, ok := b.find(j.Reservation)
	if !ok {
		return fmt.Errorf("policy: job of user %q: %w %q", j.User, ErrUnknownReservation, j.Reservation)
	}
	if !b.rs[i].allows(j.User, j.Account) {
		return fmt.Errorf("policy: %w: user %q with account %q may not use reservation %q", ErrNotAllowed, j.User, j.Account, j.Reservation)
	}
	return nil
}

// Usable returns the reservations job j may run in, sorted by name: the
// one it names (if it may use it), else every MAGNETIC reservation that
// admits it. The scheduler tries these before the job's plain placement.
func (b *Reservations) Usable(j ResvJob) []string {
	if j.Reservation != "" {
		if i, ok := b.find(j.Reservation); ok && b.rs[i].allows(j.User, j.Account) {
			return []string{j.Reservation}
		}
		return nil
	}
	var out []string
	for _, r := range b.rs {
		if r.Flags.Has(ResvMagnetic) && r.allows(j.User, j.Account) {
			out = append(out, r.Name)
		}
	}
	return out
}

// active reports whether r has a window intersecting [a, e).
func (r *resvC) active(a, e time.Time) bool {
	hit := false
	_ = r.windows(a, e, func(Window) bool { hit = true; return false })
	return hit
}

// Constrain says how reservations constrain job j if it ran during
// [t, t+wall). It resets forbidden (whose Len must be at least the
// cluster's node count) and fills it with the nodes j may not use, and
// returns the deadline of the reservation window j runs in (it must end by
// then; zero when none) and a Blocker when j cannot run at t at all.
//
//   - A job naming no reservation may not use nodes of any reservation
//     with a window in [t, t+wall) (try the MAGNETIC ones from Usable by
//     setting Reservation).
//   - A job in reservation R (not FLEX) runs only on R's nodes, inside one
//     window of R: before the window it waits (ReasonReservation), and
//     nodes of MAINT reservations active then are forbidden too.
//   - A job in a FLEX reservation may also use unreserved nodes and run
//     outside R's windows; other reservations' nodes stay forbidden.
//   - A job naming a deleted reservation pends with
//     ReasonReservationDeleted, one it may not use with
//     ReasonReservationInvalid; every node is forbidden.
func (b *Reservations) Constrain(j ResvJob, t time.Time, wall time.Duration, forbidden topology.NodeSet) (deadline time.Time, blk Blocker) {
	forbidden.Reset()
	if wall <= 0 {
		wall = time.Nanosecond
	}
	end := t.Add(wall)
	var own *resvC
	if j.Reservation != "" {
		i, ok := b.find(j.Reservation)
		if !ok {
			forbidden.Fill()
			return time.Time{}, resvBlocker(ReasonReservationDeleted, j.Reservation, "the reservation does not exist")
		}
		own = b.rs[i]
		if !own.allows(j.User, j.Account) {
			forbidden.Fill()
			return time.Time{}, resvBlocker(ReasonReservationInvalid, own.Name,
				fmt.Sprintf("user %q with account %q may not use it", j.User, j.Account))
		}
	}
	if own != nil && !own.Flags.Has(ResvFlex) {
		var w Window
		found := false
		_ = own.windows(t, t.Add(time.Nanosecond), func(x Window) bool { w, found = x, true; return false })
		if !found || w.Start.After(t) {
			forbidden.Fill()
			return time.Time{}, resvBlocker(ReasonReservation, own.Name, "waiting for the reservation's window to open")
		}
		if end.After(w.End) {
			forbidden.Fill()
			return time.Time{}, resvBlocker(ReasonReservation, own.Name,
				fmt.Sprintf("time limit %v runs past the window's end %v", wall, w.End))
		}
		forbidden.Fill()
		forbidden.Subtract(own.Nodes)
		for _, o := range b.rs {
			if o != own && o.Flags.Has(ResvMaint) && o.active(t, end) {
				forbidden.UnionWith(o.Nodes)
			}
		}
		return w.End, Blocker{}
	}
	for _, o := range b.rs {
		if o != own && o.active(t, end) {
			forbidden.UnionWith(o.Nodes)
		}
	}
	return time.Time{}, Blocker{}
}

func resvBlocker(r Reason, name, detail string) Blocker {
	return Blocker{Constraint: Constraint{Reason: r, Limit: "Reservation", Level: LevelReservation, Entity: name}, Detail: detail}
}

// maxStartSteps bounds EarliestStart's search.
const maxStartSteps = 4096

// EarliestStart returns the earliest time ≥ t at which job j could run
// for wall on nodes without breaking a reservation (node availability is
// the caller's business), and false when it never can (its reservation is
// gone or over, the nodes are not all in it, or wall is longer than its
// window). Backfill calls it to move a job past the reservations that
// block its chosen nodes.
func (b *Reservations) EarliestStart(j ResvJob, t time.Time, wall time.Duration, nodes topology.NodeSet) (time.Time, bool) {
	if wall <= 0 {
		wall = time.Nanosecond
	}
	var own *resvC
	if j.Reservation != "" {
		i, ok := b.find(j.Reservation)
		if !ok || !b.rs[i].allows(j.User, j.Account) {
			return time.Time{}, false
		}
		own = b.rs[i]
	}
	blocking := func(o *resvC) bool {
		if o == own || !o.Nodes.Intersects(nodes) {
			return false
		}
		return own == nil || own.Flags.Has(ResvFlex) || o.Flags.Has(ResvMaint)
	}
	// pastConflicts returns the latest end of a blocking window in
	// [s, s+wall), or s when none.
	pastConflicts := func(s time.Time) (time.Time, error) {
		latest := s
		for _, o := range b.rs {
			if !blocking(o) {
				continue
			}
			if err := o.windows(s, s.Add(wall), func(w Window) bool {
				if w.End.After(latest) {
					latest = w.End
				}
				return true
			}); err != nil {
				return s, err
			}
		}
		return latest, nil
	}
	if own != nil && !own.Flags.Has(ResvFlex) {
		if !nodes.SubsetOf(own.Nodes) || wall > own.dur {
			return time.Time{}, false
		}
	}
	cur := t
	for range maxStartSteps {
		if own != nil && !own.Flags.Has(ResvFlex) {
			// Move into the first window of own that can hold the job.
			var fit time.Time
			found := false
			err := own.windows(cur, cur.Add(MaxLimitDuration), func(w Window) bool {
				s := w.Start
				if cur.After(s) {
					s = cur
				}
				if !s.Add(wall).After(w.End) {
					fit, found = s, true
					return false
				}
				return true
			})
			if err != nil || !found {
				return time.Time{}, false
			}
			cur = fit
		}
		next, err := pastConflicts(cur)
		if err != nil {
			return time.Time{}, false
		}
		if next.Equal(cur) {
			return cur, true
		}
		cur = next
	}
	return time.Time{}, false
}

// ResvUsage is one reservation's capacity account over a period.
type ResvUsage struct {
	// Name is the reservation; Maint marks maintenance (planned down).
	Name  string
	Maint bool
	// Reserved is the TRES-seconds the reservation held in the period:
	// window overlap × the capacity of its nodes (node-seconds in the node
	// entry).
	Reserved gres.Vector
	// Used is what its jobs used (the caller's figure).
	Used gres.Vector
	// Idle is Reserved − Used, floored at zero: capacity stranded because
	// the expected jobs did not use it.
	Idle gres.Vector
}

// IdleCapacity accounts each reservation over [from, to): what it
// reserved (its windows × the capacity of its nodes, capacity[node] being
// the node's TRES; the node entry is taken as 1 when zero), what its jobs
// used (used[name], TRES-seconds the scheduler measured), and the idle
// difference — the stranded capacity issue 7 asks to report as its own
// figure. IGNORE_JOBS reservations are left out (Slurm does not track
// them); MAINT ones are marked. Rows are sorted by name.
func (b *Reservations) IdleCapacity(from, to time.Time, capacity []gres.Vector, used map[string]gres.Vector) ([]ResvUsage, error) {
	if len(capacity) < b.n {
		return nil, fmt.Errorf("policy: %w: capacity for %d nodes, cluster has %d", ErrInvalidRequest, len(capacity), b.n)
	}
	ntres := int(gres.Node) + 1
	for _, c := range capacity {
		ntres = max(ntres, len(c))
	}
	for _, u := range used {
		ntres = max(ntres, len(u))
	}
	var out []ResvUsage
	for _, r := range b.rs {
		if r.Flags.Has(ResvIgnoreJobs) {
			continue
		}
		var secs int64
		err := r.windows(from, to, func(w Window) bool {
			s, e := w.Start, w.End
			if s.Before(from) {
				s = from
			}
			if e.After(to) {
				e = to
			}
			secs = satAdd(secs, int64(e.Sub(s)/time.Second))
			return true
		})
		if err != nil {
			return nil, err
		}
		per := make(gres.Vector, ntres)
		for n := range r.Nodes.All() {
			for i, x := range capacity[n] {
				per[i] = satAdd(per[i], x)
			}
			if capacity[n].At(gres.Node) == 0 {
				per[gres.Node]++
			}
		}
		row := ResvUsage{Name: r.Name, Maint: r.Flags.Has(ResvMaint), Reserved: make(gres.Vector, ntres),
			Used: make(gres.Vector, ntres), Idle: make(gres.Vector, ntres)}
		copy(row.Used, used[r.Name])
		for i := range per {
			row.Reserved[i] = satMul(per[i], secs)
			row.Idle[i] = max(row.Reserved[i]-row.Used[i], 0)
		}
		out = append(out, row)
	}
	return out, nil
}
