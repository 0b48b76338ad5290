package priority

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
)

var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

func mustEngine(t *testing.T, cfg Config, cl Cluster) *Engine {
	t.Helper()
	e, err := NewEngine(cfg, cl)
	require.NoError(t, err)
	return e
}

// TestDocWeights reproduces the weights example of Slurm's multifactor
// page: fair-share 5000, job size 1000, age 1000, partition and QOS 0 give
// a maximum priority of 7000, about 70 % of it from fair-share.
func TestDocWeights(t *testing.T) {
	e := mustEngine(t, Config{Weights: Weights{FairShare: 5000, JobSize: 1000, Age: 1000}},
		Cluster{Nodes: 10, CPUs: 100})
	full := Job{AccrueStart: t0.Add(-30 * 24 * time.Hour), Nodes: 10, CPUs: 100, FairShare: 1}
	b, err := e.Compute(t0, &full)
	require.NoError(t, err)
	assert.Equal(t, uint32(7000), b.Priority)
	assert.Equal(t, Factors{Age: 1, FairShare: 1, JobSize: 1}, b.Factors)
	assert.Equal(t, Factors{Age: 1000, FairShare: 5000, JobSize: 1000}, b.Weighted)
	assert.InDelta(t, 0.70, b.Weighted.FairShare/float64(b.Priority), 0.02) // "~70 %"
	assert.InDelta(t, 0.15, b.Weighted.JobSize/float64(b.Priority), 0.01)   // "~15 %"
}

// TestDocPartitionFactor reproduces the partition example of Slurm's
// multifactor page: PriorityJobFactor 20 and 10, PriorityWeightPartition
// 5000 give 5000 and 2500, and with NO_NORMAL_PART 100000 and 50000.
func TestDocPartitionFactor(t *testing.T) {
	cl := Cluster{MaxPartitionJobFactor: 20}
	for _, tc := range []struct {
		flags      Flags
		jf         uint16
		weighted   float64
		priority   uint32
		normalised float64
	}{
		{0, 20, 5000, 5000, 1},
		{0, 10, 2500, 2500, 0.5},
		{NoNormalPart, 20, 100000, 100000, 20},
		{NoNormalPart, 10, 50000, 50000, 10},
	} {
		e := mustEngine(t, Config{Weights: Weights{Partition: 5000}, Flags: tc.flags}, cl)
		b, err := e.Compute(t0, &Job{PartitionJobFactor: tc.jf})
		require.NoError(t, err)
		assert.Equal(t, tc.weighted, b.Weighted.Partition, "flags %v factor %d", tc.flags, tc.jf)
		assert.Equal(t, tc.normalised, b.Factors.Partition)
		assert.Equal(t, tc.priority, b.Priority)
	}
}

// TestDocConfigExample uses the slurm.conf example of Slurm's multifactor
// page (PriorityMaxAge=14-0, PriorityWeightAge=1000,
// PriorityWeightFairshare=10000, PriorityWeightJobSize=1000,
// PriorityWeightPartition=1000, PriorityWeightQOS=0).
func TestDocConfigExample(t *testing.T) {
	cfg := Config{
		Weights: Weights{Age: 1000, FairShare: 10000, JobSize: 1000, Partition: 1000},
		MaxAge:  14 * 24 * time.Hour,
	}
	e := mustEngine(t, cfg, Cluster{Nodes: 100, CPUs: 6400, MaxPartitionJobFactor: 4, MaxQOSPriority: 10})
	j := Job{
		ID:                 42,
		AccrueStart:        t0.Add(-7 * 24 * time.Hour), // half of PriorityMaxAge
		Nodes:              25,
		CPUs:               1600,
		PartitionJobFactor: 1,
		QOSPriority:        10, // weight 0: ignored
		FairShare:          0.5,
	}
	b, err := e.Compute(t0, &j)
	require.NoError(t, err)
	assert.Equal(t, Factors{Age: 0.5, FairShare: 0.5, JobSize: 0.25, Partition: 0.25}, b.Factors)
	assert.Equal(t, Factors{Age: 500, FairShare: 5000, JobSize: 250, Partition: 250}, b.Weighted)
	assert.Equal(t, uint32(6000), b.Priority)
}

