// Command simulate replays a workload through the Sluice scheduler on a
// virtual clock and reports the classic scheduling metrics: wait,
// response, bounded slowdown (τ = 10 s), utilisation, makespan, queue
// length and the capacity left idle while jobs waited.
//
//	go run ./examples/simulate -trace FILE.swf -policy fcfs|easy|conservative|priority \
//	    -estimates user|exact [-jobs N] [-skip K] [-json] [-plot out.png] [-out jobs.swf] [-strict] \
//	    [-explain [-explain-every 10m]] [-estimate-every D] \
//	    [-gpu-workload FILE.csv] [-gpus-per-node G [-synthetic-profiles]] [-gpu-idle-watts 70] [-gpu-max-watts 700]
//
// The trace is a Standard Workload Format file of the Parallel Workloads
// Archive, read as a stream and cleaned as package swf documents (jobs
// without run time or processors are dropped and counted; -strict makes
// any dropped line an error). Its processors become single-CPU nodes, or
// whole nodes of k processors with -procs-per-node k. Without -trace the
// command replays the built-in synthetic GPU workload (sim.Synthetic on
// sim.SyntheticCluster; -nodes and -seed shape it), so it runs on a fresh
// clone.
//
// -skip K and -jobs N select the jobs after cleaning; reading stops after
// the N-th, so the cleaning counts cover the part of the trace read.
// -json prints one JSON object on stdout (jobs, mean_wait_s, mean_bsld,
// mean_response_s, utilization, makespan_s and sim_seconds — the wall
// time of reading and simulating — among others); -plot draws
// utilisation, queue length and idle-while-waiting over time as a PNG;
// -out writes every simulated job as SWF with its wait and run times. A
// progress bar is drawn on stderr when stderr is a terminal.
//
// Every run reports the honesty of the scheduler's start estimates (with
// a backfill policy): for each job that waited with an estimate, the
// error of the first one, |actual start − first ExpectedStart| — its
// mean, median and p90 — and the fraction of those jobs that started no
// later than first estimated (JSON eta_jobs, eta_error_mean_s,
// eta_error_median_s, eta_error_p90_s, eta_bias_s, eta_started_on_time).
// Since only first estimates are reported, easy computes each waiting
// job's expected start once (sim.EstimateOnce); -estimate-every 0 (or any
// duration) recomputes them in every cycle (or that often), with the same
// results, as an embedding control plane showing squeue --start would.
// -explain adds explanation statistics (sim.Options.ExplainEvery): the
// share of pending-job-time per pending reason (JSON reason_mix) and of
// idle GPU-time (CPU-time without GPUs) per idle-capacity class
// (idle_classes, idle_class_hours), the classes sampled every
// -explain-every of virtual time; with -plot, the chart gets two more
// panels, idle capacity by class and pending jobs by reason, over time.
//
// Every run on a cluster with GPUs also reports goodput and energy from
// the jobs' utilisation profiles (sim.Job.Profile; sim.Goodput defines
// the figures): busy, useful and lost GPU-hours of the measured jobs,
// goodput (useful / allocated GPU-hours over them), the GPU-hours of jobs
// without a profile (unmeasured, left out), and the energy of the
// measured jobs' GPUs under a simple power model, per GPU idle watts +
// utilisation × (max watts − idle watts), set by -gpu-idle-watts and
// -gpu-max-watts (default an H100 SXM's 700 W TDP, 70 W idle). JSON
// goodput, busy_fraction, busy_gpu_hours, useful_gpu_hours,
// goodput_lost_gpu_hours, measured_gpu_hours, unmeasured_gpu_hours,
// energy_kwh, kwh_per_useful_gpu_hour, and idle_gpu_energy_kwh, the draw
// of the GPUs no job held over the makespan. The synthetic workload draws a
// profile per job; -gpu-workload FILE joins a GPU workload file
// (sim.ReadProfiles: CSV job,util[,stall_s[,phases]]) onto the workload
// by job ID (the SWF job number, "job<i>" for the synthetic jobs), its
// profiles replacing the workload's own. A trace's machine has no GPUs
// unless -gpus-per-node G gives each node (each processor, without
// -procs-per-node) G GPUs that every job holds on each of its nodes
// (swf.Machine.GPUsPerNode; -gpus-per-node 1 reads processors as GPUs);
// -synthetic-profiles then gives the trace's jobs that the file (if any)
// does not cover a profile drawn from the synthetic workload's mix
// (sim.SyntheticProfiles, seeded by -seed).
//
// -telemetry-every D makes the scheduler's allocated-but-idle policy act
// (sim.Options.TelemetryEvery): every D of virtual time each node running
// a profiled job reports its GPUs' utilisation from the profiles; a job
// below -idle-below percent for -idle-after is allocated-but-idle, and
// -idle-action notify (the default) only reports it, requeue or cancel
// take its GPUs back after -idle-grace more (a job the idle action
// requeued more than -idle-requeue-limit times is cancelled). The text
// report gets a telemetry line; JSON telemetry_every_s, idle_notices,
// idle_requeues, idle_cancels, idle_limit_cancels, idle_gpu_hours (the
// allocated-but-idle GPU-hours the scheduler measured), telemetry_events.
//
// A replay is a short batch run whose live heap is small, so the command
// lets the heap grow to five times the live data between collections
// (GOGC=400) unless the GOGC environment variable says otherwise: on
// KTH-SP2 with EASY that is 7 % less wall time for 11 MiB more memory
// (28 MiB in all: finished jobs leave the scheduler after sim.PurgeAge).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
	"github.com/sluicehq/sluice/scheduler/sim/simplot"
	"github.com/sluicehq/sluice/scheduler/sim/swf"
	"github.com/sluicehq/sluice/telemetry"
)

