package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
)

// ResvFlags are a reservation's flags (scontrol's Flags=).
type ResvFlags uint32

// Reservation flags, with Slurm's spelling.
const (
	// ResvMaint marks a maintenance reservation: it may overlap others,
	// and its idle capacity is reported as planned down time.
	ResvMaint ResvFlags = 1 << iota
	// ResvIgnoreJobs: the reservation may take nodes where jobs still run
	// when its window opens, named in Nodes or picked by the node chooser
	// (without it a scheduler refuses such named nodes, ErrNodesBusy, and
	// never picks them); not counted in idle-capacity reports.
	ResvIgnoreJobs
	// ResvFlex: jobs of the reservation may start before it, end after it
	// and use nodes outside it as well as inside.
	ResvFlex
	// ResvMagnetic: eligible jobs use the reservation without naming it.
	ResvMagnetic
	// ResvReplace: reserved nodes that go down, drain or are allocated are
	// replaced by idle ones (Reservations.Replace).
	ResvReplace
	// ResvReplaceDown: reserved nodes that go down or drain are replaced.
	ResvReplaceDown
	// ResvOverlap: the reservation may share nodes and time with others.
	ResvOverlap
	// ResvDaily repeats the window every day.
	ResvDaily
	// ResvWeekly repeats the window every week.
	ResvWeekly
	// ResvWeekday repeats the window on Monday to Friday.
	ResvWeekday
	// ResvWeekend repeats the window on Saturday and Sunday.
	ResvWeekend
	// ResvHourly repeats the window every hour.
	ResvHourly
	numResvFlags = iota
)

var resvFlagNames = [numResvFlags]string{"MAINT", "IGNORE_JOBS", "FLEX", "MAGNETIC", "REPLACE", "REPLACE_DOWN",
	"OVERLAP", "DAILY", "WEEKLY", "WEEKDAY", "WEEKEND", "HOURLY"}

const resvRecurring = ResvDaily | ResvWeekly | ResvWeekday | ResvWeekend | ResvHourly

// Has reports whether every flag of g is set in f.
func (f ResvFlags) Has(g ResvFlags) bool { return f&g == g }

// String returns the flags comma-separated in Slurm's spelling.
func (f ResvFlags) String() string { return flagsString(f, resvFlagNames[:]) }

// ParseResvFlags parses a comma-separated flag list ("MAINT,IGNORE_JOBS",
// case-insensitive). Unknown flags wrap ErrSyntax.
func ParseResvFlags(s string) (ResvFlags, error) {
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	f, bad, ok := parseFlags[ResvFlags](s, resvFlagNames[:])
	if !ok {
		return 0, fmt.Errorf("%w: reservation flags %q: unknown flag %q", ErrSyntax, s, bad)
	}
	return f, nil
}

// Reservation is an advance reservation: nodes set aside for some users or
// accounts during a window (which may recur). Nodes are reserved whole.
type Reservation struct {
	// Name identifies the reservation (required).
	Name string
	// Start is when the (first) window opens.
	Start time.Time
	// End is when it closes; zero means Start + Duration.
	End time.Time
	// Duration is the window length when End is zero.
	Duration time.Duration
	// Nodes are the reserved nodes (indices of the scheduler's node list).
	// When empty, the NodeChooser given to Reservations.Add picks them:
	// NodeCount nodes, or, with NodeCount zero, enough nodes to hold TRES.
	Nodes topology.NodeSet
	// NodeCount is how many nodes to choose when Nodes is empty.
	NodeCount int
	// TRES is passed to the chooser: with NodeCount, what each chosen node
	// must offer (e.g. gres/gpu=8); without, the total the chosen nodes
	// must hold (a reservation "by TRES count", e.g. gres/gpu=64).
	TRES gres.Vector
	// Users and Accounts say who may use the reservation. Each non-empty
	// list must admit the job: it names the job's user (account), or, for
	// a list of "-name" entries, does not name it. At least one list is
	// required.
	Users, Accounts []string
	// Flags are the reservation's flags (at most one recurrence flag).
	Flags ResvFlags
}

// Window is one occurrence of a reservation: [Start, End).
type Window struct {
	Start, End time.Time
}

