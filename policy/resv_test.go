package policy_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

const nNodes = 16

func ns(idx ...int) topology.NodeSet { return topology.NodeSetOf(nNodes, idx...) }

// firstFree is a NodeChooser that takes the lowest-numbered nodes not
// excluded, recording what it was asked.
type firstFree struct {
	calls []policy.ResvFlags
	fail  bool
}

func (f *firstFree) choose(r *policy.Reservation, count int, exclude topology.NodeSet) (topology.NodeSet, error) {
	f.calls = append(f.calls, r.Flags)
	if f.fail {
		return topology.NodeSet{}, errors.New("no idle nodes")
	}
	out := topology.NewNodeSet(nNodes)
	for i := 0; i < nNodes && out.Count() < count; i++ {
		if !exclude.Has(i) {
			out.Add(i)
		}
	}
	if out.Count() < count {
		return out, errors.New("too few")
	}
	return out, nil
}

func resv(name string, start time.Time, d time.Duration, nodes topology.NodeSet, flags policy.ResvFlags) policy.Reservation {
	return policy.Reservation{Name: name, Start: start, Duration: d, Nodes: nodes, Users: []string{"alice"}, Flags: flags}
}

func TestReservationValidation(t *testing.T) {
	ff := &firstFree{}
	b := policy.NewReservations(nNodes)
	require.NoError(t, b.Add(resv("a", t0, time.Hour, ns(0, 1), 0), nil))
	cases := []struct {
		name string
		r    policy.Reservation
		is   error
		says string
	}{
		{"overlap", resv("b", t0.Add(30*time.Minute), time.Hour, ns(1, 2), 0), policy.ErrReservationOverlap, `"b"`},
		{"no start", policy.Reservation{Name: "c", Duration: time.Hour, Nodes: ns(5), Users: []string{"x"}}, policy.ErrInvalidConfig, "Start"},
		{"end before start", policy.Reservation{Name: "c", Start: t0, End: t0.Add(-time.Hour), Nodes: ns(5), Users: []string{"x"}}, policy.ErrInvalidConfig, "window"},
		{"no acl", policy.Reservation{Name: "c", Start: t0, Duration: time.Hour, Nodes: ns(5)}, policy.ErrInvalidConfig, "Users or Accounts"},
		{"mixed acl", policy.Reservation{Name: "c", Start: t0, Duration: time.Hour, Nodes: ns(5), Users: []string{"x", "-y"}}, policy.ErrInvalidConfig, "Users"},
		{"two recurrences", resv("c", t0, time.Hour, ns(5), policy.ResvDaily|policy.ResvWeekly), policy.ErrInvalidConfig, "recurrence"},
		{"longer than period", resv("c", t0, 2*time.Hour, ns(5), policy.ResvHourly), policy.ErrInvalidConfig, "period"},
		{"nodes and count", policy.Reservation{Name: "c", Start: t0, Duration: time.Hour, Nodes: ns(5), NodeCount: 2, Users: []string{"x"}}, policy.ErrInvalidConfig, "not both"},
		{"no nodes", policy.Reservation{Name: "c", Start: t0, Duration: time.Hour, Users: []string{"x"}}, policy.ErrInvalidConfig, "NodeCount or TRES"},
		{"duplicate", resv("a", t0.Add(5*time.Hour), time.Hour, ns(9), 0), policy.ErrInvalidConfig, "already exists"},
		{"count without chooser", policy.Reservation{Name: "c", Start: t0, Duration: time.Hour, NodeCount: 2, Users: []string{"x"}}, policy.ErrInvalidConfig, "NodeChooser"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := b.Add(c.r, nil)
			require.Error(t, err)
			assert.ErrorIs(t, err, c.is)
			assert.Contains(t, err.Error(), c.says)
			assert.Equal(t, 1, b.Len(), "no state change on error")
		})
	}
	// The overlap error names both reservations.
	err := b.Add(resv("b", t0.Add(30*time.Minute), time.Hour, ns(1, 2), 0), nil)
	assert.Contains(t, err.Error(), `"a"`)
	assert.Contains(t, err.Error(), `"b"`)
	// A failing chooser leaves the set unchanged.
	err = b.Add(policy.Reservation{Name: "c", Start: t0, Duration: time.Hour, NodeCount: 2, Users: []string{"x"}}, (&firstFree{fail: true}).choose)
	assert.ErrorIs(t, err, policy.ErrNoNodes)
	assert.Equal(t, 1, b.Len())
	// By count: the chooser is told to avoid nodes reserved at that time.
	require.NoError(t, b.Add(policy.Reservation{Name: "c", Start: t0, Duration: time.Hour, NodeCount: 2, Users: []string{"x"}}, ff.choose))
	got, _ := b.Get("c")
	assert.Equal(t, "{2-3}", got.Nodes.String())
	assert.Equal(t, t0.Add(time.Hour), got.End)
	// By TRES total: the chooser decides how many nodes (count 0).
	byTRES := func(r *policy.Reservation, count int, exclude topology.NodeSet) (topology.NodeSet, error) {
		assert.Zero(t, count)
		return ff.choose(r, int(r.TRES[0]/8), exclude) // 8 CPUs a node in this toy
	}
	require.NoError(t, b.Add(policy.Reservation{Name: "t", Start: t0, Duration: time.Hour, TRES: gres.Vector{24}, Users: []string{"x"}}, byTRES))
	got, _ = b.Get("t")
	assert.Equal(t, "{4-6}", got.Nodes.String())
	got.Users = []string{"y"}
	require.NoError(t, b.Update(got, nil), "Get's copy passes back to Update")
	require.NoError(t, b.Remove("t"))
	assert.ErrorIs(t, b.Update(resv("zz", t0, time.Hour, ns(9), 0), nil), policy.ErrUnknownReservation)
	assert.ErrorIs(t, b.Remove("zz"), policy.ErrUnknownReservation)
	require.NoError(t, b.Remove("c"))
	assert.Equal(t, []string{"a"}, func() (n []string) {
		for _, r := range b.All() {
			n = append(n, r.Name)
		}
		return
	}())
}