// config is the parsed command line.
type config struct {
	trace, policy, estimates string
	jobs, skip               int
	json, strict             bool
	plot, out                string
	procsPerNode             int
	procs                    int64
	oversize                 string
	nodes                    int
	seed                     uint64
	progress                 bool
	explain                  bool
	explainEvery             time.Duration
	estimateEvery            time.Duration // < 0: the policy's
	gpuWorkload              string
	gpusPerNode              int
	syntheticProfiles        bool
	gpuIdleWatts             float64
	gpuMaxWatts              float64
	// the allocated-but-idle policy (-telemetry-every and -idle-*)
	telemetryEvery   time.Duration
	idleBelow        float64
	idleAfter        time.Duration
	idleAction       string
	idleGrace        time.Duration
	idleRequeueLimit int
	idleSet          []string // the -idle-* flags given
}

// batchGCPercent is the GOGC the command runs with by default.
const batchGCPercent = 400

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(batchGCPercent)
	}
	terminal := false
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		terminal = true
	}
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr, terminal))
}

// cli runs the command with the arguments args and returns its exit
// status: 0 on success and for -help (or -h), which prints the usage, 2
// for a bad command line, 1 when the run fails. progress draws the
// progress bar on stderr.
func cli(args []string, stdout, stderr io.Writer, progress bool) int {
	c, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	c.progress = progress
	if err := run(c, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "simulate:", err)
		return 1
	}
	return 0
}