func TestAgeFactor(t *testing.T) {
	maxAge := int64(7 * 24 * 3600)
	cases := []struct {
		name    string
		flags   Flags
		weight  uint32
		accrue  time.Time
		submit  time.Time
		want    float64
		comment string
	}{
		{name: "not accruing", weight: 1000, want: 0},
		{name: "just eligible", weight: 1000, accrue: t0, want: 0},
		{name: "one hour", weight: 1000, accrue: t0.Add(-time.Hour), want: 3600 / float64(maxAge)},
		// Times count in whole seconds, as Slurm's time_t: 11:59:58.5 is 11:59:58.
		{name: "whole seconds", weight: 1000, accrue: t0.Add(-1500 * time.Millisecond), want: 2 / float64(maxAge)},
		{name: "half", weight: 1000, accrue: t0.Add(-84 * time.Hour), want: 0.5},
		{name: "exactly max", weight: 1000, accrue: t0.Add(-7 * 24 * time.Hour), want: 1},
		{name: "beyond max", weight: 1000, accrue: t0.Add(-700 * 24 * time.Hour), want: 1},
		{name: "future accrue", weight: 1000, accrue: t0.Add(time.Hour), want: 0},
		{name: "weight 0: not computed", weight: 0, accrue: t0.Add(-84 * time.Hour), want: 0},
		{name: "accrue always uses submit", flags: AccrueAlways, weight: 1000, submit: t0.Add(-84 * time.Hour), want: 0.5},
		{name: "accrue always ignores accrue start", flags: AccrueAlways, weight: 1000, accrue: t0.Add(-time.Hour), want: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := mustEngine(t, Config{Weights: Weights{Age: c.weight}, Flags: c.flags}, Cluster{})
			b, err := e.Compute(t0, &Job{AccrueStart: c.accrue, Submit: c.submit})
			require.NoError(t, err)
			assert.Equal(t, c.want, b.Factors.Age)
			assert.Equal(t, c.want*float64(c.weight), b.Weighted.Age)
		})
	}
	// A custom PriorityMaxAge.
	e := mustEngine(t, Config{Weights: Weights{Age: 100}, MaxAge: time.Hour}, Cluster{})
	b, err := e.Compute(t0, &Job{AccrueStart: t0.Add(-15 * time.Minute)})
	require.NoError(t, err)
	assert.Equal(t, 0.25, b.Factors.Age)
	assert.Equal(t, uint32(25), b.Priority)
}

