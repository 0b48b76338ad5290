package policy

import (
	"fmt"
	"strings"
	"time"
)

// This file gives policy's enums and flag sets their text forms
// (encoding.TextMarshaler and TextUnmarshaler, which encoding/json uses):
// the Slurm spelling String returns, read back case-insensitively.
// Encoding a value without a name (past the last constant, unknown flag
// bits) is an error; decoding an unknown name is an error naming the value
// and the type, wrapping ErrSyntax (ErrUnknownReason for a Reason).

// enumText returns the name of k for MarshalText.
func enumText[K ~uint8](k K, names []string, typ string) ([]byte, error) {
	if int(k) < len(names) {
		return []byte(names[k]), nil
	}
	return nil, fmt.Errorf("%w: %s(%d) has no name", ErrSyntax, typ, uint8(k))
}

// enumParse returns the value named s (case-insensitive, blanks around it
// ignored) for UnmarshalText.
func enumParse[K ~uint8](s string, names []string, typ string) (K, error) {
	t := strings.TrimSpace(s)
	for i, n := range names {
		if strings.EqualFold(t, n) {
			return K(i), nil
		}
	}
	return 0, fmt.Errorf("%w: %s %q: want one of %s", ErrSyntax, typ, s, strings.Join(names, ", "))
}

