package backfill

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
)

var ctrNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func TestCountersEarliest(t *testing.T) {
	c := NewCounters()
	lic, err := c.Add(10, 8) // 8 of 10 in use
	if err != nil {
		t.Fatal(err)
	}
	// Running jobs release 3 at +1h and 5 at +3h.
	if err := c.Release(lic, 3, ctrNow.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(lic, 5, ctrNow.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		amount int64
		from   time.Duration
		d      time.Duration
		want   time.Duration
		ok     bool
	}{
		{2, 0, time.Hour, 0, true},
		{3, 0, time.Hour, time.Hour, true},
		{5, 0, time.Hour, time.Hour, true},
		{6, 0, time.Hour, 3 * time.Hour, true},
		{10, 0, time.Hour, 3 * time.Hour, true},
		{11, 0, time.Hour, 0, false},
		{3, 2 * time.Hour, time.Hour, 2 * time.Hour, true},
	} {
		s, ok, err := c.Earliest([]Use{{Counter: lic, Amount: tc.amount}}, ctrNow.Add(tc.from), tc.d)
		if err != nil || ok != tc.ok || (ok && !s.Equal(ctrNow.Add(tc.want))) {
			t.Errorf("amount %d from +%v: got %v %v %v, want +%v %v", tc.amount, tc.from, s.Sub(ctrNow), ok, err, tc.want, tc.ok)
		}
	}
	// A booking over [+1h, +2h) of 4 leaves 5-4=1... at +1h: use 5+4 = 9.
	c.book([]Use{{Counter: lic, Amount: 4}}, ctrNow.Add(time.Hour).Unix(), ctrNow.Add(2*time.Hour).Unix())
	if got := c.UseAt(lic, ctrNow.Add(90*time.Minute)); got != 9 {
		t.Errorf("use at +1h30 = %d, want 9", got)
	}
	// 2 fits now only for an hour: with 2 h it waits until the booking ends.
	s, ok, _ := c.Earliest([]Use{{Counter: lic, Amount: 2}}, ctrNow, 2*time.Hour)
	if !ok || !s.Equal(ctrNow.Add(2*time.Hour)) {
		t.Errorf("2 for 2h: got %v %v, want +2h", s.Sub(ctrNow), ok)
	}
	// A per-use limit below the capacity.
	s, ok, _ = c.Earliest([]Use{{Counter: lic, Amount: 1, Limit: 5}}, ctrNow, time.Hour)
	if !ok || !s.Equal(ctrNow.Add(3*time.Hour)) {
		t.Errorf("limit 5: got %v %v, want +3h", s.Sub(ctrNow), ok)
	}
	// Errors name what was wrong.
	if _, err := c.Add(-1, 0); err == nil {
		t.Error("negative capacity accepted")
	}
	if err := c.Release(7, 1, ctrNow); err == nil {
		t.Error("unknown counter accepted")
	}
	if _, _, err := c.Earliest([]Use{{Counter: 9, Amount: 1}}, ctrNow, time.Hour); err == nil {
		t.Error("unknown counter in Earliest accepted")
	}
}

// A use never released stays for ever: a job that needs it gets no start.
func TestCountersNeverReleased(t *testing.T) {
	c := NewCounters()
	id, _ := c.Add(2, 2)
	if err := c.Release(id, 2, time.Time{}); err != nil { // no end: nothing
		t.Fatal(err)
	}
	if _, ok, _ := c.Earliest([]Use{{Counter: id, Amount: 1}}, ctrNow, time.Minute); ok {
		t.Error("a counter never released has room")
	}
}

// TestCountersModel checks the step function against a per-second model.
func TestCountersModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const horizon = 200
	for it := 0; it < 300; it++ {
		capacity := int64(rng.IntN(6) + 1)
		inUse := int64(rng.IntN(8))
		model := make([]int64, horizon+50)
		for i := range model {
			model[i] = inUse
		}
		c := NewCounters()
		id, _ := c.Add(capacity, inUse)
		left := inUse
		for left > 0 && rng.IntN(4) > 0 {
			a := int64(rng.IntN(int(left)) + 1)
			at := rng.IntN(horizon)
			left -= a
			_ = c.Release(id, a, ctrNow.Add(time.Duration(at)*time.Second))
			for x := at; x < len(model); x++ {
				model[x] -= a
			}
		}
		for b := 0; b < 5; b++ {
			s, e := rng.IntN(horizon), 0
			e = s + rng.IntN(40) + 1
			a := int64(rng.IntN(3) + 1)
			c.book([]Use{{Counter: id, Amount: a}}, ctrNow.Unix()+int64(s), ctrNow.Unix()+int64(e))
			for x := s; x < e; x++ {
				model[x] += a
			}
		}
		for x := 0; x < horizon; x++ {
			if got := c.UseAt(id, ctrNow.Add(time.Duration(x)*time.Second)); got != model[x] {
				t.Fatalf("iteration %d: use at +%ds = %d, model %d", it, x, got, model[x])
			}
		}
		amount, d := int64(rng.IntN(4)+1), rng.IntN(30)+1
		from := rng.IntN(horizon / 2)
		want := -1
		for s := from; s+d < len(model); s++ {
			ok := amount <= capacity
			for x := s; ok && x < s+d; x++ {
				ok = model[x]+amount <= capacity
			}
			if ok {
				want = s
				break
			}
		}
		got, ok, _ := c.Earliest([]Use{{Counter: id, Amount: amount}}, ctrNow.Add(time.Duration(from)*time.Second), time.Duration(d)*time.Second)
		if want >= 0 && (!ok || !got.Equal(ctrNow.Add(time.Duration(want)*time.Second))) {
			t.Fatalf("iteration %d: earliest(%d for %ds from +%d) = %v %v, model +%d", it, amount, d, from, got.Sub(ctrNow), ok, want)
		}
		if want < 0 && ok && got.Before(ctrNow.Add(horizon*time.Second)) {
			t.Fatalf("iteration %d: earliest = +%v, model none", it, got.Sub(ctrNow))
		}
	}
}