func TestJobSizeFactor(t *testing.T) {
	cl := Cluster{Nodes: 100, CPUs: 12800}
	hour := time.Hour
	cases := []struct {
		name       string
		favorSmall bool
		flags      Flags
		job        Job
		want       float64
	}{
		{name: "large: nodes only", job: Job{Nodes: 25}, want: 0.25},
		{name: "large: nodes and cpus", job: Job{Nodes: 25, CPUs: 6400}, want: (0.25 + 0.5) / 2},
		{name: "large: 0 nodes read as 1", job: Job{}, want: 0.01},
		{name: "large: whole machine", job: Job{Nodes: 100, CPUs: 12800}, want: 1},
		{name: "large: more than the machine clamps", job: Job{Nodes: 400, CPUs: 12800}, want: 1},
		{name: "small: one node", favorSmall: true, job: Job{Nodes: 1}, want: 0.99},
		{name: "small: nodes and cpus", favorSmall: true, job: Job{Nodes: 25, CPUs: 3200}, want: (0.75 + 0.75) / 2},
		{name: "small: whole machine", favorSmall: true, job: Job{Nodes: 100}, want: 0},
		{name: "small: more cpus than the machine wraps like Slurm, clamps to 1", favorSmall: true,
			job: Job{Nodes: 100, CPUs: 12801}, want: 1},
		{name: "relative: one full machine minute", flags: SmallRelativeToTime,
			job: Job{Nodes: 100, TimeLimit: time.Minute}, want: 1},
		{name: "relative: cpus dominate", flags: SmallRelativeToTime,
			job: Job{Nodes: 1, CPUs: 6400, TimeLimit: hour}, want: 6400.0 / 60 / 12800},
		{name: "relative: nodes dominate", flags: SmallRelativeToTime,
			job: Job{Nodes: 50, CPUs: 10, TimeLimit: hour}, want: 50.0 * 12800 / 100 / 60 / 12800},
		{name: "relative: seconds round up to minutes", flags: SmallRelativeToTime,
			job: Job{Nodes: 100, TimeLimit: 61 * time.Second}, want: 0.5},
		{name: "relative: partition max time", flags: SmallRelativeToTime,
			job: Job{Nodes: 100, PartitionMaxTime: 4 * time.Minute}, want: 0.25},
		{name: "relative: unlimited", flags: SmallRelativeToTime,
			job: Job{Nodes: 100}, want: 1.0 / math.MaxUint32},
		{name: "relative small", favorSmall: true, flags: SmallRelativeToTime,
			job: Job{Nodes: 50, TimeLimit: time.Minute}, want: 0.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := mustEngine(t, Config{Weights: Weights{JobSize: 10000}, FavorSmall: c.favorSmall, Flags: c.flags}, cl)
			b, err := e.Compute(t0, &c.job)
			require.NoError(t, err)
			assert.InDelta(t, c.want, b.Factors.JobSize, 1e-15)
		})
	}
	// No active nodes: no job size factor.
	e := mustEngine(t, Config{Weights: Weights{JobSize: 10000}}, Cluster{})
	b, err := e.Compute(t0, &Job{Nodes: 5})
	require.NoError(t, err)
	assert.Equal(t, 0.0, b.Factors.JobSize)
}

func TestAssocQOSFactors(t *testing.T) {
	cl := Cluster{MaxAssocPriority: 200, MaxQOSPriority: 50}
	e := mustEngine(t, Config{Weights: Weights{Assoc: 1000, QOS: 3000}}, cl)
	b, err := e.Compute(t0, &Job{AssocPriority: 50, QOSPriority: 10})
	require.NoError(t, err)
	assert.Equal(t, 0.25, b.Factors.Assoc)
	assert.Equal(t, 0.2, b.Factors.QOS)
	assert.Equal(t, uint32(250+600), b.Priority)

	raw := mustEngine(t, Config{Weights: Weights{Assoc: 2, QOS: 3}, Flags: NoNormalAssoc | NoNormalQOS}, Cluster{})
	b, err = raw.Compute(t0, &Job{AssocPriority: 500, QOSPriority: 7})
	require.NoError(t, err)
	assert.Equal(t, Factors{Assoc: 500, QOS: 7}, b.Factors)
	assert.Equal(t, uint32(1000+21), b.Priority)

	// A zero maximum gives a zero factor, not a division by zero.
	zero := mustEngine(t, Config{Weights: Weights{Assoc: 1000}}, Cluster{})
	b, err = zero.Compute(t0, &Job{})
	require.NoError(t, err)
	assert.Equal(t, 0.0, b.Factors.Assoc)
}

