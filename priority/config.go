package priority

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gres"
)

// Limits taken from Slurm.
const (
	// DefaultMaxAge is PriorityMaxAge's default (7-0, seven days).
	DefaultMaxAge = 7 * 24 * time.Hour
	// MaxNice is the largest |nice| and |site factor| Slurm accepts
	// (NICE_OFFSET - 3 = 2147483645).
	MaxNice = 2147483645
	// MaxPartitionJobFactor is the largest partition PriorityJobFactor (65533).
	MaxPartitionJobFactor = 65533
)

// Weights are the integer PriorityWeight* parameters of slurm.conf. A zero
// weight (Slurm's default for all of them) disables that factor: its
// normalised value is not even computed and shows as 0, as in sprio -n.
type Weights struct {
	Age       uint32 // PriorityWeightAge
	Assoc     uint32 // PriorityWeightAssoc
	FairShare uint32 // PriorityWeightFairshare
	JobSize   uint32 // PriorityWeightJobSize
	Partition uint32 // PriorityWeightPartition
	QOS       uint32 // PriorityWeightQOS
}

// SiteFactor is the hook through which an embedder adds its own priority
// term without forking, like Slurm's site_factor plugins. It returns the
// job's site factor, which replaces Job.Site (return j.Site to keep the
// administrator's value, or add to it). It must be a pure function of its
// arguments (no clock, no I/O) so priorities stay deterministic, and its
// result must lie in [-MaxNice, MaxNice]; anything else makes Compute fail.
type SiteFactor interface {
	SiteFactor(now time.Time, j *Job) int64
}

// SiteFactorFunc adapts a function to the SiteFactor interface.
type SiteFactorFunc func(now time.Time, j *Job) int64

// SiteFactor calls f.
func (f SiteFactorFunc) SiteFactor(now time.Time, j *Job) int64 { return f(now, j) }

// Config is the multifactor priority configuration: the PriorityWeight*,
// PriorityWeightTRES, PriorityMaxAge, PriorityFavorSmall and PriorityFlags
// parameters of slurm.conf. The zero value is Slurm's default (all weights
// 0, seven-day max age, favour large jobs, no flags).
type Config struct {
	// Weights are the PriorityWeight* integers.
	Weights Weights
	// TRESWeights is PriorityWeightTRES: a weight per TRES name as the
	// registry spells it ("cpu", "mem", "gres/gpu", "license/matlab").
	// Weights are floating point and may be negative, as in Slurm; the
	// billing TRES cannot be weighted. See ParseTRESWeights.
	TRESWeights map[string]float64
	// Registry resolves TRESWeights names; required when TRESWeights is
	// not empty.
	Registry *gres.Registry
	// MaxAge is PriorityMaxAge, counted in whole seconds; 0 means 7 days.
	MaxAge time.Duration
	// FavorSmall is PriorityFavorSmall.
	FavorSmall bool
	// Flags is PriorityFlags.
	Flags Flags
	// Site is an optional SiteFactor hook (beyond Slurm; nil = Job.Site).
	Site SiteFactor
}

// maxAgeSeconds returns the effective PriorityMaxAge in seconds.
func (c *Config) maxAgeSeconds() int64 {
	if c.MaxAge == 0 {
		return int64(DefaultMaxAge / time.Second)
	}
	return int64(c.MaxAge / time.Second)
}

// Validate checks every field and resolves the TRES weights. Errors wrap
// ErrInvalidConfig, or gres.ErrUnknownTRES for a TRES the registry lacks.
func (c Config) Validate() error {
	_, err := c.resolveTRES()
	return err
}

// Recalculate reports whether a job's priority should be recomputed on a
// PriorityCalcPeriod pass: always for pending jobs, and for running or
// suspended jobs only with CalculateRunning. Held jobs (priority 0) are
// never recomputed; the caller leaves them out.
func (c Config) Recalculate(running bool) bool {
	return !running || c.Flags&CalculateRunning != 0
}

// tresWeight is one non-zero resolved TRES weight.
type tresWeight struct {
	id gres.ID
	w  float64
}