// NodeChooser picks nodes for a reservation: count nodes (each offering
// r.TRES), or, when count is 0, as many nodes as hold r.TRES in total —
// none of them in exclude (nodes other reservations hold during r's
// windows). It returns an error (wrapped into ErrNoNodes) when it cannot.
// The scheduler supplies it: it knows node capacities and states, running
// jobs (ResvIgnoreJobs lets it pick busy nodes) and topology.
type NodeChooser func(r *Reservation, count int, exclude topology.NodeSet) (topology.NodeSet, error)

type resvC struct {
	Reservation
	dur             time.Duration
	recur           ResvFlags
	userOK, userNot map[string]bool
	acctOK, acctNot map[string]bool
	replaceCount    int // nodes to add during Replace
}

// MaxResvWindows bounds how many windows one query may expand.
const MaxResvWindows = 1 << 16

// Reservations is the set of advance reservations over a cluster of a
// fixed node count. Every mutation validates first and leaves the set
// unchanged on error. Not safe for concurrent mutation.
type Reservations struct {
	n  int
	rs []*resvC // sorted by name
}

// NewReservations returns an empty set for a cluster of numNodes nodes.
func NewReservations(numNodes int) *Reservations { return &Reservations{n: max(numNodes, 0)} }

// Len returns the number of reservations.
func (b *Reservations) Len() int { return len(b.rs) }

func (b *Reservations) find(name string) (int, bool) {
	return slices.BinarySearchFunc(b.rs, name, func(r *resvC, n string) int { return strings.Compare(r.Name, n) })
}

// Get returns a copy of the named reservation with its nodes filled in
// (NodeCount cleared, End set), fit to pass back to Update.
func (b *Reservations) Get(name string) (Reservation, bool) {
	i, ok := b.find(name)
	if !ok {
		return Reservation{}, false
	}
	return b.rs[i].export(), true
}

// All returns copies of every reservation, sorted by name.
func (b *Reservations) All() []Reservation {
	out := make([]Reservation, len(b.rs))
	for i, r := range b.rs {
		out[i] = r.export()
	}
	return out
}

func (r *resvC) export() Reservation {
	x := r.Reservation
	x.Nodes = r.Nodes.Clone()
	x.End = r.Start.Add(r.dur)
	x.Duration = 0
	x.NodeCount = 0
	x.Users, x.Accounts = slices.Clone(r.Users), slices.Clone(r.Accounts)
	x.TRES = slices.Clone(r.TRES)
	return x
}

// compile validates r (not its overlap with others).
func (b *Reservations) compile(r Reservation) (*resvC, error) {
	f := func(format string, a ...any) error {
		return fmt.Errorf("%w: reservation %q: %s", ErrInvalidConfig, r.Name, fmt.Sprintf(format, a...))
	}
	if err := validName(r.Name); err != nil {
		return nil, fmt.Errorf("%w: reservation: %w", ErrInvalidConfig, err)
	}
	if r.Start.IsZero() {
		return nil, f("Start is required")
	}
	c := &resvC{Reservation: r}
	switch {
	case !r.End.IsZero():
		c.dur = r.End.Sub(r.Start)
	default:
		c.dur = r.Duration
	}
	if c.dur <= 0 || c.dur > MaxLimitDuration {
		return nil, f("window length %v must be in (0, %v] (set End after Start, or Duration)", c.dur, MaxLimitDuration)
	}
	if r.Flags&^(1<<numResvFlags-1) != 0 {
		return nil, f("unknown Flags bits %s", r.Flags)
	}
	c.recur = r.Flags & resvRecurring
	if c.recur&(c.recur-1) != 0 {
		return nil, f("more than one recurrence flag (%s)", c.recur)
	}
	if p := recurPeriod(c.recur); p > 0 && c.dur > p {
		return nil, f("window %v longer than its %s period %v", c.dur, c.recur, p)
	}
	hasNodes := r.Nodes.Len() > 0 && !r.Nodes.IsEmpty()
	switch {
	case hasNodes && r.NodeCount > 0:
		return nil, f("give Nodes or NodeCount, not both")
	case hasNodes && r.Nodes.Len() > b.n:
		return nil, f("Nodes span %d indices, the cluster has %d nodes", r.Nodes.Len(), b.n)
	case !hasNodes && (r.NodeCount < 0 || r.NodeCount > b.n):
		return nil, f("NodeCount %d out of range [1, %d] (or give Nodes)", r.NodeCount, b.n)
	case !hasNodes && r.NodeCount == 0 && r.TRES.IsZero():
		return nil, f("give Nodes, NodeCount or TRES")
	}
	if hasNodes {
		c.Nodes = topology.NewNodeSet(b.n)
		c.Nodes.CopyFrom(r.Nodes)
	}
	for _, x := range r.TRES {
		if x < 0 || x > gres.MaxCount {
			return nil, f("TRES count %d out of range", x)
		}
	}
	if len(r.Users) == 0 && len(r.Accounts) == 0 {
		return nil, f("Users or Accounts is required")
	}
	var err error
	if c.userOK, c.userNot, err = aclSets(r.Users); err != nil {
		return nil, f("Users: %v", err)
	}
	if c.acctOK, c.acctNot, err = aclSets(r.Accounts); err != nil {
		return nil, f("Accounts: %v", err)
	}
	c.Users, c.Accounts, c.TRES = slices.Clone(r.Users), slices.Clone(r.Accounts), slices.Clone(r.TRES)
	c.End, c.Duration = time.Time{}, c.dur
	return c, nil
}

