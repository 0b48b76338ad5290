package backfill

import (
	"errors"
	"testing"
	"time"
)

// TestCountersHold: a hold adds its amount over [from, to) only, and a
// job that needs the room waits until the hold ends.
func TestCountersHold(t *testing.T) {
	c := NewCounters()
	id, err := c.Add(10, 4) // 4 of 10 in use now
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Hold(id, 5, ctrNow.Add(time.Hour), ctrNow.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at   time.Duration
		want int64
	}{{0, 4}, {time.Hour, 9}, {2 * time.Hour, 9}, {3 * time.Hour, 4}} {
		if got := c.UseAt(id, ctrNow.Add(tc.at)); got != tc.want {
			t.Errorf("use at +%s = %d, want %d", tc.at, got, tc.want)
		}
	}
	// 4 more fit for 30m now, not for 2h (the hold overlaps): then from +3h.
	for _, tc := range []struct {
		d    time.Duration
		want time.Duration
	}{{30 * time.Minute, 0}, {2 * time.Hour, 3 * time.Hour}} {
		s, ok, err := c.Earliest([]Use{{Counter: id, Amount: 4, Limit: 10}}, ctrNow, tc.d)
		if err != nil || !ok || !s.Equal(ctrNow.Add(tc.want)) {
			t.Errorf("earliest for %s = %s %t %v, want +%s", tc.d, s, ok, err, tc.want)
		}
	}
	// A hold with no end lasts for ever.
	if err := c.Hold(id, 6, ctrNow.Add(4*time.Hour), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := c.UseAt(id, ctrNow.Add(100*time.Hour)); got != 10 {
		t.Errorf("use after an endless hold = %d, want 10", got)
	}
	for _, bad := range []error{
		c.Hold(id+1, 1, ctrNow, ctrNow.Add(time.Hour)),
		c.Hold(id, -1, ctrNow, ctrNow.Add(time.Hour)),
		c.Hold(id, 1, ctrNow.Add(time.Hour), ctrNow),
	} {
		if !errors.Is(bad, ErrInvalidRequest) {
			t.Errorf("bad hold: %v, want ErrInvalidRequest", bad)
		}
	}
}
