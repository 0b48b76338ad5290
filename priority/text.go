package priority

import (
	"fmt"
	"strings"
)

// MarshalText writes the flags in slurm.conf spelling ("ACCRUE_ALWAYS,
// NO_NORMAL_ALL" without the blank; "" for none), as String does. Bits
// that are no flag are an error.
func (f Flags) MarshalText() ([]byte, error) {
	if f&^allFlags != 0 {
		return nil, fmt.Errorf("%w: PriorityFlags 0x%x: unknown bits", ErrSyntax, uint32(f&^allFlags))
	}
	return []byte(f.String()), nil
}

// UnmarshalText reads what ParseFlags accepts.
func (f *Flags) UnmarshalText(b []byte) error {
	v, err := ParseFlags(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// ParseAlgorithm parses "fair_tree", "classic" or "depth_oblivious"
// (case-insensitive). Errors wrap ErrSyntax and name the value.
func ParseAlgorithm(s string) (Algorithm, error) {
	t := strings.TrimSpace(s)
	for a := FairTree; a <= ClassicDepthOblivious; a++ {
		if strings.EqualFold(t, a.String()) {
			return a, nil
		}
	}
	return 0, fmt.Errorf("%w: Algorithm %q: want fair_tree, classic or depth_oblivious", ErrSyntax, s)
}

// MarshalText writes "fair_tree", "classic" or "depth_oblivious"; an
// unknown algorithm is an error.
func (a Algorithm) MarshalText() ([]byte, error) {
	if a > ClassicDepthOblivious {
		return nil, fmt.Errorf("%w: Algorithm(%d) has no name", ErrSyntax, uint8(a))
	}
	return []byte(a.String()), nil
}

// UnmarshalText reads what ParseAlgorithm accepts.
func (a *Algorithm) UnmarshalText(b []byte) error {
	v, err := ParseAlgorithm(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}