func aclSets(list []string) (ok, not map[string]bool, err error) {
	for _, e := range list {
		name, neg := strings.CutPrefix(e, "-")
		if err := validName(name); err != nil {
			return nil, nil, err
		}
		if neg {
			if ok != nil {
				return nil, nil, fmt.Errorf("%q: a list is either all names or all -names", e)
			}
			if not == nil {
				not = make(map[string]bool)
			}
			not[name] = true
		} else {
			if not != nil {
				return nil, nil, fmt.Errorf("%q: a list is either all names or all -names", e)
			}
			if ok == nil {
				ok = make(map[string]bool)
			}
			ok[name] = true
		}
	}
	return ok, not, nil
}

func recurPeriod(f ResvFlags) time.Duration {
	switch f {
	case ResvHourly:
		return time.Hour
	case ResvDaily, ResvWeekday, ResvWeekend:
		return 24 * time.Hour
	case ResvWeekly:
		return 7 * 24 * time.Hour
	}
	return 0
}

// allows reports whether a job of user/account may use r.
func (r *resvC) allows(user, account string) bool {
	if r.userNot[user] || r.acctNot[account] {
		return false
	}
	if r.userOK != nil && !r.userOK[user] {
		return false
	}
	if r.acctOK != nil && !r.acctOK[account] {
		return false
	}
	return true
}

// Allows reports whether a job of user charging account may use the
// reservation (false when the lists are malformed).
func (r *Reservation) Allows(user, account string) bool {
	c := &resvC{}
	var err error
	if c.userOK, c.userNot, err = aclSets(r.Users); err != nil {
		return false
	}
	if c.acctOK, c.acctNot, err = aclSets(r.Accounts); err != nil {
		return false
	}
	return c.allows(user, account)
}

// start returns the start of occurrence k (k ≥ 0) and whether that
// occurrence exists (WEEKDAY/WEEKEND skip days).
func (r *resvC) start(k int) (time.Time, bool) {
	switch r.recur {
	case ResvHourly:
		return r.Start.Add(time.Duration(k) * time.Hour), true
	case ResvDaily:
		return r.Start.AddDate(0, 0, k), true
	case ResvWeekly:
		return r.Start.AddDate(0, 0, 7*k), true
	case ResvWeekday, ResvWeekend:
		s := r.Start.AddDate(0, 0, k)
		wd := s.Weekday()
		weekend := wd == time.Saturday || wd == time.Sunday
		return s, weekend == (r.recur == ResvWeekend)
	}
	return r.Start, k == 0
}