// One test per flag.
func TestReservationFlags(t *testing.T) {
	forb := topology.NewNodeSet(nNodes)
	alice := policy.ResvJob{User: "alice", Account: "physics"}
	bob := policy.ResvJob{User: "bob", Account: "chem"}
	in := func(j policy.ResvJob, name string) policy.ResvJob { j.Reservation = name; return j }

	t.Run("none", func(t *testing.T) {
		b := policy.NewReservations(nNodes)
		require.NoError(t, b.Add(resv("r", t0.Add(2*time.Hour), 2*time.Hour, ns(0, 1), 0), nil))
		// A job ending before the window may use the nodes; one crossing it may not.
		_, blk := b.Constrain(bob, t0, time.Hour, forb)
		assert.False(t, blk.Blocked())
		assert.True(t, forb.IsEmpty())
		b.Constrain(bob, t0, 3*time.Hour, forb)
		assert.Equal(t, "{0-1}", forb.String())
		// A job in the reservation waits for the window, then runs only on its nodes until its end.
		_, blk = b.Constrain(in(alice, "r"), t0, time.Hour, forb)
		assert.Equal(t, policy.ReasonReservation, blk.Reason)
		dl, blk := b.Constrain(in(alice, "r"), t0.Add(2*time.Hour), time.Hour, forb)
		assert.False(t, blk.Blocked())
		assert.Equal(t, t0.Add(4*time.Hour), dl)
		assert.Equal(t, "{2-15}", forb.String())
		_, blk = b.Constrain(in(alice, "r"), t0.Add(3*time.Hour), 2*time.Hour, forb)
		assert.Equal(t, policy.ReasonReservation, blk.Reason, "runs past the end")
		// Access.
		_, blk = b.Constrain(in(bob, "r"), t0.Add(2*time.Hour), time.Hour, forb)
		assert.Equal(t, policy.ReasonReservationInvalid, blk.Reason)
		assert.Equal(t, nNodes, forb.Count())
		_, blk = b.Constrain(in(alice, "gone"), t0, time.Hour, forb)
		assert.Equal(t, policy.ReasonReservationDeleted, blk.Reason)
		assert.ErrorIs(t, b.CheckAccess(in(bob, "r")), policy.ErrNotAllowed)
		assert.ErrorIs(t, b.CheckAccess(in(alice, "gone")), policy.ErrUnknownReservation)
		assert.NoError(t, b.CheckAccess(in(alice, "r")))
		assert.Contains(t, b.CheckAccess(in(bob, "r")).Error(), `"bob"`)
	})
	t.Run("FLEX", func(t *testing.T) {
		b := policy.NewReservations(nNodes)
		require.NoError(t, b.Add(resv("r", t0.Add(time.Hour), 2*time.Hour, ns(0, 1), policy.ResvFlex), nil))
		require.NoError(t, b.Add(resv("other", t0, 4*time.Hour, ns(5), 0), nil))
		dl, blk := b.Constrain(in(alice, "r"), t0, 4*time.Hour, forb)
		assert.False(t, blk.Blocked(), "may start before and end after")
		assert.True(t, dl.IsZero())
		assert.Equal(t, "{5}", forb.String(), "may use its own and unreserved nodes, not others' reserved ones")
	})
	t.Run("MAGNETIC", func(t *testing.T) {
		b := policy.NewReservations(nNodes)
		r := resv("m", t0, time.Hour, ns(0), policy.ResvMagnetic)
		r.Accounts = []string{"physics"}
		require.NoError(t, b.Add(r, nil))
		require.NoError(t, b.Add(resv("plain", t0.Add(5*time.Hour), time.Hour, ns(1), 0), nil))
		assert.Equal(t, []string{"m"}, b.Usable(alice))
		assert.Empty(t, b.Usable(bob))
		assert.Empty(t, b.Usable(policy.ResvJob{User: "alice", Account: "chem"}), "every list must admit the job")
		assert.Equal(t, []string{"plain"}, b.Usable(in(alice, "plain")))
	})
	t.Run("MAINT", func(t *testing.T) {
		b := policy.NewReservations(nNodes)
		require.NoError(t, b.Add(resv("r", t0, 4*time.Hour, ns(0, 1, 2), 0), nil))
		require.NoError(t, b.Add(resv("maint", t0.Add(time.Hour), time.Hour, ns(2, 3), policy.ResvMaint), nil), "MAINT may overlap")
		b.Constrain(in(alice, "r"), t0, 3*time.Hour, forb)
		assert.True(t, forb.Has(2), "maintenance nodes are off limits even inside the job's reservation")
		assert.False(t, forb.Has(0))
		rows, err := b.IdleCapacity(t0, t0.Add(4*time.Hour), make([]gres.Vector, nNodes), nil)
		require.NoError(t, err)
		assert.True(t, rows[0].Maint)
	})
	t.Run("OVERLAP", func(t *testing.T) {
		b := policy.NewReservations(nNodes)
		require.NoError(t, b.Add(resv("r", t0, 4*time.Hour, ns(0, 1), 0), nil))
		require.NoError(t, b.Add(resv("o", t0, time.Hour, ns(1, 2), policy.ResvOverlap), nil))
		require.Error(t, b.Update(resv("o", t0, time.Hour, ns(1, 2), 0), nil), "dropping OVERLAP conflicts")
		o, _ := b.Get("o")
		assert.True(t, o.Flags.Has(policy.ResvOverlap), "failed update changes nothing")
	})
	t.Run("IGNORE_JOBS", func(t *testing.T) {
		ff := &firstFree{}
		b := policy.NewReservations(nNodes)
		require.NoError(t, b.Add(policy.Reservation{Name: "ij", Start: t0, Duration: time.Hour, NodeCount: 1, Users: []string{"x"}, Flags: policy.ResvIgnoreJobs}, ff.choose))
		assert.Equal(t, []policy.ResvFlags{policy.ResvIgnoreJobs}, ff.calls, "the chooser sees the flag")
		rows, err := b.IdleCapacity(t0, t0.Add(time.Hour), make([]gres.Vector, nNodes), nil)
		require.NoError(t, err)
		assert.Empty(t, rows, "not tracked")
	})
	for _, fl := range []policy.ResvFlags{policy.ResvReplace, policy.ResvReplaceDown} {
		t.Run(fl.String(), func(t *testing.T) {
			ff := &firstFree{}
			b := policy.NewReservations(nNodes)
			require.NoError(t, b.Add(resv("fixed", t0, time.Hour, ns(0), 0), nil))
			require.NoError(t, b.Add(policy.Reservation{Name: "r", Start: t0, Duration: time.Hour, NodeCount: 3, Users: []string{"x"}, Flags: fl}, ff.choose))
			r, _ := b.Get("r")
			assert.Equal(t, "{1-3}", r.Nodes.String())
			changed, err := b.Replace(ns(2), ns(3), ff.choose)
			require.NoError(t, err)
			assert.Equal(t, []string{"r"}, changed)
			r, _ = b.Get("r")
			if fl == policy.ResvReplace {
				assert.Equal(t, "{1,4-5}", r.Nodes.String(), "down and allocated nodes replaced")
			} else {
				assert.Equal(t, "{1,3-4}", r.Nodes.String(), "only the down node replaced")
			}
			_, err = b.Replace(ns(1), ns(), (&firstFree{fail: true}).choose)
			assert.ErrorIs(t, err, policy.ErrNoNodes)
			r2, _ := b.Get("r")
			assert.Equal(t, r.Nodes.String(), r2.Nodes.String(), "no change on error")
		})
	}
}

