package sim_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
	"github.com/sluicehq/sluice/scheduler/sim/swf"
	"github.com/sluicehq/sluice/telemetry"
)

// BenchmarkSimulate replays whole workloads: the KTH-SP2 trace of the
// Parallel Workloads Archive (28,481 jobs on 100 processors, read from
// ../shared/traces; skipped when absent) under each policy, and the
// synthetic GPU workload under FCFS and EASY — "standard" is the standard
// scale of DESIGN.md (100,000 jobs on 10,000 nodes; run it only with
// -benchtime=1x), "small" a tenth of it (10,000 jobs on 1,000 nodes).
// Each iteration parses the trace (from memory) and runs the simulation;
// trace reading is part of the figure, as it is for a researcher.
// KTH-SP2/easy-explain is EASY with explanation statistics sampled every
// 10 minutes (Options.ExplainEvery), the cost of -explain;
// KTH-SP2/easy-every-pass is EASY with every waiting job's expected start
// computed in every cycle (scheduler.Config.EstimateInterval 0, the
// scheduler's default) instead of once per job (sim.EstimateOnce): the
// same results, at the cost of refreshing estimates nobody reads.
// The synthetic jobs carry utilisation profiles (the goodput and energy
// metrics); synthetic-gpu/small/<policy>-no-profiles replays the same
// jobs without them (SyntheticConfig.NoProfiles), the cost of profiles;
// synthetic-gpu/small/easy-telemetry-<action> feeds the profiles to the
// scheduler every minute (Options.TelemetryEvery) with an idle rule of
// 5 % for 30 minutes and that idle action, the cost of -telemetry-every.
func BenchmarkSimulate(b *testing.B) {
	for _, p := range sim.Policies() {
		b.Run("KTH-SP2/"+string(p), func(b *testing.B) { benchTrace(b, "KTH-SP2/log.swf", p, nil) })
	}
	b.Run("KTH-SP2/easy-explain", func(b *testing.B) {
		benchTrace(b, "KTH-SP2/log.swf", sim.EASY, func(_ *scheduler.Config, opt *sim.Options) { opt.ExplainEvery = 10 * time.Minute })
	})
	b.Run("KTH-SP2/easy-every-pass", func(b *testing.B) {
		benchTrace(b, "KTH-SP2/log.swf", sim.EASY, func(cfg *scheduler.Config, _ *sim.Options) { cfg.EstimateInterval = 0 })
	})
	for _, sc := range []struct {
		name        string
		nodes, jobs int
	}{{"small", sim.StandardNodes / 10, sim.StandardJobs / 10}, {"standard", sim.StandardNodes, sim.StandardJobs}} {
		for _, p := range []sim.Policy{sim.FCFS, sim.EASY} {
			b.Run("synthetic-gpu/"+sc.name+"/"+string(p), func(b *testing.B) { benchSynthetic(b, sc.nodes, sc.jobs, p, false, nil) })
		}
	}
	for _, p := range []sim.Policy{sim.FCFS, sim.EASY} {
		b.Run("synthetic-gpu/small/"+string(p)+"-no-profiles", func(b *testing.B) {
			benchSynthetic(b, sim.StandardNodes/10, sim.StandardJobs/10, p, true, nil)
		})
	}
	for _, a := range []scheduler.IdleAction{scheduler.IdleNotify, scheduler.IdleRequeue, scheduler.IdleCancel} {
		b.Run("synthetic-gpu/small/easy-telemetry-"+strings.ToLower(a.String()), func(b *testing.B) {
			benchSynthetic(b, sim.StandardNodes/10, sim.StandardJobs/10, sim.EASY, false, func(cfg *scheduler.Config, opt *sim.Options) {
				cfg.Telemetry = scheduler.TelemetryConfig{Rule: telemetry.Rule{IdleBelow: 5, IdleAfter: 30 * time.Minute}, Action: a}
				opt.TelemetryEvery = time.Minute
			})
		})
	}
}

// benchTrace replays trace name under policy p, with tweak (when not nil)
// applied to the configuration and options after the policy.
func benchTrace(b *testing.B, name string, p sim.Policy, tweak func(*scheduler.Config, *sim.Options)) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "traces", name))
	if os.IsNotExist(err) {
		b.Skipf("trace %s not available (it lives in ../shared/traces, outside the repository)", name)
	}
	if err != nil {
		b.Fatal(err)
	}
	var res sim.Result
	for b.Loop() {
		rd, err := swf.NewReader(bytes.NewReader(data), swf.Options{})
		if err != nil {
			b.Fatal(err)
		}
		m, err := swf.MachineFor(rd.Header(), 0, 1)
		if err != nil {
			b.Fatal(err)
		}
		cfg, err := m.Config()
		if err != nil {
			b.Fatal(err)
		}
		opt := sim.Options{DiscardJobs: true, DiscardSeries: true}
		if err := p.Apply(&cfg, &opt); err != nil {
			b.Fatal(err)
		}
		if tweak != nil {
			tweak(&cfg, &opt)
		}
		s, err := scheduler.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		res, err = sim.Run(s, swf.Source(rd, m), opt)
		if err != nil {
			b.Fatal(err)
		}
	}
	report(b, res)
}

func benchSynthetic(b *testing.B, nodes, jobs int, p sim.Policy, noProfiles bool, tweak func(*scheduler.Config, *sim.Options)) {
	cfg, err := sim.SyntheticCluster(nodes)
	if err != nil {
		b.Fatal(err)
	}
	opt := sim.Options{DiscardJobs: true, DiscardSeries: true}
	if err := p.Apply(&cfg, &opt); err != nil {
		b.Fatal(err)
	}
	if tweak != nil {
		tweak(&cfg, &opt)
	}
	c := sim.SyntheticFor(nodes, jobs, 1)
	c.NoProfiles = noProfiles
	workload, err := sim.Synthetic(c)
	if err != nil {
		b.Fatal(err)
	}
	var res sim.Result
	for b.Loop() {
		s, err := scheduler.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		res, err = sim.Run(s, &sim.SliceSource{Jobs: workload}, opt)
		if err != nil {
			b.Fatal(err)
		}
	}
	report(b, res)
}

func report(b *testing.B, res sim.Result) {
	b.ReportMetric(float64(res.Summary.Jobs), "jobs")
	b.ReportMetric(float64(res.Cycles), "cycles")
	b.ReportMetric(res.Summary.Wait.Mean, "mean-wait-s")
	b.ReportMetric(res.Summary.BSLD.Mean, "mean-bsld")
	b.ReportMetric(res.Summary.Utilization, "utilization")
	b.ReportMetric(res.Summary.ETA.Error.P50, "eta-median-s")
	if g := res.Summary.Goodput; g.MeasuredJobs > 0 {
		b.ReportMetric(g.Goodput, "goodput")
		b.ReportMetric(g.EnergyKWh, "energy-kWh")
	}
	if t := res.Summary.Telemetry; t.Every > 0 {
		b.ReportMetric(float64(t.Events), "telemetry-events")
		b.ReportMetric(float64(t.IdleRequeues+t.IdleCancels+t.LimitCancels), "idle-ends")
	}
	if n := res.Summary.Explain.Samples; n > 0 {
		b.ReportMetric(float64(n), "explain-samples")
	}
}