// windows calls f on every window intersecting [a, b), in order, until f
// returns false. Non-recurring reservations have one window; recurring ones
// repeat without end. It fails past MaxResvWindows windows.
func (r *resvC) windows(a, b time.Time, f func(Window) bool) error {
	if r.recur == 0 {
		w := Window{r.Start, r.Start.Add(r.dur)}
		if w.End.After(a) && w.Start.Before(b) {
			f(w)
		}
		return nil
	}
	period := recurPeriod(r.recur)
	k := 0
	if lead := a.Sub(r.Start) - r.dur; lead > 0 {
		k = max(int(lead/period)-1, 0) // -1: slack for DST shifts
	}
	for n := 0; ; k++ {
		s, ok := r.start(k)
		if !s.Before(b) {
			return nil
		}
		if n++; n > MaxResvWindows {
			return fmt.Errorf("%w: reservation %q: more than %d windows in [%v, %v)", ErrTooLarge, r.Name, MaxResvWindows, a, b)
		}
		if !ok {
			continue
		}
		w := Window{s, s.Add(r.dur)}
		if w.End.After(a) && !f(w) {
			return nil
		}
	}
}

// Windows returns the reservation's windows intersecting [from, to),
// appended to dst: one for a plain reservation, every occurrence for a
// recurring one (day-based recurrences keep the wall-clock time of Start
// in Start's location). It fails with ErrTooLarge past MaxResvWindows.
func (b *Reservations) Windows(name string, from, to time.Time, dst []Window) ([]Window, error) {
	i, ok := b.find(name)
	if !ok {
		return dst, fmt.Errorf("policy: %w %q", ErrUnknownReservation, name)
	}
	err := b.rs[i].windows(from, to, func(w Window) bool { dst = append(dst, w); return true })
	return dst, err
}

// NextWindow validates r as Add does (its own fields, not its overlap
// with other reservations) and returns its first window that ends after t
// — the one a reservation made at t opens first — and true, or false when
// every window ended by t. Errors wrap ErrInvalidConfig, as Add's.
func (b *Reservations) NextWindow(r Reservation, t time.Time) (Window, bool, error) {
	c, err := b.compile(r)
	if err != nil {
		return Window{}, false, err
	}
	var w Window
	found := false
	// Every recurrence has a window within eight days.
	err = c.windows(t, t.Add(8*24*time.Hour+c.dur), func(x Window) bool { w, found = x, true; return false })
	return w, found, err
}

// firstOverlap returns the first time window of r and o overlap (and
// true), looking far enough ahead to cover every recurrence pattern.
func firstOverlap(r, o *resvC) (Window, Window, bool, error) {
	from := r.Start
	if o.Start.Before(from) {
		from = o.Start
	}
	to := r.Start.Add(r.dur)
	if e := o.Start.Add(o.dur); e.After(to) {
		to = e
	}
	if r.recur != 0 || o.recur != 0 {
		late := r.Start
		if o.Start.After(late) {
			late = o.Start
		}
		horizon := late.Add(8*24*time.Hour + max(r.dur, o.dur))
		if r.recur == 0 {
			from, to = r.Start, r.Start.Add(r.dur)
		} else if o.recur == 0 {
			from, to = o.Start, o.Start.Add(o.dur)
		} else {
			from, to = late.Add(-max(r.dur, o.dur)), horizon
		}
	}
	var wr, wo Window
	found := false
	var inner error
	err := r.windows(from, to, func(x Window) bool {
		inner = o.windows(x.Start, x.End, func(y Window) bool {
			wr, wo, found = x, y, true
			return false
		})
		return !found && inner == nil
	})
	if err == nil {
		err = inner
	}
	return wr, wo, found, err
}

func overlapAllowed(r, o *resvC) bool {
	const ok = ResvOverlap | ResvMaint
	return r.Flags&ok != 0 || o.Flags&ok != 0
}

// Add validates r and adds it. A reservation by NodeCount gets its nodes
// from choose, excluding nodes other reservations hold at overlapping
// times (unless r has OVERLAP or MAINT). Errors, all leaving the set
// unchanged: ErrInvalidConfig (naming the field), a duplicate name,
// ErrNoNodes from the chooser, and ErrReservationOverlap naming both
// reservations and the shared window when r shares nodes and time with
// another and neither has OVERLAP or MAINT.
func (b *Reservations) Add(r Reservation, choose NodeChooser) error {
	c, err := b.compile(r)
	if err != nil {
		return err
	}
	if _, dup := b.find(c.Name); dup {
		return fmt.Errorf("%w: reservation %q already exists", ErrInvalidConfig, c.Name)
	}
	if c.Nodes.Len() == 0 {
		if err := b.choose(c, nil, choose); err != nil {
			return err
		}
	}
	if err := b.checkOverlap(c); err != nil {
		return err
	}
	i, _ := b.find(c.Name)
	b.rs = slices.Insert(b.rs, i, c)
	return nil
}

