package priority

import (
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/gres"
)

// Job holds the facts about one pending (or, with CalculateRunning,
// running) job that its priority depends on. The caller fills it from its
// job, partition, QOS and association records; the engine reads nothing
// else. For a job submitted to several partitions or QOS, compute one Job
// per (partition, QOS) pair, as Slurm does, and set MultiPartition.
type Job struct {
	// ID identifies the job in errors and in the sprio table.
	ID uint64
	// Submit is the submit time. With AccrueAlways, age runs from here.
	Submit time.Time
	// AccrueStart is when the job began accruing age: the time it became
	// eligible (not held, begin time reached, dependencies satisfied,
	// within the accrue limits), Slurm's accrue_time. The zero time means
	// it is not accruing and gets no age. Ignored with AccrueAlways.
	AccrueStart time.Time
	// Nodes is the job's minimum node count (0 is read as 1).
	Nodes uint32
	// CPUs is the job's CPU count: allocated CPUs once known, else the
	// requested maximum, else the requested minimum (Slurm's order); 0 when
	// unknown, which leaves CPUs out of the job size factor.
	CPUs uint32
	// TimeLimit is the job's time limit (0: not set, use PartitionMaxTime).
	// It counts in whole minutes, rounded up, as Slurm stores it.
	TimeLimit time.Duration
	// PartitionMaxTime is the partition's MaxTime (0: unlimited).
	PartitionMaxTime time.Duration
	// PartitionJobFactor is the partition's PriorityJobFactor.
	PartitionJobFactor uint16
	// QOSPriority is the QOS's priority.
	QOSPriority uint32
	// AssocPriority is the association's priority (already inherited).
	AssocPriority uint32
	// FairShare is the association's fair-share factor in [0,1], from
	// Tree.Factor.
	FairShare float64
	// TRES holds the allocated TRES counts when the job has an allocation,
	// else the requested counts (Slurm's rule for TRES factors).
	TRES gres.Vector
	// PartitionTRES holds the partition's TRES totals, the TRES factors'
	// denominators. For global TRES (licenses, burst buffers) put the whole
	// system's count here, as Slurm does.
	PartitionTRES gres.Vector
	// Nice is the job's nice value in [-MaxNice, MaxNice]; it is subtracted.
	Nice int64
	// Site is the site factor set by an administrator (scontrol) in
	// [-MaxNice, MaxNice]; a Config.Site hook replaces it.
	Site int64
	// PrevPriority is the job's current priority, kept under IncrOnly when
	// the new value is not larger.
	PrevPriority uint32
	// AdminPriority, when non-zero, is a priority an administrator set
	// directly (scontrol update priority=); it bypasses the formula and all
	// factors are reported as zero (Slurm's direct_set_prio).
	AdminPriority uint32
	// MultiPartition marks one (partition, QOS) pair of a job submitted to
	// several partitions or QOS. Slurm then sums the same terms in a
	// different order (partition term last), which can change the last bit;
	// set it to reproduce those values exactly.
	MultiPartition bool
}

// Factors holds one value per multifactor factor: the normalised factor
// (usually in [0,1]; raw values under the NO_NORMAL_* flags) or its weighted
// value (factor × weight, what enters the sum).
type Factors struct {
	Age       float64 // time eligible, against PriorityMaxAge
	Assoc     float64 // association priority
	FairShare float64 // fair-share factor
	JobSize   float64 // nodes and CPUs (or per minute of time limit)
	Partition float64 // partition PriorityJobFactor
	QOS       float64 // QOS priority
}

// TRESFactor is the factor of one weighted TRES.
type TRESFactor struct {
	ID       gres.ID // the TRES
	Factor   float64 // count / partition total (or raw count with NoNormalTRES)
	Weighted float64 // Factor × weight
}

// Breakdown is the explanation of one job's priority: every factor,
// normalised and weighted, the weights, and the total — what sprio and
// sprio -n display. It is part of the result, not a debug print.
type Breakdown struct {
	// Priority is the job's priority: Computed, or PrevPriority under
	// IncrOnly when that is not smaller, or AdminPriority. Always ≥ 1.
	Priority uint32
	// Computed is the formula's result: Sum clamped to [1, 2^32-1] and
	// truncated toward zero, as Slurm does.
	Computed uint32
	// Sum is the unclamped Σ weight×factor + Site − Nice.
	Sum float64
	// Admin reports that AdminPriority bypassed the formula.
	Admin bool
	// Factors are the normalised factors (sprio -n).
	Factors Factors
	// Weighted are the weighted factors (sprio).
	Weighted Factors
	// TRES holds one entry per TRES with a non-zero weight, in ID order.
	TRES []TRESFactor
	// TRESSum is Σ of TRES[i].Weighted.
	TRESSum float64
	// Site is the site factor used (after the SiteFactor hook).
	Site int64
	// Nice is the nice value used.
	Nice int64
	// Weights are the configured weights (sprio -w).
	Weights Weights
}

