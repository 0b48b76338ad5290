package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gres"
)

// DefaultMaxArraySize is Slurm's default MaxArraySize: array indices run
// from 0 to MaxArraySize−1.
const DefaultMaxArraySize = 1001

// MaxMaxArraySize bounds the MaxArraySize ParseArray accepts (Slurm's
// ceiling).
const MaxMaxArraySize = 4000001

// ArraySpec is a parsed --array value: a set of task indices and an
// optional throttle (the most tasks running at once).
type ArraySpec struct {
	indices  []int // ascending, unique
	Throttle int   // 0: unthrottled
}

// ParseArray parses sbatch --array syntax: comma-separated indices and
// ranges with an optional step ("0-15", "1,3,5-9", "0-15:4"), then an
// optional "%N" throttle ("0-15%4"). Duplicates collapse. Every index must
// be below maxArraySize (≤ 0 means DefaultMaxArraySize), so at most
// maxArraySize tasks result. Errors wrap ErrSyntax, or ErrTooLarge for an
// index past the bound, and name the element.
func ParseArray(s string, maxArraySize int) (ArraySpec, error) {
	if maxArraySize <= 0 {
		maxArraySize = DefaultMaxArraySize
	}
	if maxArraySize > MaxMaxArraySize {
		return ArraySpec{}, fmt.Errorf("%w: MaxArraySize %d exceeds %d", ErrTooLarge, maxArraySize, MaxMaxArraySize)
	}
	var a ArraySpec
	body := strings.TrimSpace(s)
	if i := strings.IndexByte(body, '%'); i >= 0 {
		th := body[i+1:]
		n, err := strconv.Atoi(th)
		if err != nil || n < 1 || strings.HasPrefix(th, "+") {
			return a, fmt.Errorf("%w: array %q: throttle %q must be a positive integer", ErrSyntax, s, th)
		}
		a.Throttle = n
		body = body[:i]
	}
	if body == "" {
		return a, fmt.Errorf("%w: array %q: no indices", ErrSyntax, s)
	}
	seen := make([]bool, maxArraySize)
	num := func(elem, x string) (int, error) {
		if x == "" || len(x) > 10 || strings.TrimLeft(x, "0123456789") != "" {
			return 0, fmt.Errorf("%w: array %q: element %q: %q is not an index", ErrSyntax, s, elem, x)
		}
		n, _ := strconv.Atoi(x)
		if n >= maxArraySize {
			return 0, fmt.Errorf("%w: array %q: index %d is not below MaxArraySize %d", ErrTooLarge, s, n, maxArraySize)
		}
		return n, nil
	}
	for elem := range strings.SplitSeq(body, ",") {
		elem = strings.TrimSpace(elem)
		rng, stepStr, hasStep := strings.Cut(elem, ":")
		lo, hiStr, isRange := strings.Cut(rng, "-")
		first, err := num(elem, lo)
		if err != nil {
			return ArraySpec{}, err
		}
		last, step := first, 1
		if isRange {
			if last, err = num(elem, hiStr); err != nil {
				return ArraySpec{}, err
			}
			if last < first {
				return ArraySpec{}, fmt.Errorf("%w: array %q: element %q: range runs backwards", ErrSyntax, s, elem)
			}
		}
		if hasStep {
			if !isRange {
				return ArraySpec{}, fmt.Errorf("%w: array %q: element %q: a step needs a range", ErrSyntax, s, elem)
			}
			st, err := strconv.Atoi(stepStr)
			if err != nil || st < 1 || strings.HasPrefix(stepStr, "+") {
				return ArraySpec{}, fmt.Errorf("%w: array %q: element %q: step %q must be a positive integer", ErrSyntax, s, elem, stepStr)
			}
			step = st
		}
		for i := first; i <= last; i += step {
			seen[i] = true
		}
	}
	for i, ok := range seen {
		if ok {
			a.indices = append(a.indices, i)
		}
	}
	return a, nil
}

// Count returns the number of tasks.
func (a ArraySpec) Count() int { return len(a.indices) }

// Indices returns the task indices in ascending order (a copy).
func (a ArraySpec) Indices() []int { return slices.Clone(a.indices) }

// Has reports whether i is a task index.
func (a ArraySpec) Has(i int) bool {
	_, ok := slices.BinarySearch(a.indices, i)
	return ok
}

// String writes the canonical form: runs of consecutive indices as
// ranges, then "%N" when throttled ("0-3,8,10-11%2").
func (a ArraySpec) String() string {
	s := gres.FormatIDList(a.indices)
	if a.Throttle > 0 {
		s += "%" + strconv.Itoa(a.Throttle)
	}
	return s
}

// ThrottleBlocker returns the Blocker for a pending task of the array when
// running tasks are already running: ReasonJobArrayTaskLimit at or above
// the throttle, else the zero Blocker.
func (a ArraySpec) ThrottleBlocker(running int) Blocker {
	if a.Throttle == 0 || running < a.Throttle {
		return Blocker{}
	}
	return Blocker{Constraint: Constraint{Reason: ReasonJobArrayTaskLimit, Limit: "ArrayTaskThrottle", Level: LevelArray,
		Unit: UnitJobs, Value: int64(a.Throttle)}, Holder: "the array", Usage: int64(running), Request: 1}
}