func TestTRESFactors(t *testing.T) {
	reg, err := gres.NewRegistry("gres/gpu", "license/matlab")
	require.NoError(t, err)
	gpu := reg.MustLookup("gres/gpu")
	lic := reg.MustLookup("license/matlab")
	w, err := ParseTRESWeights("CPU=1000,Mem=2G,GRES/gpu=3000,license/matlab=-100")
	require.NoError(t, err)
	cfg := Config{TRESWeights: w, Registry: reg}
	e := mustEngine(t, cfg, Cluster{})

	req := reg.NewVector()
	req[gres.CPU], req[gres.Mem], req[gpu], req[lic] = 64, 256*1024, 4, 2
	part := reg.NewVector()
	part[gres.CPU], part[gres.Mem], part[gpu], part[lic] = 256, 1024*1024, 8, 10
	b, err := e.Compute(t0, &Job{TRES: req, PartitionTRES: part})
	require.NoError(t, err)
	want := []TRESFactor{
		{ID: gres.CPU, Factor: 0.25, Weighted: 250},
		{ID: gres.Mem, Factor: 0.25, Weighted: 0.25 * 2.0 / 1024},
		{ID: gpu, Factor: 0.5, Weighted: 1500},
		{ID: lic, Factor: 0.2, Weighted: -20},
	}
	assert.Equal(t, want, b.TRES)
	sum := 250 + 0.25*2.0/1024 + 1500 - 20
	assert.Equal(t, sum, b.TRESSum)
	assert.Equal(t, uint32(sum), b.Priority)

	// NO_NORMAL_TRES: raw counts.
	cfg.Flags = NoNormalTRES
	raw := mustEngine(t, cfg, Cluster{})
	b, err = raw.Compute(t0, &Job{TRES: req, PartitionTRES: part})
	require.NoError(t, err)
	assert.Equal(t, 64.0, b.TRES[0].Factor)
	assert.Equal(t, 64000.0, b.TRES[0].Weighted)

	// A TRES the partition lacks contributes nothing.
	b, err = e.Compute(t0, &Job{TRES: req})
	require.NoError(t, err)
	assert.Equal(t, 0.0, b.TRESSum)
	assert.Equal(t, uint32(1), b.Priority)
}

func TestSumClampAndNice(t *testing.T) {
	e := mustEngine(t, Config{Weights: Weights{FairShare: 1000}}, Cluster{})
	cases := []struct {
		name       string
		fs         float64
		site, nice int64
		want       uint32
		sum        float64
	}{
		{"plain", 0.5, 0, 0, 500, 500},
		{"truncated, not rounded", 0.9999, 0, 0, 999, 999.9},
		{"site added", 0.5, 100, 0, 600, 600},
		{"nice subtracted", 0.5, 0, 100, 400, 400},
		{"negative nice boosts", 0.5, 0, -1000, 1500, 1500},
		{"never below 1", 0.5, 0, 10000, 1, -9500},
		{"zero is held, so 1", 0, 0, 0, 1, 0},
		{"clamped to 2^32-1", 1, MaxNice, -MaxNice, math.MaxUint32, 1000 + 2*float64(MaxNice)},
	}
	for _, c := range cases {
		b, err := e.Compute(t0, &Job{FairShare: c.fs, Site: c.site, Nice: c.nice})
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, b.Priority, c.name)
		assert.InDelta(t, c.sum, b.Sum, 1e-9, c.name)
		assert.Equal(t, c.site, b.Site, c.name)
		assert.Equal(t, c.nice, b.Nice, c.name)
	}
}

func TestIncrOnlyAndAdmin(t *testing.T) {
	e := mustEngine(t, Config{Weights: Weights{FairShare: 1000}, Flags: IncrOnly}, Cluster{})
	b, err := e.Compute(t0, &Job{FairShare: 0.3, PrevPriority: 500})
	require.NoError(t, err)
	assert.Equal(t, uint32(500), b.Priority, "lower value does not replace")
	assert.Equal(t, uint32(300), b.Computed)
	b, err = e.Compute(t0, &Job{FairShare: 0.7, PrevPriority: 500})
	require.NoError(t, err)
	assert.Equal(t, uint32(700), b.Priority)

	plain := mustEngine(t, Config{Weights: Weights{FairShare: 1000}}, Cluster{})
	b, err = plain.Compute(t0, &Job{FairShare: 0.3, PrevPriority: 500})
	require.NoError(t, err)
	assert.Equal(t, uint32(300), b.Priority, "without INCR_ONLY the priority can drop")

	b, err = plain.Compute(t0, &Job{FairShare: 0.3, AdminPriority: 77})
	require.NoError(t, err)
	assert.True(t, b.Admin)
	assert.Equal(t, uint32(77), b.Priority)
	assert.Equal(t, Factors{}, b.Weighted)
}