func TestReservationRecurrence(t *testing.T) {
	b := policy.NewReservations(nNodes)
	// t0 is Monday 08:00 UTC.
	for _, r := range []policy.Reservation{
		resv("daily", t0, time.Hour, ns(0), policy.ResvDaily),
		resv("weekday", t0.Add(2*time.Hour), time.Hour, ns(1), policy.ResvWeekday),
		resv("weekend", t0.Add(2*time.Hour), time.Hour, ns(2), policy.ResvWeekend),
		resv("weekly", t0, 2*time.Hour, ns(3), policy.ResvWeekly),
		resv("hourly", t0, 10*time.Minute, ns(4), policy.ResvHourly),
	} {
		require.NoError(t, b.Add(r, nil))
	}
	starts := func(name string, from, to time.Time) []string {
		ws, err := b.Windows(name, from, to, nil)
		require.NoError(t, err)
		var out []string
		for _, w := range ws {
			out = append(out, w.Start.Format("Mon 15:04"))
		}
		return out
	}
	week := t0.Add(7 * 24 * time.Hour)
	assert.Equal(t, []string{"Mon 08:00", "Tue 08:00", "Wed 08:00", "Thu 08:00", "Fri 08:00", "Sat 08:00", "Sun 08:00"}, starts("daily", t0, week))
	assert.Equal(t, []string{"Mon 10:00", "Tue 10:00", "Wed 10:00", "Thu 10:00", "Fri 10:00"}, starts("weekday", t0, week))
	assert.Equal(t, []string{"Sat 10:00", "Sun 10:00"}, starts("weekend", t0, week))
	assert.Equal(t, []string{"Mon 08:00", "Mon 08:00"}, starts("weekly", t0, week.Add(time.Minute)))
	assert.Equal(t, []string{"Mon 09:00", "Mon 10:00"}, starts("hourly", t0.Add(30*time.Minute), t0.Add(150*time.Minute)))
	// A window partly before "from" is included.
	assert.Equal(t, []string{"Wed 08:00"}, starts("daily", t0.Add(48*time.Hour+30*time.Minute), t0.Add(49*time.Hour)))
	_, err := b.Windows("nope", t0, week, nil)
	assert.ErrorIs(t, err, policy.ErrUnknownReservation)
	_, err = b.Windows("hourly", t0, t0.Add(20*365*24*time.Hour), nil)
	assert.ErrorIs(t, err, policy.ErrTooLarge)
	// A one-off reservation on node 0 crossing Thursday's daily window conflicts.
	err = b.Add(resv("thu", t0.Add(72*time.Hour+30*time.Minute), time.Hour, ns(0), 0), nil)
	assert.ErrorIs(t, err, policy.ErrReservationOverlap)
	assert.Contains(t, err.Error(), `"daily"`)
	// Between two windows it fits.
	require.NoError(t, b.Add(resv("thu", t0.Add(72*time.Hour+90*time.Minute), time.Hour, ns(0), 0), nil))
	// Recurring against recurring: weekend windows on node 1 clash with nothing (weekday is Mon–Fri).
	require.NoError(t, b.Add(resv("we1", t0.Add(5*24*time.Hour+2*time.Hour), time.Hour, ns(1), policy.ResvWeekend), nil))
	assert.ErrorIs(t, b.Add(resv("we2", t0.Add(2*time.Hour), time.Hour, ns(1), policy.ResvDaily), nil), policy.ErrReservationOverlap)
	// A job on the daily node must avoid every window.
	forb := topology.NewNodeSet(nNodes)
	b.Constrain(policy.ResvJob{User: "bob"}, t0.Add(24*time.Hour-30*time.Minute), time.Hour, forb)
	assert.True(t, forb.Has(0))
}

