package accounting

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// DecayMode selects how usage decays with PriorityDecayHalfLife.
type DecayMode uint8

const (
	// DecaySlurm reproduces Slurm's decay: a per-second factor
	// df = 1 - 0.693/halflife (a first-order approximation of 2^(-1/hl)),
	// applied in steps at every PriorityCalcPeriod boundary (df^Δ for the Δ
	// seconds since the previous boundary), so usage is constant between
	// boundaries; a freshly charged chunk of Δ seconds is itself weighted by
	// df^Δ, as Slurm's _apply_new_usage does. Boundaries are multiples of
	// CalcPeriod since the Unix epoch (Slurm anchors them at the decay
	// thread's last run). This is the default.
	DecaySlurm DecayMode = iota
	// DecayExact decays continuously by 2^(-Δ/halflife), and weights a
	// chunk charged over Δ seconds by the exact integral
	// (1-2^(-Δ/hl))·hl/(Δ·ln 2). Results do not depend on how often the
	// caller charges or reads.
	//
	// The difference from DecaySlurm is small: 0.693 vs ln 2 = 0.693147
	// makes df^hl = 0.50007 instead of 0.5 (≈0.015% per half-life, so two
	// half-lives give 0.25007 instead of 0.25), (1-x)^Δ vs e^(-xΔ) adds a
	// relative error of about x²Δ/2 (4e-7 per half-life at 7 days), and
	// DecaySlurm's step shape lags by up to one CalcPeriod.
	DecayExact
)

// String returns "slurm" or "exact".
func (m DecayMode) String() string {
	switch m {
	case DecaySlurm:
		return "slurm"
	case DecayExact:
		return "exact"
	}
	return fmt.Sprintf("DecayMode(%d)", uint8(m))
}

// ResetPeriod is Slurm's PriorityUsageResetPeriod: when all usage is
// cleared.
type ResetPeriod uint8

// Reset periods. Boundaries are calendar instants in Config.Location.
const (
	ResetNone      ResetPeriod = iota // never (Slurm's default)
	ResetNow                          // NOW: no calendar reset; call Tx.ResetUsage(now) at start-up as slurmctld does
	ResetDaily                        // every day at 00:00
	ResetWeekly                       // every Sunday at 00:00
	ResetMonthly                      // the first of every month at 00:00
	ResetQuarterly                    // 1 January, April, July, October at 00:00
	ResetYearly                       // 1 January at 00:00
	numResetPeriods
)

var resetNames = [...]string{"NONE", "NOW", "DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY"}

// String returns Slurm's spelling ("NONE", "DAILY", …).
func (p ResetPeriod) String() string {
	if p < numResetPeriods {
		return resetNames[p]
	}
	return fmt.Sprintf("ResetPeriod(%d)", uint8(p))
}

// ParseResetPeriod parses a PriorityUsageResetPeriod value, case-insensitive.
func ParseResetPeriod(s string) (ResetPeriod, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	for i, n := range resetNames {
		if u == n {
			return ResetPeriod(i), nil
		}
	}
	return 0, fmt.Errorf("%w: PriorityUsageResetPeriod %q (want NONE, NOW, DAILY, WEEKLY, MONTHLY, QUARTERLY or YEARLY)", ErrInvalid, s)
}

// LastBoundary returns the latest reset boundary at or before t in loc
// (UTC when nil), and false for NONE and NOW, which have no calendar
// boundary.
func (p ResetPeriod) LastBoundary(t time.Time, loc *time.Location) (time.Time, bool) {
	if loc == nil {
		loc = time.UTC
	}
	lt := t.In(loc)
	y, m, d := lt.Date()
	var b time.Time
	switch p {
	case ResetDaily:
		b = time.Date(y, m, d, 0, 0, 0, 0, loc)
	case ResetWeekly:
		b = time.Date(y, m, d-int(lt.Weekday()), 0, 0, 0, 0, loc)
	case ResetMonthly:
		b = time.Date(y, m, 1, 0, 0, 0, 0, loc)
	case ResetQuarterly:
		b = time.Date(y, m-(m-1)%3, 1, 0, 0, 0, 0, loc)
	case ResetYearly:
		b = time.Date(y, 1, 1, 0, 0, 0, 0, loc)
	default:
		return time.Time{}, false
	}
	if b.After(t) { // a DST gap can move local midnight past t
		b = b.Add(-time.Hour)
	}
	return b, true
}

// NextBoundary returns the first reset boundary strictly after t, and
// false for NONE and NOW.
func (p ResetPeriod) NextBoundary(t time.Time, loc *time.Location) (time.Time, bool) {
	if loc == nil {
		loc = time.UTC
	}
	b, ok := p.LastBoundary(t, loc)
	if !ok {
		return time.Time{}, false
	}
	lb := b.In(loc)
	y, m, d := lb.Date()
	var n time.Time
	switch p {
	case ResetDaily:
		n = time.Date(y, m, d+1, 0, 0, 0, 0, loc)
	case ResetWeekly:
		n = time.Date(y, m, d+7, 0, 0, 0, 0, loc)
	case ResetMonthly:
		n = time.Date(y, m+1, 1, 0, 0, 0, 0, loc)
	case ResetQuarterly:
		n = time.Date(y, m+3, 1, 0, 0, 0, 0, loc)
	case ResetYearly:
		n = time.Date(y+1, 1, 1, 0, 0, 0, 0, loc)
	}
	return n, true
}