// choose fills c.Nodes with c.NodeCount nodes from the chooser, avoiding
// nodes of reservations overlapping c in time (and extra).
func (b *Reservations) choose(c *resvC, extra *topology.NodeSet, choose NodeChooser) error {
	if choose == nil {
		return fmt.Errorf("%w: reservation %q: choosing nodes (NodeCount %d, TRES) needs a NodeChooser", ErrInvalidConfig, c.Name, c.NodeCount)
	}
	exclude := topology.NewNodeSet(b.n)
	if extra != nil {
		exclude.UnionWith(*extra)
	}
	if !overlapAllowed(c, c) {
		for _, o := range b.rs {
			if o.Name == c.Name || overlapAllowed(c, o) {
				continue
			}
			if _, _, hit, err := firstOverlap(c, o); err != nil {
				return err
			} else if hit {
				exclude.UnionWith(o.Nodes)
			}
		}
	}
	count := c.NodeCount
	if extra != nil {
		count = c.replaceCount
	}
	rv := c.Reservation
	got, err := choose(&rv, count, exclude)
	if err != nil {
		return fmt.Errorf("policy: reservation %q: %w: %w", c.Name, ErrNoNodes, err)
	}
	if (count > 0 && got.Count() != count) || got.IsEmpty() || got.Intersects(exclude) || got.Len() > b.n {
		return fmt.Errorf("policy: reservation %q: %w: chooser returned %d nodes (want %d, none of the %d excluded)", c.Name, ErrNoNodes, got.Count(), count, exclude.Count())
	}
	nodes := topology.NewNodeSet(b.n)
	nodes.CopyFrom(got)
	if extra != nil {
		nodes.UnionWith(c.Nodes)
	}
	c.Nodes = nodes
	return nil
}

// checkOverlap returns ErrReservationOverlap when c shares nodes and time
// with another reservation (its own older version, same name, is skipped)
// and neither allows overlap.
func (b *Reservations) checkOverlap(c *resvC) error {
	for _, o := range b.rs {
		if o.Name == c.Name || overlapAllowed(c, o) || !c.Nodes.Intersects(o.Nodes) {
			continue
		}
		wc, wo, hit, err := firstOverlap(c, o)
		if err != nil {
			return err
		}
		if hit {
			shared := c.Nodes.And(o.Nodes)
			return fmt.Errorf("%w: reservation %q (%v–%v) and reservation %q (%v–%v) share nodes %s; set OVERLAP or MAINT on one",
				ErrReservationOverlap, c.Name, wc.Start, wc.End, o.Name, wo.Start, wo.End, shared)
		}
	}
	return nil
}

// Update replaces the named reservation with r (same name), validated and
// checked for overlap as Add does; NodeCount reservations keep their
// nodes when r.Nodes is empty and the count is unchanged.
func (b *Reservations) Update(r Reservation, choose NodeChooser) error {
	i, ok := b.find(r.Name)
	if !ok {
		return fmt.Errorf("policy: %w %q", ErrUnknownReservation, r.Name)
	}
	old := b.rs[i]
	keep := r.Nodes.Len() == 0 && r.NodeCount == old.NodeCount && r.TRES.Equal(old.TRES) && (old.NodeCount > 0 || !old.TRES.IsZero())
	if keep {
		r.Nodes = old.Nodes
		r.NodeCount = 0
	}
	c, err := b.compile(r)
	if err != nil {
		return err
	}
	if keep {
		c.NodeCount = old.NodeCount
	}
	if c.Nodes.Len() == 0 {
		// choose skips the reservation being replaced (same name).
		if err := b.choose(c, nil, choose); err != nil {
			return err
		}
	}
	if err := b.checkOverlap(c); err != nil {
		return err
	}
	b.rs[i] = c
	return nil
}

// Remove deletes the named reservation. Jobs that named it should pend
// with ReasonReservationDeleted.
func (b *Reservations) Remove(name string) error {
	i, ok := b.find(name)
	if !ok {
		return fmt.Errorf("policy: %w %q", ErrUnknownReservation, name)
	}
	b.rs = slices.Delete(b.rs, i, i+1)
	return nil
}