func TestEarliestStart(t *testing.T) {
	b := policy.NewReservations(nNodes)
	require.NoError(t, b.Add(resv("once", t0.Add(time.Hour), 2*time.Hour, ns(0, 1), 0), nil))
	require.NoError(t, b.Add(resv("daily", t0.Add(30*time.Minute), time.Hour, ns(2), policy.ResvDaily), nil))
	require.NoError(t, b.Add(resv("maint", t0.Add(90*time.Minute), 30*time.Minute, ns(1), policy.ResvMaint), nil))
	bob := policy.ResvJob{User: "bob"}
	at := func(j policy.ResvJob, t time.Time, wall time.Duration, nodes topology.NodeSet) string {
		s, ok := b.EarliestStart(j, t, wall, nodes)
		if !ok {
			return "never"
		}
		return s.Sub(t0).String()
	}
	assert.Equal(t, "0s", at(bob, t0, time.Hour, ns(0)), "ends before the window")
	assert.Equal(t, "3h0m0s", at(bob, t0, 90*time.Minute, ns(0)), "after the window")
	assert.Equal(t, "0s", at(bob, t0, 12*time.Hour, ns(5, 6)), "unreserved nodes")
	assert.Equal(t, "1h30m0s", at(bob, t0, 23*time.Hour, ns(2)), "between daily windows")
	alice := policy.ResvJob{User: "alice", Reservation: "once"}
	assert.Equal(t, "1h0m0s", at(alice, t0, time.Hour, ns(0)), "waits for its window")
	assert.Equal(t, "2h0m0s", at(alice, t0, time.Hour, ns(0, 1)), "moved past the maintenance on node 1")
	assert.Equal(t, "never", at(alice, t0, 3*time.Hour, ns(0)), "longer than the window")
	assert.Equal(t, "never", at(alice, t0, time.Hour, ns(0, 5)), "node outside the reservation")
	assert.Equal(t, "never", at(alice, t0.Add(3*time.Hour), time.Hour, ns(0)), "window over")
	assert.Equal(t, "never", at(policy.ResvJob{User: "bob", Reservation: "once"}, t0, time.Hour, ns(0)), "not allowed")
}