func (c *Config) resolveTRES() ([]tresWeight, error) {
	if c.MaxAge < 0 {
		return nil, fmt.Errorf("%w: MaxAge %v is negative", ErrInvalidConfig, c.MaxAge)
	}
	if c.MaxAge != 0 && (c.MaxAge < time.Second || c.MaxAge/time.Second > math.MaxUint32) {
		return nil, fmt.Errorf("%w: MaxAge %v: want 1s to %ds", ErrInvalidConfig, c.MaxAge, uint32(math.MaxUint32))
	}
	if rest := c.Flags &^ allFlags; rest != 0 {
		return nil, fmt.Errorf("%w: Flags: unknown bits 0x%x", ErrInvalidConfig, uint32(rest))
	}
	if len(c.TRESWeights) == 0 {
		return nil, nil
	}
	if c.Registry == nil {
		return nil, fmt.Errorf("%w: TRESWeights set but Registry is nil", ErrInvalidConfig)
	}
	names := make([]string, 0, len(c.TRESWeights))
	for n := range c.TRESWeights {
		names = append(names, n)
	}
	sort.Strings(names)
	seen := make(map[gres.ID]string, len(names))
	out := make([]tresWeight, 0, len(names))
	for _, n := range names {
		w := c.TRESWeights[n]
		id, ok := c.Registry.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("%w: TRESWeights[%q]: not in the registry", gres.ErrUnknownTRES, n)
		}
		if id == gres.Billing {
			return nil, fmt.Errorf("%w: TRESWeights[%q]: the billing TRES cannot be used in priority", ErrInvalidConfig, n)
		}
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("%w: TRESWeights[%q] = %v: want a finite number", ErrInvalidConfig, n, w)
		}
		if prev, dup := seen[id]; dup {
			return nil, fmt.Errorf("%w: TRESWeights[%q] and [%q] name the same TRES", ErrInvalidConfig, prev, n)
		}
		seen[id] = n
		if w != 0 {
			out = append(out, tresWeight{id: id, w: w})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// Cluster holds the cluster-wide facts the normalisations divide by. The
// caller derives them from its partitions, QOS and associations.
type Cluster struct {
	// Nodes is the number of active nodes (Slurm's active_node_record_count).
	Nodes uint32
	// CPUs is the number of CPUs in the cluster (Slurm's cluster_cpus).
	CPUs uint32
	// MaxPartitionJobFactor is the largest PriorityJobFactor of any
	// partition. Slurm never normalises by less than 1, nor does Sluice.
	MaxPartitionJobFactor uint16
	// MaxQOSPriority is the largest QOS priority (0: the QOS factor is 0).
	MaxQOSPriority uint32
	// MaxAssocPriority is the largest association priority (0: the
	// association factor is 0).
	MaxAssocPriority uint32
}

// Validate checks the cluster facts; errors wrap ErrInvalidConfig.
func (c Cluster) Validate() error {
	if c.MaxPartitionJobFactor > MaxPartitionJobFactor {
		return fmt.Errorf("%w: Cluster.MaxPartitionJobFactor %d > %d", ErrInvalidConfig, c.MaxPartitionJobFactor, MaxPartitionJobFactor)
	}
	return nil
}

// ParseTRESWeights parses a PriorityWeightTRES value such as
// "CPU=1000,Mem=2000,GRES/gpu=3000" into a map for Config.TRESWeights.
// Names are lower-cased (the registry's spelling); a repeated name keeps the
// last value, as Slurm does. Weights are decimal floating-point numbers,
// optionally negative; a memory weight may carry a unit suffix M, G, T or P
// (per MiB, GiB, TiB, PiB; Slurm's base unit is MiB, so "mem=0.25G" is
// 0.25/1024 per MiB). Errors wrap ErrSyntax. Whether the names exist is
// checked later, by Config.Validate.
func ParseTRESWeights(s string) (map[string]float64, error) {
	out := map[string]float64{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for item := range strings.SplitSeq(s, ",") {
		name, val, ok := strings.Cut(item, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		val = strings.TrimSpace(val)
		if !ok || name == "" || val == "" {
			return nil, fmt.Errorf("%w: PriorityWeightTRES item %q: want NAME=WEIGHT", ErrSyntax, item)
		}
		div := 1.0
		if last := val[len(val)-1]; (last >= 'a' && last <= 'z') || (last >= 'A' && last <= 'Z') {
			if name != "mem" {
				return nil, fmt.Errorf("%w: PriorityWeightTRES item %q: unit suffix only allowed for mem", ErrSyntax, item)
			}
			switch last {
			case 'M', 'm':
			case 'G', 'g':
				div = 1024
			case 'T', 't':
				div = 1024 * 1024
			case 'P', 'p':
				div = 1024 * 1024 * 1024
			default:
				return nil, fmt.Errorf("%w: PriorityWeightTRES item %q: unknown unit %q", ErrSyntax, item, last)
			}
			val = val[:len(val)-1]
		}
		w, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(w) || math.IsInf(w, 0) || strings.ContainsAny(val, "xXpP_") {
			return nil, fmt.Errorf("%w: PriorityWeightTRES item %q: bad weight %q", ErrSyntax, item, val)
		}
		out[name] = w / div
	}
	return out, nil
}

// FormatTRESWeights is the inverse of ParseTRESWeights for display (sprio
// -w): "name=weight" pairs sorted by name, weights in shortest form.
func FormatTRESWeights(w map[string]float64) string {
	names := make([]string, 0, len(w))
	for n := range w {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(strconv.FormatFloat(w[n], 'g', -1, 64))
	}
	return b.String()
}