// parseArgs parses the command line into a config, writing the usage and
// any error to stderr. It returns flag.ErrHelp when -help or -h was asked.
func parseArgs(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.trace, "trace", "", "SWF trace to replay (default: the built-in synthetic GPU workload)")
	fs.StringVar(&c.policy, "policy", string(sim.EASY), "scheduling policy: fcfs, easy, conservative or priority")
	fs.StringVar(&c.estimates, "estimates", "user", "run-time estimates the scheduler plans with: user (the trace's requested time) or exact (each job's run time, cut to its requested time: the same work)")
	fs.IntVar(&c.jobs, "jobs", 0, "replay at most N jobs (after -skip); for the synthetic workload, generate N jobs (default 2000)")
	fs.IntVar(&c.skip, "skip", 0, "skip the first K jobs")
	fs.BoolVar(&c.json, "json", false, "print the metrics as one JSON object")
	fs.StringVar(&c.plot, "plot", "", "write a PNG chart of utilisation, queue length and idle-while-waiting")
	fs.StringVar(&c.out, "out", "", "write the simulated jobs as SWF (wait and run times filled in)")
	fs.BoolVar(&c.strict, "strict", false, "treat any dropped trace line as an error")
	fs.IntVar(&c.procsPerNode, "procs-per-node", 1, "map the trace's processors onto whole nodes of this many CPUs")
	fs.Int64Var(&c.procs, "procs", 0, "machine size in processors (default: the trace header's MaxProcs or MaxNodes)")
	fs.StringVar(&c.oversize, "oversize", "clip", "jobs larger than the machine: clip or reject")
	fs.IntVar(&c.nodes, "nodes", 200, "synthetic workload: cluster size in nodes (-nodes 10000 -jobs 100000 is the standard scale)")
	fs.Uint64Var(&c.seed, "seed", 1, "synthetic workload: seed")
	fs.BoolVar(&c.explain, "explain", false, "report why jobs waited (pending-reason mix) and why capacity was idle (idle-capacity classes)")
	fs.DurationVar(&c.explainEvery, "explain-every", 10*time.Minute, "with -explain: classify the idle capacity every this much virtual time")
	fs.StringVar(&c.gpuWorkload, "gpu-workload", "", "GPU workload file (CSV job,util[,stall_s[,phases]]) giving jobs utilisation profiles by job ID, for goodput and energy")
	fs.IntVar(&c.gpusPerNode, "gpus-per-node", 0, "trace: give each node (each processor without -procs-per-node) this many GPUs, held by every job on its nodes")
	fs.BoolVar(&c.syntheticProfiles, "synthetic-profiles", false, "trace: give jobs without a profile (from -gpu-workload) one drawn from the synthetic workload's mix, seeded by -seed")
	fs.Float64Var(&c.gpuIdleWatts, "gpu-idle-watts", sim.DefaultGPUIdleWatts, "power model: watts of an allocated GPU running no kernel")
	fs.Float64Var(&c.gpuMaxWatts, "gpu-max-watts", sim.DefaultGPUMaxWatts, "power model: watts of a GPU at 100 % utilisation (its TDP)")
	fs.DurationVar(&c.telemetryEvery, "telemetry-every", 0, "feed the jobs' utilisation profiles to the scheduler as GPU telemetry every `duration` of virtual time, so that its allocated-but-idle policy (-idle-*) acts (0: off; at most 2m30s, the telemetry rule's MaxGap)")
	fs.Float64Var(&c.idleBelow, "idle-below", 5, "with -telemetry-every: a job whose GPUs' mean utilisation stays below this `percent` is idle")
	fs.DurationVar(&c.idleAfter, "idle-after", 30*time.Minute, "with -telemetry-every: idle this long, a job is allocated-but-idle (reported)")
	fs.StringVar(&c.idleAction, "idle-action", "notify", "with -telemetry-every: what the scheduler does with an allocated-but-idle job: notify (report only), requeue or cancel")
	fs.DurationVar(&c.idleGrace, "idle-grace", 0, "with -telemetry-every: how long an allocated-but-idle job may stay so before -idle-action is taken")
	fs.IntVar(&c.idleRequeueLimit, "idle-requeue-limit", scheduler.DefaultMaxIdleRequeues, "with -idle-action requeue: end a job the idle action requeued this often already, at least 1 (TelemetryConfig.MaxIdleRequeues)")
	c.estimateEvery = -1
	fs.Func("estimate-every", "recompute a waiting job's expected start at most once per `duration` (0: in every cycle; default: the policy's, once per job under easy)", func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		if d < 0 {
			return fmt.Errorf("negative duration %v", d)
		}
		c.estimateEvery = d
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	fs.Visit(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "idle-") {
			c.idleSet = append(c.idleSet, "-"+f.Name)
		}
	})
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q", fs.Arg(0))
		fmt.Fprintln(stderr, "simulate:", err)
		return config{}, err
	}
	return c, nil
}