func TestIdleCapacity(t *testing.T) {
	reg := newReg(t)
	gpu := reg.MustLookup("gres/gpu")
	b := policy.NewReservations(nNodes)
	require.NoError(t, b.Add(resv("train", t0, 2*time.Hour, ns(0, 1), 0), nil))
	require.NoError(t, b.Add(resv("nightly", t0.Add(12*time.Hour), time.Hour, ns(2), policy.ResvDaily), nil))
	capacity := make([]gres.Vector, nNodes)
	for i := range capacity {
		capacity[i] = vec(t, reg, "cpu=128,gres/gpu=8")
	}
	used := map[string]gres.Vector{"train": vec(t, reg, "gres/gpu=28800")} // 8 GPUs × 1 h
	rows, err := b.IdleCapacity(t0, t0.Add(48*time.Hour), capacity, used)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	assert.Equal(t, "nightly", rows[0].Name)
	assert.Equal(t, int64(2*3600*8), rows[0].Reserved.At(gpu), "two nightly windows × 8 GPUs")
	assert.Equal(t, int64(2*3600), rows[0].Reserved.At(gres.Node))
	assert.Equal(t, rows[0].Reserved, rows[0].Idle, "nobody used it")
	assert.Equal(t, int64(2*2*3600*8), rows[1].Reserved.At(gpu))
	assert.Equal(t, int64(2*2*3600*8-28800), rows[1].Idle.At(gpu), "idle = reserved − used")
	_, err = b.IdleCapacity(t0, t0.Add(time.Hour), capacity[:3], nil)
	assert.ErrorIs(t, err, policy.ErrInvalidRequest)
}