// A job held by a counter is planned when the counter has room; a lower
// job on the same counter cannot take that room (EASY and conservative).
func TestPlanCounterReservation(t *testing.T) {
	for _, mode := range []Mode{Conservative, EASY} {
		pl, _ := NewPlanner(Config{Mode: mode, Resolution: time.Second})
		cpus := func(n int64) gres.Vector { return gres.Vector{gres.CPU: n} }
		prof, _ := pl.NewProfile(ctrNow, []NodeState{{Capacity: cpus(16)}, {Capacity: cpus(16)}},
			[]Running{{ID: 1, End: ctrNow.Add(time.Hour), Allocs: []Alloc{{Node: 0, Use: cpus(4)}}}})
		c := NewCounters()
		user, _ := c.Add(1, 1) // MaxJobsPerUser=1, one running until +1h
		_ = c.Release(user, 1, ctrNow.Add(time.Hour))
		prof.SetCounters(c)
		plan, err := pl.Plan(prof, []Job{
			{ID: 10, Nodes: 1, PerNode: cpus(4), TimeLimit: 2 * time.Hour, Uses: []Use{{Counter: user, Amount: 1}}},
			{ID: 11, Nodes: 1, PerNode: cpus(4), TimeLimit: 30 * time.Minute, Uses: []Use{{Counter: user, Amount: 1}}},
			{ID: 12, Nodes: 1, PerNode: cpus(4), TimeLimit: 3 * time.Hour},
			{ID: 13, Nodes: 1, PerNode: cpus(4), TimeLimit: time.Hour, Uses: []Use{{Counter: user, Amount: 2}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		e := plan.Entries
		if e[0].Status != StatusReserved || !e[0].Start.Equal(ctrNow.Add(time.Hour)) || !e[0].ByCounter || e[0].Counter != user {
			t.Errorf("%v: job 10 = %+v, want reserved at +1h by the counter", mode, e[0])
		}
		switch mode {
		case Conservative:
			if e[1].Status != StatusReserved || !e[1].Start.Equal(ctrNow.Add(3*time.Hour)) {
				t.Errorf("%v: job 11 = %+v, want reserved at +3h", mode, e[1])
			}
		case EASY:
			if e[1].Status != StatusEstimated || !e[1].Start.Equal(ctrNow.Add(3*time.Hour)) {
				t.Errorf("%v: job 11 = %+v, want estimated at +3h", mode, e[1])
			}
		}
		if e[2].Status != StatusStart {
			t.Errorf("%v: job 12 = %+v, want start (no counter)", mode, e[2])
		}
		if e[3].Status != StatusNeverFits || e[3].Reason != ReasonCounter || e[3].Counter != user {
			t.Errorf("%v: job 13 = %+v, want never fits by the counter", mode, e[3])
		}
		if got := c.UseAt(user, ctrNow.Add(90*time.Minute)); got != 1 {
			t.Errorf("%v: counter use at +1h30 = %d, want 1 (job 10's booking)", mode, got)
		}
	}
}

// Jobs with Uses need a counter set with those counters.
func TestPlanCounterValidation(t *testing.T) {
	pl, _ := NewPlanner(Config{})
	prof, _ := pl.NewProfile(ctrNow, []NodeState{{Capacity: gres.Vector{gres.CPU: 4}}}, nil)
	j := []Job{{ID: 1, Nodes: 1, PerNode: gres.Vector{gres.CPU: 1}, TimeLimit: time.Hour, Uses: []Use{{Counter: 0, Amount: 1}}}}
	if _, err := pl.Plan(prof, j); err == nil {
		t.Error("Uses without counters accepted")
	}
	prof.SetCounters(NewCounters())
	if _, err := pl.Plan(prof, j); err == nil {
		t.Error("an unknown counter accepted")
	}
}