// TestMultiPartitionOrder checks that a per-(partition, QOS) priority sums
// the partition term last, as Slurm's _priority_each_qos does.
func TestMultiPartitionOrder(t *testing.T) {
	e := mustEngine(t, Config{Weights: Weights{Age: 1000, FairShare: 10000, Partition: 1000, QOS: 1000}},
		Cluster{MaxPartitionJobFactor: 3, MaxQOSPriority: 9})
	j := Job{AccrueStart: t0.Add(-201923 * time.Second), FairShare: 15.0 / 21, PartitionJobFactor: 1, QOSPriority: 7}
	single, err := e.Compute(t0, &j)
	require.NoError(t, err)
	j.MultiPartition = true
	multi, err := e.Compute(t0, &j)
	require.NoError(t, err)
	w := single.Weighted
	require.Equal(t, w, multi.Weighted)
	assert.Equal(t, w.Age+w.Assoc+w.FairShare+w.JobSize+w.Partition+w.QOS+0.0+0-0, single.Sum)
	assert.Equal(t, w.Partition+(w.Age+w.Assoc+w.FairShare+w.JobSize+w.QOS+0.0+0-0), multi.Sum)
	// The orders round differently for these inputs.
	assert.NotEqual(t, single.Sum, multi.Sum)
	assert.InDelta(t, single.Sum, multi.Sum, 1e-9)
}

type boostSite struct{ by int64 }

func (s boostSite) SiteFactor(now time.Time, j *Job) int64 {
	if j.ID%2 == 0 {
		return j.Site + s.by
	}
	return j.Site
}

func TestSiteFactorHook(t *testing.T) {
	e := mustEngine(t, Config{Weights: Weights{FairShare: 1000}, Site: boostSite{by: 5000}}, Cluster{})
	b, err := e.Compute(t0, &Job{ID: 2, FairShare: 0.5, Site: 10})
	require.NoError(t, err)
	assert.Equal(t, int64(5010), b.Site)
	assert.Equal(t, uint32(5510), b.Priority)
	b, err = e.Compute(t0, &Job{ID: 3, FairShare: 0.5, Site: 10})
	require.NoError(t, err)
	assert.Equal(t, uint32(510), b.Priority)

	bad := mustEngine(t, Config{Site: SiteFactorFunc(func(time.Time, *Job) int64 { return 1 << 40 })}, Cluster{})
	_, err = bad.Compute(t0, &Job{ID: 9})
	require.ErrorIs(t, err, ErrInvalidJob)
	assert.Contains(t, err.Error(), "job 9")
}

func TestEngineErrors(t *testing.T) {
	reg, err := gres.NewRegistry("gres/gpu")
	require.NoError(t, err)
	cfgErrs := []struct {
		name string
		cfg  Config
		is   error
		msg  string
	}{
		{"unknown TRES", Config{TRESWeights: map[string]float64{"gres/fpga": 1}, Registry: reg}, gres.ErrUnknownTRES, "gres/fpga"},
		{"billing", Config{TRESWeights: map[string]float64{"billing": 1}, Registry: reg}, ErrInvalidConfig, "billing"},
		{"no registry", Config{TRESWeights: map[string]float64{"cpu": 1}}, ErrInvalidConfig, "Registry"},
		{"NaN weight", Config{TRESWeights: map[string]float64{"cpu": math.NaN()}, Registry: reg}, ErrInvalidConfig, "cpu"},
		{"same TRES twice", Config{TRESWeights: map[string]float64{"cpu": 1, "CPU": 2}, Registry: reg}, ErrInvalidConfig, "same TRES"},
		{"negative max age", Config{MaxAge: -time.Hour}, ErrInvalidConfig, "MaxAge"},
		{"sub-second max age", Config{MaxAge: time.Millisecond}, ErrInvalidConfig, "MaxAge"},
		{"unknown flag bits", Config{Flags: 1 << 30}, ErrInvalidConfig, "Flags"},
	}
	for _, c := range cfgErrs {
		err := c.cfg.Validate()
		require.ErrorIs(t, err, c.is, c.name)
		assert.Contains(t, err.Error(), c.msg, c.name)
		_, err = NewEngine(c.cfg, Cluster{})
		require.ErrorIs(t, err, c.is, c.name)
	}
	_, err = NewEngine(Config{}, Cluster{MaxPartitionJobFactor: 65534})
	require.ErrorIs(t, err, ErrInvalidConfig)

	e := mustEngine(t, Config{}, Cluster{MaxQOSPriority: 10, MaxAssocPriority: 10, MaxPartitionJobFactor: 10})
	jobErrs := []struct {
		job Job
		msg string
	}{
		{Job{ID: 1, FairShare: math.NaN()}, "FairShare"},
		{Job{ID: 2, FairShare: 1.5}, "FairShare"},
		{Job{ID: 3, Nice: MaxNice + 1}, "Nice"},
		{Job{ID: 4, Site: -MaxNice - 1}, "Site"},
		{Job{ID: 5, TimeLimit: -1}, "TimeLimit"},
		{Job{ID: 6, QOSPriority: 11}, "QOSPriority"},
		{Job{ID: 7, AssocPriority: 11}, "AssocPriority"},
		{Job{ID: 8, PartitionJobFactor: 11}, "PartitionJobFactor"},
		{Job{ID: 9, PartitionMaxTime: -1}, "PartitionMaxTime"},
	}
	for _, c := range jobErrs {
		_, err := e.Compute(t0, &c.job)
		require.ErrorIs(t, err, ErrInvalidJob, c.msg)
		assert.Contains(t, err.Error(), c.msg)
		out := make([]Breakdown, 1)
		err = e.ComputeAll(t0, []Job{c.job}, out)
		require.ErrorIs(t, err, ErrInvalidJob)
		assert.Contains(t, err.Error(), "jobs[0]")
	}
	require.ErrorIs(t, e.ComputeAll(t0, make([]Job, 2), make([]Breakdown, 1)), ErrInvalidJob)
}