func run(c config, stdout, stderr io.Writer) error {
	p := sim.Policy(c.policy)
	if c.estimates != "user" && c.estimates != "exact" {
		return fmt.Errorf("-estimates %q: want user or exact", c.estimates)
	}
	if c.jobs < 0 || c.skip < 0 {
		return fmt.Errorf("-jobs %d / -skip %d: must not be negative", c.jobs, c.skip)
	}
	if c.gpusPerNode != 0 && c.trace == "" {
		return fmt.Errorf("-gpus-per-node %d: for a -trace only (the synthetic cluster has its own GPUs)", c.gpusPerNode)
	}
	if c.syntheticProfiles && c.trace == "" {
		return errors.New("-synthetic-profiles: for a -trace only (the synthetic workload has its own profiles)")
	}
	tel, err := telemetryConfig(c)
	if err != nil {
		return err
	}
	if c.explain && c.explainEvery <= 0 {
		return fmt.Errorf("-explain-every %v: must be positive", c.explainEvery)
	}
	var (
		cfg      scheduler.Config
		src      sim.Source
		rd       *swf.Reader
		start    time.Time
		header   []swf.HeaderField
		name     string
		progress func() float64
	)
	opt := sim.Options{}
	if c.trace != "" {
		f, err := os.Open(c.trace)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		cr := &countingReader{r: f}
		if size := fi.Size(); size > 0 {
			progress = func() float64 { return float64(cr.n) / float64(size) }
		}
		ro := swf.Options{Strict: c.strict, Procs: c.procs}
		switch c.oversize {
		case "clip":
		case "reject":
			ro.Oversize = swf.RejectOversize
		default:
			return fmt.Errorf("-oversize %q: want clip or reject", c.oversize)
		}
		rd, err = swf.NewReader(cr, ro)
		if err != nil {
			return fmt.Errorf("%s: %w", c.trace, err)
		}
		m, err := swf.MachineFor(rd.Header(), c.procs, c.procsPerNode)
		if err != nil {
			return fmt.Errorf("%s: %w (use -procs)", c.trace, err)
		}
		m.GPUsPerNode = c.gpusPerNode
		if cfg, err = m.Config(); err != nil {
			return err
		}
		src = swf.Source(rd, m)
		start = m.Start
		name = filepath.Base(filepath.Dir(c.trace)) + "/" + filepath.Base(c.trace)
		header = outHeader(rd.Header(), name, c, m)
	} else {
		n := c.jobs
		if n == 0 {
			n = 2000
		}
		var err error
		if cfg, err = sim.SyntheticCluster(c.nodes); err != nil {
			return err
		}
		jobs, err := sim.Synthetic(sim.SyntheticFor(c.nodes, n+c.skip, c.seed))
		if err != nil {
			return err
		}
		ss := &sim.SliceSource{Jobs: jobs}
		progress = func() float64 { return float64(ss.Pos()) / float64(max(len(jobs), 1)) }
		src = ss
		name = fmt.Sprintf("synthetic GPU workload (%d jobs, seed %d) on %d nodes", n, c.seed, c.nodes)
		if len(jobs) > 0 {
			start = jobs[0].Submit
		}
		header = []swf.HeaderField{{Key: "Version", Value: "2.2"},
			{Key: "Computer", Value: fmt.Sprintf("Sluice synthetic GPU cluster of %d nodes", c.nodes)},
			{Key: "Note", Value: fmt.Sprintf("simulated by Sluice: policy %s, %s estimates; processors are allocated CPUs", c.policy, c.estimates)}}
	}
	var join *sim.ProfileJoin
	var gw *gpuWorkload
	if c.gpuWorkload != "" {
		profiles, err := readProfiles(c.gpuWorkload)
		if err != nil {
			return err
		}
		join = sim.WithProfiles(src, profiles)
		src = join
		gw = &gpuWorkload{File: c.gpuWorkload, Profiles: len(profiles)}
	}
	if c.syntheticProfiles {
		src = sim.SyntheticProfiles(src, c.seed)
	}
	opt.Power = sim.PowerModel{IdleWatts: c.gpuIdleWatts, MaxWatts: c.gpuMaxWatts}
	if err := opt.Power.Validate(); err != nil {
		return fmt.Errorf("-gpu-idle-watts %v / -gpu-max-watts %v: %w", c.gpuIdleWatts, c.gpuMaxWatts, err)
	}
	if err := p.Apply(&cfg, &opt); err != nil {
		return err
	}
	if c.estimateEvery >= 0 {
		cfg.EstimateInterval = c.estimateEvery
	}
	if c.telemetryEvery > 0 {
		cfg.Telemetry = tel
		opt.TelemetryEvery = c.telemetryEvery
	}
	src = sim.Window(src, c.skip, c.jobs)
	if c.estimates == "exact" {
		src = sim.ExactEstimates(src)
	}
	opt.DiscardJobs = c.out == ""
	opt.DiscardSeries = c.plot == ""
	if c.explain {
		opt.ExplainEvery = c.explainEvery
	}
	var bar *progressBar
	if c.progress && progress != nil {
		bar = &progressBar{w: stderr, frac: progress}
		opt.OnCycle = func(*scheduler.Scheduler, scheduler.Cycle) { bar.tick() }
	}

	s, err := scheduler.New(cfg)
	if err != nil {
		return err
	}
	t0 := time.Now()
	res, err := sim.Run(s, src, opt)
	elapsed := time.Since(t0)
	bar.done()
	if errors.Is(err, sim.ErrInvalidOptions) && c.telemetryEvery > 0 {
		return fmt.Errorf("-telemetry-every %v: %w", c.telemetryEvery, err)
	}
	if err != nil {
		return err
	}
	if rd != nil {
		st := rd.Stats()
		for _, e := range st.Issues {
			fmt.Fprintln(stderr, "warning:", e)
		}
		if n := st.Dropped() + st.HeaderIssues; n > len(st.Issues) {
			fmt.Fprintf(stderr, "warning: %d more problem(s) not shown\n", n-len(st.Issues))
		}
	}
	if c.out != "" {
		if err := writeSWF(c.out, res, start, header); err != nil {
			return err
		}
	}
	if c.plot != "" {
		if err := writePlot(c.plot, res, fmt.Sprintf("%s — policy %s, %s estimates", name, c.policy, c.estimates)); err != nil {
			return err
		}
	}
	rep := makeReport(res, elapsed, name, c, rd)
	if gw != nil {
		gw.Matched, gw.Read = join.Matched()
		rep.GPUWorkload = gw
	}
	if c.json {
		enc := json.NewEncoder(stdout)
		return enc.Encode(rep)
	}
	printReport(stdout, rep, res)
	return nil
}