func TestReservationACL(t *testing.T) {
	r := policy.Reservation{Users: []string{"-mallory"}}
	assert.True(t, r.Allows("alice", "x"))
	assert.False(t, r.Allows("mallory", "x"))
	r = policy.Reservation{Users: []string{"alice"}, Accounts: []string{"-chem"}}
	assert.True(t, r.Allows("alice", "physics"))
	assert.False(t, r.Allows("alice", "chem"))
	assert.False(t, r.Allows("bob", "physics"))
	r = policy.Reservation{Users: []string{"alice", "-bob"}}
	assert.False(t, r.Allows("alice", ""), "malformed lists admit nobody")
	f, err := policy.ParseResvFlags("maint, ignore_jobs,WEEKDAY")
	require.NoError(t, err)
	assert.Equal(t, "MAINT,IGNORE_JOBS,WEEKDAY", f.String())
	_, err = policy.ParseResvFlags("MAINT,BOGUS")
	assert.ErrorIs(t, err, policy.ErrSyntax)
}

// TestPropertyNoIntrusion places random jobs at random times with
// Constrain/EarliestStart and checks the placed intervals against every
// reservation window: a job never runs on a reservation's nodes during its
// window unless it is in that reservation, and a (non-FLEX) reservation
// job never runs outside its nodes or window.
func TestPropertyNoIntrusion(t *testing.T) {
	users := []string{"alice", "bob", "carol"}
	for seed := range uint64(5) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := newRand(seed)
			b := policy.NewReservations(nNodes)
			var names []string
			for i := range 8 {
				nodes := topology.NewNodeSet(nNodes)
				for range 1 + rng.IntN(4) {
					nodes.Add(rng.IntN(nNodes))
				}
				var fl policy.ResvFlags
				switch rng.IntN(5) {
				case 0:
					fl = policy.ResvDaily
				case 1:
					fl = policy.ResvFlex
				}
				r := policy.Reservation{Name: fmt.Sprint("r", i), Start: t0.Add(time.Duration(rng.IntN(48)) * time.Hour),
					Duration: time.Duration(1+rng.IntN(6)) * time.Hour, Nodes: nodes, Users: []string{users[rng.IntN(3)]}, Flags: fl}
				if b.Add(r, nil) == nil {
					names = append(names, r.Name)
				}
			}
			require.NotEmpty(t, names)
			forb := topology.NewNodeSet(nNodes)
			placed := 0
			for range 300 {
				j := policy.ResvJob{User: users[rng.IntN(3)]}
				if rng.IntN(2) == 0 {
					j.Reservation = names[rng.IntN(len(names))]
				}
				at := t0.Add(time.Duration(rng.IntN(72*60)) * time.Minute)
				wall := time.Duration(10+rng.IntN(300)) * time.Minute
				want := topology.NewNodeSet(nNodes)
				want.Add(rng.IntN(nNodes))
				want.Add(rng.IntN(nNodes))
				s, ok := b.EarliestStart(j, at, wall, want)
				if !ok {
					continue
				}
				_, blk := b.Constrain(j, s, wall, forb)
				require.False(t, blk.Blocked(), "EarliestStart %v for %+v but Constrain says %s", s, j, blk)
				require.False(t, want.Intersects(forb), "EarliestStart gave a time when the nodes are forbidden")
				placed++
				// Independent check against every window.
				for _, r := range b.All() {
					ws, err := b.Windows(r.Name, s.Add(-7*24*time.Hour), s.Add(wall+7*24*time.Hour), nil)
					require.NoError(t, err)
					mine := j.Reservation == r.Name && r.Allows(j.User, "")
					inside := false
					for _, w := range ws {
						cross := w.Start.Before(s.Add(wall)) && w.End.After(s)
						if cross && want.Intersects(r.Nodes) && !mine {
							t.Fatalf("job %+v at %v+%v on %s intrudes on %s window %v–%v", j, s, wall, want, r.Name, w.Start, w.End)
						}
						if !w.Start.After(s) && !w.End.Before(s.Add(wall)) {
							inside = true
						}
					}
					if mine && !r.Flags.Has(policy.ResvFlex) {
						require.True(t, inside, "reservation job outside its window")
						require.True(t, want.SubsetOf(r.Nodes), "reservation job outside its nodes")
					}
				}
			}
			require.Greater(t, placed, 50)
		})
	}
}

