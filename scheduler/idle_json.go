package scheduler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// JSON of the idle report (the output encodings of encode_output.go):
// counts by class name, so that a reader never depends on the order of
// the classes and a class added at the end (IdleAllocated) is named.

// MarshalJSON encodes the counts as an object keyed by class name
// ({"unhealthy":0,…,"allocated-idle":8}), every class present.
func (c IdleCounts) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for k := range NumIdleClasses {
		if k > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%d", k.String(), c[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads what MarshalJSON writes (a class left out is 0;
// names case-insensitive, each class at most once), and the older array
// form (one count per class, in class order).
func (c *IdleCounts) UnmarshalJSON(b []byte) error {
	var out IdleCounts
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		var arr []int64
		if err := json.Unmarshal(t, &arr); err != nil {
			return fmt.Errorf("scheduler: idle counts: %w", err)
		}
		if len(arr) > int(NumIdleClasses) {
			return fmt.Errorf("scheduler: idle counts: %d classes, there are %d", len(arr), NumIdleClasses)
		}
		copy(out[:], arr)
		*c = out
		return nil
	}
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("scheduler: idle counts: %w", err)
	}
	var seen [NumIdleClasses]bool
	for name, v := range m {
		var k IdleClass
		if err := k.UnmarshalText([]byte(name)); err != nil {
			return fmt.Errorf("scheduler: idle counts: %w", err)
		}
		// Names are read case-insensitively: two keys may name one
		// class, and which the map gives last is random.
		if seen[k] {
			return fmt.Errorf("scheduler: idle counts: class %s given twice", k)
		}
		seen[k] = true
		out[k] = v
	}
	*c = out
	return nil
}

// MarshalJSON encodes the report with PlanTime left out when there is no
// plan; the counts by class name (IdleCounts.MarshalJSON).
func (r IdleReport) MarshalJSON() ([]byte, error) {
	type plain IdleReport
	return json.Marshal(struct {
		plain
		PlanTime time.Time `json:",omitzero"`
	}{plain(r), r.PlanTime})
}