// Engine computes multifactor priorities. It is immutable after NewEngine
// and safe for concurrent use (a SiteFactor hook must be too). Build a new
// Engine when the configuration or the cluster facts change; it is cheap.
type Engine struct {
	cfg    Config
	cl     Cluster
	maxAge int64
	tres   []tresWeight
	maxP   float64 // effective partition normaliser (≥ 1)
}

// NewEngine validates cfg and cl and returns an engine.
func NewEngine(cfg Config, cl Cluster) (*Engine, error) {
	tw, err := cfg.resolveTRES()
	if err != nil {
		return nil, err
	}
	if err := cl.Validate(); err != nil {
		return nil, err
	}
	return &Engine{
		cfg:    cfg,
		cl:     cl,
		maxAge: cfg.maxAgeSeconds(),
		tres:   tw,
		maxP:   float64(max(cl.MaxPartitionJobFactor, 1)),
	}, nil
}

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// Cluster returns the engine's cluster facts.
func (e *Engine) Cluster() Cluster { return e.cl }

// Compute returns the priority breakdown of j at time now.
func (e *Engine) Compute(now time.Time, j *Job) (Breakdown, error) {
	var b Breakdown
	err := e.ComputeInto(now, j, &b)
	return b, err
}

// ComputeAll computes the breakdown of every job into out, which must have
// the same length as jobs. TRES slices already in out are reused when they
// are large enough, so a second call with the same out does not allocate.
// On error (naming the job's index and ID) out is partially written.
func (e *Engine) ComputeAll(now time.Time, jobs []Job, out []Breakdown) error {
	if len(out) != len(jobs) {
		return fmt.Errorf("%w: ComputeAll: %d jobs but %d breakdowns", ErrInvalidJob, len(jobs), len(out))
	}
	k := len(e.tres)
	var slab []TRESFactor
	for i := range jobs {
		if k > 0 && cap(out[i].TRES) < k {
			if len(slab) < k {
				slab = make([]TRESFactor, k*(len(jobs)-i))
			}
			out[i].TRES = slab[:0:k]
			slab = slab[k:]
		}
		if err := e.ComputeInto(now, &jobs[i], &out[i]); err != nil {
			return fmt.Errorf("jobs[%d]: %w", i, err)
		}
	}
	return nil
}