// TestReservationNextWindowIsFirstToEndAfter checks the window a
// reservation made at t opens first: a plain one's only window until it
// ends, a recurring one's next occurrence, none once a plain one is over.
func TestReservationNextWindowIsFirstToEndAfter(t *testing.T) {
	b := policy.NewReservations(nNodes)
	plain := resv("p", t0.Add(time.Hour), time.Hour, ns(0), 0)
	w, ok, err := b.NextWindow(plain, t0)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, policy.Window{Start: t0.Add(time.Hour), End: t0.Add(2 * time.Hour)}, w)
	w, ok, err = b.NextWindow(plain, t0.Add(90*time.Minute))
	require.NoError(t, err)
	assert.True(t, ok, "an open window is still the next one")
	assert.Equal(t, t0.Add(time.Hour), w.Start)
	_, ok, err = b.NextWindow(plain, t0.Add(2*time.Hour))
	require.NoError(t, err)
	assert.False(t, ok, "a plain reservation that ended has no window left")

	daily := resv("d", t0, time.Hour, ns(0), policy.ResvDaily)
	w, ok, err = b.NextWindow(daily, t0.Add(50*time.Hour))
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, policy.Window{Start: t0.Add(72 * time.Hour), End: t0.Add(73 * time.Hour)}, w)

	_, _, err = b.NextWindow(resv("bad", time.Time{}, time.Hour, ns(0), 0), t0)
	assert.ErrorIs(t, err, policy.ErrInvalidConfig)
	assert.Zero(t, b.Len(), "NextWindow adds nothing")
}