func outHeader(h swf.Header, name string, c config, m swf.Machine) []swf.HeaderField {
	out := []swf.HeaderField{{Key: "Version", Value: "2.2"}}
	if v, ok := h.Get("Computer"); ok {
		out = append(out, swf.HeaderField{Key: "Computer", Value: v})
	}
	out = append(out,
		swf.HeaderField{Key: "Note", Value: fmt.Sprintf("simulated by Sluice from %s: policy %s, %s estimates; wait and run times are simulated", name, c.policy, c.estimates)},
		swf.HeaderField{Key: "MaxNodes", Value: strconv.Itoa(m.Nodes())},
		swf.HeaderField{Key: "MaxProcs", Value: strconv.FormatInt(m.Procs, 10)})
	if h.UnixStartTime > 0 {
		out = append(out, swf.HeaderField{Key: "UnixStartTime", Value: strconv.FormatInt(h.UnixStartTime, 10)})
	}
	return out
}

func writeSWF(path string, res sim.Result, start time.Time, header []swf.HeaderField) error {
	jobs := slices.Clone(res.Jobs)
	slices.SortFunc(jobs, func(a, b sim.JobResult) int { return a.Index - b.Index })
	return writeFile(path, func(f io.Writer) error {
		w := swf.NewWriter(f, start)
		n := strconv.Itoa(len(jobs))
		if err := w.WriteHeader(append(header, swf.HeaderField{Key: "MaxJobs", Value: n}, swf.HeaderField{Key: "MaxRecords", Value: n})); err != nil {
			return err
		}
		for _, r := range jobs {
			if err := w.WriteResult(r); err != nil {
				return err
			}
		}
		return w.Flush()
	})
}

