package policy

import (
	"encoding/json"
	"time"
)

// JSON of the policy structs that hold durations: every field is encoded
// by encoding/json under its Go name, except that durations are written in
// Slurm's time format (see Duration) and omitted when zero. Enums, flags
// and TRES limits use their text forms; decoded TRES limits are unbound
// until New (or QOS.Bind, Assoc.Bind) binds them. Decoding into a value
// keeps the fields the input does not name, as encoding/json does.
//
// Limits is only encoded inside QOSLimits and AssocLimits, which carry its
// durations; a Limits on its own encodes them as nanoseconds.

// MarshalJSON encodes the limits with GrpWall and MaxWall as Slurm times.
func (l QOSLimits) MarshalJSON() ([]byte, error) {
	type plain QOSLimits
	return json.Marshal(struct {
		plain
		GrpWall Duration `json:",omitzero"`
		MaxWall Duration `json:",omitzero"`
	}{plain(l), Duration(l.GrpWall), Duration(l.MaxWall)})
}

// UnmarshalJSON decodes what MarshalJSON writes.
func (l *QOSLimits) UnmarshalJSON(b []byte) error {
	type plain QOSLimits
	aux := struct {
		*plain
		GrpWall Duration
		MaxWall Duration
	}{(*plain)(l), Duration(l.GrpWall), Duration(l.MaxWall)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	l.GrpWall, l.MaxWall = time.Duration(aux.GrpWall), time.Duration(aux.MaxWall)
	return nil
}

// MarshalJSON encodes the limits with GrpWall and MaxWall as Slurm times.
func (l AssocLimits) MarshalJSON() ([]byte, error) {
	type plain AssocLimits
	return json.Marshal(struct {
		plain
		GrpWall Duration `json:",omitzero"`
		MaxWall Duration `json:",omitzero"`
	}{plain(l), Duration(l.GrpWall), Duration(l.MaxWall)})
}

// UnmarshalJSON decodes what MarshalJSON writes.
func (l *AssocLimits) UnmarshalJSON(b []byte) error {
	type plain AssocLimits
	aux := struct {
		*plain
		GrpWall Duration
		MaxWall Duration
	}{(*plain)(l), Duration(l.GrpWall), Duration(l.MaxWall)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	l.GrpWall, l.MaxWall = time.Duration(aux.GrpWall), time.Duration(aux.MaxWall)
	return nil
}

// MarshalJSON encodes the QOS with GraceTime and PreemptExemptTime as
// Slurm times.
func (q QOS) MarshalJSON() ([]byte, error) {
	type plain QOS
	return json.Marshal(struct {
		plain
		GraceTime         Duration `json:",omitzero"`
		PreemptExemptTime Duration `json:",omitzero"`
	}{plain(q), Duration(q.GraceTime), Duration(q.PreemptExemptTime)})
}

// UnmarshalJSON decodes what MarshalJSON writes.
func (q *QOS) UnmarshalJSON(b []byte) error {
	type plain QOS
	aux := struct {
		*plain
		GraceTime         Duration
		PreemptExemptTime Duration
	}{(*plain)(q), Duration(q.GraceTime), Duration(q.PreemptExemptTime)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	q.GraceTime, q.PreemptExemptTime = time.Duration(aux.GraceTime), time.Duration(aux.PreemptExemptTime)
	return nil
}

// MarshalJSON encodes the partition with MaxTime and GraceTime as Slurm
// times.
func (p Partition) MarshalJSON() ([]byte, error) {
	type plain Partition
	return json.Marshal(struct {
		plain
		MaxTime   Duration `json:",omitzero"`
		GraceTime Duration `json:",omitzero"`
	}{plain(p), Duration(p.MaxTime), Duration(p.GraceTime)})
}

// UnmarshalJSON decodes what MarshalJSON writes.
func (p *Partition) UnmarshalJSON(b []byte) error {
	type plain Partition
	aux := struct {
		*plain
		MaxTime   Duration
		GraceTime Duration
	}{(*plain)(p), Duration(p.MaxTime), Duration(p.GraceTime)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	p.MaxTime, p.GraceTime = time.Duration(aux.MaxTime), time.Duration(aux.GraceTime)
	return nil
}

// MarshalJSON encodes the reservation with Duration as a Slurm time, End
// omitted when zero, Nodes as "16:{0-3}" and TRES as a registry-free TRES
// string (gres.Vector's text form).
func (r Reservation) MarshalJSON() ([]byte, error) {
	type plain Reservation
	return json.Marshal(struct {
		plain
		End      time.Time `json:",omitzero"`
		Duration Duration  `json:",omitzero"`
	}{plain(r), r.End, Duration(r.Duration)})
}

// UnmarshalJSON decodes what MarshalJSON writes.
func (r *Reservation) UnmarshalJSON(b []byte) error {
	type plain Reservation
	aux := struct {
		*plain
		End      time.Time
		Duration Duration
	}{(*plain)(r), r.End, Duration(r.Duration)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	r.End, r.Duration = aux.End, time.Duration(aux.Duration)
	return nil
}

// MarshalJSON encodes the configuration with PreemptExemptTime as a Slurm
// time (its QOS, partitions and associations as their own MarshalJSON
// do).
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	return json.Marshal(struct {
		plain
		PreemptExemptTime Duration `json:",omitzero"`
	}{plain(c), Duration(c.PreemptExemptTime)})
}

// UnmarshalJSON decodes what MarshalJSON writes; its TRES limits are
// unbound until New binds them.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config
	aux := struct {
		*plain
		PreemptExemptTime Duration
	}{(*plain)(c), Duration(c.PreemptExemptTime)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	c.PreemptExemptTime = time.Duration(aux.PreemptExemptTime)
	return nil
}
