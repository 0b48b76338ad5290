package gres

import (
	"fmt"
	"strconv"
)

// unitShift returns the power of 1024 of a size suffix (K=1 … P=5), or -1.
func unitShift(c byte) int {
	switch c {
	case 'k', 'K':
		return 1
	case 'm', 'M':
		return 2
	case 'g', 'G':
		return 3
	case 't', 'T':
		return 4
	case 'p', 'P':
		return 5
	}
	return -1
}

// cutUnit splits a non-empty s into what precedes a final K/M/G/T/P
// suffix (either case) and the suffix's shift; shift is 0 without one.
func cutUnit(s string) (digits string, shift int) {
	if sh := unitShift(s[len(s)-1]); sh >= 0 {
		return s[:len(s)-1], sh
	}
	return s, 0
}

// allDigits reports whether s holds only ASCII digits.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseNumber parses "16G" into its value 16 and suffix shift 3 (the
// power of 1024; 0 without a suffix). It fails on anything but ASCII
// digits followed by at most one K/M/G/T/P suffix (either case), and on a
// value (before the suffix applies) above MaxCount.
func parseNumber(s string) (n int64, shift int, err error) {
	if s == "" {
		return 0, 0, fmt.Errorf("%w: empty count", ErrInvalidTRES)
	}
	digits, shift := cutUnit(s)
	if digits == "" {
		return 0, 0, fmt.Errorf("%w: count %q has no digits", ErrInvalidTRES, s)
	}
	if !allDigits(digits) {
		return 0, 0, fmt.Errorf("%w: count %q: want a non-negative integer with an optional K, M, G, T or P suffix", ErrInvalidTRES, s)
	}
	for i := 0; i < len(digits); i++ {
		n = n*10 + int64(digits[i]-'0')
		if n > MaxCount {
			return 0, 0, fmt.Errorf("%w: count %q exceeds %d", ErrOverflow, s, MaxCount)
		}
	}
	return n, shift, nil
}

// parseCount parses a count with an optional binary suffix, as Slurm
// accepts for GRES and TRES counts: K, M, G, T and P multiply by 1024,
// 1024², … The result is in [0, MaxCount].
func parseCount(s string) (int64, error) {
	n, shift, err := parseNumber(s)
	if err != nil {
		return 0, err
	}
	if n > MaxCount>>(10*shift) {
		return 0, fmt.Errorf("%w: count %q exceeds %d", ErrOverflow, s, MaxCount)
	}
	return n << (10 * shift), nil
}

// parseMemMiB parses a memory size into MiB, Slurm's base unit for mem. A
// bare number is MiB; M, G, T, P multiply by 1, 1024, 1024², 1024³; K
// (KiB) is rounded up to the next whole MiB, as Slurm does for --mem.
func parseMemMiB(s string) (int64, error) {
	n, shift, err := parseNumber(s)
	if err != nil {
		return 0, err
	}
	switch shift {
	case 0, 2: // MiB
		return n, nil
	case 1: // KiB, rounded up
		return (n + 1023) / 1024, nil
	}
	sh := 10 * (shift - 2)
	if n > MaxCount>>sh {
		return 0, fmt.Errorf("%w: memory %q exceeds %d MiB", ErrOverflow, s, MaxCount)
	}
	return n << sh, nil
}

// appendMem appends a MiB count using the largest unit that divides it
// exactly: 16384 → "16G", 1536 → "1536M", 0 → "0M".
func appendMem(dst []byte, mib int64) []byte {
	const units = "MGTP"
	u := 0
	for u < len(units)-1 && mib != 0 && mib%1024 == 0 {
		mib /= 1024
		u++
	}
	dst = strconv.AppendInt(dst, mib, 10)
	return append(dst, units[u])
}