// ComputeInto is Compute writing into b, reusing b.TRES's storage.
//
// The arithmetic follows Slurm's priority/multifactor plugin step by step
// (set_priority_factors and _get_priority_internal), in float64, so the
// result matches Slurm's bit for bit when the inputs do:
//
//   - age = min(1, (now − AccrueStart)/PriorityMaxAge) in whole seconds;
//   - association = AssocPriority / Cluster.MaxAssocPriority;
//   - fair-share = Job.FairShare;
//   - job size = (n/N + c/C)/2 (favour large), ((N−n)/N + (C−c)/C)/2
//     (FavorSmall), or max(n·C/N, c)/minutes/C, inverted when favouring
//     small (SmallRelativeToTime); n/N alone when c is 0; clamped to [0,1];
//   - partition = PriorityJobFactor / max(1, Cluster.MaxPartitionJobFactor);
//   - QOS = QOSPriority / Cluster.MaxQOSPriority;
//   - TRES[i] = count / partition total;
//
// each computed only when its weight is non-zero (and, for partition and
// QOS, when the job's value is non-zero). Then
//
//	sum = Σ weight×factor + Σ TRES weight×factor + Site − Nice
//
// in that order, clamped to ≥ 1 (0 means held) and ≤ 2^32−1, and truncated.
func (e *Engine) ComputeInto(now time.Time, j *Job, b *Breakdown) error {
	tres := b.TRES[:0]
	*b = Breakdown{Weights: e.cfg.Weights, TRES: tres}
	if err := e.checkJob(j); err != nil {
		return err
	}
	site := j.Site
	if e.cfg.Site != nil {
		site = e.cfg.Site.SiteFactor(now, j)
		if site < -MaxNice || site > MaxNice {
			return fmt.Errorf("%w: job %d: SiteFactor hook returned %d, outside ±%d", ErrInvalidJob, j.ID, site, MaxNice)
		}
	}
	b.Site, b.Nice = site, j.Nice
	if j.AdminPriority > 0 {
		b.Admin = true
		b.Priority, b.Computed, b.Sum = j.AdminPriority, j.AdminPriority, float64(j.AdminPriority)
		return nil
	}

	w := &e.cfg.Weights
	fl := e.cfg.Flags
	f := &b.Factors

	if w.Age != 0 {
		start := j.AccrueStart
		if fl&AccrueAlways != 0 {
			start = j.Submit
		}
		if !start.IsZero() {
			var diff int64
			if d := now.Unix() - start.Unix(); d > 0 {
				diff = min(d, math.MaxUint32)
			}
			if diff < e.maxAge {
				f.Age = float64(diff) / float64(e.maxAge)
			} else {
				f.Age = 1
			}
		}
	}
	if w.FairShare != 0 {
		f.FairShare = j.FairShare
	}
	if w.JobSize != 0 && e.cl.Nodes != 0 && e.cl.CPUs != 0 {
		f.JobSize = e.jobSize(j)
	}
	if j.PartitionJobFactor != 0 && w.Partition != 0 {
		if fl&NoNormalPart != 0 {
			f.Partition = float64(j.PartitionJobFactor)
		} else {
			f.Partition = float64(j.PartitionJobFactor) / e.maxP
		}
	}
	if w.Assoc != 0 {
		switch {
		case fl&NoNormalAssoc != 0:
			f.Assoc = float64(j.AssocPriority)
		case e.cl.MaxAssocPriority != 0:
			f.Assoc = float64(j.AssocPriority) / float64(e.cl.MaxAssocPriority)
		}
	}
	if j.QOSPriority != 0 && w.QOS != 0 {
		switch {
		case fl&NoNormalQOS != 0:
			f.QOS = float64(j.QOSPriority)
		case e.cl.MaxQOSPriority != 0:
			f.QOS = float64(j.QOSPriority) / float64(e.cl.MaxQOSPriority)
		}
	}

	// Explicit float64 conversions forbid fused multiply-adds, so every
	// product is rounded exactly as in Slurm's C code.
	wf := &b.Weighted
	wf.Age = float64(f.Age * float64(w.Age))
	wf.Assoc = float64(f.Assoc * float64(w.Assoc))
	wf.FairShare = float64(f.FairShare * float64(w.FairShare))
	wf.JobSize = float64(f.JobSize * float64(w.JobSize))
	wf.Partition = float64(f.Partition * float64(w.Partition))
	wf.QOS = float64(f.QOS * float64(w.QOS))

	var tresSum float64
	for _, tw := range e.tres {
		v := j.TRES.At(tw.id)
		var tf float64
		if fl&NoNormalTRES != 0 {
			tf = float64(v)
		} else if tot := j.PartitionTRES.At(tw.id); v != 0 && tot != 0 {
			tf = float64(v) / float64(tot)
		}
		wv := float64(tf * tw.w)
		tresSum += wv
		b.TRES = append(b.TRES, TRESFactor{ID: tw.id, Factor: tf, Weighted: wv})
	}
	b.TRESSum = tresSum

	var sum float64
	if j.MultiPartition {
		sum = wf.Partition + (wf.Age + wf.Assoc + wf.FairShare + wf.JobSize + wf.QOS + tresSum +
			float64(site) - float64(j.Nice))
	} else {
		sum = wf.Age + wf.Assoc + wf.FairShare + wf.JobSize + wf.Partition + wf.QOS + tresSum +
			float64(site) - float64(j.Nice)
	}
	b.Sum = sum
	b.Computed = ClampPriority(sum)
	b.Priority = b.Computed
	if fl&IncrOnly != 0 && j.PrevPriority >= b.Computed {
		b.Priority = j.PrevPriority
	}
	return nil
}

// ClampPriority turns a weighted factor sum into a job priority as Slurm
// does, and as Breakdown.Computed holds it: clamped to [1, 2^32-1] (NaN
// gives 1) and truncated. Callers recomputing a priority from a changed
// factor (what-if explanations) use it to stay exact.
func ClampPriority(sum float64) uint32 {
	if !(sum >= 1) { // also catches NaN
		return 1
	}
	if sum >= 1<<32 {
		return math.MaxUint32
	}
	return uint32(sum)
}