func writePlot(path string, res sim.Result, title string) error {
	return writeFile(path, func(f io.Writer) error {
		bw := bufio.NewWriter(f)
		if err := simplot.WritePNG(bw, res, simplot.Options{Title: title}); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// writeFile creates path, fills it with write and closes it; an error
// from write or Close names the file.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// readProfiles reads the GPU workload file path.
func readProfiles(path string) (sim.Profiles, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := sim.ReadProfiles(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// countingReader counts the bytes read, for the progress bar.
type countingReader struct {
	r io.Reader
	n int64
}

// Read reads from the underlying reader, counting the bytes.
func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// progressBar draws a bar on a terminal, at most ten times a second.
type progressBar struct {
	w     io.Writer
	frac  func() float64
	calls int
	last  time.Time
	drawn bool
}

func (b *progressBar) tick() {
	b.calls++
	if b.calls%256 != 0 {
		return
	}
	now := time.Now()
	if now.Sub(b.last) < 100*time.Millisecond {
		return
	}
	b.last = now
	f := min(max(b.frac(), 0), 1)
	const width = 40
	n := int(f * width)
	fmt.Fprintf(b.w, "\r[%s%s] %5.1f%%", strings.Repeat("=", n), strings.Repeat(" ", width-n), 100*f)
	b.drawn = true
}

func (b *progressBar) done() {
	if b != nil && b.drawn {
		fmt.Fprintf(b.w, "\r%s\r", strings.Repeat(" ", 50))
	}
}

// telemetryConfig checks the -telemetry-every and -idle-* flags and
// returns the scheduler's telemetry configuration they give.
func telemetryConfig(c config) (scheduler.TelemetryConfig, error) {
	if c.telemetryEvery < 0 {
		return scheduler.TelemetryConfig{}, fmt.Errorf("-telemetry-every %v: must not be negative", c.telemetryEvery)
	}
	if c.telemetryEvery == 0 {
		if len(c.idleSet) > 0 {
			return scheduler.TelemetryConfig{}, fmt.Errorf("%s: need -telemetry-every (the idle policy acts on telemetry)", strings.Join(c.idleSet, ", "))
		}
		return scheduler.TelemetryConfig{}, nil
	}
	act, err := scheduler.ParseIdleAction(c.idleAction)
	if err != nil {
		return scheduler.TelemetryConfig{}, fmt.Errorf("-idle-action %q: want notify, requeue or cancel", c.idleAction)
	}
	switch {
	case c.idleRequeueLimit < 0:
		return scheduler.TelemetryConfig{}, fmt.Errorf("-idle-requeue-limit %d: must not be negative", c.idleRequeueLimit)
	case c.idleRequeueLimit == 0:
		// TelemetryConfig.MaxIdleRequeues 0 is the default (5), not none.
		return scheduler.TelemetryConfig{}, errors.New("-idle-requeue-limit 0: must be at least 1 (to requeue no job, use -idle-action cancel)")
	}
	tc := scheduler.TelemetryConfig{Rule: telemetry.Rule{IdleBelow: c.idleBelow, IdleAfter: c.idleAfter}, Action: act, Grace: c.idleGrace,
		MaxIdleRequeues: c.idleRequeueLimit}
	if err := tc.Validate(); err != nil {
		return scheduler.TelemetryConfig{}, fmt.Errorf("-idle-below %v / -idle-after %v / -idle-grace %v: %w", c.idleBelow, c.idleAfter, c.idleGrace, err)
	}
	return tc, nil
}