// Config is the usage policy of a ledger. Its zero value is Slurm's
// default: a 7-day half-life with Slurm's decay, a 5-minute calc period,
// no reset, UTC, and (Sluice's default, unlike Slurm) undecayed budgets.
type Config struct {
	// HalfLife is PriorityDecayHalfLife. 0 means 7 days.
	HalfLife time.Duration
	// NoDecay turns decay off (Slurm's PriorityDecayHalfLife=0); then
	// usage only ever grows until a reset.
	NoDecay bool
	// Decay selects Slurm's per-interval approximation (default) or the
	// exact exponential.
	Decay DecayMode
	// CalcPeriod is PriorityCalcPeriod, the step of DecaySlurm. 0 means 5
	// minutes.
	CalcPeriod time.Duration
	// ResetPeriod is PriorityUsageResetPeriod (default NONE).
	ResetPeriod ResetPeriod
	// DecayBudgets makes the budget usage that GrpTRESMins is checked
	// against decay like fair-share usage, as Slurm does (a capped project
	// then silently regains budget as its usage decays). By default it does
	// not decay: budgets are consumed until ResetPeriod (or ResetUsage)
	// clears them.
	DecayBudgets bool
	// Location is the time zone of rollup buckets (hours, days, months) and
	// reset boundaries. nil means UTC. A ledger remembers the location it
	// was created with and refuses to open with another.
	Location *time.Location
}

// DefaultHalfLife is Slurm's default PriorityDecayHalfLife (7 days).
const DefaultHalfLife = 7 * 24 * time.Hour

// DefaultCalcPeriod is Slurm's default PriorityCalcPeriod (5 minutes).
const DefaultCalcPeriod = 5 * time.Minute

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.HalfLife < 0 {
		return fmt.Errorf("%w: HalfLife %v is negative", ErrInvalidConfig, c.HalfLife)
	}
	if c.HalfLife != 0 && c.HalfLife < time.Second {
		return fmt.Errorf("%w: HalfLife %v is under one second", ErrInvalidConfig, c.HalfLife)
	}
	if c.CalcPeriod < 0 || c.CalcPeriod != 0 && c.CalcPeriod < time.Second {
		return fmt.Errorf("%w: CalcPeriod %v must be 0 or at least 1s", ErrInvalidConfig, c.CalcPeriod)
	}
	if c.Decay > DecayExact {
		return fmt.Errorf("%w: Decay mode %d", ErrInvalidConfig, c.Decay)
	}
	if c.ResetPeriod >= numResetPeriods {
		return fmt.Errorf("%w: ResetPeriod %d", ErrInvalidConfig, c.ResetPeriod)
	}
	return nil
}

func (c Config) halfLifeSeconds() float64 {
	if c.HalfLife == 0 {
		return DefaultHalfLife.Seconds()
	}
	return c.HalfLife.Seconds()
}

func (c Config) calcPeriodSeconds() int64 {
	if c.CalcPeriod == 0 {
		return int64(DefaultCalcPeriod / time.Second)
	}
	return int64(c.CalcPeriod / time.Second)
}

func (c Config) location() *time.Location {
	if c.Location == nil {
		return time.UTC
	}
	return c.Location
}

// SlurmDecayFactor returns Slurm's per-second decay factor
// df = 1 - 0.693/halflife_seconds for c (1 when decay is off).
func (c Config) SlurmDecayFactor() float64 {
	if c.NoDecay {
		return 1
	}
	return 1 - 0.693/c.halfLifeSeconds()
}

// DecayBetween returns the factor by which usage recorded at time a has
// decayed by time b (1 when b ≤ a or decay is off).
func (c Config) DecayBetween(a, b time.Time) float64 {
	if c.NoDecay || !b.After(a) {
		return 1
	}
	switch c.Decay {
	case DecayExact:
		return math.Exp2(-b.Sub(a).Seconds() / c.halfLifeSeconds())
	default:
		p := c.calcPeriodSeconds()
		ta, tb := floorDiv(a.Unix(), p)*p, floorDiv(b.Unix(), p)*p
		if tb <= ta {
			return 1
		}
		return max(math.Pow(c.SlurmDecayFactor(), float64(tb-ta)), math.SmallestNonzeroFloat64)
	}
}

// chunkWeight is the weight of usage accrued uniformly over d seconds and
// valued at the end of the interval: Slurm's d·df^d, or the exact integral.
func (c Config) chunkWeight(d float64) float64 {
	if c.NoDecay || d <= 0 {
		return max(d, 0)
	}
	if c.Decay == DecayExact {
		hl := c.halfLifeSeconds()
		return -math.Expm1(-d*math.Ln2/hl) * hl / math.Ln2
	}
	return d * math.Pow(c.SlurmDecayFactor(), d)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) != (b < 0) {
		q--
	}
	return q
}