// MarshalText writes the reason's Slurm spelling ("Resources",
// "QOSMaxGRESPerUser").
func (r Reason) MarshalText() ([]byte, error) {
	if r >= numReasons {
		return nil, fmt.Errorf("policy: %w: Reason(%d) has no name", ErrUnknownReason, uint16(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText reads a Slurm reason, as ParseReason does.
func (r *Reason) UnmarshalText(b []byte) error {
	v, err := ParseReason(string(b))
	if err != nil {
		return fmt.Errorf("Reason: %w", err)
	}
	*r = v
	return nil
}

// MarshalText writes Slurm's spelling ("REQUEUE", "SUSPEND,GANG").
func (m PreemptMode) MarshalText() ([]byte, error) {
	if !m.valid() {
		return nil, fmt.Errorf("%w: PreemptMode(%d) is not a mode", ErrSyntax, uint8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText reads what ParsePreemptMode accepts.
func (m *PreemptMode) UnmarshalText(b []byte) error {
	v, err := ParsePreemptMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// MarshalText writes the flags comma-separated ("DenyOnLimit,NoReserve";
// "" for none).
func (f QOSFlags) MarshalText() ([]byte, error) {
	if f&^(1<<numQOSFlags-1) != 0 {
		return nil, fmt.Errorf("%w: QOSFlags %s: unknown bits", ErrSyntax, f)
	}
	return []byte(f.String()), nil
}

// UnmarshalText reads what ParseQOSFlags accepts.
func (f *QOSFlags) UnmarshalText(b []byte) error {
	v, err := ParseQOSFlags(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// MarshalText writes the flags comma-separated ("MAINT,IGNORE_JOBS"; ""
// for none).
func (f ResvFlags) MarshalText() ([]byte, error) {
	if f&^(1<<numResvFlags-1) != 0 {
		return nil, fmt.Errorf("%w: ResvFlags %s: unknown bits", ErrSyntax, f)
	}
	return []byte(f.String()), nil
}

// UnmarshalText reads what ParseResvFlags accepts.
func (f *ResvFlags) UnmarshalText(b []byte) error {
	v, err := ParseResvFlags(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// MarshalText writes "preempt/none", "preempt/partition_prio" or
// "preempt/qos".
func (t PreemptType) MarshalText() ([]byte, error) {
	return enumText(t, preemptTypeNames[:], "PreemptType")
}

// UnmarshalText reads what ParsePreemptType accepts.
func (t *PreemptType) UnmarshalText(b []byte) error {
	v, err := ParsePreemptType(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// MarshalText writes "NO", "EXCLUSIVE", "YES" or "FORCE" (the job count
// is Partition.OverSubscribeCount, a field of its own).
func (o OverSubscribe) MarshalText() ([]byte, error) {
	return enumText(o, overSubscribeNames[:], "OverSubscribe")
}

// UnmarshalText reads a mode name without a count (use ParseOverSubscribe
// for slurm.conf's "YES:8").
func (o *OverSubscribe) UnmarshalText(b []byte) error {
	v, err := enumParse[OverSubscribe](string(b), overSubscribeNames[:], "OverSubscribe")
	if err != nil {
		return err
	}
	*o = v
	return nil
}

// MarshalText writes "least-lost-work" or "slurm".
func (o PreemptOrder) MarshalText() ([]byte, error) {
	return enumText(o, preemptOrderNames[:], "PreemptOrder")
}

// UnmarshalText reads "least-lost-work" or "slurm".
func (o *PreemptOrder) UnmarshalText(b []byte) error {
	v, err := enumParse[PreemptOrder](string(b), preemptOrderNames[:], "PreemptOrder")
	if err != nil {
		return err
	}
	*o = v
	return nil
}

// MarshalText writes "NONE", "CANCEL", "REQUEUE" or "SUSPEND".
func (a PreemptAction) MarshalText() ([]byte, error) {
	return enumText(a, actionNames[:], "PreemptAction")
}

// UnmarshalText reads "NONE", "CANCEL", "REQUEUE" or "SUSPEND".
func (a *PreemptAction) UnmarshalText(b []byte) error {
	v, err := enumParse[PreemptAction](string(b), actionNames[:], "PreemptAction")
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// MarshalText writes the level's String ("job QOS", "user association").
func (l Level) MarshalText() ([]byte, error) { return enumText(l, levelNames[:], "Level") }

// UnmarshalText reads a level's String.
func (l *Level) UnmarshalText(b []byte) error {
	v, err := enumParse[Level](string(b), levelNames[:], "Level")
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// unitTextNames name every Unit (String leaves none and count blank).
var unitTextNames = [...]string{"none", "count", "jobs", "seconds", "TRES-minutes"}

// MarshalText writes "none", "count", "jobs", "seconds" or
// "TRES-minutes".
func (u Unit) MarshalText() ([]byte, error) { return enumText(u, unitTextNames[:], "Unit") }

// UnmarshalText reads what MarshalText writes.
func (u *Unit) UnmarshalText(b []byte) error {
	v, err := enumParse[Unit](string(b), unitTextNames[:], "Unit")
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// MarshalText writes the outcome ("COMPLETED").
func (o Outcome) MarshalText() ([]byte, error) { return enumText(o, outcomeNames[:], "Outcome") }

// UnmarshalText reads an outcome name.
func (o *Outcome) UnmarshalText(b []byte) error {
	v, err := enumParse[Outcome](string(b), outcomeNames[:], "Outcome")
	if err != nil {
		return err
	}
	*o = v
	return nil
}

// Duration is a time.Duration with Slurm's time format as its text form,
// for encodings of the structs that hold durations (QOS, Partition,
// Reservation, the scheduler's JobSpec …): MarshalText writes whole
// seconds as FormatDuration does ("2-00:00:00", "01:30:00") and "0" for
// zero; a duration Slurm's format cannot hold exactly (a fraction of a
// second, a negative value, more than MaxLimitDuration) is written in Go's
// form ("1.5s"), so that decoding always gives back the same value.
// UnmarshalText reads every form ParseDuration accepts (UNLIMITED is 0)
// and Go's forms.
type Duration time.Duration

// MarshalText writes d as described on Duration.
func (d Duration) MarshalText() ([]byte, error) {
	switch v := time.Duration(d); {
	case v == 0:
		return []byte("0"), nil
	case v < 0 || v > MaxLimitDuration || v%time.Second != 0:
		return []byte(v.String()), nil
	default:
		return []byte(FormatDuration(v)), nil
	}
}

// UnmarshalText reads a Slurm time ("1-12:00:00", "90", "UNLIMITED") or a
// Go duration ("1.5s", "-2m"). Errors wrap ErrSyntax (ErrTooLarge for a
// Slurm time above MaxLimitDuration) and name the value.
func (d *Duration) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	switch strings.ToLower(s) {
	case "unlimited", "infinite", "-1":
	default:
		if strings.ContainsAny(s, "hmsuµn") {
			v, err := time.ParseDuration(s)
			if err != nil {
				return fmt.Errorf("%w: duration %q: %w", ErrSyntax, s, err)
			}
			*d = Duration(v)
			return nil
		}
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// String writes d as MarshalText does.
func (d Duration) String() string {
	b, _ := d.MarshalText() // never fails
	return string(b)
}