// jobSize returns the job size factor (weight and cluster checked).
func (e *Engine) jobSize(j *Job) float64 {
	nodes := max(j.Nodes, 1)
	N, C := e.cl.Nodes, e.cl.CPUs
	n, c := float64(nodes), j.CPUs
	var js float64
	switch {
	case e.cfg.Flags&SmallRelativeToTime != 0:
		js = float64(n * float64(C) / float64(N))
		if float64(c) > js {
			js = float64(c)
		}
		js /= float64(timeLimitMinutes(j))
		js /= float64(C)
		if e.cfg.FavorSmall {
			js = 1 - js
		}
	case e.cfg.FavorSmall:
		if N > nodes {
			js = float64(N-nodes) / float64(N)
		}
		if c != 0 {
			// Slurm subtracts in uint32 here; a job asking for more CPUs
			// than the cluster has wraps around and clamps to 1 below.
			js += float64(C-c) / float64(C)
			js /= 2
		}
	default:
		js = n / float64(N)
		if c != 0 {
			js += float64(c) / float64(C)
			js /= 2
		}
	}
	if js < 0 {
		return 0
	}
	if js > 1 {
		return 1
	}
	return js
}

// timeLimitMinutes returns the job's time limit in whole minutes, rounded
// up: the job's own, else the partition's, else Slurm's INFINITE.
func timeLimitMinutes(j *Job) uint32 {
	d := j.TimeLimit
	if d == 0 {
		d = j.PartitionMaxTime
	}
	if d == 0 {
		return math.MaxUint32
	}
	m := (d + time.Minute - 1) / time.Minute
	if m > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(m)
}

func (e *Engine) checkJob(j *Job) error {
	switch {
	case math.IsNaN(j.FairShare) || j.FairShare < 0 || j.FairShare > 1:
		return fmt.Errorf("%w: job %d: FairShare %v outside [0,1]", ErrInvalidJob, j.ID, j.FairShare)
	case j.Nice < -MaxNice || j.Nice > MaxNice:
		return fmt.Errorf("%w: job %d: Nice %d outside ±%d", ErrInvalidJob, j.ID, j.Nice, MaxNice)
	case j.Site < -MaxNice || j.Site > MaxNice:
		return fmt.Errorf("%w: job %d: Site %d outside ±%d", ErrInvalidJob, j.ID, j.Site, MaxNice)
	case j.TimeLimit < 0:
		return fmt.Errorf("%w: job %d: TimeLimit %v is negative", ErrInvalidJob, j.ID, j.TimeLimit)
	case j.PartitionMaxTime < 0:
		return fmt.Errorf("%w: job %d: PartitionMaxTime %v is negative", ErrInvalidJob, j.ID, j.PartitionMaxTime)
	case j.PartitionJobFactor > MaxPartitionJobFactor:
		return fmt.Errorf("%w: job %d: PartitionJobFactor %d > %d", ErrInvalidJob, j.ID, j.PartitionJobFactor, MaxPartitionJobFactor)
	}
	fl := e.cfg.Flags
	if fl&NoNormalPart == 0 && float64(j.PartitionJobFactor) > e.maxP {
		return fmt.Errorf("%w: job %d: PartitionJobFactor %d exceeds Cluster.MaxPartitionJobFactor %d", ErrInvalidJob, j.ID, j.PartitionJobFactor, e.cl.MaxPartitionJobFactor)
	}
	if fl&NoNormalQOS == 0 && j.QOSPriority > e.cl.MaxQOSPriority {
		return fmt.Errorf("%w: job %d: QOSPriority %d exceeds Cluster.MaxQOSPriority %d", ErrInvalidJob, j.ID, j.QOSPriority, e.cl.MaxQOSPriority)
	}
	if fl&NoNormalAssoc == 0 && j.AssocPriority > e.cl.MaxAssocPriority {
		return fmt.Errorf("%w: job %d: AssocPriority %d exceeds Cluster.MaxAssocPriority %d", ErrInvalidJob, j.ID, j.AssocPriority, e.cl.MaxAssocPriority)
	}
	for _, tw := range e.tres {
		if v := j.TRES.At(tw.id); v < 0 {
			return fmt.Errorf("%w: job %d: TRES[%s] = %d is negative", ErrInvalidJob, j.ID, e.cfg.Registry.Name(tw.id), v)
		}
		if v := j.PartitionTRES.At(tw.id); v < 0 {
			return fmt.Errorf("%w: job %d: PartitionTRES[%s] = %d is negative", ErrInvalidJob, j.ID, e.cfg.Registry.Name(tw.id), v)
		}
	}
	return nil
}