func TestComputeAllReusesStorage(t *testing.T) {
	reg, err := gres.NewRegistry("gres/gpu")
	require.NoError(t, err)
	e := mustEngine(t, Config{Weights: Weights{FairShare: 100}, TRESWeights: map[string]float64{"cpu": 10, "gres/gpu": 20}, Registry: reg}, Cluster{})
	jobs := make([]Job, 50)
	for i := range jobs {
		v := reg.NewVector()
		v[gres.CPU] = int64(i)
		jobs[i] = Job{ID: uint64(i), FairShare: float64(i) / 50, TRES: v, PartitionTRES: gres.Vector{100}}
	}
	out := make([]Breakdown, len(jobs))
	require.NoError(t, e.ComputeAll(t0, jobs, out))
	for i := range jobs {
		one, err := e.Compute(t0, &jobs[i])
		require.NoError(t, err)
		assert.Equal(t, one, out[i])
	}
	allocs := testing.AllocsPerRun(5, func() {
		if err := e.ComputeAll(t0, jobs, out); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

func TestErrorsAreDistinct(t *testing.T) {
	all := []error{ErrInvalidConfig, ErrInvalidJob, ErrInvalidTree, ErrInvalidShares, ErrInvalidUsage, ErrUnknownAssociation, ErrSyntax}
	for i, a := range all {
		for j, b := range all {
			assert.Equal(t, i == j, errors.Is(a, b))
		}
	}
}

func TestNegativeTRESCount(t *testing.T) {
	reg, err := gres.NewRegistry("gres/gpu")
	require.NoError(t, err)
	e := mustEngine(t, Config{TRESWeights: map[string]float64{"gres/gpu": 1}, Registry: reg}, Cluster{})
	v := reg.NewVector()
	v[reg.MustLookup("gres/gpu")] = -1
	_, err = e.Compute(t0, &Job{ID: 5, TRES: v})
	require.ErrorIs(t, err, ErrInvalidJob)
	assert.Contains(t, err.Error(), "TRES[gres/gpu]")
	_, err = e.Compute(t0, &Job{ID: 5, PartitionTRES: v})
	assert.Contains(t, err.Error(), "PartitionTRES[gres/gpu]")
	assert.Equal(t, Config{TRESWeights: map[string]float64{"gres/gpu": 1}, Registry: reg}.TRESWeights, e.Config().TRESWeights)
	assert.Equal(t, Cluster{}, e.Cluster())
}
