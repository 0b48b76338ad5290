package backfill

import (
	"fmt"
	"strings"
)

// ParseMode parses "conservative" or "easy" (case-insensitive; "" is
// Conservative, the zero value). Errors wrap ErrInvalidConfig and name the
// value.
func ParseMode(s string) (Mode, error) {
	switch t := strings.TrimSpace(s); {
	case t == "", strings.EqualFold(t, "conservative"):
		return Conservative, nil
	case strings.EqualFold(t, "easy"):
		return EASY, nil
	}
	return 0, fmt.Errorf("%w: Mode %q: want conservative or easy", ErrInvalidConfig, s)
}

// MarshalText writes "conservative" or "easy"; an unknown mode is an
// error.
func (m Mode) MarshalText() ([]byte, error) {
	if m > EASY {
		return nil, fmt.Errorf("%w: Mode(%d) has no name", ErrInvalidConfig, uint8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText reads what ParseMode accepts.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
