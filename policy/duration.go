package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseDuration parses a Slurm time-limit string: "minutes",
// "minutes:seconds", "hours:minutes:seconds", "days-hours",
// "days-hours:minutes" or "days-hours:minutes:seconds" (sbatch -t and the
// MaxWall/MaxTime/GraceTime syntax). "UNLIMITED", "INFINITE" and "-1" (any
// case) return 0, which every policy duration field reads as "not set".
// Components after the first must be below their unit (seconds and minutes
// < 60, hours < 24 after days). Results above MaxLimitDuration wrap
// ErrTooLarge; malformed strings wrap ErrSyntax.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "unlimited", "infinite", "-1":
		return 0, nil
	case "":
		return 0, fmt.Errorf("%w: duration %q: empty", ErrSyntax, s)
	}
	bad := func(why string) (time.Duration, error) {
		return 0, fmt.Errorf("%w: duration %q: %s", ErrSyntax, s, why)
	}
	var days int64
	hasDays := false
	if d, rest, ok := strings.Cut(t, "-"); ok {
		n, err := durNum(d)
		if err != nil {
			return bad("days: " + err.Error())
		}
		days, t, hasDays = n, rest, true
	}
	parts := strings.Split(t, ":")
	if len(parts) > 3 {
		return bad("too many ':' fields")
	}
	nums := make([]int64, len(parts))
	for i, p := range parts {
		n, err := durNum(p)
		if err != nil {
			return bad(err.Error())
		}
		nums[i] = n
	}
	var h, m, sec int64
	switch {
	case hasDays && len(nums) == 1: // days-hours
		h = nums[0]
	case hasDays && len(nums) == 2: // days-hours:minutes
		h, m = nums[0], nums[1]
	case hasDays: // days-hours:minutes:seconds
		h, m, sec = nums[0], nums[1], nums[2]
	case len(nums) == 1: // minutes
		m = nums[0]
	case len(nums) == 2: // minutes:seconds
		m, sec = nums[0], nums[1]
	default: // hours:minutes:seconds
		h, m, sec = nums[0], nums[1], nums[2]
	}
	if sec >= 60 && (len(nums) > 1 || hasDays) {
		return bad("seconds must be below 60")
	}
	if m >= 60 && (len(nums) == 3 || hasDays) {
		return bad("minutes must be below 60")
	}
	if hasDays && h >= 24 {
		return bad("hours must be below 24 after days")
	}
	const limit = int64(MaxLimitDuration / time.Second)
	total := days
	for _, step := range []struct{ mul, add int64 }{{24, h}, {60, m}, {60, sec}} {
		if total > limit/step.mul {
			return 0, fmt.Errorf("%w: duration %q exceeds %v", ErrTooLarge, s, MaxLimitDuration)
		}
		total = total*step.mul + step.add
		if total > limit {
			return 0, fmt.Errorf("%w: duration %q exceeds %v", ErrTooLarge, s, MaxLimitDuration)
		}
	}
	return time.Duration(total) * time.Second, nil
}

func durNum(p string) (int64, error) {
	if p == "" || len(p) > 12 {
		return 0, fmt.Errorf("field %q: want 1 to 12 digits", p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return 0, fmt.Errorf("field %q: want digits", p)
		}
	}
	return strconv.ParseInt(p, 10, 64)
}

// FormatDuration writes d in Slurm's time format: "D-HH:MM:SS" when d is a
// day or more, else "HH:MM:SS"; fractions of a second are dropped and 0
// (unset) is written "UNLIMITED". ParseDuration reads it back.
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		return "UNLIMITED"
	}
	s := int64(d / time.Second)
	days, s := s/86400, s%86400
	h, s := s/3600, s%3600
	m, s := s/60, s%60
	if days > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, h, m, s)
	}
	return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
}
